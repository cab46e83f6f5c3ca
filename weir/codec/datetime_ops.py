"""Date/time operations the replica runs as Python UDFs (one UDF, `weir_datetime`, in
`weir.codec.spark_udfs`), because Spark has no faithful equivalent: PostgreSQL's input
of date/time text (Spark's casts read other formats and give NULL for bad input),
AT TIME ZONE with PostgreSQL's zone names, to_timestamp(double). The coordinator
evaluates constants with the same functions.

Timestamps cross the UDF boundary as microseconds since 1970 (UTC for timestamptz, the
wall-clock reading for timestamp), dates as days since 1970: no time zone conversion
by Spark or Python in between.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from typing import Any

from weir.codec import datetime as cdt
from weir.codec import datetime_fields as df
from weir.codec import datetime_parse as dp
from weir.codec import formatting, interval_parse
from weir.codec import interval as cinterval
from weir.codec import timezones as tzs
from weir.codec import to_char as cto_char
from weir.errors import SqlState, WeirError

EPOCH = dt.datetime(1970, 1, 1)
_US = dt.timedelta(microseconds=1)


def micros(v: dt.datetime) -> int:
    if v.tzinfo is not None:
        v = v.astimezone(dt.UTC).replace(tzinfo=None)
    return (v - EPOCH) // _US


def from_micros(n: int) -> dt.datetime:
    try:
        return EPOCH + dt.timedelta(microseconds=n)
    except OverflowError:
        raise WeirError(SqlState.DATETIME_FIELD_OVERFLOW, "timestamp out of range") from None


def to_timestamp_epoch(seconds: float) -> dt.datetime:
    """to_timestamp(double precision): seconds since 1970 as a timestamptz (naive UTC)."""
    if math.isnan(seconds):
        raise WeirError(SqlState.DATETIME_FIELD_OVERFLOW, "timestamp cannot be NaN")
    if math.isinf(seconds):
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "infinite timestamp values are not supported")
    # PostgreSQL's range (Julian day 0 to its end of timestamps), then weir's (years 1 to 9999)
    if seconds < -210866803200.0 or seconds >= 9224318016000.0:
        raise WeirError(SqlState.DATETIME_FIELD_OVERFLOW, f'timestamp out of range: "{_g(seconds)}"')
    pg = seconds - 946684800.0  # to PostgreSQL's epoch first, as float8, as PostgreSQL does
    us = int(round(pg * 1_000_000)) + 946684800 * 1_000_000
    try:
        return EPOCH + dt.timedelta(microseconds=us)
    except OverflowError:
        raise WeirError(SqlState.DATETIME_FIELD_OVERFLOW, f'timestamp out of range: "{_g(seconds)}"') from None


def _g(x: float) -> str:
    """C's %g."""
    return f"{x:g}"


def _sane_zone(tm: dp.Tm, zone: str) -> int:
    """parse_sane_timezone: a numeric offset (ISO sign), an abbreviation or a zone name, as
    seconds west of UTC at the wall-clock time `tm`."""
    if zone[:1].isdigit():
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                        f'invalid input syntax for type numeric time zone: "{zone}"',
                        hint='Numeric time zones must have "-" or "+" as first character.')
    try:
        return df.decode_timezone(zone)
    except df.DtErr as e:
        if e.code == df.TZDISP_OVERFLOW:
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f'numeric time zone "{zone}" out of range') from None
        if e.code != df.BAD:
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f'time zone "{zone}" not recognized') from None
    ab = tzs.abbrev(zone.lower()[:63])
    if ab is not None:
        return -ab.offset if ab.zone is None else dp.abbrev_offset_at(tm, ab)
    z = tzs.zone(zone)
    if z is None:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f'time zone "{zone}" not recognized')
    return dp.zone_offset_at(tm, z)


