"""Typed SQL literals that mean the same value in PostgreSQL's SQL and in Spark's."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from typing import Any

from sqlglot import exp

from weir import types as T
from weir.codec.interval import PgInterval
from weir.codec.interval_value import to_pg
from weir.errors import SqlState, WeirError
from weir.types import PgType


def literal(value: Any, t: PgType, *, parameter: bool = False) -> exp.Expression:
    """A typed SQL literal that means `value` of type `t` in both Postgres and Spark SQL. An
    array literal has its value's dimensions; a `parameter`'s must be its slot's (the query
    was translated for them)."""
    if value is None:
        return exp.Cast(this=exp.Null(), to=exp.DataType.build(t.spark_ddl, dialect="spark"))
    if t.is_array:
        assert t.element is not None
        typed = value_type(value, t)
        if parameter and typed.ndims != t.ndims:
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "multidimensional array parameters are not supported")
        t = typed
        inner = T.with_ndims(t, t.ndims - 1) if t.ndims > 1 else t.element
        arr = exp.Array(expressions=[_untyped(literal(v, inner)) if t.ndims > 1 else literal(v, inner)
                                     for v in value])
        # typed, or Spark gives an empty ARRAY() the element type void
        out = exp.Cast(this=arr, to=exp.DataType.build(t.spark_ddl, dialect="spark"))
        if t.oid in (22, 30):  # int2vector / oidvector: their own types (weir.sql.infer)
            out.meta["weir_type"] = t.name
        return out
    if t.oid == T.BOOL.oid:
        return exp.Boolean(this=bool(value))
    if t.oid in (T.INT2.oid, T.INT4.oid, T.INT8.oid, T.MZ_TIMESTAMP.oid, 26):
        lit = exp.Literal.number(int(value))
        return exp.Cast(this=lit, to=exp.DataType.build(t.spark_ddl, dialect="spark"))
    if t.oid in (T.FLOAT4.oid, T.FLOAT8.oid):
        f = float(value)
        text = repr(f) if f == f and f not in (float("inf"), float("-inf")) else {
            "nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}[repr(f)]
        return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build(t.spark_ddl, dialect="spark"))
    if t.oid == T.NUMERIC.oid:
        d = decimal.Decimal(value)
        ddl = t.spark_ddl
        if t.precision is None:
            ddl = _decimal_ddl(d)
        return exp.Cast(this=exp.Literal.string(format(d, "f")), to=exp.DataType.build(ddl, dialect="spark"))
    if t.oid == T.DATE.oid:
        return exp.Cast(this=exp.Literal.string(value.isoformat()), to=exp.DataType.build("DATE"))
    if t.oid == T.TIMESTAMP.oid:
        return exp.Cast(this=exp.Literal.string(value.isoformat(sep=" ")),
                        to=exp.DataType.build("TIMESTAMP_NTZ", dialect="spark"))
    if t.oid == T.TIMESTAMPTZ.oid:
        v = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return exp.Cast(this=exp.Literal.string(v.astimezone(dt.UTC).isoformat(sep=" ")),
                        to=exp.DataType.build("TIMESTAMP", dialect="spark"))
    if t.oid == T.INTERVAL.oid:
        return interval_literal(to_pg(value))
    if t.oid == T.BYTEA.oid:
        return exp.HexString(this=bytes(value).hex())
    if t.oid == T.UUID.oid:
        return exp.Literal.string(str(value) if not isinstance(value, uuid.UUID) else str(value))
    lit = exp.Literal.string(str(value))
    if t.oid in (T.JSONB.oid, T.BY_NAME["json"].oid):  # not an untyped literal (weir.sql.infer, .jsonb)
        lit.meta["weir_type"] = t.name
    return lit


def interval_literal(v: PgInterval) -> exp.Expression:
    """An interval as Spark holds it: struct<months, days, micros> (weir.types)."""
    node = exp.Anonymous(this="named_struct", expressions=[
        exp.Literal.string("months"), exp.Cast(this=exp.Literal.number(v.months), to=exp.DataType.build("INT")),
        exp.Literal.string("days"), exp.Cast(this=exp.Literal.number(v.days), to=exp.DataType.build("INT")),
        exp.Literal.string("micros"), exp.Cast(this=exp.Literal.number(v.micros), to=exp.DataType.build("BIGINT"))])
    node.meta["weir_literal"] = True  # weir's own Spark call: weir.sql.functions lets it pass
    # typed (fields nullable): beside a NULL row, Spark's non-null literal fields fail its Arrow output
    return exp.Cast(this=node, to=exp.DataType.build(T.INTERVAL_DDL, dialect="spark"))


def is_interval_literal(node: exp.Expression) -> bool:
    """A struct built by interval_literal (or by weir.sql.interval_ops): an interval."""
    args = node.expressions if isinstance(node, exp.Anonymous) and node.name.lower() == "named_struct" else []
    return len(args) == 6 and [a.name for a in args[::2]] == ["months", "days", "micros"] \
        and all(isinstance(a, exp.Literal) and a.is_string for a in args[::2])


def value_type(value: list[Any], t: PgType) -> PgType:
    """Array type `t` with the dimensions of `value` (nested lists, rectangular as
    PostgreSQL's input makes them): '{{1,2},{3,4}}'::int[] is a 2-D int[] whatever the
    cast's brackets say. An empty array keeps `t`'s."""
    ndims, v = 0, value
    while isinstance(v, list) and v:
        ndims, v = ndims + 1, v[0]
    if isinstance(v, list):  # an empty (sub-)array
        ndims += 1
    return T.with_ndims(t, ndims) if value and ndims != t.ndims else t


def _untyped(node: exp.Expression) -> exp.Expression:
    """A sub-array of a nested literal without its own cast (the outer one types it)."""
    return node.this if isinstance(node, exp.Cast) and isinstance(node.this, exp.Array) else node


def _decimal_ddl(d: decimal.Decimal) -> str:
    sign, digits, exponent = d.as_tuple()
    scale = max(0, -int(exponent)) if isinstance(exponent, int) else 0
    precision = max(len(digits), scale, 1)
    precision = min(38, max(precision, scale + 1))
    return f"DECIMAL({precision},{min(scale, precision)})"
