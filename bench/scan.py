"""Scan benchmark: a filtered GROUP BY over 1M rows through weir vs plain PySpark on the same files.

    .venv/bin/python bench/scan.py [--rows 1000000] [--warmup 5] [--runs 15]
    .venv/bin/python bench/scan.py --profile     # + py-spy of the coordinator during the weir runs

1. weir: starts a real `weir serve` (tests/integration/server.py) in a temp dir, creates
   `scan_bench (id bigint, grp int, amount double precision, flag boolean)` and loads it with
   `INSERT INTO scan_bench SELECT id, id % 100, id * 0.5, id % 2 = 0 FROM range(N)` (Spark's
   range table function passes through weir's rendering; generate_series does not).
2. The Parquet files of the table's shard are listed with ShardStore.data_files (the
   server's SQLite catalog and warehouse; shard id from mz_catalog.mz_tables), and a plain
   SparkSession is started in this process with the replica's settings
   (weir.compute.replica.engine.spark_conf for size '1': local[1], ANSI, Arrow, ...).
   Meanwhile the storage controller makes its first compaction pass over the new data
   (every 30s), which must not fall into the timed runs: the script waits it out.
3. Timed runs, interleaved (weir, spark, spark, weir, ...) so that both see the same
   background load - the 2-core machine is shared, and a run that timed all of weir first
   and then all of Spark measured the neighbours more than the engines. While one side
   runs, the other one's JVM is idle:
     weir:  the query through psycopg, end to end; the replica's own time for the peek is
            read from its log (`peek ...: N rows in Ts`), which splits weir's time into
            replica (new Spark session, input binding, Spark job, Arrow) and coordinator
            (pgwire, parse, plan, scan planning, compute protocol, result encoding);
     spark: spark.read.parquet(files) + the same SQL + toArrow().
   Scan planning (Shard.data_files, an Iceberg plan_files) is also timed on its own.
4. weir is stopped; then a diagnostic in this JVM: weir's replica code path
   (SparkEngine.peek with the input spec the coordinator sends: new session, explicit
   schema, mz_timestamp filter, casts) interleaved with plain Spark, which shows whether
   weir's way of binding inputs costs anything inside Spark.

Prints medians, the ratio weir/spark (goal: within 1.3x) and the breakdown.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from bench.common import load_avg, start_weir  # noqa: E402
from tests.integration.server import WeirServer  # noqa: E402

QUERY = ("SELECT grp, count(*), sum(amount) FROM scan_bench "
         "WHERE flag AND amount > 1000 GROUP BY grp")
DDL = "CREATE TABLE scan_bench (id bigint, grp int, amount double precision, flag boolean)"
COLUMNS = [("id", "bigint"), ("grp", "integer"), ("amount", "double precision"), ("flag", "boolean")]
GOAL_RATIO = 1.3
AS_OF_ALL = 2**62  # data_files(as_of) lists the files holding every update at time <= as_of
# The storage controller compacts dirty shards every 30 ticks of 1s, once `since` is durable
# (every 5 ticks): after the load, wait this long so that pass is not inside the timed runs.
SETTLE_SECONDS = 36.0
_PEEK_LOG = re.compile(r"peek (\S+): (\d+) rows in ([0-9.]+)s")
_UI_LOG = re.compile(r"Spark UI (http://[^\s)]+)")


def load_sources(lo: int, hi: int) -> list[str]:
    """INSERT ... SELECT statements for ids [lo, hi), most likely to pass through first."""
    cols = "id, id % 100, id * 0.5, id % 2 = 0"
    return [
        f"INSERT INTO scan_bench SELECT {cols} FROM range({lo}, {hi})",
        f"INSERT INTO scan_bench SELECT {cols} FROM generate_series({lo}, {hi - 1}) AS s(id)",
    ]


def load(conn: Any, rows: int, batch: int) -> tuple[float, str]:
    started = time.monotonic()
    chosen: int | None = None
    for lo in range(0, rows, batch):
        hi = min(rows, lo + batch)
        options = load_sources(lo, hi)
        order = [chosen] if chosen is not None else range(len(options))
        errors = []
        for i in order:
            try:
                conn.execute(options[i])
                chosen = i
                break
            except Exception as e:  # noqa: BLE001 - try the next way of generating rows
                errors.append(f"{options[i]!r}: {e}")
        else:
            raise RuntimeError("no INSERT ... SELECT form worked:\n" + "\n".join(errors))
    assert chosen is not None
    return time.monotonic() - started, load_sources(0, rows)[chosen]


class SparkUI:
    """Spark's monitoring REST API: the duration of the SQL executions since mark()."""

    def __init__(self, url: str | None) -> None:
        self.url = url.rstrip("/") if url else None
        self.app: str | None = None
        self.last = -1
        self.problem: str | None = None if url else "no Spark UI URL"
        try:
            if self.url:
                self.app = str(self._get("/api/v1/applications")[0]["id"])
                self.mark()
        except (OSError, ValueError, KeyError, IndexError) as e:
            self.app = None
            self.problem = f"{self.url}: {e!r}"

    def _get(self, path: str) -> Any:
        # the first request initializes the REST API in the JVM: seconds on a loaded machine
        with urllib.request.urlopen(f"{self.url}{path}", timeout=60) as r:
            return json.load(r)

    def _executions(self) -> list[dict[str, Any]]:
        return list(self._get(f"/api/v1/applications/{self.app}/sql?details=false&offset=0&length=100000"))

    def mark(self) -> None:
        if self.app is not None:
            self.last = max((int(e["id"]) for e in self._executions()), default=-1)

    def measure(self, wait: float = 10.0) -> dict[str, float] | None:
        """Of the SQL executions started since mark() (once all have ended): their total
        duration (sql), and summed over their jobs' stages the tasks' run time (run), CPU
        time (cpu) and GC time (gc), in seconds. sql >> run: driver-side time (planning,
        scheduling); run >> cpu: the task thread waited (for a CPU, I/O)."""
        if self.app is None:
            return None
        deadline = time.monotonic() + wait
        while True:
            try:
                new = [e for e in self._executions() if int(e["id"]) > self.last]
            except (OSError, ValueError) as e:
                self.problem = repr(e)
                return None
            done = bool(new) and all(e.get("status") in ("COMPLETED", "FAILED") for e in new)
            if done or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        if not done:
            self.problem = (f"executions not finished after {wait}s: "
                            f"{[(e.get('id'), e.get('status')) for e in new]}")
            return None
        out = {"sql": sum(int(e.get("duration") or 0) for e in new) / 1000,
               "run": 0.0, "cpu": 0.0, "gc": 0.0}
        base = f"/api/v1/applications/{self.app}"
        try:
            for e in new:
                for job in e.get("successJobIds", []) + e.get("failedJobIds", []):
                    for stage in self._get(f"{base}/jobs/{job}").get("stageIds", []):
                        for attempt in self._get(f"{base}/stages/{stage}"):
                            if attempt.get("status") == "SKIPPED":
                                continue
                            out["run"] += attempt.get("executorRunTime", 0) / 1000
                            out["cpu"] += attempt.get("executorCpuTime", 0) / 1e9
                            out["gc"] += attempt.get("jvmGcTime", 0) / 1000
        except (OSError, ValueError) as e:
            self.problem = repr(e)
        return out


