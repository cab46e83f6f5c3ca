"""Date/time codecs for `weir.codec`: date, timestamp, timestamptz and interval.

Text formats follow PostgreSQL 15 with DateStyle 'ISO, MDY', IntervalStyle
'postgres' and TimeZone 'UTC'. Binary formats count from 2000-01-01.
Python cannot hold PostgreSQL's infinities or dates outside years 1..9999,
so those are rejected. Intervals are `datetime.timedelta`: months count as
30 days, and output splits the total into days and a time of the same sign.
"""

from __future__ import annotations

import datetime as dt
import struct

from weir.codec import datetime_parse as dp
from weir.codec import interval as cinterval
from weir.codec import interval_parse
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

_UNIX_JDATE = 2440588  # date2j(1970, 1, 1)


def _out_of_range(what: str, s: str) -> WeirError:
    return _err(SqlState.DATETIME_FIELD_OVERFLOW, f'{what} out of range: "{s}"')


def parse_timestamp(s: str, tname: str = "timestamp") -> dt.datetime:
    """A naive datetime (UTC for timestamptz) from PostgreSQL's date/time input
    (`weir.codec.datetime_parse`: date_in, timestamp_in, timestamptz_in).

    tname ('date', 'timestamp', 'timestamp with time zone') selects error messages
    and whether a time zone in the input converts the value (only timestamptz;
    PostgreSQL reads and ignores it for the others). Values Python cannot hold (BC
    years, years past 9999) are 22008 out of range; infinities are refused (0A000).
    """
    try:
        tm = dp.decode(s, dt.datetime.now(UTC).replace(tzinfo=None))
    except dp.DtErr as e:
        raise dp.error(e, s, tname) from None
    date = tname == "date"
    if tm.dtype == "epoch":
        return dt.datetime(1970, 1, 1)
    if tm.dtype in ("late", "early"):
        raise _infinite(tname.split(" ")[0])
    if tm.dtype != "date":
        raise dp.error(dp.DtErr(dp.BAD), s, tname)
    what = "date" if date else "timestamp"
    if not dp.valid_julian(tm.year, tm.mon, tm.mday):
        raise _out_of_range(what, s)
    days = dp.date2j(tm.year, tm.mon, tm.mday) - _UNIX_JDATE
    if date:
        micros = days * _USEC_PER_DAY
    else:
        micros = days * _USEC_PER_DAY + ((tm.hour * 60 + tm.min) * 60 + tm.sec) * 1_000_000 + tm.fsec
        if tname == "timestamp with time zone":
            micros += tm.tz * 1_000_000
    try:
        value = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)
    except OverflowError:
        raise _out_of_range(what, s) from None
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
    PostgreSQL's three fields (one parser, `interval_parse.parse`), months counted as 30 days."""
    return cinterval.flattened(interval_parse.parse(s))
