"""to_char's template patterns (weir.codec.to_char) against a real PostgreSQL: every
template of PostgreSQL 15's date/time regression scripts, and a few more, over timestamps
and timestamptz values, must print as PostgreSQL prints them (or be refused, 0A000)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import psycopg
import pytest

from tests.pg_server import pg_server  # noqa: F401  (session fixture)
from weir.codec.to_char import to_char
from weir.errors import WeirError

_SQL = Path(__file__).resolve().parents[3] / "shared" / "pg-regress" / "sql"
EXTRA = [r'"HH:MI:SS is" HH:MI:SS "\"text between quote marks\""', "HH12 PM hh12 am", "DDTH ddth DDth",
         "FMDDTH WWth Q J", "CC YYYY Y,YYY FMY,YYY", "RM rm FMrm", "TZ tz OF TZH:TZM", "SSSS US MS FF3"]
VALUES = [dt.datetime(1997, 2, 10, 17, 32, 1, 500000), dt.datetime(2001, 1, 1), dt.datetime(2000, 1, 3, 23, 59, 59, 999999),
          dt.datetime(1, 1, 1), dt.datetime(2011, 11, 13, 1, 2, 3), dt.datetime(1999, 12, 31, 12, 0, 0, 123456)]


def _templates() -> list[str]:
    found = set(EXTRA)
    for name in ("timestamp", "timestamptz", "horology", "date"):
        path = _SQL / f"{name}.sql"
        if path.exists():
            for m in re.finditer(r"to_char\([^,]+,\s*E?'((?:[^']|'')*)'", path.read_text()):
                found.add(m.group(1).replace("''", "'"))
    return sorted(found)


@pytest.fixture(scope="module")
def pg(pg_server):  # noqa: ANN001, ANN201, F811
    with psycopg.connect(pg_server.dsn(), autocommit=True) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        yield conn


@pytest.mark.parametrize("template", _templates())
def test_as_postgresql(pg, template: str) -> None:  # noqa: ANN001
    for value in VALUES:
        for zoned in (False, True):
            t = "timestamptz" if zoned else "timestamp"
            try:
                expected = ("ok", pg.execute(f"SELECT to_char(%s::{t}, %s)", (value.isoformat(" "), template)).fetchone()[0])
            except psycopg.Error as e:
                expected = ("error", e.sqlstate)
            try:
                got = ("ok", to_char(value, template, zoned))
            except WeirError as e:
                got = ("error", e.sqlstate)
            assert got == expected or got == ("error", "0A000"), (template, value, t)