class ReplicaLog:
    """Reads the peek times the replica logs (`peek <id>: <n> rows in <s>s`)."""

    def __init__(self, data_dir: Path) -> None:
        logs = sorted((data_dir / "logs").glob("replica-*.log"))
        self.path = logs[0] if logs else None
        self.offset = 0
        self.mark()

    def mark(self) -> None:
        if self.path is not None:
            self.offset = self.path.stat().st_size

    def ui_url(self) -> str | None:
        if self.path is None:
            return None
        found = _UI_LOG.findall(self.path.read_text(errors="replace"))
        return found[-1] if found else None

    def last_peek_seconds(self, rows: int, wait: float = 1.0) -> float | None:
        """The time of the newest peek returning `rows` rows logged since mark()."""
        if self.path is None:
            return None
        deadline = time.monotonic() + wait
        while True:
            with open(self.path, errors="replace") as f:
                f.seek(self.offset)
                text = f.read()
            found = [float(m.group(3)) for m in _PEEK_LOG.finditer(text) if int(m.group(2)) == rows]
            if found or time.monotonic() > deadline:
                return found[-1] if found else None
            time.sleep(0.02)


def timed(fn: Any, warmup: int, runs: int) -> tuple[list[float], Any]:
    result = None
    for _ in range(warmup):
        result = fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return times, result


