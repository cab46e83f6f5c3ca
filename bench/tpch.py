"""TPC-H benchmark: the cost of operator hydration status tracking (issue 13), and the answers.

    .venv/bin/python bench/tpch.py [--scale 0.01] [--rounds 2] [--queries 1,3,5]

Starts one real `weir serve` (tests/integration/server.py; cluster quickstart, one replica
of size '1' = Spark local[1]) in a temp dir and creates `CREATE SOURCE tpch FROM LOAD
GENERATOR TPCH (SCALE FACTOR s) FOR ALL TABLES`; waits until its eight tables have data and
exports them (`SELECT *` through psycopg) into Parquet files with the same column types.

Each TPC-H query (bench/tpch_queries.py: the 22 queries as PostgreSQL SQL, the spec's
validation parameters) first runs once as a SELECT, untimed: a warm-up that also finds what
weir refuses. A query refused with SQLSTATE 0A000 is retried in an equivalent formulation
(bench/tpch_queries.REWRITES), and if none runs it is reported as "refused: <message>".
Then ROUNDS rounds, in each of which every query runs with
`enable_compute_operator_hydration_status_logging` on and off (ALTER SYSTEM as superuser
materialize), the order alternating query by query (on,off,off,on,...), measuring:

  select  the SELECT end to end through psycopg;
  mv      CREATE MATERIALIZED VIEW qN AS <query> -> mz_internal.mz_compute_hydration_statuses
          says hydrated (polled every 50 ms; the controller's own hydration_time is printed
          too); then DROP. In the first round the view's contents are read before the DROP.

Then weir is stopped and a plain PySpark `local[1]` session (weir's replica settings) runs
each original query (sqlglot postgres -> spark) over the exported Parquet files; every
weir answer (each SELECT, the views' contents) must equal it, order-insensitively, exactly
(numeric tolerance only for doubles).

Prints every measurement, per query the median on/off and their ratio, the overall ratio
(geometric mean of the per-query ratios; total time on / off), whether the goal (on/off
<= 1.01) is met, and the load average at start and end: the machine has 2 shared cores,
compare figures taken at a low load average. Exit status 1 if any answer differed.
"""

from __future__ import annotations

import argparse
import math
import shutil
import signal
import statistics
import sys
import tempfile
import time
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from bench.common import load_avg, start_weir  # noqa: E402
from bench.tpch_queries import QUERIES, REWRITES  # noqa: E402
from tests.integration.server import WeirServer  # noqa: E402

TABLES = ("region", "nation", "supplier", "part", "partsupp", "customer", "orders", "lineitem")
VAR = "enable_compute_operator_hydration_status_logging"
GOAL = 1.01
KINDS = ("select", "mv")
Rows = list[tuple[Any, ...]]


