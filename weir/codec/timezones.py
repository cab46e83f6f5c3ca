"""Time zone names as PostgreSQL 15 reads them: its `Default` set of abbreviations
(timezone_abbreviations = 'Default'), IANA zone names (matched without regard to case,
as pg_tzset does) and POSIX zone specifications with no daylight-saving part
('UTC+3', 'PST+8', '+05:30': POSIX offsets count hours west of Greenwich).

An abbreviation is fixed (EST is always -05:00) or dynamic (MSK means whatever
Europe/Moscow called MSK at the time in question): `abbrev_offset` resolves the latter
as PostgreSQL's pg_interpret_timezone_abbrev does, from the zone's own transitions.
Offsets here are seconds east of Greenwich.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import importlib.resources
import re
import struct
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from weir.errors import SqlState, WeirError

# PostgreSQL 15's share/timezonesets/Default: name:offset[:D] (fixed; D = daylight time)
# or name:Zone/Name (dynamic).
_DEFAULT = """
eat:10800 sast:7200 wat:3600 act:-18000 akdt:-28800:D akst:-32400 art:America/Argentina/Buenos_Aires
arst:America/Argentina/Buenos_Aires bot:-14400 bra:-10800 brst:-7200:D brt:-10800 cot:-18000
cdt:-18000:D clst:-10800:D clt:America/Santiago cst:-21600 edt:-14400:D egst:0:D egt:-3600
est:-18000 fnt:-7200 fnst:-3600:D gft:-10800 gyt:America/Guyana mdt:-21600:D mst:-25200 ndt:-9000:D
nft:-12600 nst:-12600 pet:-18000 pdt:-25200:D pmdt:-7200:D pmst:-10800 pst:-28800 pyst:-10800:D
pyt:America/Asuncion uyst:-7200:D uyt:-10800 vet:America/Caracas wgst:-7200:D wgt:-10800
davt:Antarctica/Davis ddut:36000 mawt:Antarctica/Mawson aft:16200 almt:21600 almst:25200:D
amst:Asia/Yerevan amt:-14400 anast:Asia/Anadyr anat:Asia/Anadyr azst:Asia/Baku azt:Asia/Baku
bdt:21600 bnt:28800 bort:28800 btt:21600 cct:28800 gest:Asia/Tbilisi get:Asia/Tbilisi hkt:28800
ict:25200 idt:10800:D irkst:Asia/Irkutsk irkt:Asia/Irkutsk irt:12600 ist:7200 jayt:32400 jst:32400
kdt:36000:D kgst:21600:D kgt:Asia/Bishkek krast:Asia/Krasnoyarsk krat:Asia/Krasnoyarsk kst:32400
lkt:Asia/Colombo magst:Asia/Magadan magt:Asia/Magadan mmt:23400 myt:28800 novst:Asia/Novosibirsk
novt:Asia/Novosibirsk npt:20700 omsst:Asia/Omsk omst:Asia/Omsk petst:Asia/Kamchatka
pett:Asia/Kamchatka pht:28800 pkt:18000 pkst:21600:D sgt:Asia/Singapore tjt:18000 tmt:Asia/Ashgabat
ulast:32400:D ulat:Asia/Ulaanbaatar uzst:21600:D uzt:18000 vlast:Asia/Vladivostok
vlat:Asia/Vladivostok xjt:21600 yakst:Asia/Yakutsk yakt:Asia/Yakutsk yekst:21600:D
yekt:Asia/Yekaterinburg adt:-10800:D ast:-14400 azost:0:D azot:-3600 fkst:Atlantic/Stanley
fkt:Atlantic/Stanley acsst:37800:D acdt:37800:D acst:34200 acwst:31500 aesst:39600:D aedt:39600:D
aest:36000 awsst:32400:D awst:28800 cadt:37800:D cast:34200 lhdt:Australia/Lord_Howe lhst:37800
ligt:36000 nzt:43200 sadt:37800:D wadt:28800:D wast:25200 wdt:32400:D gmt:0 uct:0 ut:0 utc:0 z:0
zulu:0 bst:3600:D bdst:7200:D cest:7200:D cet:3600 cetdst:7200:D eest:10800:D eet:7200
eetdst:10800:D fet:10800 mest:7200:D mesz:7200:D met:3600 metdst:7200:D mez:3600 msd:14400:D
msk:Europe/Moscow volt:Europe/Volgograd wet:0 wetdst:3600:D cxt:25200 iot:Indian/Chagos mut:14400
must:18000:D mvt:18000 ret:14400 sct:14400 tft:18000 chadt:49500:D chast:45900 chut:36000
ckt:Pacific/Rarotonga easst:Pacific/Easter east:Pacific/Easter fjst:46800:D fjt:43200 galt:-21600
gamt:-32400 gilt:43200 hst:-36000 kost:Pacific/Kosrae lint:Pacific/Kiritimati mart:-34200 mht:43200
mpt:36000 nut:Pacific/Niue nzdt:46800:D nzst:43200 pgt:36000 pont:39600 pwt:32400 taht:-36000
tkt:Pacific/Fakaofo tot:46800 trut:36000 tvt:43200 vut:39600 wakt:43200 wft:43200 yapt:36000
"""


@dataclass(frozen=True)
class Abbrev:
    """One abbreviation: a fixed offset, or (zone set) the zone it is dynamic in."""

    name: str
    offset: int  # seconds east of UTC (fixed abbreviations)
    dst: bool
    zone: str | None = None


def _table() -> dict[str, Abbrev]:
    out: dict[str, Abbrev] = {}
    for item in _DEFAULT.split():
        name, _, rest = item.partition(":")
        value, _, flag = rest.partition(":")
        if re.fullmatch(r"-?\d+", value):
            out[name] = Abbrev(name, int(value), flag == "D")
        else:
            out[name] = Abbrev(name, 0, False, value)
    return out


ABBREVS: dict[str, Abbrev] = _table()
TOKMAXLEN = 10  # PostgreSQL compares keywords and abbreviations on their first 10 characters


def abbrev(lower: str) -> Abbrev | None:
    """The abbreviation a lower-case word names (PostgreSQL's DecodeTimezoneAbbrev)."""
    return ABBREVS.get(lower[:TOKMAXLEN]) if len(lower) <= TOKMAXLEN else None


@functools.cache
def _zone_names() -> dict[str, str]:
    names = {n.lower(): n for n in zoneinfo.available_timezones()}
    for extra in ("UTC", "GMT", "EST", "MST", "HST", "EST5EDT", "CST6CDT", "MST7MDT", "PST8PDT", "GMT0"):
        names.setdefault(extra.lower(), extra)
    return names


_POSIX = re.compile(r"(?:[A-Za-z]{3,}|<[A-Za-z0-9+-]+>)?([+-]?)(\d{1,3})(?::(\d{1,2})(?::(\d{1,2}))?)?")


@dataclass(frozen=True)
class Zone:
    """A zone: an IANA zone, or a POSIX fixed offset (seconds east)."""

    name: str
    info: zoneinfo.ZoneInfo | None
    fixed: int | None = None

    def utcoffset_at_utc(self, utc: dt.datetime) -> int:
        if self.info is None:
            assert self.fixed is not None
            return self.fixed
        off = utc.replace(tzinfo=dt.UTC).astimezone(self.info).utcoffset()
        return int(off.total_seconds()) if off is not None else 0

    def local_to_utc(self, local: dt.datetime) -> dt.datetime:
        """A wall-clock time as naive UTC. A time skipped by a change (clocks set forward)
        takes the offset before it, a repeated one the offset after it, as PostgreSQL's
        DetermineTimeZoneOffset does."""
        if self.info is None:
            assert self.fixed is not None
            return local - dt.timedelta(seconds=self.fixed)
        early, late = local.replace(tzinfo=self.info, fold=0), local.replace(tzinfo=self.info, fold=1)
        before, after = early.utcoffset() or dt.timedelta(), late.utcoffset() or dt.timedelta()
        return local - (before if before < after else after)


def zone(name: str) -> Zone | None:
    """The zone a full name means (pg_tzset): an IANA name in any case, or a POSIX
    specification without a daylight-saving part. None when PostgreSQL knows no such zone
    (or it is a POSIX specification with daylight-saving rules, which weir refuses)."""
    if not name or len(name) > 255:
        return None
    canonical = _zone_names().get(name.lower())
    if canonical is not None:
        try:
            return Zone(canonical, zoneinfo.ZoneInfo(canonical))
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            return None
    m = _POSIX.fullmatch(name)
    if m is None:
        if re.fullmatch(r"(?:[A-Za-z]{3,}|<[A-Za-z0-9+-]+>)?[+-]?\d.*", name):
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                            f'time zone "{name}" (a POSIX zone with daylight-saving rules) is not supported')
        return None
    sign, hours, minutes, seconds = m.groups()
    h, mi, s = int(hours), int(minutes or 0), int(seconds or 0)
    if h > 167 or mi > 59 or s > 60:
        return None
    west = (h * 60 + mi) * 60 + s
    return Zone(name, None, west if sign == "-" else -west)


