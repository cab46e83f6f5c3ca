"""Planning benchmark: what one planning pass per statement buys, before and after, side by side.

    .venv/bin/python bench/planning.py [--baseline REF] [--duration 10] [--rounds 3] [--runs 40]

Starts two real `weir serve` processes in temp dirs: "before" from a git worktree of
REF (default: 80e57ac, the last commit before plans were made once per statement)
and "after" from this tree, each with its own `local[1]` replica. On both it loads
`small (id bigint, name text, score double precision)` with 1,000 rows and indexes it
on id. Then, interleaved (before, after, after, before, ...):

  1. pgbench `SELECT 1;` with -M extended and -M simple (tps, -c 4 -j 2);
  2. pgbench one-row fast-path lookup `SELECT id, name, score FROM small WHERE id = :id`
     (random id; answered from the index, no Spark job), -M extended and -M simple;
  3. `SELECT name, score FROM small WHERE id % 10 = 3` unprepared, as psycopg sends it by
     default (Parse/Bind/Describe/Execute every time), RUNS times each, and the same query
     as a plain warm PySpark `local[1]` job (weir's replica settings) over the same 1,000
     rows in a Parquet file (read.parquet + SQL + toArrow each run).

Prints every run, medians, the after/before ratios (goal: extended `SELECT 1` at least
1.3x) and weir-unprepared / plain-PySpark p50 (goal: at most 1.3x), with the load average.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from bench.common import load_avg, run_pgbench  # noqa: E402
from tests.integration.server import WeirServer  # noqa: E402

BASELINE = "80e57ac"
ROWS = 1000
QUERY = "SELECT name, score FROM small WHERE id % 10 = 3"
GOAL_SELECT1 = 1.3
GOAL_VS_SPARK = 1.3


def start(tree: Path, data: Path) -> WeirServer:
    """A weir server running the code in `tree` (its replicas inherit PYTHONPATH)."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(tree)
    try:
        t0 = time.monotonic()
        srv = WeirServer(data).start()
        print(f"weir from {tree} started in {time.monotonic() - t0:.1f}s (port {srv.sql_port})", flush=True)
        return srv
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def load(srv: WeirServer) -> None:
    with psycopg.connect(srv.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE small (id bigint, name text, score double precision)")
        c.execute(f"INSERT INTO small SELECT n, 'name' || n, n * 1.5 FROM generate_series(1, {ROWS}) AS g(n)")
        c.execute("CREATE INDEX small_id ON small (id)")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the index hydrates: the lookup takes the fast path
            before = srv.metric("weir_reads_total", strategy="fast-path")
            c.execute("SELECT * FROM small WHERE id = 1").fetchall()
            if srv.metric("weir_reads_total", strategy="fast-path") > before:
                return
            time.sleep(0.5)
        raise RuntimeError("the index on small(id) did not serve the fast path within 120 s")


def pgbench(script: Path, mode: str, srv: WeirServer, duration: int) -> float:
    argv = ["pgbench", "-n", "-f", str(script), "-M", mode, "-c", "4", "-j", "2", "-T", str(duration),
            "-h", "127.0.0.1", "-p", str(srv.sql_port), "-U", "materialize", "materialize"]
    tps, failed, text = run_pgbench(argv, duration + 120)
    if failed:
        raise RuntimeError(f"{failed} failed transactions:\n{text}")
    return tps


def unprepared(conn: psycopg.Connection) -> tuple[float, list[Any]]:
    t0 = time.perf_counter()
    rows = conn.execute(QUERY, prepare=False).fetchall()
    return time.perf_counter() - t0, rows


def plain_spark(base: Path) -> tuple[Any, Any]:
    """A warm SparkSession with a replica's settings and the rows in one Parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import SparkSession

    from weir.compute.replica.engine import spark_conf
    from weir.compute.sizes import resolve_size

    path = base / "small.parquet"
    ids = list(range(1, ROWS + 1))
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "name": [f"name{n}" for n in ids],
                             "score": [n * 1.5 for n in ids]}), path)
    builder = SparkSession.builder
    for k, v in spark_conf(resolve_size("1")).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")

    def run() -> tuple[float, list[Any]]:
        t0 = time.perf_counter()
        spark.read.parquet(str(path)).createOrReplaceTempView("small")
        table = spark.sql(QUERY).toArrow()
        return time.perf_counter() - t0, sorted(zip(*[c.to_pylist() for c in table.columns], strict=True))

    return spark, run


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default=BASELINE, help="git ref of the 'before' server")
    ap.add_argument("--duration", type=int, default=10, help="seconds per pgbench run")
    ap.add_argument("--rounds", type=int, default=3, help="pgbench runs per (workload, mode, server)")
    ap.add_argument("--runs", type=int, default=40, help="timed unprepared queries per side")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if shutil.which("pgbench") is None:
        print("pgbench not found (apt-get install postgresql-client)", file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="weir-bench-planning-"))
    before_tree = base / "before-src"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(before_tree), args.baseline],
                   check=True, capture_output=True)
    servers: dict[str, WeirServer] = {}
    spark = None
    tps: dict[tuple[str, str, str], list[float]] = {}
    lat: dict[str, list[float]] = {"before": [], "after": [], "spark": []}
    try:
        servers["before"] = start(before_tree, base / "before")
        servers["after"] = start(ROOT, base / "after")
        for srv in servers.values():
            load(srv)
        scripts = {"SELECT 1": base / "select1.sql", "fast-path lookup": base / "lookup.sql"}
        scripts["SELECT 1"].write_text("SELECT 1;\n")
        scripts["fast-path lookup"].write_text(
            f"\\set id random(1, {ROWS})\nSELECT id, name, score FROM small WHERE id = :id;\n")
        print(f"\nload average before the runs: {load_avg()} (2 cores: other load skews the figures)")
        for work, script in scripts.items():
            for mode in ("extended", "simple"):
                for rnd in range(args.rounds):
                    order = ("before", "after") if rnd % 2 == 0 else ("after", "before")
                    for side in order:
                        t = pgbench(script, mode, servers[side], args.duration)
                        tps.setdefault((work, mode, side), []).append(t)
                        print(f"  {work:16s} {mode:8s} round {rnd + 1} {side:6s} {t:9.1f} tps", flush=True)
        spark, spark_run = plain_spark(base)
        conns = {side: psycopg.connect(srv.dsn, autocommit=True) for side, srv in servers.items()}
        expected = None
        for i in range(args.runs + 5):  # 5 warm-up rounds, not timed
            order = ["before", "after", "spark"] if i % 2 == 0 else ["spark", "after", "before"]
            for side in order:
                seconds, rows = spark_run() if side == "spark" else unprepared(conns[side])
                rows = sorted(tuple(r) for r in rows)
                expected = expected or rows
                if rows != expected:
                    raise RuntimeError(f"{side} answered differently: {rows[:3]} ... vs {expected[:3]} ...")
                if i >= 5:
                    lat[side].append(seconds)
        print(f"load average after the runs: {load_avg()}")
        for c in conns.values():
            c.close()
    finally:
        for srv in servers.values():
            srv.stop()
        if spark is not None:
            spark.stop()
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before_tree)],
                       capture_output=True)
        shutil.rmtree(base, ignore_errors=True)

    print(f"\n## pgbench -c 4 -j 2 -T {args.duration}, {args.rounds} interleaved rounds "
          f"(median tps; before = {args.baseline})")
    print(f"{'workload':18s} {'mode':9s} {'before':>9s} {'after':>9s} {'after/before':>13s}")
    ratios = {}
    for work in ("SELECT 1", "fast-path lookup"):
        for mode in ("extended", "simple"):
            b = statistics.median(tps[(work, mode, "before")])
            a = statistics.median(tps[(work, mode, "after")])
            ratios[(work, mode)] = a / b
            print(f"{work:18s} {mode:9s} {b:9.0f} {a:9.0f} {a / b:13.2f}")
    print(f"\n## `{QUERY}` on {ROWS:,} rows, {args.runs} runs each, interleaved (ms)")
    print(f"{'':34s} {'p50':>8s} {'p90':>8s}")
    labels = {"before": "weir before, unprepared", "after": "weir after, unprepared",
              "spark": "plain PySpark local[1] (Parquet)"}
    for side, label in labels.items():
        print(f"{label:34s} {pct(lat[side], 50) * 1000:8.1f} {pct(lat[side], 90) * 1000:8.1f}")
    vs_spark = pct(lat["after"], 50) / pct(lat["spark"], 50)
    print(f"\ngoal: extended SELECT 1 after/before >= {GOAL_SELECT1}: "
          f"{'MET' if ratios[('SELECT 1', 'extended')] >= GOAL_SELECT1 else 'NOT MET'} "
          f"({ratios[('SELECT 1', 'extended')]:.2f}x)")
    print(f"goal: unprepared weir p50 / plain PySpark p50 <= {GOAL_VS_SPARK}: "
          f"{'MET' if vs_spark <= GOAL_VS_SPARK else 'NOT MET'} ({vs_spark:.2f}x; before: "
          f"{pct(lat['before'], 50) / pct(lat['spark'], 50):.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
