"""jsonb operators and functions against a real `weir serve` and the real PostgreSQL 15:
the same text of every value, the same column names and types, the same errors (SQLSTATE
and message), or a clean refusal (0A000) - never something else."""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest

from tests.integration.both_servers import errors, paired
from tests.integration.server import WeirServer
from tests.pg_server import pg_server  # noqa: F401

SETUP = [
    "CREATE TABLE jb_t (id int, j jsonb, t text)",
    "INSERT INTO jb_t VALUES "
    "(1, '{\"a\": {\"b\": [1, 2.0, null]}, \"n\": null, \"s\": \"x\", \"big\": 12345678901234567890}', 'a'), "
    "(2, '[1, \"a\", [2], {\"c\": 1.0}, null]', 'b'), (3, '\"str\"', NULL), (4, 'null', 'n'), (5, NULL, NULL), "
    "(6, '12345678901234567890.0', 's'), (7, '{\"b\": 1, \"a\": 2, \"aa\": {\"x\": null}}', 'aa'), (8, '[]', NULL), "
    "(9, '{}', 'x')",
    "CREATE TABLE jb_v (id int, n numeric(10,2), f float8, r real, ts timestamp, tz timestamptz, d date, b bool, "
    "c char(4), by bytea, u uuid, arr text[], big bigint)",
    "INSERT INTO jb_v VALUES (1, 2.50, 1e20, 1.5, '2024-01-02 03:04:05.5', '2024-01-02 03:04:05+00', '2024-01-02', "
    "true, 'ab', '\\x0102', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', ARRAY['x', NULL], 9223372036854775807), "
    "(2, NULL, 'NaN', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), "
    "(3, -0.5, 1.5e-7, -2, '2024-06-30 23:59:59', '2024-06-30 12:00:00.123456+00', '1999-12-31', false, 'abcd', "
    "'\\x', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', ARRAY[]::text[], -1)",
]

