"""PostgreSQL 15's date/time input: ParseDateTime, DecodeDateTime and their helpers
(DecodeDate, DecodeNumber, DecodeNumberField, DecodeTime, DecodeTimezone,
ValidateDate) from src/backend/utils/adt/datetime.c, ported step by step so that every
input PostgreSQL accepts means the same here, and every one it rejects is rejected with
its SQLSTATE. DateStyle is 'ISO, MDY' and the session time zone UTC, as in weir.

`decode` returns the broken-down fields (`Tm`); `weir.codec.datetime` turns them into
values. Years are astronomical (1 BC is year 0), as in PostgreSQL's struct pg_tm.
"""

from __future__ import annotations

import datetime as dt

from weir.codec import timezones as tzs
from weir.codec.datetime_fields import (
    ADBC,
    ALL_SECS_M,
    AM,
    AMPM,
    BAD,
    BC,
    DATE_M,
    DATETK,
    DAY,
    DAYS,
    DOW,
    DOY,
    DTK_DATE,
    DTK_NOW,
    DTK_NUMBER,
    DTK_SPECIAL,
    DTK_STRING,
    DTK_TIME,
    DTK_TODAY,
    DTK_TOMORROW,
    DTK_TZ,
    DTK_YESTERDAY,
    DTK_ZULU,
    DTZ,
    DTZMOD,
    DYNTZ,
    FIELD_OVERFLOW,
    HOUR,
    HR24,
    IGNORE_DTF,
    ISOTIME,
    JULIAN,
    MAXDATEFIELDS,
    MD_FIELD_OVERFLOW,
    MINUTE,
    MONTH,
    PM,
    RESERV,
    SECOND,
    TIME_M,
    TZ,
    TZDISP_OVERFLOW,
    UNITS,
    UNKNOWN_FIELD,
    USECS_PER_DAY,
    WORKBUF,
    YEAR,
    DtErr,
    M,
    State,
    Tm,
    date2j,
    decode_date,
    decode_number,
    decode_number_field,
    decode_time,
    decode_timezone,
    fsec_of,
    isalnum,
    isalpha,
    isdigit,
    isleap,
    j2date,
    strtod_fraction,
    strtol,
    valid_julian,
)
from weir.errors import SqlState, WeirError


def error(e: DtErr, s: str, tname: str) -> WeirError:
    """DateTimeParseError."""
    if e.code in (FIELD_OVERFLOW, MD_FIELD_OVERFLOW):
        hint = 'Perhaps you need a different "datestyle" setting.' if e.code == MD_FIELD_OVERFLOW else None
        return WeirError(SqlState.DATETIME_FIELD_OVERFLOW, f'date/time field value out of range: "{s}"', hint=hint)
    if e.code == TZDISP_OVERFLOW:
        return WeirError("22009", f'time zone displacement out of range: "{s}"')
    return WeirError(SqlState.INVALID_DATETIME_FORMAT, f'invalid input syntax for type {tname}: "{s}"')


# ------------------------------------------------------------------ ParseDateTime


def parse_fields(s: str) -> list[tuple[str, int]]:
    """ParseDateTime: (field, ftype) pairs; letters lower-cased."""
    out: list[tuple[str, int]] = []
    n, i, used = len(s), 0, 0
    while i < n:
        c = s[i]
        if c in " \t\n\r\f\v":
            i += 1
            continue
        if len(out) >= MAXDATEFIELDS:
            raise DtErr(BAD)
        buf: list[str] = []
        if isdigit(c):
            while i < n and isdigit(s[i]):
                buf.append(s[i])
                i += 1
            if i < n and s[i] == ":":
                ftype = DTK_TIME
                buf.append(s[i])
                i += 1
                while i < n and (isdigit(s[i]) or s[i] in ":."):
                    buf.append(s[i])
                    i += 1
            elif i < n and s[i] in "-/.":
                delim = s[i]
                buf.append(delim)
                i += 1
                if i < n and isdigit(s[i]):
                    ftype = DTK_NUMBER if delim == "." else DTK_DATE
                    while i < n and isdigit(s[i]):
                        buf.append(s[i])
                        i += 1
                    if i < n and s[i] == delim:
                        ftype = DTK_DATE
                        buf.append(s[i])
                        i += 1
                        while i < n and (isdigit(s[i]) or s[i] == delim):
                            buf.append(s[i])
                            i += 1
                else:
                    ftype = DTK_DATE
                    while i < n and (isalnum(s[i]) or s[i] == delim):
                        buf.append(s[i].lower())
                        i += 1
            else:
                ftype = DTK_NUMBER
        elif c == ".":
            buf.append(c)
            i += 1
            while i < n and isdigit(s[i]):
                buf.append(s[i])
                i += 1
            ftype = DTK_NUMBER
        elif isalpha(c):
            ftype = DTK_STRING
            while i < n and isalpha(s[i]):
                buf.append(s[i].lower())
                i += 1
            is_date = False
            if i < n and s[i] in "-/.":
                is_date = True
            elif i < n and (s[i] == "+" or isdigit(s[i])):
                is_date = "".join(buf) not in DATETK
            if is_date:
                ftype = DTK_DATE
                buf.append(s[i].lower())
                i += 1
                while i < n and (s[i] in "+-/_.:" or isalnum(s[i])):
                    buf.append(s[i].lower())
                    i += 1
        elif c in "+-":
            buf.append(c)
            i += 1
            while i < n and s[i] in " \t\n\r\f\v":
                i += 1
            if i < n and isdigit(s[i]):
                ftype = DTK_TZ
                buf.append(s[i])
                i += 1
                while i < n and (isdigit(s[i]) or s[i] in ":.-"):
                    buf.append(s[i])
                    i += 1
            elif i < n and isalpha(s[i]):
                ftype = DTK_SPECIAL
                while i < n and isalpha(s[i]):
                    buf.append(s[i].lower())
                    i += 1
            else:
                raise DtErr(BAD)
        elif c.isascii() and not c.isalnum() and c.isprintable() and c != " ":
            i += 1
            continue
        else:
            raise DtErr(BAD)
        used += len(buf) + 1
        if used > WORKBUF:
            raise DtErr(BAD)
        out.append(("".join(buf), ftype))
    return out


