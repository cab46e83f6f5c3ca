"""The field decoders of PostgreSQL 15's date/time input (src/backend/utils/adt/datetime.c:
DecodeDate, DecodeNumber, DecodeNumberField, DecodeTime, DecodeTimezone), its token
table (datetktbl) and calendar arithmetic (date2j, j2date), for
`weir.codec.datetime_parse`. DateStyle is 'ISO, MDY'. Names follow datetime.c.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# field types (ftype) of ParseDateTime
DTK_NUMBER, DTK_STRING, DTK_DATE, DTK_TIME, DTK_TZ, DTK_SPECIAL = 0, 1, 2, 3, 4, 6
# token types (bit positions of the field masks)
RESERV, MONTH, YEAR, DAY, JULIAN, TZ, DTZ, DYNTZ, IGNORE_DTF, AMPM = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
HOUR, MINUTE, SECOND, MILLISECOND, MICROSECOND, DOY, DOW, UNITS, ADBC = 10, 11, 12, 13, 14, 15, 16, 17, 18
ISOTIME, DTZMOD, UNKNOWN_FIELD = 23, 28, 31
# reserved values and units
DTK_EPOCH, DTK_LATE, DTK_EARLY, DTK_NOW, DTK_TODAY, DTK_TOMORROW, DTK_YESTERDAY, DTK_ZULU = (
    "epoch", "late", "early", "now", "today", "tomorrow", "yesterday", "zulu")
AM, PM, HR24, AD, BC = 0, 1, 2, 0, 1


def M(t: int) -> int:
    return 1 << t


DATE_M = M(YEAR) | M(MONTH) | M(DAY)
ALL_SECS_M = M(SECOND) | M(MILLISECOND) | M(MICROSECOND)
TIME_M = M(HOUR) | M(MINUTE) | ALL_SECS_M
USECS_PER_DAY = 86_400_000_000
MAXDATEFIELDS = 25
WORKBUF = 128 + MAXDATEFIELDS  # MAXDATELEN + MAXDATEFIELDS

# datetktbl: keyword -> (token type, value)
DATETK: dict[str, tuple[int, object]] = {
    "-infinity": (RESERV, DTK_EARLY), "ad": (ADBC, AD), "allballs": (RESERV, DTK_ZULU), "am": (AMPM, AM),
    "at": (IGNORE_DTF, 0), "bc": (ADBC, BC), "d": (UNITS, DAY), "dow": (UNITS, "dow"), "doy": (UNITS, "doy"),
    "dst": (DTZMOD, 3600), "epoch": (RESERV, DTK_EPOCH), "h": (UNITS, HOUR), "infinity": (RESERV, DTK_LATE),
    "isodow": (UNITS, "isodow"), "isoyear": (UNITS, "isoyear"), "j": (UNITS, JULIAN), "jd": (UNITS, JULIAN),
    "julian": (UNITS, JULIAN), "m": (UNITS, MONTH), "mm": (UNITS, MINUTE), "now": (RESERV, DTK_NOW),
    "on": (IGNORE_DTF, 0), "pm": (AMPM, PM), "s": (UNITS, SECOND), "t": (ISOTIME, "time"),
    "today": (RESERV, DTK_TODAY), "tomorrow": (RESERV, DTK_TOMORROW), "y": (UNITS, YEAR),
    "yesterday": (RESERV, DTK_YESTERDAY),
}
for _i, _names in enumerate(("jan january", "feb february", "mar march", "apr april", "may", "jun june",
                             "jul july", "aug august", "sep sept september", "oct october",
                             "nov november", "dec december")):
    for _n in _names.split():
        DATETK[_n] = (MONTH, _i + 1)
for _i, _names in enumerate(("sun sunday", "mon monday", "tue tues tuesday", "wed wednesday weds",
                             "thu thur thurs thursday", "fri friday", "sat saturday")):
    for _n in _names.split():
        DATETK[_n] = (DOW, _i)


class DtErr(Exception):
    """A DTERR_* code of datetime.c, turned into PostgreSQL's error by `error`."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


BAD, FIELD_OVERFLOW, MD_FIELD_OVERFLOW, TZDISP_OVERFLOW = "bad", "field", "md", "tzdisp"


@dataclass
class Tm:
    """struct pg_tm plus fsec (microseconds) and the zone (seconds west of UTC, as tzp)."""

    year: int = 0
    mon: int = 0
    mday: int = 0
    hour: int = 0
    min: int = 0
    sec: int = 0
    fsec: int = 0
    yday: int = 0
    tz: int = 0
    dtype: str = "date"
    extra: dict[str, object] = field(default_factory=dict)


@dataclass
class State:
    """What DecodeDateTime knows so far (its fmask, is2digits, haveTextMonth)."""

    fmask: int = 0
    is2digits: bool = False
    have_text_month: bool = False


# ------------------------------------------------------------------ calendar helpers


