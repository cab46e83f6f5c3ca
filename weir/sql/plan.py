"""One plan per statement. A query is parsed, resolved and planned once into a
`QueryPlan`: what it reads (inputs by shard id, dependencies), what it returns
(output names, cast hints; the column types once a replica has described it), how it
can run (a constant answer on the coordinator, a fast-path peek from an index, a
Spark job over shards or through indexed views' arrangements) and the Spark SQL it
runs, rendered once as a `SparkTemplate` whose slots take each execution's parameter
values and session-function values. Describe, execute, EXPLAIN, SUBSCRIBE and DDL
(views, materialized views, indexes) all read the same plan; the adapter caches plans
per statement text, session settings that change their meaning, and catalog generation.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from weir.errors import SqlState, WeirError
from weir.sql import catalog_functions, constant, fast_path, featureless, infer
from weir.sql.infer import jsonb_result_types
from weir.sql.render import (
    SessionContext,
    fold_typed_literals,
    limit_value,
    literal,
    literal_sql,
    mark_session_functions,
    name_outputs,
    param_number,
    pg_type_of_datatype,
    session_value_sql,
    to_spark,
    unfold_typed_literals,
    uses_session,
)
from weir.sql.resolve import RelationDesc, Resolved, Resolver, column_type_fn, resolve
from weir.types import INTERVAL, RECORD_OID, PgType

# Slots in rendered Spark SQL, found outside string literals and quoted identifiers.
_SLOT = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`|:weir_([ps])(\d+)\b")


class NeedsReplan(Exception):
    """These parameter values cannot fill the template (LIMIT NULL means no LIMIT
    clause at all): plan the query with the values bound instead."""


@dataclass
class SparkTemplate:
    """Spark SQL rendered once, with slots for what changes per execution:
    `:weir_pN` (parameter N, inside a cast to its type, or bare in LIMIT/OFFSET) and
    `:weir_sK` (the K-th session-dependent function call)."""

    sql: str
    param_types: list[PgType]
    session_calls: list[exp.Expression]
    limit_params: frozenset[int]

    def render(self, values: list[Any], ctx: SessionContext, *, describe: bool = False) -> str:
        if ":weir_" not in self.sql:
            return self.sql

        keys = self._call_keys()
        rendered: dict[str, str] = {}  # one rendering of each distinct call (pg_catalog's views
        # name current_database() once per view: a psql query holds it four times)

        def fill(m: re.Match[str]) -> str:
            if m.group(1) is None:
                return m.group(0)
            k = int(m.group(2))
            if m.group(1) == "s":
                key, call = keys[k - 1], self.session_calls[k - 1]
                if key is not None and key in rendered:
                    return rendered[key]
                out = session_value_sql(call if key is not None else self._bound(call, values, describe), ctx)
                if key is not None:
                    rendered[key] = out
                return out
            if k in self.limit_params:
                v = 0 if describe else limit_value(values[k - 1], True)
                if v is None:
                    raise NeedsReplan
                return str(v)
            return literal_sql(None if describe else values[k - 1], self.param_types[k - 1])

        return _SLOT.sub(fill, self.sql)

    def _call_keys(self) -> list[str | None]:
        """Each session call's text (None when it takes parameters), worked out once per plan."""
        keys: list[str | None] | None = self.__dict__.get("_keys")
        if keys is None:
            keys = [None if c.find(exp.Parameter, exp.Placeholder) is not None else c.sql()
                    for c in self.session_calls]
            self.__dict__["_keys"] = keys
        return keys

    def _bound(self, call: exp.Expression, values: list[Any], describe: bool) -> exp.Expression:
        """A session function's call with this execution's parameter values in it
        (SQLAlchemy's `current_setting($1)`): its value is computed before Spark's."""
        def put(node: exp.Expression) -> exp.Expression:
            name = str(node.name) if isinstance(node, exp.Placeholder) else ""
            if not name.startswith("weir_p"):
                return node
            n = int(name.removeprefix("weir_p"))
            return literal(None if describe else values[n - 1], self.param_types[n - 1])

        return call.transform(put) if any(True for _ in call.find_all(exp.Placeholder)) else call


@dataclass
class SparkPlan:
    """A query bound to the collections it reads, rendered for Spark."""

    inputs: dict[str, RelationDesc]
    depends_on: dict[str, RelationDesc]
    names: list[str | None]
    template: SparkTemplate
    qualified: exp.Expression | None = None
    jsonb_columns: list[PgType | None] = field(default_factory=list)  # weir.sql.infer.jsonb_result_types
    unions: set[str] = field(default_factory=set)  # Resolved.unions


