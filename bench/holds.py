"""ALTER HOLD ... ADVANCE throughput (issue 11, part 4): N holds on one table, C client
sessions each advancing its own share of the holds to the latest time as fast as it can,
for D seconds. Prints advances per second, the load average and the latency percentiles.

    .venv/bin/python bench/holds.py [--holds 1000] [--clients 16] [--duration 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import load_avg, start_weir  # noqa: E402
from tests.integration.server import WeirServer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--holds", type=int, default=1000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--duration", type=float, default=20.0)
    args = ap.parse_args()
    print(f"load average at start: {load_avg()}")
    with tempfile.TemporaryDirectory() as tmp:
        srv = start_weir(WeirServer(Path(tmp) / "data"))
        try:
            with srv.connect() as c:
                c.execute("CREATE TABLE hold_bench (a int)")
                t0 = time.perf_counter()
                for n in range(args.holds):
                    c.execute(f"CREATE HOLD hb_{n} ON hold_bench")
                created = time.perf_counter() - t0
            print(f"created {args.holds} holds in {created:.1f} s ({args.holds / created:.0f}/s)")
            latencies: list[float] = []
            counts = [0] * args.clients
            stop = threading.Event()

            def client(k: int) -> None:
                mine = [f"hb_{n}" for n in range(k, args.holds, args.clients)]
                with srv.connect() as c:
                    i = 0
                    while not stop.is_set():
                        (now,) = c.execute("SELECT mz_now()::text").fetchone()
                        start = time.perf_counter()
                        c.execute(f"ALTER HOLD {mine[i % len(mine)]} ADVANCE TO {int(now) - 1}")
                        latencies.append(time.perf_counter() - start)
                        counts[k] += 1
                        i += 1

            threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
            began = time.perf_counter()
            for t in threads:
                t.start()
            time.sleep(args.duration)
            stop.set()
            for t in threads:
                t.join(60)
            elapsed = time.perf_counter() - began
            total = sum(counts)
            q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
            print(f"{total} advances in {elapsed:.1f} s by {args.clients} clients over {args.holds} holds: "
                  f"{total / elapsed:.0f} advances/s (goal >= 1,000/s); latency p50 {q[49] * 1000:.0f} ms, "
                  f"p99 {q[98] * 1000:.0f} ms; load average at end: {load_avg()}")
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
