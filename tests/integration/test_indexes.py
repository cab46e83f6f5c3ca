"""Indexes end to end: CREATE [DEFAULT] INDEX, arrangements in replica memory, fast-path
peeks answered without a Spark job, indexes on views and materialized views, SUBSCRIBE
to an index, EXPLAIN, mz_indexes, and the errors."""

from __future__ import annotations

import json
import re
import time
import urllib.request

import psycopg
import pytest

from tests.integration.server import WeirServer


def _spark_ui(srv: WeirServer) -> str:
    found = re.findall(r"replica u1 incarnation \d+ online \(pid \d+, Spark UI (http://[^)\s]+)\)",
                       srv.log_path.read_text(errors="replace"))
    assert found, "the server log names the quickstart replica's Spark UI"
    return found[-1]


def _peek_jobs(ui: str) -> int:
    """The id of the last Spark job the replica ran for a peek (job tag weir-peek-*), from Spark's REST API.

    An id, not a count: the UI keeps only its last spark.ui.retainedJobs jobs, so on a server shared by
    the suite a count of peek jobs can fall while ids only grow."""
    with urllib.request.urlopen(f"{ui}/api/v1/applications", timeout=10) as r:
        app = json.load(r)[0]["id"]
    with urllib.request.urlopen(f"{ui}/api/v1/applications/{app}/jobs", timeout=10) as r:
        jobs = json.load(r)
    return max((j["jobId"] for j in jobs if any(t.startswith("weir-peek-") for t in j.get("jobTags") or [])),
               default=-1)


def _explain(c: psycopg.Connection, sql: str) -> str:
    return c.execute("EXPLAIN " + sql).fetchone()[0]


@pytest.fixture(scope="module")
def indexed(server: WeirServer):  # noqa: ANN201
    with server.connect() as c:
        c.execute("CREATE TABLE ix_items (id bigint, name text, price numeric(10,2), day date, "
                  "at timestamptz, ok boolean, ref uuid, score double precision)")
        c.execute("INSERT INTO ix_items SELECT x, 'item' || x, x * 1.25, DATE '2024-01-01' + x::int, "
                  "TIMESTAMPTZ '2024-01-01 00:00:00+00' + x * INTERVAL '1 hour', x % 2 = 0, "
                  "NULL, x / 3.0 FROM generate_series(1, 200) AS x")
        c.execute("UPDATE ix_items SET ref = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11' WHERE id < 10")
        c.execute("INSERT INTO ix_items VALUES (1000, NULL, NULL, NULL, NULL, NULL, NULL, NULL)")
        c.execute("CREATE INDEX ix_items_id ON ix_items (id)")
        _wait_hydrated(c, "SELECT * FROM ix_items WHERE id = 1")
    return server


