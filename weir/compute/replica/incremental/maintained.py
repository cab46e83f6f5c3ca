"""What every incremental dataflow strategy shares: where its updates come from (a
`Source`), and when its state is built, advanced, or rebuilt.

A strategy keeps state on Spark's executors that must equal what its output holds at
the output's upper - 1. It is built from empty at hydration (the snapshot at the as_of as
updates, then the updates after it), advanced by each interval's updates, and rebuilt
from the inputs whenever the dataflow could not apply an interval through it (it
recomputed, lost the race to a different interval, restarted): `stale` says so.

The updates come from a source: the inputs' own updates (`InputUpdates`), or the join of
two inputs kept from deltas (weir.compute.replica.incremental.join), whose state is
built, advanced and rebuilt with the strategy's own.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import pyarrow as pa

from weir.compute.replica import dataflow_io as io

Bound = Sequence[tuple[str, Sequence[Any], Sequence[str]]]  # (view name, columns, files)
Job = Callable[[Any], None]  # sees the DataFrame a hydration runs (the tracker reads its plan)


class Source(Protocol):
    """The relations an incremental strategy's linear part reads, as updates."""

    names: Mapping[str, Sequence[str]]  # view name -> its columns

    def bind(self, session: Any, inputs: Bound, lower: int | None, upper: int, at: int | None) -> None:
        """Register the views: updates in [lower, upper) (no lower: all before upper), or
        the contents at `at` as updates at `at`."""

    def register_empty(self, session: Any) -> None:
        """Register the views, empty and typed (to analyse a query over them)."""

    def committed(self) -> None:
        """The job that read the last bind succeeded: its state is the current one."""

    def reset(self) -> None: ...

    def close(self) -> None: ...

    def state_bytes(self) -> int: ...

    def describe(self) -> str:
        """What it does per interval and the state it keeps (EXPLAIN), '' if nothing."""


class InputUpdates:
    """The inputs' own updates, consolidated per row and time (no state)."""

    def __init__(self, inputs: Sequence[tuple[str, Sequence[Any]]]) -> None:
        self.inputs = list(inputs)
        self.names = {name: [c[0] for c in columns] for name, columns in inputs}

    def bind(self, session: Any, inputs: Bound, lower: int | None, upper: int, at: int | None) -> None:
        for name, columns, files in inputs:
            io.counted_updates_view(session, files, columns, lower, upper, at=at).createOrReplaceTempView(name)

    def register_empty(self, session: Any) -> None:
        for name, columns in self.inputs:
            io.contents_view(session, [], columns, 0).createOrReplaceTempView(name)

    def committed(self) -> None:
        pass

    def reset(self) -> None:
        pass

    def close(self) -> None:
        pass

    def state_bytes(self) -> int:
        return 0

    def describe(self) -> str:
        return ""


def state_directory(kind: str) -> str:
    """A fresh directory for a dataflow's state (rebuilt, not reused, after a restart)."""
    return tempfile.mkdtemp(prefix=f"weir-{kind}-")


def remove(directory: str) -> None:
    shutil.rmtree(directory, ignore_errors=True)


class Incremental:
    """A dataflow kept from deltas: `linear_sql` over the source's views gives the updates
    `apply` folds into the state and turns into the view's changes."""

    linear_sql: str

    def __init__(self, source: Source) -> None:
        self.source = source
        # the state is not the output's at its upper - 1 (an interval it did not apply, or
        # applied but not appended): rebuilt from the inputs before its next use
        self.stale = False

    # -- what a strategy defines -------------------------------------------------------

    def apply(self, updates: Any, job: Job) -> pa.Table:
        """Fold `updates` into the state; the view's changes (output columns by position,
        __weir_t, __weir_n). `job` sees the DataFrame that runs."""
        raise NotImplementedError

    def frame(self, updates: Any) -> Any:
        """The DataFrame `apply` runs (its plan: the dataflow's pinned plan nodes)."""
        raise NotImplementedError

    def reset_own(self) -> None:
        """Forget the strategy's own state."""

    def own_bytes(self) -> int:
        return 0

    # -- shared --------------------------------------------------------------------------

    def updates(self, session: Any, inputs: Bound, lower: int | None, upper: int,
                at: int | None = None) -> Any:
        self.source.bind(session, inputs, lower, upper, at)
        return session.sql(self.linear_sql)

    def snapshot_frame(self, session: Any, inputs: Bound, t: int) -> Any:
        """The hydration job at `t` (never run here)."""
        return self.frame(self.updates(session, inputs, None, t + 1, at=t))

    def run(self, updates: Any, job: Job = lambda df: None) -> pa.Table:
        out = self.apply(updates, job)
        self.source.committed()
        return out

    def hydrate(self, new_session: Callable[[], Any], inputs: Bound, floor: int, upper: int,
                job: Job) -> pa.Table:
        """The view's snapshot at `floor` (the job its pinned plan is), then its changes up to
        `upper`, from empty state."""
        self.reset()
        self.stale = True  # until the dataflow appended what this returns
        out = self.run(self.updates(new_session(), inputs, None, floor + 1, at=floor), job)
        if upper > floor + 1:
            out = pa.concat_tables([out, self.run(self.updates(new_session(), inputs, floor + 1, upper))])
        return out

    def advance(self, new_session: Callable[[], Any], inputs: Bound, changed: Bound, lower: int,
                upper: int, job: Job) -> pa.Table:
        """The changes of [lower, upper) (`changed`: the files that can hold them)."""
        if self.stale:
            self.rebuild(new_session(), inputs, lower - 1, job)
        self.stale = True  # until the dataflow appended what this returns
        return self.run(self.updates(new_session(), changed, lower, upper))

    def rebuild(self, session: Any, inputs: Bound, t: int, job: Job) -> None:
        """The state from the inputs at `t` (the output holds the view there)."""
        self.reset()
        self.run(self.updates(session, inputs, None, t + 1, at=t), job)
        self.stale = False

    def reset(self) -> None:
        self.source.reset()
        self.reset_own()

    def close(self) -> None:
        self.source.close()

    def state_bytes(self) -> int:
        return self.source.state_bytes() + self.own_bytes()
