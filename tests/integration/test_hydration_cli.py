"""`weir hydration` against a real server (issue 13): the command is a SQL client run as
its own process, as a user would run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.server import WeirServer, free_port

ROOT = Path(__file__).resolve().parents[2]


def _hydration(server_port: int, *argv: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")  # wide enough that nothing is cut
    return subprocess.run([sys.executable, "-m", "weir.cli", "hydration", "--port", str(server_port), *argv],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


def _lines(out: str, name: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.split()[:1] == [name]]


@pytest.fixture(scope="module")
def view(server: WeirServer) -> str:
    with server.connect() as c:
        c.execute("CREATE TABLE hydcli_t (k int, v int)")
        c.execute("INSERT INTO hydcli_t SELECT g % 10, g FROM generate_series(1, 1000) AS g")
        c.execute("CREATE MATERIALIZED VIEW hydcli_mv AS SELECT k, sum(v) AS s FROM hydcli_t GROUP BY k")
    return "hydcli_mv"


def test_hydration_lists_the_view_and_watch_waits_until_it_hydrated(server: WeirServer, view: str) -> None:
    watched = _hydration(server.sql_port, "--watch", "--interval", "0.5", view)
    assert watched.returncode == 0, watched.stderr
    (line,) = _lines(watched.stdout, view)  # one replica: quickstart.r1
    assert "quickstart.r1" in line and "hydrated" in line.split() and "hydrating" not in line
    assert "took " in line
    assert [ln for ln in watched.stdout.splitlines() if ln.startswith(" ")]  # its plan nodes

    once = _hydration(server.sql_port)
    assert once.returncode == 0, once.stderr
    (line,) = _lines(once.stdout, view)
    assert "quickstart.r1" in line and "hydrated" in line.split()
    assert "hydrated (" in once.stdout  # the summary line

    with server.connect() as c:
        (object_id,) = c.execute("SELECT id FROM mz_catalog.mz_objects WHERE name = %s", [view]).fetchone()
    for name in ("public." + view, object_id):  # schema-qualified, or by id
        named = _hydration(server.sql_port, name)
        assert named.returncode == 0 and _lines(named.stdout, view), named


def test_hydration_fails_clearly(server: WeirServer, view: str) -> None:
    missing = _hydration(server.sql_port, "--watch", "no_such_view")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr == "weir hydration: no index or materialized view named 'no_such_view'\n"
    unreachable = _hydration(free_port())
    assert unreachable.returncode == 1 and unreachable.stdout == ""
    assert unreachable.stderr.startswith("weir hydration: cannot reach weir at 127.0.0.1:")
    assert unreachable.stderr.count("\n") == 1


def test_hydration_names_the_plan_nodes_and_counts_rows(server: WeirServer, view: str) -> None:
    """Needs mz_internal.mz_compute_plan_nodes and mz_compute_hydration_progress (issue 13's
    server side): the named view's plan nodes by operator name, with row counts."""
    with server.connect() as c:
        (object_id,) = c.execute("SELECT id FROM mz_catalog.mz_objects WHERE name = %s", [view]).fetchone()
        operators = {op for (op,) in c.execute(
            "SELECT operator FROM mz_internal.mz_compute_plan_nodes WHERE object_id = %s", [object_id])}
        progress = c.execute("SELECT count(*) FROM mz_internal.mz_compute_hydration_progress "
                             "WHERE object_id = %s", [object_id]).fetchone()[0]
    assert operators and progress
    out = _hydration(server.sql_port, view)
    assert out.returncode == 0, out.stderr
    assert "note: no " not in out.stdout  # every relation there
    nodes = [ln.strip() for ln in out.stdout.splitlines() if ln.startswith(" ")]
    for op in operators:
        assert any(ln.startswith(op) for ln in nodes), (op, out.stdout)
    assert any(" / " in ln for ln in nodes), out.stdout  # rows processed / expected
