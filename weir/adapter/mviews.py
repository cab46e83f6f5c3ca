"""Materialized views: a catalog item, an output shard written by the cluster's replicas
(compare-and-append, first append of each interval wins) and a dataflow on every replica.

The coordinator holds the view's inputs' since at the view's output frontier (the
dataflow still needs those times) and tells replicas its collections' uppers every tick."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp

from weir.adapter import api, constant_views, planning, privileges, query, temporary
from weir.catalog.model import ColumnDef, Item
from weir.errors import SqlState, WeirError
from weir.sql import statements as st
from weir.sql import temporal
from weir.sql.dialect import Weir  # how statements are read: a[i][j] as written
from weir.sql.plan import QueryPlan
from weir.sql.translate import raise_sql

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator
    from weir.adapter.session import Session

log = logging.getLogger(__name__)


def is_linear(q: exp.Expression) -> bool:
    """Filters, projections, maps and UNION ALL only: maintainable from deltas."""
    if isinstance(q, exp.Union):
        return not q.args.get("distinct") and is_linear(q.this) and is_linear(q.expression)
    if not isinstance(q, exp.Select):
        return False
    if any(q.args.get(k) for k in ("group", "having", "order", "limit", "offset", "distinct", "joins", "with")):
        return False
    if any(isinstance(n, (exp.AggFunc, exp.Window, exp.Subquery)) for n in q.walk()):
        return False
    froms = q.args.get("from_") or q.args.get("from")
    return froms is not None and isinstance(froms.this, exp.Table)


GLOBAL_AGGREGATES_VAR = "enable_incremental_global_aggregates"
MIN_UPDATES_VAR = "incremental_min_updates"


def grouped(q: exp.Expression, global_aggregates: bool = False) -> bool:
    """A GROUP BY (or, with `global_aggregates`, a global aggregate or a SELECT DISTINCT):
    the replica maintains it from deltas if its aggregates allow (count, and sums of
    integers and decimals, over its inputs or over their equi-joins:
    weir.compute.replica.incremental.reduce), else recomputes."""
    if not isinstance(q, exp.Select):
        return False
    return bool(q.args.get("group")) or global_aggregates and (
        bool(q.args.get("distinct")) or any(_aggregates(e) for e in q.expressions))


def _aggregates(e: exp.Expression) -> bool:
    """An aggregate of this SELECT's own (not a window's, nor inside a subquery)."""
    if isinstance(e, (exp.Window, exp.Subquery, exp.Select)):
        return False
    return isinstance(e, exp.AggFunc) or any(_aggregates(c) for c in e.iter_expressions())


def joined(q: exp.Expression) -> bool:
    """A join: the replica keeps equi-joins of any number of inputs, inner and outer, from
    deltas (a delta join: weir.compute.replica.incremental.join), else recomputes."""
    return isinstance(q, exp.Select) and bool(q.args.get("joins"))


def dataflow_sql(session: Session, plan: QueryPlan, *, temporal: bool = False) -> str:
    """The Spark SQL a dataflow runs for the planned query (no parameters; session
    functions take the creating session's values; with a temporal filter, mz_now() is
    the parameter of the time computed)."""
    assert plan.spark is not None
    ctx = session.context(None)
    ctx.mz_now_parameter = temporal
    return plan.spark.template.render([], ctx)


def dataflow_inputs(inputs: dict[str, Any]) -> list[dict[str, Any]]:
    """The inputs of a dataflow (materialized view, index): shards, never a replica's live logs."""
    from weir.compute import introspection as ci

    if ci.LIVE_LOGS in inputs:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        "materialized views and indexes over live introspection logs are not supported",
                        hint="Read a replica's persisted introspection instead: mz_introspection.<log>_<replica_id>.")
    return [{"name": d.spark_name, "shard_id": sid,
             "columns": [{"name": c.name, "pg_type": c.type.exact_sql(),
                          "nullable": c.nullable} for c in d.columns]}
            for sid, d in inputs.items()]


def refuse_unions(plan: Any) -> None:
    """A dataflow is planned once, but a union over the replicas of the moment
    (mz_introspection.*_persist) changes members as replicas come and go: it would
    silently miss new replicas and break on dropped ones."""
    unions = sorted(plan.spark.unions) if plan.spark is not None else []
    if unions:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        f"materialized views and indexes over {unions[0]} are not supported "
                        "(its replicas change)",
                        hint="Use a view (expanded over the current replicas on every read), or read one "
                             "replica's introspection: mz_introspection.<log>_<replica_id>.")


