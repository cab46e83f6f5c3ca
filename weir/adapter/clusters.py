"""Cluster and replica DDL: the catalog records them, the compute controller (through
the orchestrator) starts and stops the replica processes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from weir.adapter import api, introspection
from weir.compute.sizes import resolve_size
from weir.errors import SqlState, WeirError
from weir.sql import statements as st

if TYPE_CHECKING:
    from weir.adapter.session import Session

_KNOWN_CLUSTER_OPTIONS = {"SIZE", "REPLICATION FACTOR", "MANAGED", "INTROSPECTION INTERVAL",
                          "INTROSPECTION DEBUGGING", "DISK"}


def _size(session: Session, size: str) -> str:
    resolve_size(size, session.coord.size_config())  # 22023 listing the valid sizes
    return size


def _factor(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                        f"invalid REPLICATION FACTOR {text!r}: expected a non-negative integer") from None
    if n < 0 or n > 16:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, "REPLICATION FACTOR must be between 0 and 16")
    return n


def _check_options(opts: dict[str, str]) -> None:
    for name in opts:
        if name not in _KNOWN_CLUSTER_OPTIONS:
            raise WeirError(SqlState.SYNTAX_ERROR, f"unknown cluster option {name}",
                            hint="Valid options: SIZE, REPLICATION FACTOR")


def _introspection_options(opts: dict[str, str]) -> dict[str, Any]:
    """INTROSPECTION INTERVAL (0: off) and INTROSPECTION DEBUGGING, as the catalog keeps them."""
    out: dict[str, Any] = {}
    if "INTROSPECTION INTERVAL" in opts:
        text = str(opts["INTROSPECTION INTERVAL"]).strip().strip("'")
        introspection.parse_interval(text)
        out["introspection_interval"] = text
    if "INTROSPECTION DEBUGGING" in opts:
        value = str(opts["INTROSPECTION DEBUGGING"]).strip().strip("'").lower()
        if value not in ("true", "false", "on", "off", "1", "0", "t", "f"):
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                            f"invalid INTROSPECTION DEBUGGING {value!r}: expected a boolean")
        out["introspection_debugging"] = value in ("true", "on", "1", "t")
    return out


async def create_cluster(session: Session, stmt: st.CreateCluster) -> api.Command:
    coord = session.coord
    cat = coord.catalog
    if stmt.replicas is not None:
        sizes = []
        for r in stmt.replicas:
            if "SIZE" not in r.options:
                raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f"replica {r.name} needs a SIZE")
            sizes.append(_size(session, r.options["SIZE"]))
        with cat.transaction():
            cluster = cat.create_cluster(stmt.name, size=None, replication_factor=0, managed=False,
                                         owner_id=session.role.id)
            for r, size in zip(stmt.replicas, sizes, strict=True):
                cat.create_replica(cluster.id, r.name, size, owner_id=session.role.id)
    else:
        _check_options(stmt.options)
        if "SIZE" not in stmt.options:
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE, "CREATE CLUSTER needs a SIZE",
                            hint="e.g. CREATE CLUSTER c (SIZE '1', REPLICATION FACTOR 1)")
        size = _size(session, stmt.options["SIZE"])
        factor = _factor(stmt.options.get("REPLICATION FACTOR", "1"))
        cluster = cat.create_cluster(stmt.name, size=size, replication_factor=factor, managed=True,
                                     owner_id=session.role.id, options=_introspection_options(stmt.options))
    replicas = cat.list_replicas(cluster.id)
    await introspection.ensure(coord, replicas)
    for replica in replicas:
        await coord.start_replica(replica)
    await coord.catalog_changed()
    return api.Command("CREATE CLUSTER")


async def create_replica(session: Session, stmt: st.CreateClusterReplica) -> api.Command:
    coord = session.coord
    cluster = coord.catalog.get_cluster(stmt.cluster)
    if cluster.managed:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        "cannot create more replicas of a managed cluster",
                        hint="Use ALTER CLUSTER ... SET (REPLICATION FACTOR n) instead.")
    if "SIZE" not in stmt.options:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, "CREATE CLUSTER REPLICA needs a SIZE")
    size = _size(session, stmt.options["SIZE"])
    replica = coord.catalog.create_replica(cluster.id, stmt.name, size, owner_id=session.role.id)
    await introspection.ensure(coord, [replica])
    await coord.start_replica(replica)
    await coord.catalog_changed()
    return api.Command("CREATE CLUSTER REPLICA")


async def alter_cluster(session: Session, stmt: st.AlterCluster) -> api.Command:
    coord = session.coord
    if stmt.if_exists and coord.catalog.find_cluster(stmt.name) is None:
        session.notice(f'cluster "{stmt.name}" does not exist, skipping')
        return api.Command("ALTER CLUSTER")
    _check_options(stmt.options)
    cluster = coord.catalog.get_cluster(stmt.name)
    if not cluster.managed:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        f"cannot ALTER the SIZE or REPLICATION FACTOR of unmanaged cluster {stmt.name}")
    size = _size(session, stmt.options["SIZE"]) if stmt.options.get("SIZE") else None
    factor = _factor(stmt.options["REPLICATION FACTOR"]) if stmt.options.get("REPLICATION FACTOR") else None
    options = _introspection_options(stmt.options) or None
    cat = coord.catalog
    with cat.transaction():
        change = cat.alter_cluster(stmt.name, size=size, replication_factor=factor, options=options)
        gone = {r.id for r in change.dropped}
        if not introspection.persisted(coord, change.cluster):  # INTROSPECTION INTERVAL 0
            gone |= {r.id for r in cat.list_replicas(change.cluster.id)}
        dropped_items = introspection.drop_items(coord, gone, cascade=False)
    await coord.drop_storage(dropped_items)
    for replica in change.dropped:
        await coord.compute.drop_replica(replica.id)
    await introspection.drop_shards(coord, gone)
    await introspection.ensure(coord, cat.list_replicas(change.cluster.id))
    for replica in change.created:
        await coord.start_replica(replica)
    for replica in cat.list_replicas(change.cluster.id):  # INTROSPECTION INTERVAL / DEBUGGING
        coord.compute.set_logging(replica.id, introspection.logging_config(coord, replica))
    await coord.catalog_changed()
    return api.Command("ALTER CLUSTER")


async def drop(session: Session, stmt: st.Drop) -> None:
    coord = session.coord
    cat = coord.catalog
    for parts in stmt.names:
        if stmt.object_kind == "cluster":
            if cat.find_cluster(parts[0]) is None:
                if stmt.if_exists:
                    session.notice(f'cluster "{parts[0]}" does not exist, skipping')
                    continue
                raise WeirError(SqlState.UNDEFINED_OBJECT, f"unknown cluster '{parts[0]}'")
            with cat.transaction():
                replica_ids = {r.id for r in cat.list_replicas(cat.get_cluster(parts[0]).id)}
                logs = introspection.drop_items(coord, replica_ids, stmt.cascade)
                result = cat.drop_cluster(parts[0], cascade=stmt.cascade)
            await coord.drop_storage(logs + result.items)
            for replica in result.replicas:
                await coord.compute.drop_replica(replica.id)
            await introspection.drop_shards(coord, replica_ids)
        else:
            cluster = cat.find_cluster(parts[0])
            replica = cat.find_replica(cluster.id, parts[1]) if cluster is not None else None
            if replica is None:
                if stmt.if_exists:
                    session.notice(f'cluster replica "{parts[0]}.{parts[1]}" does not exist, skipping')
                    continue
                raise WeirError(SqlState.UNDEFINED_OBJECT, f"unknown cluster replica '{parts[0]}.{parts[1]}'")
            if cluster is not None and cluster.managed:
                raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                                "cannot drop replicas of a managed cluster",
                                hint="Use ALTER CLUSTER ... SET (REPLICATION FACTOR n) instead.")
            with cat.transaction():
                logs = introspection.drop_items(coord, {replica.id}, stmt.cascade)
                cat.drop_replica(replica.id)
            await coord.drop_storage(logs)
            await coord.compute.drop_replica(replica.id)
            await introspection.drop_shards(coord, {replica.id})
