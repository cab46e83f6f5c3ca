"""Faithful Spark translations of PostgreSQL's date/time functions and operators, for the
gate in `weir.sql.functions` (as weir.sql.translate's): EXTRACT, AT TIME ZONE and
date_trunc, where Spark's functions of the same name read their arguments otherwise."""

from __future__ import annotations

from sqlglot import exp

from weir import types as T
from weir.errors import SqlState, WeirError
from weir.sql import infer
from weir.sql.infer import Types
from weir.sql.translate import refuse as _refuse
from weir.sql.translate import spark_template as _spark

_EXTRACT = {"YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND", "QUARTER", "DOY", "WEEK"}


_TIME_OF_DAY = {"HOUR", "MINUTE", "SECOND", "MILLISECONDS", "MICROSECONDS", "TIMEZONE", "TIMEZONE_HOUR",
                "TIMEZONE_MINUTE"}


def extract(node: exp.Expression, types: Types) -> exp.Expression:
    field = node.this.name.upper()
    if field in _TIME_OF_DAY and infer.is_date(types.of(node.expression)):
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f'unit "{field.lower()}" not supported for type date')
    if field == "DOW":
        return _spark("(dayofweek({x}) - 1)", x=node.expression)
    if field not in _EXTRACT:
        raise _refuse(f"EXTRACT({field.lower()} FROM ...)")
    return node


def at_time_zone(node: exp.Expression, types: Types) -> exp.Expression:
    """`timestamp AT TIME ZONE z` reads the wall-clock time in z and is a timestamptz;
    `timestamptz AT TIME ZONE z` is the wall-clock time in z, a timestamp (sqlglot renders
    both as from_utc_timestamp: the first went the wrong way). A wall-clock time that
    happens twice (clocks set back) is the later instant, as in PostgreSQL (Spark's
    to_utc_timestamp takes the earlier one)."""
    source = types.of(node.this)
    zone = node.args.get("zone")
    if zone is None:
        return node
    if source is not None and source.oid in (T.TIMESTAMP.oid, T.DATE.oid):
        wall = exp.Cast(this=node.this, to=exp.DataType.build("TIMESTAMP_NTZ", dialect="spark")) \
            if source.oid == T.DATE.oid else node.this
        return _later_when_repeated(_call("to_utc_timestamp", _ltz(wall), zone), zone)
    if source is None or not infer.is_timestamp(source) and source.oid != T.UNKNOWN.oid:
        raise _refuse(f"AT TIME ZONE of {source.name if source is not None else 'this expression'}")
    # timestamptz (an untyped literal is read as one, as PostgreSQL does)
    return exp.Cast(this=_call("from_utc_timestamp", _ltz(node.this), zone),
                    to=exp.DataType.build("TIMESTAMP_NTZ", dialect="spark"))


def _later_when_repeated(instant: exp.Expression, zone: exp.Expression) -> exp.Expression:
    """The later of the two instants a repeated wall-clock time names: when the zone's
    offset a day later is smaller, and the instant shifted by the difference shows the same
    wall-clock time, that one."""
    off = "(unix_micros(from_utc_timestamp({c}, {z})) - unix_micros({c}))"
    off_next = "(unix_micros(from_utc_timestamp({c} + INTERVAL 1 DAY, {z})) - unix_micros({c} + INTERVAL 1 DAY))"
    later = f"timestamp_micros(unix_micros({{c}}) + {off} - {off_next})"
    tree = _spark(f"CASE WHEN {off} > {off_next} AND from_utc_timestamp({later}, {{z}}) = from_utc_timestamp({{c}}, {{z}}) "
                  f"THEN {later} ELSE {{c}} END", c=instant, z=zone)
    for call in tree.find_all(exp.Anonymous):
        call.meta["weir_literal"] = True  # weir's own Spark calls
    return tree


def _ltz(x: exp.Expression) -> exp.Expression:
    return exp.Cast(this=x, to=exp.DataType.build("TIMESTAMP_LTZ", dialect="spark"))


def _call(name: str, *args: exp.Expression) -> exp.Expression:
    """A Spark function call as written (sqlglot's own classes add casts of their own)."""
    call = exp.Anonymous(this=name, expressions=list(args))
    call.meta["weir_literal"] = True  # weir's own Spark call: the function gate lets it pass
    return call


# date_trunc's units: Spark's own, and those Spark answers NULL for (years per step,
# counted as PostgreSQL counts them: the 1900s are the decade 1900-1909 but the 20th
# century 1901-2000)
_TRUNC_UNITS = {**{u: u for u in ("microsecond", "millisecond", "second", "minute", "hour", "day", "week",
                                  "month", "quarter", "year")},
                **{u + "s": u for u in ("microsecond", "millisecond", "second", "minute", "hour", "day", "week",
                                        "month", "year")}}
_TRUNC_YEARS = {"decade": (10, 0), "decades": (10, 0), "century": (100, 1), "centuries": (100, 1),
                "millennium": (1000, 1), "millennia": (1000, 1), "millenniums": (1000, 1)}


def timestamp_trunc(node: exp.Expression, types: Types) -> exp.Expression:
    """date_trunc of a timestamp is a timestamp (Spark's is a timestamp with time zone;
    the session's zone is UTC, so the cast back is exact). Decades, centuries and
    millennia are computed (Spark gives NULL), an unknown unit is an error (Spark: NULL)."""
    source = types.of(node.this)
    ntz = source is not None and source.oid == T.TIMESTAMP.oid
    if node.args.get("zone") is not None:  # was ignored: truncated in UTC
        raise _refuse("date_trunc with a time zone argument")
    unit_node = node.args.get("unit")
    unit = unit_node.name.lower() if unit_node is not None else ""
    if unit in _TRUNC_YEARS:
        step, first = _TRUNC_YEARS[unit]
        make = "make_timestamp_ntz" if ntz else "make_timestamp"
        return _spark(f"{make}(CAST(floor((year({{x}}) - {first}) / {step}) * {step} + {first} AS INT), 1, 1, 0, 0, 0)",
                      x=node.this)
    if unit not in _TRUNC_UNITS:
        what = source.name if source is not None else "timestamp"
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f'unit "{unit}" not recognized for type {what}')
    node.set("unit", exp.Var(this=_TRUNC_UNITS[unit].upper()))
    if ntz:
        return exp.Cast(this=node.copy(), to=exp.DataType.build("TIMESTAMP_NTZ", dialect="spark"))
    return node
