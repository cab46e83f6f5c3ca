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


def _field_overflow(s: str) -> WeirError:
    return WeirError(SqlState.INTERVAL_FIELD_OVERFLOW, f'interval field value out of range: "{s}"')


def out_of_range() -> WeirError:
    return WeirError(SqlState.DATETIME_FIELD_OVERFLOW, "interval out of range")


# ---------------------------------------------------------------- input
# A port of PostgreSQL 15's interval_in: ParseDateTime's fields, DecodeInterval read right
# to left (units before their values, the typmod's last field for a bare number),
# DecodeISO8601Interval, then AdjustIntervalForTypmod. Fractions cascade as PostgreSQL's
# AdjustFract* do, in doubles (Python's float is the same IEEE double).

FIELDS = ("year", "month", "day", "hour", "minute", "second")
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
US_SEC, US_MIN, US_HOUR = 1_000_000, 60_000_000, 3_600_000_000

# deltatktbl: unit names (matched on their first 10 characters, TOKMAXLEN)
UNIT_WORDS = {}
for _names, _unit in (
    ("c cent centuries century", "century"), ("d day days", "day"),
    ("dec decade decades decs", "decade"), ("h hour hours hr hrs", "hour"),
    ("m min mins minute minutes", "minute"), ("microsecon us usec usecs useconds", "microsecond"),
    ("mil millennia millennium mils", "millennium"), ("millisecon ms msec msecs mseconds", "millisecond"),
    ("mon mons month months", "month"), ("qtr quarter", "quarter"),
    ("s sec secs second seconds", "second"), ("timezone timezone_h timezone_m", "timezone"),
    ("w week weeks", "week"), ("y year years yr yrs", "year"),
):
    for _n in _names.split():
        UNIT_WORDS[_n] = _unit
UNIT_WORDS["ago"] = "ago"
UNIT_WORDS["@"] = "ignore"
# datetktbl's words: a word followed by a digit that is none of these starts a date field
_DATE_WORDS = frozenset(
    "-infinity ad allballs am apr april at aug august bc d dec december dow doy dst epoch feb february fri "
    "friday h infinity isodow isoyear j jan january jd jul julian july jun june m mar march may mm mon "
    "monday nov november now oct october on pm s sat saturday sep sept september sun sunday t thu thur "
    "thurs thursday today tomorrow tue tues tuesday wed wednesday weds y yesterday".split())
_TIME_MASK = frozenset(("hour", "minute", "second", "millisecond", "microsecond"))
_SECS_MASK = frozenset(("second", "millisecond", "microsecond"))


class _Bad(Exception):
    """DTERR_BAD_FORMAT"""


class _Overflow(Exception):
    """DTERR_FIELD_OVERFLOW"""


def _fields(s: str) -> list[tuple[str, str]]:
    """ParseDateTime: (text, kind) fields, kind number, date, time, tz, string or special."""
    out_: list[tuple[str, str]] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c.isspace():
            i += 1
            continue
        if c.isascii() and c.isdigit():
            j = i + 1
            while j < n and s[j].isdigit() and s[j].isascii():
                j += 1
            if j < n and s[j] == ":":
                kind = "time"
                j += 1
                while j < n and (s[j] in ":." or (s[j].isascii() and s[j].isdigit())):
                    j += 1
            elif j < n and s[j] in "-/.":
                delim = s[j]
                j += 1
                if j < n and s[j].isascii() and s[j].isdigit():
                    kind = "number" if delim == "." else "date"
                    while j < n and s[j].isascii() and s[j].isdigit():
                        j += 1
                    if j < n and s[j] == delim:
                        kind = "date"
                        j += 1
                        while j < n and ((s[j].isascii() and s[j].isdigit()) or s[j] == delim):
                            j += 1
                else:
                    kind = "date"
                    while j < n and ((s[j].isascii() and s[j].isalnum()) or s[j] == delim):
                        j += 1
            else:
                kind = "number"
            out_.append((s[i:j].lower(), kind))
            i = j
        elif c == ".":
            j = i + 1
            while j < n and s[j].isascii() and s[j].isdigit():
                j += 1
            out_.append((s[i:j], "number"))
            i = j
        elif c.isascii() and c.isalpha():
            j = i + 1
            while j < n and s[j].isascii() and s[j].isalpha():
                j += 1
            word = s[i:j].lower()
            if j < n and (s[j] in "-/." or ((s[j] == "+" or (s[j].isascii() and s[j].isdigit()))
                                             and word not in _DATE_WORDS)):
                j += 1
                while j < n and (s[j] in "+-/_.:" or (s[j].isascii() and s[j].isalnum())):
                    j += 1
                out_.append((s[i:j].lower(), "date"))
            else:
                out_.append((word, "string"))
            i = j
        elif c in "+-":
            j = i + 1
            while j < n and s[j].isspace():
                j += 1
            if j < n and s[j].isascii() and s[j].isdigit():
                k = j + 1
                while k < n and (s[k] in ":.-" or (s[k].isascii() and s[k].isdigit())):
                    k += 1
                out_.append((c + s[j:k], "tz"))
            elif j < n and s[j].isascii() and s[j].isalpha():
                k = j + 1
                while k < n and s[k].isascii() and s[k].isalpha():
                    k += 1
                out_.append((c + s[j:k].lower(), "special"))
            else:
                raise _Bad
            i = k
        elif c.isascii() and not c.isalnum() and c.isprintable():  # ispunct: a delimiter
            i += 1
        else:
            raise _Bad
    return out_


