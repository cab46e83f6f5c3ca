"""Date/time constructs on Spark with PostgreSQL's meaning:

- text to date / timestamp / timestamptz casts of non-constant text (a column): Spark's
  cast reads other formats and gives NULL for bad input; they run PostgreSQL's input
  (weir.codec.datetime_parse) in the replica's UDF `weir_datetime`, errors included;
- AT TIME ZONE / timezone(): PostgreSQL's zone names. A constant zone Spark means the same
  by (a fixed abbreviation as its offset, an IANA region, UTC) stays Spark's
  from_utc_timestamp (weir.sql.translate_datetime.at_time_zone); a dynamic abbreviation
  (MSK), a POSIX zone or a zone from a column runs in the UDF; an unknown constant zone is
  22023;
- to_timestamp(double precision): the UDF (PostgreSQL's rounding and range errors).

Values cross the UDF as days or microseconds since 1970 (weir.codec.datetime_ops)."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from weir import types as T
from weir.codec import datetime as cdt
from weir.codec import timezones as tzs
from weir.sql import infer, udf_calls
from weir.sql import translate as tr
from weir.sql.dialect import ToDate, ToTimestamp
from weir.sql.infer import Types
from weir.sql.literals import literal

Handler = Callable[[exp.Expression, Types], exp.Expression]
UDF = "weir_datetime"
_INPUT = {T.DATE.oid: "date_in", T.TIMESTAMP.oid: "timestamp_in", T.TIMESTAMPTZ.oid: "timestamptz_in"}


def _micros_of(x: exp.Expression) -> exp.Expression:
    return tr.spark_template("CAST(unix_micros(CAST({x} AS TIMESTAMP_LTZ)) AS STRING)", x=x)


def _timestamp(micros: exp.Expression, ntz: bool) -> exp.Expression:
    ts = tr.spark_template("timestamp_micros(CAST({m} AS BIGINT))", m=micros)
    return exp.Cast(this=ts, to=exp.DataType.build("TIMESTAMP_NTZ" if ntz else "TIMESTAMP", dialect="spark"))


def cast(previous: Handler) -> Handler:
    def handler(node: exp.Expression, types: Types) -> exp.Expression:
        target = infer.datatype(node.to) if isinstance(node, exp.Cast) else None
        source = types.of(node.this)
        if (target is not None and target.oid in _INPUT and not target.is_array and infer.is_text(source)
                and not (isinstance(node.this, exp.Literal) and node.this.is_string)):
            text = exp.Cast(this=node.this, to=exp.DataType.build("STRING", dialect="spark"))
            value = udf_calls.checked(UDF, _INPUT[target.oid], text)
            if target.oid == T.DATE.oid:
                return tr.spark_template("date_from_unix_date(CAST({v} AS INT))", v=value)
            return _timestamp(value, target.oid == T.TIMESTAMP.oid)
        return previous(node, types)

    return handler


def at_time_zone(previous: Handler) -> Handler:
    def handler(node: exp.Expression, types: Types) -> exp.Expression:
        zone = node.args.get("zone")
        if zone is None:
            return previous(node, types)
        zone_type = types.of(zone)
        if zone_type is not None and not infer.is_text(zone_type):
            raise tr.refuse(f"AT TIME ZONE with a zone of type {zone_type.name}")
        if isinstance(node.this, exp.Literal) and node.this.is_string:  # untyped: a timestamptz
            typed = literal(cdt.timestamptz_in(node.this.this), T.TIMESTAMPTZ)
            types.same_as(typed, _typed("TIMESTAMPTZ"))
            node.set("this", typed)
        source = types.of(node.this)
        if source is not None and source.oid == T.DATE.oid:  # PostgreSQL casts a date to timestamptz here
            instant = exp.Cast(this=node.this, to=exp.DataType.build("TIMESTAMP", dialect="spark"))
            types.same_as(instant, _typed("TIMESTAMPTZ"))
            node.set("this", instant)
            source = T.TIMESTAMPTZ
        if isinstance(zone, exp.Literal) and zone.is_string:
            spark = tzs.spark_zone(zone.this)  # 22023 for a zone PostgreSQL does not know
            if spark is not None:
                node.set("zone", exp.Literal.string(spark))
                return previous(node, types)
        if source is not None and source.oid == T.TIMESTAMP.oid:
            value = udf_calls.checked(UDF, "zone_ts", _zone_text(zone), _micros_of(node.this))
            return _timestamp(value, ntz=False)
        if source is not None and source.oid == T.TIMESTAMPTZ.oid:
            value = udf_calls.checked(UDF, "zone_tz", _zone_text(zone), _micros_of(node.this))
            return _timestamp(value, ntz=True)
        return previous(node, types)

    return handler


def _typed(name: str) -> exp.Expression:
    """An expression of a PostgreSQL type, whose type a rewritten node takes (Types.same_as)."""
    return exp.Cast(this=exp.Null(), to=exp.DataType.build(name, dialect="postgres"))


def _zone_text(zone: exp.Expression) -> exp.Expression:
    return exp.Cast(this=zone, to=exp.DataType.build("STRING", dialect="spark"))


def to_timestamp_epoch(node: exp.Expression, types: Types) -> exp.Expression:
    """to_timestamp(double precision) -> timestamptz."""
    source = types.of(node.this)
    if not (infer.is_int(source) or infer.is_float(source) or infer.is_numeric(source) or infer.is_text(source)):
        raise tr.refuse(f"to_timestamp({source.name if source is not None else 'this argument'})")
    seconds = exp.Cast(this=exp.Cast(this=node.this, to=exp.DataType.build("DOUBLE")),
                       to=exp.DataType.build("STRING", dialect="spark"))
    result = _timestamp(udf_calls.checked(UDF, "to_timestamp_epoch", seconds), ntz=False)
    types.same_as(result, _typed("TIMESTAMPTZ"))
    return result


def to_timestamp_text(node: exp.Expression, types: Types) -> exp.Expression:
    """to_timestamp(text, template) -> timestamptz and to_date(text, template) -> date
    (weir.codec.formatting) in the UDF."""
    args = [exp.Cast(this=a, to=exp.DataType.build("STRING", dialect="spark")) for a in (node.this, node.expression)]
    for orig in (node.this, node.expression):
        t = types.of(orig)
        if t is not None and not infer.is_text(t):
            raise tr.refuse(f"{'to_date' if isinstance(node, ToDate) else 'to_timestamp'} of {t.name}")
    if isinstance(node, ToDate):
        result = tr.spark_template("date_from_unix_date(CAST({v} AS INT))", v=udf_calls.checked(UDF, "to_date", *args))
        types.same_as(result, _typed("DATE"))
        return result
    result = _timestamp(udf_calls.checked(UDF, "to_timestamp", *args), ntz=False)
    types.same_as(result, _typed("TIMESTAMPTZ"))
    return result


def handlers(existing: dict[type, Handler]) -> dict[type, Handler]:
    """Wrappers of the existing Cast and AtTimeZone handlers; to_timestamp and to_date."""
    return {exp.Cast: cast(existing[exp.Cast]), exp.AtTimeZone: at_time_zone(existing[exp.AtTimeZone]),
            exp.UnixToTime: to_timestamp_epoch, ToTimestamp: to_timestamp_text, ToDate: to_timestamp_text}