async def create(session: Session, stmt: st.CreateMaterializedView) -> api.Command:
    from weir.adapter.ddl import target_schema

    coord = session.coord
    cat = coord.catalog
    schema_id, name = target_schema(session, stmt.name)
    existing = cat.find_item(schema_id, name)
    if existing is not None and stmt.if_not_exists:
        session.notice(f'materialized view "{name}" already exists, skipping')
        return api.Command("CREATE MATERIALIZED VIEW")
    if existing is not None and not stmt.replace:
        raise WeirError(SqlState.DUPLICATE_TABLE, f'{existing.kind.replace("-", " ")} "{name}" already exists')
    cluster = cat.get_cluster(stmt.cluster or session.get_var("cluster"))
    privileges.require(session, "cluster", cluster.id, "UC")
    plan = planning.plan(session, stmt.query, key=stmt.sql, qualify=True)
    temporary.refuse_dependencies(plan.depends_on)
    assert plan.spark is not None and plan.spark.qualified is not None
    qualified = plan.spark.qualified
    columns = await planning.describe(session, plan)
    if stmt.column_names is not None:
        if len(stmt.column_names) != len(columns):
            raise WeirError(SqlState.SYNTAX_ERROR, "materialized view specifies the wrong number of column names")
        columns = [api.Column(n, c.type) for n, c in zip(stmt.column_names, columns, strict=True)]
    planning.require_unique_names(columns)
    not_null = not_null_positions(columns, stmt.not_null)
    inputs = plan.inputs
    refuse_unions(plan)
    thresholds = temporal.thresholds_query(qualified)  # 0A000 for mz_now() outside temporal filters
    if not inputs:
        if thresholds is not None:
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                            "a temporal filter in a materialized view that reads no relation is not supported")
        return await _create_constant(session, stmt, plan, columns, schema_id, name, existing, cluster.id,
                                      not_null)
    spark_sql = asserting(dataflow_sql(session, plan, temporal=thresholds is not None), columns, not_null)
    definition: dict[str, Any] = {"query": qualified.sql(dialect="postgres"), "spark_sql": spark_sql,
                                  "inputs": dataflow_inputs(inputs)}
    if thresholds is not None:
        definition["thresholds_sql"] = dataflow_sql(session, planning.plan(session, thresholds))
        strategy = "recompute"
    else:
        global_aggregates = session.get_var(GLOBAL_AGGREGATES_VAR) == "on"
        strategy = ("linear" if is_linear(qualified) else "reduce" if grouped(qualified, global_aggregates)
                    else "join" if joined(qualified) else "recompute")
    definition["strategy"] = strategy
    if strategy in ("reduce", "join"):
        definition["min_updates"] = int(session.get_var(MIN_UPDATES_VAR))
    await coord.builtin_writes_settled(inputs)  # a DDL just before is in its snapshot
    as_of = query.choose_timestamp(session, inputs, for_write=True)
    hold = coord.storage.acquire_read_hold(list(inputs), as_of)  # before any await
    if existing is not None:  # OR REPLACE
        await drop_items(coord, cat.drop_item(existing.id, cascade=False).items)
    item = cat.create_item(
        "materialized-view", schema_id, name, _column_defs(columns, not_null), stmt.sql,
        definition, owner_id=session.role.id, cluster_id=cluster.id, dependencies=list(plan.depends_on))
    try:
        await coord.storage.ensure_collection(item.id, [(c.name, c.type, True) for c in columns],
                                              external=True, initial_upper=as_of, readable_from=as_of)
        await install(coord, item, as_of, hold)
    except BaseException:
        hold.release()
        cat.drop_item(item.id)
        try:
            await coord.storage.drop_collection(item.id)
        except Exception:  # noqa: BLE001 - best effort clean-up of a failed CREATE
            log.warning("dropping the shard of failed materialized view %s", item.id, exc_info=True)
        raise
    for replica in cat.list_replicas(cluster.id):
        session.dataflow_ran(replica.id, f"Dataflow: {item.full_name}")
    await coord.catalog_changed()
    return api.Command("CREATE MATERIALIZED VIEW")


