"""PostgreSQL's date/time input, time zone names and to_timestamp against a real `weir serve`
and PostgreSQL 15: literals and constants (the coordinator), casts of text columns and
AT TIME ZONE over columns (Spark, the replica's weir_datetime UDF), INSERT of such strings
into date / timestamp / timestamptz columns. Each answer must be PostgreSQL's."""

from __future__ import annotations

import pytest

from tests.integration.both_servers import errors, paired
from tests.integration.server import WeirServer
from tests.pg_server import pg_server  # noqa: F401

STRINGS = ["January 8, 1999", "1999-01-08 04:05:06", "1/8/1999", "19990108", "990108", "1999.008",
           "J2451187", "Jan 08 1999 5:32PM", "1999-01-08T04:05:06.789-08", "Mon Feb 10 17:32:01 1997 PST",
           "1997-02-10 17:32:01-0800", "19970710 173201 America/New_York", "2011-03-27 02:30:00 MSK",
           "2000-03-15 08:14:01 GMT+8", "epoch", "1999-01-08 allballs"]

SETUP = ["CREATE TABLE dt_src (id int, s text)",
         "INSERT INTO dt_src VALUES " + ", ".join(f"({i}, '{s}')" for i, s in enumerate(STRINGS)) + ", (99, NULL)",
         "CREATE TABLE dt_bad (s text)",
         "INSERT INTO dt_bad VALUES ('1999-13-08')",
         "CREATE TABLE dt_t (id int, d date, ts timestamp, tz timestamptz)",
         "INSERT INTO dt_t VALUES (1, 'January 8, 1999', 'Feb 10 5:32PM 1997', 'Mon Feb 10 17:32:01 1997 PST'), "
         "(2, '08-Jan-99', '19970210 173201', '1997.041 17:32:01 UTC'), "
         "(3, 'J2451187', '2011-03-27 03:00:00', '2014-10-26 01:00:00 MSK')",
         "CREATE TABLE dt_z (id int, z text, e float8)",
         "INSERT INTO dt_z VALUES (1, 'MSK', 0), (2, 'PST', 1e9), (3, 'America/New_York', 1234567890.123456), "
         "(4, 'UTC+3', -1.5), (5, NULL, NULL)",
         "CREATE TABLE dt_fmt (id int, s text, f text)",
         "INSERT INTO dt_fmt VALUES (1, '97/2/16 8:14:30', 'FMYYYY/FMMM/FMDD FMHH:FMMI:FMSS'), "
         "(2, '2011-12-18 11:38 PM', 'YYYY-MM-DD HH12:MI PM'), (3, '2005527', 'IYYYIWID'), "
         "(4, '2011-12-18 11:38 -05:20', 'YYYY-MM-DD HH12:MI TZH:TZM'), (5, NULL, 'YYYY')"]

SAME = [
    # literals: the coordinator
    "SELECT date 'January 8, 1999', date '1999.008', date 'J2451187', date '01/02/03', date '08-Jan-99'",
    "SELECT timestamp 'Feb 10 5:32PM 1997', timestamp '19970210 173201 -0800', timestamp 'epoch'",
    "SELECT timestamptz 'Mon Feb 10 17:32:01 1997 PST', timestamptz '2011-03-27 02:30:00 MSK', "
    "timestamptz 'Wed Jul 11 10:51:14 GMT-4 2001', timestamptz '20011227T040506.789-08'",
    "SELECT '2011-03-27 00:00:00'::timestamp AT TIME ZONE 'MSK', '2011-03-26 21:00:00 UTC'::timestamptz AT TIME ZONE 'MSK'",
    "SELECT '19970210 173201' AT TIME ZONE 'America/New_York', timezone('EST', '2000-01-01 00:00'::timestamp)",
    "SELECT to_timestamp(1000000000.5), to_timestamp(0), to_timestamp(-1.5)",
    # casts of text columns: Spark
    "SELECT id, s::date::text FROM dt_src",
    "SELECT id, s::timestamp::text, CAST(s AS timestamptz)::text FROM dt_src",
    # INSERT of such strings
    "SELECT id, d::text, ts::text, tz::text FROM dt_t",
    # AT TIME ZONE over columns: fixed abbreviations and regions as Spark's, others in the UDF
    "SELECT id, (tz AT TIME ZONE 'MSK')::text AS a, (ts AT TIME ZONE 'MSK')::text AS b, "
    "(tz AT TIME ZONE 'pst')::text AS c, (ts AT TIME ZONE 'America/New_York')::text AS e, "
    "(d AT TIME ZONE 'UTC+3')::text AS f FROM dt_t",
    "SELECT t.id, z.id, (t.tz AT TIME ZONE z.z)::text AS a, timezone(z.z, t.ts)::text AS b FROM dt_t t, dt_z z",
    "SELECT id, to_timestamp(e)::text FROM dt_z",
    # to_timestamp(text, text), to_date: constants on the coordinator, columns in the UDF
    "SELECT to_timestamp('0097/Feb/16 --> 08:14:30', 'YYYY/Mon/DD --> HH:MI:SS'), "
    "to_timestamp('2018-11-02 12:34:56.123456', 'YYYY-MM-DD HH24:MI:SS.FF4'), to_date('2016 366', 'YYYY DDD')",
    "SELECT id, to_timestamp(s, f)::text AS t, to_date(s, f)::text AS d FROM dt_fmt",
    # to_char patterns Java's formatter has no equivalent of: PostgreSQL's own, in the UDF
    "SELECT id, to_char(ts, 'DAY Day day DY Dy dy MONTH Month month RM MON Mon mon') AS a, "
    "to_char(tz, 'YYYY A.D. HH:MI:SS P.M. IYYY IW ID Jth TZ OF') AS b, to_char(d, 'FMDAY FMMonth DDTH Y,YYY') AS c "
    "FROM dt_t",
]

ERRORS = [
    "SELECT date '1999-13-08'",
    "SELECT timestamptz '19970710 173201 America/Does_not_exist'",
    "SELECT now() AT TIME ZONE 'Nowhere/Special'",
    "SELECT s::date FROM dt_bad",
    "SELECT tz AT TIME ZONE 'no such zone' FROM dt_t",
    "SELECT to_timestamp('NaN'::float8)",
    "SELECT to_date('2016-13-10', 'YYYY-MM-DD')",
    "SELECT to_timestamp('199711xy', 'YYYYMMDD')",
    "SELECT to_timestamp(s, 'YYYY-MM-DD HH24:MI:SS') FROM dt_bad",
]


@pytest.fixture(scope="module")
def both(server: WeirServer, pg_server):  # noqa: ANN201, F811
    yield from paired(server, pg_server, "datetime_input", SETUP,
                      pg_first=("SET TIME ZONE 'UTC'", "SET DateStyle = 'ISO, MDY'"))


@pytest.mark.parametrize("sql", SAME)
def test_same_answer_as_postgres(both, sql: str) -> None:  # noqa: ANN001
    w, p = both
    with w.cursor(binary=False) as cw, p.cursor(binary=False) as cp:
        cw.execute(sql)
        cp.execute(sql)
        assert [d.name for d in cw.description] == [d.name for d in cp.description]
        assert sorted(map(str, cw.fetchall())) == sorted(map(str, cp.fetchall()))


@pytest.mark.parametrize("sql", ERRORS)
def test_same_error_as_postgres(both, sql: str) -> None:  # noqa: ANN001
    got = errors(both, sql)
    assert got[0] == got[1]