def decode(s: str, now: dt.datetime) -> Tm:
    """ParseDateTime + DecodeDateTime for date, timestamp and timestamptz input. `now`
    is the statement's time (naive UTC) for 'now', 'today', 'tomorrow', 'yesterday'."""
    fields = parse_fields(s)
    tm = Tm()
    st = State()
    ptype: object = 0
    mer = HR24
    bc = False
    isjulian = False
    named: tzs.Zone | None = None
    dyn: tzs.Abbrev | None = None
    nf = len(fields)
    for i, (f, ftype) in enumerate(fields):
        tmask = 0
        if ftype == DTK_DATE:
            if ptype == JULIAN:
                try:
                    jday, end = strtol(f)
                except OverflowError:
                    raise DtErr(FIELD_OVERFLOW) from None
                if jday < 0:
                    raise DtErr(FIELD_OVERFLOW)
                tm.year, tm.mon, tm.mday = j2date(jday)
                isjulian = True
                tm.tz = decode_timezone(f[end:])
                tmask = DATE_M | TIME_M | M(TZ)
                ptype = 0
            elif ptype != 0 or (st.fmask & (M(MONTH) | M(DAY))) == (M(MONTH) | M(DAY)):
                if isdigit(f[0]) or ptype != 0:
                    if ptype != 0:
                        if ptype != "time":
                            raise DtErr(BAD)
                        ptype = 0
                    if (st.fmask & TIME_M) == TIME_M:
                        raise DtErr(BAD)
                    cut = f.find("-")
                    if cut < 0:
                        raise DtErr(BAD)
                    tm.tz = decode_timezone(f[cut:])
                    tmask = decode_number_field(f[:cut], st.fmask, tm, st) | M(TZ)
                else:
                    named = tzs.zone(f)
                    if named is None:
                        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f'time zone "{f}" not recognized')
                    tmask = M(TZ)
            else:
                tmask = decode_date(f, st.fmask, tm, st)
        elif ftype == DTK_TIME:
            if ptype != 0:
                if ptype != "time":
                    raise DtErr(BAD)
                ptype = 0
            tmask = decode_time(f, tm)
            if _time_overflows(tm.hour, tm.min, tm.sec, tm.fsec):
                raise DtErr(FIELD_OVERFLOW)
        elif ftype == DTK_TZ:
            tm.tz = decode_timezone(f)
            tmask = M(TZ)
        elif ftype == DTK_NUMBER:
            if ptype != 0:
                tmask = _labelled_number(f, ptype, tm, st)
                ptype = 0
                tm.dtype = "date"
                if tmask & M(JULIAN):
                    tmask &= ~M(JULIAN)
                    isjulian = True
            else:
                flen = len(f)
                cut = f.find(".")
                if cut >= 0 and not (st.fmask & DATE_M):
                    tmask = decode_date(f, st.fmask, tm, st)
                elif cut >= 0 and cut > 2:
                    tmask = decode_number_field(f, st.fmask, tm, st)
                elif flen >= 6 and (not (st.fmask & DATE_M) or not (st.fmask & TIME_M)):
                    tmask = decode_number_field(f, st.fmask, tm, st)
                else:
                    tmask = decode_number(f, st.have_text_month, st.fmask, tm, st)
        elif ftype in (DTK_STRING, DTK_SPECIAL):
            ab = tzs.abbrev(f)
            if ab is not None:
                kind, val = (DYNTZ if ab.zone else DTZ if ab.dst else TZ), ab
            else:
                kind, val = DATETK.get(f, (UNKNOWN_FIELD, 0))
            if kind == IGNORE_DTF:
                continue
            tmask = M(kind)
            if kind == RESERV:
                tmask = _reserved(str(val), tm, now)
            elif kind == MONTH:
                if (st.fmask & M(MONTH)) and not st.have_text_month and not (st.fmask & M(DAY)) \
                        and 1 <= tm.mon <= 31:
                    tm.mday = tm.mon
                    tmask = M(DAY)
                st.have_text_month = True
                tm.mon = int(val)  # type: ignore[call-overload]
            elif kind == DTZMOD:
                tmask |= M(DTZ)
                tm.tz -= 3600
            elif kind in (DTZ, TZ):
                assert isinstance(val, tzs.Abbrev)
                if kind == DTZ:
                    tmask |= M(TZ)
                tm.tz = -val.offset
            elif kind == DYNTZ:
                assert isinstance(val, tzs.Abbrev)
                tmask |= M(TZ)
                dyn = val
            elif kind == AMPM:
                mer = int(val)  # type: ignore[call-overload]
            elif kind == ADBC:
                bc = val == BC
            elif kind == DOW:
                pass
            elif kind == UNITS:
                tmask = 0
                ptype = val
            elif kind == ISOTIME:
                tmask = 0
                if (st.fmask & DATE_M) != DATE_M:
                    raise DtErr(BAD)
                if i >= nf - 1 or fields[i + 1][1] not in (DTK_NUMBER, DTK_TIME, DTK_DATE):
                    raise DtErr(BAD)
                ptype = val
            elif kind == UNKNOWN_FIELD:
                named = tzs.zone(f)
                if named is None:
                    raise DtErr(BAD)
                tmask = M(TZ)
            else:
                raise DtErr(BAD)
        else:
            raise DtErr(BAD)
        if tmask & st.fmask:
            raise DtErr(BAD)
        st.fmask |= tmask

    _validate_date(st.fmask, isjulian, st.is2digits, bc, tm)
    if mer != HR24 and tm.hour > 12:
        raise DtErr(FIELD_OVERFLOW)
    if mer == AM and tm.hour == 12:
        tm.hour = 0
    elif mer == PM and tm.hour != 12:
        tm.hour += 12
    if tm.dtype == "date":
        if (st.fmask & DATE_M) != DATE_M:
            raise DtErr(BAD)
        if named is not None or dyn is not None:
            if st.fmask & M(DTZMOD):
                raise DtErr(BAD)
            tm.tz = _zone_offset(tm, named) if named is not None else _abbrev_offset(tm, dyn)
        elif not (st.fmask & M(TZ)):
            if st.fmask & M(DTZMOD):
                raise DtErr(BAD)
            tm.tz = 0  # the session's time zone, UTC
    return tm


