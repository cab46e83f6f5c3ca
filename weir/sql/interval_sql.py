"""Spark SQL of PostgreSQL's interval operations on weir's Spark interval, a
`struct<months INT, days INT, micros BIGINT>` (weir.types): each builder takes Spark
expressions (sqlglot nodes) and returns one, computing what PostgreSQL 15's C function of
the same name computes (weir.codec.interval_math is the same in Python, for constants).

PostgreSQL compares intervals by their span with 30-day months and 24-hour days
(interval_cmp_value, 128-bit there): `span` is that, as DECIMAL(38,0) so no interval
overflows it."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from sqlglot import exp

from weir import types as T
from weir.sql.translate import raise_sql, spark_template

_DAY = 86_400_000_000
_NULL = f"CAST(NULL AS {T.INTERVAL_DDL})"


_names = itertools.count()


def bind(x: exp.Expression, body: Callable[[exp.Expression], exp.Expression]) -> exp.Expression:
    """body(v) with v bound to x's value once (a one-element transform(): Spark SQL has no
    LET), so nested interval operations do not repeat their operands' SQL."""
    name = f"_weir_iv{next(_names)}"
    return spark_template(f"element_at(transform(array({{x}}), {name} -> {{b}}), 1)", x=x, b=body(exp.column(name)))


def field(x: exp.Expression, name: str) -> exp.Expression:
    """`(x).months`: one field of an interval expression."""
    return exp.Dot(this=exp.Paren(this=x.copy()), expression=exp.to_identifier(name))


def fields(x: exp.Expression) -> tuple[exp.Expression, exp.Expression, exp.Expression]:
    return field(x, "months"), field(x, "days"), field(x, "micros")


_OUT_OF_RANGE = raise_sql("22008", "interval out of range")
_INT = "BETWEEN -2147483648 AND 2147483647"


def build(m: exp.Expression, d: exp.Expression, t: exp.Expression) -> exp.Expression:
    """The interval of these three fields, each computed wide (BIGINT, DECIMAL or DOUBLE,
    truncated toward zero to an INT / BIGINT as C's casts do): NULL when the time is NULL
    (every builder's fields are NULL together), PostgreSQL's "interval out of range" when a
    field does not fit."""
    return spark_template(
        f"CASE WHEN {{t}} IS NULL THEN {_NULL} WHEN NOT ({{m}} {_INT} AND {{d}} {_INT} AND {{t}} >= -9223372036854775808 "
        f"AND {{t}} < 9223372036854775808) THEN {_OUT_OF_RANGE} ELSE CAST(named_struct('months', CAST({{m}} AS INT), "
        f"'days', CAST({{d}} AS INT), 'micros', CAST({{t}} AS BIGINT)) AS {T.INTERVAL_DDL}) END", m=m, d=d, t=t)


def _wide(x: exp.Expression, ddl: str) -> exp.Expression:
    return spark_template(f"CAST({{x}} AS {ddl})", x=x)


def span(x: exp.Expression) -> exp.Expression:
    """interval_cmp_value: what every comparison, sort and grouping of intervals goes by."""
    m, d, t = fields(x)
    return spark_template(f"((CAST({{m}} AS DECIMAL(38,0)) * 30 + {{d}}) * {_DAY} + {{t}})", m=m, d=d, t=t)


def add(a: exp.Expression, b: exp.Expression, op: str = "+") -> exp.Expression:
    """interval_pl / interval_mi: field by field, no cascade."""
    def body(v: exp.Expression) -> exp.Expression:
        (m1, d1, t1), (m2, d2, t2) = fields(field(v, "a")), fields(field(v, "b"))
        return build(*(spark_template(f"({{x}} {op} {{y}})", x=_wide(x, ddl), y=y)
                       for x, y, ddl in ((m1, m2, "BIGINT"), (d1, d2, "BIGINT"), (t1, t2, "DECIMAL(20,0)"))))

    return bind(spark_template("named_struct('a', {a}, 'b', {b})", a=a, b=b), body)


def neg(a: exp.Expression) -> exp.Expression:
    return bind(a, lambda v: build(*(spark_template("(- {x})", x=_wide(x, ddl))
                                     for x, ddl in zip(fields(v), ("BIGINT", "BIGINT", "DECIMAL(20,0)"), strict=True))))


