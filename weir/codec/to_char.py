"""to_char(timestamp | timestamptz | date, template) as PostgreSQL 15's DCH_to_char writes
it (the template read by `weir.codec.formatting.parse_format`): every date/time pattern,
FM (no padding), TH/th (ordinal suffixes), quoted text. The session's time zone is UTC,
so a timestamptz's TZ is "UTC" and its offset +00."""

from __future__ import annotations

import datetime as dt

from weir.codec import datetime_fields as df
from weir.codec import formatting
from weir.errors import SqlState, WeirError

_RM_UPPER = ["XII", "XI", "X", "IX", "VIII", "VII", "VI", "V", "IV", "III", "II", "I"]


def _numth(num: str, upper: bool) -> str:
    """str_numth: 1st, 2nd, 3rd, 4th, 11th, 12th, 13th."""
    last = num[-1:] if num else ""
    if len(num) > 1 and num[-2] == "1":
        suffix = "th"
    else:
        suffix = {"1": "st", "2": "nd", "3": "rd"}.get(last, "th")
    return num + (suffix.upper() if upper else suffix)


def _case(text: str, name: str) -> str:
    """DAY / Day / day: the case of the pattern as written."""
    if name.isupper() or (len(name) > 1 and name[:2].isupper()):
        return text.upper()
    if name[0].isupper():
        return text.capitalize()
    return text.lower()


def to_char(value: dt.datetime | dt.date, fmt: str, with_zone: bool) -> str:  # noqa: C901 - one case per pattern
    """`value` (naive; UTC for a timestamptz) written by `fmt`."""
    if not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    year, mon, mday = value.year, value.month, value.day
    hour, minute, sec, fsec = value.hour, value.minute, value.second, value.microsecond
    yday = value.timetuple().tm_yday
    wday = (value.weekday() + 1) % 7  # Sunday = 0
    iso_year, iso_week, iso_day = value.isocalendar()
    out: list[str] = []
    for n in formatting.parse_format(fmt):
        if n.kind != "action":
            out.append(n.text)
            continue
        assert n.key is not None
        name, kid = n.key[0], n.key[1]
        fm = n.fm

        def num(v: int, width: int, n: formatting.Node = n, fm: bool = fm) -> str:
            text = f"{v:0{0 if fm else width}d}"
            return _numth(text, n.upper_th) if n.th else text

        if kid == "FX":
            continue
        if kid == "A_M":
            out.append(_case("p.m." if hour >= 12 else "a.m.", name))
        elif kid == "AM":
            out.append(_case("pm" if hour >= 12 else "am", name))
        elif kid in ("HH", "HH12"):
            out.append(num(12 if hour % 12 == 0 else hour % 12, 2))
        elif kid == "HH24":
            out.append(num(hour, 2))
        elif kid == "MI":
            out.append(num(minute, 2))
        elif kid == "SS":
            out.append(num(sec, 2))
        elif kid in ("MS", "US", "FF1", "FF2", "FF3", "FF4", "FF5", "FF6"):
            digits = {"MS": 3, "US": 6}.get(kid) or int(kid[2])
            text = f"{fsec // 10 ** (6 - digits):0{digits}d}"
            out.append(_numth(text, n.upper_th) if n.th else text)
        elif kid == "SSSS":
            text = str((hour * 60 + minute) * 60 + sec)
            out.append(_numth(text, n.upper_th) if n.th else text)
        elif kid in ("TZ", "TZH", "TZM", "OF"):
            if not with_zone:
                raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f'to_char pattern "{name}" of a timestamp without time zone is not supported')
            out.append({"TZ": "UTC" if name == "TZ" else "utc", "TZH": "+00", "TZM": "00", "OF": "+00"}[kid])
        elif kid in ("A_D", "B_C"):
            out.append(_case("a.d.", name))  # years 1 to 9999: always AD
        elif kid in ("AD", "BC"):
            out.append(_case("ad", name))
        elif kid in ("MONTH", "MON"):
            full = formatting.MONTHS_FULL[mon - 1]
            text = _case(full if kid == "MONTH" else full[:3], name)
            out.append(text if fm or kid == "MON" else f"{text:<9}")
        elif kid in ("DAY", "DY"):
            full = formatting.DAYS[wday]
            text = _case(full if kid == "DAY" else full[:3], name)
            out.append(text if fm or kid == "DY" else f"{text:<9}")
        elif kid in ("DDD", "IDDD"):
            out.append(num(yday if kid == "DDD" else (iso_week - 1) * 7 + iso_day, 3))
        elif kid == "DD":
            out.append(num(mday, 2))
        elif kid == "MM":
            out.append(num(mon, 2))
        elif kid == "D":
            out.append(num(wday + 1, 0))
        elif kid == "ID":
            out.append(num(iso_day, 0))
        elif kid == "WW":
            out.append(num((yday - 1) // 7 + 1, 2))
        elif kid == "IW":
            out.append(num(iso_week, 2))
        elif kid == "Q":
            out.append(num((mon - 1) // 3 + 1, 0))
        elif kid == "CC":
            out.append(num((year - 1) // 100 + 1, 2))
        elif kid == "Y_YYY":
            text = f"{year // 1000},{year % 1000:03d}"
            out.append(_numth(text, n.upper_th) if n.th else text)
        elif kid in ("YYYY", "IYYY"):
            out.append(num(year if kid == "YYYY" else iso_year, 4))
        elif kid in ("YYY", "IYY"):
            out.append(num((year if kid == "YYY" else iso_year) % 1000, 3))
        elif kid in ("YY", "IY"):
            out.append(num((year if kid == "YY" else iso_year) % 100, 2))
        elif kid in ("Y", "I"):
            out.append(num((year if kid == "Y" else iso_year) % 10, 1))
        elif kid == "RM":
            text = _RM_UPPER[12 - mon]
            text = text if name == "RM" else text.lower()
            out.append(text if fm else f"{text:<4}")
        elif kid == "W":
            out.append(num((mday - 1) // 7 + 1, 0))
        elif kid == "J":
            out.append(num(df.date2j(year, mon, mday), 0))
        else:
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f'to_char pattern "{name}" is not supported')
    return "".join(out)
