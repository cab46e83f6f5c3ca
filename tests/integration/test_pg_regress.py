"""PostgreSQL's own regression scripts (../shared/pg-regress) on weir and on a real
PostgreSQL 15, statement by statement (tests/differential/pg_regress.py; the README's
"PostgreSQL regression queries" table comes from running it over every script).

The CI run covers a few short scripts; none of their statements may differ (a refusal or a
follow-on of one is not a difference: see the README)."""

from __future__ import annotations

import pytest

from tests.differential.pg_regress import SQL_DIR, run_script, table
from tests.integration.server import WeirServer
from tests.pg_server import PgServer, pg_server  # noqa: F401  (session-scoped fixture)

# script -> statements that differ today (bugs, not accepted differences)
DIFFERS_TODAY = {"select_having": 0, "case": 0, "int2": 0, "text": 0, "date": 0}


@pytest.fixture(scope="module")
def pg_dsn(pg_server: PgServer) -> str:  # noqa: F811
    pg_server.create_database("pgregress")
    return pg_server.dsn("pgregress")


@pytest.mark.parametrize("script", sorted(DIFFERS_TODAY))
def test_pg_regress_script(pg_dsn: str, server: WeirServer, script: str) -> None:
    path = SQL_DIR / f"{script}.sql"
    if not path.exists():
        pytest.skip(f"{path} not found")
    res = run_script(path, pg_dsn, server.dsn)
    print("\n" + table([res]))
    shown = "\n".join(f"{s}\n   PostgreSQL: {p}\n   weir:       {w}" for s, p, w in res.differs[:15])
    assert res.counts["differs"] <= DIFFERS_TODAY[script], shown