def interleaved(fns: list[Any], warmup: int, runs: int, before: Any = None, after: Any = None
                ) -> tuple[list[list[float]], list[Any]]:
    """Warm each up, then `runs` rounds calling each once, the order reversed every round;
    before(i) / after(i, result) run around each timed call, outside the timing."""
    results: list[Any] = [None] * len(fns)
    for _ in range(warmup):
        for i, fn in enumerate(fns):
            results[i] = fn()
    times: list[list[float]] = [[] for _ in fns]
    for r in range(runs):
        order = list(range(len(fns)))
        if r % 2:
            order.reverse()
        for i in order:
            if before is not None:
                before(i)
            t = time.perf_counter()
            results[i] = fns[i]()
            times[i].append(time.perf_counter() - t)
            if after is not None:
                after(i, results[i])
    return times, results


def rows_of_arrow(table: Any) -> list[tuple[Any, ...]]:
    cols = [c.to_pylist() for c in table.columns]
    return sorted(zip(*cols, strict=True))


def same_rows(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> bool:
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b, strict=True):
        for x, y in zip(ra, rb, strict=True):
            if isinstance(x, float) or isinstance(y, float):
                if not math.isclose(float(x), float(y), rel_tol=1e-9):
                    return False
            elif x != y:
                return False
    return True


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def fmt(xs: list[float]) -> str:
    return ", ".join(f"{x:.3f}" for x in xs)


def start_spark() -> Any:
    from pyspark.sql import SparkSession

    from weir.compute.replica.engine import spark_conf
    from weir.compute.sizes import resolve_size

    builder = SparkSession.builder
    for k, v in spark_conf(resolve_size("1")).items():
        builder = builder.config(k, v)
    t0 = time.monotonic()
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    print(f"plain SparkSession ({spark.conf.get('spark.master')}, Spark {spark.version}, weir's "
          f"replica settings) started in {time.monotonic() - t0:.1f}s", flush=True)
    return spark