def _reserved(val: str, tm: Tm, now: dt.datetime) -> int:
    if val == DTK_NOW:
        tm.dtype = "date"
        tm.year, tm.mon, tm.mday = now.year, now.month, now.day
        tm.hour, tm.min, tm.sec, tm.fsec, tm.tz = now.hour, now.minute, now.second, now.microsecond, 0
        return DATE_M | TIME_M | M(TZ)
    if val in (DTK_TODAY, DTK_TOMORROW, DTK_YESTERDAY):
        tm.dtype = "date"
        day = now.date() + dt.timedelta(days={DTK_TODAY: 0, DTK_TOMORROW: 1, DTK_YESTERDAY: -1}[val])
        tm.year, tm.mon, tm.mday = day.year, day.month, day.day  # a time given stays
        return DATE_M
    if val == DTK_ZULU:
        tm.dtype = "date"
        tm.hour = tm.min = tm.sec = 0
        tm.tz = 0
        return TIME_M | M(TZ)
    tm.dtype = val
    return M(RESERV)


def _labelled_number(f: str, ptype: object, tm: Tm, st: State) -> int:
    """A number after a unit label ('J2451187', 'y2001m02d04', 'T040506')."""
    try:
        val, end = strtol(f)
    except OverflowError:
        raise DtErr(FIELD_OVERFLOW) from None
    rest = f[end:]
    if rest.startswith("."):
        if ptype not in (JULIAN, "time", SECOND):
            raise DtErr(BAD)
    elif rest:
        raise DtErr(BAD)
    if ptype == YEAR:
        tm.year = val
        return M(YEAR)
    if ptype == MONTH:
        if (st.fmask & M(MONTH)) and (st.fmask & M(HOUR)):
            tm.min = val
            return M(MINUTE)
        tm.mon = val
        return M(MONTH)
    if ptype == DAY:
        tm.mday = val
        return M(DAY)
    if ptype == HOUR:
        tm.hour = val
        return M(HOUR)
    if ptype == MINUTE:
        tm.min = val
        return M(MINUTE)
    if ptype == SECOND:
        tm.sec = val
        if rest:
            tm.fsec = fsec_of(strtod_fraction(rest))
            return ALL_SECS_M
        return M(SECOND)
    if ptype == JULIAN:
        if val < 0:
            raise DtErr(FIELD_OVERFLOW)
        tm.year, tm.mon, tm.mday = j2date(val)
        mask = DATE_M | M(JULIAN)
        if rest:
            frac = strtod_fraction(rest)
            t = int(frac * USECS_PER_DAY)
            tm.hour, t = divmod(t, 3_600_000_000)
            tm.min, t = divmod(t, 60_000_000)
            tm.sec, tm.fsec = divmod(t, 1_000_000)
            mask |= TIME_M
        return mask
    if ptype == "time":
        tmask = decode_number_field(f, st.fmask | DATE_M, tm, st)
        if tmask != TIME_M:
            raise DtErr(BAD)
        return tmask
    raise DtErr(BAD)


