"""End to end through asyncpg (binary formats everywhere, named prepared statements,
portals with row limits) against a real weir server with a real Spark replica."""

from __future__ import annotations

import asyncio
import datetime as dt
import decimal
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import pytest

from tests.integration.server import WeirServer

D = decimal.Decimal
UTC = dt.UTC

TYPED_DDL = """(id int, b boolean, s smallint, i integer, l bigint, r real, d double precision,
    n numeric(20,6), t text, v varchar, dd date, ts timestamp, tz timestamptz, iv interval,
    u uuid, by bytea, j jsonb, a text[])"""
TYPED_PARAMS = ["int4", "bool", "int2", "int4", "int8", "float4", "float8", "numeric", "text",
                "varchar", "date", "timestamp", "timestamptz", "interval", "uuid", "bytea",
                "jsonb", "text[]"]
TYPED_ROWS = [
    (1, True, 7, 42, 2**40, 1.5, 2.25, D("12.340000"), "hé", "v", dt.date(2024, 2, 29),
     dt.datetime(2024, 1, 2, 3, 4, 5, 600000), dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
     dt.timedelta(days=1, seconds=7), uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
     b"\x00\x01", {"a": 1}, ["x", None, "y z"]),
    # extremes: ranges, pre-2000 (negative binary) times, empty values, escapes
    (2, False, -32768, -2**31, -2**63, -0.25, float("-inf"), D("-12345678901234.123456"), "",
     "tab\tnl\n\\ \"q\"", dt.date(1969, 12, 31), dt.datetime(1900, 1, 1, 0, 0, 0, 1),
     dt.datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
     dt.timedelta(days=-3, microseconds=5), uuid.UUID(int=0), b"", {"k": [1, 2, {"z": None}], "s": "é"},
     []),
    (3, None, 32767, 2**31 - 1, 2**63 - 1, 2.0**100, 1e-300, D("0.000001"), "✓" * 100, "x" * 300,
     dt.date(2262, 4, 11), dt.datetime(2100, 6, 1, 12), dt.datetime(2024, 6, 1, 7, 0, tzinfo=UTC),
     dt.timedelta(days=400), uuid.UUID("ffffffff-ffff-ffff-ffff-ffffffffffff"), bytes(range(256)), [],
     ["a,b", '"q"', "{}", "NULL", " ", ""]),
    (4, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None,
     None, None),
]


def run(server: WeirServer, fn: Callable[[asyncpg.Connection], Awaitable[Any]], timeout: float = 120) -> Any:
    """Run `fn(conn)` on a fresh asyncpg connection; a hang fails the test instead of the suite."""

    async def main() -> Any:
        conn = await asyncpg.connect(host="127.0.0.1", port=server.sql_port, user="materialize",
                                     database="materialize", timeout=30)
        try:
            return await asyncio.wait_for(fn(conn), timeout)
        finally:
            await conn.close(timeout=10)

    return asyncio.run(main())


def _jsonb(v: Any) -> Any:
    return None if v is None else json.dumps(v)


def test_all_types_round_trip_binary(server: WeirServer) -> None:
    async def body(c: asyncpg.Connection) -> None:
        await c.execute(f"CREATE TABLE ap_typed {TYPED_DDL}")
        ins = await c.prepare("INSERT INTO ap_typed VALUES "
                              "($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18)")
        assert [t.name for t in ins.get_parameters()] == TYPED_PARAMS
        for row in TYPED_ROWS:
            await ins.fetch(*row[:16], _jsonb(row[16]), row[17])
        sel = await c.prepare("SELECT * FROM ap_typed ORDER BY id")
        assert [a.type.name for a in sel.get_attributes()] == TYPED_PARAMS
        got = await sel.fetch()
        assert len(got) == len(TYPED_ROWS)
        for rec, want in zip(got, TYPED_ROWS, strict=True):
            rec = tuple(rec)
            assert rec[:16] == want[:16], want[0]
            assert (None if rec[16] is None else json.loads(rec[16])) == want[16]
            assert rec[17] == want[17]
        # round trip again through parameters: WHERE on every type finds the row
        (n,) = await c.fetchrow("SELECT count(*) FROM ap_typed WHERE b = $1 AND s = $2 AND l = $3 "
                                "AND n = $4 AND dd = $5 AND ts = $6 AND tz = $7 AND u = $8 AND by = $9",
                                *(TYPED_ROWS[0][k] for k in (1, 2, 4, 7, 10, 11, 12, 14, 15)))
        assert n == 1

    run(server, body)


def test_numeric_typmod_and_constants(server: WeirServer) -> None:
    async def body(c: asyncpg.Connection) -> None:
        await c.execute("CREATE TABLE ap_num (n numeric(10,2))")
        await c.execute("INSERT INTO ap_num VALUES ($1), ($2)", D("1.005"), D("-2.5"))
        assert [r[0] for r in await c.fetch("SELECT n FROM ap_num ORDER BY n")] == [D("-2.50"), D("1.01")]
        with pytest.raises(asyncpg.NumericValueOutOfRangeError):
            await c.execute("INSERT INTO ap_num VALUES ($1)", D("123456789.1"))
        row = await c.fetchrow("SELECT 1::numeric(10,2) AS a, 1.5::real AS b, 'x'::varchar(3) AS c, "
                               "'{}'::text[] AS d, '{a,NULL}'::text[] AS e")
        assert tuple(row) == (D("1.00"), 1.5, "x", [], ["a", None])
        assert await c.fetchval("SELECT $1::text[]", []) == []

    run(server, body)


