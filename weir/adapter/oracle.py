"""The timestamp oracle: monotonic millisecond timestamps whose high-water mark is
durable, so a restart never hands out a time at or below one handed out before."""

from __future__ import annotations

import time
from collections.abc import Callable

# How far ahead of the last handed-out timestamp the durable mark is pushed, so that
# handing out a timestamp rarely costs a catalog write.
_WINDOW_MS = 10_000


class TimestampOracle:
    def __init__(self, load: Callable[[], int], persist: Callable[[int], None],
                 now: Callable[[], int] | None = None) -> None:
        self._persist = persist
        self._now = now or (lambda: int(time.time() * 1000))
        durable = load()
        # Everything handed out before the restart was < durable, so start at it.
        self._read_ts = durable
        self._last_write = durable
        self._durable = durable
        self._ensure(durable + 1)

    def _ensure(self, ts: int) -> None:
        if ts >= self._durable:
            self._durable = ts + _WINDOW_MS
            self._persist(self._durable)

    def write_ts(self) -> int:
        """A timestamp for a new write, greater than every timestamp handed out."""
        ts = max(self._now(), self._last_write + 1, self._read_ts + 1)
        self._ensure(ts)
        self._last_write = ts
        return ts

    def apply_write(self, ts: int) -> None:
        """A write at `ts` is complete: reads may now see it."""
        self._read_ts = max(self._read_ts, ts)

    def read_ts(self) -> int:
        """The timestamp a strict-serializable read uses: every completed write is visible."""
        return self._read_ts

    def peek_now(self) -> int:
        return max(self._now(), self._read_ts)
