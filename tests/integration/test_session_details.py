"""Issue 14 part 5: the startup and session details clients check, against a real
`weir serve` and the real PostgreSQL 15: SHOW, current_setting, set_config, version(),
current_database / current_user / session_user, DISCARD, SET SESSION CHARACTERISTICS,
SET LOCAL, standard_conforming_strings; psql's \\conninfo, \\x, \\timing and \\watch;
pgjdbc's connection checks and validation query; asyncpg's startup.

Each script runs on a fresh connection to each server and every statement must give the
same columns (names and types), rows, command tag or SQLSTATE. Where weir follows
Materialize instead (its own variables and version, `strict serializable`, text-typed
session functions, standard_conforming_strings fixed on), the test says so and checks
weir's answer on its own.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.integration.java_client import compile_program
from tests.integration.psql_client import run_psql
from tests.integration.server import WeirServer
from tests.pg_server import pg_server  # noqa: F401

# Each script: statements run in order on one fresh connection to each server.
SCRIPTS: dict[str, list[str]] = {
    "current_setting": [
        "SELECT current_setting('TimeZone'), current_setting('timezone'), current_setting('DateStyle')",
        "SELECT current_setting('standard_conforming_strings'), current_setting('client_encoding')",
        "SELECT current_setting('server_version_num')::int >= 150000",
        "SELECT current_setting('no_such_setting')",  # 42704
        "SELECT current_setting('no_such_setting', false)",  # 42704
        "SELECT current_setting('no_such_setting', true)",  # NULL
        "SELECT current_setting('my.custom', true)",
        "SELECT current_setting('TimeZone', true)",
        "SELECT current_setting(NULL), current_setting('TimeZone', NULL)",
        "SELECT pg_catalog.current_setting('integer_datetimes')",
    ],
    "set_config": [
        "SELECT set_config('application_name', 'sd_app', false)",
        "SELECT current_setting('application_name')",
        "SHOW application_name",
        "SELECT set_config('DateStyle', 'iso', false)",  # the canonical value
        "SELECT set_config('extra_float_digits', '2', false), current_setting('extra_float_digits')",
        "SELECT set_config('application_name', NULL, false)",  # NULL: back to the default
        "SHOW application_name",
        # outside a transaction block is_local lasts for the statement only
        "SELECT set_config('application_name', 'local_only', true)",
        "SHOW application_name",
        "SELECT set_config('no_such_setting', 'x', false)",  # 42704
        "SELECT set_config('server_version', '1', false)",  # 55P02
        "SELECT set_config('server_version_num', '1', false)",  # 55P02
        "SELECT set_config('integer_datetimes', 'on', false)",  # 55P02
        "SELECT set_config('extra_float_digits', 'x', false)",  # 22023
        "SELECT set_config('extra_float_digits', '99', false)",  # 22023
        "SELECT set_config(NULL, 'x', false)",  # 22004
        "PREPARE sd_p AS SELECT set_config('application_name', $1, false)",
        "EXECUTE sd_p ('from_execute')",
        "SHOW application_name",
    ],
    "set_local_and_rollback": [
        "BEGIN",
        "SET LOCAL extra_float_digits = 2",
        "SHOW extra_float_digits",
        "SET application_name = 'kept'",
        "SELECT set_config('statement_timeout', '5s', true)",
        "SHOW statement_timeout",
        "COMMIT",
        "SHOW extra_float_digits",
        "SHOW statement_timeout",
        "SHOW application_name",
        "BEGIN",
        "SET application_name = 'undone'",
        "SELECT set_config('extra_float_digits', '3', false)",
        "ROLLBACK",
        "SHOW application_name",
        "SHOW extra_float_digits",
        "BEGIN",
        "SET extra_float_digits = 3",
        "SELECT 1/0",
        "COMMIT",  # of a failed transaction: a rollback
        "SHOW extra_float_digits",
        "SET LOCAL extra_float_digits = 2",  # outside a transaction block: a warning, no change
        "SHOW extra_float_digits",
    ],
    "version": [
        "SELECT version() LIKE 'PostgreSQL 15.%', pg_catalog.version() LIKE 'PostgreSQL 15.%'",
        "SELECT pg_catalog.version() = version()",
        "SELECT current_setting('server_version_num')::int / 10000",
        "SHOW server_version_num",
    ],
    "session_functions": [
        "SELECT current_database() = current_catalog, pg_catalog.current_database() = current_database()",
        "SELECT current_user = session_user, current_user = user, current_role = current_user",
        "SELECT current_schema::text, current_schema()::text, pg_catalog.current_schema()::text",
    ],
    "discard": [
        "SET application_name = 'before_discard'",
        "SET extra_float_digits = 3",
        "PREPARE sd_q AS SELECT 1",
        "DISCARD ALL",
        "SHOW application_name",
        "SHOW extra_float_digits",
        "EXECUTE sd_q",  # 26000: DISCARD ALL deallocated it
        "DISCARD PLANS",
        "DISCARD SEQUENCES",
        "DISCARD TEMP",
        "DISCARD TEMPORARY",
        "DISCARD",  # 42601
        "DISCARD nothing",  # 42601
        "BEGIN",
        "DISCARD ALL",  # 25001
        "ROLLBACK",
    ],
    "session_characteristics": [
        "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE",
        "SHOW transaction_isolation",
        "SHOW TRANSACTION ISOLATION LEVEL",
        "SELECT current_setting('transaction_isolation')",
        "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
        "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ WRITE",
        "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE NOT DEFERRABLE",
        "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL nonsense",  # 42601
        "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ",  # 42601
        "SET SESSION CHARACTERISTICS AS TRANSACTION",  # 42601
        "SET SESSION CHARACTERISTICS TRANSACTION ISOLATION LEVEL SERIALIZABLE",  # 42601
        "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
        "SET TRANSACTION ISOLATION LEVEL bogus",  # 42601
        "BEGIN ISOLATION LEVEL SERIALIZABLE, READ WRITE",
        "COMMIT",
        "SHOW transaction_isolation",
    ],
    "show": [
        "SHOW standard_conforming_strings",
        "SHOW TimeZone",
        "SHOW timezone",
        "SHOW TIME ZONE",
        "SHOW DateStyle",
        "SHOW IntervalStyle",
        "SHOW client_encoding",
        "SHOW server_encoding",
        "SHOW integer_datetimes",
        "SHOW is_superuser",
        "SHOW extra_float_digits",
        "SHOW statement_timeout",
        "SHOW client_min_messages",
        "SHOW application_name",
        "SHOW max_identifier_length",
        "SHOW no_such_setting",  # 42704
        "SET no_such_setting = 1",  # 42704
        "RESET no_such_setting",  # 42704
        "SET server_version = '1'",  # 55P02
        "SET server_version_num = 1",  # 55P02
        "RESET server_version",  # 55P02
        "SET max_identifier_length = 10",  # 55P02
        "SET extra_float_digits = 'x'",  # 22023
        "SET standard_conforming_strings = on",
        "SELECT 1",
    ],
}

# Not comparable: the answer names the server's own user, database or build.
WEIR_ONLY = {"SHOW server_version_num"}


def _outcome(conn: psycopg.Connection, sql: str) -> tuple[Any, ...]:
    try:
        cur = conn.execute(sql)
    except psycopg.Error as e:
        return ("error", e.sqlstate)
    if cur.description is None:
        return ("command", cur.statusmessage)
    return ("rows", [(d.name, d.type_code) for d in cur.description], cur.fetchall(), cur.statusmessage)


@pytest.fixture(scope="module")
def pg_dsn(pg_server) -> str:  # noqa: ANN001, F811
    pg_server.create_database("session_details")
    return pg_server.dsn("session_details")


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_same_as_postgres(server: WeirServer, pg_dsn: str, name: str) -> None:
    with server.connect() as w, psycopg.connect(pg_dsn, autocommit=True) as p:
        for sql in SCRIPTS[name]:
            if sql in WEIR_ONLY:
                continue
            assert _outcome(w, sql) == _outcome(p, sql), sql


def test_set_local_outside_a_transaction_warns(server: WeirServer, pg_dsn: str) -> None:
    seen: dict[str, list[tuple[str | None, str | None]]] = {}
    for key, dsn in (("weir", server.dsn), ("pg", pg_dsn)):
        with psycopg.connect(dsn, autocommit=True) as c:
            notices: list[tuple[str | None, str | None]] = []
            c.add_notice_handler(lambda d: notices.append((d.severity_nonlocalized, d.sqlstate)))  # noqa: B023
            c.execute("SET LOCAL extra_float_digits = 2")
            c.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
            c.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE")  # no warning
            with c.transaction():
                c.execute("SET LOCAL extra_float_digits = 2")  # no warning inside a transaction block
            seen[key] = notices
    assert seen["weir"] == seen["pg"] == [("WARNING", "25P01")] * 2


def test_version_and_server_version_num(server: WeirServer) -> None:
    """weir reports PostgreSQL 15.4 (150004) everywhere: ParameterStatus, SHOW,
    current_setting, version(), pg_settings; PostgreSQL reports its own minor release."""
    with server.connect() as c:
        assert c.info.server_version == 150004
        assert c.info.parameter_status("server_version") == "15.4"
        assert c.execute("SHOW server_version_num").fetchall() == [("150004",)]
        assert c.execute("SHOW server_version").fetchall() == [("15.4",)]
        assert c.execute("SELECT current_setting('server_version_num'), current_setting('server_version')"
                         ).fetchall() == [("150004", "15.4")]
        version = c.execute("SELECT pg_catalog.version()").fetchone()[0]
        assert version.startswith("PostgreSQL 15.4 ") and "weir" in version


def test_current_database_and_user(server: WeirServer, pg_dsn: str) -> None:
    """The same columns and values for the connection's database and role; weir's are text
    (as Materialize's), PostgreSQL's are of type name."""
    sql = "SELECT current_database(), current_user, session_user, user, current_role, current_catalog"
    with server.connect() as w, psycopg.connect(pg_dsn, autocommit=True) as p:
        cw, cp = w.execute(sql), p.execute(sql)
        assert [d.name for d in cw.description] == [d.name for d in cp.description]
        assert cw.fetchall() == [("materialize",) * 6]
        assert cp.fetchall() == [("session_details",) + ("postgres",) * 4 + ("session_details",)]
        assert {d.type_code for d in cw.description} == {25}  # text
        assert w.execute("SHOW session_authorization").fetchall() == [("materialize",)]
        assert w.execute("SHOW SESSION AUTHORIZATION").fetchall() == [("materialize",)]


def test_isolation_levels_follow_materialize(server: WeirServer) -> None:
    """Every PostgreSQL level is accepted and runs as serializable (Materialize's mapping);
    the default is Materialize's strict serializable."""
    with server.connect() as c:
        assert c.execute("SHOW transaction_isolation").fetchall() == [("strict serializable",)]
        for level in ("READ UNCOMMITTED", "READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"):
            c.execute(f"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL {level}")
            assert c.execute("SHOW TRANSACTION ISOLATION LEVEL").fetchall() == [("serializable",)]
        c.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL STRICT SERIALIZABLE")
        assert c.execute("SHOW transaction_isolation").fetchall() == [("strict serializable",)]
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            c.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")


def test_standard_conforming_strings_stays_on(server: WeirServer) -> None:
    """pgjdbc and libpq read standard_conforming_strings from ParameterStatus: always on
    (Materialize's too); turning it off is refused with 22023, as Materialize refuses it."""
    with server.connect() as c:
        assert c.info.parameter_status("standard_conforming_strings") == "on"
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            c.execute("SET standard_conforming_strings = off")
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            c.execute("SELECT set_config('standard_conforming_strings', 'off', false)")
        assert c.execute(r"SELECT 'a\b', E'a\\b'").fetchall() == [("a\\b", "a\\b")]


def test_show_all(server: WeirServer, pg_dsn: str) -> None:
    """SHOW ALL has PostgreSQL's columns and lists weir's variables (as Materialize lists its
    own), each with the value SHOW gives."""
    with server.connect() as w, psycopg.connect(pg_dsn, autocommit=True) as p:
        cw, cp = w.execute("SHOW ALL"), p.execute("SHOW ALL")
        assert [(d.name, d.type_code) for d in cw.description] == [(d.name, d.type_code) for d in cp.description]
        assert cw.statusmessage == cp.statusmessage == "SHOW"
        rows = {r[0]: r[1] for r in cw.fetchall()}
        pg_rows = {r[0]: r[1] for r in cp.fetchall()}
        for name in ("server_version_num", "standard_conforming_strings", "TimeZone", "DateStyle",
                     "transaction_isolation", "application_name", "client_encoding", "cluster"):
            assert name in rows
            assert w.execute(f"SHOW {name}").fetchone()[0] == rows[name]
        for name in ("standard_conforming_strings", "TimeZone", "DateStyle", "client_encoding",
                     "integer_datetimes", "IntervalStyle", "max_identifier_length"):
            assert rows[name] == pg_rows[name], name


def test_show_after_set_config_in_extended_protocol(server: WeirServer) -> None:
    """Parse/Describe of a set_config() query changes nothing; executing it does."""
    with server.connect() as c:
        cur = c.cursor()
        cur.execute("SELECT set_config('application_name', %s, false)", ["ext_proto"], prepare=True)
        assert cur.fetchall() == [("ext_proto",)]
        assert c.execute("SHOW application_name").fetchall() == [("ext_proto",)]
        assert c.info.parameter_status("application_name") == "ext_proto"


# ---- psql ----------------------------------------------------------------------------

def _psql(psql_bin: str, dsn: str, *args: str, timeout: float = 60,
          check: bool = True) -> subprocess.CompletedProcess[str]:
    p = run_psql(psql_bin, dsn, *args, timeout=timeout)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def _normalized(out: str, dsn: str) -> str:
    """psql's output with the server's own database, user and port taken out."""
    fields = dict(kv.split("=", 1) for kv in dsn.split())
    out = out.replace(f'database "{fields["dbname"]}"', 'database "DB"').replace(f'user "{fields["user"]}"',
                                                                               'user "USER"')
    out = out.replace(f'port "{fields["port"]}"', 'port "PORT"')
    return re.sub(r"Time: \d+\.\d+ ms", "Time: T ms", out)


def test_psql_conninfo_expanded_and_timing(psql_bin: str, server: WeirServer, pg_dsn: str) -> None:
    args = ["-c", r"\conninfo", "-c", r"\x", "-c", "SELECT 1 AS a, 'two' AS b, NULL::text AS c",
            "-c", r"\x off", "-c", r"\timing on", "-c", "SELECT 42 AS answer", "-c", r"\timing off",
            "-c", "SELECT current_setting('standard_conforming_strings') AS scs"]
    outs = [_normalized(_psql(psql_bin, dsn, *args).stdout, dsn) for dsn in (server.dsn, pg_dsn)]
    assert outs[0] == outs[1]
    assert outs[0].startswith('You are connected to database "DB" as user "USER" on host "127.0.0.1" '
                              'at port "PORT".\nExpanded display is on.\n-[ RECORD 1 ]\na | 1\nb | two\nc | \n\n')
    assert "Timing is on.\n answer \n--------\n     42\n(1 row)\n\nTime: T ms\nTiming is off.\n" in outs[0]


def test_psql_watch(psql_bin: str, server: WeirServer, pg_dsn: str, tmp_path: Path) -> None:
    """psql 15's \\watch has an interval only: it runs until stopped; two outputs are enough."""
    script = tmp_path / "watch.sql"
    script.write_text("SELECT 7 AS seven, current_setting('TimeZone') AS tz \\watch 0.5\n")
    bodies = []
    for dsn in (server.dsn, pg_dsn):
        env = {**os.environ, "PAGER": "", "PSQL_PAGER": "", "PGTZ": "UTC"}
        proc = subprocess.Popen([psql_bin, "-X", dsn, "-f", str(script)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL)
        try:
            out, err = proc.communicate(timeout=4)
        except subprocess.TimeoutExpired:
            proc.terminate()
            out, err = proc.communicate(timeout=10)
        runs = re.findall(r"^\w{3} \w{3} +\d+ [\d:]+ \d{4} \(every 0\.5s\)\n\n(.*?\(1 row\)\n)", out, re.M | re.S)
        assert len(runs) >= 2, (out, err)
        assert "ERROR" not in err, err
        bodies.append(set(runs))
    assert bodies[0] == bodies[1] == {" seven | tz  \n-------+-----\n     7 | UTC\n(1 row)\n"}


# ---- pgjdbc --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def session_program(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return compile_program(tmp_path_factory, "WeirSession")


def test_pgjdbc_connection_and_validation(session_program: list[str], server: WeirServer, pg_dsn: str) -> None:
    pg = dict(kv.split("=", 1) for kv in pg_dsn.split())
    outputs = []
    for url, user in ((f"jdbc:postgresql://127.0.0.1:{server.sql_port}/materialize", "materialize"),
                      (f"jdbc:postgresql://{pg['host']}:{pg['port']}/{pg['dbname']}", pg["user"])):
        p = subprocess.run([*session_program, url, user], capture_output=True, text=True, timeout=180)
        assert p.returncode == 0, f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}"
        outputs.append(p.stdout.splitlines())
    weir, postgres = outputs
    assert weir == postgres
    for line in ("major=15", "valid=true", "select1=1", "scs=on", "backslash=a\\b|a\\b", "versionnum=true",
                 "set_config=jdbc-session", "application_name=jdbc-session", "isolation_after=8",
                 "unknown=42704", "after_discard=|1", "valid_end=true", "done"):
        assert line in weir
    # pgjdbc reads SHOW TRANSACTION ISOLATION LEVEL: weir's default, strict serializable, is no
    # level JDBC names, so it reports its own default, as it does for PostgreSQL's read committed
    assert "isolation=2" in weir
    assert weir.count("prepared=on") == 3


# ---- asyncpg -------------------------------------------------------------------------

def test_asyncpg_startup(server: WeirServer) -> None:
    asyncpg = pytest.importorskip("asyncpg")

    async def main() -> None:
        c = await asyncpg.connect(host="127.0.0.1", port=server.sql_port, user="materialize",
                                  database="materialize", timeout=30)
        try:
            assert c.get_server_version().major == 15
            assert await c.fetchval("SELECT current_setting('server_version_num')") == "150004"
            assert await c.fetchval("SELECT current_setting($1)", "standard_conforming_strings") == "on"
            row = await c.fetchrow("SELECT current_database(), current_user, session_user")
            assert tuple(row) == ("materialize",) * 3
            assert await c.fetchval("SELECT set_config('application_name', $1, false)", "apg") == "apg"
            assert await c.fetchval("SHOW application_name") == "apg"
            await c.execute("DISCARD ALL")
            assert await c.fetchval("SHOW application_name") == ""
            assert await c.fetchval("SELECT 1") == 1
        finally:
            await c.close(timeout=10)

    asyncio.run(asyncio.wait_for(main(), 120))
