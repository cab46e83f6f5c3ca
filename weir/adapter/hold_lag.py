"""mz_internal.mz_hold_lag (issue 11, part 7): per hold and held object, the object's
write frontier, how far the hold trails it, how much of MAX LAG is left, and what the hold
keeps from compaction, measured: the bytes of the object's data files whose updates all
lie after the hold's time and at or before where its since would be without holds (the
write frontier minus the compaction window), the history compaction would otherwise have
folded into one snapshot. An index's figures are those of the collections it reads (where
weir keeps an index's history too, weir.adapter.holds) plus, for the hold that sets the
index's since, the memory its replicas report for the arrangement's history beyond the
last 10 s (the most any replica holds). Refreshed every INTERVAL_S and before every read
of it: a pass appends the rows that changed."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from weir.adapter.frontiers import diff_rows
from weir.catalog.builtins import by_name

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator

log = logging.getLogger(__name__)

HOLD_LAG = by_name("mz_internal", "mz_hold_lag")
INTERVAL_S = 10.0
_NAMES = ["hold_id", "object_id", "write_frontier", "lag", "headroom", "retained_bytes"]


def retained(files: list[tuple[int, int, int]], at: int, natural_since: int) -> int:
    """Bytes of the files whose updates are all in (at, natural_since]."""
    return sum(size for lo, hi, size in files if lo > at and hi <= natural_since)


async def measure(coord: Coordinator) -> dict[Any, tuple[Any, ...]]:
    """(hold id, object id) -> its row, for every hold now."""
    from weir.adapter.holds import storage_ids

    storage, holds = coord.storage, coord.holds
    shards_of: dict[str, list[str]] = {}
    files: dict[str, list[tuple[int, int, int]]] = {}
    rows: dict[Any, tuple[Any, ...]] = {}
    statuses = coord.compute.dataflow_statuses()
    for hold_id, definition in list(holds.definitions.items()):
        at, max_lag = int(definition["at"]), int(definition["max_lag_ms"])
        for oid in holds.objects.get(hold_id, ()):
            if oid not in shards_of:
                try:
                    shards_of[oid] = [s for s in storage_ids(coord, coord.catalog.get_item(oid))
                                      if s in storage.collections]
                except Exception:  # noqa: BLE001 - dropped meanwhile: its hold goes with it
                    shards_of[oid] = []
            shards = shards_of[oid]
            if not shards:
                continue
            total = 0
            for sid in shards:
                if sid not in files:
                    files[sid] = await storage.file_times(sid)
                total += retained(files[sid], at, storage.natural_since(sid))
            if oid in statuses and at <= coord.index_sinces.get(oid, at):  # this hold sets its since
                total += max(int(st.get("held_bytes") or 0) for st in statuses[oid].values())
            upper = min(storage.frontiers(sid)[1] for sid in shards)
            lag = max(0, upper - at)
            rows[(hold_id, oid)] = (hold_id, oid, upper, timedelta(milliseconds=lag),
                                    timedelta(milliseconds=max_lag - lag), total)
    return rows


class HoldLag:
    """Keeps mz_hold_lag current: refreshed every INTERVAL_S and before every read of it
    (lag changes with every tick of every held object, so it is written when it matters
    rather than every tick for every hold)."""

    def __init__(self, coord: Coordinator) -> None:
        self.coord = coord
        self._old: dict[Any, tuple[Any, ...]] | None = None
        self._lock = asyncio.Lock()

    async def _load(self) -> dict[Any, tuple[Any, ...]]:
        """What an earlier run left in the relation: retracted by the first refresh."""
        assert HOLD_LAG is not None
        old: dict[Any, tuple[Any, ...]] = {}
        try:
            since, upper = self.coord.storage.frontiers(HOLD_LAG.id)
            snap = await self.coord.storage.snapshot(
                HOLD_LAG.id, max(since, min(self.coord.oracle.read_ts(), upper - 1)))
            for r in snap.to_pylist():
                old[(r["hold_id"], r["object_id"])] = tuple(r[n] for n in _NAMES)
        except Exception:  # noqa: BLE001 - nothing to retract on a first start
            pass
        return old

    async def refresh(self) -> None:
        from weir.adapter.builtin_tables import builtin_updates

        assert HOLD_LAG is not None
        async with self._lock:
            if self._old is None:
                self._old = await self._load()
            new = await measure(self.coord)
            changes = diff_rows(self._old, new)
            if changes:
                await self.coord.storage.append({HOLD_LAG.id: builtin_updates(HOLD_LAG, changes)})
            self._old = new

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(INTERVAL_S)
            try:
                await self.refresh()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - retried on the next pass
                log.warning("recording mz_hold_lag failed", exc_info=True)