async def _create_constant(session: Session, stmt: st.CreateMaterializedView, plan: QueryPlan,
                           columns: list[api.Column], schema_id: str, name: str, existing: Item | None,
                           cluster_id: str, not_null: list[int]) -> api.Command:
    """A view that reads no relation (weir.adapter.constant_views): its rows are known now,
    so a NULL an ASSERT NOT NULL forbids fails the CREATE."""
    coord = session.coord
    assert plan.spark is not None and plan.spark.qualified is not None
    rows = await constant_views.evaluate(session, plan, columns)
    for i in not_null:
        if any(r[i] is None for r in rows):
            raise WeirError(SqlState.NOT_NULL_VIOLATION, _must_not_be_null(columns[i].name))
    if existing is not None:  # OR REPLACE
        await coord.drop_storage(coord.catalog.drop_item(existing.id, cascade=False).items)
    item = coord.catalog.create_item(
        "materialized-view", schema_id, name, _column_defs(columns, not_null), stmt.sql,
        {"query": plan.spark.qualified.sql(dialect="postgres"), "strategy": constant_views.STRATEGY,
         "rows": rows, "inputs": []},
        owner_id=session.role.id, cluster_id=cluster_id, dependencies=list(plan.depends_on))
    try:
        await constant_views.create_shard(coord, item)
    except BaseException:
        coord.catalog.drop_item(item.id)
        raise
    await coord.catalog_changed()
    return api.Command("CREATE MATERIALIZED VIEW")


def not_null_positions(columns: list[api.Column], names: list[str]) -> list[int]:
    """The columns WITH (ASSERT NOT NULL ...) names, by position."""
    out: list[int] = []
    for n in names:
        at = next((i for i, c in enumerate(columns) if c.name == n), None)
        if at is None:
            raise WeirError(SqlState.UNDEFINED_COLUMN, f'column "{n}" in ASSERT NOT NULL option not found')
        if at in out:
            raise WeirError(SqlState.DUPLICATE_COLUMN, f'duplicate column "{n}" in non-null assertions')
        out.append(at)
    return out


def _must_not_be_null(name: str) -> str:
    return f'column "{name}" must not be null'


def _column_defs(columns: list[api.Column], not_null: list[int]) -> list[ColumnDef]:
    return [ColumnDef(c.name, c.type, nullable=i not in not_null) for i, c in enumerate(columns)]


def asserting(spark_sql: str, columns: list[api.Column], not_null: list[int]) -> str:
    """The dataflow's query with ASSERT NOT NULL checked: a NULL in such a column raises
    23502 on the replica, which records it as data at that time (as Materialize does, reads
    of the view fail with it until the NULL is gone)."""
    if not not_null:
        return spark_sql
    names = [f"__weir_c{i}" for i in range(len(columns))]
    items = []
    for i, n in enumerate(names):
        if i in not_null:
            fail = raise_sql(SqlState.NOT_NULL_VIOLATION, _must_not_be_null(columns[i].name))
            items.append(f"CASE WHEN {n} IS NULL THEN {fail} ELSE {n} END AS {n}")
        else:
            items.append(n)
    return f"SELECT {', '.join(items)} FROM ({spark_sql}) AS __weir_asserted({', '.join(names)})"


async def install(coord: Coordinator, item: Item, as_of: int, hold: Any = None) -> None:
    """Install the view's dataflow on its cluster, holding its inputs at `as_of`."""
    await coord.dataflow_errors.ensure(item.id, as_of)  # its runtime errors (weir.adapter.dataflow_errors)
    await install_dataflow(coord, item, as_of, hold, output_shard_id=item.id,
                           strategy=item.definition.get("strategy", "recompute"),
                           errors_shard_id=coord.dataflow_errors.shard_id(item.id))


