"""Calls of weir's own replica UDFs (weir.codec.spark_udfs) in rendered Spark SQL.

An operation that may fail returns `+result` or a runtime marker; the SQL raises the
marker's error only where the call's value is used, because Spark evaluates Python UDFs
for every row, inside CASE branches no row takes too."""

from __future__ import annotations

from sqlglot import exp

from weir.sql.translate import spark_template


def call(udf: str, operation: str, *args: exp.Expression) -> exp.Expression:
    """udf(operation, args...): weir's own function, which the function gate lets pass."""
    node = exp.Anonymous(this=udf, expressions=[exp.Literal.string(operation), *args])
    node.meta["weir_literal"] = True
    return node


def checked(udf: str, operation: str, *args: exp.Expression) -> exp.Expression:
    """A call of an operation that may fail (named with a final `!` where the UDF serves
    both kinds): its error is raised where its value is used."""
    return spark_template("element_at(transform(array({c}), r -> CASE WHEN r IS NULL THEN NULL "
                          "WHEN startswith(r, '+') THEN substring(r, 2) ELSE raise_error(r) END), 1)",
                          c=call(udf, operation, *args))
