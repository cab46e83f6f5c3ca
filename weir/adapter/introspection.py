"""Replicated compute introspection, coordinator side (designs 001 and 004): each replica's
introspection sources and views in the catalog, its introspection shard in storage, and the
logging configuration its CreateInstance carries (the shard id is per replica: the
controller sends each replica its own).

A replica writes its shard itself, with its incarnation as writer epoch; the coordinator
follows the shard's upper like any shard a replica writes, compacts it (its since trails
by `WINDOW_MS`), reads it at its own latest complete time, and drops it with the replica.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from weir.catalog.introspection import DEFAULT_INTERVAL
from weir.catalog.model import Cluster, Item, Replica
from weir.catalog.vars import duration_ms
from weir.compute import introspection as ci
from weir.errors import SqlState, WeirError

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator

log = logging.getLogger(__name__)

# How much history an introspection shard keeps behind its upper: a read plans at the
# shard's latest time and runs a little later, so it must still be readable then.
WINDOW_MS = 30_000
_COLUMNS = [(n, t, True) for n, t in ci.SHARD_COLUMNS]


def parse_interval(text: str) -> int:
    """INTERVAL text as milliseconds; 22023 unless it is a non-negative interval."""
    try:
        ms = duration_ms(str(text).strip().strip("'"))
    except ValueError:
        ms = -1
    if ms < 0:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                        f"invalid INTROSPECTION INTERVAL {text!r}: expected a non-negative interval",
                        hint="e.g. INTROSPECTION INTERVAL '1s', or 0 to turn introspection off")
    return ms


def interval_ms(cluster: Cluster) -> int:
    return parse_interval(cluster.options.get("introspection_interval", DEFAULT_INTERVAL))


def persisted(coord: Coordinator, cluster: Cluster) -> bool:
    """Whether the cluster's replicas write their introspection to storage."""
    return interval_ms(cluster) > 0 and coord.system_var("enable_replicated_compute_introspection") == "on"


def logging_config(coord: Coordinator, replica: Replica) -> dict[str, Any]:
    """CreateInstance's `logging` for this replica (design 004: specialised per replica)."""
    cluster = coord.catalog.get_cluster_by_id(replica.cluster_id)
    ms = interval_ms(cluster)
    sink = persisted(coord, cluster) and bool(coord.catalog.introspection_items({replica.id}))
    return {"interval_ms": ms, "debugging": bool(cluster.options.get("introspection_debugging", False)),
            "shard_id": ci.shard_id(replica.id) if sink else None,
            "hydration": coord.system_var("enable_compute_operator_hydration_status_logging") == "on"}


def known_shards(coord: Coordinator) -> set[str]:
    return {ci.shard_id(r.id) for r in coord.catalog.list_replicas()}


async def open_shards(coord: Coordinator) -> None:
    """At start: follow the shards of replicas that have introspection sources."""
    for rid in {i.definition["replica_id"] for i in coord.catalog.introspection_items()}:
        await _ensure_shard(coord, rid)


async def _ensure_shard(coord: Coordinator, replica_id: str) -> None:
    sid = ci.shard_id(replica_id)
    await coord.storage.ensure_collection(sid, _COLUMNS, external=True)
    coord.storage.set_compaction_window(sid, WINDOW_MS)


async def ensure(coord: Coordinator, replicas: list[Replica] | None = None) -> list[Item]:
    """Give every replica (of `replicas`, default all) whose cluster persists introspection
    its sources, views and shard; returns the items created."""
    made: list[Item] = []
    cat = coord.catalog
    clusters = {c.id: c for c in cat.list_clusters()}
    for r in replicas if replicas is not None else cat.list_replicas():
        cluster = clusters.get(r.cluster_id)
        if cluster is None or not persisted(coord, cluster):
            continue
        before = {i.id for i in cat.introspection_items({r.id})}
        await _ensure_shard(coord, r.id)
        made += [i for i in cat.create_introspection_items(r.id) if i.id not in before]
    return made


def drop_items(coord: Coordinator, replica_ids: set[str], cascade: bool) -> tuple[Item, ...]:
    """In the caller's catalog transaction: the replicas' introspection items and (with
    CASCADE) what reads them. 2BP01 otherwise."""
    return coord.catalog.drop_introspection_items(replica_ids, cascade)


async def drop_shards(coord: Coordinator, replica_ids: set[str]) -> None:
    for rid in replica_ids:
        sid = ci.shard_id(rid)
        if sid in coord.storage.collections:
            await coord.storage.drop_collection(sid)


async def read_logs(coord: Coordinator, replica_id: str, names: set[str]) -> dict[str, list[dict[str, Any]]]:
    """These logs of a replica as its shard holds them at its latest complete time."""
    sid = ci.shard_id(replica_id)
    t = coord.introspection_read_time(sid)
    out: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    if t is None or sid not in coord.storage.collections or t < coord.storage.frontiers(sid)[0]:
        return out
    snap = await coord.storage.snapshot(sid, t)
    for row in snap.to_pylist():
        variant = ci.BY_NAME.get(row["log"])
        if variant is None or variant.name not in names:
            continue
        value = {col: row[slot] for col, slot in variant.slots}
        out[variant.name].extend([value] * int(row["mz_diff"]))
    return out


async def dataflow_operators(coord: Coordinator, replica_id: str, export_id: str
                             ) -> list[tuple[int, str, int | None]]:
    """(plan node id, name, parent plan node id) of the operators the replica's dataflow
    for `export_id` runs, as its introspection recorded them."""
    logs = await read_logs(coord, replica_id, {"mz_compute_exports_per_worker", "mz_dataflow_operators_per_worker",
                                               "mz_dataflow_operator_parents_per_worker"})
    dataflow = next((e["dataflow_id"] for e in logs["mz_compute_exports_per_worker"] if e["export_id"] == export_id),
                    None)
    ops = {o["id"]: o for o in logs["mz_dataflow_operators_per_worker"]
           if o["dataflow_id"] == dataflow and o["plan_node_id"] > 0}
    parents = {p["id"]: p["parent_id"] for p in logs["mz_dataflow_operator_parents_per_worker"]}
    return [(o["plan_node_id"], o["name"], ops[parents[i]]["plan_node_id"] if parents.get(i) in ops else None)
            for i, o in ops.items()]


def follow_uppers(coord: Coordinator) -> None:
    """Every tick: the introspection shards' uppers as their replicas' heartbeats report
    them (no polling of storage for them)."""
    for r in list(coord.compute.replicas.values()):
        intro = (r.last_status or {}).get("introspection") or {}
        upper, sid = intro.get("upper"), intro.get("shard_id")
        if upper and sid:
            coord.storage.observe_upper(str(sid), int(upper))