async def install_dataflow(coord: Coordinator, item: Item, as_of: int, hold: Any, *, output_shard_id: str,
                           strategy: str, index: dict[str, Any] | None = None,
                           errors_shard_id: str | None = None, since: int | None = None) -> None:
    """Install the dataflow of a view or index on its cluster; its inputs stay held at
    `as_of` (then at its frontier, see advance_holds) until it is dropped."""
    d = item.definition
    if hold is None:
        hold = coord.storage.acquire_read_hold([i["shard_id"] for i in d["inputs"]], as_of)
    coord.dataflow_holds[item.id] = hold
    try:
        await coord.compute.create_dataflow(item.cluster_id, item.id, d["spark_sql"], d["inputs"],
                                            output_shard_id, as_of, strategy, index=index,
                                            errors_shard_id=errors_shard_id,
                                            thresholds_sql=d.get("thresholds_sql"), since=since,
                                            name=item.full_name, plan_nodes=d.get("plan_nodes"),
                                            row_counts=d.get("row_counts"), min_updates=int(d.get("min_updates", 0)))
    except BaseException:
        coord.dataflow_holds.pop(item.id, None)
        hold.release()
        raise
    pin_plan(coord, item)


def pin_plan(coord: Coordinator, item: Item) -> None:
    """Keep the plan its first replica explained in the catalog: every later install (a
    server restart) carries it, so its plan node ids stay what they were (design 002)."""
    nodes = coord.compute.plan_nodes(item.id)
    if nodes and not item.definition.get("plan_nodes"):
        try:
            current = coord.catalog.get_item(item.id)
        except WeirError:
            return  # dropped meanwhile
        coord.catalog.set_definitions({item.id: {**current.definition, "plan_nodes": nodes}}, reload=False)


def pin_row_counts(coord: Coordinator) -> None:
    """Each tick: keep in the catalog what every plan node produced in the last hydration a
    replica completed, beside the pinned plan: every later install (a server restart) carries
    it, the expectation of nodes whose size nothing else tells (design 002, issue 13 part 5)."""
    definitions = {}
    for item_id, counts in coord.compute.take_row_counts().items():
        try:
            current = coord.catalog.get_item(item_id)
        except WeirError:
            continue  # dropped meanwhile
        if current.definition.get("row_counts") != counts:
            definitions[item_id] = {**current.definition, "row_counts": counts}
    if definitions:
        coord.catalog.set_definitions(definitions, reload=False)


def input_sinces(coord: Coordinator, item: Item) -> list[int]:
    return [coord.storage.frontiers(i["shard_id"])[0] for i in item.definition["inputs"]
            if i["shard_id"] in coord.storage.collections]


async def reinstall(coord: Coordinator, item: Item, as_of: Callable[[], int],
                    install_at: Callable[[Coordinator, Item, int], Awaitable[None]]) -> None:
    """After a restart: install again at `as_of()`, retrying while the cluster's replicas
    are still starting."""
    while True:
        try:
            await install_at(coord, item, as_of())
            return
        except WeirError as e:
            if e.sqlstate not in ("57P03", SqlState.INTERNAL_ERROR):
                raise
            log.info("%s %s waits for its cluster: %s", item.kind.replace("-", " "), item.full_name, e.message)
            await asyncio.sleep(2)


async def restart(coord: Coordinator, item: Item) -> None:
    """Resume the view's dataflow where its output stands."""
    if constant_views.is_constant(item):
        await constant_views.recover(coord, item)
        return

    def as_of() -> int:
        since, upper = coord.storage.frontiers(item.id)
        return max([upper - 1, since, *input_sinces(coord, item)])

    await reinstall(coord, item, as_of, install)


def advance_holds(coord: Coordinator) -> None:
    """Each tick: let the inputs' since follow every view's output frontier (an index's:
    the furthest write frontier its replicas report; one that falls behind rehydrates)."""
    reported = coord.compute.write_frontiers()
    for item_id, hold in list(coord.dataflow_holds.items()):
        if item_id in coord.storage.collections:
            _, upper = coord.storage.frontiers(item_id)
            hold.downgrade(upper - 1)
        elif reported.get(item_id):
            hold.downgrade(max(reported[item_id].values()) - 1)


async def drop_items(coord: Coordinator, items: tuple[Item, ...]) -> None:
    for item in items:
        if item.kind in ("materialized-view", "index") and not constant_views.is_constant(item):
            hold = coord.dataflow_holds.pop(item.id, None)
            if hold is not None:
                hold.release()
            try:
                await coord.compute.drop_dataflow(item.cluster_id, item.id)
            except Exception:  # noqa: BLE001 - the replica may be gone; the shard goes anyway
                log.warning("dropping dataflow %s", item.id, exc_info=True)


def parse_definition(item: Item) -> exp.Expression:
    return sqlglot.parse_one(item.definition["query"], read=Weir)
