"""FETCH and MOVE in every direction (NEXT, PRIOR, FIRST, LAST, ABSOLUTE, RELATIVE, FORWARD,
BACKWARD, counts and ALL) on a query's cursor, statement by statement against PostgreSQL 15:
the rows, the command tags and where the cursor is left. A query's cursor keeps the rows it
has read, as PostgreSQL's SCROLL cursor does; NO SCROLL and SUBSCRIBE cursors only go forward."""

from __future__ import annotations

import psycopg
import pytest

from tests.integration.both_servers import paired
from tests.integration.server import WeirServer
from tests.pg_server import pg_server  # noqa: F401

SCRIPT = """declare c1 cursor for select * from sc_t order by a limit 10
fetch all in c1
fetch 1 in c1
fetch backward 1 in c1
fetch backward all in c1
fetch backward 1 in c1
fetch all in c1
fetch first in c1
fetch next in c1
fetch prior in c1
fetch prior in c1
fetch last in c1
fetch absolute 2 in c1
fetch absolute -2 in c1
fetch absolute 9 in c1
fetch relative -1 in c1
fetch relative 0 in c1
fetch relative 2 in c1
move backward 2 in c1
fetch 2 in c1
fetch -1 from c1
move all in c1
fetch backward 2 from c1
move absolute 0 in c1
fetch forward 3 in c1
declare c2 no scroll cursor for select * from sc_t order by a
fetch 2 in c2
fetch backward 1 in c2""".split("\n")


@pytest.fixture(scope="module")
def both(server: WeirServer, pg_server):  # noqa: ANN201, F811
    yield from paired(server, pg_server, "scroll_cursors",
                      ["CREATE TABLE sc_t (a int)", "INSERT INTO sc_t VALUES (1), (2), (3), (4), (5)"])


def _run(conn: psycopg.Connection) -> list[tuple[object, object]]:
    out: list[tuple[object, object]] = []
    conn.autocommit = False
    try:
        for sql in SCRIPT:
            try:
                cur = conn.execute(sql)
                out.append((cur.statusmessage, cur.fetchall() if cur.description else None))
            except psycopg.Error as e:
                out.append((e.sqlstate, e.diag.message_primary))
                break
    finally:
        conn.rollback()
        conn.autocommit = True
    return out


def test_fetch_and_move_in_every_direction_as_postgres(both) -> None:  # noqa: ANN001
    w, p = both
    got, want = _run(w), _run(p)
    assert want[-1] == ("55000", "cursor can only scan forward")  # NO SCROLL, the script's end
    assert got == want
