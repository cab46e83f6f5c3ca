"""Peek benchmark: fast-path index lookups vs slow-path Spark SELECTs on the same data.

    .venv/bin/python bench/peek.py [--rows 100000] [--lookups 400] [--slow 40]

Starts a real `weir serve` (tests/integration/server.py) in a temp dir, loads
`peek_bench (id bigint, grp int, name text, amount double precision)` with N rows and
creates `CREATE INDEX ON peek_bench (id)` on the quickstart cluster (one `local[1]`
replica). Then, over one psycopg connection with prepared statements, interleaved:

  fast:  SELECT * FROM peek_bench WHERE id = $1        -- answered from the index's
                                                          arrangement, no Spark job
  slow:  SELECT * FROM peek_bench WHERE id + 0 = $1    -- the same rows, but the filter
                                                          is not a key lookup: a Spark job

Each latency is one round trip measured by the client (execute + fetchall), random ids.
Prints p50/p99 of each and the ratio slow/fast (goal: fast path p50 under 5 ms), and
checks every answer against the expected row. The fast-path counter on /metrics
(weir_reads_total{strategy="fast-path"}) confirms which path ran.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.integration.server import WeirServer  # noqa: E402

FAST = "SELECT * FROM peek_bench WHERE id = %s"
SLOW = "SELECT * FROM peek_bench WHERE id + 0 = %s"


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s)) - 1))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--lookups", type=int, default=400, help="timed fast-path lookups")
    ap.add_argument("--slow", type=int, default=40, help="timed slow-path queries (interleaved)")
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    base = Path(tempfile.mkdtemp(prefix="weir-bench-peek-"))
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (2 cores, shared)")
    weir = WeirServer(base / "weir")
    try:
        weir.start()
        conn = weir.connect()
        conn.execute("CREATE TABLE peek_bench (id bigint, grp int, name text, amount double precision)")
        t0 = time.monotonic()
        conn.execute(f"INSERT INTO peek_bench SELECT id, id % 100, 'name' || id, id * 0.5 FROM generate_series(0, {args.rows} - 1) AS s(id)")
        print(f"loaded {args.rows:,} rows in {time.monotonic() - t0:.1f}s")
        t0 = time.monotonic()
        conn.execute("CREATE INDEX peek_bench_id ON peek_bench (id)")
        while "fast path" not in conn.execute("EXPLAIN " + FAST % 1).fetchone()[0] or \
                weir.metric("weir_reads_total", strategy="fast-path") == 0:
            conn.execute(FAST, (1,)).fetchall()
            time.sleep(0.2)
        print(f"index hydrated and serving in {time.monotonic() - t0:.1f}s")
        rng = random.Random(7)

        def run(sql: str) -> float:
            i = rng.randrange(args.rows)
            t = time.perf_counter()
            rows = conn.execute(sql, (i,), prepare=True).fetchall()
            dt = time.perf_counter() - t
            if rows != [(i, i % 100, f"name{i}", i * 0.5)]:
                raise RuntimeError(f"{sql} with {i}: {rows}")
            return dt

        for _ in range(args.warmup):
            run(FAST)
        run(SLOW)
        fast_before = weir.metric("weir_reads_total", strategy="fast-path")
        fast: list[float] = []
        slow: list[float] = []
        every = max(1, args.lookups // max(1, args.slow))
        for n in range(args.lookups):
            fast.append(run(FAST))
            if n % every == 0 and len(slow) < args.slow:
                slow.append(run(SLOW))
        ran_fast = weir.metric("weir_reads_total", strategy="fast-path") - fast_before
        if ran_fast != len(fast):
            raise RuntimeError(f"{len(fast)} lookups but {ran_fast:.0f} on the fast path")
        f50, f99 = pct(fast, 50) * 1000, pct(fast, 99) * 1000
        s50, s99 = pct(slow, 50) * 1000, pct(slow, 99) * 1000
        print(f"\n{'path':<10}{'n':>6}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}")
        print(f"{'fast':<10}{len(fast):>6}{f50:>10.2f}{f99:>10.2f}{statistics.mean(fast) * 1000:>10.2f}")
        print(f"{'slow':<10}{len(slow):>6}{s50:>10.2f}{s99:>10.2f}{statistics.mean(slow) * 1000:>10.2f}")
        print(f"\nratio slow/fast: p50 {s50 / f50:.0f}x, p99 {s99 / f99:.0f}x")
        print(f"goal: fast path p50 under 5 ms: {'met' if f50 < 5 else 'NOT met'}")
        print(f"\nREADME: `.venv/bin/python bench/peek.py` | {args.rows:,} rows, index lookup by id vs the "
              f"same rows through a Spark job | fast p50 {f50:.2f} ms / p99 {f99:.2f} ms; "
              f"slow p50 {s50:.0f} ms / p99 {s99:.0f} ms ({s50 / f50:.0f}x at p50)")
        return 0
    finally:
        weir.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
