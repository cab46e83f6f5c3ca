"""Evaluate constant queries (no relation read, e.g. `SELECT 1`, `SELECT version()`) on
the coordinator, without a Spark job. Anything it does not understand raises
NotConstant and goes to a replica instead."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import struct
from typing import Any

import pyarrow as pa
from sqlglot import exp

from weir import types as T
from weir.codec import datetime as cdt
from weir.codec import datetime_ops, formatting, interval_parse
from weir.codec import interval as cinterval
from weir.codec import interval_math as cinterval_math
from weir.codec import numeric_math as nm
from weir.codec import timezones as tzs
from weir.errors import SqlState, WeirError
from weir.sql.dialect import ToDate, ToTimestamp
from weir.sql.render import (
    SessionContext,
    name_outputs,
    pg_type_of_datatype,
    substitute_session_functions,
)
from weir.types import PgType


class NotConstant(Exception):
    """The query needs a real engine."""


Value = tuple[Any, PgType]

_INT_RANGE = {T.INT2.oid: (-(2**15), 2**15 - 1, "smallint"), T.INT4.oid: (-(2**31), 2**31 - 1, "integer"),
              T.INT8.oid: (-(2**63), 2**63 - 1, "bigint")}


def is_constant(expr: exp.Expression) -> bool:
    return (isinstance(expr, exp.Select) and expr.args.get("from_") is None and expr.args.get("from") is None
            and not any(isinstance(n, (exp.Table, exp.Subquery, exp.AggFunc, exp.Window))
                        for n in expr.walk()))


def evaluate(expr: exp.Expression, ctx: SessionContext | None = None
             ) -> tuple[list[str], list[PgType], list[tuple[Any, ...]]]:
    """Returns (column names, types, rows) of a constant SELECT; session functions are
    evaluated with `ctx`."""
    if not is_constant(expr):
        raise NotConstant
    for key in ("where", "group", "having", "order", "limit", "offset", "distinct"):
        if expr.args.get(key):
            raise NotConstant
    expr = expr.copy()
    names = name_outputs(expr)
    if ctx is not None:
        expr = _mz_now(expr, ctx)
        expr = substitute_session_functions(expr, ctx)
    values = []
    for p in expr.expressions:
        if isinstance(p, exp.Alias):
            p = p.this
        values.append(_eval(p))
    return [n or "?column?" for n in names], [t for _, t in values], [tuple(v for v, _ in values)]


class _MzNow(exp.Expression):
    """mz_now() bound to the statement's timestamp, typed mz_timestamp."""

    arg_types = {"this": True}


def _mz_now(expr: exp.Expression, ctx: SessionContext) -> exp.Expression:
    def visit(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Anonymous) and node.name.lower() == "mz_now" and ctx.timestamp is not None:
            return _MzNow(this=exp.Literal.number(ctx.timestamp))
        return node

    return expr.transform(visit)


def _int_type(v: int) -> PgType:
    if -(2**31) <= v < 2**31:
        return T.INT4
    if -(2**63) <= v < 2**63:
        return T.INT8
    return T.NUMERIC


