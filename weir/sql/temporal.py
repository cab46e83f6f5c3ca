"""Temporal filters: `mz_now()` compared with an expression of a row, as a condition of a
materialized view's WHERE (Materialize's temporal filters). A row belongs to the view
at exactly the times the comparisons hold: `WHERE mz_now() <= ts + INTERVAL '1 hour'`
keeps each row for an hour after `ts`, and it retracts by itself when that time passes.

A dataflow computes such a view at each time t with mz_now() = t (the Spark SQL carries
the parameter `:weir_mz_now`). Its result changes when an input changes and when a
comparison of some row flips, so the dataflow also runs the *thresholds query*: the
view's FROM and other WHERE conditions, selecting for each comparison the first time at
which it flips (`mz_now() <= e` flips at e + 1, `mz_now() < e` at e, `>=` at e, `>` at
e + 1, `=` at e and e + 1). Those times are exact, so reads at any timestamp see what
Materialize would show."""

from __future__ import annotations

from sqlglot import exp

from weir.compute.protocol import FLIP_COLUMN
from weir.errors import SqlState, WeirError

_COMPARISONS = (exp.LT, exp.LTE, exp.GT, exp.GTE, exp.EQ)
# `e op mz_now()` is `mz_now() op' e`
_MIRROR: dict[type, type] = {exp.LT: exp.GT, exp.LTE: exp.GTE, exp.GT: exp.LT, exp.GTE: exp.LTE, exp.EQ: exp.EQ}


def is_mz_now(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and node.name.lower() == "mz_now"


def uses_mz_now(expr: exp.Expression) -> bool:
    return any(is_mz_now(n) for n in expr.walk())


def _refuse(why: str) -> WeirError:
    return WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"mz_now() {why} is not supported in a materialized view",
                     hint="Materialized views take mz_now() in temporal filters: conditions of the "
                          "WHERE clause comparing mz_now() with an expression of the row, "
                          "such as WHERE mz_now() <= ts + INTERVAL '1 hour'.")


def thresholds_query(query: exp.Expression) -> exp.Query | None:
    """The thresholds query of a view's query (None: it has no mz_now()); raises 0A000
    when mz_now() appears other than in temporal filters of the query's WHERE."""
    if not uses_mz_now(query):
        return None
    if not isinstance(query, exp.Select):
        raise _refuse("in a query other than a single SELECT")
    where = query.args.get("where")
    conjuncts = _conjuncts(where.this) if where is not None else []
    temporal, rest = [], []
    for c in conjuncts:
        (temporal if uses_mz_now(c) else rest).append(c)
    flips: list[exp.Expression] = []
    for c in temporal:
        flips += _flip_times(c)
    outside = sum(1 for n in query.walk() if is_mz_now(n)) - len(temporal)
    if outside:
        raise _refuse("outside a temporal filter")
    out = exp.select(*[exp.alias_(exp.Cast(this=f, to=exp.DataType.build("mz_timestamp", udt=True)),
                                  FLIP_COLUMN) for f in flips[:1]])
    for k in ("from_", "from", "joins", "with", "with_"):
        if query.args.get(k) is not None:
            out.set(k, query.args[k].copy())
    if rest:
        out.set("where", exp.Where(this=exp.and_(*[c.copy() for c in rest])))
    union: exp.Query = out
    for f in flips[1:]:
        other = out.copy()
        other.set("expressions", [exp.alias_(exp.Cast(this=f, to=exp.DataType.build("mz_timestamp", udt=True)),
                                             FLIP_COLUMN)])
        union = exp.union(union, other, distinct=True)
    if len(flips) == 1:
        out.set("distinct", exp.Distinct())
    return union


def _conjuncts(e: exp.Expression) -> list[exp.Expression]:
    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, exp.And):
        return _conjuncts(e.this) + _conjuncts(e.expression)
    return [e]


def _flip_times(c: exp.Expression) -> list[exp.Expression]:
    """The times at which one temporal comparison changes, as expressions of the row."""
    if not isinstance(c, _COMPARISONS):
        raise _refuse("in a condition other than a comparison")
    left, right, op = c.this, c.expression, type(c)
    if is_mz_now(right) and not is_mz_now(left):
        left, right, op = right, left, _MIRROR[op]
    if not is_mz_now(left) or uses_mz_now(right):
        raise _refuse("in this comparison")
    if any(isinstance(n, (exp.AggFunc, exp.Window, exp.Subquery, exp.Select)) for n in right.walk()):
        raise _refuse("compared with a subquery, an aggregate or a window function")
    e = exp.Paren(this=right.copy())
    plus_one = exp.Add(this=exp.Cast(this=e.copy(), to=exp.DataType.build("mz_timestamp", udt=True)),
                       expression=exp.Literal.number(1))
    if op in (exp.LTE, exp.GT):
        return [plus_one]
    if op is exp.EQ:
        return [e, plus_one]
    return [e]
