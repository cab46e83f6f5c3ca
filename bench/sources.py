"""Load generator benchmark: how long a TPC-H snapshot takes to generate (no Spark).

    .venv/bin/python bench/sources.py [--runs 5] [--scale 0.01]

Generates the whole TPC-H snapshot at the scale factor (0.01 is Materialize's default:
~87,000 rows over eight tables) RUNS times and prints each run, the median and the load
average. Goal: under 5 s at SF 0.01 (it was a timed unit test before; timings belong here).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import load_avg  # noqa: E402
from weir.storage.sources import LoadGenerator, parse_options  # noqa: E402

GOAL_S = 5.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--scale", default="0.01")
    args = ap.parse_args()
    print(f"load average before: {load_avg()}")
    times = []
    for i in range(args.runs):
        t0 = time.monotonic()
        snap = LoadGenerator(parse_options("tpch", {"SCALE FACTOR": args.scale}), epoch_ms=0).snapshot()
        times.append(time.monotonic() - t0)
        rows = sum(t.num_rows for t in snap.values())
        print(f"  run {i + 1}: {times[-1]:.2f} s, {rows:,} rows")
    median = statistics.median(times)
    print(f"load average after: {load_avg()}")
    print(f"TPC-H SF {args.scale} snapshot: median {median:.2f} s over {args.runs} runs "
          f"(goal < {GOAL_S:.0f} s at SF 0.01: {'MET' if median < GOAL_S else 'NOT MET'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
