"""Runtime errors of a dataflow as data at a time (Materialize's error collections).

A query that fails on its input (a data error: SQLSTATE class 22 or a raised
error, see weir.errors.is_data_error) is not retried: the dataflow records the
error at the time it computed, leaves its output as it was, and advances its
frontier, so reads at that time fail at once with that error. When a later time
computes cleanly the error is retracted there: the dataflow recovers by itself.
Errors of the machinery (a dead JVM, storage) keep the retry with backoff.

- `ErrorStream`: a materialized view's errors shard (weir.storage.error_shards),
  written before the output of each interval, only when the errors change.
- `ErrorLog`: an index's errors, in replica memory beside its arrangement.
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter

from weir.errors import SqlState, WeirError, is_data_error
from weir.storage import error_shards as es
from weir.storage.frontiers import UpperMismatch
from weir.storage.persist import Shard

States = list[tuple[int, "Counter[es.ErrorRow]"]]  # the errors at each computed time, ascending


def data_error(err: WeirError) -> bool:
    return is_data_error(err.sqlstate)


def state_of(err: WeirError | None) -> Counter[es.ErrorRow]:
    return Counter({es.error_row(err): 1}) if err is not None else Counter()


class ErrorStream:
    """The errors shard of one materialized view, as this replica knows it."""

    def __init__(self, shard: Shard) -> None:
        self.shard = shard
        self._state: Counter[es.ErrorRow] | None = None  # every update in the shard, summed
        self._upper = 0  # the shard's upper when _state was read or written

    def forget(self) -> None:
        """Another writer may have appended (this replica followed or lost a race)."""
        self._state = None

    def _load(self) -> Counter[es.ErrorRow]:
        fr = self.shard.frontiers()
        self._state = es.contents(es.updates_of(self.shard.read_updates(0, fr.upper)))
        self._upper = fr.upper
        return self._state

    def current(self) -> Counter[es.ErrorRow]:
        """The errors at the shard's upper - 1 (read from the shard when unknown)."""
        return self._state if self._state is not None else self._load()

    def ahead_of(self, lower: int) -> bool:
        """Whether the shard holds errors past `lower` (so its state at lower - 1 is unknown)."""
        return self._upper > lower

    def count(self) -> int | None:
        """How many errors the view holds now, if known without reading storage."""
        return None if self._state is None else sum(n for n in self._state.values() if n > 0)

    def record(self, states: States, lower: int, upper: int, epoch: int) -> None:
        """Make the shard hold these errors over [lower, upper); call before the output's
        append of that interval. Appends nothing when nothing changes."""
        for _ in range(5):
            base = self.current()
            start = max(lower, self._upper)  # [lower, start) is in the shard already
            if start >= upper:
                return
            running = Counter(base)
            changes: list[tuple[es.ErrorRow, int, int]] = []
            for t, state in states:
                if t < start or state == running:
                    continue
                diff = Counter(state)
                diff.subtract(running)
                changes += [(r, t, d) for r, d in diff.items() if d]
                running = Counter(state)
            if not changes:
                return
            try:
                self.shard.compare_and_append(es.updates_table(changes), self._upper, upper, epoch)
            except UpperMismatch:
                self.forget()  # another replica wrote errors meanwhile: start from there
                continue
            self._state, self._upper = running, upper
            return
        raise WeirError(SqlState.SERIALIZATION_FAILURE, f"appending errors to shard {self.shard.shard_id} kept conflicting")


class ErrorLog:
    """An index's errors over time (in memory, like its arrangement): the error of the
    view's query at each time it was computed, None where it computed cleanly."""

    MAX_ENTRIES = 1024

    def __init__(self) -> None:
        self._times: list[int] = []
        self._errors: list[WeirError | None] = []
        self._lock = threading.Lock()

    def set(self, t: int, err: WeirError | None) -> None:
        with self._lock:
            i = bisect.bisect_left(self._times, t)
            if i < len(self._times) and self._times[i] == t:
                self._errors[i] = err
            elif not self._errors and err is None:
                return
            else:
                self._times.insert(i, t)
                self._errors.insert(i, err)
            if len(self._times) > self.MAX_ENTRIES:
                del self._times[0], self._errors[0]

    def at(self, ts: int) -> WeirError | None:
        with self._lock:
            i = bisect.bisect_right(self._times, ts)
            return self._errors[i - 1] if i else None

    def clear(self) -> None:
        with self._lock:
            self._times.clear()
            self._errors.clear()

    def count(self) -> int:
        with self._lock:
            return int(bool(self._errors) and self._errors[-1] is not None)
