"""Issue 10, part 5: the gaps an external conformance run hit most, through the wire
protocol against a real server: views over VALUES with column names, materialized views
without inputs, SHOW MATERIALIZED VIEWS / INDEXES / SOURCES with their Materialize
columns and IN CLUSTER, current_schemas, mz_logical_timestamp, SUBSCRIBE's output
formats (ENVELOPE UPSERT / DEBEZIUM, WITHIN TIMESTAMP ORDER BY) and SUBSCRIBE to a
constant query."""

from __future__ import annotations

import datetime as dt
import time

import psycopg
import pytest

from tests.integration.server import WeirServer


def _sqlstate(fn) -> str:  # noqa: ANN001
    with pytest.raises(psycopg.Error) as e:
        fn()
    return e.value.sqlstate or ""


def test_view_with_column_names_over_values(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE VIEW gap_v (a, b) AS VALUES (1, 'x'), (2, 'y')")
        cur = c.execute("SELECT * FROM gap_v ORDER BY a")
        assert [d.name for d in cur.description] == ["a", "b"]
        assert cur.fetchall() == [(1, "x"), (2, "y")]
        assert c.execute("SELECT b FROM gap_v WHERE a = 2").fetchall() == [("y",)]
        assert _sqlstate(lambda: c.execute("CREATE VIEW gap_bad (a) AS VALUES (1, 2)")) == "42601"
        c.execute("DROP VIEW gap_v")


def test_materialized_views_without_inputs(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE MATERIALIZED VIEW gap_const AS SELECT 1 AS one, 'x' AS s")
        c.execute("CREATE MATERIALIZED VIEW gap_values (k, v) AS VALUES (1, 10), (2, 20)")
        try:
            assert c.execute("SELECT * FROM gap_const").fetchall() == [(1, "x")]
            assert c.execute("SELECT k, v FROM gap_values ORDER BY k").fetchall() == [(1, 10), (2, 20)]
        finally:
            c.execute("DROP MATERIALIZED VIEW gap_const")
            c.execute("DROP MATERIALIZED VIEW gap_values")


def test_show_materialized_views_indexes_sources(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE SCHEMA gap_s")
        c.execute("CREATE TABLE gap_s.t (k int, v text)")
        c.execute("CREATE MATERIALIZED VIEW gap_s.mv AS SELECT k, count(*) AS n FROM gap_s.t GROUP BY k")
        c.execute("CREATE INDEX gap_idx ON gap_s.t (v, k + 1)")
        c.execute("CREATE DEFAULT INDEX ON gap_s.mv")
        try:
            cur = c.execute("SHOW MATERIALIZED VIEWS FROM gap_s")
            assert [d.name for d in cur.description] == ["name", "cluster", "comment"]
            assert cur.fetchall() == [("mv", "quickstart", "")]
            assert c.execute("SHOW MATERIALIZED VIEWS FROM gap_s IN CLUSTER quickstart").fetchall() == [
                ("mv", "quickstart", "")]
            assert c.execute("SHOW MATERIALIZED VIEWS FROM gap_s LIKE 'nomatch%'").fetchall() == []
            cur = c.execute("SHOW INDEXES ON gap_s.t")
            assert [d.name for d in cur.description] == ["name", "on", "cluster", "key", "comment"]
            assert cur.fetchall() == [("gap_idx", "t", "quickstart", ["v", "k + 1"], "")]
            assert c.execute("SHOW INDEXES FROM gap_s").fetchall() == [
                ("gap_idx", "t", "quickstart", ["v", "k + 1"], ""),
                ("mv_primary_idx", "mv", "quickstart", ["k", "n"], "")]
            in_cluster = c.execute("SHOW INDEXES IN CLUSTER quickstart").fetchall()
            assert {r[0] for r in in_cluster} >= {"gap_idx", "mv_primary_idx"}
            cur = c.execute("SHOW SOURCES FROM gap_s")
            assert [d.name for d in cur.description] == ["name", "type", "cluster", "comment"]
            assert cur.fetchall() == []
            assert _sqlstate(lambda: c.execute("SHOW MATERIALIZED VIEWS IN CLUSTER nosuch")) == "42704"
            assert _sqlstate(lambda: c.execute("SHOW TABLES IN CLUSTER quickstart")) == "42601"
        finally:
            c.execute("DROP SCHEMA gap_s CASCADE")


def test_current_schemas_and_mz_logical_timestamp(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("SET search_path = nosuch, public")
        row = c.execute("SELECT current_schemas(true), current_schemas(false), current_schema").fetchone()
        assert row == (["mz_catalog", "pg_catalog", "public"], ["public"], "public")
        c.execute("SET search_path = pg_catalog, public")
        assert c.execute("SELECT current_schemas(true)").fetchone() == (["mz_catalog", "pg_catalog", "public"],)
        c.execute("RESET search_path")
        c.execute("CREATE TABLE gap_ts (x int)")
        c.execute("INSERT INTO gap_ts VALUES (1)")
        cur = c.execute("SELECT mz_logical_timestamp() AS a, mz_now() AS b FROM gap_ts")
        a, b = cur.fetchone()
        assert a == b and int(a) > 0
        cur = c.execute("SELECT mz_logical_timestamp()")
        assert [d.name for d in cur.description] == ["mz_logical_timestamp"]
        c.execute("DROP TABLE gap_ts")


def _fetch_until(c: psycopg.Connection, cursor: str, n: int, *, progress: bool = False,
                 timeout: float = 30) -> list[tuple]:
    """Rows of the cursor until `n` data rows (not progress rows) have come."""
    got: list[tuple] = []
    deadline = time.time() + timeout
    while sum(1 for r in got if not (progress and r[1] is True)) < n and time.time() < deadline:
        got += c.execute(f"FETCH ALL {cursor} WITH (timeout = '1s')").fetchall()
    return got


def test_subscribe_envelope_upsert_and_debezium(server: WeirServer) -> None:
    with server.connect() as w:
        w.execute("CREATE TABLE gap_kv (k int, v text, w int)")
        w.execute("INSERT INTO gap_kv VALUES (1, 'a', 10), (2, 'b', 20)")
    with psycopg.connect(server.dsn) as up, psycopg.connect(server.dsn) as dbz:
        up.execute("DECLARE u CURSOR FOR SUBSCRIBE gap_kv ENVELOPE UPSERT (KEY (k))")
        dbz.execute("DECLARE d CURSOR FOR SUBSCRIBE gap_kv ENVELOPE DEBEZIUM (KEY (k)) WITH (PROGRESS)")
        cur = up.execute("FETCH ALL u WITH (timeout = '5s')")
        snap = cur.fetchall()
        assert [d.name for d in cur.description] == ["mz_timestamp", "mz_state", "k", "v", "w"]
        assert [r[1:] for r in snap] == [("upsert", 1, "a", 10), ("upsert", 2, "b", 20)]
        with server.connect() as w:
            w.execute("UPDATE gap_kv SET v = 'A' WHERE k = 1")
            w.execute("DELETE FROM gap_kv WHERE k = 2")
            # two values for key 3 at one time (Materialize detects violations per timestamp)
            w.execute("INSERT INTO gap_kv VALUES (3, 'c', 30), (3, 'c2', 31)")
        got = _fetch_until(up, "u", 3)
        assert [r[1:] for r in got] == [("upsert", 1, "A", 10), ("delete", 2, None, None),
                                        ("key_violation", 3, None, None)]
        assert len({r[0] for r in got}) == 3, "each change at its own timestamp"
        cur = dbz.execute("FETCH ALL d WITH (timeout = '5s')")
        cols = [d.name for d in cur.description]
        rows = cur.fetchall()
        rows += _fetch_until(dbz, "d", 5 - len([r for r in rows if r[1] is False]), progress=True)
        data = [r for r in rows if r[1] is False]
        assert cols == ["mz_timestamp", "mz_progressed", "mz_state", "k", "before_v", "before_w",
                        "after_v", "after_w"]
        assert [r[2:] for r in data] == [
            ("insert", 1, None, None, "a", 10), ("insert", 2, None, None, "b", 20),
            ("upsert", 1, "a", 10, "A", 10), ("delete", 2, "b", 20, None, None),
            ("key_violation", 3, None, None, None, None)]
        progress = [r for r in rows if r[1] is True]
        assert progress and all(r[2:] == (None,) * 6 for r in progress)
        up.execute("COMMIT")
        dbz.execute("COMMIT")
    with server.connect() as c:
        assert _sqlstate(lambda: c.execute("SUBSCRIBE gap_kv ENVELOPE UPSERT (KEY (nope))")) == "42703"
        c.execute("DROP TABLE gap_kv")


def test_subscribe_within_timestamp_order_by(server: WeirServer) -> None:
    with server.connect() as w:
        # history kept: both subscriptions read AS OF one time, the second seconds later
        # on a loaded machine (the default 1-s window had compacted past it)
        w.execute("CREATE TABLE gap_o (a int, b text) WITH (RETAIN HISTORY FOR '10min')")
        w.execute("INSERT INTO gap_o VALUES (1, 'x'), (3, 'y'), (2, NULL), (NULL, 'z')")
    with server.connect() as c:
        now = int(c.execute("SELECT mz_now() FROM gap_o LIMIT 1").fetchone()[0])
        with c.cursor().copy("COPY (SUBSCRIBE (SELECT a, b FROM gap_o) WITHIN TIMESTAMP ORDER BY a DESC "
                             f"AS OF {now} UP TO {now + 1}) TO STDOUT") as cp:
            rows = [r[2:] for r in cp.rows()]
        assert rows == [(None, "z"), ("3", "y"), ("2", None), ("1", "x")]
        with c.cursor().copy("COPY (SUBSCRIBE gap_o WITHIN TIMESTAMP ORDER BY b NULLS FIRST, a "
                             f"AS OF {now} UP TO {now + 1}) TO STDOUT") as cp:
            rows = [r[2:] for r in cp.rows()]
        assert rows == [("2", None), ("1", "x"), ("3", "y"), (None, "z")]
        assert _sqlstate(lambda: c.execute(
            "SUBSCRIBE gap_o ENVELOPE UPSERT (KEY (a)) WITHIN TIMESTAMP ORDER BY a")) == "42601"
        c.execute("DROP TABLE gap_o")


def test_subscribe_to_a_constant_ends(server: WeirServer) -> None:
    with server.connect() as c:
        started = time.time()
        with c.cursor().copy("COPY (SUBSCRIBE (SELECT 1 AS one)) TO STDOUT") as cp:
            rows = list(cp.rows())
        assert [r[1:] for r in rows] == [("1", "1")]
    with psycopg.connect(server.dsn) as c:
        c.execute("DECLARE k CURSOR FOR SUBSCRIBE (SELECT 1)")
        assert [r[1:] for r in c.execute("FETCH ALL k").fetchall()] == [(1, 1)]
        c.execute("COMMIT")
    assert time.time() - started < 60


def test_temporal_filters_retract_and_insert_at_their_times(server: WeirServer) -> None:
    """A materialized view with mz_now() in its WHERE changes when its rows' times come, at
    exactly those times (seen through SUBSCRIBE's timestamps), with no input changing."""
    with server.connect() as c:
        c.execute("CREATE TABLE tf (id int, t_from bigint, t_until bigint, ts timestamp)")
        c.execute("CREATE MATERIALIZED VIEW tf_window AS SELECT id FROM tf "
                  "WHERE mz_now() >= t_from AND mz_now() < t_until")
        c.execute("CREATE MATERIALIZED VIEW tf_recent AS SELECT id, count(*) AS n FROM tf "
                  "WHERE mz_now() <= ts + INTERVAL '3 seconds' GROUP BY id")
        try:
            for mv in ("tf_window", "tf_recent"):  # hydrated: what follows is timed
                assert c.execute(f"SELECT * FROM {mv}").fetchall() == []
            base = int(c.execute("SELECT mz_now()").fetchone()[0])
            ts = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=base + 12000)
            c.execute("INSERT INTO tf VALUES (1, 0, %s, %s), (2, %s, %s, NULL), (3, 0, %s, NULL)",
                      (base + 15000, ts, base + 20000, base + 10**9, base + 10**9))
            recent = psycopg.connect(server.dsn)
            recent.execute(f"DECLARE r CURSOR FOR SUBSCRIBE tf_recent UP TO {base + 16000}")  # holds its as_of
            with c.cursor().copy(f"COPY (SUBSCRIBE tf_window UP TO {base + 21000}) TO STDOUT") as cp:
                rows = [(int(t), int(d), int(i)) for t, d, i in cp.rows()]
            snapshot_at = rows[0][0]
            assert sorted((d, i) for t, d, i in rows if t == snapshot_at) == [(1, 1), (1, 3)]
            assert [r for r in rows if r[0] != snapshot_at] == [(base + 15000, -1, 1), (base + 20000, 1, 2)]
            got: list[tuple] = []
            while batch := recent.execute("FETCH ALL r WITH (timeout = '2s')").fetchall():
                got += batch
            recent.execute("COMMIT")
            recent.close()
            rows = [(int(t), int(d), int(i), int(n)) for t, d, i, n in got]
            assert rows[-1] == (base + 15001, -1, 1, 1), rows  # ts + 3 s has passed: flips at +1 ms
            assert _sqlstate(lambda: c.execute(
                "CREATE MATERIALIZED VIEW tf_bad AS SELECT mz_now() AS t FROM tf")) == "0A000"
            assert _sqlstate(lambda: c.execute(  # its answer would change between input changes
                "SUBSCRIBE (SELECT id FROM tf WHERE mz_now() < t_until)")) == "0A000"
            assert _sqlstate(lambda: c.execute(
                "CREATE MATERIALIZED VIEW tf_bad AS SELECT id FROM tf WHERE mz_now() < t_until OR id = 1")) == "0A000"
        finally:
            c.execute("DROP MATERIALIZED VIEW tf_recent")
            c.execute("DROP MATERIALIZED VIEW tf_window")
            c.execute("DROP TABLE tf")