def date2j(y: int, m: int, d: int) -> int:
    if m > 2:
        m += 1
        y += 4800
    else:
        m += 13
        y += 4799
    century = y // 100 if y >= 0 else -((-y) // 100)
    julian = y * 365 - 32167
    julian += cdiv(y, 4) - century + cdiv(century, 4)
    julian += 7834 * m // 256 + d
    return julian


def cdiv(a: int, b: int) -> int:
    """C's integer division (towards zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def j2date(jd: int) -> tuple[int, int, int]:
    julian = (jd + 32044) & 0xFFFFFFFF
    quad = julian // 146097
    extra = (julian - quad * 146097) * 4 + 3
    julian += 60 + quad * 3 + extra // 146097
    quad = julian // 1461
    julian -= quad * 1461
    y = julian * 4 // 1461
    julian = ((julian + 305) % 365 if y != 0 else (julian + 306) % 366) + 123
    y += quad * 4
    quad = julian * 2141 // 65536
    return y - 4800, (quad + 10) % 12 + 1, julian - 7834 * quad // 256


def isleap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


DAYS = ((31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31), (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31))


def valid_julian(y: int, m: int, d: int) -> bool:
    return (y > -4713 or (y == -4713 and m >= 11)) and (y < 5874898 or (y == 5874898 and m < 6))


# ------------------------------------------------------------------ C helpers


def strtol(s: str, pos: int = 0) -> tuple[int, int]:
    """strtol(s + pos, &end, 10) on a 32-bit int: (value, end); ERANGE raises."""
    i = pos
    while i < len(s) and s[i] in " \t\n\r\f\v":
        i += 1
    start = i
    if i < len(s) and s[i] in "+-":
        i += 1
    j = i
    while j < len(s) and s[j].isdigit():
        j += 1
    if j == i:
        return 0, pos
    v = int(s[start:j])
    if not -(2**31) <= v < 2**31:
        raise OverflowError
    return v, j


def strtod_fraction(s: str) -> float:
    """strtod of '.digits' that must consume the whole string (ParseFractionalSecond)."""
    if len(s) < 2 or not s[1:].isdigit():
        raise DtErr(BAD)
    return float("0" + s)


def fsec_of(frac: float) -> int:
    return round(frac * 1_000_000)  # rint: half to even, like Python's round


def isalpha(c: str) -> bool:
    return c.isascii() and c.isalpha()


def isdigit(c: str) -> bool:
    return c.isascii() and c.isdigit()


def isalnum(c: str) -> bool:
    return c.isascii() and c.isalnum()


# ------------------------------------------------------------------ field decoders


def decode_date(s: str, fmask: int, tm: Tm, st: State) -> int:
    """DecodeDate: a date field with separators ('1999-01-08', 'jan-08-1999', '1999.008')."""
    chars = list(s)
    fields: list[str] = []
    i, n = 0, len(chars)
    while i < n and len(fields) < MAXDATEFIELDS:
        while i < n and not isalnum(chars[i]):
            i += 1
        if i >= n:
            raise DtErr(BAD)
        start = i
        if isdigit(chars[i]):
            while i < n and isdigit(chars[i]):
                i += 1
        elif isalpha(chars[i]):
            while i < n and isalpha(chars[i]):
                i += 1
        fields.append("".join(chars[start:i]))
        if i < n:
            i += 1  # the character after a field is dropped, whatever it is
    tmask = 0
    have_text_month = False
    pending: list[str] = []
    for f in fields:
        if f and isalpha(f[0]):
            kind, val = DATETK.get(f, (UNKNOWN_FIELD, 0))
            if kind == IGNORE_DTF:
                continue
            if kind != MONTH:
                raise DtErr(BAD)
            tm.mon = int(val)  # type: ignore[call-overload]
            have_text_month = True
            if fmask & M(MONTH):
                raise DtErr(BAD)
            fmask |= M(MONTH)
            tmask |= M(MONTH)
        else:
            pending.append(f)
    for f in pending:
        if not f:
            raise DtErr(BAD)
        dmask = decode_number(f, have_text_month, fmask, tm, st)
        if fmask & dmask:
            raise DtErr(BAD)
        fmask |= dmask
        tmask |= dmask
    if (fmask & ~(M(DOY) | M(TZ))) != DATE_M:
        raise DtErr(BAD)
    return tmask


def decode_number(s: str, have_text_month: bool, fmask: int, tm: Tm, st: State) -> int:
    """DecodeNumber: one numeric field, placed by what is known so far (MDY order)."""
    flen = len(s)
    try:
        val, end = strtol(s)
    except OverflowError:
        raise DtErr(FIELD_OVERFLOW) from None
    if end == 0:
        raise DtErr(BAD)
    if end < flen and s[end] == ".":
        if end > 2:
            return decode_number_field(s, fmask | DATE_M, tm, st)
        tm.fsec = fsec_of(strtod_fraction(s[end:]))
    elif end < flen:
        raise DtErr(BAD)
    if flen == 3 and (fmask & DATE_M) == M(YEAR) and 1 <= val <= 366:
        tm.yday = val
        return M(DOY) | M(MONTH) | M(DAY)
    known = fmask & DATE_M
    if known == 0:
        if flen >= 3:
            tm.year = val
            tmask = M(YEAR)
        else:
            tm.mon = val
            tmask = M(MONTH)
    elif known == M(YEAR):
        tm.mon = val
        tmask = M(MONTH)
    elif known == M(MONTH):
        if have_text_month and flen >= 3:
            tm.year = val
            tmask = M(YEAR)
        else:
            tm.mday = val
            tmask = M(DAY)
    elif known == M(YEAR) | M(MONTH):
        if have_text_month and flen >= 3 and st.is2digits:
            tm.mday, tm.year = tm.year, val
            st.is2digits = False
        else:
            tm.mday = val
        tmask = M(DAY)
    elif known == M(DAY):
        tm.mon = val
        tmask = M(MONTH)
    elif known == M(MONTH) | M(DAY):
        tm.year = val
        tmask = M(YEAR)
    elif known == DATE_M:
        return decode_number_field(s, fmask, tm, st)
    else:
        raise DtErr(BAD)
    if tmask == M(YEAR):
        st.is2digits = flen <= 2
    return tmask


def decode_number_field(s: str, fmask: int, tm: Tm, st: State) -> int:
    """DecodeNumberField: run-together digits, yyyymmdd / yymmdd / hhmmss / hhmm."""
    cut = s.find(".")
    if cut >= 0:
        frac = s[cut:]
        tm.fsec = 0 if frac == "." else fsec_of(float("0" + frac)) if frac[1:].isdigit() else bad()
        s = s[:cut]
    elif (fmask & DATE_M) != DATE_M and len(s) >= 6:
        tm.mday = int(s[-2:])
        tm.mon = int(s[-4:-2])
        tm.year = int(s[:-4] or "0")
        if len(s) - 4 == 2:
            st.is2digits = True
        return DATE_M
    if (fmask & TIME_M) != TIME_M:
        if len(s) == 6:
            tm.hour, tm.min, tm.sec = int(s[:2]), int(s[2:4]), int(s[4:])
            return TIME_M
        if len(s) == 4:
            tm.hour, tm.min, tm.sec = int(s[:2]), int(s[2:]), 0
            return TIME_M
    raise DtErr(BAD)


def bad() -> int:
    raise DtErr(BAD)


def decode_time(s: str, tm: Tm) -> int:
    """DecodeTime: hh:mm[:ss[.fff]] or mm:ss.fff."""
    try:
        tm.hour, end = strtol(s)
        if end >= len(s) or s[end] != ":":
            raise DtErr(BAD)
        tm.min, end = strtol(s, end + 1)
        tm.fsec = 0
        if end >= len(s):
            tm.sec = 0
        elif s[end] == ".":
            tm.fsec = fsec_of(strtod_fraction(s[end:]))
            tm.sec, tm.min, tm.hour = tm.min, tm.hour, 0
        elif s[end] == ":":
            tm.sec, end = strtol(s, end + 1)
            if end < len(s) and s[end] == ".":
                tm.fsec = fsec_of(strtod_fraction(s[end:]))
            elif end < len(s):
                raise DtErr(BAD)
        else:
            raise DtErr(BAD)
    except OverflowError:
        raise DtErr(FIELD_OVERFLOW) from None
    if tm.hour < 0 or not 0 <= tm.min <= 59 or not 0 <= tm.sec <= 60 or not 0 <= tm.fsec <= 1_000_000:
        raise DtErr(FIELD_OVERFLOW)
    return TIME_M


def decode_timezone(s: str) -> int:
    """DecodeTimezone: '+hh', '-hhmm', '+hh:mm[:ss]' as seconds west of UTC."""
    if not s or s[0] not in "+-":
        raise DtErr(BAD)
    try:
        hr, end = strtol(s, 1)
        sec = 0
        if end < len(s) and s[end] == ":":
            mn, end = strtol(s, end + 1)
            if end < len(s) and s[end] == ":":
                sec, end = strtol(s, end + 1)
        elif end >= len(s) and len(s) > 3:
            hr, mn = cdiv(hr, 100), hr - cdiv(hr, 100) * 100
        else:
            mn = 0
    except OverflowError:
        raise DtErr(TZDISP_OVERFLOW) from None
    if not 0 <= hr <= 15 or not 0 <= mn < 60 or not 0 <= sec < 60:
        raise DtErr(TZDISP_OVERFLOW)
    tz = (hr * 60 + mn) * 60 + sec
    if s[0] == "-":
        tz = -tz
    if end < len(s):
        raise DtErr(BAD)
    return -tz
