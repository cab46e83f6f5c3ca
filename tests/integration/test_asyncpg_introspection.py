"""asyncpg with weir's own types, no casts and no client-side codecs (issue 14): for a
result type it has no codec for (mz_timestamp), asyncpg runs its type-introspection query
(asyncpg.introspection, WITH RECURSIVE over pg_type / pg_range / pg_attribute with
correlated subqueries and array_agg(... ORDER BY)), which weir answers in process, with
PostgreSQL 15's rows for the types the two share."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import psycopg
import pytest
from asyncpg.introspection import INTRO_LOOKUP_TYPES_13

from tests.integration.server import WeirServer
from tests.integration.test_asyncpg import run
from tests.pg_server import pg_server  # noqa: F401  (session-scoped fixture)

# PostgreSQL's own types weir has too: base, catalog, array and pseudo types
SHARED_OIDS = [16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 30, 114, 194, 700, 701, 705, 1033, 1042, 1043,
               1082, 1114, 1184, 1186, 1700, 2950, 3802, 1000, 1005, 1007, 1009, 1015, 1016, 1028, 1115, 1182,
               1185, 1187, 1231, 2951, 3807, 2206, 2276, 2277, 2283]


def test_mz_timestamp_without_casts(server: WeirServer) -> None:
    """asyncpg introspects mz_timestamp (an oid above its builtins) and decodes it as text,
    as it does any type it has no codec for."""

    async def body(c: asyncpg.Connection) -> None:
        now = await c.fetchval("SELECT mz_now()")
        assert isinstance(now, str) and now.isdigit()
        await c.execute("CREATE TABLE api_ts (id int, t mz_timestamp, s text)")
        await c.execute("INSERT INTO api_ts VALUES (1, 5, 'a'), (2, NULL, 'b')")
        rows = await c.fetch("SELECT * FROM api_ts ORDER BY id")
        assert [tuple(r) for r in rows] == [(1, "5", "a"), (2, None, "b")]
        st = await c.prepare("SELECT t, id FROM api_ts WHERE id = $1")
        assert [(a.name, a.type.name, a.type.schema) for a in st.get_attributes()] == [
            ("t", "mz_timestamp", "mz_catalog"), ("id", "int4", "pg_catalog")]
        assert tuple(await st.fetchrow(1)) == ("5", 1)
        assert await c.fetchval("SELECT t FROM api_ts WHERE id = 1") == "5"  # the codec cached

    async def again(c: asyncpg.Connection) -> None:  # a new connection introspects again
        assert [tuple(r) for r in await c.fetch("SELECT t FROM api_ts ORDER BY id")] == [("5",), (None,)]

    run(server, body)
    run(server, again)


def test_introspection_rows_are_postgres(server: WeirServer, pg_server) -> None:  # noqa: ANN001, F811
    """asyncpg's introspection query, run by asyncpg itself on both servers: the same rows
    (ORDER BY depth DESC leaves ties unordered: compared sorted)."""

    async def rows(dsn: dict[str, Any], oids: list[int]) -> list[tuple[Any, ...]]:
        c = await asyncpg.connect(**dsn, timeout=30)
        try:
            return sorted((tuple(r) for r in await c.fetch(INTRO_LOOKUP_TYPES_13, oids)), key=repr)
        finally:
            await c.close()

    pg_dsn = psycopg.conninfo.conninfo_to_dict(pg_server.dsn())
    pg = {"host": pg_dsn.get("host"), "port": int(pg_dsn["port"]), "user": pg_dsn.get("user"),
          "database": pg_dsn.get("dbname")}
    weir = {"host": "127.0.0.1", "port": server.sql_port, "user": "materialize", "database": "materialize"}
    want = asyncio.run(rows(pg, SHARED_OIDS))
    got = asyncio.run(rows(weir, SHARED_OIDS))
    assert len(want) > len(SHARED_OIDS)  # arrays bring their elements, at depth 1
    assert got == want
    # weir's own: mz_timestamp[] brings mz_timestamp, in mz_catalog
    mine = asyncio.run(rows(weir, [16553]))
    assert [(r[0], r[1], r[2], r[3], r[5], r[10], r[12]) for r in mine] == [
        (16552, "mz_catalog", "mz_timestamp", b"b", 0, 1, "-"),
        (16553, "mz_catalog", "_mz_timestamp", b"b", 16552, 0, "mz_timestamp")]


def test_recursive_queries_over_user_data(server: WeirServer) -> None:
    """WITH RECURSIVE over a table runs on Spark, past Spark's default 100 levels; what
    Spark cannot run (an outer reference inside a recursive CTE) is refused, 0A000."""
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE api_edges (a int, b int)")
        c.execute("INSERT INTO api_edges VALUES (1, 2), (2, 3), (3, 4)")
        assert c.execute("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT b FROM api_edges, r "
                         "WHERE api_edges.a = r.n) SELECT n FROM r ORDER BY n").fetchall() == [(1,), (2,), (3,), (4,)]
        assert c.execute("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 150) "
                         "SELECT count(*), max(n) FROM r").fetchone() == (150, 150)
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            c.execute("SELECT e.a, (WITH RECURSIVE r(n) AS (SELECT e.a UNION ALL SELECT b FROM api_edges, r "
                      "WHERE api_edges.a = r.n) SELECT max(n) FROM r) FROM api_edges e")
