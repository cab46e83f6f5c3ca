"""System reads in process (issue 14 part 4): a query over system relations only runs in the
coordinator (DuckDB), and answers exactly what the Spark path answers for it: a corpus of
catalog queries run both ways (enable_system_reads_in_process on / off) on a real server."""

from __future__ import annotations

import collections
import time
from typing import Any

import psycopg
import pytest

from tests.integration.server import WeirServer

SETUP = [
    "CREATE TABLE sr_t (a int NOT NULL, b text, c numeric(10,2), d timestamptz)",
    "CREATE VIEW sr_v AS SELECT a, b FROM sr_t WHERE a > 0",
    "CREATE MATERIALIZED VIEW sr_mv AS SELECT b, count(*) AS n FROM sr_t GROUP BY b",
    "CREATE INDEX sr_idx ON sr_t (a)",
    "CREATE SCHEMA sr_s",
    "CREATE TABLE sr_s.sr_u (x jsonb, y int[])",
    "CREATE ROLE sr_r",
    "GRANT SELECT ON sr_t TO sr_r",
]

# Catalog queries as tools and people write them: joins, filters, patterns, aggregates,
# ORDER BY / LIMIT, string and array functions, CASE, runtime relations, SHOW.
CORPUS = [
    "SHOW TABLES", "SHOW VIEWS", "SHOW MATERIALIZED VIEWS", "SHOW INDEXES", "SHOW SCHEMAS",
    "SHOW DATABASES", "SHOW CLUSTERS", "SHOW CLUSTER REPLICAS", "SHOW COLUMNS FROM sr_t",
    "SHOW TABLES FROM sr_s", "SHOW OBJECTS", "SHOW ROLES",
    "SELECT id, oid, name FROM mz_catalog.mz_tables WHERE name LIKE 'sr\\_%' ORDER BY name",
    "SELECT t.name, s.name AS schema, d.name AS database FROM mz_catalog.mz_tables t "
    "JOIN mz_catalog.mz_schemas s ON t.schema_id = s.id JOIN mz_catalog.mz_databases d "
    "ON s.database_id = d.id WHERE t.name LIKE 'sr%'",
    "SELECT c.name, c.position, c.type, c.nullable FROM mz_catalog.mz_columns c JOIN mz_catalog.mz_tables t "
    "ON c.id = t.id WHERE t.name = 'sr_t' ORDER BY c.position",
    "SELECT type, count(*) FROM mz_catalog.mz_objects WHERE id LIKE 'u%' GROUP BY type ORDER BY type",
    "SELECT count(*), count(DISTINCT schema_id), min(name), max(oid) FROM mz_catalog.mz_objects",
    "SELECT upper(name), length(name), substr(name, 2, 3), name || '!', replace(name, 'sr', 'x') "
    "FROM mz_catalog.mz_views WHERE name LIKE 'sr%'",
    "SELECT name, CASE WHEN name LIKE '%mv' THEN 'mat' ELSE 'other' END, coalesce(NULL, name) "
    "FROM mz_catalog.mz_materialized_views",
    "SELECT name, privileges FROM mz_catalog.mz_tables WHERE name = 'sr_t'",
    "SELECT name, cardinality(privileges), privileges[1] FROM mz_catalog.mz_tables WHERE name LIKE 'sr%'",
    "SELECT r.name, r.size, c.name FROM mz_catalog.mz_cluster_replicas r JOIN mz_catalog.mz_clusters c "
    "ON r.cluster_id = c.id ORDER BY 1",
    "SELECT object_id, referenced_object_id FROM mz_internal.mz_object_dependencies "
    "WHERE object_id IN (SELECT id FROM mz_catalog.mz_objects WHERE name LIKE 'sr%')",
    "SELECT name FROM mz_catalog.mz_objects WHERE name LIKE 'sr%' ORDER BY name DESC LIMIT 3 OFFSET 1",
    "SELECT name, inherit, rolcanlogin FROM mz_catalog.mz_roles WHERE name LIKE 'sr%'",
    "SELECT index_id, index_position, on_position, on_expression FROM mz_catalog.mz_index_columns "
    "ORDER BY 1, 2 LIMIT 20",
    "SELECT s.name, (SELECT count(*) FROM mz_catalog.mz_tables t WHERE t.schema_id = s.id) "
    "FROM mz_catalog.mz_schemas s ORDER BY 1",
    "SELECT name FROM mz_catalog.mz_tables WHERE name ~ '^sr_' UNION SELECT name FROM mz_catalog.mz_views",
    "SELECT name, id = 'x', oid > 20000, oid / 2, oid % 7 FROM mz_catalog.mz_tables WHERE name LIKE 'sr%'",
    "SELECT replica_id, status FROM mz_internal.mz_cluster_replica_statuses",
    "SELECT count(*) > 0 FROM mz_internal.mz_sessions",
    "SELECT name FROM mz_catalog.mz_tables WHERE name LIKE 'sr!_%' ESCAPE '!' OR name ILIKE 'SR\\_U'",
    "WITH RECURSIVE d(id, depth) AS (SELECT id, 0 FROM mz_catalog.mz_objects WHERE name LIKE 'sr%' "
    "UNION ALL SELECT dep.referenced_object_id, d.depth + 1 FROM mz_internal.mz_object_dependencies dep "
    "JOIN d ON dep.object_id = d.id) SELECT id, depth FROM d",
    "SELECT c.name, array_agg(r.name ORDER BY r.name DESC) FROM mz_catalog.mz_clusters c "
    "JOIN mz_catalog.mz_cluster_replicas r ON r.cluster_id = c.id GROUP BY c.name",
    # set-returning functions in lockstep (SQLAlchemy's index and constraint reflection)
    "SELECT indexrelid, unnest(indkey) AS attnum, unnest(indclass), generate_subscripts(indkey, 1) AS ord "
    "FROM pg_catalog.pg_index",
    "SELECT relname, unnest(ARRAY[oid, relnamespace, 7]), unnest(ARRAY[relname]), generate_subscripts(ARRAY[1], 1) "
    "FROM pg_catalog.pg_class WHERE relname LIKE 'sr%'",
    "SELECT c.relname, pg_get_indexdef(c.oid, 0, true), pg_get_indexdef(c.oid, 1, true), "
    "pg_get_indexdef(c.oid, 2, false), pg_get_indexdef(c.oid, -1, true) FROM pg_catalog.pg_class c "
    "WHERE c.relkind = 'i'",
    "SELECT attname, json_build_object('name', attname, 'not_null', attnotnull, 'num', attnum) "
    "FROM pg_catalog.pg_attribute WHERE attrelid = 'sr_t'::regclass",
]