SAME = [
    # set-returning functions of one select list step in lockstep (weir.sql.set_returning)
    "SELECT jsonb_array_elements('[1]'), jsonb_array_elements('[2]')",
    "SELECT jsonb_array_elements('[1, 2]') AS x, jsonb_array_elements_text('[\"a\"]') AS y",
    # -> ->> #> #>>: text keys, integer indexes (negative from the end), JSON null vs SQL NULL
    "SELECT id, j -> 'a', j ->> 's', j -> 'n', j ->> 'n', j -> 1, j ->> -1, j -> -9, j #> '{a,b,1}', "
    "j #>> '{a,b}', j #> '{a,b,-1}', j #>> '{a,b,-1}', j #> '{}', j #>> '{}', j -> 'big' FROM jb_t",
    "SELECT id, j -> t, j ->> t, j -> id, j ->> (id - 10), j #> ARRAY[t], j #>> ARRAY[t, 'x'] FROM jb_t",
    "SELECT '5'::jsonb -> 0, '\"x\"'::jsonb ->> -1, '5'::jsonb #> '{0}', '[1,2]'::jsonb #> '{ 1}', "
    "'{\"a\": [1, {\"b\": 2}]}'::jsonb -> 'a' -> 1 ->> 'b', '{\"a\":1}'::jsonb ->> 'a' || 'x'",
    # containment and existence
    "SELECT id, j @> '{\"n\": null}', j @> '1', j <@ '{\"a\": 2, \"b\": 1, \"aa\": {\"x\": null}, \"c\": 0}', "
    "j ? 'a', j ? 'str', j ?| ARRAY['a', 's'], j ?& ARRAY['a', 's'], j ?| '{zz,b}', j ?& '{}' FROM jb_t",
    "SELECT '[1,2]'::jsonb @> '1', '1'::jsonb @> '[1]', '{\"a\":[1,2]}'::jsonb @> '{\"a\":1}', "
    "'[1,[2,3]]'::jsonb @> '[[3]]', '[[1,2]]'::jsonb @> '[1]', '1.0'::jsonb @> '1', '[1]'::jsonb @> '[1,1]', "
    "'[]'::jsonb @> '{}', '\"a\"'::jsonb ? 'a', '{\"a\":1}'::jsonb ?| ARRAY['b', NULL]",
    # || and -
    "SELECT id, j || '{\"z\": 1}', j || '[9]', j || j, j || to_jsonb(t), j - 'a', j - 'aa', j - ARRAY['a', 'b'] "
    "FROM jb_t WHERE jsonb_typeof(j) IN ('object', 'array') AND id <> 7",
    "SELECT id, j - 0, j - -1, j - 9, j - id FROM jb_t WHERE jsonb_typeof(j) = 'array'",
    "SELECT '1'::jsonb || '2'::jsonb, '{\"a\":1}'::jsonb || '2', '2'::jsonb || '{\"a\":1}', "
    "'\"s\"'::jsonb || '[1]', '{\"a\":1,\"c\":0}'::jsonb || '{\"a\":2,\"b\":3}', '[1,2,3]'::jsonb - 5, "
    "'[\"a\",1,\"b\",\"a\"]'::jsonb - 'a', '{\"a\":1,\"b\":2}'::jsonb - '{a}'::text[]",
    # equality is jsonb's (numbers by value), not the texts'
    "SELECT '1.0'::jsonb = '1'::jsonb, '{\"a\":[1,2]}'::jsonb = '{\"a\":[1,2.00]}'::jsonb, "
    "'1'::jsonb = '[1]'::jsonb, 'true'::jsonb <> '1'::jsonb",
    "SELECT id FROM jb_t WHERE j -> 3 = '{\"c\": 1}'",
    "SELECT id FROM jb_t WHERE j <> 'null'::jsonb",
    # functions of one value
    "SELECT id, jsonb_typeof(j), jsonb_strip_nulls(j), jsonb_pretty(j) FROM jb_t",
    "SELECT id, CASE WHEN jsonb_typeof(j) = 'array' THEN jsonb_array_length(j) END FROM jb_t",
    "SELECT jsonb_pretty('{\"a\": [1, {\"b\": \"x\\ny\"}], \"é\": {}}'), jsonb_typeof('[1]'), "
    "jsonb_array_length('[1,2]'), jsonb_strip_nulls('{\"a\": null, \"b\": {\"c\": null, \"d\": 1}}')",
    "SELECT '1e2'::jsonb, '{\"a\":1e-3}'::jsonb, '[-0, 0.00]'::jsonb, '{\"b\":1,\"a\":2,\"b\":3}'::jsonb",
    "SELECT j::text::jsonb, j::text, CAST(j::text AS jsonb) -> 'a' FROM jb_t",
    "SELECT ('{\"k\": ' || id || '}')::jsonb -> 'k' FROM jb_t",
    # SQL values as jsonb
    "SELECT id, to_jsonb(n), to_jsonb(f), to_jsonb(r), to_jsonb(ts), to_jsonb(tz), to_jsonb(d), to_jsonb(b), "
    "to_jsonb(c), to_jsonb(by), to_jsonb(u), to_jsonb(arr), to_jsonb(big) FROM jb_v",
    "SELECT id, jsonb_build_object(n, f, 'r', r, 'ts', ts, 'tz', tz, 'd', d, 'b', b, 'c', c) FROM jb_v WHERE id <> 2",
    "SELECT jsonb_build_array(n, f, r, ts, tz, d, b, c, by, u, arr, big) FROM jb_v",
    "SELECT id, jsonb_build_object('id', id, 't', t, 'j', j), jsonb_build_array(id, t, j, NULL), to_jsonb(t), "
    "to_jsonb(j) FROM jb_t",
    "SELECT to_jsonb(1.50), to_jsonb(1e3), to_jsonb('abc'::text), to_jsonb(NULL::int), to_jsonb(true), "
    "jsonb_build_object(), jsonb_build_array(), jsonb_build_object('a', 1, 'a', 2), "
    "jsonb_build_object('a', 1.0, 'b', 2.50, 1.0, NULL)",
    # aggregates: NULL inputs are null elements, no rows is NULL, ORDER BY inside
    "SELECT jsonb_agg(j ORDER BY id), jsonb_agg(t ORDER BY id DESC), jsonb_object_agg(id, j) FROM jb_t",
    "SELECT jsonb_agg(ts ORDER BY id), jsonb_agg(n ORDER BY n NULLS FIRST), jsonb_object_agg(id, u), jsonb_object_agg(d, c) FROM jb_v WHERE id <> 2",
    "SELECT jsonb_agg(id), jsonb_object_agg(t, id) FROM jb_t WHERE false",
    "SELECT t IS NULL, jsonb_agg(id ORDER BY id) FROM jb_t GROUP BY t IS NULL",
    # set-returning functions in FROM (plain and LATERAL joins) and alone in a select list
    "SELECT id, e.key, e.value FROM jb_t, jsonb_each(jb_t.j) AS e WHERE jsonb_typeof(j) = 'object'",
    "SELECT id, k, v FROM jb_t CROSS JOIN LATERAL jsonb_each_text(j) AS e(k, v) WHERE jsonb_typeof(j) = 'object'",
    "SELECT * FROM jb_t, jsonb_each(j) WHERE jsonb_typeof(j) = 'object' AND key = 's'",
    "SELECT id, jsonb_array_elements(j) FROM jb_t WHERE jsonb_typeof(j) = 'array'",
    "SELECT id, jsonb_array_elements_text(j) AS e FROM jb_t WHERE jsonb_typeof(j) = 'array'",
    "SELECT id, jsonb_object_keys(j) FROM jb_t WHERE jsonb_typeof(j) = 'object'",
    "SELECT * FROM jsonb_array_elements_text('[1, \"x\", null, {\"a\": 2}]')",
    "SELECT * FROM jsonb_array_elements('[1, \"x\", null, {\"a\": 2}]') AS x",
    "SELECT * FROM jsonb_object_keys('{\"b\": 1, \"a\": 2, \"aa\": 3}') k",
    "SELECT * FROM jsonb_each('{\"b\": 1, \"a\": [2]}') AS e(k)",
    "SELECT e.value ->> 'c', jsonb_typeof(e.value) FROM jb_t, jsonb_array_elements(jb_t.j) AS e WHERE jb_t.id = 2",
    "SELECT id, count(*) FROM jb_t, jsonb_array_elements(j) e WHERE jsonb_typeof(j) = 'array' GROUP BY id",
    "SELECT id, jsonb_array_elements_text(to_jsonb(arr)) FROM jb_v",
    "SELECT id, (SELECT count(*) FROM jsonb_array_elements(jb_t.j)) FROM jb_t WHERE jsonb_typeof(j) = 'array'",
    # jsonb columns computed in CTEs and subqueries keep their type through a star
    "WITH x AS (SELECT id, j -> 'a' AS a FROM jb_t) SELECT * FROM x",
    "SELECT * FROM (SELECT j -> 'a' AS a, id FROM jb_t) s WHERE id = 1",
    "SELECT coalesce(j, '{}'), coalesce(j -> 'a', j) FROM jb_t",
    # -> inside a call's arguments is jsonb's (sqlglot read `f(j -> 'a')` as a lambda)
    "SELECT id, jsonb_typeof(j -> 'a'), coalesce(j -> 'a', j -> 1), jsonb_strip_nulls(j -> 'aa') FROM jb_t",
    "SELECT id, jsonb_array_elements(j -> 'a' -> 'b') FROM jb_t WHERE id = 1",
    "SELECT j IS NULL, jsonb_build_object('k', jsonb_agg(id ORDER BY id)) FROM jb_t GROUP BY j IS NULL",
]