# ------------------------------------------------------------ dynamic abbreviations


@functools.cache
def _transitions(key: str) -> tuple[list[int], list[tuple[int, bool, str]], list[int]]:
    """A zone's TZif data: transition times (UTC seconds), its local time types
    (offset, is_dst, abbreviation) and the type of each transition."""
    data = _tzif_bytes(key)
    if data is None or data[:4] != b"TZif":
        return [], [], []
    version = data[4:5]

    def block(buf: bytes, start: int, wide: bool) -> tuple[int, list[int], list[tuple[int, bool, str]], list[int]]:
        isut, isstd, leap, timecnt, typecnt, charcnt = struct.unpack(">6l", buf[start + 20:start + 44])
        pos = start + 44
        size = 8 if wide else 4
        times = list(struct.unpack(f">{timecnt}{'q' if wide else 'l'}", buf[pos:pos + timecnt * size]))
        pos += timecnt * size
        idx = list(buf[pos:pos + timecnt])
        pos += timecnt
        raw = [struct.unpack(">lBB", buf[pos + 6 * i:pos + 6 * i + 6]) for i in range(typecnt)]
        pos += 6 * typecnt
        chars = buf[pos:pos + charcnt]
        pos += charcnt
        types = [(off, bool(isdst), chars[ai:chars.index(b"\0", ai)].decode()) for off, isdst, ai in raw]
        pos += leap * (size + 4) + isstd + isut
        return pos, times, types, idx

    end, times, types, idx = block(data, 0, False)
    if version >= b"2":
        _, times, types, idx = block(data, end, True)
    return times, types, idx