@dataclass
class QueryPlan:
    expr: exp.Expression  # as written (typed literals not folded), parameters kept
    param_types: list[PgType]
    cluster_id: str
    cast_hints: list[PgType | None]
    constant: bool = False  # reads no relation: evaluated on the coordinator when it can be
    constant_result: tuple[list[str], list[PgType], list[tuple[Any, ...]]] | None = None
    spark: SparkPlan | None = None
    fast_path: fast_path.FastPathPlan | None = None
    view_indexes: dict[str, list[Any]] = field(default_factory=dict)  # indexed views it reads
    columns: Any = None  # the result description, once known (the adapter's columns)
    _through: dict[frozenset[tuple[str, str]], SparkPlan] = field(default_factory=dict, repr=False)

    @property
    def inputs(self) -> dict[str, RelationDesc]:
        return self.spark.inputs if self.spark is not None else {}

    @property
    def depends_on(self) -> dict[str, RelationDesc]:
        return self.spark.depends_on if self.spark is not None else {}

    def through_indexes(self, resolver: Resolver, via: dict[str, Any]) -> SparkPlan:
        """The plan that reads the given indexed views from their arrangements instead
        of recomputing them (planned once per set of hydrated indexes)."""
        key = frozenset((vid, idx.id) for vid, idx in via.items())
        plan = self._through.get(key)
        if plan is None:
            plan = _spark_plan(fold_typed_literals(self.expr), self.param_types,
                               ThroughIndexes(resolver, via))
            self._through[key] = plan
        return plan


class ThroughIndexes:
    """A resolver that binds indexed views to their indexes' arrangements (a collection
    named after the index) instead of expanding their queries."""

    def __init__(self, inner: Resolver, via: dict[str, Any]) -> None:
        self.inner = inner
        self.via = via
        self.may_read_restricted = getattr(inner, "may_read_restricted", True)

    def lookup(self, parts: list[str]) -> RelationDesc:
        desc = self.inner.lookup(parts)
        idx = self.via.get(desc.id)
        if idx is None:
            return desc
        return RelationDesc(desc.id, desc.name, "view", desc.columns, shard_id=idx.id, oid=desc.oid)


def cast_hints(expr: exp.Expression) -> list[PgType | None]:
    """Per top-level projection, the type it is cast to (None: not a cast): types Spark
    cannot express (`x::uuid`, `'{}'::jsonb`, `n::mz_timestamp` come back from Spark as
    text or bigint), typmods a Spark result does not carry (numeric(p,s), char(n)), and
    what a cast's column is not (`c::text` of a char(n) column c is text, not c's type)."""
    select = expr
    while isinstance(select, exp.SetOperation):
        select = select.this
    if not isinstance(select, exp.Select):
        return []
    out: list[PgType | None] = []
    for p in select.expressions:
        inner = p.this if isinstance(p, exp.Alias) else p
        out.append(pg_type_of_datatype(inner.to) if isinstance(inner, exp.Cast) else None)
    return out


def _param_slots(expr: exp.Expression, types: list[PgType]) -> tuple[exp.Expression, frozenset[int]]:
    """$n becomes `CAST(:weir_pN AS type)` (typed, so integer division and result types
    come out as with the value written in); in LIMIT/OFFSET a bare `:weir_pN`."""
    if not any(True for _ in expr.find_all(exp.Parameter, exp.Placeholder)):
        return expr, frozenset()
    bare: set[int] = set()

    def visit(node: exp.Expression) -> exp.Expression:
        if isinstance(node, (exp.Limit, exp.Offset)) and isinstance(
                node.expression, (exp.Parameter, exp.Placeholder)):
            n = param_number(node.expression)
            bare.add(n)
            out = node.copy()
            out.set("expression", exp.Placeholder(this=f"weir_p{n}"))
            return out
        if isinstance(node, (exp.Parameter, exp.Placeholder)) and not str(node.name).startswith("weir_"):
            n = param_number(node)
            if n < 1 or n > len(types):
                raise WeirError(SqlState.UNDEFINED_PARAMETER, f"there is no parameter ${n}")
            interval = types[n - 1].oid == INTERVAL.oid  # typed as weir.sql.interval_ops knows it
            slot = exp.Cast(this=exp.Placeholder(this=f"weir_p{n}"),
                            to=exp.DataType.build("INTERVAL" if interval else types[n - 1].spark_ddl, dialect="spark"))
            if types[n - 1].name in ("jsonb", "json"):  # a STRING to Spark, jsonb to weir.sql.infer
                slot.meta["weir_type"] = types[n - 1].name
            return slot
        return node

    return expr.transform(visit), frozenset(bare)


