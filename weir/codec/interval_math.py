"""PostgreSQL's interval arithmetic on the three fields (interval_pl / _um / _mul / _div,
justify_*, extract, date_part), exactly as PostgreSQL 15 computes it: what the
coordinator's constant evaluator runs. Values and output: weir.codec.interval; input:
weir.codec.interval_parse."""

from __future__ import annotations

from weir.codec.interval import (
    INT32,
    INT64,
    US_HOUR,
    US_MIN,
    USEC_PER_DAY,
    PgInterval,
    out_of_range,
)
from weir.codec.interval_parse import UNIT_WORDS
from weir.errors import SqlState, WeirError


def justify_hours(v: PgInterval) -> PgInterval:
    days, micros = v.days + int(v.micros / USEC_PER_DAY), v.micros - int(v.micros / USEC_PER_DAY) * USEC_PER_DAY
    if days > 0 and micros < 0:
        days, micros = days - 1, micros + USEC_PER_DAY
    elif days < 0 and micros > 0:
        days, micros = days + 1, micros - USEC_PER_DAY
    return PgInterval(v.months, days, micros)


def justify_days(v: PgInterval) -> PgInterval:
    months, days = v.months + int(v.days / 30), v.days - int(v.days / 30) * 30
    if months > 0 and days < 0:
        months, days = months - 1, days + 30
    elif months < 0 and days > 0:
        months, days = months + 1, days - 30
    return PgInterval(months, days, v.micros)


def _trunc(a: int, b: int) -> int:
    """C's integer division (toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _checked(months: int, days: int, micros: int) -> PgInterval:
    if not (INT32[0] <= months <= INT32[1] and INT32[0] <= days <= INT32[1] and INT64[0] <= micros <= INT64[1]):
        raise out_of_range()
    return PgInterval(months, days, micros)


def add(a: PgInterval, b: PgInterval) -> PgInterval:
    return _checked(a.months + b.months, a.days + b.days, a.micros + b.micros)


def neg(a: PgInterval) -> PgInterval:
    return _checked(-a.months, -a.days, -a.micros)


def _tsround(x: float) -> float:
    return round(x * 1_000_000.0) / 1_000_000.0


def _int_of(x: float) -> int:
    if x != x or not INT32[0] <= x <= INT32[1]:
        raise out_of_range()
    return int(x)


def _cascade(v: PgInterval, months_f: float, days_f: float, time_f: float) -> PgInterval:
    """interval_mul / interval_div after their products: fractions of months cascade into
    days (30-day months), of days into time (24-hour days), never upward."""
    months = _int_of(months_f)
    days = _int_of(days_f)
    month_remainder_days = _tsround((months_f - months) * 30)
    sec_remainder = _tsround((days_f - days + month_remainder_days - int(month_remainder_days)) * 86400)
    if abs(sec_remainder) >= 86400:
        days += int(sec_remainder / 86400)
        sec_remainder -= int(sec_remainder / 86400) * 86400
    days += int(month_remainder_days)
    t = round(time_f + sec_remainder * 1_000_000)
    if not -(2.0**63) <= t < 2.0**63:
        raise out_of_range()
    return _checked(months, days, int(t))


def mul(v: PgInterval, factor: float) -> PgInterval:
    """interval * float8 (PostgreSQL's interval_mul)."""
    return _cascade(v, v.months * factor, v.days * factor, v.micros * factor)


def div(v: PgInterval, factor: float) -> PgInterval:
    """interval / float8 (PostgreSQL's interval_div)."""
    if factor == 0.0:
        raise WeirError(SqlState.DIVISION_BY_ZERO, "division by zero")
    return _cascade(v, v.months / factor, v.days / factor, v.micros / factor)


def make_interval(years: int, months: int, weeks: int, days: int, hours: int, mins: int, secs: float) -> PgInterval:
    """PostgreSQL 15's make_interval: secs rounded to microseconds (rint), inf/NaN refused."""
    if secs != secs or secs in (float("inf"), float("-inf")):
        raise out_of_range()
    micros = round(secs * 1_000_000.0)
    return _checked(years * 12 + months, weeks * 7 + days, hours * 3_600_000_000 + mins * 60_000_000 + micros)


def justify_interval(v: PgInterval) -> PgInterval:
    months, days, micros = v.months, v.days, v.micros
    if (days > 0 and micros > 0) or (days < 0 and micros < 0):
        whole = _trunc(days, 30)
        days -= whole * 30
        months += whole
    whole = _trunc(micros, USEC_PER_DAY)
    micros -= whole * USEC_PER_DAY
    days += whole
    whole = _trunc(days, 30)
    days -= whole * 30
    months += whole
    if months > 0 and (days < 0 or (days == 0 and micros < 0)):
        days, months = days + 30, months - 1
    elif months < 0 and (days > 0 or (days == 0 and micros > 0)):
        days, months = days - 30, months + 1
    if days > 0 and micros < 0:
        micros, days = micros + USEC_PER_DAY, days - 1
    elif days < 0 and micros > 0:
        micros, days = micros - USEC_PER_DAY, days + 1
    return _checked(months, days, micros)


_EXTRACT_UNITS = {**{k: v for k, v in UNIT_WORDS.items() if v not in ("ago", "ignore")}, "epoch": "epoch"}


def extract(unit: str, v: PgInterval) -> tuple[int, int]:
    """EXTRACT(unit FROM interval) as PostgreSQL's interval_part_common: (value, scale),
    the numeric value * 10^-scale (date_part is its double)."""
    low = unit.lower()
    name = _EXTRACT_UNITS.get(low[:10]) if low != "epoch" else "epoch"
    if name is None:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f'unit "{low}" not recognized for type interval')
    year, mon = _trunc(v.months, 12), v.months - _trunc(v.months, 12) * 12
    t = v.micros
    hour = _trunc(t, US_HOUR)
    t -= hour * US_HOUR
    minute = _trunc(t, US_MIN)
    t -= minute * US_MIN  # seconds and their fraction, in microseconds
    if name == "epoch":
        secs = (1461 * _trunc(v.months, 12) + 120 * (v.months - _trunc(v.months, 12) * 12) + 4 * v.days) * 21600
        return secs * 1_000_000 + v.micros, 6
    results = {"microsecond": (t, 0), "millisecond": (t, 3), "second": (t, 6), "minute": (minute, 0),
               "hour": (hour, 0), "day": (v.days, 0), "month": (mon, 0), "quarter": (_trunc(mon, 3) + 1, 0),
               "year": (year, 0), "decade": (_trunc(year, 10), 0), "century": (_trunc(year, 100), 0),
               "millennium": (_trunc(year, 1000), 0)}
    if name not in results:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f'unit "{low}" not supported for type interval')
    return results[name]


def date_part(unit: str, v: PgInterval) -> float:
    """date_part(text, interval): extract's value as PostgreSQL computes it in doubles."""
    value, scale = extract(unit, v)
    if unit.lower() == "epoch":
        r = v.micros / 1000000.0
        r += (365.25 * 86400) * _trunc(v.months, 12)
        r += (30.0 * 86400) * (v.months - _trunc(v.months, 12) * 12)
        r += 86400.0 * v.days
        return r
    if scale == 6:  # second: tm_sec + fsec / 1000000.0
        return float(_trunc(value, 1_000_000)) + (value - _trunc(value, 1_000_000) * 1_000_000) / 1000000.0
    if scale == 3:  # millisecond: tm_sec * 1000.0 + fsec / 1000.0
        return _trunc(value, 1_000_000) * 1000.0 + (value - _trunc(value, 1_000_000) * 1_000_000) / 1000.0
    return float(value)
