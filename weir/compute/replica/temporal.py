"""The times at which a temporal filter's view changes without any input changing
(weir.sql.temporal): the flips of its rows' comparisons with mz_now(), read by running
the view's thresholds query over its inputs as they stand.

A dataflow's step covers [lower, upper) and knows the times inputs changed in it; the
inputs are constant between those times, so each segment's flips come from one run of
the thresholds query over the inputs as of the segment's start. Between steps without
input changes the next flip is remembered, so an idle view runs no Spark job until a
row's time comes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.compute.protocol import FLIP_COLUMN, MZ_NOW_PARAMETER

_NEVER = 2**63 - 1

# bind(session, t): the inputs' temp views as of time t
Bind = Callable[[Any, int], None]


class Thresholds:
    def __init__(self, sql: str, new_session: Callable[[], Any], limit: int) -> None:
        self.sql = sql
        self._new_session = new_session
        self._limit = limit  # flips per run: a step takes at most this many times anyway
        self._next: int | None = None  # the next flip for the inputs as they stand (None: unknown)

    def forget(self) -> None:
        self._next = None

    def times(self, bind: Bind, lower: int, upper: int, changes: list[int]) -> set[int]:
        """The flips in [lower, upper), given the sorted input change times in it."""
        out: set[int] = set()
        starts = [lower] + [t for t in changes if t > lower]
        for i, start in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else upper
            last = i + 1 == len(starts)
            if start == lower and start not in changes and self._next is not None and self._next >= end:
                continue  # remembered: nothing flips before the next change
            flips = self._run(bind, start)
            out.update(f for f in flips if start <= f < end)
            if last:
                later = [f for f in flips if f >= end]
                self._next = later[0] if later else (_NEVER if len(flips) < self._limit else None)
        return out

    def _run(self, bind: Bind, at: int) -> list[int]:
        """The first flips at or after `at`, sorted, over the inputs as of `at`."""
        session = self._new_session()
        bind(session, at)
        rows = session.sql(
            f"SELECT DISTINCT {FLIP_COLUMN} FROM ({self.sql}) WHERE {FLIP_COLUMN} >= {int(at)} "
            f"ORDER BY {FLIP_COLUMN} LIMIT {self._limit}").collect()
        return [int(r[0]) for r in rows]


def query(session: Any, sql: str, at: int, temporal: bool) -> Any:
    """The view's query with mz_now() = `at` (a temporal filter's parameter)."""
    return session.sql(sql, args={MZ_NOW_PARAMETER: at}) if temporal else session.sql(sql)
