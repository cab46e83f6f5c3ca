"""Temporary tables and views, as Materialize has them: created in the session's own
`mz_temp` schema (`pg_temp` names it too), searched first, invisible to other sessions,
dropped with their shards when the session ends (or at the next start after a crash)."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path

import psycopg
import pytest

from tests.integration.psql_client import run_psql
from tests.integration.server import WeirServer
from tests.pg_server import pg_server  # noqa: F401

NOT_FOUND = "42P01"


def _error(c: psycopg.Connection, sql: str) -> psycopg.Error:
    with pytest.raises(psycopg.Error) as info:
        c.execute(sql)
    return info.value


def _notices(c: psycopg.Connection) -> list[str]:
    got: list[str] = []
    c.add_notice_handler(lambda d: got.append(d.message_primary or ""))
    return got


def _temp_items(c: psycopg.Connection) -> list[tuple[str, str]]:
    return c.execute("SELECT o.name, o.type FROM mz_catalog.mz_objects o JOIN mz_catalog.mz_schemas s "
                     "ON o.schema_id = s.id WHERE s.name = 'mz_temp' ORDER BY 1").fetchall()


def _shard_files(data_dir: Path, item_id: str) -> list[Path]:
    return [p for p in (data_dir / "warehouse").rglob(f"*{item_id}*")]


def test_temp_table_belongs_to_its_session(server: WeirServer) -> None:
    with server.connect() as a, server.connect() as b:
        a.execute("CREATE TEMP TABLE tt_own (a int)")
        a.execute("INSERT INTO tt_own VALUES (1), (2)")
        a.execute("UPDATE tt_own SET a = 20 WHERE a = 2")
        a.execute("DELETE FROM tt_own WHERE a = 1")
        assert a.execute("SELECT a FROM tt_own").fetchall() == [(20,)]
        assert a.execute("SELECT a FROM mz_temp.tt_own").fetchall() == [(20,)]
        assert a.execute("SELECT a FROM pg_temp.tt_own").fetchall() == [(20,)]
        assert _error(b, "SELECT * FROM tt_own").sqlstate == NOT_FOUND
        assert _error(b, "SELECT * FROM mz_temp.tt_own").sqlstate == NOT_FOUND
        # the same name in another session is another table
        b.execute("CREATE TEMPORARY TABLE tt_own (b text)")
        b.execute("INSERT INTO tt_own VALUES ('x')")
        assert b.execute("SELECT b FROM tt_own").fetchall() == [("x",)]
        assert a.execute("SELECT a FROM tt_own").fetchall() == [(20,)]
        assert _error(a, "CREATE TEMP TABLE tt_own (c int)").sqlstate == "42P07"
        a.execute("CREATE TEMP TABLE IF NOT EXISTS tt_own (c int)")
        a.execute("DROP TABLE tt_own")
        assert _error(a, "SELECT * FROM tt_own").sqlstate == NOT_FOUND
        assert b.execute("SELECT b FROM tt_own").fetchall() == [("x",)]


def test_temp_table_shadows_a_permanent_one(server: WeirServer) -> None:
    with server.connect() as a, server.connect() as b:
        a.execute("CREATE TABLE shadowed (a int)")
        a.execute("INSERT INTO shadowed VALUES (1)")
        a.execute("CREATE TEMP TABLE shadowed (a int)")
        a.execute("INSERT INTO shadowed VALUES (2)")
        assert a.execute("SELECT a FROM shadowed").fetchall() == [(2,)]
        assert a.execute("SELECT a FROM public.shadowed").fetchall() == [(1,)]
        assert b.execute("SELECT a FROM shadowed").fetchall() == [(1,)]
        a.execute("DROP TABLE shadowed")  # the temporary one, searched first
        assert a.execute("SELECT a FROM shadowed").fetchall() == [(1,)]
        a.execute("DROP TABLE shadowed")


def test_temp_objects_and_shards_go_with_the_session(server: WeirServer) -> None:
    with server.connect() as watcher:
        with server.connect() as a:
            a.execute("CREATE TEMP TABLE tt_gone (a int)")
            a.execute("INSERT INTO tt_gone VALUES (1)")
            a.execute("CREATE TEMP VIEW tv_gone AS SELECT a + 1 AS b FROM tt_gone")
            assert a.execute("SELECT b FROM tv_gone").fetchall() == [(2,)]
            (tid,) = a.execute("SELECT t.id FROM mz_catalog.mz_tables t JOIN mz_catalog.mz_schemas s "
                               "ON t.schema_id = s.id WHERE s.name = 'mz_temp' AND t.name = 'tt_gone'").fetchone()
            assert ("tt_gone", "table") in _temp_items(watcher)  # catalog relations show them
            assert _shard_files(server.data_dir, tid), "the temporary table has a real shard"
        deadline = time.time() + 30
        while time.time() < deadline and {"tt_gone", "tv_gone"} & {n for n, _ in _temp_items(watcher)}:
            time.sleep(0.2)
        names = {n for n, _ in _temp_items(watcher)}
        assert not {"tt_gone", "tv_gone"} & names
        assert not _shard_files(server.data_dir, tid), "the shard outlived its session"


def test_view_over_temp_is_temporary_and_durable_objects_are_refused(server: WeirServer) -> None:
    with server.connect() as a, server.connect() as b:
        notices = _notices(a)
        a.execute("CREATE TEMP TABLE tt_base (a int)")
        a.execute("INSERT INTO tt_base VALUES (5)")
        a.execute("CREATE VIEW tt_reader AS SELECT a FROM tt_base")
        assert 'view "tt_reader" will be a temporary view' in notices
        assert ("tt_reader", "view") in _temp_items(a)
        assert a.execute("SELECT a FROM tt_reader").fetchall() == [(5,)]
        assert _error(b, "SELECT * FROM tt_reader").sqlstate == NOT_FOUND
        e = _error(a, "CREATE MATERIALIZED VIEW tt_mv AS SELECT a FROM tt_base")
        assert "non-temporary items cannot depend on temporary item" in str(e) and e.sqlstate == "0A000"
        e = _error(a, "CREATE VIEW public.tt_named AS SELECT a FROM tt_base")
        assert e.sqlstate == "42P16"
        e = _error(a, "CREATE TEMP TABLE public.tt_bad (a int)")
        assert e.sqlstate == "42P16" and "temporary" in str(e)
        a.execute("CREATE TEMP TABLE pg_temp.tt_qualified (a int)")
        a.execute("CREATE TEMP VIEW mz_temp.tt_qualified_v AS SELECT 1 AS one")
        assert a.execute("SELECT one FROM tt_qualified_v").fetchall() == [(1,)]
        names = {n for n, _ in a.execute("SELECT name, 1 FROM mz_catalog.mz_objects").fetchall()}
        assert not {"tt_mv", "tt_named", "tt_bad"} & names, "a refused statement left an object"


def test_unsupported_variants_are_refused_by_name(server: WeirServer) -> None:
    with server.connect() as a:
        for sql, construct in [("CREATE TEMP TABLE tt_x (a int) ON COMMIT DROP", "ON COMMIT DROP"),
                               ("CREATE TEMP TABLE tt_x (a int) ON COMMIT DELETE ROWS", "ON COMMIT DELETE ROWS"),
                               ("CREATE TEMP TABLE tt_x AS SELECT 1", "AS"),
                               ("CREATE TEMP MATERIALIZED VIEW tt_x AS SELECT 1", "MATERIALIZED VIEW")]:
            e = _error(a, sql)
            assert e.sqlstate == "0A000", (sql, e)
            assert construct in str(e), (sql, e)
        assert _error(a, "SELECT * FROM tt_x").sqlstate == NOT_FOUND
        a.execute("CREATE LOCAL TEMP TABLE tt_local (a int) ON COMMIT PRESERVE ROWS")
        assert ("tt_local", "table") in _temp_items(a)


def test_discard_temp_and_all_drop_them(server: WeirServer) -> None:
    with server.connect() as a:
        a.execute("CREATE TEMP TABLE tt_discard (a int)")
        a.execute("CREATE TEMP VIEW tv_discard AS SELECT 1 AS one")
        a.execute("DISCARD TEMP")
        assert _error(a, "SELECT * FROM tt_discard").sqlstate == NOT_FOUND
        assert _error(a, "SELECT * FROM tv_discard").sqlstate == NOT_FOUND
        a.execute("CREATE TEMP TABLE tt_discard (a int)")
        a.execute("DISCARD ALL")
        assert _error(a, "SELECT * FROM tt_discard").sqlstate == NOT_FOUND
        a.execute("CREATE TEMP TABLE tt_discard (a int)")  # a session goes on after DISCARD
        assert a.execute("SELECT count(*) FROM tt_discard").fetchall() == [(0,)]


def test_index_on_temp_table_is_temporary(server: WeirServer) -> None:
    with server.connect() as a:
        a.execute("CREATE TEMP TABLE tt_idx (a int)")
        a.execute("INSERT INTO tt_idx VALUES (3)")
        a.execute("CREATE INDEX tt_idx_a ON tt_idx (a)")
        assert ("tt_idx_a", "index") in _temp_items(a)
        assert a.execute("SELECT a FROM tt_idx WHERE a = 3").fetchall() == [(3,)]
        a.execute("DISCARD TEMP")
        assert ("tt_idx_a", "index") not in _temp_items(a)


def test_crash_leaves_no_temporary_objects(tmp_path: Path, java: None) -> None:
    srv = WeirServer(tmp_path / "data").start(wait_for_replica=False)
    try:
        c = srv.connect()
        c.execute("CREATE TABLE kept (a int)")
        c.execute("CREATE TEMP TABLE tt_crash (a int)")
        c.execute("INSERT INTO tt_crash VALUES (1)")
        (tid,) = c.execute("SELECT id FROM mz_catalog.mz_tables WHERE name = 'tt_crash'").fetchone()
        assert _shard_files(srv.data_dir, tid)
        srv.stop(signal.SIGKILL)
        srv.start(wait_for_replica=False)
        with srv.connect() as c:
            assert _temp_items(c) == []
            assert c.execute("SELECT count(*) FROM mz_catalog.mz_schemas WHERE name = 'mz_temp'").fetchone() == (0,)
            assert c.execute("SELECT name FROM mz_catalog.mz_tables WHERE name IN ('kept', 'tt_crash')").fetchall() \
                == [("kept",)]
        assert not _shard_files(srv.data_dir, tid), "a crashed session's temporary shard leaked"
    finally:
        srv.stop()


def test_catalog_tools_see_the_sessions_temp_objects(server: WeirServer) -> None:
    with server.connect() as a, server.connect() as b:
        a.execute("CREATE TABLE tt_perm (a int)")
        a.execute("CREATE TEMP TABLE tt_cat (a int)")
        assert a.execute("SELECT 'tt_cat'::regclass::text, 'pg_temp.tt_cat'::regclass::text").fetchone() \
            == ("tt_cat", "tt_cat")
        assert a.execute("SELECT relpersistence FROM pg_class WHERE relname IN ('tt_cat', 'tt_perm') "
                         "ORDER BY relname").fetchall() == [("t",), ("p",)]
        assert a.execute("SELECT pg_my_temp_schema() = (SELECT n.oid FROM pg_namespace n JOIN pg_class c "
                         "ON c.relnamespace = n.oid WHERE relname = 'tt_cat')").fetchone() == (True,)
        assert a.execute("SELECT count(*) FROM pg_class c WHERE relname = 'tt_cat' "
                         "AND pg_table_is_visible(c.oid)").fetchone() == (1,)
        assert b.execute("SELECT pg_my_temp_schema()").fetchone() == (0,)  # PostgreSQL's 0 for none
        assert b.execute("SELECT count(*) FROM pg_class c WHERE relname = 'tt_cat' "
                         "AND pg_table_is_visible(c.oid)").fetchone() == (0,)
        assert [r[0] for r in a.execute("SHOW TABLES FROM mz_temp").fetchall()] == ["tt_cat"]
        assert b.execute("SHOW TABLES FROM mz_temp").fetchall() == []
        a.execute("DROP TABLE tt_perm")


def test_psql_describes_a_temp_table_as_postgres(psql_bin: str, server: WeirServer, pg_server) -> None:  # noqa: F811
    """psql's \\d of a temporary table and view, in the session that made them: what PostgreSQL
    15's psql prints, but for the schema's name (mz_temp, PostgreSQL's pg_temp_N)."""
    pg_server.create_database("tempobj")
    made = ["-c", "CREATE TEMP TABLE tt_psql (id int NOT NULL, name varchar(20), note text)",
            "-c", "CREATE TEMP VIEW tv_psql AS SELECT id, note FROM tt_psql"]
    shown = ["-c", r"\d tt_psql", "-c", r"\d tv_psql"]
    got_weir = run_psql(psql_bin, server.dsn, *made, *shown)
    got_pg = run_psql(psql_bin, pg_server.dsn("tempobj"), *made, *shown)
    assert got_weir.returncode == 0, got_weir.stderr
    assert "mz_temp.tt_psql" in got_weir.stdout
    # titles are centred over the table: a shorter schema name moves them
    assert [line.strip() for line in got_weir.stdout.splitlines()] == \
        [line.strip() for line in re.sub(r"pg_temp_\d+", "mz_temp", got_pg.stdout).splitlines()]