# ... of which these still run on a replica, with the reason (weir.sql.in_process)
ON_A_REPLICA: dict[str, str] = {}


def _rows(conn: psycopg.Connection, sql: str) -> tuple[list[tuple[Any, Any]], collections.Counter]:
    cur = conn.execute(sql)
    desc = [(d.name, d.type_code) for d in cur.description or []]
    return desc, collections.Counter(tuple(_hashable(v) for v in r) for r in cur.fetchall())


def _hashable(v: Any) -> Any:
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v


@pytest.fixture(scope="module")
def both(server: WeirServer):  # noqa: ANN201
    with server.connect() as c:
        for sql in SETUP:
            try:
                c.execute(sql)
            except psycopg.errors.DuplicateObject:
                pass
    with server.connect() as spark, server.connect() as here:
        spark.execute("SET enable_system_reads_in_process = off")
        yield spark, here


@pytest.mark.parametrize("sql", CORPUS)
def test_same_answer_as_the_spark_path(both, sql: str) -> None:  # noqa: ANN001
    spark, here = both
    for _ in range(3):  # runtime relations may change between the two reads: try again
        expected, got = _rows(spark, sql), _rows(here, sql)
        if expected == got:
            break
        time.sleep(0.5)
    assert got == expected


def test_catalog_reads_run_in_process(server: WeirServer, both) -> None:  # noqa: ANN001
    _, here = both
    elsewhere = []
    for sql in CORPUS:
        if sql in ON_A_REPLICA:
            continue
        before = server.metric("weir_reads_total", strategy="in-process")
        here.execute(sql).fetchall()
        if server.metric("weir_reads_total", strategy="in-process") == before:
            elsewhere.append(sql)
    assert not elsewhere, f"{len(elsewhere)} of {len(CORPUS)} catalog queries took a replica"


def test_in_process_is_off_for_user_data(server: WeirServer, both) -> None:  # noqa: ANN001
    _, here = both
    before = server.metric("weir_reads_total", strategy="in-process")
    here.execute("SELECT * FROM sr_t, mz_catalog.mz_tables").fetchall()
    assert server.metric("weir_reads_total", strategy="in-process") == before


def test_repeated_reads_see_each_change(server: WeirServer, both) -> None:  # noqa: ANN001
    """The engine keeps its inputs registered and its statements prepared between reads:
    the same query after each CREATE and DROP answers from the new contents."""
    _, here = both
    sql = "SELECT name FROM mz_catalog.mz_tables WHERE name LIKE 'sr_rep%' ORDER BY name"
    here.execute("DROP TABLE IF EXISTS sr_rep1")
    here.execute("DROP TABLE IF EXISTS sr_rep2")
    assert here.execute(sql).fetchall() == []
    here.execute("CREATE TABLE sr_rep1 (a int)")
    assert here.execute(sql).fetchall() == [("sr_rep1",)]
    here.execute("CREATE TABLE sr_rep2 (a int)")
    here.execute("DROP TABLE sr_rep1")
    assert here.execute(sql).fetchall() == [("sr_rep2",)]
    shown = "SHOW TABLES LIKE 'sr_rep%'"
    assert here.execute(shown).fetchall() == [("sr_rep2", "")]
    here.execute("DROP TABLE sr_rep2")
    assert here.execute(sql).fetchall() == []
    assert here.execute(shown).fetchall() == []
