"""SUBSCRIBE through the wire protocol: COPY (SUBSCRIBE ...) TO STDOUT and DECLARE/FETCH."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from tests.integration.server import WeirServer


def _sqlstate(fn) -> str:  # noqa: ANN001
    with pytest.raises(psycopg.Error) as e:
        fn()
    return e.value.sqlstate or ""


def test_subscribe_table_via_cursor(server: WeirServer) -> None:
    with server.connect() as w:
        w.execute("CREATE TABLE sub_t (x int, y text)")
        w.execute("INSERT INTO sub_t VALUES (1, 'a'), (2, 'b')")
    with psycopg.connect(server.dsn) as c:
        c.execute("DECLARE c CURSOR FOR SUBSCRIBE sub_t")
        snap = c.execute("FETCH ALL c WITH (timeout = '2s')").fetchall()
        assert sorted((r[1], r[2], r[3]) for r in snap) == [(1, 1, "a"), (1, 2, "b")]
        assert len({r[0] for r in snap}) == 1, "a snapshot is at one timestamp"
        with server.connect() as w:
            w.execute("INSERT INTO sub_t VALUES (3, 'c')")
            w.execute("DELETE FROM sub_t WHERE x = 1")
        got: list[tuple] = []
        deadline = time.time() + 20
        while len(got) < 2 and time.time() < deadline:
            got += c.execute("FETCH 10 c WITH (timeout = '1s')").fetchall()
        assert [(r[1], r[2]) for r in got] == [(1, 3), (-1, 1)]
        assert int(got[0][0]) < int(got[1][0]), "changes come in timestamp order"
        assert int(got[0][0]) > int(snap[0][0])
        assert c.execute("FETCH 10 c WITH (timeout = '500ms')").fetchall() == []
        c.execute("COMMIT")


def test_subscribe_query_with_progress_and_no_snapshot(server: WeirServer) -> None:
    with server.connect() as w:
        w.execute("CREATE TABLE sub_q (x int)")
        w.execute("INSERT INTO sub_q VALUES (1), (2)")
    with psycopg.connect(server.dsn) as c:
        c.execute("DECLARE q CURSOR FOR SUBSCRIBE (SELECT count(*) AS n, sum(x) AS s FROM sub_q) "
                  "WITH (SNAPSHOT false, PROGRESS)")
        first = c.execute("FETCH 1 q WITH (timeout = '10s')").fetchall()
        assert first and first[0][1] is True and first[0][2] is None, "a progress row comes first"
        with server.connect() as w:
            w.execute("INSERT INTO sub_q VALUES (10)")
        rows: list[tuple] = []
        deadline = time.time() + 30
        while not any(r[1] is False for r in rows) and time.time() < deadline:
            rows += c.execute("FETCH 10 q WITH (timeout = '1s')").fetchall()
        data = sorted((r[2], r[3], r[4]) for r in rows if r[1] is False)
        assert data == [(-1, 2, 3), (1, 3, 13)]
        c.execute("COMMIT")


def test_copy_subscribe_up_to_ends_and_errors(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE TABLE sub_c (x int)")
        c.execute("INSERT INTO sub_c VALUES (5)")
        (now,) = c.execute("SELECT mz_now()").fetchone()
        up_to = int(now) + 2500
        started = time.time()
        with c.cursor().copy(f"COPY (SUBSCRIBE sub_c AS OF {int(now)} UP TO {up_to}) TO STDOUT") as cp:
            rows = list(cp.rows())
        assert time.time() - started < 30
        assert rows == [(str(int(now)), "1", "5")]
        assert _sqlstate(lambda: c.execute("SUBSCRIBE nosuch")) == "42P01"
        assert _sqlstate(lambda: c.execute("SUBSCRIBE sub_c AS OF now()")) == "0A000"
        assert _sqlstate(lambda: c.execute("SUBSCRIBE sub_c AS OF -1")) == "22023"


def test_cancel_ends_copy_subscribe(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE TABLE sub_x (x int)")

        def cancel_soon() -> None:
            time.sleep(2)
            c.cancel()

        threading.Thread(target=cancel_soon).start()
        with pytest.raises(psycopg.errors.QueryCanceled):
            with c.cursor().copy("COPY (SUBSCRIBE sub_x WITH (PROGRESS)) TO STDOUT") as cp:
                for _ in cp.rows():
                    pass
        assert c.execute("SELECT 1").fetchone() == (1,)