def _strtol(s: str, i: int, bounds: tuple[int, int]) -> tuple[int, int]:
    """strtol from s[i]: (value, end); end == i when there are no digits."""
    j = i
    if j < len(s) and s[j] in "+-":
        j += 1
    k = j
    while k < len(s) and s[k].isascii() and s[k].isdigit():
        k += 1
    if k == j:
        return 0, i
    v = int(s[i:k])
    if not bounds[0] <= v <= bounds[1]:
        raise _Overflow
    return v, k


def _fraction(s: str) -> float:
    """ParseFraction: '.', '.5' (strtod of the rest, which must all be read)."""
    if s == ".":
        return 0.0
    if not re.fullmatch(r"\.\d*(?:[eE][+-]?\d+)?", s, re.ASCII):
        raise _Bad
    return float(s)


class _Itm:
    def __init__(self) -> None:
        self.usec = 0
        self.mday = 0
        self.mon = 0
        self.year = 0

    def _chk(self, v: int, bounds: tuple[int, int]) -> int:
        if not bounds[0] <= v <= bounds[1]:
            raise _Overflow
        return v

    def fract_micros(self, frac: float, scale: int) -> None:
        if frac == 0:
            return
        frac *= scale
        usec = int(frac)
        frac -= usec
        usec += int(round(frac))
        self.usec = self._chk(self.usec + usec, INT64)

    def fract_days(self, frac: float, scale: int) -> None:
        if frac == 0:
            return
        frac *= scale
        extra = int(frac)
        self.mday = self._chk(self.mday + extra, INT32)
        frac -= extra
        self.fract_micros(frac, USEC_PER_DAY)

    def fract_years(self, frac: float, scale: int) -> None:
        self.mon = self._chk(self.mon + int(round(frac * scale * 12)), INT32)

    def micros(self, val: int, fval: float, scale: int) -> None:
        self.usec = self._chk(self.usec + self._chk(val * scale, INT64), INT64)
        self.fract_micros(fval, scale)

    def days(self, val: int, scale: int) -> None:
        self.mday = self._chk(self.mday + self._chk(self._chk(val, INT32) * scale, INT32), INT32)

    def months(self, val: int) -> None:
        self.mon = self._chk(self.mon + self._chk(val, INT32), INT32)

    def years(self, val: int, scale: int) -> None:
        self.year = self._chk(self.year + self._chk(self._chk(val, INT32) * scale, INT32), INT32)


def _time(text: str, rng: frozenset[str] | None, itm: _Itm) -> None:
    """DecodeTimeForInterval: hh:mm[:ss[.fff]] (mm:ss for MINUTE TO SECOND and mm:ss.fff)."""
    hour, i = _strtol(text, 0, INT64)
    if i >= len(text) or text[i] != ":":
        raise _Bad
    minute, i = _strtol(text, i + 1, INT32)
    fsec = 0
    if i == len(text):
        sec = 0
        if rng == frozenset(("minute", "second")):
            hour, minute, sec = 0, hour, minute
    elif text[i] == ".":
        fsec = int(round(_fraction(text[i:]) * 1_000_000))
        hour, minute, sec = 0, hour, minute
        if not INT32[0] <= minute <= INT32[1]:
            raise _Overflow
    elif text[i] == ":":
        sec, i = _strtol(text, i + 1, INT32)
        if i < len(text):
            if text[i] != ".":
                raise _Bad
            fsec = int(round(_fraction(text[i:]) * 1_000_000))
    else:
        raise _Bad
    if hour < 0 or not 0 <= minute <= 59 or not 0 <= sec <= 60 or not 0 <= fsec <= 1_000_000:
        raise _Overflow
    usec = fsec + hour * US_HOUR + minute * US_MIN + sec * US_SEC
    itm.usec = itm._chk(usec, INT64)


def _default_unit(rng: frozenset[str] | None) -> str:
    """The unit of a bare rightmost number: the typmod's last field (a second without one)."""
    if rng is None:
        return "second"
    for f in reversed(FIELDS):
        if f in rng:
            return f
    return "second"


