"""mz_internal.mz_frontiers (every collection's read and write frontier) and
mz_catalog.mz_cluster_replica_frontiers (each replica's write frontier of each
materialized view), kept current as real collections: each tick appends the rows that
changed (a retraction of the old row, an insertion of the new)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from weir.catalog.builtins import by_name

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator

log = logging.getLogger(__name__)

FRONTIERS = by_name("mz_internal", "mz_frontiers")
REPLICA_FRONTIERS = by_name("mz_catalog", "mz_cluster_replica_frontiers")
INTERVAL_S = 1.0

Row = tuple[Any, ...]


def _table(names: list[str], types: list[pa.DataType], changes: list[tuple[Row, int]]) -> pa.Table:
    cols = list(zip(*[r for r, _ in changes], strict=True)) if changes else [[] for _ in names]
    data = {n: pa.array(list(c), t) for n, c, t in zip(names, cols, types, strict=True)}
    data["mz_diff"] = pa.array([d for _, d in changes], pa.int64())
    return pa.table(data)


def diff_rows(old: dict[Any, Row], new: dict[Any, Row]) -> list[tuple[Row, int]]:
    out: list[tuple[Row, int]] = []
    for key, row in old.items():
        if new.get(key) != row:
            out.append((row, -1))
    for key, row in new.items():
        if old.get(key) != row:
            out.append((row, 1))
    return out


async def _current(coord: Coordinator, table_id: str, names: list[str]) -> dict[Any, Row]:
    """What an earlier run left in the relation (retracted as the first change)."""
    ts = coord.oracle.read_ts()
    since, upper = coord.storage.frontiers(table_id)
    snap = await coord.storage.snapshot(table_id, max(since, min(ts, upper - 1)))
    rows = {}
    for r in snap.to_pylist():
        row = tuple(r[n] for n in names)
        rows[row[:-1]] = row
    return rows


async def watch(coord: Coordinator) -> None:
    assert FRONTIERS is not None and REPLICA_FRONTIERS is not None
    f_names = ["object_id", "read_frontier", "write_frontier"]
    r_names = ["object_id", "replica_id", "write_frontier"]
    f_types = [pa.string(), pa.int64(), pa.int64()]
    r_types = [pa.string(), pa.string(), pa.int64()]
    try:
        f_old = {k[:1]: v for k, v in (await _current(coord, FRONTIERS.id, f_names)).items()}
        r_old = {k[:2]: v for k, v in (await _current(coord, REPLICA_FRONTIERS.id, r_names)).items()}
    except Exception:  # noqa: BLE001 - nothing to retract on a first start
        f_old, r_old = {}, {}
    own = {FRONTIERS.id, REPLICA_FRONTIERS.id}
    while True:
        await asyncio.sleep(INTERVAL_S)
        f_new: dict[Any, Row] = {}
        for sid, c in coord.storage.collections.items():
            if sid in own:
                continue  # their own frontiers change with every write of this loop
            f_new[(sid,)] = (sid, c.since, c.upper)
        r_new: dict[Any, Row] = {}
        for dataflow_id, per_replica in coord.compute.write_frontiers().items():
            for replica_id, upper in per_replica.items():
                r_new[(dataflow_id, replica_id)] = (dataflow_id, replica_id, upper)
            hold = coord.dataflow_holds.get(dataflow_id)
            if dataflow_id not in coord.storage.collections and per_replica and hold is not None:
                # an index: readable from where its inputs are held, written up to its furthest replica
                f_new[(dataflow_id,)] = (dataflow_id, hold.ts, max(per_replica.values()))
        updates = {}
        f_changes, r_changes = diff_rows(f_old, f_new), diff_rows(r_old, r_new)
        if f_changes:
            updates[FRONTIERS.id] = _table(f_names, f_types, f_changes)
        if r_changes:
            updates[REPLICA_FRONTIERS.id] = _table(r_names, r_types, r_changes)
        if not updates:
            continue
        try:
            await coord.storage.append(updates)
            f_old, r_old = f_new, r_new
        except Exception:  # noqa: BLE001 - retried on the next tick
            log.warning("recording frontiers failed", exc_info=True)