class Query:
    """One TPC-H query: what weir runs for it and everything measured."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.sql: str | None = QUERIES[n]  # None: refused (or failed)
        self.note = ""  # refused / rewritten / error, for the report
        self.times: dict[tuple[str, str], list[float]] = {(k, m): [] for k in KINDS for m in ("on", "off")}
        self.hydration: dict[str, list[float]] = {"on": [], "off": []}  # the controller's
        self.answers: list[tuple[str, Rows]] = []  # (what, rows) from weir
        self.mismatches: list[str] = []
        self.scale_note = ""  # answers equal but for decimal result scales


def try_sql(conn: psycopg.Connection, q: Query, run: Any) -> None:
    """Run `run(sql)` with the query, then its rewrites while weir answers 0A000."""
    candidates = [("", QUERIES[q.n])] + [(how, f(QUERIES[q.n])) for how, f in REWRITES]
    refusal = None
    for how, sql in candidates:
        if how and sql == QUERIES[q.n]:
            continue  # the rewrite changes nothing in this query
        try:
            run(sql)
        except psycopg.Error as e:
            if e.sqlstate != "0A000":
                q.sql, q.note = None, f"error: {e.sqlstate} {str(e).strip()}"
                return
            refusal = refusal or str(e).strip()
            continue
        q.sql = sql
        if how:
            q.note = f"rewritten ({how}); weir refused the original: {refusal}"
        return
    q.sql, q.note = None, f"refused: {refusal}"


def set_tracking(conn: psycopg.Connection, mode: str, settle: float) -> None:
    conn.execute(f"ALTER SYSTEM SET {VAR} = {mode}")
    time.sleep(settle)  # let the replica apply it, and the retractions of what it stops reporting


def run_mv(conn: psycopg.Connection, q: Query, read: bool, timeout: float) -> tuple[float, float, Rows | None]:
    """CREATE MATERIALIZED VIEW -> hydrated: (wall seconds, controller's hydration seconds, rows)."""
    assert q.sql is not None
    name = f"tpch_q{q.n}"
    t0 = time.perf_counter()
    conn.execute(f"CREATE MATERIALIZED VIEW {name} AS {q.sql}")
    try:
        oid = conn.execute("SELECT id FROM mz_catalog.mz_materialized_views WHERE name = %s",
                           (name,)).fetchone()[0]  # type: ignore[index]
        status = f"SELECT hydrated, hydration_time FROM mz_internal.mz_compute_hydration_statuses WHERE object_id = '{oid}'"
        while True:
            rows = conn.execute(status).fetchall()
            if rows and rows[0][0]:
                wall = time.perf_counter() - t0
                break
            if time.perf_counter() - t0 > timeout:
                raise TimeoutError(f"{name} not hydrated after {timeout:.0f}s")
            time.sleep(0.05)
        contents = conn.execute(f"SELECT * FROM {name}").fetchall() if read else None
        return wall, rows[0][1].total_seconds(), contents
    finally:
        conn.execute(f"DROP MATERIALIZED VIEW IF EXISTS {name}")


def wait_for_data(conn: psycopg.Connection, timeout: float = 300) -> dict[str, int]:
    sql = "SELECT " + ", ".join(f"(SELECT count(*) FROM {t})" for t in TABLES)
    deadline = time.monotonic() + timeout
    while True:
        counts = dict(zip(TABLES, conn.execute(sql).fetchone() or (), strict=True))  # type: ignore[arg-type]
        if all(counts.values()):
            return counts
        if time.monotonic() > deadline:
            raise RuntimeError(f"TPCH tables still empty after {timeout:.0f}s: {counts}")
        time.sleep(1)


def export(conn: psycopg.Connection, out: Path) -> dict[str, Path]:
    """Each table's rows, read through weir, into a Parquet file with the same column types."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    simple = {20: pa.int64(), 23: pa.int32(), 21: pa.int16(), 25: pa.string(), 1043: pa.string(),
              1082: pa.date32(), 16: pa.bool_(), 701: pa.float64()}
    paths = {}
    for table in TABLES:
        cur = conn.execute(f"SELECT * FROM {table}")
        rows = cur.fetchall()
        fields = []
        for col in cur.description or []:
            if col.type_code == 1700:
                fields.append(pa.field(col.name, pa.decimal128(col.precision or 38, col.scale or 0)))
            else:
                fields.append(pa.field(col.name, simple[col.type_code]))
        schema = pa.schema(fields)
        columns = list(zip(*rows, strict=True)) if rows else [[] for _ in fields]
        paths[table] = out / f"{table}.parquet"
        pq.write_table(pa.table([pa.array(c, f.type) for c, f in zip(columns, fields, strict=True)],
                                schema=schema), paths[table])
    return paths


def _key(v: Any) -> tuple[int, Any]:
    if v is None:
        return (0, 0)
    if isinstance(v, bool):
        return (1, int(v))
    if isinstance(v, int | float | Decimal):
        return (1, float(v))
    return (2, str(v))


def _same(x: Any, y: Any) -> int:
    """0: different; 1: equal (doubles within 1e-9); 2: decimals equal only at the coarser of
    their two scales, rounded half up (an avg or a division whose result scale differs,
    e.g. 25.502457492 vs Spark's decimal(19,6) 25.502457)."""
    if isinstance(x, float) or isinstance(y, float):  # doubles: tolerance
        return int(x is not None and y is not None
                   and math.isclose(float(x), float(y), rel_tol=1e-9, abs_tol=1e-12))
    if x == y:
        return 1
    if isinstance(x, Decimal) and isinstance(y, Decimal) and x.is_finite() and y.is_finite():
        unit = Decimal(1).scaleb(max(int(x.as_tuple().exponent), int(y.as_tuple().exponent)))
        return 2 if x.quantize(unit, ROUND_HALF_UP) == y.quantize(unit, ROUND_HALF_UP) else 0
    return 0


def _row_same(a: tuple[Any, ...], b: tuple[Any, ...]) -> int:
    if len(a) != len(b):
        return 0
    found = [_same(x, y) for x, y in zip(a, b, strict=True)]
    return 0 if 0 in found else max(found, default=1)


def diff_rows(weir: Rows, spark: Rows, limit: int = 5) -> tuple[int, str]:
    """(1, "") if the two answers hold the same rows in any order; (2, an example) if the same
    but for decimal scales (see _same); (0, what differs) otherwise."""
    a = sorted((tuple(r) for r in weir), key=lambda r: tuple(map(_key, r)))
    b = sorted((tuple(r) for r in spark), key=lambda r: tuple(map(_key, r)))
    if len(a) == len(b):
        pairs = [_row_same(x, y) for x, y in zip(a, b, strict=True)]
        if all(pairs):
            if 2 not in pairs:
                return 1, ""
            i = pairs.index(2)
            return 2, f"weir {a[i]} vs PySpark {b[i]}"
    only_a = [r for r in a if not any(_row_same(r, s) for s in b)]
    only_b = [r for r in b if not any(_row_same(r, s) for s in a)]
    return 0, (f"{len(a)} rows from weir, {len(b)} from PySpark; only in weir ({len(only_a)}): "
               f"{only_a[:limit]}; only in PySpark ({len(only_b)}): {only_b[:limit]}")


def check_with_spark(queries: list[Query], files: dict[str, Path]) -> None:
    """Run each original query on plain PySpark over the exported rows; compare weir's answers."""
    import sqlglot
    from pyspark.sql import SparkSession

    from weir.compute.replica.engine import spark_conf
    from weir.compute.sizes import resolve_size

    builder = SparkSession.builder
    for k, v in spark_conf(resolve_size("1")).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    try:
        for table, path in files.items():
            spark.read.parquet(str(path)).createOrReplaceTempView(table)
        for q in queries:
            if not q.answers:
                continue
            spark_sql = sqlglot.transpile(QUERIES[q.n], read="postgres", write="spark")[0]
            t0 = time.perf_counter()
            try:
                expected: Rows = [tuple(r) for r in spark.sql(spark_sql).collect()]
            except Exception as e:  # noqa: BLE001 - report, go on with the next query
                q.mismatches.append(f"PySpark failed: {str(e).splitlines()[0]}")
                continue
            seconds = time.perf_counter() - t0
            for what, rows in q.answers:
                same, d = diff_rows(rows, expected)
                if same == 0:
                    q.mismatches.append(f"{what}: {d}")
                elif same == 2 and not q.scale_note:
                    q.scale_note = f"equal at the coarser decimal scale only, e.g. {d}"
            verdict = "DIFFER" if q.mismatches else "equal" + (" (decimal scales differ)" if q.scale_note else "")
            print(f"Q{q.n:<2d} PySpark {seconds:6.2f}s, {len(expected)} rows; the {len(q.answers)} weir "
                  f"answers: {verdict}", flush=True)
    finally:
        spark.stop()


def timed_rounds(conn: psycopg.Connection, queries: list[Query], args: argparse.Namespace) -> None:
    """Every query with tracking on and off, the order alternating query by query."""
    mode = None
    slot = 0
    for rnd in range(args.rounds):
        print(f"\nround {rnd + 1} of {args.rounds} (load average {load_avg()})", flush=True)
        for q in queries:
            if q.sql is None:
                continue
            for m in ("on", "off") if slot % 2 == 0 else ("off", "on"):
                if m != mode:
                    set_tracking(conn, m, args.settle)
                    mode = m
                t0 = time.perf_counter()
                rows = conn.execute(q.sql).fetchall()
                sel = time.perf_counter() - t0
                q.answers.append((f"SELECT (round {rnd + 1}, tracking {m})", rows))
                try:
                    wall, ctl, contents = run_mv(conn, q, rnd == 0, args.timeout)
                except psycopg.Error as e:
                    q.sql, q.note = None, f"materialized view refused: {e.sqlstate} {str(e).strip()}"
                    print(f"  Q{q.n:<2d} {m:3s} select {sel:7.3f}s  mv: {q.note}", flush=True)
                    break
                if contents is not None:
                    q.answers.append((f"materialized view (round {rnd + 1}, tracking {m})", contents))
                q.times[("select", m)].append(sel)
                q.times[("mv", m)].append(wall)
                q.hydration[m].append(ctl)
                print(f"  Q{q.n:<2d} {m:3s} select {sel:7.3f}s ({len(rows)} rows)  "
                      f"mv {wall:7.3f}s (controller {ctl:.3f}s)", flush=True)
            slot += 1


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def interval(xs: list[float]) -> tuple[float, float]:
    """The geometric mean's 95% interval (normal approximation over the logs): whether the
    background load lets the figure resolve a difference of 1 %."""
    logs = [math.log(x) for x in xs if x > 0 and math.isfinite(x)]
    if len(logs) < 2:
        return float("nan"), float("nan")
    half = 1.96 * statistics.stdev(logs) / math.sqrt(len(logs))
    mean = statistics.fmean(logs)
    return math.exp(mean - half), math.exp(mean + half)


def report(queries: list[Query], args: argparse.Namespace, started: float) -> bool:
    ran = [q for q in queries if q.sql is not None and q.times[("mv", "off")]]
    print(f"\n## TPC-H SF {args.scale}: operator hydration status tracking on vs off, {args.rounds} "
          f"interleaved round(s); median seconds; took {time.monotonic() - started:.0f}s")
    print(f"{'query':6s} {'select on':>9s} {'off':>7s} {'ratio':>6s} | {'mv on':>7s} {'off':>7s} {'ratio':>6s} "
          f"| {'mv ctl on':>9s} {'off':>7s} | answers")
    ratios: dict[str, list[float]] = {"select": [], "mv": [], "ctl": []}
    for q in queries:
        if q not in ran:
            print(f"Q{q.n:<5d} {q.note or 'not measured'}")
            continue
        cells = []
        for kind in KINDS:
            on, off = med(q.times[(kind, "on")]), med(q.times[(kind, "off")])
            ratios[kind].append(on / off)
            cells.append(f"{on:7.3f} {off:7.3f} {on / off:6.3f}")
        con, coff = med(q.hydration["on"]), med(q.hydration["off"])
        ratios["ctl"].append(con / coff)
        answers = "WRONG" if q.mismatches else "ok" + (" (decimal scale)" if q.scale_note else "")
        print(f"Q{q.n:<5d} {cells[0]:>24s} | {cells[1]} | {con:9.3f} {coff:7.3f} | {answers}")
    for q in queries:
        if q.note and q.sql is not None:
            print(f"Q{q.n}: {q.note}")
        if q.scale_note:
            print(f"Q{q.n}: {q.scale_note}")
        for m in q.mismatches:
            print(f"Q{q.n} WRONG ANSWER: {m}")
    total = {m: sum(sum(q.times[(k, m)]) for q in ran for k in KINDS) for m in ("on", "off")}
    overall = geomean(ratios["select"] + ratios["mv"])
    print("\noverall on/off, geometric mean of the per-query ratios (95% interval):")
    for label, xs in (("select", ratios["select"]), ("mv", ratios["mv"]),
                      ("mv, controller's hydration time", ratios["ctl"]),
                      ("select and mv", ratios["select"] + ratios["mv"])):
        lo, hi = interval(xs)
        print(f"  {label:32s} {geomean(xs):6.3f}  ({lo:.3f}-{hi:.3f})")
    if total["off"] > 0:
        print(f"overall on/off, total time: {total['on']:.1f}s / {total['off']:.1f}s = {total['on'] / total['off']:.3f}")
    met = overall <= GOAL
    lo, hi = interval(ratios["select"] + ratios["mv"])
    verdict = "MET" if met else "NOT MET"
    short = "met" if met else "not met"
    if lo <= GOAL < hi:
        verdict += f" by the point estimate, but the 95% interval {lo:.3f}-{hi:.3f} straddles {GOAL}: inconclusive"
        short += " by the point estimate, inconclusive"
    print(f"goal: tracking on <= {GOAL} x off (geometric mean over select and mv): {verdict} ({overall:.3f})")
    refused = [q for q in queries if q.sql is None]
    wrong = [q for q in queries if q.mismatches]
    print(f"queries measured {len(ran)}/{len(queries)}; refused or failed: "
          f"{', '.join(f'Q{q.n}' for q in refused) or 'none'}; wrong answers: "
          f"{', '.join(f'Q{q.n}' for q in wrong) or 'none'}")
    print(f"load average at end: {load_avg()}")
    print("\n## for the README (command / figure)")
    print(f"`.venv/bin/python bench/tpch.py` / TPC-H SF {args.scale}, {len(ran)} queries, {args.rounds} "
          f"interleaved rounds, hydration tracking on/off (geometric mean): SELECT "
          f"{geomean(ratios['select']):.3f}, MV hydration {geomean(ratios['mv']):.3f}, overall {overall:.3f} "
          f"(95% interval {lo:.3f}-{hi:.3f}; goal <= {GOAL}: {short}); answers equal to PySpark: {len(ran) - len(wrong)}/{len(ran)}")
    return not wrong


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=0.01, help="TPCH SCALE FACTOR (weir allows up to 0.1)")
    ap.add_argument("--rounds", type=int, default=2, help="timed rounds (each: every query on and off)")
    ap.add_argument("--queries", default=",".join(map(str, QUERIES)), help="comma-separated query numbers")
    ap.add_argument("--settle", type=float, default=1.0, help="seconds after switching tracking on/off")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for one view to hydrate")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks
    queries = [Query(int(n)) for n in args.queries.split(",") if n.strip()]

    base = Path(tempfile.mkdtemp(prefix="weir-bench-tpch-"))
    print(f"load average at start: {load_avg()} (2 cores, shared: other load skews the timings)", flush=True)
    started = time.monotonic()
    weir = WeirServer(base / "weir")
    try:
        start_weir(weir)
        conn = weir.connect()
        t0 = time.monotonic()
        conn.execute(f"CREATE SOURCE tpch FROM LOAD GENERATOR TPCH (SCALE FACTOR {args.scale}) FOR ALL TABLES")
        counts = wait_for_data(conn)
        print(f"TPCH SF {args.scale} loaded in {time.monotonic() - t0:.1f}s: "
              + ", ".join(f"{t} {n:,}" for t, n in counts.items()), flush=True)
        t0 = time.monotonic()
        files = export(conn, base)
        print(f"exported to Parquet through weir in {time.monotonic() - t0:.1f}s", flush=True)

        print("\nwarm-up: each query once as a SELECT, untimed", flush=True)
        for q in queries:
            t0 = time.perf_counter()
            try_sql(conn, q, lambda sql: conn.execute(sql).fetchall())
            print(f"Q{q.n:<2d} {time.perf_counter() - t0:6.2f}s {q.note or 'ok'}", flush=True)

        runnable = [q for q in queries if q.sql is not None]
        if runnable:  # the view path has a warm-up of its own (dataflow, output shard, writes)
            t0 = time.perf_counter()
            try:
                run_mv(conn, runnable[0], False, args.timeout)
            except psycopg.Error as e:  # the timed rounds say so
                print(f"Q{runnable[0].n:<2d} as a materialized view: {e}", flush=True)
            print(f"Q{runnable[0].n:<2d} {time.perf_counter() - t0:6.2f}s as a materialized view", flush=True)
        timed_rounds(conn, queries, args)
        conn.execute(f"ALTER SYSTEM RESET {VAR}")
        conn.close()
    finally:
        weir.stop()
    print(f"\nweir stopped; checking the answers against plain PySpark local[1] (load average {load_avg()})",
          flush=True)
    check_with_spark(queries, files)
    ok = report(queries, args, started)
    shutil.rmtree(base, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