def scale(a: exp.Expression, factor: exp.Expression, op: str) -> exp.Expression:
    """interval_mul (`*`) / interval_div (`/`) by a float8: each field's product, months'
    fraction cascaded into 30-day days and days' into time, rounded to microseconds
    (TSROUND) as weir.codec.interval_math._cascade does."""
    f = spark_template("CAST({f} AS DOUBLE)", f=factor)
    if op == "/":
        f = spark_template(f"CASE WHEN {{f}} = 0 THEN {raise_sql('22012', 'division by zero')} ELSE {{f}} END", f=f)
    return bind(spark_template("named_struct('x', {x}, 'f', {f})", x=a, f=f),
                lambda v: _scaled(field(v, "x"), field(v, "f"), op))


def _scaled(a: exp.Expression, f: exp.Expression, op: str) -> exp.Expression:
    """The steps bound one by one (bind), so the SQL stays small."""
    m, d, t = fields(a)
    mf, df, tf = (spark_template(f"(CAST({{x}} AS DOUBLE) {op} {{f}})", x=x, f=f) for x in (m, d, t))
    return bind(spark_template("named_struct('mf', {mf}, 'df', {df}, 'tf', {tf})", mf=mf, df=df, tf=tf), _products)


def _products(w: exp.Expression) -> exp.Expression:
    mf, df = field(w, "mf"), field(w, "df")
    months = spark_template(f"CASE WHEN {{x}} IS NULL THEN NULL WHEN {{x}} {_INT} THEN CAST({{x}} AS INT) ELSE {_OUT_OF_RANGE} END", x=mf)
    days0 = spark_template(f"CASE WHEN {{x}} IS NULL THEN NULL WHEN {{x}} {_INT} THEN CAST({{x}} AS INT) ELSE {_OUT_OF_RANGE} END", x=df)
    parts = spark_template("named_struct('mo', {mo}, 'd0', {d0}, 'mf', {mf}, 'df', {df}, 'tf', {tf})",
                           mo=months, d0=days0, mf=mf, df=df, tf=field(w, "tf"))
    return bind(parts, _remainders)


def _remainders(u: exp.Expression) -> exp.Expression:
    mrd = spark_template("(rint((({mf} - {mo}) * 30) * 1000000.0) / 1000000.0)", mf=field(u, "mf"), mo=field(u, "mo"))
    return bind(spark_template("named_struct('u', {u}, 'mrd', {mrd})", u=u, mrd=mrd), _seconds)


def _seconds(z: exp.Expression) -> exp.Expression:
    u, mrd = field(z, "u"), field(z, "mrd")
    sr = spark_template("(rint((({df} - {d0} + {mrd} - CAST({mrd} AS INT)) * 86400) * 1000000.0) / 1000000.0)",
                        df=field(u, "df"), d0=field(u, "d0"), mrd=mrd)
    return bind(spark_template("named_struct('z', {z}, 'sr', {sr})", z=z, sr=sr), _cascaded)


def _cascaded(y: exp.Expression) -> exp.Expression:
    z, sr = field(y, "z"), field(y, "sr")
    u, mrd = field(z, "u"), field(z, "mrd")
    carry = spark_template("CASE WHEN abs({sr}) >= 86400 THEN CAST({sr} / 86400 AS INT) ELSE 0 END", sr=sr)
    days = spark_template("(CAST({d0} AS BIGINT) + {c} + CAST({mrd} AS INT))", d0=field(u, "d0"), c=carry, mrd=mrd)
    time = spark_template("rint({tf} + ({sr} - {c} * 86400) * 1000000.0)", tf=field(u, "tf"), sr=sr, c=carry)
    return build(field(u, "mo"), days, time)


def to_calendar(x: exp.Expression) -> exp.Expression:
    """Spark's calendar interval of the same three fields (timestamp + it moves months,
    then days, then time, as PostgreSQL's timestamp_pl_interval): the time as whole hours
    and the rest, both with the time's sign."""
    m, d, t = fields(x)
    return spark_template(
        "make_interval(0, {m}, 0, {d}, CAST({t} DIV 3600000000 AS INT), 0, "
        "CAST(CAST({t} % 3600000000 AS DECIMAL(20,0)) / 1000000 AS DECIMAL(18,6)))", m=m, d=d, t=t)