def make_timestamp(year: int, month: int, mday: int, hour: int, minute: int, sec: float,
                   zone: str | None = None, zoned: bool = False) -> dt.datetime:
    """make_timestamp / make_timestamptz (make_timestamp_internal): naive, UTC when zoned."""
    tm = dp.Tm(year=year, mon=month, mday=mday)
    try:
        dp.validate_date(df.DATE_M, False, False, False, tm)
    except df.DtErr:
        raise WeirError(SqlState.DATETIME_FIELD_OVERFLOW,
                        f"date field value out of range: {year}-{month:02d}-{mday:02d}") from None
    usec = None if math.isnan(sec) else round(sec * 1_000_000) if not math.isinf(sec) else sec
    if (not 0 <= hour <= 24 or not 0 <= minute < 60 or usec is None or not 0 <= usec <= 60_000_000
            or ((hour * 60 + minute) * 60) * 1_000_000 + usec > 86_400_000_000):
        raise WeirError(SqlState.DATETIME_FIELD_OVERFLOW,
                        f"time field value out of range: {hour}:{minute:02d}:{_g2(sec)}")
    micros = (df.date2j(year, month, mday) - 2440588) * 86_400_000_000 + (hour * 60 + minute) * 60_000_000 + int(usec)
    if zoned and zone is not None:
        tm.hour, tm.min, tm.sec = hour, minute, int(usec // 1_000_000)
        micros += _sane_zone(tm, zone) * 1_000_000
    try:
        return EPOCH + dt.timedelta(microseconds=micros)
    except OverflowError:
        raise WeirError(SqlState.DATETIME_FIELD_OVERFLOW, "timestamp out of range") from None


_TRUNC_UNITS = {
    **{u: "microseconds" for u in ("microsecon", "us", "usec", "microsecond", "microseconds", "useconds", "usecs")},
    **{u: "milliseconds" for u in ("millisecon", "ms", "msec", "millisecond", "milliseconds", "mseconds", "msecs")},
    **{u: "second" for u in ("s", "sec", "second", "seconds", "secs")},
    **{u: "minute" for u in ("m", "min", "mins", "minute", "minutes")},
    **{u: "hour" for u in ("h", "hour", "hours", "hr", "hrs")}, **{u: "day" for u in ("d", "day", "days")},
    **{u: "week" for u in ("w", "week", "weeks")}, **{u: "month" for u in ("mon", "mons", "month", "months")},
    **{u: "quarter" for u in ("qtr", "quarter")}, **{u: "year" for u in ("y", "year", "years", "yr", "yrs")},
    **{u: "decade" for u in ("dec", "decade", "decades", "decs")},
    **{u: "century" for u in ("c", "cent", "century", "centuries")},
    **{u: "millennium" for u in ("mil", "millennia", "millennium", "mils")},
}


def trunc_in_zone(utc: dt.datetime, unit: str, zone: str) -> dt.datetime:
    """date_trunc(unit, timestamptz, zone) (timestamptz_trunc_zone): truncated as a
    wall-clock time in `zone`, back to an instant (naive UTC)."""
    kind = _TRUNC_UNITS.get(unit.lower())
    if kind is None:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f'unit "{unit}" not recognized for type timestamp with time zone')
    r = tzs.resolve(zone)
    z = tzs.dynamic_zone(r) if isinstance(r, tzs.Abbrev) and r.zone is not None else (
        tzs.Zone(r.name, None, r.offset) if isinstance(r, tzs.Abbrev) else r)
    east = z.utcoffset_at_utc(utc)
    local = utc + dt.timedelta(seconds=east)
    y = local.year
    if kind == "microseconds":
        t = local
    elif kind == "milliseconds":
        t = local.replace(microsecond=local.microsecond // 1000 * 1000)
    elif kind in ("second", "minute", "hour"):
        t = local.replace(microsecond=0)
        t = t.replace(second=0) if kind != "second" else t
        t = t.replace(minute=0) if kind == "hour" else t
    elif kind == "week":
        d = local.date() - dt.timedelta(days=local.weekday())
        t = dt.datetime(d.year, d.month, d.day)
    else:
        month = {"day": local.month, "month": local.month, "quarter": (local.month - 1) // 3 * 3 + 1}.get(kind, 1)
        day = local.day if kind == "day" else 1
        year = {"decade": y // 10 * 10, "century": (y + 99) // 100 * 100 - 99,
                "millennium": (y + 999) // 1000 * 1000 - 999}.get(kind, y)
        if year < 1:
            raise WeirError(SqlState.DATETIME_FIELD_OVERFLOW, "timestamp out of range")
        t = dt.datetime(year, month, day)
    if kind in ("microseconds", "milliseconds", "second", "minute", "hour"):
        return t - dt.timedelta(seconds=east)  # the offset is kept below a day
    return z.local_to_utc(t)


def _g2(x: float) -> str:
    """C's %02g."""
    return f"{x:02g}"


def _interval_fields(v: cinterval.PgInterval) -> str:
    """An interval's three fields, `months,days,micros` (weir.sql.interval_ops builds the struct)."""
    return f"{v.months},{v.days},{v.micros}"


OPERATIONS: dict[str, Callable[..., Any]] = {
    "date_in": lambda s: str((cdt.date_in(s) - EPOCH.date()).days),
    "timestamp_in": lambda s: str(micros(cdt.timestamp_in(s))),
    "timestamptz_in": lambda s: str(micros(cdt.timestamptz_in(s))),
    "interval_in": lambda s: _interval_fields(interval_parse.parse(s)),
    # timestamptz AT TIME ZONE z: the wall-clock reading there; timestamp AT TIME ZONE z: the instant
    "zone_tz": lambda zone, us: str(micros(tzs.local_of_utc(from_micros(int(us)), zone))),
    "zone_ts": lambda zone, us: str(micros(tzs.utc_of_local(from_micros(int(us)), zone))),
    "to_timestamp_epoch": lambda x: str(micros(to_timestamp_epoch(float(x)))),
    "to_timestamp": lambda s, fmt: str(micros(formatting.to_timestamp(s, fmt))),
    "to_date": lambda s, fmt: str((formatting.to_date(s, fmt) - EPOCH.date()).days),
    # to_char of a timestamp (or date) and of a timestamptz: microseconds since 1970 and the template
    "to_char": lambda us, fmt: cto_char.to_char(from_micros(int(us)), fmt, with_zone=False),
    "to_char_tz": lambda us, fmt: cto_char.to_char(from_micros(int(us)), fmt, with_zone=True),
}
