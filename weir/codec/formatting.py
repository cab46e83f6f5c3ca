"""to_timestamp(text, text) and to_date(text, text) as PostgreSQL 15's formatting.c reads
them: the template parsed into keyword and literal nodes (parse_format, DCH_keywords,
prefixes FM/TM and suffixes TH/th/SP), the input read by DCH_from_char (non-FX mode
skips spaces and matches separators loosely; FX reads fixed widths), and the fields
combined and checked by do_to_timestamp. Errors are PostgreSQL's (22007, 22008, 22009).
Results weir's types cannot hold (years before 1 or after 9999) are 22008."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from weir.codec import datetime_fields as df
from weir.errors import SqlState, WeirError

GREG, ISO = "gregorian", "isoweek"
# DCH_keywords in PostgreSQL's order (longest first for a shared prefix): name, id, is_digit, mode
_KEYWORDS: list[tuple[str, str, bool, str | None]] = [
    ("A.D.", "A_D", False, None), ("A.M.", "A_M", False, None), ("AD", "AD", False, None), ("AM", "AM", False, None),
    ("B.C.", "B_C", False, None), ("BC", "BC", False, None), ("CC", "CC", True, None),
    ("DAY", "DAY", False, None), ("DDD", "DDD", True, GREG), ("DD", "DD", True, GREG), ("DY", "DY", False, None),
    ("Day", "DAY", False, None), ("Dy", "DY", False, None), ("D", "D", True, GREG),
    ("FF1", "FF1", True, None), ("FF2", "FF2", True, None), ("FF3", "FF3", True, None),
    ("FF4", "FF4", True, None), ("FF5", "FF5", True, None), ("FF6", "FF6", True, None), ("FX", "FX", False, None),
    ("HH24", "HH24", True, None), ("HH12", "HH12", True, None), ("HH", "HH", True, None),
    ("IDDD", "IDDD", True, ISO), ("ID", "ID", True, ISO), ("IW", "IW", True, ISO), ("IYYY", "IYYY", True, ISO),
    ("IYY", "IYY", True, ISO), ("IY", "IY", True, ISO), ("I", "I", True, ISO), ("J", "J", True, None),
    ("MI", "MI", True, None), ("MM", "MM", True, GREG), ("MONTH", "MONTH", False, GREG), ("MON", "MON", False, GREG),
    ("MS", "MS", True, None), ("Month", "MONTH", False, GREG), ("Mon", "MON", False, GREG), ("OF", "OF", False, None),
    ("P.M.", "A_M", False, None), ("PM", "AM", False, None), ("Q", "Q", True, None), ("RM", "RM", False, GREG),
    ("SSSSS", "SSSS", True, None), ("SSSS", "SSSS", True, None), ("SS", "SS", True, None),
    ("TZH", "TZH", False, None), ("TZM", "TZM", True, None), ("TZ", "TZ", False, None), ("US", "US", True, None),
    ("WW", "WW", True, GREG), ("W", "W", True, GREG), ("Y,YYY", "Y_YYY", True, GREG), ("YYYY", "YYYY", True, GREG),
    ("YYY", "YYY", True, GREG), ("YY", "YY", True, GREG), ("Y", "Y", True, GREG),
    ("a.d.", "A_D", False, None), ("a.m.", "A_M", False, None), ("ad", "AD", False, None), ("am", "AM", False, None),
    ("b.c.", "B_C", False, None), ("bc", "BC", False, None), ("cc", "CC", True, None), ("day", "DAY", False, None),
    ("ddd", "DDD", True, GREG), ("dd", "DD", True, GREG), ("dy", "DY", False, None), ("d", "D", True, GREG),
    ("ff1", "FF1", True, None), ("ff2", "FF2", True, None), ("ff3", "FF3", True, None), ("ff4", "FF4", True, None),
    ("ff5", "FF5", True, None), ("ff6", "FF6", True, None), ("fx", "FX", False, None),
    ("hh24", "HH24", True, None), ("hh12", "HH12", True, None), ("hh", "HH", True, None),
    ("iddd", "IDDD", True, ISO), ("id", "ID", True, ISO), ("iw", "IW", True, ISO), ("iyyy", "IYYY", True, ISO),
    ("iyy", "IYY", True, ISO), ("iy", "IY", True, ISO), ("i", "I", True, ISO), ("j", "J", True, None),
    ("mi", "MI", True, None), ("mm", "MM", True, GREG), ("month", "MONTH", False, GREG), ("mon", "MON", False, GREG),
    ("ms", "MS", True, None), ("of", "OF", False, None), ("p.m.", "A_M", False, None), ("pm", "AM", False, None),
    ("q", "Q", True, None), ("rm", "RM", False, GREG), ("sssss", "SSSS", True, None), ("ssss", "SSSS", True, None),
    ("ss", "SS", True, None), ("tzh", "TZH", False, None), ("tzm", "TZM", True, None), ("tz", "TZ", False, None),
    ("us", "US", True, None), ("ww", "WW", True, GREG), ("w", "W", True, GREG), ("y,yyy", "Y_YYY", True, GREG),
    ("yyyy", "YYYY", True, GREG), ("yyy", "YYY", True, GREG), ("yy", "YY", True, GREG), ("y", "Y", True, GREG),
]
# field lengths PostgreSQL reads with from_char_parse_int_len where they differ from the name's
_LEN = {"HH24": 2, "HH12": 2, "HH": 2, "MS": 3, "US": 6, "IDDD": 3, "ID": 1, "TZH": 2, "TZM": 2,
        "SSSS": None}
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_MONTHS_FULL = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
                "October", "November", "December"]
_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
_DAYS_SHORT = [d[:3] for d in _DAYS]
MONTHS_FULL, DAYS = _MONTHS_FULL, _DAYS  # for weir.codec.to_char
_AMPM, _AMPM_LONG = ["am", "pm", "AM", "PM"], ["a.m.", "p.m.", "A.M.", "P.M."]
_ADBC, _ADBC_LONG = ["ad", "bc", "AD", "BC"], ["a.d.", "b.c.", "A.D.", "B.C."]
_RM = ["xii", "xi", "x", "ix", "viii", "vii", "vi", "v", "iv", "iii", "ii", "i"]


def _fmt_error(message: str, state: str = SqlState.INVALID_DATETIME_FORMAT) -> WeirError:
    return WeirError(state, message)


@dataclass
class Node:
    kind: str  # "action", "char", "space", "separator"
    text: str = ""
    key: tuple[str, str, bool, str | None] | None = None
    fm: bool = False
    th: bool = False
    upper_th: bool = False  # TH rather than th


def _is_separator(c: str) -> bool:
    return "\x20" < c < "\x7f" and not c.isalnum()


def parse_format(fmt: str) -> list[Node]:
    nodes: list[Node] = []
    i = 0
    while i < len(fmt):
        fm = False
        if fmt.startswith(("FM", "fm"), i):
            fm, i = True, i + 2
        elif fmt.startswith(("TM", "tm"), i):
            i += 2
        key = next((k for k in _KEYWORDS if fmt.startswith(k[0], i)), None) if i < len(fmt) else None
        if key is not None:
            i += len(key[0])
            th = fmt.startswith(("TH", "th"), i)
            if th or fmt.startswith("SP", i):
                i += 2
            nodes.append(Node("action", key[0], key, fm, th, fmt.startswith("TH", i - 2) and th))
        elif i < len(fmt):
            if fmt[i] == '"':
                i += 1
                while i < len(fmt):
                    if fmt[i] == '"':
                        i += 1
                        break
                    if fmt[i] == "\\" and i + 1 < len(fmt):
                        i += 1
                    nodes.append(Node("char", fmt[i]))
                    i += 1
            else:
                if fmt[i] == "\\" and i + 1 < len(fmt) and fmt[i + 1] == '"':
                    i += 1
                c = fmt[i]
                nodes.append(Node("separator" if _is_separator(c) else "space" if c in " \t\n\r\f\v" else "char", c))
                i += 1
    return nodes


@dataclass
class _From:
    """TmFromChar."""

    mode: str | None = None
    hh: int = 0
    pm: int = 0
    mi: int = 0
    ss: int = 0
    ssss: int = 0
    d: int = 0
    dd: int = 0
    ddd: int = 0
    mm: int = 0
    ms: int = 0
    year: int = 0
    bc: int = 0
    ww: int = 0
    w: int = 0
    cc: int = 0
    j: int = 0
    us: int = 0
    yysz: int = 0
    clock12: bool = False
    tzsign: int = 0
    tzh: int = 0
    tzm: int = 0
    ff: int = 0
    seen: set[str] = field(default_factory=set)


def _set(out: _From, attr: str, value: int, node: Node) -> None:
    old = getattr(out, attr)
    if old != 0 and old != value:
        raise _fmt_error(f'conflicting values for "{node.text}" field in formatting string')
    setattr(out, attr, value)


def _next_is_separator(nodes: list[Node], k: int) -> bool:
    n = nodes[k]
    if n.th:
        return True
    if k + 1 >= len(nodes):
        return True
    nxt = nodes[k + 1]
    if nxt.kind == "action":
        assert nxt.key is not None
        return not nxt.key[2]
    return not nxt.text.isdigit()


def _strtol(s: str, i: int) -> tuple[int | None, int]:
    j = i
    while j < len(s) and s[j] in " \t\n\r\f\v":
        j += 1
    k = j
    if k < len(s) and s[k] in "+-":
        k += 1
    m = k
    while m < len(s) and s[m].isdigit():
        m += 1
    if m == k:
        return None, i
    return int(s[j:m]), m


def _parse_int(out: _From, attr: str | None, s: str, i: int, length: int, nodes: list[Node], k: int) -> tuple[int, int]:
    """from_char_parse_int_len: (new position, characters consumed)."""
    node = nodes[k]
    init = i
    while i < len(s) and s[i] in " \t\n\r\f\v":
        i += 1
    copy = s[i:i + length]
    if node.fm or _next_is_separator(nodes, k):
        value, end = _strtol(s, init)
        i = end
    else:
        if len(copy) < length:
            raise _fmt_error(f'source string too short for "{node.text}" formatting field')
        value, used = _strtol(copy, 0)
        if value is None:
            value, used = 0, 0
        if 0 < used < length:
            raise _fmt_error(f'invalid value "{copy}" for "{node.text}"')
        i += used
    if i == init or value is None:
        raise _fmt_error(f'invalid value "{copy}" for "{node.text}"')
    if not -(2**31) <= value < 2**31:
        raise _fmt_error(f'value for "{node.text}" in source string is out of range', SqlState.DATETIME_FIELD_OVERFLOW)
    if attr is not None:
        _set(out, attr, value, node)
    return i, i - init


def _seq(out: _From, s: str, i: int, words: list[str], node: Node) -> tuple[int, int]:
    rest = s[i:]
    low = rest.lower()
    for idx, w in enumerate(words):
        if low.startswith(w.lower()):
            return idx, i + len(w)
    cut = next((j for j, c in enumerate(rest) if c in " \t\n\r\f\v"), len(rest))
    word = rest[:cut]
    raise _fmt_error(f'invalid value "{word}" for "{node.text}"')


def from_char(nodes: list[Node], s: str) -> _From:  # noqa: C901 - one case per keyword, as DCH_from_char
    out = _From()
    fx = False
    extra = 0
    i = 0
    k = 0
    while k < len(nodes) and i < len(s):
        n = nodes[k]
        if not fx and (n.kind != "action" or (n.key and n.key[1] != "FX")) and (n.kind == "action" or k == 0):
            while i < len(s) and s[i] in " \t\n\r\f\v":
                i += 1
                extra += 1
        if n.kind in ("space", "separator"):
            if not fx:
                extra -= 1
                if s[i] in " \t\n\r\f\v" or _is_separator(s[i]):
                    i += 1
                    extra += 1
            else:
                i += 1
            k += 1
            continue
        if n.kind != "action":
            if not fx and extra > 0:
                extra -= 1
            else:
                i += 1
            k += 1
            continue
        assert n.key is not None
        name, kid, _, mode = n.key
        if mode is not None:
            if out.mode is None:
                out.mode = mode
            elif out.mode != mode:
                raise _fmt_error("invalid combination of date conventions")
        length = _LEN.get(kid, len(name))
        if kid == "FX":
            fx = True
        elif kid in ("A_M", "AM"):
            value, i = _seq(out, s, i, _AMPM_LONG if kid == "A_M" else _AMPM, n)
            _set(out, "pm", value % 2, n)
            out.clock12 = True
        elif kid in ("HH", "HH12", "HH24"):
            i, _ = _parse_int(out, "hh", s, i, 2, nodes, k)
            if kid != "HH24":
                out.clock12 = True
        elif kid in ("MI", "SS", "MM", "DD", "D", "DDD", "CC", "W", "J", "SSSS", "WW", "IW", "Q", "IDDD"):
            attr = {"MI": "mi", "SS": "ss", "MM": "mm", "DD": "dd", "D": "d", "DDD": "ddd", "CC": "cc", "W": "w",
                    "J": "j", "SSSS": "ssss", "WW": "ww", "IW": "ww", "Q": None, "IDDD": "ddd"}[kid]
            i, _ = _parse_int(out, attr, s, i, length if length is not None else len(name), nodes, k)
        elif kid == "MS":
            i, used = _parse_int(out, "ms", s, i, 3, nodes, k)
            out.ms *= 100 if used == 1 else 10 if used == 2 else 1
        elif kid in ("US", "FF1", "FF2", "FF3", "FF4", "FF5", "FF6"):
            if kid != "US":
                out.ff = int(kid[2])
            i, used = _parse_int(out, "us", s, i, 6 if kid == "US" else out.ff, nodes, k)
            out.us *= 10 ** max(0, 6 - used) if used < 6 else 1
        elif kid in ("TZ", "OF"):
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f'formatting field "{name}" is only supported in to_char')
        elif kid == "TZH":
            if s[i] in "+- ":
                out.tzsign = -1 if s[i] == "-" else 1
                i += 1
            else:
                out.tzsign = -1 if extra > 0 and i > 0 and s[i - 1] == "-" else 1
            i, _ = _parse_int(out, "tzh", s, i, 2, nodes, k)
        elif kid == "TZM":
            if not out.tzsign:
                out.tzsign = 1
            i, _ = _parse_int(out, "tzm", s, i, 2, nodes, k)
        elif kid in ("A_D", "AD", "B_C", "BC"):
            value, i = _seq(out, s, i, _ADBC_LONG if kid in ("A_D", "B_C") else _ADBC, n)
            _set(out, "bc", value % 2, n)
        elif kid in ("MONTH", "MON"):
            value, i = _seq(out, s, i, _MONTHS_FULL if kid == "MONTH" else _MONTHS, n)
            _set(out, "mm", value + 1, n)
        elif kid in ("DAY", "DY"):
            value, i = _seq(out, s, i, _DAYS if kid == "DAY" else _DAYS_SHORT, n)
            _set(out, "d", value, n)
            out.d += 1
        elif kid == "ID":
            i, _ = _parse_int(out, "d", s, i, 1, nodes, k)
            out.d = 1 if out.d + 1 > 7 else out.d + 1
        elif kid == "Y_YYY":  # sscanf("%d,%03d%n")
            m = re.match(r"\s*([+-]?\d+),([+-]?\d{1,3}|[+-]?\d{0,2})", s[i:])
            if m is None or not re.search(r"\d", m.group(2)):
                raise _fmt_error('invalid input string for "Y,YYY"')
            _set(out, "year", int(m.group(1)) * 1000 + int(m.group(2)), n)
            out.yysz = 4
            i += m.end()
        elif kid in ("YYYY", "IYYY", "YYY", "IYY", "YY", "IY", "Y", "I"):
            i, used = _parse_int(out, "year", s, i, len(name), nodes, k)
            if kid not in ("YYYY", "IYYY") and used < 4:
                out.year = _adjust_partial_year(out.year)
            out.yysz = {"YYYY": 4, "IYYY": 4, "YYY": 3, "IYY": 3, "YY": 2, "IY": 2, "Y": 1, "I": 1}[kid]
        elif kid == "RM":
            value, i = _seq(out, s, i, _RM, n)
            _set(out, "mm", 12 - value, n)
        if kid not in ("FX",) and n.th and kid not in ("A_M", "AM", "A_D", "AD", "B_C", "BC", "MONTH", "MON", "DAY",
                                                        "DY", "RM", "TZH", "TZM"):
            i = min(len(s), i + 2)
        if not fx:
            extra = 0
            while i < len(s) and s[i] in " \t\n\r\f\v":
                i += 1
                extra += 1
        k += 1
    return out


def _adjust_partial_year(year: int) -> int:
    if year < 70:
        return year + 2000
    if year < 100:
        return year + 1900
    if year < 520:
        return year + 2000
    if year < 1000:
        return year + 1000
    return year


def _j2day(j: int) -> int:
    return (j + 1) % 7


def _isoweek2j(year: int, week: int) -> int:
    day4 = df.date2j(year, 1, 4)
    day0 = _j2day(day4 - 1)
    return (week - 1) * 7 + (day4 - day0)


@dataclass
class Result:
    year: int
    mon: int
    mday: int
    hour: int
    min: int
    sec: int
    fsec: int
    tz_west: int | None
    fprec: int


def _overflow(s: str) -> WeirError:
    return WeirError(SqlState.DATETIME_FIELD_OVERFLOW, f'date/time field value out of range: "{s}"')


def do_to_timestamp(s: str, fmt: str) -> Result:  # noqa: C901 - do_to_timestamp's steps
    tmfc = from_char(parse_format(fmt), s) if fmt else _From()
    year, mon, mday, hour, minute, sec, fsec = 0, 1, 1, 0, 0, 0, 0
    fmask = 0
    if tmfc.ssss:
        hour, rem = divmod(tmfc.ssss, 3600)
        minute, sec = divmod(rem, 60)
    if tmfc.ss:
        sec = tmfc.ss
    if tmfc.mi:
        minute = tmfc.mi
    if tmfc.hh:
        hour = tmfc.hh
    if tmfc.clock12:
        if hour < 1 or hour > 12:
            raise WeirError(SqlState.INVALID_DATETIME_FORMAT, f'hour "{hour}" is invalid for the 12-hour clock')
        if tmfc.pm and hour < 12:
            hour += 12
        elif not tmfc.pm and hour == 12:
            hour = 0
    if tmfc.year:
        if tmfc.cc and tmfc.yysz <= 2:
            cc = -tmfc.cc if tmfc.bc else tmfc.cc
            year = tmfc.year % 100
            if year:
                year = year + (cc - 1) * 100 if cc >= 0 else (cc + 1) * 100 - year + 1
            else:
                year = cc * 100 + (0 if cc >= 0 else 1)
        else:
            year = -tmfc.year if tmfc.bc else tmfc.year
            if year < 0:
                year += 1
        fmask |= df.M(df.YEAR)
    elif tmfc.cc:
        cc = -tmfc.cc if tmfc.bc else tmfc.cc
        year = (cc - 1) * 100 + 1 if cc >= 0 else cc * 100 + 1
        fmask |= df.M(df.YEAR)
    if tmfc.j:
        year, mon, mday = df.j2date(tmfc.j)
        fmask |= df.DATE_M
    if tmfc.ww:
        if tmfc.mode == ISO:
            jday = _isoweek2j(year, tmfc.ww)
            if tmfc.d:
                jday += tmfc.d - 2 if tmfc.d > 1 else 6
            year, mon, mday = df.j2date(jday)
            fmask |= df.DATE_M
        else:
            tmfc.ddd = (tmfc.ww - 1) * 7 + 1
    if tmfc.w:
        tmfc.dd = (tmfc.w - 1) * 7 + 1
    if tmfc.dd:
        mday = tmfc.dd
        fmask |= df.M(df.DAY)
    if tmfc.mm:
        mon = tmfc.mm
        fmask |= df.M(df.MONTH)
    if tmfc.ddd and (mon <= 1 or mday <= 1):
        if not year and not tmfc.bc:
            raise WeirError(SqlState.INVALID_DATETIME_FORMAT, "cannot calculate day of year without year information")
        if tmfc.mode == ISO:
            year, mon, mday = df.j2date(_isoweek2j(year, 1) - 1 + tmfc.ddd)
            fmask |= df.DATE_M
        else:
            ysum = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365]
            if df.isleap(year):
                ysum = [0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335, 366]
            m = 1
            while m <= 12 and tmfc.ddd > ysum[m]:
                m += 1
            if mon <= 1:
                mon = m
            if mday <= 1:
                mday = tmfc.ddd - ysum[m - 1]
            fmask |= df.M(df.MONTH) | df.M(df.DAY)
    if tmfc.ms:
        fsec += tmfc.ms * 1000
    if tmfc.us:
        fsec += tmfc.us
    if fmask:
        tm = df.Tm(year=year, mon=mon, mday=mday)
        try:
            _validate(fmask, tm)
        except df.DtErr:
            raise _overflow(s) from None
    if not (0 <= hour < 24 and 0 <= minute < 60 and 0 <= sec < 60 and 0 <= fsec < 1_000_000):
        raise _overflow(s)
    tz_west = None
    if tmfc.tzsign:
        if not 0 <= tmfc.tzh <= 15 or not 0 <= tmfc.tzm < 60:
            raise WeirError("22009", f'time zone displacement out of range: "{s}"')
        tz_west = (tmfc.tzh * 60 + tmfc.tzm) * 60 * (-1 if tmfc.tzsign > 0 else 1)
    return Result(year, mon, mday, hour, minute, sec, fsec, tz_west, tmfc.ff)


def _validate(fmask: int, tm: df.Tm) -> None:
    """ValidateDate with isjulian: month, day, and the day within its month."""
    if fmask & df.M(df.MONTH) and not 1 <= tm.mon <= 12:
        raise df.DtErr(df.FIELD_OVERFLOW)
    if fmask & df.M(df.DAY) and not 1 <= tm.mday <= 31:
        raise df.DtErr(df.FIELD_OVERFLOW)
    if (fmask & df.DATE_M) == df.DATE_M and tm.mday > df.DAYS[df.isleap(tm.year)][tm.mon - 1]:
        raise df.DtErr(df.FIELD_OVERFLOW)


_EPOCH = dt.datetime(1970, 1, 1)


def to_timestamp(s: str, fmt: str) -> dt.datetime:
    """to_timestamp(text, text): a timestamptz, as naive UTC."""
    r = do_to_timestamp(s, fmt)
    if not df.valid_julian(r.year, r.mon, r.mday):
        raise WeirError(SqlState.DATETIME_FIELD_OVERFLOW, "timestamp out of range")
    days = df.date2j(r.year, r.mon, r.mday) - 2440588
    micros = days * 86_400_000_000 + ((r.hour * 60 + r.min) * 60 + r.sec) * 1_000_000 + r.fsec
    micros += (r.tz_west or 0) * 1_000_000
    if r.fprec:
        scale = 10 ** (6 - r.fprec)
        half = scale // 2
        micros = (micros + half) // scale * scale if micros >= 0 else -((-micros + half) // scale * scale)
    try:
        return _EPOCH + dt.timedelta(microseconds=micros)
    except OverflowError:
        raise WeirError(SqlState.DATETIME_FIELD_OVERFLOW, "timestamp out of range") from None


def to_date(s: str, fmt: str) -> dt.date:
    r = do_to_timestamp(s, fmt)
    if not df.valid_julian(r.year, r.mon, r.mday):
        raise WeirError(SqlState.DATETIME_FIELD_OVERFLOW, f'date out of range: "{s}"')
    try:
        return dt.date.fromordinal(df.date2j(r.year, r.mon, r.mday) - 1721425)
    except (ValueError, OverflowError):
        raise WeirError(SqlState.DATETIME_FIELD_OVERFLOW, f'date out of range: "{s}"') from None
