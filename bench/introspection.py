"""Overhead of replicated compute introspection: a cluster with it on beside one with it
off, measured side by side in one run (issue 12: goal ≤ 3 % worse).

    .venv/bin/python bench/introspection.py [--probes 40] [--peeks 30] [--rows 20000]

Starts a real `weir serve`, then clusters `b_on` (INTROSPECTION INTERVAL '1s', the
default: the replica collects its logs from Spark's listener events and appends them to
its introspection shard every second) and `b_off` (INTROSPECTION INTERVAL 0: nothing
collected, no shard), one replica of size '1' each. On each the same join + aggregate
materialized view over the same two tables (fact: --rows rows, dim: 1,000 rows).

- freshness: one probe row at a time is inserted into the shared input; a SUBSCRIBE to
  each view (bench/freshness.py's Subscriber) timestamps its arrival, so each probe is one
  sample for both clusters at once (interleaved by construction);
- slow-path peek latency: the same join + aggregate query (not indexed), alternating
  `SET cluster = b_on / b_off` each iteration;
- cost: CPU seconds of each replica (its Python process and JVM) and of the coordinator
  over the run, the introspection shard's commits (weir_replica_introspection_commits) and
  its bytes in the warehouse, per minute.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402
import psycopg  # noqa: E402

from bench.common import load_avg, start_weir  # noqa: E402
from bench.freshness import Subscriber, pct  # noqa: E402
from tests.integration.server import WeirServer  # noqa: E402

PROBE = 1_000_000_000
VIEW = ("SELECT d.name, count(*) AS n, sum(f.v) AS s FROM b_fact f JOIN b_dim d ON f.k = d.k "
        "GROUP BY d.name")
PEEK = ("SELECT d.name, count(*), sum(f.v) FROM b_fact f JOIN b_dim d ON f.k = d.k "
        "WHERE f.v % 7 <> 3 GROUP BY d.name ORDER BY 2 DESC LIMIT 5")


def _replica(c: psycopg.Connection, cluster: str) -> str:
    return c.execute("SELECT r.id FROM mz_catalog.mz_cluster_replicas r JOIN mz_catalog.mz_clusters c "
                     "ON r.cluster_id = c.id WHERE c.name = %s", (cluster,)).fetchone()[0]


def _procs(replica_id: str) -> list[psutil.Process]:
    out = subprocess.run(["pgrep", "-f", f"weir.compute.replica .*--replica-id {replica_id}( |$)"],
                         capture_output=True, text=True).stdout.split()
    procs = [psutil.Process(int(p)) for p in out]
    return procs + [ch for p in procs for ch in p.children(recursive=True)]


def _cpu(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return total


def _metric(http_port: int, name: str, replica_id: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=10).read().decode()
    for line in text.splitlines():
        if line.startswith(name + "{") and f'replica_id="{replica_id}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--probes", type=int, default=40)
    ap.add_argument("--peeks", type=int, default=30)
    ap.add_argument("--rows", type=int, default=20000)
    args = ap.parse_args()
    print(f"load average at start: {load_avg()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="weir-bench-intro-") as tmp:
        weir = start_weir(WeirServer(Path(tmp) / "data"))
        try:
            return _run(weir, args)
        finally:
            weir.stop()


def _run(weir: WeirServer, args: argparse.Namespace) -> int:
    c = psycopg.connect(weir.dsn, autocommit=True)
    c.execute("CREATE CLUSTER b_on (SIZE '1', INTROSPECTION INTERVAL '1s')")
    c.execute("CREATE CLUSTER b_off (SIZE '1', INTROSPECTION INTERVAL 0)")
    c.execute("CREATE TABLE b_dim (k int, name text)")
    c.execute("CREATE TABLE b_fact (id bigint, k int, v int)")
    c.execute("INSERT INTO b_dim SELECT g, 'n' || (g % 50) FROM generate_series(0, 999) AS g")
    c.execute("INSERT INTO b_dim VALUES (1000, 'probe')")
    c.execute(f"INSERT INTO b_fact SELECT g, g % 1000, g % 97 FROM generate_series(1, {args.rows}) AS g")
    for side in ("on", "off"):
        c.execute(f"CREATE MATERIALIZED VIEW b_agg_{side} IN CLUSTER b_{side} AS {VIEW}")
    on, off = _replica(c, "b_on"), _replica(c, "b_off")
    subs = {side: Subscriber(weir.dsn, f"SUBSCRIBE (SELECT * FROM b_agg_{side} WHERE name = 'probe') "
                                       "WITH (SNAPSHOT false, PROGRESS)", lambda d: int(d[1]))
            for side in ("on", "off")}
    for s in subs.values():
        s.wait_live(180)
    for i in range(3):  # warm-up: both dataflows and JVMs see a few updates
        c.execute("INSERT INTO b_fact VALUES (%s, 1000, 1)", (PROBE + i,))
        for s in subs.values():
            s.wait(i + 1, 120)
    procs = {on: _procs(on), off: _procs(off)}
    coord = psutil.Process(weir.proc.pid)  # type: ignore[union-attr]
    cpu0 = {r: _cpu(p) for r, p in procs.items()}
    coord0 = coord.cpu_times()
    commits0 = _metric(weir.http_port, "weir_replica_introspection_commits", on)
    t0 = time.monotonic()
    fresh: dict[str, list[float]] = {"on": [], "off": []}
    for i in range(3, 3 + args.probes):
        c.execute("INSERT INTO b_fact VALUES (%s, 1000, 1)", (PROBE + i,))
        acked = time.perf_counter()
        for side, s in subs.items():
            got = s.wait(i + 1, 120)
            if got is None:
                raise RuntimeError(f"probe {i} never reached b_agg_{side}")
            fresh[side].append(got[0] - acked)
        time.sleep(random.uniform(0.2, 0.6))
    peeks: dict[str, list[float]] = {"on": [], "off": []}
    for i in range(args.peeks):
        for side in (("on", "off") if i % 2 == 0 else ("off", "on")):
            c.execute(f"SET cluster = b_{side}")
            t = time.perf_counter()
            c.execute(PEEK).fetchall()
            peeks[side].append(time.perf_counter() - t)
    c.execute("SET cluster = quickstart")
    minutes = (time.monotonic() - t0) / 60
    cpu = {r: _cpu(procs[r]) - cpu0[r] for r in procs}
    coord1 = coord.cpu_times()
    commits = _metric(weir.http_port, "weir_replica_introspection_commits", on) - commits0
    shard_bytes = _dir_bytes(weir.data_dir / "warehouse" / "weir" / f"introspection_{on}")
    print(f"load average at end: {load_avg()}")
    print(f"{'':24}{'introspection on':>18}{'off':>10}{'on/off':>9}")
    for label, xs in (("freshness p50 (s)", fresh), ("freshness p99 (s)", fresh),
                      ("peek p50 (s)", peeks), ("peek mean (s)", peeks)):
        f = (lambda v: pct(v, 99)) if "p99" in label else (statistics.median if "p50" in label else statistics.mean)
        a, b = f(xs["on"]), f(xs["off"])
        print(f"{label:24}{a:18.3f}{b:10.3f}{a / b:9.3f}")
    print(f"{'replica CPU s / min':24}{cpu[on] / minutes:18.2f}{cpu[off] / minutes:10.2f}{cpu[on] / cpu[off]:9.3f}")
    print(f"coordinator CPU: {(coord1.user + coord1.system - coord0.user - coord0.system) / minutes:.2f} s/min "
          f"(both clusters; its share for introspection: following the shard's reported upper, reads)")
    print(f"introspection commits: {commits / minutes:.1f} per minute; shard on disk {shard_bytes / 1e6:.2f} MB "
          f"after {minutes:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
