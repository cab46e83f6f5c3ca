"""The join class of issue 10 through the real server: a parenthesised join keeps all
its operands, a comma binds looser than JOIN (as in PostgreSQL), in SELECTs, views and
materialized views. Expected answers are PostgreSQL 15's for the same rows."""

from __future__ import annotations

import time

import psycopg

from tests.integration.server import WeirServer

SETUP = [
    "CREATE TABLE jn_t (id int, i int)",
    "INSERT INTO jn_t VALUES (1, 1), (2, 1), (3, NULL), (4, 2), (5, 3)",
    "CREATE TABLE jn_u (id int, i int)",
    "INSERT INTO jn_u VALUES (1, 1), (2, 3), (3, 3), (4, 9)",
]
EXAMPLES = [
    ("SELECT count(*) FROM (jn_t AS x CROSS JOIN jn_t AS y)", [(25,)]),
    ("SELECT count(*) FROM jn_t AS x CROSS JOIN jn_t AS y", [(25,)]),
    ("SELECT count(*), count(z.id) FROM ((jn_t AS x JOIN jn_t AS y ON x.id = y.id) "
     "LEFT JOIN jn_u AS z ON z.i = x.i)", [(6, 4)]),
    ("SELECT x.id, y.id, z.id FROM jn_t AS x, jn_t AS y RIGHT JOIN jn_u AS z ON y.i = z.i WHERE x.id = 1",
     [(1, 1, 1), (1, 2, 1), (1, 5, 2), (1, 5, 3), (1, None, 4)]),
]


def test_join_nesting(server: WeirServer) -> None:
    with psycopg.connect(server.dsn, autocommit=True) as c:
        for s in SETUP:
            c.execute(s)
        try:
            for sql, expected in EXAMPLES:
                assert sorted(c.execute(sql).fetchall(), key=repr) == sorted(expected, key=repr), sql
            c.execute("CREATE VIEW jn_v AS SELECT count(*) AS n FROM (jn_t AS x CROSS JOIN jn_t AS y)")
            assert c.execute("SELECT n FROM jn_v").fetchall() == [(25,)]
            c.execute("CREATE MATERIALIZED VIEW jn_mv AS SELECT x.id AS a, y.id AS b "
                      "FROM (jn_t AS x CROSS JOIN jn_t AS y)")
            deadline = time.monotonic() + 120
            while c.execute("SELECT count(*) FROM jn_mv").fetchone() != (25,):
                assert time.monotonic() < deadline, "the materialized view never had 25 rows"
                time.sleep(0.5)
        finally:
            c.execute("DROP MATERIALIZED VIEW IF EXISTS jn_mv")
            c.execute("DROP VIEW IF EXISTS jn_v")
            c.execute("DROP TABLE jn_t")
            c.execute("DROP TABLE jn_u")
