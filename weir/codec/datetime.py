"""Date/time codecs for `weir.codec`: date, timestamp, timestamptz and interval.

Text formats follow PostgreSQL 15 with DateStyle 'ISO, MDY', IntervalStyle
'postgres' and TimeZone 'UTC'. Binary formats count from 2000-01-01.
Python cannot hold PostgreSQL's infinities or dates outside years 1..9999,
so those are rejected. Intervals are `datetime.timedelta`: months count as
30 days, and output splits the total into days and a time of the same sign.
"""

from __future__ import annotations

import datetime as dt
import re
import struct
from zoneinfo import ZoneInfo

from weir.codec import interval as cinterval
from weir.errors import SqlState, WeirError

UTC = dt.UTC
PG_EPOCH_ORDINAL = dt.date(2000, 1, 1).toordinal()
PG_EPOCH = dt.datetime(2000, 1, 1)
_USEC_PER_DAY = 86_400_000_000
_I4 = struct.Struct(">i")
_I8 = struct.Struct(">q")
_INTERVAL = struct.Struct(">qii")
_INT32_INF = (2**31 - 1, -(2**31))
_INT64_INF = (2**63 - 1, -(2**63))


def _err(state: str, message: str) -> WeirError:
    return WeirError(state, message)


def _syntax(s: str, tname: str) -> WeirError:
    return _err(SqlState.INVALID_DATETIME_FORMAT, f'invalid input syntax for type {tname}: "{s}"')


def _field_range(s: str) -> WeirError:
    return _err(SqlState.DATETIME_FIELD_OVERFLOW, f'date/time field value out of range: "{s}"')


def _infinite(tname: str) -> WeirError:
    return _err(SqlState.FEATURE_NOT_SUPPORTED, f"infinite {tname} values are not supported")


# ---------------------------------------------------------------- output


def date_out(v: dt.date) -> str:
    if isinstance(v, dt.datetime):
        v = v.date()
    return v.isoformat()


def timestamp_out(v: dt.datetime) -> str:
    if type(v) is dt.date:
        return v.isoformat() + " 00:00:00"
    if v.tzinfo is not None:
        v = v.astimezone(UTC).replace(tzinfo=None)
    s = v.isoformat(" ")
    return s.rstrip("0") if v.microsecond else s


def timestamptz_out(v: dt.datetime) -> str:
    if type(v) is dt.date:
        return v.isoformat() + " 00:00:00+00"
    if v.tzinfo is not None and v.utcoffset():
        v = v.astimezone(UTC)
    s = v.replace(tzinfo=None).isoformat(" ")
    return (s.rstrip("0") if v.microsecond else s) + "+00"


def _micros(v: dt.timedelta) -> int:
    return (v.days * 86400 + v.seconds) * 1_000_000 + v.microseconds


def interval_out(v: dt.timedelta) -> str:
    """PostgreSQL's 'postgres' IntervalStyle: '1 day 02:03:04.5', '-1 days', '00:00:00'."""
    us = _micros(v)
    neg = us < 0
    days, rem = divmod(-us if neg else us, _USEC_PER_DAY)
    parts = []
    if days:
        parts.append(f"{'-' if neg else ''}{days} day{'' if days == 1 and not neg else 's'}")
    if rem or not days:
        secs, frac = divmod(rem, 1_000_000)
        mins, secs = divmod(secs, 60)
        hours, mins = divmod(mins, 60)
        s = f"{'-' if neg and rem else ''}{hours:02d}:{mins:02d}:{secs:02d}"
        parts.append(f"{s}.{frac:06d}".rstrip("0") if frac else s)
    return " ".join(parts)


# ---------------------------------------------------------------- binary


def date_send(v: dt.date) -> bytes:
    if isinstance(v, dt.datetime):
        v = v.date()
    return _I4.pack(v.toordinal() - PG_EPOCH_ORDINAL)


def date_recv(data: bytes) -> dt.date:
    (n,) = _I4.unpack(data)
    if n in _INT32_INF:
        raise _infinite("date")
    try:
        return dt.date.fromordinal(n + PG_EPOCH_ORDINAL)
    except (ValueError, OverflowError):
        raise _err(SqlState.DATETIME_FIELD_OVERFLOW, "date out of range") from None


def timestamp_send(v: dt.datetime) -> bytes:
    if type(v) is dt.date:
        v = dt.datetime(v.year, v.month, v.day)
    if v.tzinfo is not None:
        v = v.astimezone(UTC).replace(tzinfo=None)
    return _I8.pack(_micros(v - PG_EPOCH))


