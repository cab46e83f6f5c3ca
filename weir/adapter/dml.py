"""INSERT / UPDATE / DELETE on tables: compute the updates (row, diff) and hand them to
the storage controller's group commit at the oracle's write timestamp."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import sqlglot
from sqlglot import exp

from weir import codec
from weir.adapter import api, planning, query
from weir.adapter.privileges import require
from weir.codec import interval_value as cinterval_value
from weir.codec import numeric as cnum
from weir.errors import SqlState, WeirError
from weir.sql import statements as st
from weir.sql.render import bind_params
from weir.sql.resolve import ColumnDesc, RelationDesc, table_parts
from weir.types import JSONB, PgType

if TYPE_CHECKING:
    from weir.adapter.session import Session


def target_columns(session: Session, expr: exp.Insert) -> tuple[RelationDesc, list[ColumnDesc]]:
    """The table an INSERT writes and the columns its values fill, in order."""
    target = expr.this
    names: list[str] | None = None
    if isinstance(target, exp.Schema):
        names = [c.name.lower() if not c.args.get("quoted") else c.name for c in target.expressions]
        target = target.this
    desc = _table(session, target, "a")
    by_name = {c.name: c for c in desc.columns}
    if names is None:
        return desc, list(desc.columns)
    cols = []
    for n in names:
        if n not in by_name:
            raise WeirError(SqlState.UNDEFINED_COLUMN,
                            f'column "{n}" of relation "{desc.name}" does not exist')
        cols.append(by_name[n])
    return desc, cols


def _table(session: Session, target: exp.Expression, privileges: str) -> RelationDesc:
    """The table a write targets, once the session may write it (`privileges`: ACL letters)."""
    if not isinstance(target, exp.Table):
        raise WeirError(SqlState.SYNTAX_ERROR, "expected a table name")
    desc = session.coord.resolver(session).lookup(table_parts(target))
    if desc.kind != "table" or desc.id.startswith("s"):
        raise WeirError(SqlState.WRONG_OBJECT_TYPE,
                        f"cannot insert into {desc.kind} '{desc.name}'" if desc.kind != "table"
                        else f"cannot modify system table '{desc.name}'")
    item = session.coord.catalog.get_item(desc.id)
    require(session, "schema", item.schema_id, "U")
    require(session, "item", desc.id, privileges)
    return desc


def _coerce_row(desc: RelationDesc, cols: list[ColumnDesc], values: tuple[Any, ...]) -> list[Any]:
    out = []
    for c, v in zip(cols, values, strict=True):
        if v is None:
            if not c.nullable:
                raise WeirError(SqlState.NOT_NULL_VIOLATION,
                                f'null value in column "{c.name}" violates not-null constraint',
                                detail=f"Failing row contains ({', '.join(_show(x) for x in values)}).")
            out.append(None)
        else:
            out.append(_one_dimension(codec.coerce(v, c.type), c.type))
    return out


def _one_dimension(v: Any, t: PgType) -> Any:
    """A table's array column is a one-dimensional Spark array (int[][] is int[] in
    PostgreSQL, weir.adapter.ddl): a multidimensional value is refused, never stored otherwise."""
    if t.is_array and t.element is not None and t.element.oid not in (114, JSONB.oid) \
            and isinstance(v, list) and any(isinstance(x, list | tuple) for x in v):
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        "multidimensional arrays in a table's array column are not supported",
                        hint="weir stores one-dimensional arrays in tables; a view or a materialized "
                             "view may compute multidimensional ones.")
    return v


def _show(v: Any) -> str:
    return "null" if v is None else str(v)


def _updates(desc: RelationDesc, rows: list[list[Any]], diff: int) -> pa.Table:
    arrays = {}
    for i, c in enumerate(desc.columns):
        values = [r[i] for r in rows]
        if pa.types.is_decimal(c.type.arrow) and c.type.precision is None:
            arrow = c.type.arrow
            values = [v if v is None else cnum.numeric_stored(
                v if isinstance(v, Decimal) else cnum.numeric_from_number(v), arrow.precision, arrow.scale)
                for v in values]
        elif pa.types.is_decimal(c.type.arrow):  # numeric(p,s) keeps NaN in PostgreSQL; weir cannot
            values = [cnum.numeric_stored(v) if isinstance(v, Decimal) and not v.is_finite() else v
                      for v in values]
        arrays[c.name] = pa.array(cinterval_value.for_arrow(values, c.type), type=c.type.arrow)
    arrays["mz_diff"] = pa.array([diff] * len(rows), pa.int64())
    return pa.table(arrays)


def _full_rows(desc: RelationDesc, cols: list[ColumnDesc], rows: list[list[Any]]) -> list[list[Any]]:
    """Expand rows over a column subset to full rows, filling defaults (NULL if none)."""
    if cols == list(desc.columns):
        return rows
    idx = {c.name: i for i, c in enumerate(cols)}
    defaults = {c.name: _default(c) for c in desc.columns if c.name not in idx}
    out = []
    for r in rows:
        full = []
        for c in desc.columns:
            if c.name in idx:
                full.append(r[idx[c.name]])
            else:
                v = defaults[c.name]
                if v is None and not c.nullable:
                    raise WeirError(SqlState.NOT_NULL_VIOLATION,
                                    f'null value in column "{c.name}" violates not-null constraint')
                full.append(v)
        out.append(full)
    return out


def _default(c: ColumnDesc) -> Any:
    if c.default is None:
        return None
    from weir.sql import constant

    try:
        _, _, rows = constant.evaluate(sqlglot.parse_one(f"SELECT {c.default}", read="postgres"))
        return codec.coerce(rows[0][0], c.type) if rows[0][0] is not None else None
    except constant.NotConstant:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        f'default expression for column "{c.name}" is not a constant') from None


# Clauses weir's writes understand; any other clause sqlglot parsed (ON CONFLICT, RETURNING,
# UPDATE ... FROM, WITH, ...) is refused by name rather than ignored.
_UNDERSTOOD = {exp.Insert: {"this", "expression"}, exp.Update: {"this", "expressions", "where"},
               exp.Delete: {"this", "where", "using"}}
_CLAUSES = {"conflict": "ON CONFLICT", "returning": "RETURNING", "from_": "FROM", "with_": "WITH",
            "using": "USING", "limit": "LIMIT", "order": "ORDER BY", "overwrite": "OVERWRITE",
            "alternative": "OR", "where": "WHERE"}


def refuse_unknown_clauses(expr: exp.Expression) -> None:
    """0A000 for a clause of INSERT/UPDATE/DELETE that weir would otherwise drop silently."""
    verb = type(expr).__name__.upper()
    for key, value in expr.args.items():
        if value and key not in _UNDERSTOOD.get(type(expr), set()):
            clause = _CLAUSES.get(key, key.rstrip("_").upper())
            where = f"WITH ... {verb}" if key == "with_" else f"{verb} ... {clause}"
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"{where} is not supported")


async def execute(session: Session, stmt: st.Statement, params: list[Any], types: list[PgType]) -> api.Command:
    refuse_unknown_clauses(stmt.expr)
    if isinstance(stmt, st.Insert):
        expr = bind_params(stmt.expr, params, types)
        return await _insert(session, expr)
    if isinstance(stmt, st.Update):
        return await _update(session, bind_params(stmt.expr, params, types))
    if isinstance(stmt, st.Delete):
        return await _delete(session, bind_params(stmt.expr, params, types))
    raise WeirError(SqlState.INTERNAL_ERROR, "not a write")


async def _insert(session: Session, expr: exp.Expression) -> api.Command:
    assert isinstance(expr, exp.Insert)
    desc, cols = target_columns(session, expr)
    source = expr.expression
    literal_rows = _literal_values(source)
    if literal_rows is None:
        if isinstance(source, exp.Values):
            source = _values_as_select(source)
        rows_result = await planning.run(session, source, for_write=True)
        literal_rows = [tuple(r) for r in await query.collect(rows_result)]
        if rows_result.columns and len(rows_result.columns) != len(cols):
            raise WeirError(SqlState.SYNTAX_ERROR,
                            "INSERT has more expressions than target columns"
                            if len(rows_result.columns) > len(cols)
                            else "INSERT has more target columns than expressions")
    rows = []
    for r in literal_rows:
        if len(r) > len(cols):
            raise WeirError(SqlState.SYNTAX_ERROR, "INSERT has more expressions than target columns")
        if len(r) < len(cols):
            r = tuple(r) + (None,) * (len(cols) - len(r))
        rows.append(_coerce_row(desc, cols, tuple(r)))
    full = _full_rows(desc, cols, rows)
    full = [_coerce_row(desc, list(desc.columns), tuple(r)) for r in full]
    if full:
        await session.coord.write(session, {desc.shard_id: _updates(desc, full, 1)})  # type: ignore[dict-item]
    return api.Command(f"INSERT 0 {len(full)}")


def _values_as_select(values: exp.Values) -> exp.Expression:
    """VALUES with expressions: evaluate as SELECT ... UNION ALL SELECT ... on a replica."""
    selects = [exp.select(*(row.expressions if isinstance(row, exp.Tuple) else [row]))
               for row in values.expressions]
    q: exp.Expression = selects[0]
    for s in selects[1:]:
        q = exp.union(q, s, distinct=False)
    return q


def _literal_values(source: exp.Expression | None) -> list[tuple[Any, ...]] | None:
    """Rows of a VALUES list made only of constants, evaluated on the coordinator."""
    from weir.sql import constant

    if not isinstance(source, exp.Values):
        return None
    rows = []
    for row in source.expressions:
        items = row.expressions if isinstance(row, exp.Tuple) else [row]
        try:
            _, _, r = constant.evaluate(exp.select(*items))
        except constant.NotConstant:
            return None
        rows.append(r[0])
    return rows


async def _update(session: Session, expr: exp.Expression) -> api.Command:
    assert isinstance(expr, exp.Update)
    desc = _table(session, expr.this, "rw")
    alias = expr.this.alias or desc.name.split(".")[-1]
    sets: dict[str, exp.Expression] = {}
    names = {c.name for c in desc.columns}
    for eq in expr.expressions:
        col = eq.this.name.lower()
        if col not in names:
            raise WeirError(SqlState.UNDEFINED_COLUMN,
                            f'column "{col}" of relation "{desc.name}" does not exist')
        sets[col] = eq.expression
    old = [exp.column(c.name, table=alias) for c in desc.columns]
    new = [sets.get(c.name, exp.column(c.name, table=alias)) for c in desc.columns]
    q = exp.select(*old, *new).from_(expr.this.copy())
    if expr.args.get("where"):
        q = q.where(expr.args["where"].this.copy())
    async with session.coord.table_lock(desc.shard_id):  # type: ignore[arg-type]
        rows = await query.collect(await planning.run(session, q, for_write=True))
        n = len(desc.columns)
        olds = [list(r[:n]) for r in rows]
        news = [_coerce_row(desc, list(desc.columns), tuple(r[n:])) for r in rows]
        if rows:
            t = pa.concat_tables([_updates(desc, olds, -1), _updates(desc, news, 1)])
            await session.coord.write(session, {desc.shard_id: t}, locked=True)  # type: ignore[dict-item]
    return api.Command(f"UPDATE {len(rows)}")


async def _delete(session: Session, expr: exp.Expression) -> api.Command:
    assert isinstance(expr, exp.Delete)
    desc = _table(session, expr.this, "rd")
    alias = expr.this.alias or desc.name.split(".")[-1]
    q = exp.select(*[exp.column(c.name, table=alias) for c in desc.columns]).from_(expr.this.copy())
    where = expr.args["where"].this.copy() if expr.args.get("where") else None
    if expr.args.get("using"):
        # DELETE ... USING: a row goes once if any combination of the USING rows matches it
        matches = exp.select("1").from_(expr.args["using"][0].copy())
        for other in expr.args["using"][1:]:
            matches = matches.join(other.copy(), join_type="CROSS")
        if where is not None:
            matches = matches.where(where)
        where = exp.Exists(this=matches)
    if where is not None:
        q = q.where(where)
    async with session.coord.table_lock(desc.shard_id):  # type: ignore[arg-type]
        rows = await query.collect(await planning.run(session, q, for_write=True))
        if rows:
            await session.coord.write(session, {desc.shard_id: _updates(desc, [list(r) for r in rows], -1)},  # type: ignore[dict-item]
                                      locked=True)
    return api.Command(f"DELETE {len(rows)}")
