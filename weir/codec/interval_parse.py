"""PostgreSQL's interval input: a port of PostgreSQL 15's interval_in.

ParseDateTime's fields, DecodeInterval read right to left (units before their values, the
typmod's last field for a bare number), DecodeISO8601Interval (weir.codec.interval_iso),
then AdjustIntervalForTypmod. Fractions cascade as PostgreSQL's AdjustFract* do, in
doubles (Python's float is the same IEEE double; weir.codec.interval_itm)."""

from __future__ import annotations

import re

from weir.codec.interval import (
    INT32,
    INT64,
    US_HOUR,
    US_MIN,
    US_SEC,
    USEC_PER_DAY,
    PgInterval,
    out_of_range,
)
from weir.codec.interval_iso import decode_iso
from weir.codec.interval_itm import BadFormat, FieldOverflow, ItmIn
from weir.errors import SqlState, WeirError

FIELDS = ("year", "month", "day", "hour", "minute", "second")

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


def _syntax(s: str) -> WeirError:
    return WeirError(SqlState.INVALID_DATETIME_FORMAT, f'invalid input syntax for type interval: "{s}"')


def _field_overflow(s: str) -> WeirError:
    return WeirError(SqlState.INTERVAL_FIELD_OVERFLOW, f'interval field value out of range: "{s}"')



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
                raise BadFormat
            i = k
        elif c.isascii() and not c.isalnum() and c.isprintable():  # ispunct: a delimiter
            i += 1
        else:
            raise BadFormat
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
        raise FieldOverflow
    return v, k


def _fraction(s: str) -> float:
    """ParseFraction: '.', '.5' (strtod of the rest, which must all be read)."""
    if s == ".":
        return 0.0
    if not re.fullmatch(r"\.\d*(?:[eE][+-]?\d+)?", s, re.ASCII):
        raise BadFormat
    return float(s)


def _time(text: str, rng: frozenset[str] | None, itm: ItmIn) -> None:
    """DecodeTimeForInterval: hh:mm[:ss[.fff]] (mm:ss for MINUTE TO SECOND and mm:ss.fff)."""
    hour, i = _strtol(text, 0, INT64)
    if i >= len(text) or text[i] != ":":
        raise BadFormat
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
            raise FieldOverflow
    elif text[i] == ":":
        sec, i = _strtol(text, i + 1, INT32)
        if i < len(text):
            if text[i] != ".":
                raise BadFormat
            fsec = int(round(_fraction(text[i:]) * 1_000_000))
    else:
        raise BadFormat
    if hour < 0 or not 0 <= minute <= 59 or not 0 <= sec <= 60 or not 0 <= fsec <= 1_000_000:
        raise FieldOverflow
    usec = fsec + hour * US_HOUR + minute * US_MIN + sec * US_SEC
    itm.usec = itm.checked(usec, INT64)


def _default_unit(rng: frozenset[str] | None) -> str:
    """The unit of a bare rightmost number: the typmod's last field (a second without one)."""
    if rng is None:
        return "second"
    for f in reversed(FIELDS):
        if f in rng:
            return f
    return "second"


def _decode(text: str, rng: frozenset[str] | None) -> ItmIn:
    fields = _fields(text)
    itm = ItmIn()
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
                    raise FieldOverflow
                if k != len(f):
                    raise BadFormat
                unit = "month"
                val = itm.checked(val * 12 + (-val2 if f[0] == "-" else val2), INT64)
                fval = 0.0
            elif j < len(f) and f[j] == ".":
                fval = _fraction(f[j:])
                if f[0] == "-":
                    fval = -fval
            elif j == len(f):
                fval = 0.0
            else:
                raise BadFormat
            tmask = _apply(unit, val, fval, itm)
            if unit == "hour":
                unit = "day"
        else:  # string, special
            word = UNIT_WORDS.get(f[:10])
            if word == "ignore":
                continue
            if word is None or word in ("timezone",):
                raise BadFormat
            if word == "ago":
                before = True  # anywhere in PostgreSQL 15 (16 takes it only last)
                unit = "none"  # a number just before it has no unit
            else:
                unit = word
        if tmask & fmask:
            raise BadFormat
        fmask |= tmask
    if not fmask:
        raise BadFormat
    if before:
        itm.usec, itm.mday, itm.mon, itm.year = -itm.usec, -itm.mday, -itm.mon, -itm.year
    return itm


def _try_time(f: str, rng: frozenset[str] | None, itm: ItmIn) -> bool:
    """A signed hh:mm[:ss]: the time, negated by '-' (else the field is read as a number)."""
    saved = itm.usec
    try:
        _time(f[1:], rng, itm)
    except (BadFormat, FieldOverflow):
        itm.usec = saved
        return False
    if f[0] == "-":
        itm.usec = -itm.usec
    return True


def _apply(unit: str, val: int, fval: float, itm: ItmIn) -> frozenset[str]:
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
        raise BadFormat
    return frozenset((unit,))

def parse(s: str, fields: frozenset[str] | None = None, precision: int | None = None) -> PgInterval:
    """PostgreSQL interval input ('1 day 02:00:00', '.001 second', '1-2 3:4 5 day', 'P1D',
    '1.5 weeks'), restricted by a typmod's fields (`INTERVAL '10.333' YEAR`, `'1 2' DAY TO
    HOUR`) and seconds' precision (`SECOND(3)`) as PostgreSQL's `interval(typmod)` does."""
    try:
        try:
            itm = _decode(s, fields)
        except BadFormat:
            itm = decode_iso(s)
    except BadFormat:
        raise _syntax(s) from None
    except FieldOverflow:
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