def _spark_plan(expr: exp.Expression, types: list[PgType], resolver: Resolver, *,
                qualify: bool = False) -> SparkPlan:
    slotted, bare = _param_slots(expr, types)
    resolved: Resolved = resolve(slotted, resolver, qualify=qualify)
    jsonb_columns = jsonb_result_types(resolved.expr)
    names = name_outputs(resolved.expr)
    body, calls = mark_session_functions(resolved.expr)
    template = SparkTemplate(to_spark(body), types, calls, bare)
    qualified = unfold_typed_literals(resolved.qualified) if resolved.qualified is not None else None
    return SparkPlan(resolved.inputs, resolved.depends_on, names, template, qualified, jsonb_columns,
                     resolved.unions)


def _with_jsonb(hints: list[PgType | None], jsonb: list[PgType | None]) -> list[PgType | None]:
    """Cast hints, and jsonb where a column computes one (Spark returns it as a STRING)."""
    if not any(jsonb):
        return hints
    if len(hints) == len(jsonb):
        return [h if h is not None else j for h, j in zip(hints, jsonb, strict=True)]
    # a star expanded: its columns' own hints, and the casts beside it (weir.sql.infer)
    return jsonb


def _refuse_record_columns(expr: exp.Expression) -> None:
    """A result column of an anonymous record type (`SELECT (1, 'a b')`): PostgreSQL sends
    it as type record, `(1,"a b")`; weir would send Spark's struct as JSON. Refused until
    weir has the record type on the wire (its text is `::text`)."""
    found = infer.result_types(expr) if isinstance(expr, (exp.Select, exp.SetOperation)) else None
    if found and any(t is not None and t.oid == RECORD_OID for t in found):
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "a result column of type record is not supported",
                        hint="Cast it to text: (...)::text prints it as PostgreSQL does.")


def plan_query(expr: exp.Expression, param_types: list[PgType], resolver: Resolver, *,
               cluster_id: str, indexes_on: Callable[[str], list[Any]],
               qualify: bool = False, spark: bool = False) -> QueryPlan:
    """Plan a SELECT (or VALUES, set operation ...) once. `indexes_on(relation id)`:
    the indexes on the session's cluster; `qualify`: also keep the query with every
    relation name fully qualified (for view definitions); `spark`: render it for Spark
    even when the coordinator can answer it (EXPLAIN)."""
    # The coordinator evaluates the query as written: it reads typed literals the
    # PostgreSQL way ('1-2 3:4 5 day'::interval has months, which Spark's folded
    # literal cannot hold); Spark and the fast path get them folded.
    expr = featureless.prune(expr)
    # catalog functions as SQL over pg_catalog (a column's type tells a name from an oid)
    expr = catalog_functions.rewrite(expr, column_type_fn(expr, resolver))
    _refuse_record_columns(expr)
    plan = QueryPlan(expr, list(param_types), cluster_id, cast_hints(expr))
    if constant.is_constant(expr):
        if param_types or uses_session(expr):
            plan.constant = True  # evaluated with each execution's values
        else:
            try:
                plan.constant_result = constant.evaluate(expr, None)
                plan.constant = True
            except constant.NotConstant:
                pass
            except WeirError:
                plan.constant = True  # fails again, with its error, when it runs
    if plan.constant_result is not None and not (qualify or spark):
        return plan
    try:
        folded = fold_typed_literals(expr)
    except WeirError:
        if plan.constant and not (param_types or uses_session(expr) or qualify or spark):
            return plan  # its evaluation failed: it fails again, with that error, when it runs
        raise
    try:
        plan.spark = _spark_plan(folded, plan.param_types, resolver, qualify=qualify)
    except WeirError:
        if plan.constant and not (param_types or uses_session(expr) or qualify or spark):
            return plan  # a constant that fails (SELECT 1 / 0) fails when it runs, as it did
        raise
    plan.cast_hints = _with_jsonb(plan.cast_hints, plan.spark.jsonb_columns)
    plan.fast_path = fast_path.plan(folded, resolver, indexes_on)
    for desc in plan.spark.depends_on.values():
        if desc.view_sql is not None:
            found = indexes_on(desc.id)
            if found:
                plan.view_indexes[desc.id] = found
    return plan
