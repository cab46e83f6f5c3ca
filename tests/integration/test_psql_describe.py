"""psql's describe commands (issue 14): the real psql against weir and against the real
PostgreSQL 15 with the same objects; the outputs are compared after normalising only what
must differ (an index's access method, which is an arrangement in weir, as in Materialize;
the objects have the same owner's name in both). Each command's catalog queries run in process, not on a replica."""

from __future__ import annotations

import difflib
import subprocess

import psycopg
import pytest

from tests.integration.psql_client import run_psql
from tests.integration.server import WeirServer
from tests.pg_server import pg_server  # noqa: F401

OBJECTS = [
    "CREATE SCHEMA psqld",
    "CREATE TABLE psqld.t (id int NOT NULL, name varchar(20), amount numeric(10,2), ts timestamp, "
    "at timestamptz, ok boolean, note text, f double precision, b bigint)",
    "CREATE TABLE psqld.u (k text)",
    "CREATE VIEW psqld.v AS SELECT id, name FROM psqld.t",
    "CREATE INDEX t_idx ON psqld.t (id)",
]

SAME = [r"\dt", r"\d psqld.t", r"\d t", r"\dv", r"\di", r"\df", r"\d psqld.v", r"\d u"]


def _psql(psql_bin: str, dsn: str, *commands: str) -> subprocess.CompletedProcess[str]:
    args = ["-c", "SET search_path TO psqld"]
    for c in commands:
        args += ["-c", c]
    return run_psql(psql_bin, dsn, *args)


@pytest.fixture(scope="module")
def both(server: WeirServer, pg_server):  # noqa: ANN201, F811
    pg_server.create_database("psqld")
    with server.connect() as w, psycopg.connect(pg_server.dsn("psqld"), autocommit=True) as p:
        for sql in OBJECTS:
            w.execute(sql)
            p.execute(sql)
        w.execute("CREATE MATERIALIZED VIEW psqld.mv AS SELECT count(*) AS n FROM psqld.t")
        try:  # the same owner's name in both
            p.execute("CREATE ROLE materialize")
        except psycopg.errors.DuplicateObject:
            pass
        for kind, name in (("SCHEMA", "psqld"), ("TABLE", "psqld.t"), ("TABLE", "psqld.u"), ("VIEW", "psqld.v")):
            p.execute(f"ALTER {kind} {name} OWNER TO materialize")
    return server.dsn, pg_server.dsn("psqld")


def _normalised(out: str) -> str:
    return out.replace(" arrangement (", " btree (")


@pytest.mark.parametrize("command", SAME)
def test_describe_as_postgres(psql_bin: str, both, command: str) -> None:  # noqa: ANN001
    weir_dsn, pg_dsn = both
    w, p = _psql(psql_bin, weir_dsn, command), _psql(psql_bin, pg_dsn, command)
    assert p.returncode == 0, p.stderr
    assert w.returncode == 0, w.stderr
    got, expected = _normalised(w.stdout), _normalised(p.stdout)
    assert got == expected, "\n".join(difflib.unified_diff(expected.splitlines(), got.splitlines(),
                                                           "postgres", "weir", lineterm=""))


# psql's `+` variants, compared in psql's unaligned format with what weir has no figure for
# left out: a relation's size (weir does not track the bytes on disk: NULL, where PostgreSQL
# prints "8192 bytes"), an access method (heap and btree in PostgreSQL; weir's tables have
# none and its indexes are arrangements, as in Materialize) and a view's definition (weir
# prints the view's SQL as stored, PostgreSQL its own deparsing of the view)
PLUS = [r"\dt+", r"\d+ t", r"\dv+", r"\di+", r"\d+ psqld.v", r"\dn+ psqld"]


def _without_sizes(out: str) -> str:
    lines, blank, definition = [], [], False
    for line in out.splitlines():
        fields = line.split("|")
        if "Name" in fields or "Column" in fields:  # a table's header: the columns weir has no figure for
            blank = [fields.index(c) for c in ("Size", "Access method") if c in fields]
        else:
            for k in blank:
                if k < len(fields):
                    fields[k] = ""
        if line == "View definition:":
            definition = True
        elif definition and not line.startswith("("):
            continue
        if line != "Access method: heap":
            lines.append("|".join(fields))
    return "\n".join(lines)


@pytest.mark.parametrize("command", PLUS)
def test_describe_plus_as_postgres(psql_bin: str, both, command: str) -> None:  # noqa: ANN001
    weir_dsn, pg_dsn = both
    for dsn in both:  # an explicit ACL in both (PostgreSQL's NULL one prints as nothing)
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("GRANT USAGE ON SCHEMA psqld TO PUBLIC")
    w = _psql(psql_bin, weir_dsn, r"\pset format unaligned", command)
    p = _psql(psql_bin, pg_dsn, r"\pset format unaligned", command)
    assert p.returncode == 0, p.stderr
    assert w.returncode == 0, w.stderr
    got, expected = _without_sizes(_normalised(w.stdout)), _without_sizes(_normalised(p.stdout))
    assert got == expected, "\n".join(difflib.unified_diff(expected.splitlines(), got.splitlines(),
                                                           "postgres", "weir", lineterm=""))
    if command == r"\d+ psqld.v":
        assert "View definition:\nSELECT id, name FROM " in w.stdout


def test_materialize_only_commands(psql_bin: str, both) -> None:  # noqa: ANN001
    """\\dm lists materialized views as Materialize shows them; \\dn, \\l, \\du, \\dx run."""
    weir_dsn, _ = both
    out = _psql(psql_bin, weir_dsn, r"\dm")
    assert out.returncode == 0, out.stderr
    assert " psqld  | mv   | materialized view | materialize\n" in out.stdout
    for command, expect in ((r"\dn", " psqld "), (r"\l", " materialize "), (r"\du", " materialize "),
                            (r"\dx", "List of installed extensions"), (r"\l+", "| pg_default |"),
                            (r"\db", " pg_default | mz_system |"), (r"\db+", " pg_global  | mz_system |"),
                            (r"\du+", " materialize "), (r"\dm+", " mv   | materialized view |"),
                            (r"\df+ abs", "List of functions")):
        out = _psql(psql_bin, weir_dsn, command)
        assert out.returncode == 0, (command, out.stderr)
        assert expect in out.stdout, (command, out.stdout)


def test_describe_runs_in_process(psql_bin: str, server: WeirServer, both) -> None:  # noqa: ANN001
    weir_dsn, _ = both
    commands = [*SAME, r"\dm", r"\dn", r"\l", r"\du", r"\dx"]
    _psql(psql_bin, weir_dsn, *commands)  # plans and contents cached, as in a session's use
    before = {s: server.metric("weir_reads_total", strategy=s) for s in ("in-process", "standard")}
    out = _psql(psql_bin, weir_dsn, *commands)
    assert out.returncode == 0, out.stderr
    ran = {s: server.metric("weir_reads_total", strategy=s) - before[s] for s in before}
    assert ran["standard"] == 0, f"{ran['standard']} catalog queries of psql ran on a replica"
    assert ran["in-process"] >= len(commands)