def from_timestamps(a: exp.Expression, b: exp.Expression) -> exp.Expression:
    """timestamp_mi: the difference in microseconds, whole days in days (justify_hours)."""
    diff = spark_template("(unix_micros(CAST({a} AS TIMESTAMP)) - unix_micros(CAST({b} AS TIMESTAMP)))", a=a, b=b)
    days = spark_template(f"({{x}} DIV {_DAY})", x=diff)
    return build(exp.Literal.number(0), days, spark_template(f"({{x}} - {{d}} * {_DAY})", x=diff, d=days))


def justify_hours(x: exp.Expression) -> exp.Expression:
    return bind(x, _justify_hours)


def _justify_hours(x: exp.Expression) -> exp.Expression:
    m, d, t = fields(x)
    whole = spark_template(f"({{t}} DIV {_DAY})", t=t)
    days = spark_template("({d} + {w})", d=d, w=whole)
    time = spark_template(f"({{t}} - {{w}} * {_DAY})", t=t, w=whole)
    return _sign_fix(m, days, time, _DAY)


def _triple(m: exp.Expression, d: exp.Expression, t: exp.Expression) -> exp.Expression:
    return spark_template("named_struct('m', {m}, 'd', {d}, 't', {t})", m=m, d=d, t=t)


def _sign_fix(m: exp.Expression, days: exp.Expression, time: exp.Expression, unit: int) -> exp.Expression:
    """days and time of one sign (justify_hours' last step), its inputs bound once."""
    return bind(_triple(m, days, time), lambda v: _one_sign(field(v, "m"), field(v, "d"), field(v, "t"), unit))


def _one_sign(m: exp.Expression, days: exp.Expression, time: exp.Expression, unit: int) -> exp.Expression:
    d2 = spark_template("CASE WHEN {d} > 0 AND {t} < 0 THEN {d} - 1 WHEN {d} < 0 AND {t} > 0 THEN {d} + 1 ELSE {d} END",
                        d=days, t=time)
    t2 = spark_template(f"CASE WHEN {{d}} > 0 AND {{t}} < 0 THEN {{t}} + {unit} WHEN {{d}} < 0 AND {{t}} > 0 "
                        f"THEN {{t}} - {unit} ELSE {{t}} END", d=days, t=time)
    return build(m, d2, t2)


def justify_days(x: exp.Expression) -> exp.Expression:
    return bind(x, _justify_days)


def _justify_days(x: exp.Expression) -> exp.Expression:
    m, d, t = fields(x)
    months = spark_template("({m} + {d} DIV 30)", m=m, d=d)
    days = spark_template("({d} - ({d} DIV 30) * 30)", d=d)
    m2 = spark_template("CASE WHEN {m} > 0 AND {d} < 0 THEN {m} - 1 WHEN {m} < 0 AND {d} > 0 THEN {m} + 1 ELSE {m} END",
                        m=months, d=days)
    d2 = spark_template("CASE WHEN {m} > 0 AND {d} < 0 THEN {d} + 30 WHEN {m} < 0 AND {d} > 0 THEN {d} - 30 ELSE {d} END",
                        m=months, d=days)
    return build(m2, d2, t)


def justify_interval(x: exp.Expression) -> exp.Expression:
    return bind(x, _justify_interval)


def _justify_interval(x: exp.Expression) -> exp.Expression:
    """PostgreSQL 15's interval_justify_interval, step by step (each step's fields bound)."""
    m, d, t = fields(x)
    same = spark_template("(({d} > 0 AND {t} > 0) OR ({d} < 0 AND {t} < 0))", d=d, t=t)
    m1 = spark_template("CASE WHEN {s} THEN CAST({m} AS BIGINT) + {d} DIV 30 ELSE CAST({m} AS BIGINT) END", s=same, m=m, d=d)
    d1 = spark_template("CASE WHEN {s} THEN CAST({d} AS BIGINT) - ({d} DIV 30) * 30 ELSE CAST({d} AS BIGINT) END",
                        s=same, d=d)
    return bind(_triple(m1, d1, t), _justify_interval_days)


