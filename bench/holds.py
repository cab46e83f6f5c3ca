"""ALTER HOLD ... ADVANCE throughput (issue 11, part 4): N holds on one table (created by
C sessions at once), then C client sessions each advancing its own share of the holds to
the table's read frontier (`ALTER HOLD h ADVANCE`) as fast as it can, for D seconds.
Prints advances per second (goal: at least 1,000/s with 10,000 holds and 16 clients), the
latency percentiles, the mean batch size (advances per catalog transaction, from /metrics)
and the load average.

    .venv/bin/python bench/holds.py [--holds 10000] [--clients 16] [--duration 20]
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
    ap.add_argument("--holds", type=int, default=10000)
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

            def create(k: int) -> None:
                with srv.connect() as c:
                    for n in range(k, args.holds, args.clients):
                        c.execute(f"CREATE HOLD hb_{n} ON hold_bench")

            makers = [threading.Thread(target=create, args=(k,)) for k in range(args.clients)]
            for t in makers:
                t.start()
            for t in makers:
                t.join()
            created = time.perf_counter() - t0
            with srv.connect() as c:
                assert c.execute("SELECT count(*) FROM mz_catalog.mz_holds").fetchone() == (args.holds,)
            print(f"created {args.holds} holds in {created:.1f} s ({args.holds / created:.0f}/s)")
            latencies: list[float] = []
            counts = [0] * args.clients
            stop = threading.Event()

            def client(k: int) -> None:
                mine = [f"hb_{n}" for n in range(k, args.holds, args.clients)]
                with srv.connect() as c:
                    i = 0
                    while not stop.is_set():
                        start = time.perf_counter()
                        c.execute(f"ALTER HOLD {mine[i % len(mine)]} ADVANCE")
                        latencies.append(time.perf_counter() - start)
                        counts[k] += 1
                        i += 1

            advances0 = srv.metric("weir_hold_advances_total")
            batches0 = srv.metric("weir_hold_advance_batches_total")
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
            advances = srv.metric("weir_hold_advances_total") - advances0
            batches = srv.metric("weir_hold_advance_batches_total") - batches0
            q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
            print(f"{total} advances in {elapsed:.1f} s by {args.clients} clients over {args.holds} holds: "
                  f"{total / elapsed:.0f} advances/s (goal >= 1,000/s); latency p50 {q[49] * 1000:.0f} ms, "
                  f"p99 {q[98] * 1000:.0f} ms; {advances:.0f} advances in {batches:.0f} catalog transactions "
                  f"(mean batch {advances / max(batches, 1):.1f}); load average at end: {load_avg()}")
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
