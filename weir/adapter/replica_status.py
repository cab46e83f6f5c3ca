"""Replica status relations: mz_internal.mz_cluster_replica_statuses (one row per live
replica) and mz_cluster_replica_status_history (one row per change)."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from weir.catalog.builtins import by_name

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator

log = logging.getLogger(__name__)

HEARTBEAT_TIMEOUT_S = 5.0
POLL_S = 1.0

STATUSES = by_name("mz_internal", "mz_cluster_replica_statuses")
HISTORY = by_name("mz_internal", "mz_cluster_replica_status_history")


def _status_of(s: Any, now: float) -> tuple[str, str | None]:
    if s.status == "online":
        if s.last_heartbeat is not None and now - s.last_heartbeat > HEARTBEAT_TIMEOUT_S:
            return "offline", "not responding"
        return "online", None
    return "offline", s.reason


def _table(rows: list[tuple[Any, ...]], diff: int) -> pa.Table:
    names = ["replica_id", "process_id", "status", "reason", "at"]
    cols = list(zip(*rows, strict=True)) if rows else [[] for _ in names]
    types = [pa.string(), pa.int64(), pa.string(), pa.string(), pa.timestamp("us", "UTC")]
    data = {n: pa.array(list(c), t) for n, c, t in zip(names, cols, types, strict=True)}
    data["mz_diff"] = pa.array([diff] * len(rows), pa.int64())
    return pa.table(data)


async def watch(coord: Coordinator) -> None:
    assert STATUSES is not None and HISTORY is not None
    current: dict[str, tuple[Any, ...]] = {}
    # rows left by a previous run (the server restarted): retract them first
    try:
        ts = coord.oracle.read_ts()
        old = await coord.storage.snapshot(STATUSES.id, ts)
        stale = [tuple(r[c] for c in ("replica_id", "process_id", "status", "reason", "updated_at"))
                 for r in old.to_pylist() for _ in range(r["mz_diff"])]
    except Exception:  # noqa: BLE001 - empty on first start
        stale = []
    if stale:
        t = _table(stale, -1).rename_columns(["replica_id", "process_id", "status", "reason", "updated_at", "mz_diff"])
        await coord.storage.append({STATUSES.id: t})
    while True:
        now = time.time()
        ts_now = dt.datetime.now(dt.UTC)
        changes_cur: list[tuple[tuple[Any, ...], int]] = []
        history: list[tuple[Any, ...]] = []
        seen = set()
        for s in coord.compute.replica_statuses():
            seen.add(s.replica_id)
            status, reason = _status_of(s, now)
            prev = current.get(s.replica_id)
            if prev is not None and prev[2] == status and prev[3] == reason:
                continue
            row = (s.replica_id, 0, status, reason, ts_now)
            if prev is not None:
                changes_cur.append((prev, -1))
            changes_cur.append((row, 1))
            history.append(row)
            current[s.replica_id] = row
        for rid in [r for r in current if r not in seen]:  # dropped replicas leave the relation
            changes_cur.append((current.pop(rid), -1))
        if changes_cur or history:
            updates = {}
            if changes_cur:
                plus = [r for r, d in changes_cur if d > 0]
                minus = [r for r, d in changes_cur if d < 0]
                t = pa.concat_tables([_table(plus, 1), _table(minus, -1)])
                updates[STATUSES.id] = t.rename_columns(
                    ["replica_id", "process_id", "status", "reason", "updated_at", "mz_diff"])
            if history:
                updates[HISTORY.id] = _table(history, 1).rename_columns(
                    ["replica_id", "process_id", "status", "reason", "occurred_at", "mz_diff"])
            try:
                await coord.storage.append(updates)
            except Exception:  # noqa: BLE001 - retried on the next poll
                log.warning("recording replica statuses failed", exc_info=True)
        await asyncio.sleep(POLL_S)
