"""Set-returning functions in lockstep (PostgreSQL 10+: all of one select list advance
together, the shorter ones NULL past their end) and generate_subscripts, on user data
(Spark) against the real PostgreSQL 15: the same rows, or PostgreSQL's own refusal."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.both_servers import errors, paired
from tests.integration.server import WeirServer
from tests.pg_server import pg_server  # noqa: F401

SETUP = ["CREATE TABLE srf_t (id int, a int[], b text[])",
         "INSERT INTO srf_t VALUES (1, ARRAY[1, 2, 3], ARRAY['x']), (2, NULL, ARRAY['y', 'z']), "
         "(3, ARRAY[]::int[], NULL), (4, ARRAY[7, NULL], ARRAY[NULL, 'w', 'v'])"]

SAME = [
    "SELECT id, unnest(a), unnest(b) FROM srf_t",
    "SELECT id, unnest(a) AS x, generate_subscripts(a, 1) AS i, generate_subscripts(b, 1, true) AS j FROM srf_t",
    "SELECT id, unnest(a) + 1, upper(unnest(b)) FROM srf_t WHERE id > 1",
    "SELECT unnest(ARRAY[1, 2, 3]), unnest(ARRAY['a', 'b']), generate_series(1, 4)",
    "SELECT id, generate_subscripts(a, 2), generate_subscripts(a, 0) FROM srf_t",
    "SELECT DISTINCT unnest(a) AS v, generate_subscripts(a, 1) > 1 AS later FROM srf_t",
    "SELECT id, unnest(a) FROM srf_t",
    "SELECT id, generate_subscripts(b, 1) FROM srf_t",
]

REFUSED = [  # PostgreSQL's errors (0A000), with its messages
    "SELECT CASE WHEN id > 1 THEN unnest(a) END FROM srf_t",
    "SELECT coalesce(unnest(a), 0) FROM srf_t",
    "SELECT count(unnest(a)) FROM srf_t",
    "SELECT generate_subscripts(id, 1) FROM srf_t",
]


@pytest.fixture(scope="module")
def both(server: WeirServer, pg_server):  # noqa: ANN201, F811
    yield from paired(server, pg_server, "srf", SETUP)


def _sorted(rows: list[tuple[Any, ...]]) -> list[str]:
    return sorted(map(str, rows))


@pytest.mark.parametrize("sql", SAME)
def test_same_rows_as_postgres(both, sql: str) -> None:  # noqa: ANN001
    w, p = both
    cw, cp = w.execute(sql), p.execute(sql)
    assert [d.name for d in cw.description] == [d.name for d in cp.description]
    assert _sorted(cw.fetchall()) == _sorted(cp.fetchall())


@pytest.mark.parametrize("sql", REFUSED)
def test_refused_as_postgres(both, sql: str) -> None:  # noqa: ANN001
    outcomes = errors(both, sql)
    assert outcomes[0] == outcomes[1]
