"""pg_catalog and information_schema (issue 14, parts 1 and 3) through a real server: rows
for a table, a view, a materialized view and an index, oids equal to mz_catalog's, types
from weir's type map, rows gone after DROP, pg_authid for superusers only; and every
column weir has is a column PostgreSQL 15 has, with the same type."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.integration.both_servers import errors, paired
from tests.integration.server import WeirServer
from tests.pg_server import pg_server  # noqa: F401
from weir.types import BY_OID

PG_CATALOG = ("pg_namespace pg_class pg_attribute pg_type pg_database pg_roles pg_authid pg_user pg_index "
              "pg_indexes pg_views pg_matviews pg_tables pg_proc pg_description pg_attrdef pg_constraint "
              "pg_inherits pg_am pg_collation pg_enum pg_range pg_depend pg_settings pg_extension "
              "pg_event_trigger pg_trigger pg_rewrite pg_tablespace pg_stat_activity pg_locks pg_auth_members "
              "pg_shdescription").split()
INFORMATION_SCHEMA = ("schemata tables views columns table_constraints key_column_usage referential_constraints "
                      "routines parameters character_sets applicable_roles enabled_roles role_table_grants "
                      "column_privileges").split()


def rows(c: psycopg.Connection, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return c.execute(sql, params or None).fetchall()


@pytest.fixture(scope="module")
def objs(server: WeirServer) -> Iterator[tuple[psycopg.Connection, dict[str, int]]]:
    """A schema pgc with a table, a view, a materialized view and an index; their oids as
    mz_catalog shows them."""
    with server.connect() as c:
        c.execute("CREATE SCHEMA pgc")
        c.execute("CREATE TABLE pgc.t (a int NOT NULL, b text, c numeric(10,2), d timestamptz)")
        c.execute("CREATE VIEW pgc.v AS SELECT a, b FROM pgc.t")
        c.execute("CREATE MATERIALIZED VIEW pgc.mv AS SELECT a, count(*) AS n FROM pgc.t GROUP BY a")
        c.execute("CREATE INDEX t_a_idx ON pgc.t (a)")
        oids = dict(rows(c, "SELECT o.name, o.oid FROM mz_catalog.mz_objects o JOIN mz_catalog.mz_schemas s "
                           "ON s.id = o.schema_id WHERE s.name = 'pgc'"))
        oids["pgc"] = rows(c, "SELECT oid FROM mz_catalog.mz_schemas WHERE name = 'pgc'")[0][0]
        try:
            yield c, oids
        finally:
            c.execute("DROP SCHEMA pgc CASCADE")


def test_pg_class_and_pg_namespace(objs: tuple) -> None:
    c, oids = objs
    got = rows(c, "SELECT c.relname, c.relkind, c.oid, c.relhasindex, c.relnatts, n.oid "
                  "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                  "WHERE n.nspname = 'pgc' ORDER BY c.relname")
    assert got == [("mv", "m", oids["mv"], False, 2, oids["pgc"]), ("t", "r", oids["t"], True, 4, oids["pgc"]),
                   ("t_a_idx", "i", oids["t_a_idx"], False, 1, oids["pgc"]),
                   ("v", "v", oids["v"], False, 2, oids["pgc"])]
    desc = c.execute("SELECT relkind, relname, oid FROM pg_class LIMIT 0").description
    assert [(d.name, d.type_code) for d in desc] == [("relkind", 18), ("relname", 19), ("oid", 26)]
    assert rows(c, "SELECT nspname FROM pg_namespace WHERE nspname IN ('pg_catalog', 'public', "
                   "'information_schema') ORDER BY 1") == [("information_schema",), ("pg_catalog",), ("public",)]
    # the system's relations are pg_class rows too
    assert rows(c, "SELECT c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                   "WHERE n.nspname = 'mz_catalog' AND c.relname = 'mz_tables'") == [("r",)]


def test_pg_attribute_and_pg_type(objs: tuple) -> None:
    c, oids = objs
    got = rows(c, "SELECT a.attname, a.attnum, a.atttypid, t.typname, a.attnotnull, a.atttypmod "
                  "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
                  "WHERE a.attrelid = %s AND a.attnum > 0 ORDER BY a.attnum", oids["t"])
    assert got == [("a", 1, 23, "int4", True, -1), ("b", 2, 25, "text", False, -1),
                   ("c", 3, 1700, "numeric", False, (10 << 16 | 2) + 4),
                   ("d", 4, 1184, "timestamptz", False, -1)]
    assert rows(c, "SELECT attname, atttypid FROM pg_attribute WHERE attrelid = %s ORDER BY attnum",
                oids["mv"]) == [("a", 23), ("n", 20)]
    assert rows(c, "SELECT attname, atttypid FROM pg_attribute WHERE attrelid = %s", oids["t_a_idx"]) == [
        ("a", 23)]
    types = dict(rows(c, "SELECT oid, typname FROM pg_type"))
    assert set(BY_OID) <= set(types), set(BY_OID) - set(types)
    assert rows(c, "SELECT typname, typelem, typinput, typoutput, typreceive, typsend FROM pg_type "
                   "WHERE oid IN (23, 1007) ORDER BY oid") == [
        ("int4", 0, "int4in", "int4out", "int4recv", "int4send"),
        ("_int4", 23, "array_in", "array_out", "array_recv", "array_send")]
    assert rows(c, "SELECT typarray FROM pg_type WHERE typname = 'mz_timestamp'") == [(16553,)]


def test_indexes_tables_views(objs: tuple) -> None:
    c, oids = objs
    [(indrelid, indkey)] = rows(c, "SELECT indrelid, indkey FROM pg_index WHERE indexrelid = %s", oids["t_a_idx"])
    assert indrelid == oids["t"] and str(indkey) in ("1", "[1]")
    assert rows(c, "SELECT schemaname, tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'pgc'") == [
        ("pgc", "t", "t_a_idx", "CREATE INDEX t_a_idx IN CLUSTER quickstart ON pgc.t USING arrangement (a)")]
    assert rows(c, "SELECT tablename, tableowner, hasindexes FROM pg_tables WHERE schemaname = 'pgc'") == [
        ("t", "materialize", True)]
    [(name, owner, definition)] = rows(c, "SELECT viewname, viewowner, definition FROM pg_views "
                                          "WHERE schemaname = 'pgc'")
    assert (name, owner) == ("v", "materialize") and '"pgc"."t"' in definition
    assert rows(c, "SELECT matviewname, hasindexes, ispopulated FROM pg_matviews WHERE schemaname = 'pgc'") == [
        ("mv", False, True)]
    class_oid = rows(c, "SELECT oid FROM mz_catalog.mz_objects WHERE name = 'pg_class'")[0][0]
    assert sorted(rows(c, "SELECT objid, refobjid, deptype FROM pg_depend WHERE refclassid = %s "
                          "AND refobjid = %s", class_oid, oids["t"])) == sorted(
        [(oids["v"], oids["t"], "n"), (oids["mv"], oids["t"], "n"), (oids["t_a_idx"], oids["t"], "a")])


def test_information_schema(objs: tuple) -> None:
    c, _ = objs
    assert rows(c, "SELECT table_catalog, table_name, table_type FROM information_schema.tables "
                   "WHERE table_schema = 'pgc' ORDER BY 2") == [
        ("materialize", "mv", "MATERIALIZED VIEW"), ("materialize", "t", "BASE TABLE"),
        ("materialize", "v", "VIEW")]
    assert rows(c, "SELECT column_name, ordinal_position, is_nullable, data_type, numeric_precision, "
                   "numeric_scale, udt_name FROM information_schema.columns "
                   "WHERE table_schema = 'pgc' AND table_name = 't' ORDER BY ordinal_position") == [
        ("a", 1, "NO", "integer", 32, 0, "int4"), ("b", 2, "YES", "text", None, None, "text"),
        ("c", 3, "YES", "numeric", 10, 2, "numeric"),
        ("d", 4, "YES", "timestamp with time zone", None, None, "timestamptz")]
    assert rows(c, "SELECT table_name FROM information_schema.views WHERE table_schema = 'pgc'") == [("v",)]
    assert rows(c, "SELECT schema_name, schema_owner FROM information_schema.schemata "
                   "WHERE schema_name = 'pgc'") == [("pgc", "materialize")]
    assert ("materialize",) in rows(c, "SELECT role_name FROM information_schema.enabled_roles")
    assert rows(c, "SELECT character_set_name FROM information_schema.character_sets") == [("UTF8",)]
    assert ("abs",) in rows(c, "SELECT DISTINCT routine_name FROM information_schema.routines")


def test_settings_and_sessions(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("SET application_name = 'pgc_test'")
        assert rows(c, "SELECT setting, source FROM pg_settings WHERE name = 'application_name'") == [
            ("pgc_test", "session")]
        assert rows(c, "SELECT setting FROM pg_settings WHERE name = 'server_version_num'") == [("150004",)]
        pid = c.info.backend_pid
        assert rows(c, "SELECT pid, usename, state FROM pg_stat_activity WHERE pid = pg_backend_pid()") == [
            (pid, "materialize", "active")]
        assert rows(c, "SELECT count(*) FROM pg_locks") == [(0,)]


def test_pg_authid_is_for_superusers(server: WeirServer) -> None:
    with server.connect() as su:
        su.execute("CREATE ROLE pgc_user LOGIN")
        try:
            dsn = f"host=127.0.0.1 port={server.sql_port} dbname=materialize user=pgc_user"
            with psycopg.connect(dsn, autocommit=True) as c:
                with pytest.raises(psycopg.Error) as info:
                    c.execute("SELECT rolname FROM pg_catalog.pg_authid").fetchall()
                assert info.value.sqlstate == "42501" and "pg_authid" in str(info.value)
                assert ("pgc_user", "********") in rows(c, "SELECT rolname, rolpassword FROM pg_roles")
                assert rows(c, "SELECT role_name FROM information_schema.enabled_roles") == [("pgc_user",)]
            assert ("pgc_user", False) in rows(su, "SELECT rolname, rolsuper FROM pg_catalog.pg_authid")
        finally:
            su.execute("DROP ROLE pgc_user")


def test_rows_go_with_drop(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE SCHEMA pgc_drop")
        c.execute("CREATE TABLE pgc_drop.gone (x int)")
        c.execute("CREATE INDEX gone_idx ON pgc_drop.gone (x)")
        oid = rows(c, "SELECT oid FROM mz_catalog.mz_tables WHERE name = 'gone'")[0][0]
        queries = [
            ("SELECT count(*) FROM pg_class WHERE relname IN ('gone', 'gone_idx')", 2),
            (f"SELECT count(*) FROM pg_attribute WHERE attrelid = {oid}", 1),
            ("SELECT count(*) FROM pg_tables WHERE schemaname = 'pgc_drop'", 1),
            ("SELECT count(*) FROM pg_indexes WHERE schemaname = 'pgc_drop'", 1),
            (f"SELECT count(*) FROM pg_index WHERE indrelid = {oid}", 1),
            ("SELECT count(*) FROM information_schema.columns WHERE table_schema = 'pgc_drop'", 1),
            ("SELECT count(*) FROM pg_namespace WHERE nspname = 'pgc_drop'", 1),
        ]
        assert [rows(c, q)[0][0] for q, _ in queries] == [n for _, n in queries]
        c.execute("DROP INDEX pgc_drop.gone_idx")
        assert rows(c, "SELECT relhasindex FROM pg_class WHERE oid = %s", oid) == [(False,)]
        c.execute("DROP SCHEMA pgc_drop CASCADE")
        assert [rows(c, q)[0][0] for q, _ in queries] == [0] * len(queries)


def _pg_columns(p: psycopg.Connection, schema: str, name: str) -> dict[str, int]:
    """A PostgreSQL relation's columns and their types (a domain's: its base type)."""
    return dict(rows(p, "SELECT a.attname, CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END "
                        "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
                        "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped",
                     f"{schema}.{name}"))


@pytest.mark.parametrize("schema, names", [("pg_catalog", PG_CATALOG), ("information_schema", INFORMATION_SCHEMA)])
def test_columns_are_postgres_columns(server: WeirServer, pg_server, schema: str, names: list[str]) -> None:  # noqa: ANN001, F811
    """For every column weir has, PostgreSQL 15 has the same name with the same type (as a
    client sees it: the type of the column in the result), read in the coordinator's process
    and, where a session can ask for it, on a replica."""
    mismatches = []
    with server.connect() as w, psycopg.connect(pg_server.dsn(), autocommit=True) as p:
        pg = {name: _pg_columns(p, schema, name) for name in names}
        for path in ("default", "replica"):
            if path == "replica":
                try:
                    w.execute("SET enable_system_reads_in_process = off")
                except psycopg.Error:
                    break  # every read is a replica's
            for name in names:
                cols = w.execute(f"SELECT * FROM {schema}.{name} LIMIT 0").description
                mismatches += [(path, name, d.name, d.type_code, pg[name].get(d.name)) for d in cols
                               if pg[name].get(d.name) != d.type_code]
    assert mismatches == []


@pytest.mark.parametrize("sql", [
    "SELECT 'pgc_missing'::regclass",
    "SELECT 'pgc_missing'::regnamespace",
    "SELECT 'pgc_missing'::regrole",
    "SELECT 'pgc_missing'::regproc",
    "SELECT count(*) FROM pg_catalog.pg_attribute WHERE attrelid = 'pgc_missing'::regclass",
])
def test_unknown_names_fail_as_in_postgres(server: WeirServer, pg_server, sql: str) -> None:  # noqa: ANN001, F811
    """A reg* literal naming nothing fails with PostgreSQL's SQLSTATE and message (it used
    to answer NULL); to_regclass of the same name is NULL in both."""
    with server.connect() as w, psycopg.connect(pg_server.dsn(), autocommit=True) as p:
        errors = []
        for conn in (w, p):
            with pytest.raises(psycopg.Error) as e:
                conn.execute(sql).fetchall()
            errors.append((e.value.sqlstate, e.value.diag.message_primary))
        assert errors[0] == errors[1]
        assert rows(w, "SELECT to_regclass('pgc_missing') IS NULL") == [(True,)]
        assert rows(w, "SELECT 'pg_class'::regclass::text") == rows(p, "SELECT 'pg_class'::regclass::text")


def test_backend_pid_and_start_time(server: WeirServer) -> None:
    """pg_backend_pid() is the session's connection id, as pg_stat_activity lists it;
    pg_postmaster_start_time() is when the server started, the same for every session."""
    with server.connect() as a, server.connect() as b:
        pid = rows(a, "SELECT pg_backend_pid()")[0][0]
        assert rows(a, "SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE pid = pg_backend_pid()") == [(1,)]
        assert rows(b, "SELECT pg_backend_pid() <> %s", pid) == [(True,)]
        (started,), = rows(a, "SELECT pg_catalog.pg_postmaster_start_time()")
        assert rows(b, "SELECT pg_postmaster_start_time()") == [(started,)]
        assert rows(a, "SELECT pg_postmaster_start_time() < now(), pg_typeof(pg_postmaster_start_time())::text") \
            == [(True, "timestamp with time zone")]


NAMED = ['CREATE SCHEMA pgc_cn', 'CREATE TABLE pgc_cn."Mixed Case" (a int)', "CREATE TABLE pgc_cn.plain (a int, b int)",
         "CREATE INDEX pgc_i ON pgc_cn.plain (b, a)"]


@pytest.fixture(scope="module")
def named(server: WeirServer, pg_server) -> Iterator[tuple[psycopg.Connection, psycopg.Connection]]:  # noqa: ANN001, F811
    yield from paired(server, pg_server, "pgc_named", NAMED)


@pytest.mark.parametrize("sql", [
    # a computed name cast to regclass / regnamespace: parsed as an identifier, per row
    "SELECT format('%I.%I', 'pgc_cn', 'Mixed Case')::regclass::text, ('pgc_cn.' || 'PLAIN')::regclass::text, "
    "('\"pgc_cn\".\"pl' || 'ain\"')::regclass::text, quote_ident('pgc_cn')::regnamespace::text",
    "SELECT format('%I.%I', 'pgc_cn', 'plain')::regclass::oid = 'pgc_cn.plain'::regclass::oid",
    "SELECT col_description(format('%I.%I', 'pgc_cn', 'plain')::regclass::oid, 1), "
    "col_description(format('%I.%I', 'pgc_cn', 'Mixed Case')::regclass, 1)",
    "SELECT (NULL::text)::regclass, has_table_privilege(current_user, NULL::text, 'SELECT')",
    # names from a catalog relation's rows, as Metabase's table privileges query passes them
    "SELECT t.tablename, has_table_privilege(current_user, quote_ident(t.schemaname) || '.' || "
    "quote_ident(t.tablename), 'SELECT'), has_any_column_privilege(current_user, '\"' || t.schemaname || "
    "'\".\"' || t.tablename || '\"', 'INSERT'), has_schema_privilege(current_user, t.schemaname, 'USAGE') "
    "FROM pg_catalog.pg_tables t WHERE t.schemaname = 'pgc_cn' ORDER BY 1",
])
def test_computed_names_as_in_postgres(named: tuple, sql: str) -> None:
    w, p = named
    got, expected = w.execute(sql), p.execute(sql)
    assert [d.name for d in got.description] == [d.name for d in expected.description]
    assert got.fetchall() == expected.fetchall()


@pytest.mark.parametrize("sql", [
    "SELECT ('pgc_cn.' || 'nope')::regclass",
    "SELECT format('%I', 'pgc_nope')::regnamespace",
    "SELECT has_table_privilege(current_user, 'pgc_cn.' || 'nope', 'SELECT')",
    "SELECT has_schema_privilege(current_user, 'pgc_' || 'nope', 'USAGE')",
    "SELECT col_description(('pgc_cn.' || 'nope')::regclass, 1)",
])
def test_computed_names_naming_nothing_fail_as_in_postgres(named: tuple, sql: str) -> None:
    assert errors(named, sql)[0] == errors(named, sql)[1]


def test_a_computed_database_name_naming_nothing_fails(named: tuple) -> None:
    (w_state, _), (p_state, _) = errors(named, "SELECT has_database_privilege(current_database() || '_nope', 'CONNECT')")
    assert w_state == p_state == "3D000"


def test_size_pretty_as_in_postgres(named: tuple) -> None:
    """pg_size_pretty() prints as PostgreSQL 15 does (psql's \\dt+ and \\l+ call it), at each
    unit's edges, negative sizes and NULL."""
    sql = ("SELECT v, pg_size_pretty(v) FROM (VALUES (0::bigint), (10239), (10240), (-10240), (-10239), (20479), "
           "(10485247), (10485248), (20971519), (20971520), (1099511627776), (123456789012345678), "
           "(9223372036854775807), (NULL)) t(v) ORDER BY v")
    w, p = named
    assert w.execute(sql).fetchall() == p.execute(sql).fetchall()


def test_tablespaces_and_databases_as_in_postgres(named: tuple) -> None:
    """PostgreSQL's two built-in tablespaces; databases in pg_default (psql's \\l+ joins them)."""
    w, p = named
    sql = "SELECT oid, spcname, pg_tablespace_location(oid) FROM pg_catalog.pg_tablespace ORDER BY oid"
    assert w.execute(sql).fetchall() == p.execute(sql).fetchall()
    sql = ("SELECT t.spcname FROM pg_catalog.pg_database d JOIN pg_catalog.pg_tablespace t "
           "ON d.dattablespace = t.oid WHERE d.datname = current_database()")
    assert w.execute(sql).fetchall() == p.execute(sql).fetchall() == [("pg_default",)]


@pytest.mark.parametrize("sql", [
    "SELECT indkey[0], indkey[1], indkey[2], indkey[-1], array_lower(indkey, 1), array_upper(indkey, 1) "
    "FROM pg_catalog.pg_index WHERE indrelid = 'pgc_cn.plain'::regclass",
    "SELECT count(*) > 0 FROM pg_catalog.pg_proc WHERE proname = 'lower' AND proargtypes[0] = 'text'::regtype "
    "AND array_lower(proargtypes, 1) = 0 AND array_upper(proargtypes, 1) = 0",
    "SELECT (ARRAY[1, 2])[0], (ARRAY[1, 2])[1]",
])
def test_vectors_count_from_zero_as_in_postgres(named: tuple, sql: str) -> None:
    """int2vector and oidvector subscripts start at 0 (every other array's at 1); a
    subscript is named after its array."""
    w, p = named
    got, expected = w.execute(sql), p.execute(sql)
    assert [d.name for d in got.description] == [d.name for d in expected.description]
    assert got.fetchall() == expected.fetchall()
