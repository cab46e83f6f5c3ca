"""pgwire round-trip benchmark: pgbench `SELECT 1;` against weir and PostgreSQL, side by side.

    .venv/bin/python bench/pgwire.py [--clients 4] [--threads 2] [--duration 12] [--rounds 2]
    .venv/bin/python bench/pgwire.py --profile            # + a py-spy profile of weir (extended)
    .venv/bin/python bench/pgwire.py --profile cprofile   # + weir under cProfile (separate run)

Starts a real `weir serve` (tests/integration/server.py) and a throwaway PostgreSQL
(tests/pg_server.py) in temp dirs, then runs `pgbench -n -f select1.sql -M MODE` for
MODE in simple / extended / prepared against each, interleaved (weir, postgres, weir,
postgres ... for each round), and prints tps per mode and the ratio weir/postgres.
Both servers are stopped at the end, whatever happens.

Goal: weir >= 2,000 tps with -M extended on the 2-core development machine.

--profile attaches py-spy (on PATH, or WEIR_BENCH_PYSPY=/path/to/py-spy; e.g.
`pip install --target /tmp/pyspy py-spy` then WEIR_BENCH_PYSPY=/tmp/pyspy/bin/py-spy) to
the weir process during one more extended run and prints where the event loop's time goes.
--profile cprofile instead starts a second weir under `python -m cProfile`, runs the
extended workload against it and prints the top functions (cProfile slows weir down a lot,
so only the proportions mean something).
"""

from __future__ import annotations

import argparse
import collections
import os
import pstats
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import TPS, run_pgbench, start_weir  # noqa: E402
from tests.integration.server import WeirServer  # noqa: E402
from tests.pg_server import PgServer, start_pg_server  # noqa: E402

MODES = ("simple", "extended", "prepared")
GOAL_EXTENDED_TPS = 2000.0


def pgbench(script: Path, mode: str, host: str, port: int, user: str, db: str,
            clients: int, threads: int, duration: int) -> tuple[float, int, str]:
    """Run pgbench; (tps, failed transactions, output). Raises if pgbench fails."""
    argv = ["pgbench", "-n", "-f", str(script), "-M", mode, "-c", str(clients),
            "-j", str(threads), "-T", str(duration), "-h", host, "-p", str(port), "-U", user, db]
    return run_pgbench(argv, duration + 120)


class ProfiledWeirServer(WeirServer):
    """A WeirServer started under `python -m cProfile -o FILE` (written on SIGTERM exit)."""

    def __init__(self, data_dir: Path, prof_path: Path) -> None:
        super().__init__(data_dir)
        self.prof_path = prof_path

    def start(self, *, wait_for_replica: bool = True, timeout: float = 240) -> WeirServer:
        import psycopg

        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cProfile", "-o", str(self.prof_path), "-m", "weir.cli", "serve",
             "--data-dir", str(self.data_dir), "--sql-port", str(self.sql_port),
             "--http-port", str(self.http_port)],
            stdout=log, stderr=subprocess.STDOUT, cwd=str(ROOT))
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"weir serve exited; log:\n{self.log_tail()}")
            try:
                with psycopg.connect(self.dsn, autocommit=True, connect_timeout=2) as conn:
                    conn.execute("SELECT count(*) FROM mz_catalog.mz_databases").fetchall()
                    return self
            except Exception:  # noqa: BLE001 - retry until ready
                time.sleep(0.5)
        raise RuntimeError(f"weir serve not ready after {timeout}s; log:\n{self.log_tail()}")


def summarize_pyspy(raw: Path, top: int = 30) -> str:
    """Inclusive and self time per function of the event-loop (main) thread, from py-spy raw."""
    incl: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack.startswith("_run_module_as_main") or not n.isdigit():
            continue  # worker threads (Iceberg commits, sqlite) are reported separately below
        frames = stack.split(";")
        total += int(n)
        own[frames[-1]] += int(n)
        for f in set(frames):
            incl[f] += int(n)
    threads: collections.Counter[str] = collections.Counter()
    all_total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        all_total += int(n)
        frames = stack.split(";")
        if frames[0].startswith("_run_module_as_main"):
            continue
        work = [f for f in frames if "/weir/" in f or f.startswith(("Shard.", "_commit"))]
        key = work[0] if work else frames[-1]
        threads[key] += int(n)
    lines = [f"event-loop thread: {total} samples; inclusive % of them (weir frames and hot spots):"]
    shown = 0
    for f, n in incl.most_common():
        if shown >= top:
            break
        if any(s in f for s in ("runpy", "asyncio/", "cli.py", "events.py")):
            continue
        lines.append(f"  {100 * n / max(total, 1):5.1f}%  {f}")
        shown += 1
    lines.append("event-loop thread, self time (top 15):")
    for f, n in own.most_common(15):
        lines.append(f"  {100 * n / max(total, 1):5.1f}%  {f}")
    lines.append(f"other threads ({all_total - total} samples incl. idle pool workers), by entry:")
    for f, n in threads.most_common(8):
        lines.append(f"  {n:6d}  {f}")
    return "\n".join(lines)


