"""Multidimensional arrays computed on Spark (a nested array per dimension), compared with
PostgreSQL 15: as a SELECT (text and binary wire formats), as a materialized view's
contents and through an index on a view. ARRAY[...] of arrays, '{{...}}' literals,
subscripts, the dimension functions, unnest, =, ::text; PostgreSQL's errors for
sub-arrays of different lengths; 0A000 for what weir does not compute as PostgreSQL."""

from __future__ import annotations

import time

import psycopg
import pytest

from tests.integration.both_servers import (
    errors,
    indexed_views_as_postgres,
    materialized_views_as_postgres,
    normalized,
    paired,
    select_as_postgres,
)
from tests.integration.server import WeirServer
from tests.pg_server import pg_server  # noqa: F401

SETUP = [
    "CREATE TABLE ma (id int, a int[], b int[], x int, y int, s text[], u text[])",
    "INSERT INTO ma VALUES (1, '{1,2}', '{3,4}', 1, 2, '{a,\"b c\"}', '{d,NULL}'), "
    "(2, '{5,NULL}', '{7,8}', 3, NULL, '{\"\",NULL}', '{x,\"{y}\"}'), (3, NULL, NULL, NULL, 2, NULL, NULL), "
    "(4, '{}', '{}', 2, 1, '{}', NULL)",
    "CREATE TABLE mm (id int, a int[], b int[])",
    "INSERT INTO mm VALUES (1, '{1,2}', '{3}'), (2, '{1}', NULL)",
]

# each is compared as a SELECT, a materialized view and an indexed view
QUERIES = [
    "SELECT ARRAY[[1,2],[3,4]] AS m",
    "SELECT ARRAY[ARRAY[1,2], ARRAY[3,4]] AS m",
    "SELECT '{{1,2},{3,4}}'::int[] AS m, '{{a,\"b c\"},{NULL,\"\"}}'::text[] AS t",
    "SELECT ARRAY[['a','b c'],['d',NULL]] AS m",
    "SELECT ARRAY[[1,2],[3,4]]::text AS t, ARRAY[['a','b c'],['d',NULL]]::text AS u",
    "SELECT ARRAY[[[1,2],[3,4]],[[5,6],[7,8]]] AS m, array_dims(ARRAY[[[1,2],[3,4]],[[5,6],[7,8]]]) AS d",
    "SELECT ARRAY[[1.5, 2.5],[NULL, 3]] AS m, ARRAY[[1.5, 2.5],[NULL, 3]]::text AS t, ARRAY[[1, 2],[NULL, 3.5]] AS n",
    "SELECT ('{{1,2},{3,4}}'::int[])[2][1] AS e, ('{{1,2},{3,4}}'::int[])[1] AS f, "
    "('{{1,2},{3,4}}'::int[])[3][1] AS g, ('{{1,2},{3,4}}'::int[])[0][1] AS h",
    "SELECT id, ARRAY[a, b] AS m FROM ma",
    "SELECT id, ARRAY[[x, y],[y, x]] AS m FROM ma",
    "SELECT id, ARRAY[s, u] AS m FROM ma WHERE id <> 4",
    "SELECT id, ARRAY[a, b]::text AS m, ARRAY[s, u]::text AS t FROM ma WHERE id <> 4",
    "SELECT id, ARRAY[ARRAY[a, b], ARRAY[b, a]] AS m FROM ma",
    "SELECT id, (ARRAY[a, b])[1][2] AS e, (ARRAY[a, b])[2][1] AS f, (ARRAY[a, b])[1] AS g, "
    "(ARRAY[a, b])[3][1] AS h, (ARRAY[a, b])[x][y] AS i, a[1][1] AS j FROM ma",
    "SELECT id, a[x] AS e, (ARRAY[a, b])[x][2] AS f, a[x + 0] AS g FROM ma",  # a view's text read back as written
    "SELECT id, array_ndims(ARRAY[a, b]) AS n, array_dims(ARRAY[a, b]) AS d, array_length(ARRAY[a, b], 1) AS l1, "
    "array_length(ARRAY[a, b], 2) AS l2, array_length(ARRAY[a, b], 3) AS l3, array_length(ARRAY[a, b], x) AS lx FROM ma",
    "SELECT id, array_lower(ARRAY[a, b], 2) AS lo, array_upper(ARRAY[a, b], 2) AS hi, "
    "array_upper(ARRAY[a, b], 0) AS z, cardinality(ARRAY[a, b]) AS c FROM ma",
    "SELECT id, array_ndims(a) AS n, array_dims(a) AS d, array_lower(a, 1) AS lo, array_upper(a, 1) AS hi, "
    "cardinality(a) AS c, array_length(a, 1) AS l FROM ma",
    "SELECT id, unnest(ARRAY[a, b]) AS e FROM ma",
    "SELECT id, e FROM ma, unnest(ARRAY[[x, y], [y, x]]) AS e",
    "SELECT id, ARRAY[a, b] = ARRAY[a, b] AS same, ARRAY[a, b] = ARRAY[b, a] AS swapped, "
    "ARRAY[a, b] <> '{{1,2},{3,4}}'::int[] AS ne, ARRAY[a, b] = a AS flat FROM ma",
    "SELECT id, array_to_string(ARRAY[s, u], ',', '*') AS j FROM ma WHERE id <> 4",
    "SELECT ARRAY[a, b] AS m, count(*) AS n FROM ma GROUP BY 1",
    "SELECT DISTINCT ARRAY[[x, x], [x, x]] AS m FROM ma",
    "SELECT id, CASE WHEN x > 1 THEN ARRAY[a, b] ELSE ARRAY[b, a] END AS m, coalesce(ARRAY[a, b], ARRAY[[x]]) AS c "
    "FROM ma",
]

