"""Prepare: parse, infer parameter types, and describe the rows a statement returns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from weir import types as T
from weir.adapter import api, planning
from weir.adapter.show import show_sql
from weir.sql import statements as st
from weir.sql.render import infer_param_types
from weir.sql.resolve import column_type_fn
from weir.types import PgType

if TYPE_CHECKING:
    from weir.adapter.session import Session


def _column_type_fn(session: Session, expr: exp.Expression):  # noqa: ANN202
    """Type of a column reference by looking it up in the relations the statement names
    (looked up on the first call: only a parameter's type needs them)."""
    return column_type_fn(expr, session.coord.resolver(session))


def _insert_param_types(session: Session, stmt: st.Insert, given: list[int]) -> list[PgType]:
    """INSERT INTO t (cols) VALUES ($1, $2): parameters take the target columns' types."""
    from weir.adapter.dml import target_columns

    expr = stmt.expr
    base = infer_param_types(expr, given, _column_type_fn(session, expr))
    values = expr.expression
    if not isinstance(values, exp.Values):
        return base
    try:
        _, cols = target_columns(session, expr)
    except Exception:  # noqa: BLE001 - reported at execution
        return base
    out = list(base)
    for row in values.expressions:
        for i, v in enumerate(row.expressions if isinstance(row, exp.Tuple) else [row]):
            if isinstance(v, (exp.Parameter, exp.Placeholder)) and i < len(cols):
                k = int(v.this.name) - 1
                if k < len(given) and given[k]:
                    continue
                if k < len(out):
                    out[k] = cols[i].type
    return out


async def prepare(session: Session, stmt: st.Statement, param_oids: list[int], *,
                  describe_result: bool = True) -> api.PreparedStatement:
    """`describe_result`: work out a query's result columns now (the extended protocol's
    Describe); the simple protocol takes them from the result itself."""
    columns: list[api.Column] | None = None
    types: list[PgType] = [T.by_oid(o) if o else T.TEXT for o in param_oids]
    if isinstance(stmt, st.Query):
        types = infer_param_types(stmt.expr, param_oids, _column_type_fn(session, stmt.expr))
        planned = planning.plan(session, stmt.expr, types, key=stmt.sql)
        columns = await planning.describe(session, planned) if describe_result else planned.columns
    elif isinstance(stmt, (st.CopyTo, st.Subscribe, st.DeclareCursor, st.CloseCursor)):
        columns = None
    elif isinstance(stmt, st.Explain):
        label = {"raw": "Raw Plan", "optimized": "Optimized Plan", "physical": "Physical Plan",
                 "timestamp": "Timestamp"}[stmt.stage]
        columns = [api.Column(label, T.TEXT)]
    elif isinstance(stmt, st.Fetch):
        cur = session.cursors.get(stmt.name)
        columns = cur.columns if cur is not None and not stmt.move else None
    elif isinstance(stmt, st.Insert):
        types = _insert_param_types(session, stmt, param_oids)
    elif isinstance(stmt, (st.Update, st.Delete)):
        types = infer_param_types(stmt.expr, param_oids, _column_type_fn(session, stmt.expr))
    elif isinstance(stmt, st.ShowVariable):
        name = "all" if stmt.name == "all" else stmt.name
        if name == "all":
            columns = [api.Column("name", T.TEXT), api.Column("setting", T.TEXT),
                       api.Column("description", T.TEXT)]
        else:
            from weir.catalog.vars import lookup_var

            columns = [api.Column(lookup_var(name).name, T.TEXT)]  # DateStyle, as PostgreSQL names it
    elif isinstance(stmt, st.ShowObjects):
        columns = await planning.describe(session, planning.plan_sql(session, show_sql(session, stmt)))
    elif isinstance(stmt, st.ExecutePrepared):
        inner = session.sql_prepared.get(stmt.name)
        columns = inner.columns if inner is not None else None
    return api.PreparedStatement(stmt.sql, types, columns, plan=stmt)
