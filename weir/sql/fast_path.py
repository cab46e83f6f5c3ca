"""Fast-path peeks: a SELECT that reads one indexed relation with equality on the
index key, a filter, a projection, ORDER BY and/or LIMIT is answered from the
index's arrangement in replica memory, with no Spark job (as in Materialize).

`plan` decides and translates once per statement: the WHERE clause becomes the
small expression tree `weir.compute.replica.arrangement.compile_filter` evaluates,
with parameters left as `{"param": n}`; `bind` fills in an execution's parameter
values and turns key equalities into lookups. Whatever it cannot translate exactly
leaves the query on the slow path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import product
from typing import Any

from sqlglot import exp

from weir.errors import WeirError
from weir.sql.render import limit_value, literal, param_number
from weir.sql.resolve import RelationDesc, Resolver, table_parts
from weir.types import PgType

MAX_LOOKUPS = 1024


class _NotFast(Exception):
    pass


@dataclass
class FastPathPlan:
    """A query answerable from an index on `on`; `indexes` are the candidates on the
    session's cluster (catalog items: id, name, full_name, cluster_id, definition)."""

    indexes: list[Any]
    on: RelationDesc
    body: dict[str, Any]  # the Peek's fast-path fields (filter, project, ...), parameters as slots
    columns: list[tuple[str, PgType]]
    equalities: list[tuple[int, list[dict[str, Any]]]]  # column position -> operands it is pinned to


@dataclass
class BoundFastPath:
    """A fast-path plan with one execution's parameter values: what the Peek sends."""

    index: Any
    on: RelationDesc
    body: dict[str, Any]
    columns: list[tuple[str, PgType]]


def _int_literal(node: exp.Expression | None) -> int | dict[str, Any] | None:
    if node is None:
        return None
    if isinstance(node, (exp.Limit, exp.Offset)):
        node = node.expression
    if isinstance(node, (exp.Parameter, exp.Placeholder)):
        return {"param": param_number(node)}
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
    if isinstance(node, (exp.Parameter, exp.Placeholder)):
        return {"param": param_number(node)}
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
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null) and not inner.args.get("negate"):
            return {"op": "is_not_null", "args": [{"col": cols.position(inner.this)}]}
        return {"op": "not", "args": [_filter(inner, cols)]}
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        # sqlglot spells `x IS NOT NULL` as Is(x, NULL, negate=True) (older: Not(Is(...)))
        op = "is_not_null" if node.args.get("negate") else "is_null"
        return {"op": op, "args": [{"col": cols.position(node.this)}]}
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
        if node.args.get("escape") is not None:
            raise _NotFast
        like = {"op": "like", "args": [{"col": cols.position(node.this)}], "pattern": node.expression.this}
        return {"op": "not", "args": [like]} if node.args.get("negate") else like  # x NOT LIKE p
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


def _equalities(where: exp.Expression | None, cols: _Columns) -> list[tuple[int, list[dict[str, Any]]]]:
    """The top-level conjuncts that pin a column to literal values (or parameters)."""
    out: list[tuple[int, list[dict[str, Any]]]] = []
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
        out.append((pos, values))
    return out


def _pinned(equalities: list[tuple[int, list[dict[str, Any]]]], desc: RelationDesc) -> dict[int, list[Any]]:
    """column position -> the values it is pinned to, for lookups (bound operands)."""
    out: dict[int, list[Any]] = {}
    for pos, values in equalities:
        if any(v["lit"] is None or (v.get("number") and isinstance(v["lit"], str)) for v in values):
            continue  # NULLs, non-integral numbers: leave them to the filter
        if any(v.get("number") for v in values) and not desc.columns[pos].type.is_numeric:
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


def plan(expr: exp.Expression, resolver: Resolver,
         indexes_on: Callable[[str], list[Any]]) -> FastPathPlan | None:
    """The fast-path plan of a query (parameters left as slots), or None if it must run
    on Spark. `indexes_on(relation id)`: the indexes on the session's cluster."""
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
    try:
        desc = resolver.lookup(table_parts(table))
    except WeirError:
        return None
    candidates = indexes_on(desc.id)
    if not candidates:
        return None
    cols = _Columns(desc, table.alias_or_name if table.alias else table.name)
    try:
        project, names = _projection(expr, cols)
        where = expr.args.get("where")
        if where is not None and any(desc.columns[cols.position(c)].type.name in ("jsonb", "json")
                                     for c in where.find_all(exp.Column)):
            return None  # jsonb compares as values ('1.0' = '1'), not as the text an arrangement holds
        keys = [c for part in (where, expr.args.get("order")) if part is not None for c in part.find_all(exp.Column)]
        if any(desc.columns[cols.position(c)].type.name == "interval" for c in keys):
            return None  # intervals compare and sort by span ('1 mon' = '30 days'), not as they are held
        flt = _filter(where.this, cols) if where is not None else None
        order = []
        if expr.args.get("order"):
            for o in expr.args["order"].expressions:
                order.append([cols.position(o.this), bool(o.args.get("desc")), bool(o.args.get("nulls_first"))])
        limit, offset = _int_literal(expr.args.get("limit")), _int_literal(expr.args.get("offset"))
        equalities = _equalities(where.this if where is not None else None, cols)
    except _NotFast:
        return None
    body = {"filter": flt, "project": project, "names": names, "order": order,
            "limit": limit, "offset": offset}
    columns = [(n, desc.columns[p].type) for n, p in zip(names, project, strict=True)]
    return FastPathPlan(candidates, desc, body, columns, equalities)


def _bind_operands(node: Any, values: list[Any], types: list[PgType]) -> Any:
    """Replace `{"param": n}` operands by the literal an execution's value binds to
    (the same operand a query with that literal written in would have)."""
    if isinstance(node, dict):
        if "param" in node and len(node) == 1:
            n = node["param"]
            return _literal(literal(values[n - 1], types[n - 1]))
        return {k: _bind_operands(v, values, types) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return type(node)(_bind_operands(v, values, types) for v in node)
    return node


def bind(plan: FastPathPlan, values: list[Any], types: list[PgType]) -> BoundFastPath | None:
    """The Peek for one execution, or None if these values leave it to the slow path."""
    body = dict(plan.body)
    for key in ("limit", "offset"):
        v = body[key]
        if isinstance(v, dict):
            body[key] = limit_value(values[v["param"] - 1], key == "limit")
    try:
        if values:
            body["filter"] = _bind_operands(body["filter"], values, types)
            equalities = _bind_operands(plan.equalities, values, types)
        else:
            equalities = plan.equalities
        pinned = _pinned(equalities, plan.on)
    except _NotFast:
        return None
    index, lookup = plan.indexes[0], None
    for cand in plan.indexes:
        kp = cand.definition.get("key_positions") or []
        if kp and all(p in pinned for p in kp):
            combos = list(product(*(pinned[p] for p in kp)))
            if len(combos) <= MAX_LOOKUPS:
                index, lookup = cand, [list(c) for c in combos]
                break
    return BoundFastPath(index, plan.on, {"lookup": lookup, **body}, plan.columns)