def _eval(e: exp.Expression) -> Value:
    if isinstance(e, exp.Paren):
        return _eval(e.this)
    if isinstance(e, _MzNow):
        return int(e.this.this), T.MZ_TIMESTAMP
    if isinstance(e, exp.Literal):
        if e.is_string:
            return e.this, T.TEXT
        text = e.this
        if any(c in text for c in ".eE"):
            return decimal.Decimal(text), T.NUMERIC
        v = int(text)
        return v, _int_type(v)
    if isinstance(e, exp.Boolean):
        return bool(e.this), T.BOOL
    if isinstance(e, exp.Null):
        return None, T.TEXT
    if isinstance(e, exp.Neg):
        v, t = _eval(e.this)
        if t.oid == T.INTERVAL.oid:
            return (None if v is None else cinterval_math.neg(v)), t
        return (None if v is None else _check(-v, t)), t
    if isinstance(e, exp.Cast) and isinstance(e.this, exp.Array):
        t = pg_type_of_datatype(e.to)
        if t is not None and t.is_array and t.element is not None and t.element.oid == T.TEXT.oid:
            return [_text(_eval(x)[0]) for x in e.this.expressions], t  # a session value: current_schemas()
    if isinstance(e, exp.Cast):
        return _cast(e)
    if isinstance(e, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)):
        return _arith(e)
    if isinstance(e, (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)):
        return _compare(e)
    if isinstance(e, (exp.And, exp.Or)):
        a, _ = _eval(e.this)
        b, _ = _eval(e.expression)
        if isinstance(e, exp.And):
            if a is False or b is False:
                return False, T.BOOL
            return (None if a is None or b is None else True), T.BOOL
        if a is True or b is True:
            return True, T.BOOL
        return (None if a is None or b is None else False), T.BOOL
    if isinstance(e, exp.Not):
        a, _ = _eval(e.this)
        return (None if a is None else not a), T.BOOL
    if isinstance(e, exp.DPipe):
        a, ta = _eval(e.this)
        b, tb = _eval(e.expression)
        if T.JSONB.oid in (ta.oid, tb.oid) or ta.is_array or tb.is_array:
            raise NotConstant  # jsonb's || (weir.sql.jsonb), arrays' (elements appended), not text's
        if not (_textual(ta) or _textual(tb)):  # text || anything; never two non-text values
            raise WeirError(SqlState.UNDEFINED_FUNCTION, f"operator does not exist: {ta.name} || {tb.name}")
        return (None if a is None or b is None else _text(a) + _text(b)), T.TEXT
    if isinstance(e, (exp.Log, exp.Ln, exp.Exp, exp.Sqrt)):
        return _math(e)
    if isinstance(e, exp.Anonymous) and e.name.lower() in _SLEEPS and len(e.expressions) == 1:
        secs = _sleep_arg(e)
        if e.name.lower() == "mz_sleep":
            return None, T.TIMESTAMPTZ
        return (None if secs is None else ""), VOID
    if isinstance(e, exp.Anonymous) and e.name.lower() == "pg_typeof" and len(e.expressions) == 1:
        return _eval(e.expressions[0])[1].name, T.TEXT
    if isinstance(e, (exp.JustifyDays, exp.JustifyHours, exp.JustifyInterval)):
        return _justify(e)
    if isinstance(e, exp.MakeInterval):
        return _make_interval(e)
    if isinstance(e, exp.Extract):
        return _extract(e)
    if isinstance(e, exp.AtTimeZone):
        return _at_time_zone(e)
    if isinstance(e, exp.TimestampFromParts) or (
            isinstance(e, exp.Anonymous) and e.name.lower() == "make_timestamptz" and len(e.expressions) in (6, 7)):
        return _make_timestamp(e)
    if isinstance(e, exp.TimestampTrunc) and e.args.get("zone") is not None and isinstance(e.args.get("unit"), exp.Var):
        (v, t), (z, zt) = _eval(e.this), _eval(e.args["zone"])
        if t.oid != T.TIMESTAMPTZ.oid or not _textual(zt):
            raise NotConstant
        if v is None or z is None:
            return None, T.TIMESTAMPTZ
        utc = v.astimezone(dt.UTC).replace(tzinfo=None) if v.tzinfo is not None else v
        return datetime_ops.trunc_in_zone(utc, e.args["unit"].name, z).replace(tzinfo=dt.UTC), T.TIMESTAMPTZ
    if isinstance(e, (ToTimestamp, ToDate)):
        (v, t), (f, ft) = _eval(e.this), _eval(e.expression)
        if not (_textual(t) and _textual(ft)) or t.is_array or ft.is_array:
            raise NotConstant
        if isinstance(e, ToDate):
            return (None if v is None or f is None else formatting.to_date(v, f)), T.DATE
        return (None if v is None or f is None else formatting.to_timestamp(v, f).replace(tzinfo=dt.UTC)), T.TIMESTAMPTZ
    if isinstance(e, exp.UnixToTime):
        v, t = _eval(e.this)
        if t.oid not in _RANK and not _textual(t):
            raise NotConstant
        return (None if v is None else datetime_ops.to_timestamp_epoch(float(v)).replace(tzinfo=dt.UTC)), T.TIMESTAMPTZ
    if isinstance(e, (exp.Upper, exp.Lower)):
        a, _ = _eval(e.this)
        return (None if a is None else (a.upper() if isinstance(e, exp.Upper) else a.lower())), T.TEXT
    raise NotConstant