# each fails with PostgreSQL's SQLSTATE and message
ERRORS_AS_POSTGRES = [
    "SELECT ARRAY[a, b] FROM mm",
    "SELECT ARRAY[a, b] FROM mm WHERE id = 2",
    "SELECT ARRAY[[1,2],[3]]",
    "SELECT '{{1,2},{3}}'::int[]",
]

# PostgreSQL answers; weir refuses them by name (0A000) rather than answer otherwise
REFUSED = [
    "SELECT array_cat(ARRAY[a, b], ARRAY[a, b]) FROM ma WHERE id = 1",
    "SELECT ARRAY[a, b] || ARRAY[[x, x]] FROM ma WHERE id = 1",
    "SELECT ARRAY[a, b] @> ARRAY[1] FROM ma",
    "SELECT x = ANY(ARRAY[a, b]) FROM ma",
    "SELECT ARRAY[a, b] < ARRAY[b, a] FROM ma",
    "SELECT array_agg(a) FROM ma WHERE id < 3",
    "SELECT to_jsonb(ARRAY[a, b]) FROM ma",
    "SELECT array_remove(ARRAY[a, b], 1) FROM ma WHERE id = 4",
    "SELECT ARRAY[a, b] AS m FROM ma ORDER BY m",
    "SELECT ARRAY[a, b]::bigint[] FROM ma",
]


@pytest.fixture(scope="module")
def both(server: WeirServer, pg_server):  # noqa: ANN201, F811
    yield from paired(server, pg_server, "multidim_arrays", SETUP)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("sql", QUERIES)
def test_select_same_as_postgres(both, sql: str, binary: bool) -> None:  # noqa: ANN001
    select_as_postgres(both, sql, binary)


@pytest.mark.parametrize("sql", ERRORS_AS_POSTGRES)
def test_errors_as_postgres(both, sql: str) -> None:  # noqa: ANN001
    got = errors(both, sql)
    assert got[0] == got[1]


@pytest.mark.parametrize("sql", REFUSED)
def test_refused_by_name(both, sql: str) -> None:  # noqa: ANN001
    w, p = both
    p.execute(sql)
    with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
        w.execute(sql)
    assert "multidimensional array" in str(e.value) or "array_agg of arrays" in str(e.value)