def _tzif_bytes(key: str) -> bytes | None:
    for root in zoneinfo.TZPATH:
        p = Path(root) / key
        if p.is_file():
            return p.read_bytes()
    try:
        package, _, leaf = f"tzdata.zoneinfo.{key}".replace("/", ".").rpartition(".")
        return importlib.resources.files(package).joinpath(leaf).read_bytes()
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        return None


def abbrev_offset(ab: Abbrev, utc_seconds: int) -> int | None:
    """The offset a dynamic abbreviation had in its zone at (or, failing that, nearest
    after) a UTC time: pg_interpret_timezone_abbrev. None if the zone never used it."""
    assert ab.zone is not None
    times, types, idx = _transitions(ab.zone)
    upper = ab.name.upper()
    cutoff = bisect.bisect_right(times, utc_seconds)
    for i in range(cutoff - 1, -1, -1):
        off, _, name = types[idx[i]]
        if name == upper:
            return off
    for i in range(cutoff, len(times)):
        off, _, name = types[idx[i]]
        if name == upper:
            return off
    return None


def dynamic_zone(ab: Abbrev) -> Zone:
    assert ab.zone is not None
    z = zone(ab.zone)
    if z is None:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f'time zone "{ab.zone}" not recognized')
    return z


def epoch_seconds(naive_utc: dt.datetime) -> int:
    return int((naive_utc - dt.datetime(1970, 1, 1)).total_seconds() // 1)


# ------------------------------------------------------------ AT TIME ZONE


def resolve(name: str) -> Abbrev | Zone:
    """What AT TIME ZONE / timezone() reads a zone text as: an abbreviation first, then a
    full zone name; 22023 for neither (timestamptz_zone, timestamp_zone)."""
    ab = abbrev(name.lower()[:63])
    if ab is not None:
        return ab
    z = zone(name)
    if z is None:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f'time zone "{name}" not recognized')
    return z


def _range(f: Callable[[], dt.datetime]) -> dt.datetime:
    try:
        return f()
    except (OverflowError, ValueError):
        raise WeirError(SqlState.DATETIME_FIELD_OVERFLOW, "timestamp out of range") from None


def local_of_utc(utc: dt.datetime, name: str) -> dt.datetime:
    """timestamptz AT TIME ZONE name: the wall-clock time there (naive)."""
    r = resolve(name)
    if isinstance(r, Abbrev):
        if r.zone is None:
            return _range(lambda: utc + dt.timedelta(seconds=r.offset))
        east = abbrev_offset(r, epoch_seconds(utc))
        if east is None:
            east = dynamic_zone(r).utcoffset_at_utc(utc)
        return _range(lambda: utc + dt.timedelta(seconds=east))
    return _range(lambda: utc + dt.timedelta(seconds=r.utcoffset_at_utc(utc)))


def utc_of_local(local: dt.datetime, name: str) -> dt.datetime:
    """timestamp AT TIME ZONE name: the instant (naive UTC) of that wall-clock time there."""
    r = resolve(name)
    if isinstance(r, Abbrev):
        if r.zone is None:
            return _range(lambda: local - dt.timedelta(seconds=r.offset))
        z = dynamic_zone(r)
        utc = _range(lambda: z.local_to_utc(local))
        east = abbrev_offset(r, epoch_seconds(utc))
        return utc if east is None else _range(lambda: local - dt.timedelta(seconds=east))
    return _range(lambda: r.local_to_utc(local))


def spark_zone(name: str) -> str | None:
    """The zone text Spark's from_utc_timestamp means the same by, if there is one: a fixed
    abbreviation's offset, an IANA region name or UTC. None: weir computes it (dynamic
    abbreviations, POSIX zones, other names)."""
    r = resolve(name)
    if isinstance(r, Abbrev):
        if r.zone is not None:
            return None
        sign = "-" if r.offset < 0 else "+"
        h, rem = divmod(abs(r.offset), 3600)
        m, s = divmod(rem, 60)
        return f"{sign}{h:02d}:{m:02d}:{s:02d}"
    if r.info is not None and ("/" in r.name and not r.name.startswith("Etc/") or r.name == "UTC"):
        return r.name
    return None