# pg_sleep(float8) returns void (its text ''); Materialize's mz_sleep(float8) a NULL
# timestamptz. void is no stored or Spark type, only a constant query's value.
_SLEEPS = ("pg_sleep", "mz_sleep")
VOID = PgType("void", 2278, 4, 0, "STRING", pa.string())


def _sleep_arg(e: exp.Anonymous) -> float | None:
    v, t = _eval(e.expressions[0])
    if t.oid not in _RANK and t.oid not in (T.TEXT.oid, T.UNKNOWN.oid):
        raise WeirError(SqlState.UNDEFINED_FUNCTION, f"function {e.name.lower()}({t.name}) does not exist")
    return None if v is None else float(v)


def sleep_seconds(expr: exp.Expression) -> float:
    """How long a constant query's pg_sleep / mz_sleep calls sleep, in all: the caller
    awaits it (the evaluation itself never sleeps, and may be done once at planning)."""
    total = 0.0
    for node in expr.find_all(exp.Anonymous):
        if node.name.lower() in _SLEEPS and len(node.expressions) == 1:
            secs = _sleep_arg(node)
            if secs is not None and secs > 0:
                total += secs
    return total


def _textual(t: PgType) -> bool:
    return t.oid in (T.TEXT.oid, T.VARCHAR.oid, 1042, 19, T.UNKNOWN.oid) or t.is_array


def _text(v: Any, t: PgType | None = None) -> str:
    from weir.codec import encode_text

    if isinstance(v, str):
        return v
    if t is not None and t.is_array:  # PostgreSQL's array literal, {a,"b c",NULL}
        return encode_text(v, t).decode()
    if isinstance(v, cinterval.PgInterval):
        return cinterval.out(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    return encode_text(v, T.NUMERIC if isinstance(v, decimal.Decimal) else _int_type(v)).decode()


def _check(v: Any, t: PgType) -> Any:
    if t.oid in _INT_RANGE:
        lo, hi, name = _INT_RANGE[t.oid]
        if not lo <= v <= hi:
            raise WeirError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, f"{name} out of range")
    return v


_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
_RANK = {T.INT2.oid: 1, T.INT4.oid: 2, T.INT8.oid: 3, T.NUMERIC.oid: 4, T.FLOAT4.oid: 5, T.FLOAT8.oid: 6}


def _math(e: exp.Expression) -> Value:
    """log (base 10), ln, exp, sqrt: exact for numeric as PostgreSQL's numeric.c, doubles otherwise."""
    args = [_eval(a) for a in e.iter_expressions()]
    if any(t.oid not in _RANK for _, t in args):
        raise NotConstant
    numeric = any(t.oid == T.NUMERIC.oid for _, t in args) or (isinstance(e, exp.Log) and len(args) == 2)
    if any(v is None for v, _ in args):
        return None, T.NUMERIC if numeric else T.FLOAT8
    if not numeric:
        raise NotConstant  # doubles: the Spark translation raises PostgreSQL's errors
    vals = [decimal.Decimal(v) for v, _ in args]
    if isinstance(e, exp.Log):
        return (nm.log(vals[0], vals[1]) if len(vals) == 2 else nm.log(decimal.Decimal(10), vals[0])), T.NUMERIC
    fn = {exp.Ln: nm.ln, exp.Exp: nm.exp, exp.Sqrt: nm.sqrt}[type(e)]
    return fn(vals[0]), T.NUMERIC


