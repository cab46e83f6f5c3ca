"""Replica health on top of introspection (design 004's goal, issue 12 part 8):
mz_internal.mz_cluster_replica_metrics (what each replica's last heartbeat says: CPU, memory,
JVM heap and GC), its history (a row per replica every HISTORY_S), mz_cluster_replica_utilization
(the same as percentages of the replica size's limits) and mz_dataflow_lag (per replica and
export, how far its write frontier trails its inputs' uppers). Measured every
live_relation.INTERVAL_S and before every read; `weir_replica_*` gauges for Prometheus."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import re
from typing import TYPE_CHECKING, Any

from prometheus_client import Gauge

from weir.adapter import hydration
from weir.adapter.builtin_tables import builtin_updates
from weir.adapter.live_relation import LiveRelation
from weir.catalog.builtins import by_name
from weir.compute.sizes import resolve_size

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator

log = logging.getLogger(__name__)

METRICS = by_name("mz_internal", "mz_cluster_replica_metrics")
HISTORY = by_name("mz_internal", "mz_cluster_replica_metrics_history")
UTILIZATION = by_name("mz_internal", "mz_cluster_replica_utilization")
LAG = by_name("mz_internal", "mz_dataflow_lag")
WRITERS = by_name("mz_internal", "mz_cluster_replica_introspection")
HISTORY_S = 60.0

_GAUGES = {name: Gauge(f"weir_replica_{name}", doc, ["replica_id"]) for name, doc in (
    ("cpu_nano_cores", "CPU the replica's processes use, in billionths of a core"),
    ("memory_bytes", "Resident memory of the replica's processes"),
    ("heap_bytes", "JVM heap in use"),
    ("heap_limit_bytes", "JVM heap limit"),
    ("gc_seconds", "JVM garbage collection time since start"),
    ("introspection_commits", "Introspection appends this incarnation made"),
    ("introspection_skipped", "Introspection intervals this incarnation could not write"))}
DATAFLOW_LAG = Gauge("weir_replica_dataflow_lag_ms", "How far a dataflow's write frontier on a replica trails "
                     "its inputs' uppers", ["replica_id", "object_id"])

_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)b?\s*$", re.IGNORECASE)


def memory_bytes(text: str) -> int | None:
    """Spark's memory strings ('1g', '512m') as bytes."""
    m = _MEMORY.match(text)
    if not m:
        return None
    return int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2).lower() or " "))


def _statuses(coord: Coordinator) -> list[tuple[Any, dict[str, Any]]]:
    """(replica state, its last Status body) for every connected replica."""
    ctl = coord.compute
    return [(r, r.last_status) for r in list(ctl.replicas.values())
            if r.conn is not None and not r.conn.closed and r.last_status]


async def measure_metrics(coord: Coordinator) -> dict[Any, tuple[Any, ...]]:
    rows: dict[Any, tuple[Any, ...]] = {}
    for r, status in _statuses(coord):
        m = status.get("metrics") or {}
        row = (r.replica_id, 0, m.get("cpu_nano_cores"), int(m.get("memory_bytes") or 0), m.get("heap_bytes"),
               m.get("heap_limit"), m.get("gc_ns"))
        rows[(r.replica_id, 0)] = row
        for name, value in (("cpu_nano_cores", row[2]), ("memory_bytes", row[3]), ("heap_bytes", row[4]),
                            ("heap_limit_bytes", row[5]), ("gc_seconds", (row[6] or 0) / 1e9)):
            if value is not None:
                _GAUGES[name].labels(r.replica_id).set(value)
        intro = status.get("introspection") or {}
        _GAUGES["introspection_commits"].labels(r.replica_id).set(int(intro.get("commits") or 0))
        _GAUGES["introspection_skipped"].labels(r.replica_id).set(int(intro.get("skipped") or 0))
    return rows


async def measure_utilization(coord: Coordinator) -> dict[Any, tuple[Any, ...]]:
    rows: dict[Any, tuple[Any, ...]] = {}
    for r, status in _statuses(coord):
        m = status.get("metrics") or {}
        try:
            size = resolve_size(r.size, coord.size_config())
        except Exception:  # noqa: BLE001 - a size no longer configured: no percentages
            continue
        limit = memory_bytes(size.driver_memory)
        cpu = m.get("cpu_nano_cores")
        heap, heap_limit = m.get("heap_bytes"), m.get("heap_limit")
        rows[(r.replica_id, 0)] = (
            r.replica_id, 0, None if cpu is None else 100.0 * cpu / (size.workers * 1e9),
            100.0 * int(m.get("memory_bytes") or 0) / limit if limit else 0.0,
            100.0 * heap / heap_limit if heap is not None and heap_limit else None)
    return rows


async def measure_lag(coord: Coordinator) -> dict[Any, tuple[Any, ...]]:
    rows: dict[Any, tuple[Any, ...]] = {}
    storage = coord.storage
    for object_id, df in list(coord.compute.dataflow_definitions().items()):
        uppers = [storage.collections[i["shard_id"]].upper for i in df.inputs if i["shard_id"] in storage.collections]
        if not uppers:
            continue
        input_frontier = min(uppers)
        for replica_id, frontier in df.frontiers.items():
            lag = max(0, input_frontier - int(frontier))
            rows[(object_id, replica_id)] = (object_id, replica_id, int(frontier), input_frontier, lag)
            DATAFLOW_LAG.labels(replica_id, object_id).set(lag)
    return rows


async def measure_writers(coord: Coordinator) -> dict[Any, tuple[Any, ...]]:
    """Each replica's introspection writer, as its heartbeat reports it: a replica whose
    storage writes fail keeps serving and counts the intervals it could not write."""
    rows: dict[Any, tuple[Any, ...]] = {}
    for r, status in _statuses(coord):
        w = status.get("introspection")
        if w:
            rows[r.replica_id] = (r.replica_id, w.get("shard_id"), int(w.get("upper") or 0), int(w.get("commits") or 0),
                                  int(w.get("skipped") or 0), int(w.get("failures") or 0), bool(w.get("fenced")),
                                  w.get("error"))
    return rows


class ReplicaHealth:
    def __init__(self, coord: Coordinator) -> None:
        assert METRICS and UTILIZATION and LAG and HISTORY and WRITERS
        self.coord = coord
        self.relations = [
            LiveRelation(coord, METRICS, ("replica_id", "process_id"), lambda: measure_metrics(coord)),
            LiveRelation(coord, UTILIZATION, ("replica_id", "process_id"), lambda: measure_utilization(coord)),
            LiveRelation(coord, LAG, ("object_id", "replica_id"), lambda: measure_lag(coord)),
            LiveRelation(coord, WRITERS, ("replica_id",), lambda: measure_writers(coord)),
            *hydration.relations(coord),  # what replicas report of their dataflows' hydration
        ]
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [asyncio.create_task(r.watch(), name=f"health-{r.name}") for r in self.relations]
        self._tasks.append(asyncio.create_task(self._history(), name="replica-metrics-history"))

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()

    async def _history(self) -> None:
        """A row per replica every HISTORY_S (append-only, as Materialize's)."""
        assert HISTORY is not None
        while True:
            await asyncio.sleep(HISTORY_S)
            try:
                now = dt.datetime.now(dt.UTC)
                rows = [(*row, now) for row in (await measure_metrics(self.coord)).values()]
                if rows:
                    await self.coord.storage.append({HISTORY.id: builtin_updates(HISTORY, [(r, 1) for r in rows])})
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the next sample tries again
                log.warning("recording replica metrics history failed", exc_info=True)