def _time_overflows(hour: int, minute: int, sec: int, fsec: int) -> bool:
    if not (0 <= hour <= 24 and 0 <= minute < 60 and 0 <= sec <= 60 and 0 <= fsec <= 1_000_000):
        return True
    return (((hour * 60 + minute) * 60) + sec) * 1_000_000 + fsec > USECS_PER_DAY


def _validate_date(fmask: int, isjulian: bool, is2digits: bool, bc: bool, tm: Tm) -> None:
    if fmask & M(YEAR):
        if isjulian:
            pass
        elif bc:
            if tm.year <= 0:
                raise DtErr(FIELD_OVERFLOW)
            tm.year = -(tm.year - 1)
        elif is2digits:
            if tm.year < 0:
                raise DtErr(FIELD_OVERFLOW)
            if tm.year < 70:
                tm.year += 2000
            elif tm.year < 100:
                tm.year += 1900
        elif tm.year <= 0:
            raise DtErr(FIELD_OVERFLOW)
    if fmask & M(DOY):
        tm.year, tm.mon, tm.mday = j2date(date2j(tm.year, 1, 1) + tm.yday - 1)
    if fmask & M(MONTH) and not 1 <= tm.mon <= 12:
        raise DtErr(MD_FIELD_OVERFLOW)
    if fmask & M(DAY) and not 1 <= tm.mday <= 31:
        raise DtErr(MD_FIELD_OVERFLOW)
    if (fmask & DATE_M) == DATE_M and tm.mday > DAYS[isleap(tm.year)][tm.mon - 1]:
        raise DtErr(FIELD_OVERFLOW)


def _local_seconds(tm: Tm) -> int | None:
    """The wall-clock time as seconds from 1970 (None outside the Julian range)."""
    if not valid_julian(tm.year, tm.mon, tm.mday):
        return None
    days = date2j(tm.year, tm.mon, tm.mday) - 2440588
    return days * 86400 + (tm.hour * 60 + tm.min) * 60 + tm.sec


def _zone_offset(tm: Tm, zone: tzs.Zone) -> int:
    """DetermineTimeZoneOffset: the zone's offset (seconds west) at a wall-clock time."""
    local = _local_seconds(tm)
    if local is None:
        return 0
    if zone.info is None:
        assert zone.fixed is not None
        return -zone.fixed
    try:
        wall = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=local)
    except OverflowError:
        return 0
    if not 1 < wall.year < 9999:
        return 0
    utc = zone.local_to_utc(wall)
    return int((utc - wall).total_seconds())


def _abbrev_offset(tm: Tm, ab: tzs.Abbrev | None) -> int:
    """DetermineTimeZoneAbbrevOffset: what the abbreviation meant in its zone then."""
    assert ab is not None
    zone = tzs.dynamic_zone(ab)
    west = _zone_offset(tm, zone)
    local = _local_seconds(tm)
    probe = local + west if local is not None else 0
    east = tzs.abbrev_offset(ab, probe)
    return -east if east is not None else west


def validate_date(fmask: int, isjulian: bool, is2digits: bool, bc: bool, tm: Tm) -> None:
    """ValidateDate."""
    _validate_date(fmask, isjulian, is2digits, bc, tm)


def zone_offset_at(tm: Tm, zone: tzs.Zone) -> int:
    """A zone's offset (seconds west) at a wall-clock time (DetermineTimeZoneOffset)."""
    return _zone_offset(tm, zone)


def abbrev_offset_at(tm: Tm, ab: tzs.Abbrev) -> int:
    """A dynamic abbreviation's offset (seconds west) at a wall-clock time."""
    return _abbrev_offset(tm, ab)