def _wait_hydrated(c: psycopg.Connection, sql: str, timeout: float = 90) -> None:
    """Until EXPLAIN says fast path and the replica answers from the arrangement."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if "fast path" in _explain(c, sql):
            c.execute(sql).fetchall()
            return
        time.sleep(0.3)
    raise AssertionError(f"not on the fast path: {sql}")


FAST_SLOW = [
    # (fast-path query, the same on the slow path: an expression the fast path cannot evaluate)
    ("SELECT * FROM ix_items WHERE id = 7", "SELECT * FROM ix_items WHERE id + 0 = 7"),
    ("SELECT name, price AS p FROM ix_items WHERE id IN (3, 5, 1000) ORDER BY id",
     "SELECT name, price AS p FROM ix_items WHERE id + 0 IN (3, 5, 1000) ORDER BY id"),
    ("SELECT id, ok FROM ix_items WHERE price > 200 AND NOT ok ORDER BY id DESC LIMIT 3",
     "SELECT id, ok FROM ix_items WHERE price + 0 > 200 AND NOT ok ORDER BY id DESC LIMIT 3"),
    ("SELECT id FROM ix_items WHERE name LIKE 'item1_' OR name IS NULL ORDER BY id",
     "SELECT id FROM ix_items WHERE name || '' LIKE 'item1_' OR name IS NULL ORDER BY id"),
    ("SELECT * FROM ix_items WHERE day BETWEEN '2024-02-01' AND '2024-02-03' ORDER BY id",
     "SELECT * FROM ix_items WHERE day + 0 BETWEEN '2024-02-01' AND '2024-02-03' ORDER BY id"),
    ("SELECT id, score FROM ix_items ORDER BY score DESC, id DESC LIMIT 2 OFFSET 1",
     "SELECT id, score FROM ix_items ORDER BY score + 0 DESC, id DESC LIMIT 2 OFFSET 1"),
]


@pytest.mark.parametrize("binary", [False, True])
def test_fast_path_answers_like_spark(indexed: WeirServer, binary: bool) -> None:
    with indexed.connect() as c:
        for fast, slow in FAST_SLOW:
            assert "fast path" in _explain(c, fast), fast
            assert "fast path" not in _explain(c, slow), slow
            cur_f = c.cursor(binary=binary)
            cur_s = c.cursor(binary=binary)
            got = cur_f.execute(fast).fetchall()
            assert got == cur_s.execute(slow).fetchall(), fast
            assert [d.type_code for d in cur_f.description] == [d.type_code for d in cur_s.description]
            assert got, fast


def test_fast_path_runs_no_spark_job(indexed: WeirServer) -> None:
    ui = _spark_ui(indexed)
    with indexed.connect() as c:
        before = _peek_jobs(ui)
        fast = indexed.metric("weir_reads_total", strategy="fast-path")
        for i in range(1, 21):
            assert c.execute("SELECT name FROM ix_items WHERE id = %s", (i,)).fetchall() == [(f"item{i}",)]
        assert _peek_jobs(ui) == before  # twenty lookups, no Spark job
        assert indexed.metric("weir_reads_total", strategy="fast-path") == fast + 20
        c.execute("SELECT name FROM ix_items WHERE id + 0 = 1").fetchall()
        assert _peek_jobs(ui) > before  # the same query on the slow path is a Spark job
    log = (indexed.data_dir / "logs" / "replica-u1.log").read_text(errors="replace")
    assert "(fast path)" in log


def test_fast_path_is_strict_serializable(indexed: WeirServer) -> None:
    with indexed.connect() as c:
        for i in range(5):
            c.execute("INSERT INTO ix_items (id, name) VALUES (%s, %s)", (5000 + i, f"new{i}"))
            # the INSERT is acknowledged: the next read sees it, on the fast path
            assert c.execute("SELECT name FROM ix_items WHERE id = %s", (5000 + i,)).fetchall() == [(f"new{i}",)]
        c.execute("DELETE FROM ix_items WHERE id >= 5000")
        assert c.execute("SELECT * FROM ix_items WHERE id = 5000").fetchall() == []


def test_indexes_on_views_and_materialized_views(indexed: WeirServer) -> None:
    with indexed.connect() as c:
        c.execute("CREATE VIEW ix_by_ok AS SELECT ok, count(*) AS n, sum(price) AS total FROM ix_items GROUP BY ok")
        c.execute("CREATE DEFAULT INDEX ON ix_by_ok")
        c.execute("CREATE MATERIALIZED VIEW ix_cheap AS SELECT id, price FROM ix_items WHERE price < 10")
        c.execute("CREATE INDEX ix_cheap_idx ON ix_cheap (id)")
        _wait_hydrated(c, "SELECT * FROM ix_by_ok WHERE ok")
        _wait_hydrated(c, "SELECT * FROM ix_cheap WHERE id = 2")
        expected = c.execute("SELECT ok, count(*), sum(price) FROM ix_items WHERE ok GROUP BY ok").fetchall()
        assert c.execute("SELECT * FROM ix_by_ok WHERE ok").fetchall() == expected
        assert c.execute("SELECT * FROM ix_cheap WHERE id = 2").fetchall() == [(2, pytest.approx(2.5))]
        c.execute("INSERT INTO ix_items (id, name, price, ok) VALUES (9001, 'x', 1.00, true)")
        # the indexes follow their inputs: the next reads see the insert
        assert c.execute("SELECT * FROM ix_cheap WHERE id = 9001").fetchall() == [(9001, 1)]
        n = c.execute("SELECT n FROM ix_by_ok WHERE ok").fetchone()[0]
        assert n == expected[0][1] + 1
        # a query that is not a fast path reads the view from its index instead of recomputing it
        through = indexed.metric("weir_reads_through_indexes_total")
        got = c.execute("SELECT b.ok, b.n * 2, i.name FROM ix_by_ok b JOIN ix_items i ON i.ok = b.ok "
                        "WHERE i.id = 9001").fetchall()
        assert got == [(True, 2 * n, "x")]
        assert indexed.metric("weir_reads_through_indexes_total") == through + 1
        rows = c.execute("SELECT name, on_id, cluster_id FROM mz_indexes WHERE name LIKE 'ix_%' "
                         "ORDER BY name").fetchall()
        assert [r[0] for r in rows] == ["ix_by_ok_primary_idx", "ix_cheap_idx", "ix_items_id"]
        assert "ArrangeBy keys=[(ok, n, total)]" in c.execute(
            "EXPLAIN PHYSICAL PLAN FOR INDEX ix_by_ok_primary_idx").fetchone()[0]
        assert "HashAggregate" in c.execute("EXPLAIN PHYSICAL PLAN FOR INDEX ix_by_ok_primary_idx").fetchone()[0]
        assert "no Spark job" in c.execute("EXPLAIN PHYSICAL PLAN FOR INDEX ix_items_id").fetchone()[0]
        # dropping an object takes its indexes with it (no CASCADE needed for indexes)
        c.execute("DROP MATERIALIZED VIEW ix_cheap")
        c.execute("DROP VIEW ix_by_ok")
        assert c.execute("SELECT count(*) FROM mz_indexes WHERE name IN "
                         "('ix_cheap_idx', 'ix_by_ok_primary_idx')").fetchone()[0] == 0
        c.execute("DELETE FROM ix_items WHERE id = 9001")


def test_index_on_a_constant_view_keeps_up(indexed: WeirServer) -> None:
    """A view that reads no relation is complete at every time: its index keeps up with the
    clock and serves reads on the fast path (it once advanced a millisecond a second, so
    every read waited for it, then ran on Spark)."""
    with indexed.connect() as c:
        c.execute("CREATE VIEW ix_const AS SELECT * FROM (VALUES (1, 'one'), (2, 'two')) v(k, name)")
        c.execute("CREATE INDEX ix_const_k ON ix_const (k)")
        try:
            _wait_hydrated(c, "SELECT name FROM ix_const WHERE k = 2", timeout=60)
            fast = indexed.metric("weir_reads_total", strategy="fast-path")
            started = time.monotonic()
            for _ in range(5):
                assert c.execute("SELECT name FROM ix_const WHERE k = 2").fetchall() == [("two",)]
                time.sleep(0.5)  # the clock moves on between reads
            assert indexed.metric("weir_reads_total", strategy="fast-path") == fast + 5
            assert time.monotonic() - started < 10
        finally:
            c.execute("DROP VIEW ix_const")


def test_index_on_a_view_the_coordinator_answers(indexed: WeirServer) -> None:
    """A view whose query the coordinator answers without Spark (`SELECT 1 ...`) can be
    indexed like any other (it failed with an internal error: its plan had no Spark side)."""
    with indexed.connect() as c:
        c.execute("CREATE VIEW ix_folded AS SELECT 2 AS k, 'two' AS name, INTERVAL '1 month' * 2 AS iv")
        c.execute("CREATE DEFAULT INDEX ON ix_folded")
        try:
            _wait_hydrated(c, "SELECT name FROM ix_folded WHERE k = 2", timeout=60)
            assert c.execute("SELECT k, name, iv::text FROM ix_folded").fetchall() == [(2, "two", "2 mons")]
        finally:
            c.execute("DROP VIEW ix_folded CASCADE")


def test_subscribe_to_an_index(indexed: WeirServer) -> None:
    with indexed.connect() as c:
        c.execute("CREATE TABLE ix_sub (k int, v text)")
        c.execute("INSERT INTO ix_sub VALUES (1, 'one')")
        c.execute("CREATE INDEX ix_sub_k ON ix_sub (k)")
        c.execute("BEGIN")
        c.execute("DECLARE cur CURSOR FOR SUBSCRIBE ix_sub_k")
        rows = c.execute("FETCH ALL cur WITH (timeout = '10s')").fetchall()
        assert [r[1:] for r in rows] == [(1, 1, "one")]
        with indexed.connect() as w:
            w.execute("INSERT INTO ix_sub VALUES (2, 'two')")
        rows = c.execute("FETCH ALL cur WITH (timeout = '10s')").fetchall()
        assert [r[1:] for r in rows] == [(1, 2, "two")]
        c.execute("COMMIT")


def test_index_errors(indexed: WeirServer) -> None:
    with indexed.connect() as c:
        cases = [
            ("CREATE INDEX ON ix_nosuch (a)", "42P01"),
            ("CREATE INDEX ON ix_items (nosuch)", "42703"),
            ("CREATE INDEX ix_items_id ON ix_items (name)", "42P07"),
            ("CREATE INDEX ON ix_items (id) IN CLUSTER nosuch", "42704"),
            ("CREATE INDEX ON mz_tables (id)", "42809"),
            ("CREATE INDEX ON ix_items", "42601"),
            ("SELECT * FROM ix_items_id", "42809"),
            ("DROP INDEX ix_nosuch", "42P01"),
        ]
        for sql, code in cases:
            with pytest.raises(psycopg.Error) as e:
                c.execute(sql)
            assert e.value.sqlstate == code, (sql, e.value)
        c.execute("CREATE INDEX IF NOT EXISTS ix_items_id ON ix_items (name)")
        c.execute("DROP INDEX IF EXISTS ix_nosuch")
        # the server and the index carry on
        assert c.execute("SELECT name FROM ix_items WHERE id = 3").fetchall() == [("item3",)]


def test_drop_index_leaves_the_slow_path(indexed: WeirServer) -> None:
    with indexed.connect() as c:
        c.execute("CREATE TABLE ix_drop (a int)")
        c.execute("INSERT INTO ix_drop VALUES (1), (2)")
        c.execute("CREATE INDEX ix_drop_a ON ix_drop (a)")
        _wait_hydrated(c, "SELECT * FROM ix_drop WHERE a = 1")
        c.execute("DROP INDEX ix_drop_a")
        assert "fast path" not in _explain(c, "SELECT * FROM ix_drop WHERE a = 1")
        assert c.execute("SELECT * FROM ix_drop WHERE a = 1").fetchall() == [(1,)]
        c.execute("CREATE INDEX ix_drop_a ON ix_drop (a)")
        # an index on an expression arranges the rows too: filters are served by scanning it
        c.execute("DROP INDEX ix_drop_a")
        c.execute("CREATE INDEX ON ix_drop (a * 2)")
        assert c.execute("SELECT name FROM mz_indexes WHERE on_id = (SELECT id FROM mz_tables "
                         "WHERE name = 'ix_drop')").fetchall() == [("ix_drop_a_2_idx",)]
        _wait_hydrated(c, "SELECT * FROM ix_drop WHERE a = 2")
        assert "full scan" in _explain(c, "SELECT * FROM ix_drop WHERE a = 2")
        assert c.execute("SELECT * FROM ix_drop WHERE a = 2").fetchall() == [(2,)]
        c.execute("DROP TABLE ix_drop")  # takes its index along, no CASCADE
        assert c.execute("SELECT count(*) FROM mz_indexes WHERE name = 'ix_drop_a'").fetchone()[0] == 0


def test_index_frontiers(indexed: WeirServer) -> None:
    with indexed.connect() as c:
        idx = c.execute("SELECT id FROM mz_indexes WHERE name = 'ix_items_id'").fetchone()[0]
        deadline = time.time() + 30
        rows: list[tuple] = []
        while time.time() < deadline:
            rows = c.execute("SELECT read_frontier, write_frontier FROM mz_internal.mz_frontiers "
                             "WHERE object_id = %s", (idx,)).fetchall()
            replicas = c.execute("SELECT replica_id, write_frontier FROM mz_cluster_replica_frontiers "
                                 "WHERE object_id = %s", (idx,)).fetchall()
            if rows and replicas:
                break
            time.sleep(0.5)
        assert len(rows) == 1 and int(rows[0][0]) < int(rows[0][1]), rows
        assert replicas and replicas[0][0] == "u1" and int(replicas[0][1]) >= int(rows[0][1]) - 5000