def test_parameter_type_inference(server: WeirServer) -> None:
    async def body(c: asyncpg.Connection) -> None:
        await c.execute("CREATE TABLE ap_inf (id int, name text, score double precision, big bigint)")
        ins = await c.prepare("INSERT INTO ap_inf VALUES ($1, $2)")
        assert [t.name for t in ins.get_parameters()] == ["int4", "text"]
        await ins.fetch(1, "one")
        await c.execute("INSERT INTO ap_inf VALUES ($1, $2, $3, $4)", 2, "two", 2.5, 10**12)
        sel = await c.prepare("SELECT * FROM ap_inf WHERE id = $1")
        assert [t.name for t in sel.get_parameters()] == ["int4"]
        assert [(a.name, a.type.name) for a in sel.get_attributes()] == [
            ("id", "int4"), ("name", "text"), ("score", "float8"), ("big", "int8")]
        assert tuple(await sel.fetchrow(2)) == (2, "two", 2.5, 10**12)
        assert tuple(await sel.fetchrow(1)) == (1, "one", None, None)
        assert await sel.fetchrow(3) is None
        cases = {
            "SELECT name FROM ap_inf WHERE score > $1 AND big < $2": ["float8", "int8"],
            "SELECT name FROM ap_inf WHERE name = $1": ["text"],
            "UPDATE ap_inf SET score = $1 WHERE id = $2": ["float8", "int4"],
            "DELETE FROM ap_inf WHERE name = $1": ["text"],
            "SELECT id FROM ap_inf ORDER BY id LIMIT $1": ["int8"],
        }
        for sql, want in cases.items():
            assert [t.name for t in (await c.prepare(sql)).get_parameters()] == want, sql
        assert await c.fetch("SELECT name FROM ap_inf WHERE score > $1 AND big < $2", 1.0, 10**13) == [("two",)]
        assert [r[0] for r in await c.fetch("SELECT id FROM ap_inf ORDER BY id LIMIT $1", 1)] == [1]
        assert await c.execute("UPDATE ap_inf SET score = $1 WHERE id = $2", 9.5, 1) == "UPDATE 1"
        assert await c.fetchval("SELECT score FROM ap_inf WHERE id = $1", 1) == 9.5
        assert await c.execute("DELETE FROM ap_inf WHERE name = $1", "two") == "DELETE 1"
        with pytest.raises(asyncpg.DataError):  # client-side: $1 was inferred as int4
            await sel.fetch("abc")

    run(server, body)


def test_prepared_statement_reuse(server: WeirServer) -> None:
    async def body(c: asyncpg.Connection) -> None:
        await c.execute("CREATE TABLE ap_reuse (k int, v text)")
        ins = await c.prepare("INSERT INTO ap_reuse VALUES ($1, $2)")
        for k in range(5):
            assert await ins.fetch(k, f"v{k}") == []
        sel = await c.prepare("SELECT v FROM ap_reuse WHERE k >= $1 ORDER BY k")
        for k in range(5):
            assert [r["v"] for r in await sel.fetch(k)] == [f"v{j}" for j in range(k, 5)]
        assert await sel.fetchval(4) == "v4"
        # the same text through the connection's statement cache
        for _ in range(3):
            assert await c.fetchval("SELECT count(*) FROM ap_reuse WHERE k < $1", 3) == 3

    run(server, body)


def test_cursor_prefetch_in_transaction(server: WeirServer) -> None:
    """asyncpg cursors are portals read with Execute(max_rows): PortalSuspended after
    each chunk, CommandComplete at the end, and the portal survives Sync in a transaction."""

    async def body(c: asyncpg.Connection) -> None:
        await c.execute("CREATE TABLE ap_cur (id int, name text)")
        await c.executemany("INSERT INTO ap_cur VALUES ($1, $2)", [(i, f"n{i}") for i in range(1, 21)])
        async with c.transaction():
            seen = [(r["id"], r["name"]) async for r in c.cursor(
                "SELECT id, name FROM ap_cur ORDER BY id", prefetch=3)]
            assert seen == [(i, f"n{i}") for i in range(1, 21)]
        async with c.transaction():
            cur = await c.cursor("SELECT id FROM ap_cur WHERE id > $1 ORDER BY id", 5)
            assert [r[0] for r in await cur.fetch(4)] == [6, 7, 8, 9]
            assert (await cur.fetchrow())[0] == 10
            assert [r[0] for r in await cur.fetch(3)] == [11, 12, 13]
            assert [r[0] for r in await cur.fetch(100)] == list(range(14, 21))
            assert await cur.fetch(5) == []
            assert await cur.fetchrow() is None
        assert c.is_in_transaction() is False
        assert await c.fetchval("SELECT count(*) FROM ap_cur") == 20

    run(server, body)


