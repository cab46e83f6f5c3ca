"""Hydration status (design 002): per plan node and worker, as the replicas report it in
HydrationStatus responses (mz_internal.mz_compute_operator_hydration_statuses_per_worker;
the builtin view mz_compute_operator_hydration_statuses aggregates it), and per index and
materialized view and per replica, whether it has hydrated and how long that took, from
their Frontiers responses (the compute controller's `Hydration` records):

- mz_internal.mz_compute_hydration_times (replica_id, object_id, time_ns): NULL while
  hydrating, as Materialize's;
- mz_internal.mz_compute_hydration_statuses (object_id, replica_id, hydrated, hydration_time);
- mz_internal.mz_hydration_statuses (object_id, replica_id, hydrated): the same, plus the
  sources, which the storage controller writes (replica_id NULL; hydrated once the source
  has written its first data).

A replica that restarts, reconnects or is added hydrates its dataflows anew: its rows go
back to not hydrated, then to hydrated. A dropped object or replica has no rows. Measured
every live_relation.INTERVAL_S and before every read, appending only what changed."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from weir.adapter.live_relation import LiveRelation, LiveRelations, Rows
from weir.catalog.builtins import by_name

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator

TIMES = by_name("mz_internal", "mz_compute_hydration_times_raw")
COMPUTE_STATUSES = by_name("mz_internal", "mz_compute_hydration_statuses_raw")
STATUSES = by_name("mz_internal", "mz_hydration_statuses_raw")
OPERATORS = by_name("mz_internal", "mz_compute_operator_hydration_statuses_per_worker_raw")
PROGRESS = by_name("mz_internal", "mz_compute_hydration_progress_raw")
PLAN_NODES = by_name("mz_internal", "mz_compute_plan_nodes_raw")


def _compute(coord: Coordinator) -> list[tuple[str, str, int | None]]:
    """(object id, replica id, hydration time in ns or None) for every installed dataflow
    on every replica it was sent to."""
    out = []
    replicas = coord.compute.replicas
    for object_id, df in list(coord.compute.dataflow_definitions().items()):
        for replica_id, h in list(df.hydration.items()):
            if replica_id in replicas:
                out.append((object_id, replica_id, h.time_ns))
    return out


async def measure_hydrations(coord: Coordinator) -> tuple[Rows, Rows, Rows]:
    """mz_compute_hydration_times, mz_compute_hydration_statuses and mz_hydration_statuses
    from one reading of the replicas' reports, so that the three agree at every time."""
    compute = _compute(coord)
    times: Rows = {(r, o): (r, o, t) for o, r, t in compute}
    compute_statuses: Rows = {(o, r): (o, r, t is not None, None if t is None else timedelta(microseconds=t // 1000))
                              for o, r, t in compute}
    statuses: Rows = {(o, r): (o, r, t is not None) for o, r, t in compute}
    collections = coord.storage.collections
    for item in coord.catalog.list_items("source"):
        if "introspection_log" in item.definition:
            continue  # a replica's introspection: part of its replica, not hydrated on its own
        c = collections.get(item.id)
        statuses[(item.id, None)] = (item.id, None, c is not None and c.upper > 0)
    return times, compute_statuses, statuses


async def measure_operators(coord: Coordinator) -> dict[Any, tuple[Any, ...]]:
    """Per plan node and worker, as each replica's HydrationStatus responses said
    (weir.compute.replica.hydration)."""
    rows: dict[Any, tuple[Any, ...]] = {}
    replicas = coord.compute.replicas
    for object_id, df in list(coord.compute.dataflow_definitions().items()):
        for replica_id, ops in list(df.operators.items()):
            if replica_id in replicas:
                for (node, worker), p in list(ops.items()):
                    rows[(object_id, node, replica_id, worker)] = (object_id, node, replica_id, worker, p.hydrated)
    return rows


def progress_row(p: Any, now_ms: int) -> tuple[Any, ...]:
    """(rows_processed, rows_expected, bytes_processed, started_at, rate_rows_per_second,
    estimated_remaining) of one HydrationProgress (weir.compute.protocol): the rate over the time the node's worker has
    run (until it finished), the time left at that rate to the rows expected (0 once hydrated,
    NULL when nothing is expected or nothing has run yet)."""
    started = None if p.started_ms is None else datetime.fromtimestamp(p.started_ms / 1000, UTC)
    rate = 0.0
    if p.started_ms is not None:
        elapsed = ((p.finished_ms or now_ms) - p.started_ms) / 1000
        rate = p.rows / elapsed if elapsed > 0 else 0.0
    remaining: timedelta | None = None
    if p.hydrated:
        remaining = timedelta(0)
    elif p.expected is not None and p.rows >= p.expected:
        remaining = timedelta(0)
    elif p.expected is not None and rate > 0:
        remaining = timedelta(seconds=round((p.expected - p.rows) / rate, 3))
    return p.rows, p.expected, p.bytes, started, rate, remaining


async def measure_progress(coord: Coordinator) -> dict[Any, tuple[Any, ...]]:
    """Per plan node and worker, how far each replica's hydration is."""
    rows: dict[Any, tuple[Any, ...]] = {}
    replicas = coord.compute.replicas
    now_ms = int(time.time() * 1000)
    for object_id, df in list(coord.compute.dataflow_definitions().items()):
        for replica_id, ops in list(df.operators.items()):
            if replica_id in replicas:
                for (node, worker), p in list(ops.items()):
                    rows[(object_id, replica_id, node, worker)] = (object_id, replica_id, node, worker,
                                                                  *progress_row(p, now_ms))
    return rows


async def measure_plan_nodes(coord: Coordinator) -> dict[Any, tuple[Any, ...]]:
    """The pinned plan of every installed dataflow (EXPLAIN ... WITH (node_ids) prints it)."""
    rows: dict[Any, tuple[Any, ...]] = {}
    for object_id, df in list(coord.compute.dataflow_definitions().items()):
        index = df.index is not None
        for node, operator, parent in df.plan_nodes or ():
            if parent is None and index:
                parent = 0  # an index arranges its view's rows: its plan's root feeds node 0
            rows[(object_id, node)] = (object_id, int(node), None if parent is None else int(parent), str(operator))
        if index:
            rows[(object_id, 0)] = (object_id, 0, None, "ArrangeBy")
    return rows


def relations(coord: Coordinator) -> list[LiveRelations]:
    assert TIMES is not None and COMPUTE_STATUSES is not None and STATUSES is not None and OPERATORS is not None
    assert PROGRESS is not None and PLAN_NODES is not None
    return [
        LiveRelation(coord, PROGRESS, ("object_id", "replica_id", "plan_node_id", "worker_id"),
                     lambda: measure_progress(coord)),
        LiveRelation(coord, PLAN_NODES, ("object_id", "plan_node_id"), lambda: measure_plan_nodes(coord)),
        LiveRelation(coord, OPERATORS, ("object_id", "plan_node_id", "replica_id", "worker_id"),
                     lambda: measure_operators(coord)),
        LiveRelations(coord, [(TIMES, ("replica_id", "object_id")), (COMPUTE_STATUSES, ("object_id", "replica_id")),
                              (STATUSES, ("object_id", "replica_id"))], lambda: measure_hydrations(coord)),
    ]