def timestamptz_send(v: dt.datetime) -> bytes:
    if type(v) is dt.date:
        v = dt.datetime(v.year, v.month, v.day)
    if v.tzinfo is not None:
        v = v.astimezone(UTC).replace(tzinfo=None)
    return _I8.pack(_micros(v - PG_EPOCH))


def timestamp_recv(data: bytes) -> dt.datetime:
    (n,) = _I8.unpack(data)
    if n in _INT64_INF:
        raise _infinite("timestamp")
    try:
        return PG_EPOCH + dt.timedelta(microseconds=n)
    except OverflowError:
        raise _err(SqlState.DATETIME_FIELD_OVERFLOW, "timestamp out of range") from None


def timestamptz_recv(data: bytes) -> dt.datetime:
    return timestamp_recv(data).replace(tzinfo=UTC)


def interval_send(v: dt.timedelta) -> bytes:
    us = _micros(v)
    days = abs(us) // _USEC_PER_DAY * (-1 if us < 0 else 1)
    return _INTERVAL.pack(us - days * _USEC_PER_DAY, days, 0)


def interval_recv(data: bytes) -> dt.timedelta:
    time, days, months = _INTERVAL.unpack(data)
    return cinterval.flattened(cinterval.PgInterval(months, days, time))


# ---------------------------------------------------------------- date/timestamp input

_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        ("jan january", "feb february", "mar march", "apr april", "may", "jun june",
         "jul july", "aug august", "sep sept september", "oct october", "nov november",
         "dec december")
    )
    for m in names.split()
}

_TS_RE = re.compile(
    r"""\s*(?:
      (?P<y>\d{4,})-(?P<m>\d{1,2})-(?P<d>\d{1,2})
    | (?P<y2>\d{4})(?P<m2>\d\d)(?P<d2>\d\d)
    | (?P<m3>\d{1,2})/(?P<d3>\d{1,2})/(?P<y3>\d{4,})
    | (?P<mon4>[a-z]{3,9})\.?\s+(?P<d4>\d{1,2}),?\s+(?P<y4>\d{4,})
    | (?P<d5>\d{1,2})[-\s](?P<mon5>[a-z]{3,9})[-\s](?P<y5>\d{4,})
    | (?P<y6>\d{4,})-(?P<mon6>[a-z]{3,9})-(?P<d6>\d{1,2})
    )
    (?:(?:T|\s+)(?P<H>\d{1,2}):(?P<M>\d{1,2})(?::(?P<S>\d{1,2})(?:\.(?P<F>\d*))?)?)?
    \s*(?P<tz>z|[+-]\d{1,2}(?::?\d\d(?::?\d\d)?)?|[a-z][a-z0-9_/+-]*)?
    \s*\Z""",
    re.X | re.I | re.ASCII,
)


def _round_fraction(frac: str) -> int:
    """Microseconds from the digits after a decimal point, rounded half to even."""
    if len(frac) <= 6:
        return int(frac.ljust(6, "0"))
    base = 10 ** (len(frac) - 6)
    q, r = divmod(int(frac), base)
    return q + (2 * r > base or (2 * r == base and q % 2 == 1))


def _tzinfo(tz: str, s: str, tname: str) -> dt.tzinfo | None:
    low = tz.lower()
    if low in ("z", "utc", "gmt", "zulu", "ut"):
        return UTC
    if tz[0] in "+-":
        body = tz[1:]
        if ":" in body:
            parts = body.split(":")
        elif len(body) > 4:
            parts = [body[:-4], body[-4:-2], body[-2:]]
        elif len(body) > 2:
            parts = [body[:-2], body[-2:]]
        else:
            parts = [body]
        h, m, sec = (int(p) for p in [*parts, "0", "0"][:3])
        if h > 15 or m > 59 or sec > 59:
            raise _err("22009", f'time zone displacement out of range: "{s}"')
        off = dt.timedelta(hours=h, minutes=m, seconds=sec)
        return dt.timezone(-off if tz[0] == "-" else off)
    if low in ("bc", "ad"):
        if low == "bc":
            raise _err(SqlState.DATETIME_FIELD_OVERFLOW, f'{tname.split(" ")[0]} out of range: "{s}"')
        return None
    try:
        return ZoneInfo(tz)
    except Exception:
        raise _err(SqlState.INVALID_PARAMETER_VALUE, f'time zone "{tz}" not recognized') from None