# PostgreSQL's runtime errors, with its SQLSTATE and message
ERRORS = [
    "SELECT jsonb_array_length(j) FROM jb_t",
    "SELECT * FROM jb_t, jsonb_each(j) e",
    "SELECT * FROM jb_t, jsonb_each_text(j) e WHERE id = 2",
    "SELECT id, jsonb_array_elements(j) FROM jb_t WHERE id IN (1, 2)",
    "SELECT jsonb_array_elements_text(j) FROM jb_t WHERE id = 3",
    "SELECT jsonb_object_keys(j) FROM jb_t WHERE id = 2",
    "SELECT jsonb_object_keys(j) FROM jb_t WHERE id = 3",
    "SELECT j - 'a' FROM jb_t WHERE id = 3",
    "SELECT j - 0 FROM jb_t WHERE id = 1",
    "SELECT j - ARRAY['a'] FROM jb_t WHERE id = 6",
    "SELECT jsonb_build_object(t, 1) FROM jb_t",
    "SELECT jsonb_build_object(arr, 1) FROM jb_v",
    "SELECT jsonb_build_object('a')",
    "SELECT jsonb_object_agg(t, id) FROM jb_t",
    "SELECT t::jsonb FROM jb_t",
    "SELECT 'x'::jsonb",
    "SELECT '{\"a\": }'::jsonb -> 'a'",
    "SELECT to_jsonb('x')",
]

