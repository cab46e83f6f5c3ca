"""make_timestamp / make_timestamptz and AT TIME ZONE of constants (weir.sql.constant,
weir.codec.datetime_ops, weir.codec.timezones) against a real PostgreSQL: the same text, or
the same SQLSTATE; values weir's types cannot hold refused (22008 / 0A000)."""

from __future__ import annotations

import re

import psycopg
import pytest
import sqlglot

from tests.pg_server import pg_server  # noqa: F401  (session fixture)
from weir import codec
from weir.errors import WeirError
from weir.sql import constant
from weir.sql.dialect import Weir

QUERIES = [
    "SELECT make_timestamp(2014, 12, 28, 6, 30, 45.887)", "SELECT make_timestamp(-44, 3, 15, 12, 30, 15)",
    "SELECT make_timestamp(0, 7, 15, 12, 30, 15)", "SELECT make_timestamp(2014, 2, 30, 0, 0, 0)",
    "SELECT make_timestamp(2014, 12, 28, 24, 0, 0)", "SELECT make_timestamp(2014, 12, 28, 23, 59, 60.5)",
    "SELECT make_timestamptz(1973, 07, 15, 08, 15, 55.33)", "SELECT make_timestamptz(1973, 07, 15, 08, 15, 55.33, '+2')",
    "SELECT make_timestamptz(1973, 07, 15, 08, 15, 55.33, '-2')", "SELECT make_timestamptz(1973, 07, 15, 08, 15, 55.33, '2')",
    "SELECT make_timestamptz(2014, 12, 10, 10, 10, 10, '+16')", "SELECT make_timestamptz(2014, 12, 10, 10, 10, 10, '-16')",
    "SELECT make_timestamptz(2014, 12, 10, 0, 0, 0, 'Europe/Prague')",
    "SELECT make_timestamptz(1881, 12, 10, 0, 0, 0, 'Asia/Singapore') AT TIME ZONE 'UTC'",
    "SELECT make_timestamptz(1910, 12, 24, 0, 0, 0, 'Nehwon/Lankhmar')",
    "SELECT make_timestamptz(2008, 12, 10, 10, 10, 10, 'EST')", "SELECT make_timestamptz(2008, 12, 10, 10, 10, 10, 'EDT')",
    "SELECT make_timestamptz(2014, 10, 26, 0, 0, 0, 'MSK')", "SELECT make_timestamptz(2014, 10, 26, 1, 0, 0, 'MSK')",
    "SELECT '2011-03-27 02:00:00'::timestamp AT TIME ZONE 'MSK'", "SELECT '2014-10-25 22:00:01 UTC'::timestamptz AT TIME ZONE 'MSK'",
    "SELECT '2000-01-01 00:00'::timestamp AT TIME ZONE 'UTC+3'", "SELECT '2000-01-01 00:00'::timestamptz AT TIME ZONE 'Nowhere'",
    "SELECT timezone('america/new_york', '2021-11-07 05:30:00+00'::timestamptz)", "SELECT to_timestamp(1262349296.7890123)",
    "SELECT to_timestamp(-210866803200)", "SELECT to_timestamp('NaN'::float8)",
]


@pytest.fixture(scope="module")
def pg(pg_server):  # noqa: ANN001, ANN201, F811
    with psycopg.connect(pg_server.dsn(), autocommit=True) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        yield conn


@pytest.mark.parametrize("sql", QUERIES)
def test_as_postgresql(pg, sql: str) -> None:  # noqa: ANN001
    try:
        expected = ("ok", pg.execute(f"SELECT ({sql[7:]})::text").fetchone()[0])
    except psycopg.Error as e:
        expected = ("error", e.sqlstate)
    try:
        _, types, rows = constant.evaluate(sqlglot.parse_one(sql, read=Weir))
        value = rows[0][0]
        got = ("ok", None if value is None else codec.encode_text(value, types[0]).decode())
    except WeirError as e:
        got = ("error", e.sqlstate)
    if expected[0] == "ok" and ("BC" in expected[1] or re.match(r"\d{5}", expected[1])):
        assert got in (("error", "22008"), ("error", "0A000"))
    else:
        assert got == expected


TRUNC = [f"SELECT date_trunc('{u}', timestamptz '{ts}', '{z}')"
         for u in ("day", "hour", "week", "month", "quarter", "year", "decade", "century", "millennium", "minute",
                   "second", "milliseconds", "microseconds")
         for ts in ("2001-02-16 20:38:40.123456+00", "2021-11-07 05:30:00+00", "2000-01-01 00:00:00+00")
         for z in ("Australia/Sydney", "GMT", "VET", "America/New_York", "MSK", "UTC+3")]


@pytest.mark.parametrize("sql", TRUNC)
def test_date_trunc_in_zone_as_postgresql(pg, sql: str) -> None:  # noqa: ANN001
    test_as_postgresql(pg, sql)