def _decode(text: str, rng: frozenset[str] | None) -> _Itm:
    fields = _fields(text)
    itm = _Itm()
    fmask: set[str] = set()
    unit: str | None = None
    before = False
    for i in range(len(fields) - 1, -1, -1):
        f, kind = fields[i]
        tmask: frozenset[str] = frozenset()
        if kind == "time" or (kind == "tz" and ":" in f[1:] and _try_time(f, rng, itm)):
            if kind == "time":
                _time(f, rng, itm)
            tmask = _TIME_MASK
            unit = "day"
        elif kind in ("tz", "date", "number"):
            if unit is None:
                unit = _default_unit(rng)
            val, j = _strtol(f, 0, INT64)
            if j < len(f) and f[j] == "-":  # SQL years-months
                val2, k = _strtol(f, j + 1, INT32)
                if val2 < 0 or val2 >= 12:
                    raise _Overflow
                if k != len(f):
                    raise _Bad
                unit = "month"
                val = itm._chk(val * 12 + (-val2 if f[0] == "-" else val2), INT64)
                fval = 0.0
            elif j < len(f) and f[j] == ".":
                fval = _fraction(f[j:])
                if f[0] == "-":
                    fval = -fval
            elif j == len(f):
                fval = 0.0
            else:
                raise _Bad
            tmask = _apply(unit, val, fval, itm)
            if unit == "hour":
                unit = "day"
        else:  # string, special
            word = UNIT_WORDS.get(f[:10])
            if word == "ignore":
                continue
            if word is None or word in ("timezone",):
                raise _Bad
            if word == "ago":
                before = True  # anywhere in PostgreSQL 15 (16 takes it only last)
                unit = "none"  # a number just before it has no unit
            else:
                unit = word
        if tmask & fmask:
            raise _Bad
        fmask |= tmask
    if not fmask:
        raise _Bad
    if before:
        itm.usec, itm.mday, itm.mon, itm.year = -itm.usec, -itm.mday, -itm.mon, -itm.year
    return itm


def _try_time(f: str, rng: frozenset[str] | None, itm: _Itm) -> bool:
    """A signed hh:mm[:ss]: the time, negated by '-' (else the field is read as a number)."""
    saved = itm.usec
    try:
        _time(f[1:], rng, itm)
    except (_Bad, _Overflow):
        itm.usec = saved
        return False
    if f[0] == "-":
        itm.usec = -itm.usec
    return True


def _apply(unit: str, val: int, fval: float, itm: _Itm) -> frozenset[str]:
    if unit == "microsecond":
        itm.micros(val, fval, 1)
    elif unit == "millisecond":
        itm.micros(val, fval, 1000)
    elif unit == "second":
        itm.micros(val, fval, US_SEC)
        return frozenset(("second",)) if fval == 0 else _SECS_MASK
    elif unit == "minute":
        itm.micros(val, fval, US_MIN)
    elif unit == "hour":
        itm.micros(val, fval, US_HOUR)
    elif unit == "day":
        itm.days(val, 1)
        itm.fract_micros(fval, USEC_PER_DAY)
    elif unit == "week":
        itm.days(val, 7)
        itm.fract_days(fval, 7)
    elif unit == "month":
        itm.months(val)
        itm.fract_days(fval, 30)
    elif unit in ("year", "decade", "century", "millennium"):
        scale = {"year": 1, "decade": 10, "century": 100, "millennium": 1000}[unit]
        itm.years(val, scale)
        itm.fract_years(fval, scale)
    else:  # quarter
        raise _Bad
    return frozenset((unit,))


_ISO_NUM = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", re.ASCII)


def _iso_number(s: str, i: int) -> tuple[int, float, int]:
    """ParseISO8601Number: strtod, its integer part toward zero and the fraction."""
    if i >= len(s) or not (s[i].isdigit() or s[i] in "-."):
        raise _Bad
    m = _ISO_NUM.match(s, i)
    if m is None:
        raise _Bad
    v = float(m.group())
    if v != v or not -1.0e15 <= v <= 1.0e15:
        raise _Overflow
    ipart = int(v)
    return ipart, v - ipart, m.end()


