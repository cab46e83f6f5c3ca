"""Plans for a session: `weir.sql.plan` plans each query once; this module keys them
by what changes their meaning (statement text, parameter types, database,
search_path, cluster, superuser or not, catalog generation) so identical statements
share one plan across executions and sessions, and describes a plan's result once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp

from weir.adapter import api, system_reads
from weir.errors import SqlState, WeirError
from weir.http import metrics
from weir.sql import constant, infer, render
from weir.sql.plan import QueryPlan, plan_query
from weir.sql.render import bind_params
from weir.types import PgType

if TYPE_CHECKING:
    from weir.adapter.session import Session

MAX_PLANS = 1024


def plan(session: Session, expr: exp.Expression | Callable[[], exp.Expression],
         param_types: Sequence[PgType] = (), *, key: str | None = None, qualify: bool = False,
         spark: bool = False) -> QueryPlan:
    """The plan of a query for this session (cached). `key`: the statement's text when
    the caller has it (else the query is rendered to make one); with a key, `expr` may be
    a function that parses the query, called only when no plan is cached."""
    coord = session.coord
    settings = session.planning_key()
    if key is None:
        assert isinstance(expr, exp.Expression)
        key = expr.sql(dialect="postgres")
    cache_key = (key, tuple(param_types), settings, coord.catalog.generation, qualify, spark)
    cache = coord.plan_cache
    found = cache.get(cache_key)
    if found is not None:
        metrics.count(metrics.PLANS, "hit")
        return found
    metrics.count(metrics.PLANS, "miss")
    if not isinstance(expr, exp.Expression):
        expr = expr()
    planned = _plan_uncached(session, expr, list(param_types), coord.cluster_id_by_name(settings[2]) or "",
                             qualify=qualify, spark=spark)
    if _reads_introspection(planned):
        return planned  # read at the introspection shards' times of the moment
    if len(cache) >= MAX_PLANS:
        cache.pop(next(iter(cache)))
    cache[cache_key] = planned
    return planned


def _reads_introspection(planned: QueryPlan) -> bool:
    inputs = planned.spark.inputs if planned.spark is not None else {}
    return any(d.read_at is not None or d.volatile or d.part is not None
               for d in (*inputs.values(), *planned.depends_on.values()))


def plan_bound(session: Session, planned: QueryPlan, params: list[object]) -> QueryPlan:
    """A one-off plan of the query with these values written in (for values a plan's
    template cannot take, e.g. LIMIT NULL): not cached."""
    bound = bind_params(planned.expr, list(params), planned.param_types)
    return _plan_uncached(session, bound, [], planned.cluster_id)


def _plan_uncached(session: Session, expr: exp.Expression, param_types: list[PgType], cluster_id: str,
                   **options: bool) -> QueryPlan:
    from weir.adapter import indexes

    coord = session.coord
    return plan_query(expr, param_types, coord.resolver(session), cluster_id=cluster_id,
                      indexes_on=lambda rid: indexes.on_cluster(coord, rid, cluster_id), **options)


async def describe(session: Session, planned: QueryPlan) -> list[api.Column]:
    """The columns the query returns (asked of a replica once per plan when only Spark
    knows them)."""
    if planned.columns is not None:
        return planned.columns
    columns = None
    if planned.constant:
        try:
            result = planned.constant_result
            if result is None:
                bound = bind_params(planned.expr, [None] * len(planned.param_types), planned.param_types)
                result = constant.evaluate(bound, session.context(0))
            names, types, _ = result
            columns = [api.Column(n, t) for n, t in zip(names, types, strict=True)]
        except constant.NotConstant:
            pass
        except WeirError:
            if planned.spark is None:
                # it fails when it runs, with this error; its columns are what inference says
                columns = _inferred_columns(planned.expr)
                if columns is None:
                    raise
    if columns is None and planned.fast_path is not None:
        columns = [api.Column(n, t) for n, t in planned.fast_path.columns]
    if columns is None:
        from weir.adapter.query import columns_from_schema, input_spec

        assert planned.spark is not None
        sp = planned.spark
        sql = sp.template.render([], session.context(0), describe=True)
        inputs = [input_spec(desc, [], 0, False) for desc in sp.inputs.values()]
        schema = await system_reads.describe(session, sp) if system_reads.applies(session, sp) else None
        if schema is None:
            cluster = session.coord.current_cluster(session)
            schema = await session.coord.compute.describe(cluster.id, sql, inputs)
        columns = columns_from_schema(schema, sp.names, sp.inputs, planned.cast_hints)
    planned.columns = columns
    return columns


def require_unique_names(columns: Sequence[api.Column]) -> None:
    """A view's (or materialized view's) columns are named once each, as in PostgreSQL
    (`SELECT a + b, a * b` names both '?column?': a SELECT may, a view may not)."""
    seen: set[str] = set()
    for c in columns:
        if c.name in seen:
            raise WeirError(SqlState.DUPLICATE_COLUMN, f'column "{c.name}" specified more than once')
        seen.add(c.name)


def _inferred_columns(expr: exp.Expression) -> list[api.Column] | None:
    found = infer.result_types(expr)
    select = expr
    while isinstance(select, exp.SetOperation):
        select = select.this
    if found is None or not isinstance(select, exp.Select) or len(found) != len(select.expressions) \
            or any(t is None for t in found):
        return None
    return [api.Column(render.output_name(p), t) for p, t in zip(select.expressions, found, strict=True)
            if t is not None]


def plan_sql(session: Session, sql: str) -> QueryPlan:
    """The plan of a query the adapter wrote (SHOW ...): parsed only when not cached."""
    return plan(session, lambda: sqlglot.parse_one(sql, read="postgres"), key=sql)


async def run_sql(session: Session, sql: str) -> api.Rows:
    """`plan_sql`'s plan run."""
    from weir.adapter import query

    return await query.peek(session, plan_sql(session, sql), [])


async def run(session: Session, expr: exp.Expression, params: Sequence[object] = (),
              param_types: Sequence[PgType] = (), *, key: str | None = None, **kwargs: object) -> api.Rows:
    """Plan (or find the plan of) a query and run it: `weir.adapter.query.peek`'s options."""
    from weir.adapter import query

    return await query.peek(session, plan(session, expr, param_types, key=key), list(params),
                            **kwargs)  # type: ignore[arg-type]
