"""The "linear" dataflow strategy's query rewrite.

A query made only of filters, projections, maps (scalar expressions, including
generators such as `explode`) and UNION ALL is *linear*: applied to a
collection's updates it gives the updates of its result. So instead of
recomputing the whole query each tick, a linear dataflow binds every input view
to the input's *updates* of the interval, with two hidden columns
(`__weir_t` = mz_timestamp, `__weir_d` = mz_diff), and runs a rewrite of the
query that carries both through: each SELECT gets `__weir_t, __weir_d`
appended to its projections (stars over an input are expanded to the input's
own columns, so the hidden ones are not listed twice).

The rewrite is built here from the Spark SQL the caller sends (parsed with
sqlglot's Spark dialect); the caller needs no placeholder. Anything outside
the linear fragment (joins, aggregates, DISTINCT, windows, LIMIT, subqueries
in expressions, CTEs, FROM-less SELECTs, set operations other than UNION ALL)
raises `NotLinear`, and the dataflow falls back to recomputing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

TIME = "__weir_t"
DIFF = "__weir_d"
HIDDEN = (TIME, DIFF)

# The only arguments a SELECT of the linear fragment may have (ORDER BY is dropped).
_SELECT_ARGS = frozenset({"expressions", "from_", "where", "order", "hint", "kind",
                          "operation_modifiers"})
_NOT_SCALAR = (exp.AggFunc, exp.Window, exp.Select, exp.Subquery, exp.Exists,
               exp.SetOperation)

Names = list[str | None]  # output column names of a rewritten query (None: unknown)


class NotLinear(Exception):  # noqa: N818 - a reason, not a failure
    """The query is not (recognisably) linear."""


def linear_rewrite(sql: str, inputs: Mapping[str, Sequence[str]]) -> str:
    """The query over update views, with `__weir_t, __weir_d` as its last two columns.

    `inputs` maps each input view name (case-insensitive) to its data columns.
    """
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except SqlglotError as e:
        raise NotLinear(f"cannot parse: {e}") from None
    views = {k.lower(): list(v) for k, v in inputs.items()}
    out, _ = _query(tree, views)
    return out.sql(dialect="spark")


def _query(node: exp.Expression, views: dict[str, list[str]]) -> tuple[exp.Expression, Names]:
    if isinstance(node, exp.Union):
        return _union(node, views)
    if isinstance(node, exp.Subquery):
        _no_modifiers(node, "a parenthesized query")
        inner, names = _query(node.this, views)
        node.set("this", inner)
        return node, names
    if isinstance(node, exp.Select):
        return _select(node, views)
    raise NotLinear(f"{node.key} is not linear")


def _no_modifiers(node: exp.Expression, what: str) -> None:
    for key in ("limit", "offset", "with", "with_"):
        if node.args.get(key):
            raise NotLinear(f"{key} on {what}")
    node.set("order", None)


def _union(node: exp.Union, views: dict[str, list[str]]) -> tuple[exp.Expression, Names]:
    if node.args.get("distinct") or node.args.get("by_name") or node.args.get("side") \
            or node.args.get("kind") or node.args.get("on"):
        raise NotLinear("only UNION ALL is linear")
    _no_modifiers(node, "UNION ALL")
    left, names = _query(node.this, views)
    right, _ = _query(node.expression, views)
    node.set("this", left)
    node.set("expression", right)
    return node, names


def _select(node: exp.Select, views: dict[str, list[str]]) -> tuple[exp.Expression, Names]:
    for key, value in node.args.items():
        if key not in _SELECT_ARGS and value not in (None, [], False):
            raise NotLinear(f"SELECT with {key} is not linear")
    if node.args.get("kind"):
        raise NotLinear("SELECT AS ... is not linear")
    node.set("order", None)
    source_names = _source(node, views)
    scalar_parts = list(node.expressions) + ([node.args["where"]] if node.args.get("where") else [])
    for part in scalar_parts:
        for sub in part.walk():
            if isinstance(sub, _NOT_SCALAR):
                raise NotLinear(f"{sub.key} in a projection or filter is not linear")
            if isinstance(sub, exp.Column) and sub.name in HIDDEN:
                raise NotLinear(f"the query names the reserved column {sub.name}")
    projections: list[exp.Expression] = []
    names: Names = []
    for p in node.expressions:
        star_table = _star_table(p)
        if star_table is not None:
            if any(n is None for n in source_names):
                raise NotLinear("* over a derived table with unnamed columns")
            for n in source_names:
                assert n is not None
                col = exp.column(exp.to_identifier(n, quoted=True),
                                 table=exp.to_identifier(star_table) if star_table else None)
                projections.append(col)
                names.append(n)
            continue
        projections.append(p)
        names.append(p.alias_or_name or None if isinstance(p, (exp.Alias, exp.Column)) else None)
    projections += [exp.column(exp.to_identifier(h, quoted=True)) for h in HIDDEN]
    node.set("expressions", projections)
    return node, names


def _star_table(p: exp.Expression) -> str | None:
    """'' for `*`, the qualifier for `t.*`, None for any other projection."""
    if isinstance(p, exp.Star):
        return ""
    if isinstance(p, exp.Column) and isinstance(p.this, exp.Star):
        return p.table or ""
    return None


def _source(node: exp.Select, views: dict[str, list[str]]) -> Names:
    """Rewrite the single FROM item; its output names."""
    from_ = node.args.get("from_")
    if from_ is None:
        raise NotLinear("a SELECT without FROM is constant, not linear")
    src = from_.this
    if isinstance(src, exp.Table):
        if src.args.get("db") or src.args.get("catalog") or src.args.get("joins"):
            raise NotLinear("qualified table names are not dataflow inputs")
        if src.args.get("laterals") or src.args.get("pivots"):
            raise NotLinear("lateral views and pivots are not supported")
        name = src.name.lower()
        if name not in views:
            raise NotLinear(f"{src.name} is not an input of the dataflow")
        return list(views[name])
    if isinstance(src, exp.Subquery):
        if src.args.get("pivots") or src.args.get("laterals"):
            raise NotLinear("lateral views and pivots are not supported")
        _no_modifiers(src, "a derived table")
        inner, names = _query(src.this, views)
        src.set("this", inner)
        return names
    raise NotLinear(f"FROM {src.key} is not linear")