def _iso(s: str) -> _Itm:
    """DecodeISO8601Interval: P1Y2M3DT4H5M6S, P0001-02-03T04:05:06 (case-sensitive)."""
    itm = _Itm()
    if len(s) < 2 or s[0] != "P":
        raise _Bad
    i, datepart, havefield = 1, True, False
    while i < len(s):
        if s[i] == "T":
            datepart, havefield = False, False
            i += 1
            continue
        start = i
        val, fval, i = _iso_number(s, i)
        unit = s[i] if i < len(s) else "\0"
        i += 1
        width = len(re.match(r"\d*", s[start + (s[start] == "-"):]).group())  # type: ignore[union-attr]
        if datepart:
            if unit == "Y":
                itm.years(val, 1)
                itm.fract_years(fval, 1)
            elif unit == "M":
                itm.months(val)
                itm.fract_days(fval, 30)
            elif unit == "W":
                itm.days(val, 7)
                itm.fract_days(fval, 7)
            elif unit == "D":
                itm.days(val, 1)
                itm.fract_micros(fval, USEC_PER_DAY)
            elif unit in ("T", "\0", "-"):
                if unit != "-" and width == 8 and not havefield:
                    itm.years(int(val / 10000), 1)
                    itm.months(int(val / 100) - int(val / 10000) * 100)
                    itm.days(val - int(val / 100) * 100, 1)
                    itm.fract_micros(fval, USEC_PER_DAY)
                    if unit == "\0":
                        return itm
                    datepart, havefield = False, False
                    continue
                if havefield:
                    raise _Bad
                itm.years(val, 1)
                itm.fract_years(fval, 1)
                if unit == "\0":
                    return itm
                if unit == "T":
                    datepart, havefield = False, False
                    continue
                val, fval, i = _iso_number(s, i)
                itm.months(val)
                itm.fract_days(fval, 30)
                if i >= len(s):
                    return itm
                if s[i] == "T":
                    datepart, havefield = False, False
                    i += 1
                    continue
                if s[i] != "-":
                    raise _Bad
                val, fval, i = _iso_number(s, i + 1)
                itm.days(val, 1)
                itm.fract_micros(fval, USEC_PER_DAY)
                if i >= len(s):
                    return itm
                if s[i] == "T":
                    datepart, havefield = False, False
                    i += 1
                    continue
                raise _Bad
            else:
                raise _Bad
        else:
            if unit == "H":
                itm.micros(val, fval, US_HOUR)
            elif unit == "M":
                itm.micros(val, fval, US_MIN)
            elif unit == "S":
                itm.micros(val, fval, US_SEC)
            elif unit in ("\0", ":"):
                if unit == "\0" and width == 6 and not havefield:
                    itm.micros(int(val / 10000), 0.0, US_HOUR)
                    itm.micros(int(val / 100) - int(val / 10000) * 100, 0.0, US_MIN)
                    itm.micros(val - int(val / 100) * 100, 0.0, US_SEC)
                    itm.fract_micros(fval, 1)
                    return itm
                if havefield:
                    raise _Bad
                itm.micros(val, fval, US_HOUR)
                if unit == "\0":
                    return itm
                val, fval, i = _iso_number(s, i)
                itm.micros(val, fval, US_MIN)
                if i >= len(s):
                    return itm
                if s[i] != ":":
                    raise _Bad
                val, fval, i = _iso_number(s, i + 1)
                itm.micros(val, fval, US_SEC)
                if i >= len(s):
                    return itm
                raise _Bad
            else:
                raise _Bad
        havefield = True
    return itm


def parse(s: str, fields: frozenset[str] | None = None, precision: int | None = None) -> PgInterval:
    """PostgreSQL interval input ('1 day 02:00:00', '.001 second', '1-2 3:4 5 day', 'P1D',
    '1.5 weeks'), restricted by a typmod's fields (`INTERVAL '10.333' YEAR`, `'1 2' DAY TO
    HOUR`) and seconds' precision (`SECOND(3)`) as PostgreSQL's `interval(typmod)` does."""
    try:
        try:
            itm = _decode(s, fields)
        except _Bad:
            itm = _iso(s)
    except _Bad:
        raise _syntax(s) from None
    except _Overflow:
        raise _field_overflow(s) from None
    months = itm.year * 12 + itm.mon
    if not INT32[0] <= months <= INT32[1]:
        raise out_of_range()
    return typmod(PgInterval(months, itm.mday, itm.usec), fields, precision)


def typmod(v: PgInterval, fields: frozenset[str] | None, precision: int | None = None) -> PgInterval:
    """AdjustIntervalForTypmod: fields right of the last one are zeroed (YEAR keeps whole
    years), the time rounded to `precision` fractional digits."""
    months, days, micros = v.months, v.days, v.micros
    if fields is not None and fields != frozenset(FIELDS):
        last = _default_unit(fields)
        if last == "year":
            months, days, micros = int(months / 12) * 12, 0, 0
        elif last == "month":
            days, micros = 0, 0
        elif last == "day":
            micros = 0
        elif last in ("hour", "minute"):
            unit = US_HOUR if last == "hour" else US_MIN
            micros = int(micros / unit) * unit
    if precision is not None and precision < 6:
        scale = 10 ** (6 - precision)
        half = scale // 2
        micros = (micros + half) // scale * scale if micros >= 0 else -((-micros + half) // scale * scale)
    return PgInterval(months, days, micros)


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