def test_errors_have_sqlstates(server: WeirServer) -> None:
    async def body(c: asyncpg.Connection) -> None:
        await c.execute("CREATE TABLE ap_err (id int NOT NULL, name text)")
        cases = [
            ("SELECT * FROM ap_nope", asyncpg.UndefinedTableError, "42P01"),
            ("SELECT nope FROM ap_err", asyncpg.UndefinedColumnError, "42703"),
            ("SELEC 1", asyncpg.PostgresSyntaxError, "42601"),
            ("SELECT 1/0", asyncpg.DivisionByZeroError, "22012"),
            ("INSERT INTO ap_err VALUES ('abc', 'x')", asyncpg.InvalidTextRepresentationError, "22P02"),
            ("INSERT INTO ap_err VALUES (NULL, 'x')", asyncpg.NotNullViolationError, "23502"),
            ("CREATE TABLE ap_err (x int)", asyncpg.DuplicateTableError, "42P07"),
        ]
        for sql, cls, state in cases:
            # both paths: fetch() prepares (Parse/Describe/Flush), execute() is a simple query
            for call in (c.fetch, c.execute):
                with pytest.raises(cls) as e:
                    await call(sql)
                assert e.value.sqlstate == state, sql
        # errors at execution of a prepared statement
        st = await c.prepare("SELECT 10 / id FROM ap_err WHERE id = $1")
        await c.execute("INSERT INTO ap_err VALUES (0, 'zero')")
        with pytest.raises(asyncpg.DivisionByZeroError):
            await st.fetch(0)
        assert await st.fetch(5) == []
        # a failed transaction block: 25P02 until ROLLBACK
        tr = c.transaction()
        await tr.start()
        with pytest.raises(asyncpg.DivisionByZeroError):
            await c.fetchval("SELECT 1/0")
        with pytest.raises(asyncpg.InFailedSQLTransactionError) as e:
            await c.fetchval("SELECT 1")
        assert e.value.sqlstate == "25P02"
        await tr.rollback()
        assert await c.fetchval("SELECT count(*) FROM ap_err") == 1

    run(server, body)


def test_executemany_and_transaction_commit(server: WeirServer) -> None:
    async def body(c: asyncpg.Connection) -> None:
        await c.execute("CREATE TABLE ap_many (k int NOT NULL, v double precision, t text)")
        rows = [(i, i / 4, f"row {i}") for i in range(50)]
        await c.executemany("INSERT INTO ap_many VALUES ($1, $2, $3)", rows)
        assert tuple(await c.fetchrow("SELECT count(*), sum(k), sum(v) FROM ap_many")) == (
            50, sum(range(50)), sum(r[1] for r in rows))
        with pytest.raises(asyncpg.NotNullViolationError):
            await c.executemany("INSERT INTO ap_many VALUES ($1, $2, $3)", [(100, 1.0, "a"), (None, 1.0, "b")])
        async with c.transaction():
            await c.executemany("INSERT INTO ap_many VALUES ($1, $2, $3)", [(200, 0.0, "a"), (201, 0.0, "b")])
        assert await c.fetchval("SELECT count(*) FROM ap_many WHERE k >= 200") == 2
        with pytest.raises(RuntimeError):
            async with c.transaction():
                await c.execute("INSERT INTO ap_many VALUES ($1, $2, $3)", 300, 0.0, "rolled back")
                raise RuntimeError("roll back")
        assert await c.fetchval("SELECT count(*) FROM ap_many WHERE k = 300") == 0

    run(server, body)


def test_executemany_is_atomic(server: WeirServer) -> None:
    """asyncpg pipelines executemany() as Bind/Execute pairs before one Sync: in PostgreSQL
    they are one implicit transaction, so an error rolls back the rows before it."""

    async def body(c: asyncpg.Connection) -> None:
        await c.execute("CREATE TABLE ap_atomic (k int NOT NULL)")
        with pytest.raises(asyncpg.NotNullViolationError):
            await c.executemany("INSERT INTO ap_atomic VALUES ($1)", [(1,), (None,)])
        assert await c.fetchval("SELECT count(*) FROM ap_atomic") == 0

    run(server, body)


def test_two_cursors_in_one_slow_transaction(server: WeirServer) -> None:
    async def body(c: asyncpg.Connection) -> None:
        await c.execute("CREATE TABLE ap_slow (k int)")
        await c.execute("INSERT INTO ap_slow VALUES (1), (2), (3)")
        async with c.transaction():
            first = [r[0] async for r in c.cursor("SELECT k FROM ap_slow ORDER BY k", prefetch=1)]
            await asyncio.sleep(2.5)
            second = [r[0] async for r in c.cursor("SELECT k FROM ap_slow ORDER BY k", prefetch=2)]
        assert first == second == [1, 2, 3]

    run(server, body)