def _interval_arith(e: exp.Binary, a: Any, ta: PgType, b: Any, tb: PgType) -> Value:
    """interval ± interval, interval * number, number * interval, interval / number, with
    PostgreSQL's fields (interval_mul and interval_div cascade fractions downward)."""
    both = ta.oid == tb.oid == T.INTERVAL.oid
    if both and isinstance(e, (exp.Add, exp.Sub)):
        if a is None or b is None:
            return None, T.INTERVAL
        return (cinterval_math.add(a, b) if isinstance(e, exp.Add) else cinterval_math.add(a, cinterval_math.neg(b))), T.INTERVAL
    number = tb if ta.oid == T.INTERVAL.oid else ta
    if both or number.oid not in _RANK or not (
            isinstance(e, exp.Mul) or (isinstance(e, exp.Div) and ta.oid == T.INTERVAL.oid)):
        raise NotConstant
    if a is None or b is None:
        return None, T.INTERVAL
    span, factor = (a, b) if ta.oid == T.INTERVAL.oid else (b, a)
    factor = float(factor)  # PostgreSQL's interval * float8 (a numeric is cast to one)
    if isinstance(e, exp.Mul):
        return cinterval_math.mul(span, factor), T.INTERVAL
    return cinterval_math.div(span, factor), T.INTERVAL


_MAKE_INTERVAL = ("years", "months", "weeks", "days", "hours", "mins", "secs")


def _make_interval(e: exp.MakeInterval) -> Value:
    """make_interval(years, months, weeks, days, hours, mins, secs), positional or named
    (`secs := 1.5`; sqlglot files named arguments under the wrong slots)."""
    given: dict[str, exp.Expression] = {}
    for slot, arg in zip(_MAKE_INTERVAL, (e.args.get(k) for k in e.arg_types), strict=True):
        if isinstance(arg, exp.PropertyEQ):
            name = arg.this.name.lower()
            if name not in _MAKE_INTERVAL:
                raise NotConstant
            given[name] = arg.expression
        elif arg is not None:
            given[slot] = arg
    values: dict[str, Any] = {}
    for name, node in given.items():
        v, _t = _eval(node)
        if v is None:
            return None, T.INTERVAL  # strict
        values[name] = v
    try:
        secs = float(values.get("secs", 0))
        ints = {n: int(values.get(n, 0)) for n in _MAKE_INTERVAL[:-1]}
    except (TypeError, ValueError):
        raise NotConstant from None
    if any(isinstance(values.get(n), (float, decimal.Decimal)) for n in _MAKE_INTERVAL[:-1]):
        raise NotConstant  # make_interval(numeric ...) does not exist
    return cinterval_math.make_interval(**ints, secs=secs), T.INTERVAL


def _justify(e: exp.Expression) -> Value:
    v, t = _eval(e.this)
    if t.oid != T.INTERVAL.oid:
        raise NotConstant
    if v is None:
        return None, T.INTERVAL
    fn = {exp.JustifyDays: cinterval_math.justify_days, exp.JustifyHours: cinterval_math.justify_hours,
          exp.JustifyInterval: cinterval_math.justify_interval}[type(e)]
    return fn(v), T.INTERVAL


def _extract(e: exp.Extract) -> Value:
    """extract(field FROM interval) is numeric, date_part(text, interval) double precision."""
    v, t = _eval(e.expression)
    if t.oid != T.INTERVAL.oid or not isinstance(e.this, (exp.Var, exp.Literal, exp.Column)):
        raise NotConstant
    numeric = e.meta.get("weir_output_name") != "date_part"
    rt = T.NUMERIC if numeric else T.FLOAT8
    if v is None:
        return None, rt
    value, scale = cinterval_math.extract(e.this.name, v)
    if numeric:
        return decimal.Decimal(value).scaleb(-scale), rt
    return cinterval_math.date_part(e.this.name, v), rt


