"""Date/time input (weir.codec.datetime_parse) against a real PostgreSQL: each input is
read as date, timestamp and timestamptz by both, and weir's text (or SQLSTATE) must be
PostgreSQL's. Where PostgreSQL holds a value weir's types cannot (BC years, years past
9999, infinities), weir must refuse it (22008 / 0A000), never give another value."""

from __future__ import annotations

import re

import psycopg
import pytest

from tests.pg_server import pg_server  # noqa: F401  (session fixture)
from weir.codec import datetime as cdt
from weir.errors import WeirError

INPUTS = [
    # ISO, with T, with zones
    "1999-01-08", "1999-01-08 04:05:06", "1999-01-08T04:05:06Z", "1999-01-08 04:05:06+05:30",
    "1997-02-10 17:32:01-0800", "1997-02-10 17:32:01-08", "2001-09-22T18:19:20", "20011227T040506.789-08",
    "20011227 040506+08", "2001.12.27 04:05:06.789-08", "2001/12/27 04:05:06.789-08",
    # month names, MDY order, two-digit years, run-together numbers, day of year, Julian days
    "January 8, 1999", "Jan 08 1999", "1/8/1999", "01/02/03", "19990108", "990108", "1999.008",
    "J2451187", "J2452271.5+08", "J2452271 04:05:06-08", "99-Jan-08", "08-Jan-99", "Jan-08-99",
    "1999 Jan 08", "08 Jan 99", "99 08 Jan", "01-08-99", "99-08-01", "1999 08 01", "12.27.2001 04:05:06.789+08",
    "27.12.2001 04:05:06.789+08", "Y2001M12D27H04M05S06.789+08", "97FEB10 5:32:01PM UTC",
    "Feb 10 5:32PM 1997", "Mon Feb 10 17:32:01 1997 PST", "Mon Feb 10 17:32:01.5 1997 PST",
    "1997.041 17:32:01 UTC", "02-10-1997 17:32:01 PST", "Feb-10-1997 17:32:01 PST",
    # zone names, abbreviations (fixed and dynamic), POSIX zones
    "19970210 173201 America/New_York", "19970710 173201 America/New_York",
    "19970710 173201 America/Does_not_exist", "20500710 173201 Europe/Helsinki",
    "Wed Jul 11 10:51:14 America/New_York 2001", "Wed Jul 11 10:51:14 GMT-4 2001",
    "Wed Jul 11 10:51:14 PST+03:00 2001", "2000-03-15 02:14:05 MST+7:00", "2000-03-15 08:14:01 GMT+8",
    "2011-03-27 02:30:00 MSK", "2014-10-26 01:00:00 MSK", "1999-01-08 04:05:06 MET DST",
    "2021-11-07 01:30 America/New_York", "2021-03-14 02:30 America/New_York", "1999-01-08 EST5EDT",
    # special values
    "epoch", "allballs", "today", "tomorrow", "yesterday", "tomorrow EST", "10:30 today",
    "yesterday 12:34:56", "infinity", "-infinity", "+infinity", "current",
    # BC, year 0, out of range, invalid
    "January 8, 99 BC", "Feb 16 17:32:01 0097 BC", "4714-11-24 00:00:00+00 BC", "0000-01-01",
    "Feb 16 17:32:01 -0097", "Sat Mar 12 23:58:48 10000 IST", "100000312 23:58:48 IST",
    "1999-13-01", "1999-02-29", "2000-02-29", "1999-01-32", "13/1/1999", "2000-01-01 24:00",
    "2000-01-01 24:00:01", "2000-01-01 23:59:60", "1999-01-08 04:05:06.9999995", "1999-01-08 foo",
    "1999-01-08 04:05:06 +15:01", "1999-01-08 04:05:06 +16", "", "  1999-01-08  ", "Jan 8 99 2000",
]

TYPES = [("date", cdt.date_in, cdt.date_out), ("timestamp", cdt.timestamp_in, cdt.timestamp_out),
         ("timestamptz", cdt.timestamptz_in, cdt.timestamptz_out)]


@pytest.fixture(scope="module")
def pg(pg_server):  # noqa: ANN001, ANN201, F811
    with psycopg.connect(pg_server.dsn(), autocommit=True) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        conn.execute("SET DateStyle = 'ISO, MDY'")
        yield conn


def _pg(conn: psycopg.Connection, s: str, t: str) -> tuple[str, str]:
    try:
        row = conn.execute(f"SELECT %s::{t}::text", (s,)).fetchone()
        assert row is not None
        return "ok", row[0]
    except psycopg.Error as e:
        return "error", e.sqlstate or ""


def _weir(s: str, fin, fout) -> tuple[str, str]:  # noqa: ANN001
    try:
        return "ok", fout(fin(s))
    except WeirError as e:
        return "error", e.sqlstate


def _beyond_weir(text: str) -> bool:
    """A value PostgreSQL holds and weir's types cannot."""
    return "BC" in text or "infinity" in text or re.match(r"\d{5}", text) is not None


@pytest.mark.parametrize("s", INPUTS)
def test_input_as_postgresql(pg, s: str) -> None:  # noqa: ANN001
    for t, fin, fout in TYPES:
        expected = _pg(pg, s, t)
        got = _weir(s, fin, fout)
        if expected[0] == "ok" and _beyond_weir(expected[1]):
            assert got in (("error", "22008"), ("error", "0A000")), (t, s, expected, got)
        else:
            assert got == expected, (t, s)


def test_messages_are_postgresqls(pg) -> None:  # noqa: ANN001
    for s, t in [("1999-13-01", "date"), ("foo", "timestamp with time zone"),
                 ("19970710 173201 America/Does_not_exist", "timestamp with time zone"),
                 ("1999-01-08 04:05:06 +16", "timestamp")]:
        with pytest.raises(psycopg.Error) as pe:
            pg.execute(f"SELECT %s::{t}", (s,))
        with pytest.raises(WeirError) as we:
            cdt.parse_timestamp(s, t)
        assert we.value.message == str(pe.value).split("\n")[0]