def _justify_interval_days(v: exp.Expression) -> exp.Expression:
    m1, d1, t = field(v, "m"), field(v, "d"), field(v, "t")
    w = spark_template(f"({{t}} DIV {_DAY})", t=t)
    t2 = spark_template(f"({{t}} - {{w}} * {_DAY})", t=t, w=w)
    d2 = spark_template("({d} + {w})", d=d1, w=w)
    m3 = spark_template("({m} + {d} DIV 30)", m=m1, d=d2)
    d3 = spark_template("({d} - ({d} DIV 30) * 30)", d=d2)
    return bind(_triple(m3, d3, t2), _justify_interval_signs)


def _justify_interval_signs(v: exp.Expression) -> exp.Expression:
    m3, d3, t2 = field(v, "m"), field(v, "d"), field(v, "t")
    m4 = spark_template("CASE WHEN {m} > 0 AND ({d} < 0 OR ({d} = 0 AND {t} < 0)) THEN {m} - 1 "
                        "WHEN {m} < 0 AND ({d} > 0 OR ({d} = 0 AND {t} > 0)) THEN {m} + 1 ELSE {m} END", m=m3, d=d3, t=t2)
    d4 = spark_template("CASE WHEN {m} > 0 AND ({d} < 0 OR ({d} = 0 AND {t} < 0)) THEN {d} + 30 "
                        "WHEN {m} < 0 AND ({d} > 0 OR ({d} = 0 AND {t} > 0)) THEN {d} - 30 ELSE {d} END", m=m3, d=d3, t=t2)
    return _sign_fix(m4, d4, t2, _DAY)


_UNITS = {"epoch": None, "microsecond": 0, "microseconds": 0, "millisecond": 3, "milliseconds": 3, "second": 6,
          "seconds": 6, "minute": 0, "minutes": 0, "hour": 0, "hours": 0, "day": 0, "days": 0, "month": 0,
          "months": 0, "quarter": 0, "year": 0, "years": 0, "decade": 0, "decades": 0, "century": 0,
          "centuries": 0, "millennium": 0, "millennia": 0}


def extract(unit: str, x: exp.Expression) -> exp.Expression | None:
    """extract(unit FROM interval) (numeric) as interval_part_common; None for a unit this
    does not know."""
    if unit.lower() not in _UNITS:
        return None
    return bind(x, lambda v: _extract(unit.lower(), v))


def _extract(low: str, x: exp.Expression) -> exp.Expression:
    m, d, t = fields(x)
    year = spark_template("({m} DIV 12)", m=m)
    mon = spark_template("({m} % 12)", m=m)
    rest = spark_template("({t} % 60000000)", t=t)  # seconds and their fraction, in microseconds
    values = {
        "microsecond": rest, "millisecond": rest, "second": rest,
        "minute": spark_template("(({t} % 3600000000) DIV 60000000)", t=t),
        "hour": spark_template("({t} DIV 3600000000)", t=t), "day": d, "month": mon,
        "quarter": spark_template("({mo} DIV 3 + 1)", mo=mon), "year": year,
        "decade": spark_template("({y} DIV 10)", y=year), "century": spark_template("({y} DIV 100)", y=year),
        "millennium": spark_template("({y} DIV 1000)", y=year),
    }
    if low == "epoch":
        secs = spark_template("((1461 * CAST({y} AS DECIMAL(38,0)) + 120 * {mo} + 4 * {d}) * 21600)",
                              y=year, mo=mon, d=d)
        return spark_template("CAST(({s} * 1000000 + {t}) / 1000000 AS DECIMAL(38,10))", s=secs, t=t)
    name = low.rstrip("s") if low not in ("millennia", "centuries") else {"millennia": "millennium",
                                                                         "centuries": "century"}[low]
    value, digits = values[name], _UNITS[low]
    if digits:
        return spark_template(f"CAST(CAST({{v}} AS DECIMAL(38,0)) / {10 ** digits} AS DECIMAL(38,10))", v=value)
    return spark_template("CAST({v} AS DECIMAL(38,10))", v=value)


