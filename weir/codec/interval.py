"""PostgreSQL's interval as PostgreSQL keeps it: months, days and microseconds, three
separate fields (`'36 hours'` is not `'1 day 12:00:00'`, `'1 month'` is not `'30 days'`),
and its output. Input is weir.codec.interval_parse, arithmetic weir.codec.interval_math.

weir's stored and computed intervals are Python timedeltas (Spark's day-time interval):
`PgInterval.as_timedelta` says when a value means the same thing as one, and the
constant evaluator keeps full PgIntervals for what a timedelta cannot say.
"""

from __future__ import annotations

import datetime as dt
import functools
import struct
from dataclasses import dataclass

from weir.errors import SqlState, WeirError

USEC_PER_DAY = 86_400_000_000
_INTERVAL = struct.Struct(">qii")
# the ranges of PostgreSQL's int32 and int64 fields, and its time units in microseconds
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
US_SEC, US_MIN, US_HOUR = 1_000_000, 60_000_000, 3_600_000_000


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class PgInterval:
    """An interval value with PostgreSQL's three fields. Values compare as PostgreSQL
    compares them, by their span with 30-day months and 24-hour days ('1 month' =
    '30 days'), though they keep and print their fields."""

    months: int = 0
    days: int = 0
    micros: int = 0

    def span(self) -> int:
        return (self.months * 30 + self.days) * USEC_PER_DAY + self.micros

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PgInterval) and self.span() == other.span()

    def __lt__(self, other: PgInterval) -> bool:
        return self.span() < other.span()

    def __hash__(self) -> int:
        return hash(self.span())

    def as_timedelta(self) -> dt.timedelta | None:
        """The timedelta that prints and computes the same, or None if there is none."""
        if self.months or abs(self.micros) >= USEC_PER_DAY:
            return None
        if (self.days > 0 and self.micros < 0) or (self.days < 0 and self.micros > 0):
            return None
        return dt.timedelta(microseconds=self.days * USEC_PER_DAY + self.micros)

    def __neg__(self) -> PgInterval:
        return PgInterval(-self.months, -self.days, -self.micros)

    def __add__(self, other: PgInterval) -> PgInterval:
        return PgInterval(self.months + other.months, self.days + other.days, self.micros + other.micros)

    def __sub__(self, other: PgInterval) -> PgInterval:
        return self + -other


def from_timedelta(v: dt.timedelta) -> PgInterval:
    """A day-time interval as PostgreSQL shows it (whole days in days, same sign)."""
    us = (v.days * 86400 + v.seconds) * 1_000_000 + v.microseconds
    days = abs(us) // USEC_PER_DAY * (-1 if us < 0 else 1)
    return PgInterval(0, days, us - days * USEC_PER_DAY)


def flattened(v: PgInterval) -> dt.timedelta:
    """The timedelta weir stores and computes with (Spark's day-time interval). It has no
    months: a month is not 30 days when added to a date, so a value with months is refused
    rather than changed into another one."""
    if v.months:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        f'interval "{out(v)}" is not supported: weir keeps intervals as days and time '
                        "(Spark's day-time interval), without months or years")
    try:
        return dt.timedelta(microseconds=(v.months * 30 + v.days) * USEC_PER_DAY + v.micros)
    except OverflowError:
        raise WeirError(SqlState.DATETIME_FIELD_OVERFLOW, "interval out of range") from None


def out_of_range() -> WeirError:
    return WeirError(SqlState.DATETIME_FIELD_OVERFLOW, "interval out of range")


def out(v: PgInterval) -> str:
    """IntervalStyle 'postgres' (EncodeInterval): '1 year 2 mons 5 days 03:04:00', '-1 days +02:00:00'."""
    parts: list[str] = []
    before = False
    years, mons = int(v.months / 12), v.months - int(v.months / 12) * 12
    for value, unit in ((years, "year"), (mons, "mon"), (v.days, "day")):
        if value:
            parts.append(f"{'+' if before and value > 0 else ''}{value} {unit}{'' if value == 1 else 's'}")
            before = value < 0
    if not parts or v.micros:
        neg = v.micros < 0
        us = abs(v.micros)
        secs, frac = divmod(us, 1_000_000)
        mins, secs = divmod(secs, 60)
        hours, mins = divmod(mins, 60)
        text = f"{'-' if neg else ('+' if before else '')}{hours:02d}:{mins:02d}:{secs:02d}"
        parts.append(f"{text}.{frac:06d}".rstrip("0") if frac else text)
    return " ".join(parts)


def send(v: PgInterval) -> bytes:
    return _INTERVAL.pack(v.micros, v.days, v.months)