REFUSED = [
    "SELECT id FROM jb_t ORDER BY j",  # jsonb's order is not its text's
    "SELECT id FROM jb_t WHERE j < '1'",
    "SELECT j FROM jb_t WHERE j IN ('1', '2')",
    "SELECT jsonb_each(j) FROM jb_t",  # records in a select list
    "SELECT jsonb_array_elements(j) -> 'c' FROM jb_t",  # nested in an expression
    "SELECT id FROM jb_t LEFT JOIN LATERAL jsonb_array_elements(j) e ON true",
    "SELECT jsonb_agg(DISTINCT id) FROM jb_t",
    "SELECT jsonb_agg(id) OVER () FROM jb_t",
    "SELECT jsonb_agg(id) FILTER (WHERE id > 1) FROM jb_t",
    "SELECT '{\"a\":1}'::json -> 'a'",  # json keeps its text: not jsonb's answer
    "SELECT j::int FROM jb_t",
    "SELECT to_jsonb(INTERVAL '1 day')",
    "SELECT jsonb_object_agg(coalesce(c, 'z'), d) FROM jb_v",  # char(n) padding of an expression
]


@pytest.fixture(scope="module")
def both(server: WeirServer, pg_server):  # noqa: ANN201, F811
    yield from paired(server, pg_server, "jsonb", SETUP, pg_first=("SET TIME ZONE 'UTC'",))


def _answer(conn: psycopg.Connection, sql: str) -> tuple[list[tuple[str, int]], list[tuple[str | None, ...]]]:
    """Column names and type oids, and every value's text as the server sent it."""
    cur = conn.execute(sql)
    desc = [(d.name, d.type_code) for d in cur.description or []]
    res = cur.pgresult
    assert res is not None
    rows = [tuple(None if (v := res.get_value(r, k)) is None else v.decode() for k in range(res.nfields))
            for r in range(res.ntuples)]
    return desc, rows


