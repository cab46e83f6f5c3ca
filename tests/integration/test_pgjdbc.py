"""pgjdbc (the PostgreSQL JDBC driver) against a real weir server with a real Spark
replica: java/WeirJdbc.java is compiled with javac against Debian's postgresql.jar
(libpostgresql-jdbc-java) and run; it prints what it saw, which this test checks.

pgjdbc sends SET extra_float_digits / application_name at startup, uses the extended
protocol with named server-side statements (prepareThreshold=1), binary results for
prepared statements, and Execute with a row limit for a fetch size inside a transaction.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.integration.java_client import compile_program
from tests.integration.server import WeirServer


@pytest.fixture(scope="module")
def jdbc_program(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return compile_program(tmp_path_factory, "WeirJdbc")


def test_pgjdbc_end_to_end(jdbc_program: list[str], server: WeirServer) -> None:
    url = f"jdbc:postgresql://127.0.0.1:{server.sql_port}/materialize"
    p = subprocess.run([*jdbc_program, url, "jd_t"], capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    lines = p.stdout.splitlines()
    assert lines[0] == "product=PostgreSQL 15"
    # the startup SETs pgjdbc sent took effect
    assert "application_name=weir-jdbc-test" in lines
    assert "extra_float_digits=3" in lines
    assert lines.count("inserted=1") == 5
    assert "batch=2,1,1" in lines
    assert "columns=id:int4 name:text score:float8 ok:bool ts:timestamp n:numeric big:int8" in lines
    rows = [line for line in lines if line.startswith("row=")]
    assert rows == [
        "row=1|name 1|1.25|true|2024-01-01 10:20:30.123456|1235.50|10000000000",
        "row=2|name 2|2.5|false|2024-01-02 10:20:30.123456|1236.50|20000000000",
        "row=3|name 3|NULL|true|2024-01-03 10:20:30.123456|1237.50|30000000000",
        "row=4|name 4|5.0|false|2024-01-04 10:20:30.123456|1238.50|40000000000",
        "row=5|name 5|6.25|true|2024-01-05 10:20:30.123456|1239.50|50000000000",
    ]
    # the named statement executed again (binary results from the second run on)
    assert [line for line in lines if line.startswith("round=")] == [
        "round=0 rows=5", "round=1 rows=5", "round=2 rows=5"]
    assert "like=2" in lines
    assert "error=22012 ERROR: division by zero" in lines
    assert "error=42P01" in lines
    assert "tx=1" in lines
    assert "txerror=22012" in lines
    assert "aborted=25P02" in lines
    # setFetchSize(2) in a transaction: Execute(max_rows=2) / PortalSuspended until done
    assert "fetched=1,2,3,4,5,10,11,101," in lines
    assert "no error?" not in lines
    assert lines[-1] == "done"
