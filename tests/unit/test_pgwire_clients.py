"""PgServer driven by real PostgreSQL clients: psycopg 3, asyncpg, pg8000, psql."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import asyncpg
import pg8000.native
import psycopg
import pytest
from psycopg import pq

from tests.unit.test_pgwire_fake import TYPES_ROW, FakeCoordinator, ServerProcess, ServerThread


@pytest.fixture(scope="module")
def srv() -> Iterator[ServerThread]:
    s = ServerThread(FakeCoordinator())
    yield s
    s.stop()


@pytest.fixture
def conn(srv: ServerThread) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(srv.dsn(), autocommit=True) as c:
        yield c


# ---- psycopg ------------------------------------------------------------------------------


def test_psycopg_simple(conn: psycopg.Connection[Any]) -> None:
    assert conn.execute("SELECT 1").fetchone() == (1,)
    assert conn.execute("SELECT generate_series(1, 1000)").fetchall() == [
        (i,) for i in range(1, 1001)
    ]


def test_psycopg_params_text_and_binary(conn: psycopg.Connection[Any]) -> None:
    assert conn.execute("SELECT %s::int, %s", (42, "hi")).fetchone() == (42, "hi")
    cur = conn.cursor(binary=True)
    assert cur.execute("SELECT %s::int, %s", (42, "hi")).fetchone() == (42, "hi")
    assert cur.execute("SELECT %b::int", (7,)).fetchone() == (7,)
    assert conn.execute("SELECT %s", (None,)).fetchone() == (None,)


@pytest.mark.parametrize("binary", [False, True])
def test_psycopg_types_row(conn: psycopg.Connection[Any], binary: bool) -> None:
    row = conn.cursor(binary=binary).execute("SELECT types", prepare=binary).fetchone()
    assert row == TYPES_ROW
    assert conn.execute("SELECT types").description[0].type_code == 21


def test_psycopg_prepared_statements(conn: psycopg.Connection[Any]) -> None:
    for i in range(8):
        assert conn.execute("SELECT %s::int", (i,), prepare=True).fetchone() == (i,)
    assert conn.execute("SELECT %s::int", (99,), prepare=False).fetchone() == (99,)


def test_psycopg_executemany_and_pipeline(conn: psycopg.Connection[Any]) -> None:
    cur = conn.cursor()
    cur.executemany("INSERT INTO t VALUES (%s)", [(i,) for i in range(5)])
    assert cur.rowcount == 5
    with conn.pipeline():
        curs = [conn.execute("SELECT %s::int", (i,)) for i in range(10)]
    assert [c.fetchone() for c in curs] == [(i,) for i in range(10)]


def test_psycopg_copy_to_stdout(conn: psycopg.Connection[Any]) -> None:
    cur = conn.cursor()
    with cur.copy("COPY t TO STDOUT") as copy:
        data = b"".join(bytes(block) for block in copy)
    assert data == b"1\trow\\t1\n2\t\\N\n3\trow\\t3\n"
    assert cur.rowcount == 3
    with cur.copy("COPY t TO STDOUT") as copy:
        copy.set_types(["int4", "text"])
        assert list(copy.rows()) == [(1, "row\t1"), (2, None), (3, "row\t3")]


def test_psycopg_errors(conn: psycopg.Connection[Any]) -> None:
    with pytest.raises(psycopg.errors.DivisionByZero) as e:
        conn.execute("SELECT 1/0")
    assert e.value.sqlstate == "22012"
    assert e.value.diag.severity_nonlocalized == "ERROR"
    with pytest.raises(psycopg.errors.SyntaxError) as e2:
        conn.execute("SELEC %s", (1,))
    assert e2.value.diag.statement_position == "1"
    with pytest.raises(psycopg.errors.InternalError_):
        conn.execute("SELECT boom")
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_psycopg_transaction_status(srv: ServerThread) -> None:
    with psycopg.connect(srv.dsn()) as c:  # not autocommit: psycopg sends BEGIN
        assert c.info.transaction_status == pq.TransactionStatus.IDLE
        c.execute("SELECT 1")
        assert c.info.transaction_status == pq.TransactionStatus.INTRANS
        with pytest.raises(psycopg.errors.DivisionByZero):
            c.execute("SELECT 1/0")
        assert c.info.transaction_status == pq.TransactionStatus.INERROR
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            c.execute("SELECT 1")
        c.rollback()
        assert c.info.transaction_status == pq.TransactionStatus.IDLE
        c.execute("SELECT 1")
        c.commit()
        assert c.info.transaction_status == pq.TransactionStatus.IDLE


def test_psycopg_parameter_status_and_notice(conn: psycopg.Connection[Any]) -> None:
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(f"{d.severity}:{d.message_primary}"))
    conn.execute("SET application_name = 'weirtest'")
    assert conn.info.parameter_status("application_name") == "weirtest"
    conn.execute("SELECT notice")
    assert notices == ["WARNING:this is a notice"]
    assert conn.info.parameter_status("server_version") == "15.0"
    assert conn.info.backend_pid > 0


@pytest.fixture(scope="module")
def srv_proc() -> Iterator[ServerProcess]:
    s = ServerProcess()
    yield s
    s.stop()


@pytest.mark.parametrize("how", ["cancel", "cancel_safe"])
def test_psycopg_cancel(srv_proc: ServerProcess, how: str) -> None:
    # In a child process: psycopg's legacy cancel() blocks holding the GIL.
    with psycopg.connect(srv_proc.dsn(sslmode="prefer"), autocommit=True) as c:
        timer = threading.Timer(0.3, getattr(c, how))
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled) as e:
            c.execute("SELECT pg_sleep(10)")
        assert time.monotonic() - t0 < 5
        assert e.value.sqlstate == "57014"
        assert str(e.value).startswith("canceling statement due to user request")
        assert c.execute("SELECT 1").fetchone() == (1,)
        timer = threading.Timer(0.3, getattr(c, how))
        timer.start()
        with pytest.raises(psycopg.errors.QueryCanceled):
            c.execute("SELECT %s::int, pg_sleep(10)", (1,))  # extended protocol
        assert c.execute("SELECT %s::int", (5,)).fetchone() == (5,)


def test_psycopg_many_round_trips_fast(conn: psycopg.Connection[Any]) -> None:
    n = 2000
    t0 = time.perf_counter()
    for i in range(n):
        conn.execute("SELECT %s::int", (i,))
    rate = n / (time.perf_counter() - t0)
    assert rate > 300, rate  # same process as the server; ~3-5k/s when unloaded


# ---- asyncpg ------------------------------------------------------------------------------


def _asyncpg(srv: ServerThread, fn: Any) -> Any:
    async def main() -> Any:
        c = await asyncpg.connect(
            host="127.0.0.1", port=srv.port, user="materialize", database="materialize",
            ssl=False,
        )
        try:
            return await fn(c)
        finally:
            await c.close()

    return asyncio.run(main())


def test_asyncpg_basic_and_prepared(srv: ServerThread) -> None:
    async def fn(c: asyncpg.Connection) -> None:
        assert await c.fetchval("SELECT 1") == 1
        assert await c.fetchrow("SELECT $1::int, $2", 5, "x") == (5, "x")
        stmt = await c.prepare("SELECT $1::int, $2")
        assert [tuple(r) for r in await stmt.fetch(6, "y")] == [(6, "y")]
        assert [tuple(r) for r in await stmt.fetch(7, "z")] == [(7, "z")]
        assert tuple(await c.fetchrow("SELECT types")) == TYPES_ROW
        assert await c.execute("SET application_name = 'ap'") == "SET"
        rows = await c.fetch("SELECT generate_series(1, 300)")
        assert [r[0] for r in rows] == list(range(1, 301))

    _asyncpg(srv, fn)


def test_asyncpg_cursor_prefetch_uses_portal_suspension(srv: ServerThread) -> None:
    async def fn(c: asyncpg.Connection) -> None:
        async with c.transaction():
            got = [r[0] async for r in c.cursor("SELECT generate_series(1, 250)", prefetch=40)]
            assert got == list(range(1, 251))
            cur = await c.cursor("SELECT generate_series(1, 25)")
            assert [r[0] for r in await cur.fetch(10)] == list(range(1, 11))
            assert (await cur.fetchrow())[0] == 11
            assert [r[0] for r in await cur.fetch(100)] == list(range(12, 26))

    _asyncpg(srv, fn)


def test_asyncpg_errors_and_cancel(srv: ServerThread) -> None:
    async def fn(c: asyncpg.Connection) -> None:
        with pytest.raises(asyncpg.exceptions.DivisionByZeroError):
            await c.fetch("SELECT 1/0")
        # asyncpg sends a CancelRequest on timeout and waits for the 57014 reply
        with pytest.raises(TimeoutError):
            await c.fetch("SELECT pg_sleep(10)", timeout=0.3)
        assert await c.fetchval("SELECT $1::int", 3) == 3

    _asyncpg(srv, fn)


# ---- pg8000 -------------------------------------------------------------------------------


def test_pg8000(srv: ServerThread) -> None:
    con = pg8000.native.Connection(
        "materialize", host="127.0.0.1", port=srv.port, database="materialize"
    )
    try:
        assert con.run("SELECT 1") == [[1]]
        assert con.run("SELECT :v::int", v=12) == [[12]]
        assert [r[0] for r in con.run("SELECT generate_series(1, 50)")] == list(range(1, 51))
        ps = con.prepare("SELECT :a::int, :b")
        assert ps.run(a=1, b="q") == [[1, "q"]]
        assert ps.run(a=2, b="r") == [[2, "r"]]
        ps.close()
        with pytest.raises(pg8000.native.DatabaseError) as e:
            con.run("SELECT 1/0")
        assert e.value.args[0]["C"] == "22012"
        assert con.run("SELECT types")[0] == list(TYPES_ROW)
    finally:
        con.close()


# ---- psql ---------------------------------------------------------------------------------

needs_psql = pytest.mark.skipif(shutil.which("psql") is None, reason="psql not installed")


def _psql(srv: ServerThread, *args: str, env: dict[str, str] | None = None,
          sslmode: str = "prefer") -> subprocess.CompletedProcess[str]:
    dsn = f"host=127.0.0.1 port={srv.port} user=materialize dbname=materialize sslmode={sslmode}"
    return subprocess.run(
        ["psql", dsn, "-X", "-w", "-A", "-t", *args], capture_output=True, text=True,
        timeout=30, env={"PATH": "/usr/bin:/bin", **(env or {})},
    )


@needs_psql
def test_psql_queries(srv: ServerThread) -> None:
    r = _psql(srv, "-c", "SELECT generate_series(1, 3)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "2", "3"]
    r = _psql(srv, "-c", "SELECT 1/0")
    assert r.returncode == 1 and "ERROR:  division by zero" in r.stderr
    r = _psql(srv, "-c", "COPY t TO STDOUT")
    assert r.stdout == "1\trow\\t1\n2\t\\N\n3\trow\\t3\n"
    r = _psql(srv, "-c", "BEGIN", "-c", "SELECT 1", "-c", "COMMIT")
    assert r.returncode == 0, r.stderr
