"""psql (libpq, the simple query protocol) scripted through subprocess against a real
weir server with a real Spark replica."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.integration.psql_client import run_psql
from tests.integration.server import WeirServer

WALKTHROUGH = """\
CREATE TABLE ps_walk (id int, name text, score double precision, ok boolean);
INSERT INTO ps_walk VALUES (1, 'a', 1.5, true), (2, 'b', NULL, false);
UPDATE ps_walk SET score = 2.5 WHERE id = 2;
DELETE FROM ps_walk WHERE id = 1;
SELECT name, score FROM ps_walk WHERE ok = false;
SELECT mz_now();
SHOW TABLES;
SHOW CLUSTERS;
SHOW CLUSTER REPLICAS;
INSERT INTO ps_walk VALUES (3, E'tab\\there', 0.25, NULL), (4, NULL, -1, true);
COPY (SELECT id, name, score, ok FROM ps_walk ORDER BY id) TO STDOUT;
COPY ps_walk (id, ok) TO STDOUT;
"""


def psql(psql_bin: str, server: WeirServer, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_psql(psql_bin, server.dsn, *args, timeout=timeout)


def test_walkthrough_script(psql_bin: str, server: WeirServer, tmp_path: Path) -> None:
    script = tmp_path / "walk.sql"
    script.write_text(WALKTHROUGH)
    p = psql(psql_bin, server, "-f", str(script))
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    out = p.stdout
    for tag in ("CREATE TABLE", "INSERT 0 2", "UPDATE 1", "DELETE 1"):
        assert f"{tag}\n" in out
    assert (" name | score \n"
            "------+-------\n"
            " b    |   2.5\n"
            "(1 row)\n") in out
    m = re.search(r" +mz_now +\n-+\n +(\d+)\n\(1 row\)\n", out)
    assert m is not None, out
    assert int(m.group(1)) > 1_700_000_000_000
    tables = re.search(r" +name +\| comment \n(?:.*\n)*?\((\d+) rows?\)\n", out)
    assert tables is not None and " ps_walk " in tables.group(0), out
    assert re.search(r"\n quickstart \| r1 \(1\) +\| +\n\(1 row\)\n", out), out
    assert re.search(r" +cluster +\| replica \| size \| ready \| comment \n-[-+]+\n"
                     r" quickstart \| r1 +\| 1 +\| t +\| +\n\(1 row\)\n", out), out
    # COPY TO STDOUT: text format, tab separated, \N for NULL, escapes
    assert "2\tb\t2.5\tf\n3\ttab\\there\t0.25\t\\N\n4\t\\N\t-1\tt\n" in out
    copy2 = out.split("4\t\\N\t-1\tt\n", 1)[1]
    assert sorted(copy2.splitlines()) == ["2\tf", "3\t\\N", "4\tt"]


def test_multi_statement_command(psql_bin: str, server: WeirServer) -> None:
    # one -c string is one Query message: every result is printed, in order
    p = psql(psql_bin, server, "-c",
             "CREATE TABLE ps_multi (x int); INSERT INTO ps_multi VALUES (1), (2); "
             "SELECT 1 AS a; SELECT x, 'v' || x AS y FROM ps_multi ORDER BY x")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("CREATE TABLE\nINSERT 0 2\n")
    assert " a \n---\n 1\n(1 row)\n" in p.stdout
    assert " x | y  \n---+----\n 1 | v1\n 2 | v2\n(2 rows)\n" in p.stdout
    # several -c options, unaligned tuples-only output
    p = psql(psql_bin, server, "-At", "-c", "SELECT 1, 'a', true, NULL::text",
             "-c", "SELECT count(*) FROM ps_multi", "-c", "SELECT 1 WHERE false")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "1|a|t|\n2\n"


def test_errors_and_on_error_stop(psql_bin: str, server: WeirServer, tmp_path: Path) -> None:
    p = psql(psql_bin, server, "-c", "SELECT 1/0")
    assert p.returncode == 1
    assert p.stdout == ""
    assert p.stderr == "ERROR:  division by zero\n"
    # VERBOSITY verbose shows the SQLSTATE
    p = psql(psql_bin, server, "-v", "VERBOSITY=verbose", "-c", "SELECT * FROM ps_nope")
    assert p.returncode == 1
    assert p.stderr.startswith("ERROR:  42P01: ")
    # a script stops at its first error with ON_ERROR_STOP (exit code 3) ...
    script = tmp_path / "err.sql"
    script.write_text("SELECT 1 AS one;\nSELECT 1/0;\nSELECT 2 AS two;\n")
    p = psql(psql_bin, server, "-f", str(script))
    assert p.returncode == 3
    assert " one \n-----\n   1\n(1 row)\n" in p.stdout and "two" not in p.stdout
    assert p.stderr == f"psql:{script}:2: ERROR:  division by zero\n"
    # ... and goes on without it
    p = subprocess.run([psql_bin, "-X", server.dsn, "-f", str(script)], capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 0
    assert " one " in p.stdout and " two \n-----\n   2\n(1 row)\n" in p.stdout
    assert "ERROR:  division by zero" in p.stderr
    # an error inside a -c multi-statement string skips the rest of it
    p = psql(psql_bin, server, "-c", "SELECT 1 AS first; SELECT 1/0; SELECT 3 AS third")
    assert p.returncode == 1
    assert "third" not in p.stdout
    assert "ERROR:  division by zero" in p.stderr


def test_transaction_in_script(psql_bin: str, server: WeirServer, tmp_path: Path) -> None:
    script = tmp_path / "tx.sql"
    script.write_text("CREATE TABLE ps_tx (x int);\n"
                      "BEGIN;\nINSERT INTO ps_tx VALUES (1);\nROLLBACK;\n"
                      "BEGIN;\nINSERT INTO ps_tx VALUES (2);\nINSERT INTO ps_tx VALUES (3);\nCOMMIT;\n"
                      "\\set ON_ERROR_STOP 0\n"
                      "BEGIN;\nSELECT 1/0;\nSELECT 1;\nROLLBACK;\n"
                      "\\set ON_ERROR_STOP 1\n"
                      "SELECT string_agg(x::text, ',' ORDER BY x) AS xs FROM ps_tx;\n")
    p = psql(psql_bin, server, "-f", str(script))
    assert p.returncode == 0, p.stderr
    assert "BEGIN\nINSERT 0 1\nROLLBACK\nBEGIN\nINSERT 0 1\nINSERT 0 1\nCOMMIT\n" in p.stdout
    assert " xs  \n-----\n 2,3\n(1 row)\n" in p.stdout
    assert "ERROR:  division by zero" in p.stderr
    assert "ERROR:  current transaction is aborted, commands ignored until end of transaction block" in p.stderr