def profile_pyspy(pyspy: str, weir: WeirServer, script: Path, args: argparse.Namespace) -> None:
    assert weir.proc is not None
    raw = Path(tempfile.mkdtemp(prefix="weir-bench-prof-")) / "pyspy.txt"
    duration = max(args.duration, 10)
    bench = subprocess.Popen(
        ["pgbench", "-n", "-f", str(script), "-M", "extended", "-c", str(args.clients),
         "-j", str(args.threads), "-T", str(duration + 4), "-h", "127.0.0.1",
         "-p", str(weir.sql_port), "-U", "materialize", "materialize"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(2)
        subprocess.run([pyspy, "record", "-p", str(weir.proc.pid), "-d", str(duration), "-r", "200",
                        "-f", "raw", "-o", str(raw)], capture_output=True, text=True, timeout=duration + 60,
                       check=True)
    finally:
        out, _ = bench.communicate(timeout=duration + 120)
    m = TPS.search(out or "")
    print(f"\n## py-spy profile of weir during pgbench -M extended ({m.group(1) if m else '?'} tps while sampled)")
    print(summarize_pyspy(raw))
    print(f"(raw stacks: {raw})")


def profile_cprofile(script: Path, args: argparse.Namespace, base: Path) -> None:
    prof = base / "weir.cprofile"
    server = ProfiledWeirServer(base / "weir-prof", prof)
    try:
        server.start()
        tps, _, _ = pgbench(script, "extended", "127.0.0.1", server.sql_port, "materialize",
                            "materialize", args.clients, args.threads, max(args.duration, 10))
    finally:
        server.stop()
    print(f"\n## cProfile of weir during pgbench -M extended ({tps:.0f} tps under cProfile)")
    if not prof.exists():
        print("(no profile written: weir did not exit cleanly)")
        return
    stats = pstats.Stats(str(prof))
    stats.sort_stats("cumulative").print_stats(r"weir/|sqlalchemy/engine/base|sqlglot/expressions", 40)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--duration", type=int, default=12, help="seconds per pgbench run")
    ap.add_argument("--rounds", type=int, default=2, help="runs per (mode, server), interleaved")
    ap.add_argument("--profile", nargs="?", const="py-spy", choices=["py-spy", "cprofile"])
    args = ap.parse_args()
    # SIGTERM -> SystemExit, so the finally blocks stop both servers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if shutil.which("pgbench") is None:
        print("pgbench not found (apt-get install postgresql-client)", file=sys.stderr)
        return 2

    base = Path(tempfile.mkdtemp(prefix="weir-bench-pgwire-"))
    script = base / "select1.sql"
    script.write_text("SELECT 1;\n")
    weir: WeirServer | None = None
    pg: PgServer | None = None
    results: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    failed = 0
    try:
        weir = start_weir(WeirServer(base / "weir"))
        pg = start_pg_server()
        print(f"{pg.version} started (port {pg.port})")
        targets = {
            "weir": ("127.0.0.1", weir.sql_port, "materialize", "materialize"),
            "postgres": (pg.host, pg.port, pg.user, "postgres"),
        }
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"load average before the runs: {load} (2 cores: other load skews tps)")
        print(f"pgbench -n -f select1.sql -c {args.clients} -j {args.threads} -T {args.duration}, "
              f"{args.rounds} round(s) per mode and server\n")
        for mode in MODES:
            for rnd in range(args.rounds):
                for name, (host, port, user, db) in targets.items():
                    tps, nfail, _ = pgbench(script, mode, host, port, user, db,
                                            args.clients, args.threads, args.duration)
                    failed += nfail
                    results[(mode, name)].append(tps)
                    print(f"  {mode:9s} round {rnd + 1}  {name:8s} {tps:10.1f} tps"
                          + (f"  ({nfail} failed)" if nfail else ""), flush=True)
        if args.profile == "py-spy":
            pyspy = os.environ.get("WEIR_BENCH_PYSPY") or shutil.which("py-spy")
            if pyspy is None:
                print("\n--profile: py-spy not found (pip install --target /tmp/pyspy py-spy; "
                      "WEIR_BENCH_PYSPY=/tmp/pyspy/bin/py-spy); try --profile cprofile")
            else:
                profile_pyspy(pyspy, weir, script, args)
    finally:
        if weir is not None:
            weir.stop()
        if pg is not None:
            pg.stop()
            shutil.rmtree(pg.base, ignore_errors=True)
    if args.profile == "cprofile":
        profile_cprofile(script, args, base)

    print("\n## pgbench SELECT 1 (tps, median of rounds; higher is better)")
    print(f"{'mode':10s} {'weir tps':>10s} {'postgres tps':>13s} {'weir/postgres':>14s}")
    summary: dict[str, float] = {}
    for mode in MODES:
        w = statistics.median(results[(mode, "weir")])
        p = statistics.median(results[(mode, "postgres")])
        summary[mode] = w
        spread = f"  (weir runs: {', '.join(f'{x:.0f}' for x in results[(mode, 'weir')])})"
        print(f"{mode:10s} {w:10.0f} {p:13.0f} {w / p:14.3f}{spread}")
    if failed:
        print(f"WARNING: {failed} failed transactions")
    ok = summary["extended"] >= GOAL_EXTENDED_TPS
    print(f"\ngoal: weir >= {GOAL_EXTENDED_TPS:.0f} tps extended: {'MET' if ok else 'NOT MET'} "
          f"({summary['extended']:.0f})")
    print("\n## for the README (command / figure)")
    cfg = f"-c {args.clients} -j {args.threads} -T {args.duration}"
    for mode in MODES:
        w = statistics.median(results[(mode, "weir")])
        p = statistics.median(results[(mode, "postgres")])
        print(f"`.venv/bin/python bench/pgwire.py` / pgbench SELECT 1 -M {mode} {cfg}: "
              f"weir {w:,.0f} tps, PostgreSQL {p:,.0f} tps (weir/postgres {w / p:.3f})")
    shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
