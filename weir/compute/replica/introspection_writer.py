"""Writes a replica's introspection logs to its introspection shard (design 001): all logs
in one append per interval, on a thread of its own (the Spark work of the replica runs on
other threads and in the JVM, so a saturated replica still logs).

On its first write an incarnation fences the shard with its incarnation (writer epoch) and
retracts whatever the shard holds that it does not (the previous incarnations' rows),
in the same append as its own first rows. A write refused because a newer incarnation
fenced the shard stops the writer for good: this process is a zombie. Other failures are
retried with backoff; memory stays bounded because the writer only keeps the contents it
last wrote and the current ones (what changed in between is one diff), and it counts the
intervals it could not write (`skipped`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from weir.compute import introspection as ci
from weir.compute.replica.introspection_logs import IntrospectionLogs, shard_rows
from weir.storage.frontiers import Fenced, UpperMismatch
from weir.storage.persist import ShardStore

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 30.0
IDLE_ADVANCE_S = 10.0  # with nothing new to write, advance the upper this often only
Contents = dict[str, Counter[tuple[Any, ...]]]


class IntrospectionWriter:
    def __init__(self, logs: IntrospectionLogs, store: Callable[[], ShardStore], shard_id: str | None, epoch: int,
                 interval_s: float, drain: Callable[[], list[Any]] | None = None,
                 every_interval: Callable[[], None] | None = None,
                 on_fenced: Callable[[str], None] | None = None) -> None:
        self.logs, self._store, self.shard_id, self.epoch = logs, store, shard_id, epoch
        self.interval_s = max(0.05, interval_s)
        self._drain = drain
        self._every_interval = every_interval  # e.g. reading the JVM's heap, off the heartbeat
        self._on_fenced = on_fenced  # a zombie: the replica stops
        self._written: Contents | None = None  # what the shard holds, as far as this writer knows
        self._upper = 0
        self._last_commit = 0.0
        self._shard: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # counters (the replica's Status reports them)
        self.commits = 0
        self.skipped = 0
        self.failures = 0
        self.fenced = False
        self.last_error: str | None = None
        self.upper = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="introspection-writer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def status(self) -> dict[str, Any]:
        return {"shard_id": self.shard_id, "upper": self.upper, "commits": self.commits,
                "skipped": self.skipped, "failures": self.failures, "fenced": self.fenced,
                "error": self.last_error}

    def _run(self) -> None:
        delay = self.interval_s
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.write_once()
                delay, self.last_error = self.interval_s, None
            except Fenced as e:
                self.fenced = True
                self.last_error = f"fenced by incarnation {e.current_epoch}"
                log.warning("introspection of %s: fenced by a newer incarnation (%d > %d); this process "
                            "no longer writes its introspection", self.shard_id, e.current_epoch, self.epoch)
                if self._on_fenced is not None:
                    self._on_fenced(self.last_error)
                return
            except UpperMismatch:
                self._written = None  # someone else wrote: read the shard again
                delay = self.interval_s
            except Exception as e:  # noqa: BLE001 - storage trouble: retry, never die
                self.failures += 1
                self.skipped += 1
                self.last_error = str(e)[:500]
                self._written, self._shard = None, None
                delay = min(MAX_BACKOFF_S, max(self.interval_s, delay * 2))
                log.warning("introspection of %s: write failed (%s); retrying in %.1fs", self.shard_id, e, delay)
            self._stop.wait(max(0.0, delay - (time.monotonic() - started)))

    def write_once(self) -> None:
        """One interval: feed finished Spark executions in, append what changed."""
        if self._every_interval is not None:
            try:
                self._every_interval()
            except Exception:  # noqa: BLE001 - health figures are best effort
                log.debug("introspection: reading process metrics failed", exc_info=True)
        if self._drain is not None:
            self.logs.executions(self._drain())
        if self.shard_id is None:  # collected for live reads only
            return
        shard = self._open()
        if self._written is None:
            self._written = self._read(shard)
        current = self.logs.contents()
        updates = _difference(current, self._written)
        if not updates and time.monotonic() - self._last_commit < IDLE_ADVANCE_S:
            return  # nothing changed: no commit (the upper, the time readers read at, waits)
        t = max(self._upper, int(time.time() * 1000))
        data = _table(updates, t) if updates else None
        fr = shard.compare_and_append(data, self._upper, t + 1, self.epoch)
        self._upper = self.upper = fr.upper
        self._written = current
        self.commits += 1
        self._last_commit = time.monotonic()

    def _open(self) -> Any:
        if self._shard is None:
            shard = self._store().open_shard(self.shard_id)
            fr = shard.fence(self.epoch)
            self._shard, self._upper = shard, fr.upper
        return self._shard

    def _read(self, shard: Any) -> Contents:
        """What the shard holds now (left by earlier incarnations, or by this one)."""
        fr = shard.frontiers()
        self._upper = fr.upper
        out: Contents = {v.name: Counter() for v in ci.LOG_VARIANTS}
        if fr.upper == 0 or fr.since > fr.upper - 1:
            return out
        snap = shard.snapshot(fr.upper - 1)
        for row in snap.to_pylist():
            variant = ci.BY_NAME.get(row["log"])
            if variant is None:
                out.setdefault(row["log"], Counter())
                out[row["log"]][_raw_key(row)] += int(row["mz_diff"])
                continue
            out[variant.name][tuple(row[slot] for _, slot in variant.slots)] += int(row["mz_diff"])
        return out


def _raw_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[n] for n, _ in ci.SHARD_COLUMNS)


def _difference(current: Contents, written: Contents) -> list[tuple[dict[str, Any], int]]:
    out: list[tuple[dict[str, Any], int]] = []
    for name in set(current) | set(written):
        now, before = current.get(name, Counter()), written.get(name, Counter())
        variant = ci.BY_NAME.get(name)
        for key in set(now) | set(before):
            d = now.get(key, 0) - before.get(key, 0)
            if d == 0:
                continue
            if variant is not None:
                out.append((variant.encode(key), d))
            else:  # a log this version does not know (an older weir's): retract it as it is
                out.append((dict(zip((n for n, _ in ci.SHARD_COLUMNS), key, strict=True)), d))
    return out


def _table(updates: list[tuple[dict[str, Any], int]], t: int) -> pa.Table:
    arrays = shard_rows([row for row, _ in updates])
    arrays["mz_timestamp"] = pa.array([t] * len(updates), type=pa.int64())
    arrays["mz_diff"] = pa.array([d for _, d in updates], type=pa.int64())
    return pa.table(arrays)
