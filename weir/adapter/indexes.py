"""Indexes: a catalog item and a dataflow on every replica of its cluster that keeps
the indexed relation arranged by its keys in replica memory (no shard of its own).

An index on a stored collection (table, source, materialized view) arranges that
collection's shard directly; an index on a view runs the view's query on Spark.
The coordinator holds the index's inputs at its write frontier, as for a
materialized view, and reinstalls every index when the server restarts."""

from __future__ import annotations

import contextlib
import logging
import re
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp

from weir.adapter import api, mviews, planning, privileges, query
from weir.catalog.model import INDEX, Item
from weir.errors import SqlState, WeirError
from weir.http.metrics import INDEX_HISTORY_BYTES
from weir.sql import statements as st
from weir.sql.dialect import Weir  # how statements are read: a[i][j] as written
from weir.sql.resolve import RelationDesc

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator
    from weir.adapter.session import Session

log = logging.getLogger(__name__)

_INDEXABLE = ("table", "source", "view", "materialized-view")


def _column(desc: RelationDesc, col: exp.Column) -> int:
    name = col.name if col.this.quoted else col.name.lower()
    for i, c in enumerate(desc.columns):
        if c.name == name:
            return i
    raise WeirError(SqlState.UNDEFINED_COLUMN, f'column "{name}" does not exist',
                    detail=f"{desc.name} has columns {', '.join(c.name for c in desc.columns)}")


def _key(desc: RelationDesc, key: exp.Expression) -> tuple[str, int | None]:
    """A key's name and, for a plain column, its position (expression keys arrange the
    rows too, but lookups need a column key: the fast path scans them instead)."""
    if isinstance(key, exp.Paren):
        key = key.this
    if isinstance(key, exp.Column) and not key.table:
        pos = _column(desc, key)
        return desc.columns[pos].name, pos
    if any(isinstance(n, (exp.AggFunc, exp.Window, exp.Subquery, exp.Select)) for n in key.walk()):
        raise WeirError(SqlState.INVALID_COLUMN_REFERENCE,
                        f"index key must be a column or an expression of columns: {key.sql(dialect='postgres')}")
    for col in key.find_all(exp.Column):
        _column(desc, col)
    return key.sql(dialect="postgres"), None


def _default_name(session: Session, schema_id: str, on: str, keys: list[str] | None) -> str:
    base = f"{on}_primary_idx" if keys is None else f"{on}_{'_'.join(keys)}_idx"
    name, n = base, 1
    while session.coord.catalog.find_item(schema_id, name) is not None:
        name, n = f"{base}{n}", n + 1
    return name


def _definition(session: Session, desc: RelationDesc, keys: list[tuple[str, int | None]]) -> dict[str, Any]:
    """What the dataflow runs: the collection itself (direct) or the view's query."""
    columns = [{"name": c.name, "pg_type": c.type.exact_sql(),
                "nullable": c.nullable} for c in desc.columns]
    if desc.view_sql is None:
        assert desc.shard_id is not None
        inputs = {desc.shard_id: desc}
        spark_sql = f"SELECT * FROM {desc.spark_name}"
        direct = True
    else:
        # rendered for Spark even where the coordinator would answer it (SELECT 1 ...): the
        # index's dataflow runs it on the replica
        plan = planning.plan(session, sqlglot.parse_one(desc.view_sql, read=Weir), key=desc.view_sql, spark=True)
        mviews.refuse_unions(plan)
        spark_sql, inputs = mviews.dataflow_sql(session, plan), plan.inputs
        direct = False
    positions = [p for _, p in keys]
    return {"on_id": desc.id, "keys": [k for k, _ in keys],
            "key_positions": [] if None in positions else positions,
            "columns": columns, "direct": direct, "spark_sql": spark_sql,
            "inputs": mviews.dataflow_inputs(inputs)}


async def create(session: Session, stmt: st.CreateIndex) -> api.Command:
    coord = session.coord
    cat = coord.catalog
    desc = coord.resolver(session).lookup(stmt.on)
    on = cat.get_item(desc.id)
    if on.builtin or on.kind not in _INDEXABLE:
        raise WeirError(SqlState.WRONG_OBJECT_TYPE,
                        f'cannot create an index on {"system " if on.builtin else ""}{on.kind.replace("-", " ")} '
                        f'"{on.full_name}"', hint="Indexes can be created on tables, sources, views and "
                                                 "materialized views.")
    keys = [(c.name, i) for i, c in enumerate(desc.columns)] if stmt.keys is None else \
        [_key(desc, k) for k in stmt.keys]
    cluster = cat.get_cluster(stmt.cluster or session.get_var("cluster"))
    privileges.require_owner(session, "item", on.id)  # as in PostgreSQL: the relation's owner indexes it
    privileges.require(session, "schema", on.schema_id, "C")
    privileges.require(session, "cluster", cluster.id, "UC")
    label = None if stmt.keys is None else [re.sub(r"\W+", "_", k).strip("_") or "expr" for k, _ in keys]
    name = stmt.name or _default_name(session, on.schema_id, on.name, label)
    existing = cat.find_item(on.schema_id, name)
    if existing is not None:
        if stmt.if_not_exists:
            session.notice(f'index "{name}" already exists, skipping')
            return api.Command("CREATE INDEX")
        raise WeirError(SqlState.DUPLICATE_TABLE, f'{existing.kind.replace("-", " ")} "{name}" already exists')
    definition = _definition(session, desc, keys)
    inputs = {i["shard_id"]: None for i in definition["inputs"]}
    await coord.builtin_writes_settled(inputs)  # a DDL just before is in its snapshot
    as_of = query.choose_timestamp(session, inputs, for_write=True)  # type: ignore[arg-type]
    hold = coord.storage.acquire_read_hold(list(inputs), as_of)  # before any await
    item = cat.create_item(INDEX, on.schema_id, name, [], stmt.sql, definition, owner_id=session.role.id,
                           cluster_id=cluster.id, dependencies=[on.id])
    try:
        await install(coord, item, as_of, hold)
    except BaseException:
        hold.release()
        cat.drop_item(item.id)
        raise
    for replica in cat.list_replicas(cluster.id):
        session.dataflow_ran(replica.id, f"Dataflow: {item.full_name}")
    await coord.catalog_changed()
    return api.Command("CREATE INDEX")