def _sorted(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(rows, key=repr)


@pytest.mark.parametrize("sql", SAME)
def test_same_answer_as_postgres(both, sql: str) -> None:  # noqa: ANN001
    w, p = both
    (wd, wr), (pd, pr) = _answer(w, sql), _answer(p, sql)
    assert wd == pd
    assert _sorted(wr) == _sorted(pr)


@pytest.mark.parametrize("sql", ERRORS)
def test_same_error_as_postgres(both, sql: str) -> None:  # noqa: ANN001
    got = errors(both, sql)
    assert got[0] == got[1]
    assert both[0].execute("SELECT 1").fetchone() == (1,)


@pytest.mark.parametrize("sql", REFUSED)
def test_refused_not_approximated(both, sql: str) -> None:  # noqa: ANN001
    w, _ = both
    with pytest.raises(psycopg.Error) as info:
        w.execute(sql)
    assert info.value.sqlstate == "0A000", info.value.diag.message_primary
    msg = info.value.diag.message_primary or ""
    assert "`" not in msg and "_weir" not in msg and "weir_jsonb" not in msg, msg


MATERIALIZED = {
    "jb_mv1": "SELECT id, j -> 'a' AS a, j ->> 's' AS s, jsonb_typeof(j) AS ty, j || '{\"z\": 1}' AS z, "
              "j @> '{\"s\": \"x\"}' AS has_x, to_jsonb(t) AS tj FROM jb_t",
    "jb_mv2": "SELECT id, e.key, e.value FROM jb_t, jsonb_each(j) AS e WHERE jsonb_typeof(j) = 'object'",
    "jb_mv3": "SELECT t IS NULL AS no_t, jsonb_agg(id ORDER BY id) AS ids, "
              "jsonb_object_agg(id, j) AS docs FROM jb_t GROUP BY t IS NULL",
}


def test_materialized_views_as_postgres(both) -> None:  # noqa: ANN001
    """The same queries maintained as materialized views: the contents (and the column
    types) equal PostgreSQL's answers, also after the input changes."""
    w, p = both
    for name, sql in MATERIALIZED.items():
        w.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")
    try:
        for change in (None, "INSERT INTO jb_t VALUES (10, '{\"s\": \"x\", \"k\": [true]}', 'q')",
                       "DELETE FROM jb_t WHERE id = 10"):
            if change is not None:
                for conn in both:
                    conn.execute(change)
            for name, sql in MATERIALIZED.items():
                want = _answer(p, sql)
                deadline = time.time() + 60
                while True:
                    got = _answer(w, f"SELECT * FROM {name}")
                    if (got[0], _sorted(got[1])) == (want[0], _sorted(want[1])) or time.time() > deadline:
                        break
                    time.sleep(0.5)
                assert got[0] == want[0], name
                assert _sorted(got[1]) == _sorted(want[1]), (name, change)
    finally:
        for name in MATERIALIZED:
            w.execute(f"DROP MATERIALIZED VIEW IF EXISTS {name}")


def test_materialized_view_error_and_recovery(both) -> None:  # noqa: ANN001
    """A view whose jsonb function fails for a row reports PostgreSQL's error, and
    recovers once the row is gone."""
    w, _ = both
    w.execute("CREATE TABLE jb_e (j jsonb)")
    w.execute("INSERT INTO jb_e VALUES ('[1, 2]')")
    w.execute("CREATE MATERIALIZED VIEW jb_mve AS SELECT jsonb_array_length(j) AS n FROM jb_e")
    try:
        assert w.execute("SELECT * FROM jb_mve").fetchall() == [(2,)]
        w.execute("INSERT INTO jb_e VALUES ('{\"a\": 1}')")
        deadline = time.time() + 60
        while True:
            try:
                w.execute("SELECT * FROM jb_mve").fetchall()
            except psycopg.Error as e:
                assert (e.sqlstate, e.diag.message_primary) == ("22023", "cannot get array length of a non-array")
                break
            assert time.time() < deadline, "the view never reported the error"
            time.sleep(0.5)
        w.execute("DELETE FROM jb_e WHERE jsonb_typeof(j) = 'object'")
        deadline = time.time() + 60
        while True:
            try:
                assert w.execute("SELECT * FROM jb_mve").fetchall() == [(2,)]
                break
            except psycopg.Error:
                assert time.time() < deadline, "the view did not recover"
                time.sleep(0.5)
    finally:
        w.execute("DROP MATERIALIZED VIEW IF EXISTS jb_mve")
        w.execute("DROP TABLE IF EXISTS jb_e")


PARAMETERS = [
    ("SELECT j -> %s, j ->> %s FROM jb_t WHERE id = 1", ["a", "s"]),
    ("SELECT j -> %s FROM jb_t WHERE id = 2", [1]),
    ("SELECT j -> %s FROM jb_t WHERE id = 2", ["1"]),  # a text key, not an index
    ("SELECT j @> %s, j || %s, j - %s FROM jb_t WHERE id = 2", ["[1]", "[2]", "a"]),
    ("SELECT id FROM jb_t WHERE j ? %s", ["a"]),
    ("SELECT j #>> %s, j ?| %s FROM jb_t WHERE id = 2", [["3", "c"], ["a"]]),
    ("SELECT id FROM jb_t WHERE j = %s", ['"str"']),
]


@pytest.mark.parametrize(("sql", "params"), PARAMETERS)
@pytest.mark.parametrize("prepare", [False, True])
def test_parameters_as_postgres(both, sql: str, params: list[Any], prepare: bool) -> None:  # noqa: ANN001
    """Untyped parameters take PostgreSQL's types: text right of ->, ?, jsonb - ...,
    text[] right of #>, ?| ..., jsonb right of @>, ||, =."""
    got = []
    for conn in both:
        cur = conn.execute(sql, params, prepare=prepare)
        res = cur.pgresult
        assert res is not None
        got.append(([(d.name, d.type_code) for d in cur.description or []], _sorted([
            tuple(None if (v := res.get_value(r, k)) is None else v.decode() for k in range(res.nfields))
            for r in range(res.ntuples)])))
    assert got[0] == got[1]


def test_index_lookups_compare_jsonb_values(both) -> None:  # noqa: ANN001
    """An index on a table holds jsonb as text: a filter on a jsonb column goes to Spark,
    where '{"c": 1}' equals the stored '{"c": 1.0}' as in PostgreSQL."""
    w, p = both
    w.execute("CREATE TABLE jb_ix (k int, j jsonb)")
    p.execute("CREATE TABLE jb_ix (k int, j jsonb)")
    for conn in both:
        conn.execute("INSERT INTO jb_ix VALUES (1, '{\"c\": 1.0}'), (2, '[1, 2]'), (3, NULL)")
    w.execute("CREATE INDEX jb_ix_j ON jb_ix (j)")
    for sql in ("SELECT k FROM jb_ix WHERE j = '{\"c\": 1}'", "SELECT k FROM jb_ix WHERE j = '{\"c\":1.0}'::jsonb",
                "SELECT k, j FROM jb_ix WHERE k = 1 AND j IS NOT NULL"):
        assert _answer(w, sql) == _answer(p, sql), sql