def date_part(unit: str, x: exp.Expression) -> exp.Expression | None:
    """date_part(text, interval) (double precision) as PostgreSQL computes it in doubles:
    the epoch summed field by field, seconds as tm_sec + fsec / 1e6."""
    low = unit.lower()
    if low not in _UNITS:
        return None
    if low == "epoch":
        return bind(x, lambda v: spark_template(
            "((((CAST({t} AS DOUBLE) / 1000000.0) + 31557600.0 * CAST({m} DIV 12 AS DOUBLE)) "
            "+ 2592000.0 * CAST({m} % 12 AS DOUBLE)) + 86400.0 * CAST({d} AS DOUBLE))",
            t=field(v, "micros"), m=field(v, "months"), d=field(v, "days")))
    if _UNITS[low] == 6:
        return bind(x, lambda v: spark_template(
            "(CAST(({t} % 60000000) DIV 1000000 AS DOUBLE) + CAST({t} % 1000000 AS DOUBLE) / 1000000.0)",
            t=field(v, "micros")))
    if _UNITS[low] == 3:
        return bind(x, lambda v: spark_template(
            "(CAST(({t} % 60000000) DIV 1000000 AS DOUBLE) * 1000.0 + CAST({t} % 1000000 AS DOUBLE) / 1000.0)",
            t=field(v, "micros")))
    whole = extract(low, x)
    return None if whole is None else spark_template("CAST({v} AS DOUBLE)", v=whole)


def text(x: exp.Expression) -> exp.Expression:
    return bind(x, _text)


def _text(x: exp.Expression) -> exp.Expression:
    """EncodeInterval, IntervalStyle postgres: '1 year 2 mons -3 days +04:05:06.5'."""
    m, d, t = fields(x)
    y = spark_template("({m} DIV 12)", m=m)
    mo = spark_template("({m} % 12)", m=m)

    def part(v: exp.Expression, unit: str, before: exp.Expression | None) -> exp.Expression:
        sign = spark_template("CASE WHEN {b} AND {v} > 0 THEN '+' ELSE '' END", b=before, v=v) \
            if before is not None else exp.Literal.string("")
        return spark_template(f"CASE WHEN {{v}} <> 0 THEN concat({{s}}, CAST({{v}} AS STRING), "
                              f"CASE WHEN {{v}} = 1 THEN ' {unit}' ELSE ' {unit}s' END) END", v=v, s=sign)

    before_mon = spark_template("({y} < 0)", y=y)
    before_day = spark_template("CASE WHEN {mo} <> 0 THEN {mo} < 0 ELSE {y} < 0 END", mo=mo, y=y)
    before_time = spark_template("CASE WHEN {d} <> 0 THEN {d} < 0 WHEN {mo} <> 0 THEN {mo} < 0 ELSE {y} < 0 END",
                                 d=d, mo=mo, y=y)
    time = spark_template(
        "CASE WHEN {t} <> 0 OR ({y} = 0 AND {mo} = 0 AND {d} = 0) THEN concat("
        "CASE WHEN {t} < 0 THEN '-' WHEN {b} THEN '+' ELSE '' END, "
        "CASE WHEN abs({t}) DIV 3600000000 < 10 THEN '0' ELSE '' END, CAST(abs({t}) DIV 3600000000 AS STRING), ':', "
        "lpad(CAST(abs({t}) DIV 60000000 % 60 AS STRING), 2, '0'), ':', "
        "lpad(CAST(abs({t}) DIV 1000000 % 60 AS STRING), 2, '0'), "
        "CASE WHEN abs({t}) % 1000000 <> 0 THEN regexp_replace(concat('.', lpad(CAST(abs({t}) % 1000000 AS STRING), 6, '0')), "
        "'0+$', '') ELSE '' END) END", t=t, y=y, mo=mo, d=d, b=before_time)
    return spark_template("CASE WHEN {x} IS NOT NULL THEN concat_ws(' ', {py}, {pm}, {pd}, {tm}) END",
                          x=x, py=part(y, "year", None), pm=part(mo, "mon", before_mon),
                          pd=part(d, "day", before_day), tm=time)
