"""One planning pass per statement, through the real server: an unprepared CREATE
MATERIALIZED VIEW plans (resolves) its query once, and a statement run again and
again, unprepared or prepared, from several sessions, is planned once
(`weir_plans_total` on /metrics counts plans made and plans found)."""

from __future__ import annotations

import psycopg

from tests.integration.server import WeirServer


def _misses(srv: WeirServer) -> float:
    return srv.metric("weir_plans_total", cache="miss")


def test_create_materialized_view_plans_its_query_once(server: WeirServer) -> None:
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE plan_t (k int, v int)")
        c.execute("INSERT INTO plan_t VALUES (1, 10), (1, 20), (2, 5)")
        c.execute("CREATE VIEW plan_v AS SELECT k, v * 2 AS v2 FROM plan_t")
        before = _misses(server)
        c.execute("CREATE MATERIALIZED VIEW plan_mv AS SELECT k, sum(v2) AS s FROM plan_v GROUP BY k",
                  prepare=False)
        assert _misses(server) - before == 1
        rows = sorted(c.execute("SELECT k, s FROM plan_mv").fetchall())
        assert rows == [(1, 60), (2, 10)]
        c.execute("DROP MATERIALIZED VIEW plan_mv")
        c.execute("DROP VIEW plan_v")
        c.execute("DROP TABLE plan_t")


def test_a_repeated_statement_is_planned_once(server: WeirServer) -> None:
    with psycopg.connect(server.dsn, autocommit=True) as c, \
            psycopg.connect(server.dsn, autocommit=True) as d:
        c.execute("CREATE TABLE plan_r (id int, name text)")
        c.execute("INSERT INTO plan_r SELECT n, 'n' || n FROM generate_series(1, 20) AS g(n)")
        sql = "SELECT name FROM plan_r WHERE id %% 10 = %s ORDER BY name"
        assert c.execute(sql, (3,), prepare=False).fetchall() == [("n13",), ("n3",)]
        before = _misses(server)
        for i in range(5):  # Parse/Bind/Describe/Execute each time, other values, two sessions
            conn = c if i % 2 else d
            assert conn.execute(sql, (i,), prepare=False).fetchall() == \
                sorted([(f"n{n}",) for n in range(1, 21) if n % 10 == i])
            assert conn.execute(sql, (i,), prepare=True).fetchall() == \
                sorted([(f"n{n}",) for n in range(1, 21) if n % 10 == i])
        assert _misses(server) == before
        c.execute("DROP TABLE plan_r")
