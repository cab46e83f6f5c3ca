"""PostgreSQL's interval as PostgreSQL keeps it: months, days and microseconds, three
separate fields (`'36 hours'` is not `'1 day 12:00:00'`, `'1 month'` is not `'30 days'`).

weir's stored and computed intervals are Python timedeltas (Spark's day-time interval):
`PgInterval.as_timedelta` says when a value means the same thing as one, and the
constant evaluator keeps full PgIntervals for what a timedelta cannot say.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import struct
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

from weir.errors import SqlState, WeirError

USEC_PER_DAY = 86_400_000_000
_INTERVAL = struct.Struct(">qii")


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


def _syntax(s: str) -> WeirError:
    return WeirError(SqlState.INVALID_DATETIME_FORMAT, f'invalid input syntax for type interval: "{s}"')


_UNITS: dict[str, tuple[str, int]] = {}
for _names, _kind, _factor in (
    ("microsecond microseconds usec usecs us", "us", 1),
    ("millisecond milliseconds msec msecs ms", "us", 1000),
    ("second seconds sec secs s", "us", 1_000_000),
    ("minute minutes min mins m", "us", 60_000_000),
    ("hour hours hr hrs h", "us", 3_600_000_000),
    ("day days d", "day", 1),
    ("week weeks w", "day", 7),
    ("month months mon mons", "mon", 1),
    ("year years yr yrs y", "year", 1),
    ("decade decades", "year", 10),
    ("century centuries", "year", 100),
    ("millennium millennia millenniums", "year", 1000),
):
    for _n in _names.split():
        _UNITS[_n] = (_kind, _factor)

_NUM = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"
_NUM_UNIT_RE = re.compile(rf"({_NUM})([a-z]*)\Z", re.ASCII)
_TIME_RE = re.compile(r"([+-]?)(\d+):(\d+)(?::(\d+))?(?:\.(\d*))?\Z", re.ASCII)
_YM_RE = re.compile(r"([+-]?)(\d+)-(\d+)\Z", re.ASCII)
_ISO_RE = re.compile(rf"p(?:({_NUM})y)?(?:({_NUM})m)?(?:({_NUM})w)?(?:({_NUM})d)?"
                     rf"(?:t(?:({_NUM})h)?(?:({_NUM})m)?(?:({_NUM})s)?)?\Z", re.ASCII)


class _Acc:
    """Field accumulator with PostgreSQL's cascading of fractions (AdjustFract*)."""

    def __init__(self) -> None:
        self.months = 0
        self.days = 0
        self.micros = Decimal(0)

    def add(self, kind: str, value: Decimal) -> None:
        if kind == "year":
            self.months += int((value * 12).to_integral_value(ROUND_HALF_EVEN))
        elif kind == "mon":
            whole = int(value)
            self.months += whole
            self._days(( value - whole) * 30)
        elif kind == "day":
            self._days(value)
        else:
            self.micros += value

    def _days(self, value: Decimal) -> None:
        whole = int(value)
        self.days += whole
        self.micros += (value - whole) * USEC_PER_DAY


def parse(s: str) -> PgInterval:
    """PostgreSQL interval input ('1 day 02:00:00', '.001 second', '1-2 3:4 5 day', 'P1D')."""
    low = s.strip().lower()
    acc = _Acc()
    try:
        if low.startswith("p"):
            m = _ISO_RE.match(low)
            if m is None or (not any(m.groups()) and low != "pt"):
                raise _syntax(s)
            kinds = (("year", 1), ("mon", 1), ("day", 7), ("day", 1), ("us", 3_600_000_000),
                     ("us", 60_000_000), ("us", 1_000_000))
            for part, (kind, factor) in zip(m.groups(), kinds, strict=True):
                if part:
                    acc.add(kind, Decimal(part) * factor)
        else:
            _parse_words(low, s, acc)
    except InvalidOperation:
        raise _syntax(s) from None
    micros = int(acc.micros.to_integral_value(ROUND_HALF_EVEN))
    if not (-(2**31) <= acc.months < 2**31 and -(2**31) <= acc.days < 2**31 and -(2**63) <= micros < 2**63):
        raise WeirError(SqlState.DATETIME_FIELD_OVERFLOW, f'interval field value out of range: "{s}"')
    return PgInterval(acc.months, acc.days, micros)


def _parse_words(low: str, s: str, acc: _Acc) -> None:
    tokens = low[1:].split() if low.startswith("@") else low.split()
    negate = bool(tokens) and tokens[-1] == "ago"
    if negate:
        tokens.pop()
    if not tokens:
        raise _syntax(s)
    seen: set[str] = set()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        tm = _TIME_RE.match(tok)
        if tm is not None:
            if "time" in seen:
                raise _syntax(s)
            seen.add("time")
            acc.add("us", _time_micros(tm))
            continue
        ym = _YM_RE.match(tok)
        if ym is not None:
            if "ym" in seen:
                raise _syntax(s)
            seen.add("ym")
            months = int(ym.group(2)) * 12 + int(ym.group(3))
            acc.months += -months if ym.group(1) == "-" else months
            continue
        nm = _NUM_UNIT_RE.match(tok)
        if nm is None:
            raise _syntax(s)
        number, unit = Decimal(nm.group(1)), nm.group(2)
        if not unit and i < len(tokens) and tokens[i] in _UNITS:
            unit = tokens[i]
            i += 1
        if not unit:
            if i < len(tokens) and _TIME_RE.match(tokens[i]) and "day" not in seen:
                unit = "day"
            elif i == len(tokens) and "us1000000" not in seen:
                unit = "second"
            else:
                raise _syntax(s)
        if unit not in _UNITS:
            raise _syntax(s)
        kind, factor = _UNITS[unit]
        key = f"{kind}{factor}"
        if key in seen:
            raise _syntax(s)
        seen.add(key)
        seen.add(unit)
        acc.add(kind, number * factor)
    if negate:
        acc.months, acc.days, acc.micros = -acc.months, -acc.days, -acc.micros


def _time_micros(m: re.Match[str]) -> Decimal:
    sign, a, b, c, frac = m.groups()
    if c is None and frac is not None:  # MM:SS.fff
        total = (int(a) * 60 + int(b)) * 1_000_000
    else:
        total = (int(a) * 3600 + int(b) * 60 + int(c or 0)) * 1_000_000
    exact = Decimal(total) + (Decimal("0." + frac) * 1_000_000 if frac else 0)
    return -exact if sign == "-" else exact


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
