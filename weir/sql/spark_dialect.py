"""The Spark SQL dialect weir renders for its replicas (Spark 4.x).

sqlglot's Spark generator writes for Hive, which has no WITH inside a subquery: it moves
every nested CTE to the top of the statement, which breaks a correlated CTE (its outer
references no longer resolve) and clashes when two subqueries name a CTE alike. Spark
3.0+ takes CTEs where PostgreSQL does, so weir keeps them in place."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.spark import Spark


class WeirSpark(Spark):
    """Spark SQL with nested CTEs left where they are written."""

    class Generator(Spark.Generator):  # type: ignore[name-defined,misc]
        EXPRESSIONS_WITHOUT_NESTED_CTES: set[type[exp.Expression]] = set()

        def lateral_sql(self, expression: exp.Lateral) -> str:
            """`unnest(a) WITH ORDINALITY AS k(x, n)` counts from 1 (a bigint) in PostgreSQL;
            sqlglot's `LATERAL VIEW posexplode(a) k AS n, x` counts from 0: the positions
            from transform()'s index instead, + 1."""
            if expression.args.get("view") and isinstance(expression.this, exp.Posexplode):
                alias = expression.args.get("alias")
                columns = alias.columns if alias is not None else []
                if len(columns) == 2:
                    pos, value = columns
                    v, p = exp.to_identifier("__weir_v"), exp.to_identifier("__weir_p")
                    number = exp.Cast(this=exp.Add(this=p.copy(), expression=exp.Literal.number(1)),
                                      to=exp.DataType.build("BIGINT"))
                    struct = exp.Struct(expressions=[exp.PropertyEQ(this=pos.copy(), expression=number),
                                                     exp.PropertyEQ(this=value.copy(), expression=v.copy())])
                    rows = exp.Inline(this=exp.Transform(this=expression.this.this.copy(), expression=exp.Lambda(
                        this=struct, expressions=[v, p])))
                    expression = expression.copy()
                    expression.set("this", rows)
            return super().lateral_sql(expression)