def export(item: Item) -> dict[str, Any]:
    d = item.definition
    return {"keys": d["key_positions"], "columns": d["columns"], "direct": d["direct"]}


async def install(coord: Coordinator, item: Item, as_of: int, hold: Any = None) -> None:
    """Install the index's dataflow on its cluster, holding its inputs at `as_of`."""
    coord.index_as_ofs[item.id] = as_of
    held = coord.holds.least_time_on(item.id)  # after a restart: the history its holds keep
    await mviews.install_dataflow(coord, item, as_of, hold, output_shard_id="", strategy="arrange",
                                  index=export(item), since=None if held is None else max(held, as_of))


async def restart(coord: Coordinator, item: Item) -> None:
    """Rehydrate at the inputs' current since."""
    await mviews.reinstall(coord, item, lambda: max(mviews.input_sinces(coord, item), default=0), install)


def write_frontier(coord: Coordinator, item_id: str) -> int | None:
    """The furthest write frontier a replica reported for the index."""
    frontiers = coord.compute.write_frontiers().get(item_id) or {}
    return max(frontiers.values(), default=None)


def _cached(coord: Coordinator) -> dict[str, Any]:
    """Every index, and by (on, cluster), read once per catalog generation."""
    gen = coord.catalog.generation
    cache = coord.index_cache
    if cache.get("generation") != gen:
        every = coord.catalog.list_items(INDEX)
        by_on: dict[tuple[str, str], list[Item]] = {}
        for i in every:
            by_on.setdefault((i.definition.get("on_id", ""), i.cluster_id or ""), []).append(i)
        cache.clear()
        cache.update({"generation": gen, "by_on": by_on, "all": every})
    return cache


def on_cluster(coord: Coordinator, on_id: str, cluster_id: str) -> list[Item]:
    """The indexes on `on_id` installed on the cluster (cached per catalog generation)."""
    return list(_cached(coord)["by_on"].get((on_id, cluster_id), []))


def allow_compaction(coord: Coordinator) -> None:
    """Each tick: how much history each index's arrangement keeps. Its since is the
    earliest of its holds' times and its write frontier minus its compaction window
    (RETAIN HISTORY, else the default). It only moves forward: reads at times before it
    that a later hold keeps are answered by Spark over the inputs that hold keeps."""
    from weir.storage.controller import COMPACTION_WINDOW_MS

    sinces = coord.index_sinces
    live = set()
    statuses = coord.compute.dataflow_statuses()
    for item in _cached(coord)["all"]:
        live.add(item.id)
        if item.id in statuses:
            INDEX_HISTORY_BYTES.labels(item.id).set(
                max(int(st.get("history_bytes") or 0) for st in statuses[item.id].values()))
        frontier = write_frontier(coord, item.id)
        if not frontier:
            continue  # not hydrated yet: it keeps what it hydrated at
        since = frontier - int(item.definition.get("retain_history_ms") or COMPACTION_WINDOW_MS)
        held = coord.holds.least_time_on(item.id)
        if held is not None:
            since = min(since, held)
        since = max(since, 0)
        if since > sinces.get(item.id, -1):
            sinces[item.id] = since
            coord.compute.allow_compaction(item.cluster_id or "", item.id, since)
    for gone in set(sinces) - live:
        del sinces[gone]
        with contextlib.suppress(KeyError):  # never reported
            INDEX_HISTORY_BYTES.remove(gone)
    for gone in set(coord.index_as_ofs) - live:
        del coord.index_as_ofs[gone]


def read_frontier(coord: Coordinator, index_id: str) -> int | None:
    """The earliest time the index answers reads at: the later of the time it hydrated at
    and its since (None: not installed here)."""
    as_of = coord.index_as_ofs.get(index_id)
    if as_of is None:
        return None
    return max(as_of, coord.index_sinces.get(index_id, as_of))


def readable_at(coord: Coordinator, index_id: str, ts: int) -> bool:
    """Whether the index answers reads at `ts` (timestamp selection for AS OF)."""
    frontier = read_frontier(coord, index_id)
    return frontier is not None and frontier <= ts


def read_through(session: Session, expr: exp.Expression) -> exp.Expression:
    """SUBSCRIBE to an index means to the relation it indexes: name that instead."""
    from weir.sql.resolve import table_parts

    froms = expr.args.get("from_") or expr.args.get("from") if isinstance(expr, exp.Select) else None
    if froms is None or not isinstance(froms.this, exp.Table):
        return expr
    table = froms.this
    try:
        desc = session.coord.resolver(session).lookup(table_parts(table))
    except WeirError:
        return expr
    if desc.kind != INDEX:
        return expr
    on = session.coord.catalog.get_item(session.coord.catalog.get_item(desc.id).definition["on_id"])
    out = expr.copy()
    parts = [p for p in (on.database_name, on.schema_name, on.name) if p]
    new = exp.to_table(".".join(f'"{p}"' for p in parts))
    new.set("alias", exp.TableAlias(this=exp.to_identifier(table.alias or table.name)))
    (out.args.get("from_") or out.args.get("from")).this.replace(new)
    return out