def _special(low: str, tname: str) -> dt.datetime | None:
    now = dt.datetime.now(UTC).replace(tzinfo=None)
    today = dt.datetime(now.year, now.month, now.day)
    if low == "epoch":
        return dt.datetime(1970, 1, 1)
    if low == "now":
        return now
    if low == "today":
        return today
    if low == "tomorrow":
        return today + dt.timedelta(days=1)
    if low == "yesterday":
        return today - dt.timedelta(days=1)
    if low in ("infinity", "+infinity", "-infinity"):
        raise _infinite(tname.split(" ")[0])
    return None


def local_to_utc(local: dt.datetime, tz: dt.tzinfo) -> dt.datetime:
    """A wall-clock time in `tz` as naive UTC, with PostgreSQL's choice at DST changes: a
    time that happens twice (clocks set back) takes the offset after the change, a time
    that never happens (clocks set forward) the offset before it."""
    early, late = local.replace(tzinfo=tz, fold=0), local.replace(tzinfo=tz, fold=1)
    before, after = early.utcoffset(), late.utcoffset()
    # fold=0 has the offset before a change, fold=1 the one after (PEP 495)
    twice = before is not None and after is not None and before > after
    chosen = late if twice else early
    return chosen.astimezone(UTC).replace(tzinfo=None)


def parse_timestamp(s: str, tname: str = "timestamp") -> dt.datetime:
    """A naive datetime (UTC for timestamptz) from PostgreSQL timestamp input syntax.

    tname ('date', 'timestamp', 'timestamp with time zone') selects error
    messages and whether a trailing time zone converts the value (only for
    timestamptz; PostgreSQL ignores it for timestamp).
    """
    m = _TS_RE.match(s)
    if m is None:
        special = _special(s.strip().lower(), tname)
        if special is None:
            raise _syntax(s, tname)
        return special
    g = m.group
    if g("y") is not None:
        y, mo, d = g("y"), g("m"), g("d")
    elif g("y2") is not None:
        y, mo, d = g("y2"), g("m2"), g("d2")
    elif g("y3") is not None:
        y, mo, d = g("y3"), g("m3"), g("d3")
    else:
        y, mon, d = next(
            (g("y" + k), g("mon" + k), g("d" + k)) for k in "456" if g("y" + k) is not None
        )
        mo = _MONTHS.get(mon.lower())
        if mo is None:
            raise _syntax(s, tname)
    year, month, day = int(y), int(mo), int(d)
    hour = minute = sec = usec = 0
    if g("H") is not None:
        hour, minute = int(g("H")), int(g("M"))
        sec = int(g("S") or 0)
        usec = _round_fraction(g("F") or "")
        if minute > 59 or sec > 60 or hour > 24 or (hour == 24 and (minute or sec or usec)):
            raise _field_range(s)
    if year == 0 or not 1 <= month <= 12 or not 1 <= day <= 31:
        raise _field_range(s)
    if year > 9999:
        what = "date" if tname == "date" else "timestamp"
        raise _err(SqlState.DATETIME_FIELD_OVERFLOW, f'{what} out of range: "{s}"')
    tz = _tzinfo(g("tz"), s, tname) if g("tz") else None
    try:
        base = dt.datetime(year, month, day)
        value = base + dt.timedelta(hours=hour, minutes=minute, seconds=sec, microseconds=usec)
        if tz is not None and tname == "timestamp with time zone":
            value = local_to_utc(value, tz)
    except ValueError:
        raise _field_range(s) from None
    except OverflowError:
        raise _err(SqlState.DATETIME_FIELD_OVERFLOW, f'timestamp out of range: "{s}"') from None
    return value


def date_in(s: str) -> dt.date:
    return parse_timestamp(s, "date").date()


def timestamp_in(s: str) -> dt.datetime:
    return parse_timestamp(s, "timestamp")


def timestamptz_in(s: str) -> dt.datetime:
    return parse_timestamp(s, "timestamp with time zone").replace(tzinfo=UTC)


# ---------------------------------------------------------------- interval input


def parse_interval(s: str) -> dt.timedelta:
    """A timedelta from PostgreSQL interval input ('1 day 02:00:00', '2 hours', 'P1D', ...):
    PostgreSQL's three fields (one parser, `interval.parse`), months counted as 30 days."""
    return cinterval.flattened(cinterval.parse(s))