def _make_timestamp(e: exp.Expression) -> Value:
    """make_timestamp(y, m, d, h, mi, s) and make_timestamptz(y, m, d, h, mi, s [, zone])."""
    zoned = isinstance(e, exp.Anonymous)
    parts = list(e.expressions) if zoned else [e.args.get(k) for k in ("year", "month", "day", "hour", "min", "sec")]
    if any(p is None for p in parts) or (not zoned and e.args.get("zone") is not None):
        raise NotConstant
    values = [_eval(p) for p in parts]
    if any(t.oid not in _RANK for _, t in values[:6]) or (len(values) == 7 and not _textual(values[6][1])):
        raise NotConstant
    if any(t.oid not in _INT_RANGE for _, t in values[:5]):
        raise NotConstant  # PostgreSQL's integer arguments: an implicit cast weir does not guess
    result_type = T.TIMESTAMPTZ if zoned else T.TIMESTAMP
    if any(v is None for v, _ in values):
        return None, result_type
    y, mo, d, h, mi = (int(v) for v, _ in values[:5])
    zone = values[6][0] if len(values) == 7 else None
    v = datetime_ops.make_timestamp(y, mo, d, h, mi, float(values[5][0]), zone, zoned)
    return (v.replace(tzinfo=dt.UTC) if zoned else v), result_type


def _at_time_zone(e: exp.AtTimeZone) -> Value:
    """ts AT TIME ZONE zone / timezone(zone, ts) with PostgreSQL's zone names
    (weir.codec.timezones): a timestamp's instant there, a timestamptz's wall-clock time."""
    zone = e.args.get("zone")
    if zone is None:
        raise NotConstant
    z, zt = _eval(zone)
    if not _textual(zt) or zt.is_array:
        raise NotConstant
    if isinstance(e.this, exp.Literal) and e.this.is_string:  # untyped: read as a timestamptz
        v, t = cdt.timestamptz_in(e.this.this), T.TIMESTAMPTZ
    else:
        v, t = _eval(e.this)
    if t.oid == T.DATE.oid:  # date AT TIME ZONE is (date::timestamptz) AT TIME ZONE, as in PostgreSQL
        v, t = (None if v is None else dt.datetime(v.year, v.month, v.day, tzinfo=dt.UTC)), T.TIMESTAMPTZ
    if t.oid == T.TIMESTAMP.oid:
        if v is None or z is None:
            return None, T.TIMESTAMPTZ
        return tzs.utc_of_local(v.replace(tzinfo=None), z).replace(tzinfo=dt.UTC), T.TIMESTAMPTZ
    if t.oid == T.TIMESTAMPTZ.oid:
        if v is None or z is None:
            return None, T.TIMESTAMP
        utc = v.astimezone(dt.UTC).replace(tzinfo=None) if v.tzinfo is not None else v
        return tzs.local_of_utc(utc, z), T.TIMESTAMP
    raise NotConstant


def _arith(e: exp.Binary) -> Value:
    a, ta = _eval(e.this)
    b, tb = _eval(e.expression)
    if T.INTERVAL.oid in (ta.oid, tb.oid):
        return _interval_arith(e, a, ta, b, tb)
    if ta.oid not in _RANK or tb.oid not in _RANK:
        raise NotConstant
    t = ta if _RANK[ta.oid] >= _RANK[tb.oid] else tb
    if t.oid == T.NUMERIC.oid:
        t = T.NUMERIC
    if a is None or b is None:
        return None, t
    if t.oid in (T.FLOAT4.oid, T.FLOAT8.oid):
        a, b = float(a), float(b)
    elif t.oid == T.NUMERIC.oid:
        a, b = decimal.Decimal(a), decimal.Decimal(b)
    if isinstance(e, (exp.Div, exp.Mod)) and b == 0:
        raise WeirError(SqlState.DIVISION_BY_ZERO, "division by zero")
    if isinstance(e, (exp.Add, exp.Sub, exp.Mul)) and t.oid == T.NUMERIC.oid:
        # exact, as PostgreSQL's numeric (Python's default context keeps 28 digits)
        op = {exp.Add: _EXACT.add, exp.Sub: _EXACT.subtract, exp.Mul: _EXACT.multiply}[type(e)]
        r = op(a, b)
    elif isinstance(e, exp.Add):
        r = a + b
    elif isinstance(e, exp.Sub):
        r = a - b
    elif isinstance(e, exp.Mul):
        r = a * b
    elif isinstance(e, exp.Div):
        if t.oid in _INT_RANGE:
            q = abs(a) // abs(b)
            r = q if (a >= 0) == (b >= 0) else -q
        elif t.oid == T.NUMERIC.oid:
            r = nm.div(a, b)
        else:
            r = a / b
    else:
        r = (int(_EXACT.remainder(decimal.Decimal(a), decimal.Decimal(b))) if t.oid in _INT_RANGE
             else _EXACT.remainder(a, b) if t.oid == T.NUMERIC.oid else a % b)
    if t.oid in (T.FLOAT4.oid, T.FLOAT8.oid):
        r = _float_in_range(e, r, a, b, t)
    return _check(r, t), t


