"""Statement logging overhead: pgbench fast-path + constant statements with statement history
sampled at 0.99 against 0.0, alternating in one run.

    .venv/bin/python bench/statement_log.py [--rounds 6] [--duration 10] [--clients 4] [--threads 2]
    .venv/bin/python bench/statement_log.py --rate 2000      # the rate-limited variant's statements/s
    .venv/bin/python bench/statement_log.py --workloads constant --rate 0   # one workload, no -R
    .venv/bin/python bench/statement_log.py --profile        # + py-spy of weir, logged vs unlogged
                                                             # (WEIR_BENCH_PYSPY=/tmp/pyspy/bin/py-spy)

Starts a real `weir serve` (tests/integration/server.py) in a temp dir, creates
`t (id bigint, name text, amount double precision)` with --rows rows and `CREATE INDEX ON t (id)`,
and waits until `SELECT * FROM t WHERE id = 1` runs on the fast path (EXPLAIN says so and
weir_reads_total{strategy="fast-path"} moves). Then `pgbench -n -M prepared -c 4 -j 2 -T N`
runs two workloads (--workloads), one after the other:

    mix (the issue's), two statements per transaction:
        \\set id random(0, ROWS - 1)
        SELECT * FROM t WHERE id = :id;     -- fast path: the index's arrangement, no Spark job
        SELECT 1;                           -- constant: answered by the coordinator
    constant, one statement per transaction (the mix runs at about 2,000 statements/s on two
    cores; this one goes well above it):
        SELECT 1;

each alternately with `ALTER SYSTEM SET statement_logging_default_sample_rate = 0.99` ("logged") and
`= 0` ("unlogged"); pgbench opens its connections at the start of each run, so every session
of a run samples at that rate. The order alternates logged/unlogged, unlogged/logged, ... so a
drift in the machine's load hits both sides alike. Between runs the script waits
`statement_log_flush_interval` + 1 s, so a logged run's last buffer is written before the next
run starts (the flushes *during* a logged run are part of its cost).

Per run: tps, statements/s (cross-checked with weir_reads_total by
strategy), and from /metrics the statement-logging counters (records sampled / not, bytes
written (`actual`), throttled, dropped). At the end: throughput logged / unlogged and their
ratio (goal >= 0.97), statements logged per second, bytes written per second, the growth of the
statement-history shards in the Iceberg warehouse, and the rows of
mz_internal.mz_statement_execution_history against the sampled counter.

The goal is stated at 2,000 statements per second: for each workload whose unthrottled runs go
faster than that, a rate-limited variant (`pgbench -R`, --rate statements/s) runs the same
alternation and reports tps and latency (p50/p99 from pgbench's per-transaction log)
with and without logging.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import PROCESSED, TPS, load_avg, run_pgbench, start_weir  # noqa: E402
from tests.integration.server import WeirServer  # noqa: E402

GOAL_RATIO = 0.97
GOAL_RATE = 2000.0  # statements per second
LOGGED, UNLOGGED = 0.99, 0.0
LOOKUP = "SELECT * FROM t WHERE id = {}"
HISTORY_BUILTINS = ("mz_statement_execution_history_raw", "mz_statement_lifecycle_history_raw",
                    "mz_prepared_statement_history_raw", "mz_session_history_raw")
_LATENCY = re.compile(r"^latency average = ([0-9.]+) ms", re.M)
_LAG = re.compile(r"^rate limit schedule lag: avg ([0-9.]+) \(max ([0-9.]+)\) ms", re.M)
SERIES = {  # /metrics sample -> short name
    'weir_statement_logging_records_total{sampled="true"}': "sampled",
    'weir_statement_logging_records_total{sampled="false"}': "unsampled",
    "weir_statement_logging_actual_bytes_total": "actual_bytes",
    "weir_statement_logging_unsampled_bytes_total": "unsampled_bytes",
    "weir_statement_logging_throttled_total": "throttled",
    "weir_statement_logging_dropped_total": "dropped",
    'weir_reads_total{strategy="fast-path"}': "fast_path",
    'weir_reads_total{strategy="constant"}': "constant",
    'weir_reads_total{strategy="standard"}': "standard",
}


def metrics(weir: WeirServer) -> dict[str, float]:
    """The statement-logging and read counters, one /metrics scrape."""
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{weir.http_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = dict.fromkeys(SERIES.values(), 0.0)
    for line in text.splitlines():
        key, _, value = line.rpartition(" ")
        if key in SERIES:
            out[SERIES[key]] = float(value)
    return out


@dataclass
class Run:
    side: str  # "logged" / "unlogged"
    rate_limited: bool
    tps: float
    seconds: float
    processed: int
    failed: int
    latency_ms: float
    lag_ms: float | None
    deltas: dict[str, float]
    per_txn: int = 2  # statements per pgbench transaction
    latencies_us: list[int] = field(default_factory=list)

    @property
    def statements_per_s(self) -> float:
        return self.tps * self.per_txn


def pgbench(script: Path, weir: WeirServer, args: argparse.Namespace, duration: int, *,
            rate: float | None, logdir: Path, per_txn: int = 2) -> tuple[float, int, int, float, float | None, list[int], str]:
    """One pgbench run: (tps, processed, failed, latency avg ms, schedule lag ms, per-txn latencies
    in us (rate-limited runs only), output)."""
    for f in logdir.glob("pgbench_log.*"):
        f.unlink()
    argv = ["pgbench", "-n", "-M", "prepared", "-f", str(script), "-c", str(args.clients),
            "-j", str(args.threads), "-T", str(duration), "-h", "127.0.0.1", "-p", str(weir.sql_port),
            "-U", "materialize"]
    if rate is not None:
        argv += ["-R", f"{rate / per_txn:.0f}", "-l"]
    argv.append("materialize")
    tps, failed, text = run_pgbench(argv, duration + 120, cwd=logdir)
    processed = PROCESSED.search(text)
    lat = _LATENCY.search(text)
    lag = _LAG.search(text)
    latencies: list[int] = []
    for f in logdir.glob("pgbench_log.*"):
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[2].isdigit():
                latencies.append(int(parts[2]))  # client, txn no, latency us, script, epoch s, us[, lag]
        f.unlink()
    return (tps, int(processed.group(1)) if processed else 0,
            failed, float(lat.group(1)) if lat else float("nan"),
            float(lag.group(1)) if lag else None, latencies, text)


def set_default_rate(conn, rate: float) -> None:  # noqa: ANN001 - psycopg connection
    conn.execute(f"ALTER SYSTEM SET statement_logging_default_sample_rate = {rate}")
    got = conn.execute("SHOW statement_logging_default_sample_rate").fetchone()[0]
    if abs(float(got) - rate) > 1e-9:
        raise RuntimeError(f"ALTER SYSTEM SET statement_logging_default_sample_rate = {rate}: SHOW says {got}")


def shard_bytes(weir: WeirServer) -> dict[str, int]:
    """Bytes on disk (data + Iceberg metadata) of each statement-history shard."""
    from weir.catalog.builtins import by_name

    warehouse = weir.data_dir / "warehouse"
    out: dict[str, int] = {}
    for name in HISTORY_BUILTINS:
        b = by_name("mz_internal", name)
        dirs = [p for p in warehouse.glob(f"*/{b.id}") if p.is_dir()] if b is not None else []
        out[name] = sum(f.stat().st_size for d in dirs for f in d.rglob("*") if f.is_file())
    return out


def pct(values: list[int], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s)) - 1))] if s else float("nan")


def fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


def run_alternating(weir: WeirServer, conn, workload: Workload, args: argparse.Namespace, rounds: int,  # noqa: ANN001
                    duration: int, gap: float, *, rate: float | None, logdir: Path) -> list[Run]:
    runs: list[Run] = []
    for rnd in range(rounds):
        order = (("logged", LOGGED), ("unlogged", UNLOGGED))
        if rnd % 2:
            order = order[::-1]
        for side, sample_rate in order:
            set_default_rate(conn, sample_rate)
            before = metrics(weir)
            t0 = time.monotonic()
            tps, processed, failed, lat, lag, lats, _ = pgbench(workload.script, weir, args, duration, rate=rate,
                                                                logdir=logdir, per_txn=workload.per_txn)
            seconds = time.monotonic() - t0
            after = metrics(weir)
            deltas = {k: after[k] - before[k] for k in after}
            run = Run(side, rate is not None, tps, seconds, processed, failed, lat, lag, deltas,
                      workload.per_txn, lats)
            runs.append(run)
            reads = deltas["fast_path"] + deltas["constant"]
            frac = deltas["sampled"] / max(1.0, deltas["sampled"] + deltas["unsampled"])
            extra = f"  p99 {pct(lats, 99) / 1000:6.2f} ms" if lats else ""
            print(f"  round {rnd + 1} {side:8s} {tps:8.1f} tps  {run.statements_per_s:8.1f} stmt/s  "
                  f"lat {lat:6.2f} ms{extra}  reads {reads:7.0f} (fast {deltas['fast_path']:.0f})  "
                  f"sampled {deltas['sampled']:7.0f} ({frac:.3f})  written {deltas['actual_bytes'] / 1e6:6.2f} MB"
                  + (f"  FAILED {failed}" if failed else "")
                  + (f"  throttled {deltas['throttled']:.0f}" if deltas["throttled"] else "")
                  + (f"  DROPPED {deltas['dropped']:.0f}" if deltas["dropped"] else "")
                  + f"  [load {load_avg()}]", flush=True)
            if workload.lookups and processed and deltas["fast_path"] < 0.9 * processed:
                print(f"    WARNING: {processed} transactions but only {deltas['fast_path']:.0f} fast-path reads")
            time.sleep(gap)
    return runs


def summarize(runs: list[Run], title: str) -> dict[str, float]:
    on = [r for r in runs if r.side == "logged"]
    off = [r for r in runs if r.side == "unlogged"]

    def total(rs: list[Run], key: str) -> float:
        return sum(r.deltas[key] for r in rs)

    on_s = sum(r.seconds for r in on)
    off_s = sum(r.seconds for r in off)
    on_tps = sum(r.tps * r.seconds for r in on) / on_s  # time-weighted mean
    off_tps = sum(r.tps * r.seconds for r in off) / off_s
    ratios = [a.tps / b.tps for a, b in zip(on, off, strict=False)]
    s: dict[str, float] = {
        "on_tps": on_tps, "off_tps": off_tps, "ratio": on_tps / off_tps,
        "median_pair_ratio": statistics.median(ratios),
        "on_stmt": on_tps * on[0].per_txn, "off_stmt": off_tps * on[0].per_txn,
        "logged_per_s": total(on, "sampled") / on_s,
        "bytes_per_s": total(on, "actual_bytes") / on_s,
        "would_be_bytes_per_s": total(on, "unsampled_bytes") / on_s,
        "dropped": total(runs, "dropped"), "throttled": total(runs, "throttled"),
        "failed": float(sum(r.failed for r in runs)),
        "sampled_off": total(off, "sampled"),
        "on_lat": statistics.mean(r.latency_ms for r in on),
        "off_lat": statistics.mean(r.latency_ms for r in off),
    }
    print(f"\n## {title}")
    print(f"{'':10s} {'tps':>9s} {'stmt/s':>9s} {'lat ms':>8s}" + ("  p50 ms  p99 ms" if on[0].latencies_us else "")
          + "   runs (tps)")
    for name, rs, tps in (("logged", on, on_tps), ("unlogged", off, off_tps)):
        lats = [x for r in rs for x in r.latencies_us]
        p = f"  {pct(lats, 50) / 1000:6.2f}  {pct(lats, 99) / 1000:6.2f}" if lats else ""
        if lats:
            s[f"{'on' if name == 'logged' else 'off'}_p50"] = pct(lats, 50) / 1000
            s[f"{'on' if name == 'logged' else 'off'}_p99"] = pct(lats, 99) / 1000
        print(f"{name:10s} {tps:9.1f} {tps * rs[0].per_txn:9.1f} {statistics.mean(r.latency_ms for r in rs):8.2f}"
              f"{p}   {', '.join(f'{r.tps:.0f}' for r in rs)}")
    print(f"ratio logged/unlogged: {s['ratio']:.3f} (time-weighted means; median of paired runs "
          f"{s['median_pair_ratio']:.3f}: {', '.join(f'{x:.3f}' for x in ratios)})")
    print(f"statements logged: {s['logged_per_s']:,.0f}/s; bytes written (actual): {s['bytes_per_s'] / 1e3:,.1f} kB/s "
          f"(if every statement were logged: {s['would_be_bytes_per_s'] / 1e3:,.1f} kB/s)")
    print(f"dropped {s['dropped']:.0f}, throttled {s['throttled']:.0f}, failed transactions {s['failed']:.0f}, "
          f"sampled in unlogged runs {s['sampled_off']:.0f}")
    return s


def profile(pyspy: str, weir: WeirServer, conn, workload: Workload, args: argparse.Namespace,  # noqa: ANN001
            base: Path, gap: float) -> None:
    """py-spy on weir during a logged and an unlogged run; the statement log's share of each."""
    sys.path.insert(0, str(ROOT / "bench"))
    from pgwire import summarize_pyspy

    assert weir.proc is not None
    duration = max(args.duration, 10)
    for side, rate in (("logged", LOGGED), ("unlogged", UNLOGGED)):
        set_default_rate(conn, rate)
        raw = base / f"pyspy-{side}.txt"
        bench = subprocess.Popen(
            ["pgbench", "-n", "-M", "prepared", "-f", str(workload.script), "-c", str(args.clients), "-j",
             str(args.threads), "-T", str(duration + 4), "-h", "127.0.0.1", "-p", str(weir.sql_port),
             "-U", "materialize", "materialize"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            time.sleep(2)
            subprocess.run([pyspy, "record", "-p", str(weir.proc.pid), "-d", str(duration), "-r", "200",
                            "-f", "raw", "-o", str(raw)], capture_output=True, text=True,
                           timeout=duration + 60, check=True)
        finally:
            out, _ = bench.communicate(timeout=duration + 120)
        m = TPS.search(out or "")
        print(f"\n## py-spy of weir, {workload.name}, {side} ({m.group(1) if m else '?'} tps while sampled)")
        print(summarize_pyspy(raw, top=40))
        keep = Path(tempfile.gettempdir()) / f"weir-bench-stmtlog-pyspy-{side}.txt"
        shutil.copy(raw, keep)
        print(f"(raw stacks: {keep})")
        time.sleep(gap)


@dataclass
class Workload:
    name: str
    what: str
    script: Path
    per_txn: int  # statements per pgbench transaction
    lookups: bool  # has a fast-path lookup


def workloads(base: Path, rows: int) -> dict[str, Workload]:
    mix = base / "mix.sql"
    mix.write_text(f"\\set id random(0, {rows - 1})\nSELECT * FROM t WHERE id = :id;\nSELECT 1;\n")
    const = base / "select1.sql"
    const.write_text("SELECT 1;\n")
    return {"mix": Workload("mix", "fast-path lookup + `SELECT 1`", mix, 2, True),
            "constant": Workload("constant", "`SELECT 1` only", const, 1, False)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--duration", type=int, default=10, help="seconds per pgbench run")
    ap.add_argument("--rounds", type=int, default=6, help="logged + unlogged runs (--rounds x --duration per side)")
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--workloads", default="mix,constant",
                    help="comma-separated: mix (fast-path lookup + SELECT 1), constant (SELECT 1 only)")
    ap.add_argument("--rate", type=float, default=GOAL_RATE,
                    help="statements/s of the rate-limited variant (pgbench -R); 0 skips it")
    ap.add_argument("--rate-rounds", type=int, default=3)
    ap.add_argument("--gap", type=float, default=None,
                    help="seconds between runs (default: statement_log_flush_interval + 1)")
    ap.add_argument("--no-count", action="store_true", help="skip counting mz_statement_execution_history")
    ap.add_argument("--profile", nargs="?", const="constant", choices=["mix", "constant"],
                    help="+ py-spy of weir during a logged and an unlogged run of this workload (default constant)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if shutil.which("pgbench") is None:
        print("pgbench not found (apt-get install postgresql-client)", file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="weir-bench-stmtlog-"))
    all_wl = workloads(base, args.rows)
    chosen = [all_wl[n.strip()] for n in args.workloads.split(",") if n.strip()]
    print(f"load average at start: {load_avg()} (2 cores, shared)")
    weir = WeirServer(base / "weir")
    try:
        start_weir(weir)
        conn = weir.connect()
        conn.execute("SET statement_history_sample_rate = 0")  # the control session is not measured
        interval = conn.execute("SHOW statement_log_flush_interval").fetchone()[0]
        gap = args.gap if args.gap is not None else _seconds(interval) + 1
        max_rate = conn.execute("SHOW statement_history_max_sample_rate").fetchone()[0]
        mode = conn.execute("SHOW statement_logging_mode").fetchone()[0]
        print(f"statement_logging_mode {mode}, statement_history_max_sample_rate {max_rate}, "
              f"statement_log_flush_interval {interval}; {gap:.0f} s between runs")
        conn.execute("CREATE TABLE t (id bigint, name text, amount double precision)")
        t0 = time.monotonic()
        conn.execute(f"INSERT INTO t SELECT id, 'name' || id, id * 0.5 FROM generate_series(0, {args.rows} - 1) AS s(id)")
        conn.execute("CREATE INDEX t_id ON t (id)")
        while "fast path" not in conn.execute("EXPLAIN " + LOOKUP.format(1)).fetchone()[0] or \
                weir.metric("weir_reads_total", strategy="fast-path") == 0:
            conn.execute(LOOKUP.format(1)).fetchall()
            time.sleep(0.2)
        print(f"{args.rows:,} rows loaded and indexed, fast path serving in {time.monotonic() - t0:.1f}s")
        if conn.execute(LOOKUP.format(7)).fetchall() != [(7, "name7", 3.5)]:
            raise RuntimeError("wrong lookup result")
        disk_before = shard_bytes(weir)
        for wl in chosen:  # warm up: one short run per workload and side
            for rate in (LOGGED, UNLOGGED):
                set_default_rate(conn, rate)
                pgbench(wl.script, weir, args, 3, rate=None, logdir=base, per_txn=wl.per_txn)
        time.sleep(gap)
        all_runs: list[Run] = []
        results: dict[str, tuple[dict[str, float], dict[str, float] | None]] = {}
        for wl in chosen:
            print(f"\n# workload {wl.name}: {wl.what}, {wl.per_txn} statement(s) per transaction")
            print(f"pgbench -n -M prepared -c {args.clients} -j {args.threads} -T {args.duration}, "
                  f"{args.rounds} round(s) per side, alternating [load {load_avg()}]")
            runs = run_alternating(weir, conn, wl, args, args.rounds, args.duration, gap, rate=None, logdir=base)
            all_runs += runs
            full = summarize(runs, f"{wl.name}, unthrottled: {args.clients} clients, "
                                   f"{args.rounds} x {args.duration} s per side")
            limited: dict[str, float] | None = None
            if args.rate > 0 and args.rate_rounds > 0:
                if full["off_stmt"] > args.rate * 1.05:
                    print(f"\n{wl.name}, rate-limited: pgbench -R {args.rate / wl.per_txn:.0f} "
                          f"({args.rate:,.0f} statements/s), {args.rate_rounds} round(s) per side [load {load_avg()}]")
                    lruns = run_alternating(weir, conn, wl, args, args.rate_rounds, args.duration, gap,
                                            rate=args.rate, logdir=base)
                    all_runs += lruns
                    limited = summarize(lruns, f"{wl.name}, rate-limited to {args.rate:,.0f} statements/s")
                else:
                    print(f"\n{wl.name}: the rate-limited variant is skipped: unlogged throughput "
                          f"{full['off_stmt']:,.0f} statements/s does not exceed {args.rate:,.0f}")
            results[wl.name] = (full, limited)
        if args.profile:
            pyspy = os.environ.get("WEIR_BENCH_PYSPY") or shutil.which("py-spy")
            if pyspy is None:
                print("\n--profile: py-spy not found (pip install --target /tmp/pyspy py-spy; "
                      "WEIR_BENCH_PYSPY=/tmp/pyspy/bin/py-spy)")
            else:
                profile(pyspy, weir, conn, all_wl[args.profile], args, base, gap)
        set_default_rate(conn, UNLOGGED)
        time.sleep(gap)  # the last buffer is written
        m = metrics(weir)
        disk_after = shard_bytes(weir)
        grown = {k: disk_after[k] - disk_before[k] for k in disk_after}
        logged_s = sum(r.seconds for r in all_runs if r.side == "logged")
        print("\n## statement-history shards in the warehouse (data + Iceberg metadata on disk), whole run")
        for k, v in grown.items():
            print(f"  {k:40s} {disk_before[k] / 1e6:8.2f} MB -> {disk_after[k] / 1e6:8.2f} MB  ({v / 1e6:+.2f} MB)")
        iceberg_per_s = sum(grown.values()) / logged_s
        counted = sum(r.deltas["actual_bytes"] for r in all_runs) / logged_s
        print(f"  growth per second of logged runs: {iceberg_per_s / 1e3:,.1f} kB/s "
              f"(the 'actual bytes' counter over the same runs: {counted / 1e3:,.1f} kB/s)")
        if not args.no_count:
            t0 = time.monotonic()
            history = conn.execute("SELECT count(*) FROM mz_internal.mz_statement_execution_history").fetchone()[0]
            print(f"\nmz_internal.mz_statement_execution_history: {history:,} rows (count took "
                  f"{time.monotonic() - t0:.1f}s); sampled counter since start {m['sampled']:,.0f}"
                  f"{' (equal)' if history == m['sampled'] else ''}")
        ok_dropped = m["dropped"] == 0 and m["throttled"] == 0
        print("\n## goals (logged >= 0.97 x unlogged throughput, nothing dropped, at 2,000 statements/s)")
        print(f"dropped {m['dropped']:.0f}, throttled {m['throttled']:.0f} over the whole run: "
              f"{'MET' if ok_dropped else 'NOT MET'}")
        for name, (full, limited) in results.items():
            ok = full["ratio"] >= GOAL_RATIO
            print(f"{name}: unthrottled logged/unlogged {full['ratio']:.3f} at {full['off_stmt']:,.0f} statements/s: "
                  f"{'MET' if ok else 'NOT MET'}")
            if limited is not None:
                ok = limited["ratio"] >= GOAL_RATIO
                print(f"{name}: at {args.rate:,.0f} statements/s: logged {limited['on_stmt']:,.0f} vs unlogged "
                      f"{limited['off_stmt']:,.0f} statements/s ({limited['ratio']:.3f}: {'MET' if ok else 'NOT MET'}); "
                      f"latency p50 {limited.get('on_p50', 0):.2f} vs {limited.get('off_p50', 0):.2f} ms, p99 "
                      f"{limited.get('on_p99', 0):.2f} vs {limited.get('off_p99', 0):.2f} ms")
            elif args.rate > 0:
                print(f"{name}: {args.rate:,.0f} statements/s not reached (unlogged: {full['off_stmt']:,.0f})")
        print("\n## for the README (command / what / figure)")
        cfg = f"-M prepared -c {args.clients} -j {args.threads}, {args.rounds} x {args.duration} s per side"
        for name, (full, limited) in results.items():
            wl = all_wl[name]
            print(f"`.venv/bin/python bench/statement_log.py` | pgbench {wl.what} ({cfg}), statement history "
                  f"sampled 0.99 vs 0 | logged {full['on_stmt']:,.0f} vs unlogged {full['off_stmt']:,.0f} "
                  f"statements/s ({full['ratio']:.3f}; goal ≥ {GOAL_RATIO}: {'met' if full['ratio'] >= GOAL_RATIO else 'not met'}); "
                  f"{full['logged_per_s']:,.0f} statements logged/s, {full['bytes_per_s'] / 1e3:,.0f} kB/s written; "
                  f"dropped {full['dropped']:.0f}")
            if limited is not None:
                print(f"`.venv/bin/python bench/statement_log.py` | the same, `pgbench -R "
                      f"{args.rate / wl.per_txn:.0f}` ({args.rate:,.0f} statements/s) | logged "
                      f"{limited['on_stmt']:,.0f} vs unlogged {limited['off_stmt']:,.0f} statements/s; latency p50 "
                      f"{limited.get('on_p50', 0):.2f} / {limited.get('off_p50', 0):.2f} ms, p99 "
                      f"{limited.get('on_p99', 0):.2f} / {limited.get('off_p99', 0):.2f} ms (logged / unlogged); "
                      f"dropped {limited['dropped']:.0f}")
        print(f"shards on disk: +{iceberg_per_s / 1e3:,.0f} kB/s of logged runs; load average at the end: {load_avg()}")
        return 0
    finally:
        weir.stop()
        shutil.rmtree(base, ignore_errors=True)


def _seconds(text: str) -> float:
    """A SHOWn duration ('5s', '500ms', '1min') in seconds."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([a-z]*)\s*", text)
    if m is None:
        return 5.0
    unit = {"": 0.001, "ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0}.get(m.group(2), 1.0)
    return float(m.group(1)) * unit


if __name__ == "__main__":
    sys.exit(main())
