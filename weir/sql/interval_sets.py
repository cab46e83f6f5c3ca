"""UNION, INTERSECT and EXCEPT (without ALL) of rows with intervals, by span: Spark would
remove duplicates comparing weir's interval struct field by field, PostgreSQL compares
`'1 mon'` and `'30 days'` equal. Each such set operation becomes its ALL form grouped by
its columns, an interval column by its span (weir.sql.interval_sql.span), showing one of
the group's values (of the left input's, for INTERSECT and EXCEPT, as PostgreSQL's
HashSetOp keeps the left one)."""

from __future__ import annotations

from sqlglot import exp

from weir.sql import infer
from weir.sql import interval_sql as iv
from weir.sql.infer import Types

_SIDE = "_weir_side"
_MODIFIERS = ("with_", "order", "limit", "offset")


def _leftmost(node: exp.Expression) -> exp.Expression:
    while isinstance(node, (exp.SetOperation, exp.Subquery)):
        node = node.this
    return node


def _interval_positions(node: exp.SetOperation, types: Types) -> tuple[int, list[bool]] | None:
    """(number of columns, which are intervals) of a set operation without ALL whose rows
    have an interval; None for the others."""
    if node.args.get("distinct") is False:
        return None
    first = _leftmost(node)
    if not isinstance(first, exp.Select):
        return None
    kinds = [infer.is_interval(types.of(e)) for e in first.expressions]
    return (len(kinds), kinds) if any(kinds) else None


def by_span(tree: exp.Expression, types: Types) -> exp.Expression:
    """Every set operation of intervals rewritten, the deepest first; the (new) tree."""
    found = [(n, p) for n in tree.find_all(exp.SetOperation) if (p := _interval_positions(n, types))]
    for node, (width, kinds) in reversed(found):
        names = [e.alias_or_name or f"_weir_c{i}" for i, e in enumerate(_leftmost(node).expressions)]
        new = _grouped(node, width, kinds, names)
        if node is tree:
            tree = new
        else:
            node.replace(new)
    return tree


def _columns(width: int) -> list[exp.Identifier]:
    return [exp.to_identifier(f"_weir_c{i}") for i in range(width)]


def _side(query: exp.Expression, width: int, side: int, alias: str) -> exp.Select:
    """SELECT its columns and which input they came from."""
    source = exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier(alias), columns=_columns(width)))
    return exp.Select(expressions=[*(exp.column(c.name) for c in _columns(width)),
                                   exp.alias_(exp.Literal.number(side), _SIDE)]).from_(source, copy=False)


def _grouped(node: exp.SetOperation, width: int, kinds: list[bool], names: list[str]) -> exp.Select:
    left, right = node.this, node.expression
    union = isinstance(node, exp.Union)
    if union:
        rows: exp.Expression = exp.Union(this=left, expression=right, distinct=False)
    else:
        rows = exp.Union(this=_side(left, width, 0, "_weir_l"), expression=_side(right, width, 1, "_weir_r"),
                         distinct=False)
    source = exp.Subquery(this=rows, alias=exp.TableAlias(this=exp.to_identifier("_weir_set"),
                                                          columns=_columns(width) + ([] if union else
                                                                                     [exp.to_identifier(_SIDE)])))
    items, keys = [], []
    for c, interval, name in zip(_columns(width), kinds, names, strict=True):
        col = exp.column(c.name)
        if interval:
            value = (exp.Anonymous(this="first", expressions=[col]) if union
                     else exp.Anonymous(this="min_by", expressions=[col, exp.column(_SIDE)]))
            keys.append(iv.span(col.copy()))
        else:
            value = col
            keys.append(col.copy())
        items.append(exp.alias_(value, name, quoted=True))
    select = exp.Select(expressions=items).from_(source, copy=False).group_by(*keys, copy=False)
    if not union:
        side = exp.column(_SIDE)
        having = (exp.condition(f"min({_SIDE}) = 0 AND max({_SIDE}) = 1") if isinstance(node, exp.Intersect)
                  else exp.EQ(this=exp.Max(this=side), expression=exp.Literal.number(0)))
        select.set("having", exp.Having(this=having))
    for key in _MODIFIERS:
        if node.args.get(key) is not None:
            select.set(key, node.args[key])
    return select