def _float_in_range(e: exp.Expression, r: float, a: float, b: float, t: PgType) -> float:
    """float4/8 arithmetic's range checks (float.h's float_overflow_error / underflow):
    finite operands giving an infinity, or a product / quotient of non-zero operands
    rounding to zero; a real rounds to single precision first."""
    if t.oid == T.FLOAT4.oid and math.isfinite(r):
        try:
            r = struct.unpack("f", struct.pack("f", r))[0]
        except OverflowError:
            r = math.copysign(math.inf, r)
    if math.isinf(r) and math.isfinite(a) and math.isfinite(b):
        raise WeirError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow")
    if r == 0 and a != 0 and ((isinstance(e, exp.Mul) and b != 0) or (isinstance(e, exp.Div) and math.isfinite(b))):
        raise WeirError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: underflow")
    return r


def _compare(e: exp.Binary) -> Value:
    a, ta = _eval(e.this)
    b, tb = _eval(e.expression)
    if T.JSONB.oid in (ta.oid, tb.oid):
        raise NotConstant
    if a is None or b is None:
        return None, T.BOOL
    if isinstance(a, list) or isinstance(b, list):  # arrays compare as PostgreSQL's (on a replica)
        raise NotConstant
    if type(a) is not type(b) and not (isinstance(a, (int, float, decimal.Decimal))
                                       and isinstance(b, (int, float, decimal.Decimal))):
        raise NotConstant
    ops = {exp.EQ: lambda x, y: x == y, exp.NEQ: lambda x, y: x != y, exp.LT: lambda x, y: x < y,
           exp.LTE: lambda x, y: x <= y, exp.GT: lambda x, y: x > y, exp.GTE: lambda x, y: x >= y}
    return ops[type(e)](a, b), T.BOOL


def _cast(e: exp.Cast) -> Value:
    from weir.codec import coerce

    target = pg_type_of_datatype(e.to)
    if target is None or target.is_array:
        raise NotConstant
    if target.oid == T.INTERVAL.oid and isinstance(e.this, exp.Literal) and e.this.is_string:
        return interval_parse.parse(e.this.this), T.INTERVAL
    v, t = _eval(e.this)
    if v is None:
        return None, target
    if target.oid in (T.TEXT.oid, T.VARCHAR.oid, T.BPCHAR.oid):
        text = _text(v, t)
        if target.length is not None:  # an explicit cast truncates (an INSERT's assignment would fail)
            text = text[:target.length]
        return (text.rstrip(" ") if target.oid == T.BPCHAR.oid else text), target
    if target.oid == T.INTERVAL.oid and (isinstance(v, cinterval.PgInterval) or _textual(t)):
        return (v if isinstance(v, cinterval.PgInterval) else interval_parse.parse(v)), T.INTERVAL
    if isinstance(v, (dt.date, dt.datetime, dt.timedelta, cinterval.PgInterval)):
        raise NotConstant
    if t.oid in (T.FLOAT4.oid, T.FLOAT8.oid) and target.oid == T.NUMERIC.oid:
        v = nm.from_float(decimal.Decimal(v), nm.FLOAT4_DIGITS if t.oid == T.FLOAT4.oid else nm.FLOAT8_DIGITS)
    if t.oid in (T.FLOAT4.oid, T.FLOAT8.oid) and target.oid in _INT_RANGE:
        # rint() of the exact binary value (repr's shortest digits of 2^63 - 1024 are 9223372036854774000)
        v = decimal.Decimal(round(v)) if v == v and v not in (float("inf"), float("-inf")) else decimal.Decimal(repr(v))
    return coerce(v if not isinstance(v, bool) or target.oid == T.BOOL.oid else str(v).lower(), target), target