def test_table_columns_hold_one_dimension(both) -> None:  # noqa: ANN001
    """int[][] is PostgreSQL's int[]; a table's int[] column is one-dimensional in weir,
    so a two-dimensional value is refused (0A000), never stored otherwise."""
    w, p = both
    for conn in both:
        conn.execute("CREATE TABLE IF NOT EXISTS mt (id int, a int[][])")
    try:
        for conn in both:
            conn.execute("INSERT INTO mt VALUES (1, '{1,2}')")
        sql = "SELECT id, a, pg_typeof(a)::text AS t FROM mt"
        assert w.execute(sql).fetchall() == p.execute(sql).fetchall()
        for insert in ("INSERT INTO mt VALUES (2, '{{1,2},{3,4}}')", "INSERT INTO mt SELECT 3, ARRAY[[1,2],[3,4]]",
                    "INSERT INTO mt SELECT id, ARRAY[a, b] FROM ma"):
            with pytest.raises(psycopg.errors.FeatureNotSupported):
                w.execute(insert)
        assert w.execute(sql).fetchall() == p.execute(sql).fetchall()
    finally:
        for conn in both:
            conn.execute("DROP TABLE IF EXISTS mt")


def test_materialized_views_as_postgres(both) -> None:  # noqa: ANN001
    materialized_views_as_postgres(both, "md_mv", QUERIES, change=(
        "INSERT INTO ma VALUES (5, '{10,11}', '{12,13}', 7, 8, '{p,q}', '{r,s}')", "DELETE FROM ma WHERE id = 5"))


def test_indexed_views_as_postgres(both) -> None:  # noqa: ANN001
    indexed_views_as_postgres(both, "md_v", QUERIES)


def test_materialized_view_read_by_a_query(both) -> None:  # noqa: ANN001
    """A materialized view's 2-D column read back by another query keeps its dimensions."""
    w, p = both
    w.execute("CREATE MATERIALIZED VIEW md_read AS SELECT id, ARRAY[a, b] AS m FROM ma")
    try:
        sql = "SELECT id, m[2][1] AS e, array_dims(m) AS d, m::text AS t FROM {}"
        inner = "(SELECT id, ARRAY[a, b] AS m FROM ma) s"
        assert normalized(w.execute(sql.format("md_read")).fetchall()) == normalized(p.execute(sql.format(inner)).fetchall())
    finally:
        w.execute("DROP MATERIALIZED VIEW IF EXISTS md_read")


@pytest.mark.parametrize("binary", [False, True])
def test_parameters_refused(both, binary: bool) -> None:  # noqa: ANN001
    """A two-dimensional array parameter (psycopg sends a list of lists): the query was
    translated for its slot's type, so weir refuses it (0A000) where PostgreSQL answers."""
    w, p = both
    sql = "SELECT %s::int[] AS m"
    value = [[1, 2], [3, None]]
    with w.cursor(binary=binary) as cw, p.cursor(binary=binary) as cp:
        assert cp.execute(sql, [value]).fetchall() == [(value,)]
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            cw.execute(sql, [value])


def test_index_lookup_and_subscribe(both, server: WeirServer) -> None:  # noqa: ANN001
    """An index keyed by a 2-D column answers `=` lookups as PostgreSQL (same dimensions and
    elements); SUBSCRIBE sends 2-D values in PostgreSQL's text."""
    w, p = both
    w.execute("CREATE VIEW md_idx AS SELECT id, ARRAY[a, b] AS m FROM ma")
    w.execute("CREATE INDEX md_idx_m ON md_idx (m)")
    try:
        inner = "(SELECT id, ARRAY[a, b] AS m FROM ma) s"
        wheres = ("m = '{{1,2},{3,4}}'::int[]", "m = ARRAY[[5,NULL],[7,8]]", "m = '{}'::int[]", "m <> ARRAY[[1,2],[3,4]]")
        for hydrated in (False, True):  # then read from the index's arrangement
            if hydrated:
                time.sleep(3)
            for where in wheres:
                sql = "SELECT id, m FROM {} WHERE " + where
                want = normalized(p.execute(sql.replace("{}", inner, 1)).fetchall())
                assert normalized(w.execute(sql.replace("{}", "md_idx", 1)).fetchall()) == want, where
        with server.connect() as c:
            c.execute("BEGIN")
            c.execute("DECLARE cur CURSOR FOR SUBSCRIBE (SELECT id, ARRAY[a, b]::text AS t FROM ma WHERE id < 3)")
            rows = c.execute("FETCH ALL cur WITH (timeout = '5s')").fetchall()
            c.execute("COMMIT")
        assert sorted((r[2], r[3]) for r in rows) == [(1, "{{1,2},{3,4}}"), (2, "{{5,NULL},{7,8}}")]
    finally:
        w.execute("DROP VIEW IF EXISTS md_idx CASCADE")
