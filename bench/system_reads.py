"""Catalog reads: in process (DuckDB in the coordinator) vs a Spark job on a replica (issue 14
part 4), and the in-process engine against the alternative considered (SQLite).

    .venv/bin/python bench/system_reads.py [--rounds 20] [--objects 50]

Starts one real `weir serve` (cluster quickstart, one replica of size '1' = Spark
local[1]), creates OBJECTS tables (3 columns each) and a few views, then times each query
of QUERIES through psycopg with `enable_system_reads_in_process` on and off, interleaved
(on, off, off, on, ...), ROUNDS times each, after one untimed warm-up each way. Prints the
medians, their ratio, and the load average at start and end (2 shared cores: compare
figures taken at a low load). Also times psql's ten describe commands together (\\dt,
\\d t, \\dv, \\dm, \\di, \\dn, \\l, \\du, \\dx, \\df) in one psql session.

Engines: the same catalog query (tables joined to schemas and columns) over the same
rows in process, DuckDB over Arrow tables vs Python's sqlite3 (rows inserted into an
in-memory database first, as each read would have to), median of 200 runs, for OBJECTS
and for 2000 tables.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402

from bench.common import load_avg, start_weir  # noqa: E402
from tests.integration.server import WeirServer  # noqa: E402

QUERIES = {
    "SHOW TABLES": "SHOW TABLES",
    "tables+schemas+columns": (
        "SELECT t.name, s.name, c.name, c.type FROM mz_catalog.mz_tables t "
        "JOIN mz_catalog.mz_schemas s ON t.schema_id = s.id JOIN mz_catalog.mz_columns c ON c.id = t.id "
        "WHERE s.name = 'public' ORDER BY t.name, c.position"),
    "count objects": "SELECT type, count(*) FROM mz_catalog.mz_objects GROUP BY type",
}


def _time(conn, sql: str) -> float:  # noqa: ANN001
    t0 = time.perf_counter()
    conn.execute(sql).fetchall()
    return time.perf_counter() - t0


def end_to_end(rounds: int, objects: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        weir = start_weir(WeirServer(Path(tmp)))
        try:
            with weir.connect() as c:
                for i in range(objects):
                    c.execute(f"CREATE TABLE bench_t{i} (a int, b text, c timestamptz)")
                for i in range(5):
                    c.execute(f"CREATE VIEW bench_v{i} AS SELECT a FROM bench_t{i}")
            with weir.connect() as on, weir.connect() as off:
                off.execute("SET enable_system_reads_in_process = off")
                print(f"{'query':<26} {'in process':>12} {'Spark job':>12} {'ratio':>8}")
                _psql_describe(weir)
                for label, sql in QUERIES.items():
                    _time(on, sql), _time(off, sql)  # warm-up
                    times: dict[str, list[float]] = {"on": [], "off": []}
                    for r in range(rounds):
                        order = ("on", "off") if r % 2 == 0 else ("off", "on")
                        for way in order:
                            times[way].append(_time(on if way == "on" else off, sql))
                    a, b = statistics.median(times["on"]), statistics.median(times["off"])
                    print(f"{label:<26} {a * 1000:>9.1f} ms {b * 1000:>9.1f} ms {b / a:>7.1f}x", flush=True)
        finally:
            weir.stop()


PSQL = [r"\dt", r"\d bench_t0", r"\dv", r"\dm", r"\di", r"\dn", r"\l", r"\du", r"\dx", r"\df"]


def _psql_describe(weir: WeirServer) -> None:
    """psql's describe commands, all in one psql session (the issue's 'all of them
    together'), in process: median of 10 runs after a warm-up."""
    import shutil
    import subprocess

    psql = shutil.which("psql")
    if psql is None:
        print("psql describe: psql not installed")
        return
    args = [psql, "-X", "-q", weir.dsn]
    for c in PSQL:
        args += ["-c", c]
    runs = []
    for i in range(11):
        t0 = time.perf_counter()
        subprocess.run(args, capture_output=True, check=True, env={"PAGER": "", "PATH": "/usr/bin:/bin"})
        if i:
            runs.append(time.perf_counter() - t0)
    print(f"psql {' '.join(PSQL)}: {statistics.median(runs) * 1000:.0f} ms together (median of 10, "
          "psql's start included)", flush=True)


def engines(objects: int) -> None:
    import duckdb

    tables = pa.table({"id": [f"u{i}" for i in range(objects)], "schema_id": ["u1"] * objects,
                       "name": [f"bench_t{i}" for i in range(objects)]})
    schemas = pa.table({"id": ["u1", "u2"], "name": ["public", "other"]})
    columns = pa.table({"id": [f"u{i}" for i in range(objects) for _ in range(3)],
                        "name": [n for _ in range(objects) for n in ("a", "b", "c")],
                        "position": [p for _ in range(objects) for p in (1, 2, 3)]})
    sql = ("SELECT t.name, s.name, c.name FROM tables t JOIN schemas s ON t.schema_id = s.id "
           "JOIN columns c ON c.id = t.id WHERE s.name = 'public' ORDER BY t.name, c.position")
    db = duckdb.connect()

    def with_duckdb() -> None:
        cur = db.cursor()
        for name, t in (("tables", tables), ("schemas", schemas), ("columns", columns)):
            cur.register(name, t)
        cur.execute(sql).to_arrow_table()
        cur.close()

    def with_sqlite() -> None:
        con = sqlite3.connect(":memory:")
        for name, t in (("tables", tables), ("schemas", schemas), ("columns", columns)):
            cols = t.column_names
            con.execute(f"CREATE TABLE {name} ({', '.join(cols)})")
            con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * len(cols))})",
                            zip(*(t.column(c).to_pylist() for c in cols), strict=True))
        con.execute(sql).fetchall()
        con.close()

    for label, fn in (("DuckDB over Arrow", with_duckdb), ("sqlite3 (load + query)", with_sqlite)):
        fn()
        runs = []
        for _ in range(200):
            t0 = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t0)
        print(f"engine {label:<24} {statistics.median(runs) * 1000:8.2f} ms (median of 200)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--objects", type=int, default=50)
    args = ap.parse_args()
    print(f"load average at start: {load_avg()}")
    for n in (args.objects, 2000):
        print(f"{n} tables:")
        engines(n)
    end_to_end(args.rounds, args.objects)
    print(f"load average at end: {load_avg()}")


if __name__ == "__main__":
    main()
