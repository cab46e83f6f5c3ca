"""ISO 8601 interval input, a port of PostgreSQL 15's DecodeISO8601Interval: the format
with designators (P1Y2M3DT4H5M6S) and the alternative one (P0001-02-03T04:05:06), read
when a value is not in PostgreSQL's own format (weir.codec.interval_parse)."""

from __future__ import annotations

import re

from weir.codec.interval import US_HOUR, US_MIN, US_SEC, USEC_PER_DAY
from weir.codec.interval_itm import BadFormat, FieldOverflow, ItmIn

_ISO_NUM = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", re.ASCII)


def _iso_number(s: str, i: int) -> tuple[int, float, int]:
    """ParseISO8601Number: strtod, its integer part toward zero and the fraction."""
    if i >= len(s) or not (s[i].isdigit() or s[i] in "-."):
        raise BadFormat
    m = _ISO_NUM.match(s, i)
    if m is None:
        raise BadFormat
    v = float(m.group())
    if v != v or not -1.0e15 <= v <= 1.0e15:
        raise FieldOverflow
    ipart = int(v)
    return ipart, v - ipart, m.end()


def decode_iso(s: str) -> ItmIn:
    """DecodeISO8601Interval: P1Y2M3DT4H5M6S, P0001-02-03T04:05:06 (case-sensitive)."""
    itm = ItmIn()
    if len(s) < 2 or s[0] != "P":
        raise BadFormat
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
                    raise BadFormat
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
                    raise BadFormat
                val, fval, i = _iso_number(s, i + 1)
                itm.days(val, 1)
                itm.fract_micros(fval, USEC_PER_DAY)
                if i >= len(s):
                    return itm
                if s[i] == "T":
                    datepart, havefield = False, False
                    i += 1
                    continue
                raise BadFormat
            else:
                raise BadFormat
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
                    raise BadFormat
                itm.micros(val, fval, US_HOUR)
                if unit == "\0":
                    return itm
                val, fval, i = _iso_number(s, i)
                itm.micros(val, fval, US_MIN)
                if i >= len(s):
                    return itm
                if s[i] != ":":
                    raise BadFormat
                val, fval, i = _iso_number(s, i + 1)
                itm.micros(val, fval, US_SEC)
                if i >= len(s):
                    return itm
                raise BadFormat
            else:
                raise BadFormat
        havefield = True
    return itm

