"""Fast-path peeks: a SELECT that reads one indexed relation with equality on the
index key, a filter, a projection, ORDER BY and/or LIMIT is answered from the
index's arrangement in replica memory, with no Spark job (as in Materialize).

`plan` decides and translates: the WHERE clause becomes the small expression
tree `weir.compute.replica.arrangement.compile_filter` evaluates; key equalities become
lookups. Whatever it cannot translate exactly leaves the query on the slow path.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from weir.adapter import api, indexes
from weir.catalog.model import Item
from weir.errors import WeirError
from weir.sql.resolve import RelationDesc, table_parts

if TYPE_CHECKING:
    from weir.adapter.session import Session

MAX_LOOKUPS = 1024


class _NotFast(Exception):
    pass


@dataclass
class FastPathPlan:
    index: Item
    on: RelationDesc
    body: dict[str, Any]  # the Peek's fast-path fields (lookup, filter, project, ...)
    columns: list[api.Column]


def _int_literal(node: exp.Expression | None) -> int | None:
    if node is None:
        return None
    if isinstance(node, (exp.Limit, exp.Offset)):
        node = node.expression
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return int(node.this)
    raise _NotFast


class _Columns:
    def __init__(self, desc: RelationDesc, alias: str) -> None:
        self.desc = desc
        self.alias = alias

    def position(self, col: exp.Expression) -> int:
        if not isinstance(col, exp.Column) or (col.table and col.table != self.alias) or col.args.get("db"):
            raise _NotFast
        ident = col.this
        if not isinstance(ident, exp.Identifier):
            raise _NotFast
        name = ident.name if ident.quoted else ident.name.lower()
        for i, c in enumerate(self.desc.columns):
            if c.name == name:
                return i
        raise _NotFast  # the slow path reports the unknown column


def _literal(node: exp.Expression) -> dict[str, Any]:
    if isinstance(node, exp.Paren):
        return _literal(node.this)
    if isinstance(node, exp.Null):
        return {"lit": None}
    if isinstance(node, exp.Boolean):
        return {"lit": bool(node.this)}
    if isinstance(node, exp.Literal):
        if node.is_string:
            return {"lit": node.this}
        text = node.this
        return {"lit": int(text) if text.lstrip("-").isdigit() else text, "number": True}
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
        return {"lit": node.this.this}  # typed by the column it meets (the replica casts)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        inner = _literal(node.this)
        value = inner["lit"]
        return {"lit": -value if isinstance(value, int) else "-" + value, "number": True}
    raise _NotFast


_COMPARE = {exp.EQ: "eq", exp.NEQ: "ne", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge"}


def _operand(node: exp.Expression, cols: _Columns) -> dict[str, Any]:
    if isinstance(node, exp.Column):
        return {"col": cols.position(node)}
    return _literal(node)


def _filter(node: exp.Expression, cols: _Columns) -> dict[str, Any]:
    if isinstance(node, exp.Paren):
        return _filter(node.this, cols)
    for cls, op in _COMPARE.items():
        if type(node) is cls:
            a, b = _operand(node.this, cols), _operand(node.expression, cols)
            if "col" not in a and "col" not in b:
                raise _NotFast
            return {"op": op, "args": [a, b]}
    if isinstance(node, (exp.And, exp.Or)):
        return {"op": "and" if isinstance(node, exp.And) else "or",
                "args": [_filter(node.this, cols), _filter(node.expression, cols)]}
    if isinstance(node, exp.Not):
        inner = node.this
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
            return {"op": "is_not_null", "args": [{"col": cols.position(inner.this)}]}
        return {"op": "not", "args": [_filter(inner, cols)]}
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        return {"op": "is_null", "args": [{"col": cols.position(node.this)}]}
    if isinstance(node, exp.In) and not node.args.get("query") and node.expressions:
        col = {"col": cols.position(node.this)}
        parts = [{"op": "eq", "args": [col, _literal(v)]} for v in node.expressions]
        out = parts[0]
        for p in parts[1:]:
            out = {"op": "or", "args": [out, p]}
        return out
    if isinstance(node, exp.Between):
        col = {"col": cols.position(node.this)}
        return {"op": "and", "args": [{"op": "ge", "args": [col, _literal(node.args["low"])]},
                                      {"op": "le", "args": [col, _literal(node.args["high"])]}]}
    if isinstance(node, exp.Like) and isinstance(node.expression, exp.Literal) and node.expression.is_string:
        return {"op": "like", "args": [{"col": cols.position(node.this)}], "pattern": node.expression.this}
    if isinstance(node, exp.Column):
        pos = cols.position(node)
        if cols.desc.columns[pos].type.name != "boolean":
            raise _NotFast
        return {"col": pos}
    raise _NotFast


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def _equalities(where: exp.Expression | None, cols: _Columns) -> dict[int, list[Any]]:
    """column position -> the literal values a top-level conjunct pins it to."""
    out: dict[int, list[Any]] = {}
    for c in _conjuncts(where):
        try:
            if isinstance(c, exp.EQ):
                a, b = c.this, c.expression
                if not isinstance(a, exp.Column):
                    a, b = b, a
                values = [_literal(b)]
                pos = cols.position(a)
            elif isinstance(c, exp.In) and not c.args.get("query") and c.expressions:
                pos = cols.position(c.this)
                values = [_literal(v) for v in c.expressions]
            else:
                continue
        except _NotFast:
            continue
        if any(v["lit"] is None or (v.get("number") and isinstance(v["lit"], str)) for v in values):
            continue  # NULLs, non-integral numbers: leave them to the filter
        if any(v.get("number") for v in values) and not cols.desc.columns[pos].type.is_numeric:
            raise _NotFast  # text = 42 is an error in PostgreSQL: let the slow path say so
        out.setdefault(pos, [v["lit"] for v in values])
    return out


def _projection(select: exp.Select, cols: _Columns) -> tuple[list[int], list[str]]:
    project: list[int] = []
    names: list[str] = []
    for p in select.expressions:
        if isinstance(p, exp.Star):
            project += range(len(cols.desc.columns))
            names += [c.name for c in cols.desc.columns]
            continue
        alias = None
        if isinstance(p, exp.Alias):
            alias, p = p.alias, p.this
        pos = cols.position(p)
        project.append(pos)
        names.append(alias or cols.desc.columns[pos].name)
    return project, names


def plan(session: Session, expr: exp.Expression) -> FastPathPlan | None:
    """The fast-path plan of a (bound) query, or None if it must run on Spark."""
    if not isinstance(expr, exp.Select):
        return None
    froms = expr.args.get("from_") or expr.args.get("from")
    if froms is None or not isinstance(froms.this, exp.Table) or not isinstance(froms.this.this, exp.Identifier):
        return None
    if any(expr.args.get(k) for k in ("joins", "group", "having", "distinct", "with", "windows", "qualify",
                                      "laterals", "locks", "into")):
        return None
    if any(isinstance(n, (exp.AggFunc, exp.Window, exp.Subquery, exp.Select)) and n is not expr
           for n in expr.walk()):
        return None
    table = froms.this
    coord = session.coord
    try:
        desc = coord.resolver(session).lookup(table_parts(table))
    except WeirError:
        return None
    cluster = coord.current_cluster(session)
    candidates = indexes.on_cluster(coord, desc.id, cluster.id)
    if not candidates:
        return None
    cols = _Columns(desc, table.alias_or_name if table.alias else table.name)
    try:
        project, names = _projection(expr, cols)
        where = expr.args.get("where")
        flt = _filter(where.this, cols) if where is not None else None
        order = []
        if expr.args.get("order"):
            for o in expr.args["order"].expressions:
                order.append([cols.position(o.this), bool(o.args.get("desc")), bool(o.args.get("nulls_first"))])
        limit, offset = _int_literal(expr.args.get("limit")), _int_literal(expr.args.get("offset"))
        pinned = _equalities(where.this if where is not None else None, cols)
    except _NotFast:
        return None
    index, lookup = candidates[0], None
    for cand in candidates:
        kp = cand.definition.get("key_positions") or []
        if kp and all(p in pinned for p in kp):
            combos = list(product(*(pinned[p] for p in kp)))
            if len(combos) <= MAX_LOOKUPS:
                index, lookup = cand, [list(c) for c in combos]
                break
    body = {"lookup": lookup, "filter": flt, "project": project, "names": names, "order": order,
            "limit": limit, "offset": offset}
    columns = [api.Column(n, desc.columns[p].type) for n, p in zip(names, project, strict=True)]
    return FastPathPlan(index, desc, body, columns)
