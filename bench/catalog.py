"""Catalog reads against a real PostgreSQL 15, side by side in one run (issue 14's benchmark).

    .venv/bin/python bench/catalog.py [--rounds 200] [--objects 50]

Starts one real `weir serve` (cluster quickstart, one replica of size '1') and one real
PostgreSQL 15 (Debian's), creates the same OBJECTS tables (3 columns each) and five views
in both, then times, ROUNDS times each, alternating between the two servers:

- `SHOW TABLES` (PostgreSQL has no SHOW TABLES: the same list from pg_class);
- `SELECT * FROM mz_catalog.mz_tables` (PostgreSQL: `SELECT * FROM pg_catalog.pg_tables`);
- psql's `\\d t`: every query psql 15 sends for it (captured with `psql -E` from each
  server, so each with its own OIDs), replayed one after another over one connection with
  the simple query protocol, as psql sends them;
- the same for each of the OBJECTS tables in turn (`\\d bench_t0`, `\\d bench_t1`, ...): a
  table's queries come back only after every other table's, so what weir keeps for a
  repeated query (prepared statements, answers over unchanged contents) is gone by then
  (with 50 tables or more);
- psql's `\\d` of a table created just before it (the CREATE not timed; 30 rounds): queries
  neither server has seen, right after a DDL;
- SQLAlchemy 2's `inspect(conn).get_columns(t)` (a fresh Inspector each time: no cache).

Prints p50 and p99 of each on both servers, their ratio, and the load average at start and
end (2 shared cores: compare figures taken at a low load). Goals (issue 14): SHOW TABLES
p50 < 5 ms, `\\d t` all queries together < 50 ms, each within 10x of PostgreSQL.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
import sqlalchemy  # noqa: E402

from bench.common import load_avg, start_weir  # noqa: E402
from tests.integration.server import WeirServer  # noqa: E402
from tests.pg_server import start_pg_server  # noqa: E402

TABLE = "bench_t0"
QUERIES = {
    "SHOW TABLES": ("SHOW TABLES",
                    "SELECT c.relname AS name FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                    "ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY 1"),
    "SELECT * FROM mz_tables": ("SELECT * FROM mz_catalog.mz_tables", "SELECT * FROM pg_catalog.pg_tables"),
}
QUERY_MARK = re.compile(r"\*{9} QUERY \*{10}\n(.*?)\n\*{26}", re.S)


def _setup(conn: psycopg.Connection, objects: int) -> None:
    for i in range(objects):
        conn.execute(f"CREATE TABLE bench_t{i} (a int, b text, c timestamptz)")
    for i in range(5):
        conn.execute(f"CREATE VIEW bench_v{i} AS SELECT a FROM bench_t{i}")


def _psql_queries(dsn: str, table: str = TABLE) -> list[str]:
    """The queries psql 15 sends for `\\d table`, as it sent them to this server."""
    psql = shutil.which("psql")
    assert psql is not None, "psql (Debian's postgresql-client) is needed"
    out = subprocess.run([psql, "-X", "-E", dsn, "-c", rf"\d {table}"], capture_output=True, text=True,
                         check=True, env={**os.environ, "PAGER": ""}).stdout
    found = QUERY_MARK.findall(out)
    assert found, out
    return found


def _percentiles(runs: list[float]) -> tuple[float, float]:
    runs = sorted(runs)
    return statistics.median(runs), runs[min(len(runs) - 1, round(0.99 * (len(runs) - 1)))]


def _measure(label: str, weir: Callable[[], object], pg: Callable[[], object], rounds: int) -> None:
    weir(), pg(), weir(), pg()  # warm-up: plans cached, catalogs loaded
    times: dict[str, list[float]] = {"weir": [], "pg": []}
    for r in range(rounds):
        for way in (("weir", "pg") if r % 2 == 0 else ("pg", "weir")):
            fn = weir if way == "weir" else pg
            t0 = time.perf_counter()
            fn()
            times[way].append(time.perf_counter() - t0)
    (w50, w99), (p50, p99) = _percentiles(times["weir"]), _percentiles(times["pg"])
    print(f"{label:<28} {w50 * 1e3:8.2f} {w99 * 1e3:8.2f} {p50 * 1e3:8.2f} {p99 * 1e3:8.2f} "
          f"{w50 / p50:8.1f}x", flush=True)


FRESH_ROUNDS = 30


def _measure_new_tables(w: psycopg.Connection, p: psycopg.Connection, wd: list[str], pd: list[str],
                        rounds: int) -> None:
    """psql's `\\d` of a table created just before (not timed): its oid looked up by name,
    then the queries for TABLE with the new table's name and oid, each a text neither
    server has seen, right after a DDL."""
    times: dict[str, list[float]] = {"weir": [], "pg": []}
    for r in range(rounds):
        for way, conn, queries in (("weir", w, wd), ("pg", p, pd)):
            name = f"bench_new{r}"
            old_oid = conn.execute(f"SELECT '{TABLE}'::regclass::oid").fetchone()[0]
            conn.execute(f"CREATE TABLE {name} (a int, b text, c timestamptz)")
            t0 = time.perf_counter()  # from the name to its oid (what psql's first query does) on
            new_oid = conn.execute(f"SELECT '{name}'::regclass::oid").fetchone()[0]
            fresh = [q.replace(f"'{old_oid}'", f"'{new_oid}'").replace(TABLE, name) for q in queries]
            for q in fresh:
                conn.execute(q).fetchall()
            times[way].append(time.perf_counter() - t0)
    (w50, w99), (p50, p99) = _percentiles(times["weir"]), _percentiles(times["pg"])
    label = r"psql \d, a table just made"
    print(f"{label:<28} {w50 * 1e3:8.2f} {w99 * 1e3:8.2f} {p50 * 1e3:8.2f} "
          f"{p99 * 1e3:8.2f} {w50 / p50:8.1f}x  ({rounds} rounds)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--objects", type=int, default=50)
    args = ap.parse_args()
    print(f"load average at start: {load_avg()}")
    pg = start_pg_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            weir = start_weir(WeirServer(Path(tmp)))
            try:
                pg_url = pg.create_database("bench")
                run(weir.dsn, pg.dsn("bench"), weir.sql_port, pg_url, args)
            finally:
                weir.stop()
    finally:
        pg.stop()
    print(f"load average at end: {load_avg()}")


def run(weir_dsn: str, pg_dsn: str, weir_port: int, pg_url: str, args: argparse.Namespace) -> None:
    with psycopg.connect(weir_dsn, autocommit=True) as w, psycopg.connect(pg_dsn, autocommit=True) as p:
        _setup(w, args.objects)
        _setup(p, args.objects)
    w = psycopg.connect(weir_dsn, autocommit=True, cursor_factory=psycopg.ClientCursor)
    p = psycopg.connect(pg_dsn, autocommit=True, cursor_factory=psycopg.ClientCursor)
    weir_engine = sqlalchemy.create_engine(
        f"postgresql+psycopg://materialize@127.0.0.1:{weir_port}/materialize")
    pg_engine = sqlalchemy.create_engine(pg_url)
    try:
        print(f"{args.objects} tables, 5 views; {args.rounds} rounds, alternating; milliseconds")
        print(f"{'':<28} {'weir p50':>8} {'p99':>8} {'PG p50':>8} {'p99':>8} {'ratio':>9}")
        for label, (wq, pq) in QUERIES.items():
            _measure(label, lambda wq=wq: w.execute(wq).fetchall(), lambda pq=pq: p.execute(pq).fetchall(),
                     args.rounds)
        wd, pd = _psql_queries(weir_dsn), _psql_queries(pg_dsn)

        def describe(conn: psycopg.Connection, queries: list[str]) -> None:
            for q in queries:
                conn.execute(q).fetchall()

        _measure(rf"psql \d t ({len(wd)} queries)", lambda: describe(w, wd), lambda: describe(p, pd),
                 args.rounds)
        tables = [f"bench_t{i}" for i in range(args.objects)]
        each_w = [_psql_queries(weir_dsn, t) for t in tables]
        each_p = [_psql_queries(pg_dsn, t) for t in tables]
        turn = {"weir": 0, "pg": 0}

        def in_turn(way: str, conn: psycopg.Connection, each: list[list[str]]) -> None:
            describe(conn, each[turn[way] % len(each)])
            turn[way] += 1

        _measure(r"psql \d, tables in turn", lambda: in_turn("weir", w, each_w),
                 lambda: in_turn("pg", p, each_p), args.rounds)
        _measure_new_tables(w, p, wd, pd, min(args.rounds, FRESH_ROUNDS))
        with weir_engine.connect() as wc, pg_engine.connect() as pc:
            _measure("SQLAlchemy get_columns", lambda: sqlalchemy.inspect(wc).get_columns(TABLE),
                     lambda: sqlalchemy.inspect(pc).get_columns(TABLE), args.rounds)
    finally:
        w.close()
        p.close()
        weir_engine.dispose()
        pg_engine.dispose()


if __name__ == "__main__":
    main()
