"""to_timestamp(text, text) and to_date(text, text) (weir.codec.formatting) against a real
PostgreSQL: every call of PostgreSQL 15's own horology script, and a few more, must give
PostgreSQL's value or its SQLSTATE and message; a value weir's types cannot hold (BC, years
past 9999) must be refused (22008), never another value."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest

from tests.pg_server import pg_server  # noqa: F401  (session fixture)
from weir.codec import datetime as cdt
from weir.codec import formatting
from weir.errors import WeirError

_HOROLOGY = Path(__file__).resolve().parents[3] / "shared" / "pg-regress" / "sql" / "horology.sql"
EXTRA = [("timestamp", "2011-12-18 11:38 +05:20", "YYYY-MM-DD HH12:MI TZH:TZM"),
         ("timestamp", "2018-11-02 12:34:56.123456", "YYYY-MM-DD HH24:MI:SS.FF3"),
         ("timestamp", "20181102123456123456", "YYYYMMDDHH24MISSFF4"),
         ("date", "1 4 1902", "Q MM YYYY"), ("date", "2005527", "IYYYIWID"), ("timestamp", "x", "TZ"),
         ("timestamp", "1999 13", "YYYY MM"), ("timestamp", "12:00 PM 2000-01-01", "HH:MI AM YYYY-MM-DD")]


def _calls() -> list[tuple[str, str, str]]:
    calls = list(EXTRA)
    if _HOROLOGY.exists():
        for kind, s, f in re.findall(r"to_(timestamp|date)\('((?:[^']|'')*)',\s*'((?:[^']|'')*)'\)",
                                     _HOROLOGY.read_text()):
            calls.append((kind, s.replace("''", "'"), f.replace("''", "'")))
    return calls


@pytest.fixture(scope="module")
def pg(pg_server):  # noqa: ANN001, ANN201, F811
    with psycopg.connect(pg_server.dsn(), autocommit=True) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        yield conn


@pytest.mark.parametrize(("kind", "s", "fmt"), _calls())
def test_as_postgresql(pg, kind: str, s: str, fmt: str) -> None:  # noqa: ANN001
    try:
        expected = ("ok", pg.execute(f"SELECT to_{kind}(%s, %s)::text", (s, fmt)).fetchone()[0])
    except psycopg.Error as e:
        expected = ("error", e.sqlstate, str(e).split("\n")[0])
    try:
        if kind == "timestamp":
            got = ("ok", cdt.timestamptz_out(formatting.to_timestamp(s, fmt)))
        else:
            got = ("ok", cdt.date_out(formatting.to_date(s, fmt)))
    except WeirError as e:
        got = ("error", e.sqlstate, e.message)
    if expected[0] == "ok" and ("BC" in expected[1] or re.match(r"\d{5}", expected[1])):
        assert got[:2] == ("error", "22008")
    else:
        assert got == expected
