"""Runtime errors in dataflows are data at a time (as in Materialize): a materialized view
or index whose query fails on some input answers reads with that error promptly,
SUBSCRIBE reports it, mz_internal.mz_compute_error_counts counts it, and it recovers
by itself once the offending input is gone. Plus: SUBSCRIBE to a constant query ends
after its snapshot."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest

from tests.integration.server import WeirServer

PROMPT_S = 15.0  # a read of an erroring view must fail within this, not hang


def _error_within(c: psycopg.Connection, sql: str, sqlstate: str, timeout: float = 60) -> psycopg.Error:
    """`sql` fails with `sqlstate`, each attempt promptly, within `timeout` overall."""
    deadline = time.time() + timeout
    last: object = None
    while time.time() < deadline:
        started = time.time()
        try:
            last = c.execute(sql).fetchall()
        except psycopg.Error as e:
            assert time.time() - started < PROMPT_S, f"{sql} took {time.time() - started:.1f}s"
            if e.sqlstate == sqlstate:
                return e
            last = e
        assert time.time() - started < PROMPT_S, f"{sql} took {time.time() - started:.1f}s"
        time.sleep(0.5)
    raise AssertionError(f"{sql}: expected SQLSTATE {sqlstate}, last got {last!r}")


def _rows_within(c: psycopg.Connection, sql: str, expected: list[tuple], timeout: float = 60) -> None:
    deadline = time.time() + timeout
    last: object = None
    while time.time() < deadline:
        try:
            last = c.execute(sql).fetchall()
            if last == expected:
                return
        except psycopg.Error as e:
            last = e
        time.sleep(0.5)
    raise AssertionError(f"{sql}: expected {expected}, last got {last!r}")


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory, java: None):  # noqa: ANN201
    s = WeirServer(tmp_path_factory.mktemp("weir") / "data").start()
    yield s
    s.stop()


def test_subscribe_to_a_constant_query_ends(srv: WeirServer) -> None:
    with srv.connect() as c:
        with c.cursor().copy("COPY (SUBSCRIBE (SELECT 1 AS x)) TO STDOUT") as cp:
            lines = [bytes(row).decode() for row in cp]
        assert len(lines) == 1 and lines[0].rstrip("\n").split("\t")[1:] == ["1", "1"]
    with srv.connect() as c:
        c.execute("BEGIN")
        c.execute("DECLARE cur CURSOR FOR SUBSCRIBE (SELECT 1)")
        rows = c.execute("FETCH ALL cur").fetchall()
        assert [r[1:] for r in rows] == [(1, 1)]
        assert c.execute("FETCH ALL cur").fetchall() == []
        c.execute("COMMIT")


def test_materialized_view_error_is_data(srv: WeirServer) -> None:
    with srv.connect() as c:
        c.execute("CREATE TABLE de_t (a int)")
        c.execute("INSERT INTO de_t VALUES (1), (2)")
        c.execute("CREATE MATERIALIZED VIEW de_mv AS SELECT 10 / a AS q FROM de_t")
        _rows_within(c, "SELECT q FROM de_mv ORDER BY q", [(5,), (10,)])
        c.execute("INSERT INTO de_t VALUES (0)")
        err = _error_within(c, "SELECT * FROM de_mv", "22012")
        assert err.diag.message_primary == "division by zero"
        # other sessions and other relations carry on
        assert c.execute("SELECT count(*) FROM de_t").fetchall() == [(3,)]
        _rows_within(c, "SELECT export_id, count FROM mz_internal.mz_compute_error_counts "
                        "WHERE export_id = (SELECT id FROM mz_materialized_views WHERE name = 'de_mv')",
                     [(_id(c, "de_mv"), 1)])
        # SUBSCRIBE reports the error and ends
        with pytest.raises(psycopg.Error) as info:
            with c.cursor().copy("COPY (SUBSCRIBE de_mv) TO STDOUT") as cp:
                for _ in cp:
                    pass
        assert info.value.sqlstate == "22012"
        c.execute("DELETE FROM de_t WHERE a = 0")
        _rows_within(c, "SELECT q FROM de_mv ORDER BY q", [(5,), (10,)])
        _rows_within(c, "SELECT count(*) FROM mz_internal.mz_compute_error_counts "
                        f"WHERE export_id = '{_id(c, 'de_mv')}'", [(0,)])


def _id(c: psycopg.Connection, name: str) -> str:
    rows = c.execute("SELECT id FROM mz_objects WHERE name = %s", (name,)).fetchall()
    assert len(rows) == 1, rows
    return str(rows[0][0])


def test_subscribe_sees_a_new_error(srv: WeirServer) -> None:
    with srv.connect() as c:
        c.execute("CREATE TABLE ds_t (a int)")
        c.execute("INSERT INTO ds_t VALUES (4)")
        c.execute("CREATE MATERIALIZED VIEW ds_mv AS SELECT 8 / a AS q FROM ds_t")
        _rows_within(c, "SELECT * FROM ds_mv", [(2,)])
        got: list[object] = []

        def sub() -> None:
            with srv.connect() as s:
                try:
                    with s.cursor().copy("COPY (SUBSCRIBE ds_mv) TO STDOUT") as cp:
                        for row in cp:
                            got.append(bytes(row).decode())
                except psycopg.Error as e:
                    got.append(e)

        t = threading.Thread(target=sub, daemon=True)
        t.start()
        time.sleep(3)
        c.execute("INSERT INTO ds_t VALUES (0)")
        t.join(60)
        assert not t.is_alive(), "SUBSCRIBE did not end on the error"
        assert isinstance(got[-1], psycopg.Error) and got[-1].sqlstate == "22012", got
        assert any(isinstance(g, str) and g.rstrip("\n").endswith("\t2") for g in got), got


def test_failed_cast_and_overflow(srv: WeirServer) -> None:
    with srv.connect() as c:
        c.execute("CREATE TABLE dc_t (s text, n int)")
        c.execute("INSERT INTO dc_t VALUES ('1', 1)")
        c.execute("CREATE MATERIALIZED VIEW dc_cast AS SELECT s::int AS v FROM dc_t")
        c.execute("CREATE MATERIALIZED VIEW dc_over AS SELECT n * 2147483647 AS v FROM dc_t")
        _rows_within(c, "SELECT * FROM dc_cast", [(1,)])
        _rows_within(c, "SELECT * FROM dc_over", [(2147483647,)])
        c.execute("INSERT INTO dc_t VALUES ('x', 2)")
        _error_within(c, "SELECT * FROM dc_cast", "22P02")
        _error_within(c, "SELECT * FROM dc_over", "22003")
        c.execute("DELETE FROM dc_t WHERE n = 2")
        _rows_within(c, "SELECT * FROM dc_cast", [(1,)])
        _rows_within(c, "SELECT * FROM dc_over", [(2147483647,)])


def test_assert_not_null(srv: WeirServer) -> None:
    """WITH (ASSERT NOT NULL col), as in Materialize: the column is not nullable in the
    catalog, and while the view's query gives it a NULL, reads of the view fail with that
    error (data at a time, like any other) until the NULL is gone."""
    with srv.connect() as c:
        c.execute("CREATE TABLE dn_t (a int, b text)")
        c.execute("INSERT INTO dn_t VALUES (1, 'x'), (2, NULL)")
        c.execute("CREATE MATERIALIZED VIEW dn_mv WITH (ASSERT NOT NULL a, ASSERT NOT NULL \"A b\") "
                  "AS SELECT a + 1 AS a, a AS \"A b\", b FROM dn_t")
        _rows_within(c, "SELECT * FROM dn_mv ORDER BY a", [(2, 1, "x"), (3, 2, None)])
        nullable = c.execute("SELECT c.name, c.nullable FROM mz_catalog.mz_columns c JOIN mz_catalog.mz_objects o "
                             "ON c.id = o.id WHERE o.name = 'dn_mv' ORDER BY c.position").fetchall()
        assert nullable == [("a", False), ("A b", False), ("b", True)]
        c.execute("INSERT INTO dn_t VALUES (NULL, 'y')")
        e = _error_within(c, "SELECT * FROM dn_mv", "23502")
        assert 'column "a" must not be null' in str(e), e
        c.execute("DELETE FROM dn_t WHERE a IS NULL")
        _rows_within(c, "SELECT * FROM dn_mv ORDER BY a", [(2, 1, "x"), (3, 2, None)])
        for bad, state in [("WITH (ASSERT NOT NULL z) AS SELECT a FROM dn_t", "42703"),
                           ("WITH (ASSERT NOT NULL a, ASSERT NOT NULL a) AS SELECT a FROM dn_t", "42701"),
                           ("WITH (ASSERT NOT NULL a) AS SELECT NULL::int AS a", "23502")]:
            with pytest.raises(psycopg.Error) as err:
                c.execute(f"CREATE MATERIALIZED VIEW dn_bad {bad}")
            assert err.value.sqlstate == state, (bad, err.value)
        c.execute("CREATE MATERIALIZED VIEW dn_const WITH (ASSERT NOT NULL a) AS SELECT 1 AS a")
        assert c.execute("SELECT * FROM dn_const").fetchall() == [(1,)]
        c.execute("DROP TABLE dn_t CASCADE")
        c.execute("DROP MATERIALIZED VIEW dn_const")


def test_index_on_erroring_view(srv: WeirServer) -> None:
    with srv.connect() as c:
        c.execute("CREATE TABLE di_t (k int, a int)")
        c.execute("INSERT INTO di_t VALUES (1, 1), (2, 2)")
        c.execute("CREATE VIEW di_v AS SELECT k, 100 / a AS q FROM di_t")
        c.execute("CREATE INDEX di_v_idx ON di_v (k)")
        _rows_within(c, "SELECT q FROM di_v WHERE k = 1", [(100,)])
        c.execute("INSERT INTO di_t VALUES (3, 0)")
        _error_within(c, "SELECT q FROM di_v WHERE k = 1", "22012")  # fast path
        _error_within(c, "SELECT count(*) FROM di_v JOIN di_t USING (k)", "22012")  # slow path
        _rows_within(c, "SELECT count FROM mz_internal.mz_compute_error_counts "
                        f"WHERE export_id = '{_id(c, 'di_v_idx')}'", [(1,)])
        c.execute("DELETE FROM di_t WHERE a = 0")
        _rows_within(c, "SELECT q FROM di_v WHERE k = 2", [(50,)])
        _rows_within(c, "SELECT count(*) FROM di_v JOIN di_t USING (k)", [(2,)])


@pytest.mark.timeout(600)
def test_errors_survive_a_restart(tmp_path: Path, java: None) -> None:
    s = WeirServer(tmp_path / "data").start()
    try:
        with s.connect() as c:
            c.execute("CREATE TABLE dr_t (a int)")
            c.execute("INSERT INTO dr_t VALUES (0)")
            c.execute("CREATE MATERIALIZED VIEW dr_mv AS SELECT 1 / a AS q FROM dr_t")
            _error_within(c, "SELECT * FROM dr_mv", "22012")
        s.stop()
        s.start()
        with s.connect() as c:
            _error_within(c, "SELECT * FROM dr_mv", "22012", timeout=120)
            c.execute("UPDATE dr_t SET a = 1")
            _rows_within(c, "SELECT * FROM dr_mv", [(1,)], timeout=120)
    finally:
        s.stop()