class PySpy:
    """py-spy recording a process until stop() (SIGINT makes it write its output)."""

    def __init__(self, exe: str, pid: int, rate: int = 250) -> None:
        self.rate = rate
        self.out = Path(tempfile.mkdtemp(prefix="weir-bench-prof-")) / "coordinator.txt"
        self.proc = subprocess.Popen([exe, "record", "-p", str(pid), "-r", str(rate), "-f", "raw",
                                      "-o", str(self.out)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        time.sleep(1.0)

    def stop(self) -> Path:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.out


def summarize_profile(raw: Path, rate: int, queries: int, top: int = 28) -> str:
    """Busy time of the coordinator per query, by function (inclusive), all threads."""
    incl: collections.Counter[str] = collections.Counter()
    total = 0
    idle = ("_worker (concurrent/futures/thread.py:81)", "EpollSelector.select", "_do_waitpid")
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        frames = stack.split(";")
        if any(frames[-1].startswith(i) for i in idle):
            continue
        total += int(n)
        for f in set(frames):
            incl[f] += int(n)
    per_q = 1000.0 / rate / max(queries, 1)
    lines = [f"coordinator busy (non-idle samples, all threads): {total * per_q:.1f} ms per query; "
             "by function, inclusive ms per query:"]
    shown = 0
    for f, n in incl.most_common():
        if shown >= top:
            break
        if any(s in f for s in ("runpy", "asyncio/", "cli.py", "threading.py", "thread.py")):
            continue
        lines.append(f"  {n * per_q:7.2f}  {f}")
        shown += 1
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=1_000_000, help="rows per INSERT ... SELECT")
    ap.add_argument("--warmup", type=int, default=5, help="warm-up runs of each side")
    ap.add_argument("--runs", type=int, default=15, help="timed runs of each side")
    ap.add_argument("--settle", type=float, default=SETTLE_SECONDS,
                    help="seconds to wait after the load before timing (compaction pass)")
    ap.add_argument("--profile", action="store_true",
                    help="py-spy the coordinator during the timed weir runs (py-spy on PATH or "
                         "WEIR_BENCH_PYSPY=/path/to/py-spy)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks

    base = Path(tempfile.mkdtemp(prefix="weir-bench-scan-"))
    print(f"load average at start: {load_avg()} (2 cores, shared: other load skews the timings)")
    print(f"query: {QUERY}\n", flush=True)
    weir = WeirServer(base / "weir")
    spark = None
    profile_text = None
    try:
        start_weir(weir)
        conn = weir.connect()
        conn.execute(DDL)
        load_secs, how = load(conn, args.rows, args.batch)
        loaded_at = time.monotonic()
        n = conn.execute("SELECT count(*) FROM scan_bench").fetchone()[0]
        if n != args.rows:
            raise RuntimeError(f"loaded {n} rows, expected {args.rows}")
        print(f"loaded {n:,} rows in {load_secs:.1f}s ({n / load_secs:,.0f} rows/s) with: {how}"
              + (f" (batches of {args.batch:,})" if args.batch < args.rows else ""), flush=True)
        sid = conn.execute("SELECT id FROM mz_catalog.mz_tables WHERE name = 'scan_bench'").fetchone()[0]

        spark = start_spark()
        rest = args.settle - (time.monotonic() - loaded_at)
        if rest > 0:
            print(f"waiting {rest:.0f}s more for the storage controller's compaction pass ...", flush=True)
            time.sleep(rest)

        from weir.storage.persist import ShardStore

        store = ShardStore(f"sqlite:///{weir.data_dir}/catalog.db", str(weir.data_dir / "warehouse"))
        shard = store.open_shard(sid)
        plan_times, plan = timed(lambda: shard.data_files(AS_OF_ALL), 2, 10)
        files = list(plan.files)
        size = sum(os.path.getsize(f) for f in files)
        print(f"shard {sid}: {len(files)} Parquet file(s), {plan.row_count:,} rows, {size / 1e6:.1f} MB; "
              f"may have retractions: {plan.may_have_retractions}", flush=True)
        select1, _ = timed(lambda: conn.execute("SELECT 1").fetchall(), 5, 50)
        # Parse alone (libpq PQprepare: Parse + Sync): weir describes the result on Parse,
        # a round trip to the replica (new session, input binding, analysis); psycopg's
        # execute() sends Parse + Bind + Describe + Execute, so every query pays it once.
        query_bytes = QUERY.encode()
        parse, res = timed(lambda: conn.pgconn.prepare(b"", query_bytes), 2, 10)
        if res.status != psycopg.pq.ExecStatus.COMMAND_OK:
            raise RuntimeError(f"Parse failed: {res.error_message!r}")

        rlog = ReplicaLog(weir.data_dir)
        replica_ui = SparkUI(rlog.ui_url())
        plain_ui = SparkUI(spark.sparkContext.uiWebUrl)
        replica: list[float | None] = []
        replica_sql: list[dict[str, float] | None] = []
        plain_sql: list[dict[str, float] | None] = []
        weir_rows: list[tuple[Any, ...]] = []

        def via_weir() -> list[tuple[Any, ...]]:
            rows = conn.execute(QUERY).fetchall()
            return rows

        def via_spark() -> Any:
            spark.read.parquet(*files).createOrReplaceTempView("scan_bench")
            return spark.sql(QUERY).toArrow()

        def before(i: int) -> None:  # outside the timed region
            if i == 0:
                rlog.mark()
                replica_ui.mark()
            else:
                plain_ui.mark()

        def after(i: int, result: Any) -> None:
            if i == 0:
                replica.append(rlog.last_peek_seconds(len(result)))
                replica_sql.append(replica_ui.measure())
            else:
                plain_sql.append(plain_ui.measure())

        for _ in range(args.warmup):
            via_weir()
            via_spark()
        spy = None
        if args.profile:
            exe = os.environ.get("WEIR_BENCH_PYSPY") or shutil.which("py-spy")
            if exe is None:
                print("--profile: py-spy not found (pip install --target /tmp/pyspy py-spy; "
                      "WEIR_BENCH_PYSPY=/tmp/pyspy/bin/py-spy)")
            elif weir.proc is not None:
                spy = PySpy(exe, weir.proc.pid)
        (weir_times, spark_times), (weir_rows, spark_table) = interleaved(
            [via_weir, via_spark], 0, args.runs, before, after)
        if spy is not None:
            profile_text = summarize_profile(spy.stop(), spy.rate, args.runs)
        conn.close()
        print(f"weir runs (s):  {fmt(weir_times)}")
        print(f"spark runs (s): {fmt(spark_times)}", flush=True)
        weir.stop()

        # diagnostic: weir's replica code path vs plain, same JVM, weir stopped
        from weir.compute.replica.engine import SparkEngine
        from weir.compute.sizes import resolve_size

        engine = SparkEngine(resolve_size("1"))  # getOrCreate: the session above
        spec = {"name": "scan_bench", "files": files, "as_of": AS_OF_ALL,
                "consolidate": bool(plan.may_have_retractions),
                "columns": [{"name": c, "pg_type": t, "nullable": True} for c, t in COLUMNS]}
        (eng_times, plain2_times), (eng_table, _) = interleaved(
            [lambda: engine.peek("bench", QUERY, [spec], AS_OF_ALL), via_spark], 2, args.runs)
    finally:
        weir.stop()
        if spark is not None:
            spark.stop()

    spark_rows = rows_of_arrow(spark_table)
    ok_rows = same_rows(sorted(tuple(r) for r in weir_rows), spark_rows) and same_rows(
        spark_rows, rows_of_arrow(eng_table))
    weir_med, spark_med = med(weir_times), med(spark_times)
    ratio = weir_med / spark_med
    paired = med([w / s for w, s in zip(weir_times, spark_times, strict=True)])
    rep = [r for r in replica if r is not None]
    coord = [t - r for t, r in zip(weir_times, replica, strict=True) if r is not None]

    print(f"\n## scan: {args.rows:,} rows, {args.runs} interleaved runs each after {args.warmup} warm-ups")
    print(f"{'':46s} {'median s':>9s}")
    print(f"{'weir (psycopg, end to end)':46s} {weir_med:9.3f}")
    print(f"{'plain PySpark (read.parquet + SQL + toArrow)':46s} {spark_med:9.3f}")
    print(f"{'ratio weir/spark (of medians)':46s} {ratio:9.2f}   (goal <= {GOAL_RATIO})")
    print(f"{'ratio weir/spark (median of paired runs)':46s} {paired:9.2f}")
    print(f"results identical ({len(spark_rows)} groups): {ok_rows}")

    def ms(label: str, secs: float, note: str = "") -> None:
        print(f"  {label:58s} {secs * 1000:8.1f} ms{note}")

    print("\nbreakdown (medians over the timed runs):")
    r_ok = [(r, q) for r, q in zip(replica, replica_sql, strict=True) if r is not None and q is not None]
    p_ok = [(t, q) for t, q in zip(spark_times, plain_sql, strict=True) if q is not None]

    def spark_lines(pairs: list[tuple[float, dict[str, float]]], indent: str, rest: str) -> None:
        ms(f"{indent}Spark SQL executions (Spark REST API)", med([q["sql"] for _, q in pairs]))
        ms(f"{indent}  tasks: run time", med([q["run"] for _, q in pairs]))
        ms(f"{indent}  tasks: CPU time", med([q["cpu"] for _, q in pairs]))
        ms(f"{indent}  tasks: GC time", med([q["gc"] for _, q in pairs]))
        ms(f"{indent}{rest}", med([t - q["sql"] for t, q in pairs]))

    for name, ui in (("replica", replica_ui), ("plain", plain_ui)):
        if ui.problem:
            print(f"  (Spark REST API of the {name} JVM: {ui.problem})")
    ms("weir end to end", weir_med)
    if rep:
        ms("  replica peek (its log: session, bind, Spark job, send)", med(rep))
        if r_ok:
            spark_lines(r_ok, "    ", "rest: new session, binding, py4j, Arrow, send")
        ms("  coordinator + transport (end to end - replica peek)", med(coord))
        ms("    incl. Parse (describe via the replica; timed alone)", med(parse))
    else:
        print("  (no `peek ... rows in` lines found in the replica log)")
    ms("    incl. scan planning (Shard.data_files, timed alone)", med(plan_times))
    ms("  for scale: SELECT 1 round trip (no replica)", med(select1))
    ms("plain Spark end to end", spark_med)
    if p_ok:
        spark_lines(p_ok, "  ", "rest: read.parquet, view, py4j, Arrow")
    ms("diagnostic, weir stopped: SparkEngine.peek in-process", med(eng_times),
       f"  (interleaved plain: {med(plain2_times) * 1000:.0f} ms, "
       f"{med(eng_times) / med(plain2_times):.2f}x)")
    if profile_text:
        print("\n" + profile_text)
    print(f"\ngoal: weir within {GOAL_RATIO}x of plain Spark: {'MET' if ratio <= GOAL_RATIO else 'NOT MET'}"
          f" ({ratio:.2f}x)")
    print("\n## for the README (command / figure)")
    print(f"`.venv/bin/python bench/scan.py` / {args.rows:,}-row filtered GROUP BY, median of "
          f"{args.runs} interleaved runs: weir {weir_med:.3f}s, plain PySpark local[1] {spark_med:.3f}s "
          f"(weir/spark {ratio:.2f})")
    source = "range()" if "range(" in how else "generate_series()"
    print(f"`.venv/bin/python bench/scan.py` / load of {args.rows:,} rows by INSERT ... SELECT FROM "
          f"{source}: {load_secs:.1f}s ({args.rows / load_secs:,.0f} rows/s)")
    shutil.rmtree(base, ignore_errors=True)
    return 0 if ok_rows else 1


if __name__ == "__main__":
    sys.exit(main())
