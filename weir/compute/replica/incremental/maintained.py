"""What every incremental dataflow strategy shares: where its updates come from (a
`Source`), and when its state is built, advanced, or rebuilt.

A strategy keeps state on Spark's executors that must equal what its output holds at
the output's upper - 1. It is built from empty at hydration (the snapshot at the as_of as
updates, then the updates after it), advanced by each interval's updates, and rebuilt
from the inputs whenever the dataflow could not apply an interval through it (it
recomputed, lost the race to a different interval): `stale` says so.

Checkpoints: the state lives in the dataflow's own directory under the replica's state
root (beside the warehouse), and once the output holds an interval the state applied,
`checkpoint(upper)` records which manifest version of each operator's runs matches that
upper. A restarted replica resumes from it when the output's upper is still that upper
and every run file is there; anything else (no checkpoint, another upper, a missing or
unreadable file, another partition count) rebuilds from the inputs, never trusting it.

The updates come from a source: the inputs' own updates (`InputUpdates`), or the join of
two inputs kept from deltas (weir.compute.replica.incremental.join), whose state is
built, advanced and rebuilt with the strategy's own.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import pyarrow as pa

from weir.compute.replica import dataflow_io as io
from weir.compute.replica.incremental import runs

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

    def manifests(self) -> list[runs.Manifest]:
        """Its operators' runs (what a checkpoint records)."""

    def describe(self) -> str:
        """What it does per interval and the state it keeps (EXPLAIN), '' if nothing."""

    def state(self) -> list[list[tuple[int, int, int, int]]]:
        """Per stateful operator, in plan order: (partition, records, runs, bytes) each."""


class InputUpdates:
    """The inputs' own updates, consolidated per row and time (no state). Each input is read
    in a stage of its own (its consolidation's shuffle): hydration progress knows what each
    scan's partitions hold."""

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

    def manifests(self) -> list[runs.Manifest]:
        return []

    def state(self) -> list[list[tuple[int, int, int, int]]]:
        return []


CHECKPOINT = "checkpoint.json"
FORMAT = 1  # of the runs and manifests: a checkpoint of another format is rebuilt


def state_directory(root: str | None, dataflow_id: str) -> str:
    """The dataflow's state directory under the replica's state root (a temporary one
    without a root: then nothing survives a restart)."""
    if root is None:
        return tempfile.mkdtemp(prefix=f"weir-state-{dataflow_id}-")
    path = os.path.join(root, dataflow_id)
    os.makedirs(path, exist_ok=True)
    return path


def remove(directory: str) -> None:
    shutil.rmtree(directory, ignore_errors=True)


class Incremental:
    """A dataflow kept from deltas: `linear_sql` over the source's views gives the updates
    `apply` folds into the state and turns into the view's changes."""

    linear_sql: str

    def __init__(self, source: Source, directory: str) -> None:
        self.source = source
        self.directory = directory
        # the state is not the output's at its upper - 1 (an interval it did not apply, or
        # applied but not appended, or nothing built yet): rebuilt from the inputs before
        # its next use
        self.stale = True
        self._checkpointed: tuple[int, list[int]] | None = None  # the last checkpoint written

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

    def own_manifests(self) -> list[runs.Manifest]:
        return []

    def own_state(self) -> list[list[tuple[int, int, int, int]]]:
        """Per stateful operator of its own (after the source's): (partition, records, runs, bytes)."""
        return []

    def describe_own(self) -> str:
        """What it does after its stateful operators (EXPLAIN), '' if nothing."""
        return ""

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

    def interval(self, new_session: Callable[[], Any], inputs: Bound, changed: Bound, lower: int, upper: int,
                 floor: int, hydrating: bool, job: Job) -> pa.Table:
        """The changes of [lower, upper): a hydration from empty state at `floor`, or an advance."""
        if hydrating:
            return self.hydrate(new_session, inputs, floor, upper, job)
        return self.advance(new_session, inputs, changed, lower, upper, job)

    def appended(self, applied: bool, upper: int) -> None:
        """The output holds [lower, upper) as this state computed it (`applied`; else the
        interval had no change and the state is as it was): checkpoint it if it is current."""
        if applied:
            self.stale = False
        if not self.stale:
            self.checkpoint(upper)

    def restart(self, new_session: Callable[[], Any], inputs: Bound, t: int, job: Job) -> str:
        """The output holds the view up to `t` (a replica restarted, or was added): resume
        from the checkpoint if it is the output's, else rebuild from the inputs at `t`.
        A resumed state runs its job once over no updates, so its operators report (and its
        hydration ends) at once, not at the inputs' next change."""
        if self.resume(t + 1):
            empty = [(name, columns, []) for name, columns, _ in inputs]
            self.run(self.updates(new_session(), empty, t + 1, t + 1), job)
            self.checkpoint(t + 1)
            return "resumed"
        self.rebuild(new_session(), inputs, t, job)
        self.checkpoint(t + 1)
        return "rebuilt"

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
        self._checkpointed = None
        try:
            os.remove(os.path.join(self.directory, CHECKPOINT))
        except OSError:
            pass

    def close(self) -> None:
        """The dataflow is dropped: its state goes (a stopping replica keeps it)."""
        self.source.close()
        remove(self.directory)

    def manifests(self) -> list[runs.Manifest]:
        return [*self.source.manifests(), *self.own_manifests()]

    def checkpoint(self, upper: int) -> None:
        """The output holds the view up to `upper` and the state is the one that made it."""
        if self._checkpointed == (upper, [m.version for m in self.manifests()]):
            return
        self._checkpointed = (upper, [m.version for m in self.manifests()])
        path = os.path.join(self.directory, CHECKPOINT)
        doc = {"format": FORMAT, "upper": upper,
               "manifests": [[m.directory, m.version, m.partitions] for m in self.manifests()]}
        with open(path + ".tmp", "w") as f:
            json.dump(doc, f)
        os.replace(path + ".tmp", path)

    def resume(self, upper: int) -> bool:
        """Adopt the checkpointed state if it is the output's at `upper` (else forget it)."""
        try:
            with open(os.path.join(self.directory, CHECKPOINT)) as f:
                doc = json.load(f)
            wanted = [[m.directory, m.partitions] for m in self.manifests()]
            ok = (doc.get("format") == FORMAT and doc.get("upper") == upper
                  and [[d, p] for d, _, p in doc["manifests"]] == wanted)
        except (OSError, ValueError, TypeError, KeyError):
            ok = False
        loaded = []
        if ok:
            for m, (_, version, _) in zip(self.manifests(), doc["manifests"], strict=True):
                got = runs.Manifest.load(m.directory)
                if got is None or got.version != version or got.partitions != m.partitions \
                        or set(got.runs) != set(m.ops) or not got.readable():
                    ok = False
                    break
                loaded.append(got)
        if not ok:
            self.reset()
            self.stale = True
            return False
        for m, got in zip(self.manifests(), loaded, strict=True):
            m.runs, m.version = got.runs, got.version
        self.stale = False
        return True

    def state_bytes(self) -> int:
        return self.source.state_bytes() + self.own_bytes()

    def state(self) -> list[list[tuple[int, int, int, int]]]:
        """Per stateful operator in plan order (its MapInArrow nodes): (partition, records,
        runs, bytes) per key partition (mz_arrangement_sizes)."""
        return [*self.source.state(), *self.own_state()]
