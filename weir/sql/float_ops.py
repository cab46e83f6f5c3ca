"""Float arithmetic with PostgreSQL's range checks: float8pl/mi/mul/div (and float4's)
raise 22003 "value out of range: overflow" when finite operands give an infinity, and
"underflow" when a product (or quotient) of non-zero operands rounds to zero; Spark
answers Infinity and 0. The result is computed once (a one-element transform), the
error raised only where the value is used."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from weir.sql import infer
from weir.sql.infer import Types
from weir.sql.translate import raise_sql, spark_template

Handler = Callable[[exp.Expression, Types], exp.Expression]

_INF = "(s.{x} = double('Infinity') OR s.{x} = double('-Infinity'))"


def _finite(x: str) -> str:
    return "NOT " + _INF.format(x=x)


def checked(previous: Handler) -> Handler:
    """`previous` (the node's handler), then the range check when the result is a float."""
    def handler(node: exp.Expression, types: Types) -> exp.Expression:
        result_type = types.of(node)
        a, b = node.this, node.expression
        out = previous(node, types)
        if not infer.is_float(result_type) or not (infer.is_float(types.of(a)) or infer.is_float(types.of(b))):
            return out
        overflow = f"{_INF.format(x='r')} AND {_finite('a')} AND {_finite('b')}"
        cases = f"WHEN {overflow} THEN {raise_sql('22003', 'value out of range: overflow')} "
        if isinstance(node, exp.Mul):
            cases += (f"WHEN s.r = 0 AND s.a <> 0 AND s.b <> 0 THEN "
                      f"{raise_sql('22003', 'value out of range: underflow')} ")
        elif isinstance(node, exp.Div):
            cases += (f"WHEN s.r = 0 AND s.a <> 0 AND {_finite('b')} THEN "
                      f"{raise_sql('22003', 'value out of range: underflow')} ")
        return spark_template("element_at(transform(array(named_struct('r', {r}, 'a', CAST({a} AS DOUBLE), "
                              "'b', CAST({b} AS DOUBLE))), s -> CASE " + cases + "ELSE s.r END), 1)",
                              r=out, a=a.copy(), b=b.copy())
    return handler
