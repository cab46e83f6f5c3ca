"""mz_internal.mz_hold_lag (issue 11, part 7): per hold and held object, the object's
write frontier, how far the hold trails it, how much of MAX LAG is left, and what the hold
keeps from compaction, measured: the bytes of the object's data files whose updates all
lie after the hold's time and at or before where its since would be without holds (the
write frontier minus the compaction window), the history compaction would otherwise have
folded into one snapshot. An index's figures are those of the collections it reads (where
weir keeps an index's history too, weir.adapter.holds) plus, for the hold that sets the
index's since, the memory its replicas report for the arrangement's history beyond the
last 10 s (the most any replica holds). Refreshed every INTERVAL_S and before every read
of it (weir.adapter.live_relation)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from weir.adapter.live_relation import LiveRelation
from weir.catalog.builtins import by_name

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator

HOLD_LAG = by_name("mz_internal", "mz_hold_lag")


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


def hold_lag(coord: Coordinator) -> LiveRelation:
    """The live relation mz_hold_lag, measured by `measure`."""
    assert HOLD_LAG is not None
    return LiveRelation(coord, HOLD_LAG, ("hold_id", "object_id"), lambda: measure(coord))
