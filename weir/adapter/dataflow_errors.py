"""Runtime errors of materialized views and indexes, on the coordinator's side.

Replicas record a view's data errors (division by zero, a failed cast ...) in an
errors shard next to its output (weir.storage.error_shards); an index keeps its
own in replica memory and fails peeks itself. Here:

- every view has its errors shard, created with the view and dropped with it;
- a read at time t of a view (directly, through SUBSCRIBE, or through an index on
  it) fails with the errors the view holds at t (`DataflowErrors.check`), as in
  Materialize, where a dataflow's error collection makes reads of it fail;
- mz_internal.mz_compute_error_counts shows each export's current error count per
  replica, as the replicas report it (`watch`).

Each errors shard is read incrementally and kept in memory (errors are few); a
read hold keeps its since below what was read, so compaction cannot fold updates
already read into later times.
"""

from __future__ import annotations

import asyncio
import decimal
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from weir.catalog.builtins import by_name
from weir.errors import WeirError, is_data_error
from weir.storage import error_shards as es

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator

log = logging.getLogger(__name__)

ERROR_COUNTS = by_name("mz_internal", "mz_compute_error_counts")
INTERVAL_S = 1.0
errors_shard_id = es.errors_shard_id
is_errors_shard = es.is_errors_shard


def final_for_reads(err: WeirError) -> bool:
    """A peek's error that another way of reading (e.g. the slow path instead of an index)
    would hit too: report it instead of trying the other way."""
    return is_data_error(err.sqlstate)


@dataclass
class _Reader:
    read_to: int = 0  # every update below this is in `updates`
    # the shard holds every error below this: the view's upper when the shard's upper was
    # last read back (its errors are appended before the output they go with)
    complete_to: int = 0
    updates: list[tuple[es.ErrorRow, int, int]] = field(default_factory=list)
    hold: Any = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class DataflowErrors:
    """The errors shards of the materialized views, as readers see them."""

    def __init__(self, coord: Coordinator) -> None:
        self.coord = coord
        self._readers: dict[str, _Reader] = {}

    async def ensure(self, view_id: str, initial_upper: int) -> None:
        """Create (or open) the view's errors shard; an existing view gets one that starts
        empty at `initial_upper`."""
        await self.coord.storage.ensure_collection(
            errors_shard_id(view_id), list(es.ERROR_COLUMNS), external=True, initial_upper=initial_upper)

    async def drop(self, view_id: str) -> None:
        sid = errors_shard_id(view_id)
        r = self._readers.pop(sid, None)
        if r is not None and r.hold is not None:
            r.hold.release()
        if sid in self.coord.storage.collections or await self._exists(sid):
            await self.coord.storage.drop_collection(sid)

    async def _exists(self, sid: str) -> bool:
        loop = asyncio.get_running_loop()
        return bool(await loop.run_in_executor(None, self.coord.storage.store.shard_exists, sid))

    async def _refresh(self, view_id: str, ts: int) -> list[tuple[es.ErrorRow, int, int]]:
        """The errors shard's updates, complete through `ts` (the view's upper is past ts)."""
        storage = self.coord.storage
        sid = errors_shard_id(view_id)
        r = self._readers.setdefault(sid, _Reader())
        async with r.lock:
            if ts >= r.complete_to:
                # the view's upper is past ts (the caller waited for it, following its
                # replicas' reports); the errors of [.., ts] were appended before the output
                # that moved it there: read the errors shard's upper back now, once per
                # advance of the view that a reader looks at, not per advance
                view_upper = storage.frontiers(view_id)[1]
                await storage.refresh_upper(sid)
                r.complete_to = view_upper
            upper = storage.frontiers(sid)[1]
            if upper > r.read_to:
                if r.hold is None:
                    r.hold = storage.acquire_read_hold([sid], storage.frontiers(sid)[0])
                table = await storage.read_updates(sid, r.read_to, upper)
                r.updates.extend(es.updates_of(table))
                r.read_to = upper
                r.hold.downgrade(min(r.read_to - 1, storage.frontiers(view_id)[0]))
            return r.updates

    def _views(self, shard_ids: Iterable[str]) -> list[str]:
        collections = self.coord.storage.collections
        return [sid for sid in shard_ids if errors_shard_id(sid) in collections]

    async def check(self, shard_ids: Iterable[str], ts: int) -> None:
        """Raise the error a read at `ts` of these collections must fail with, if any."""
        for view_id in self._views(shard_ids):
            err = es.first_error(es.contents(await self._refresh(view_id, ts), ts))
            if err is not None:
                raise err

    async def check_between(self, view_id: str, lower: int, upper: int) -> None:
        """Raise the first error the view holds at a time in [lower, upper) (SUBSCRIBE)."""
        if not self._views([view_id]) or upper <= lower:
            return
        updates = await self._refresh(view_id, upper - 1)
        for t in sorted({lower} | {t for _, t, _ in updates if lower <= t < upper}):
            err = es.first_error(es.contents(updates, t))
            if err is not None:
                raise err

    @staticmethod
    def shard_id(view_id: str) -> str:
        return errors_shard_id(view_id)

    @staticmethod
    def known_shards(view_ids: Iterable[str]) -> set[str]:
        return {errors_shard_id(v) for v in view_ids}


# ---- mz_internal.mz_compute_error_counts -------------------------------------------------

Row = tuple[Any, ...]
_NAMES = ["export_id", "replica_id", "count"]


def _table(changes: list[tuple[Row, int]]) -> pa.Table:
    assert ERROR_COUNTS is not None
    types = [t.arrow for _, t in ERROR_COUNTS.columns]
    cols = list(zip(*[r for r, _ in changes], strict=True)) if changes else [[] for _ in _NAMES]
    data = {n: pa.array(list(c), t) for n, c, t in zip(_NAMES, cols, types, strict=True)}
    data["mz_diff"] = pa.array([d for _, d in changes], pa.int64())
    return pa.table(data)


def current_counts(coord: Coordinator) -> dict[tuple[str, str], Row]:
    """(export, replica) -> row, for exports that hold errors (Materialize lists only those)."""
    out: dict[tuple[str, str], Row] = {}
    for export_id, per_replica in coord.compute.error_counts().items():
        for replica_id, n in per_replica.items():
            if n > 0:
                out[(export_id, replica_id)] = (export_id, replica_id, decimal.Decimal(n))
    return out


async def watch(coord: Coordinator) -> None:
    """Keep mz_compute_error_counts equal to what the replicas report (one append per change)."""
    assert ERROR_COUNTS is not None
    old: dict[tuple[str, str], Row] = {}
    try:  # what an earlier run left: retracted with the first change
        since, upper = coord.storage.frontiers(ERROR_COUNTS.id)
        snap = await coord.storage.snapshot(ERROR_COUNTS.id, max(since, upper - 1))
        for r in snap.to_pylist():
            row = tuple(r[n] for n in _NAMES)
            for _ in range(int(r["mz_diff"])):
                old[(row[0], row[1])] = row
    except Exception:  # noqa: BLE001 - nothing to retract on a first start
        old = {}
    while True:
        await asyncio.sleep(INTERVAL_S)
        new = current_counts(coord)
        changes = [(row, -1) for k, row in old.items() if new.get(k) != row]
        changes += [(row, 1) for k, row in new.items() if old.get(k) != row]
        if not changes:
            continue
        try:
            await coord.storage.append({ERROR_COUNTS.id: _table(changes)})
            old = new
        except Exception:  # noqa: BLE001 - retried on the next tick
            log.warning("recording compute error counts failed", exc_info=True)
