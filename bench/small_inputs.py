"""Small inputs read by the replica itself vs scanned by Spark (weir.compute.replica.small_inputs),
side by side on one server: two clusters of one replica each, the same size but for
`spark.weir.smallInputRecords` (default 10,000; 0 on the second: Spark scans every input).
Over the differential suite's five small tables (tests/differential/schema.py), batches of
generated queries run alternately on the two clusters: each batch as a SELECT, then as a
materialized view created and read back (CREATE -> first read).

    .venv/bin/python bench/small_inputs.py [--rounds 5] [--batch 16]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import load_avg, start_weir  # noqa: E402
from tests.differential.generator import Generator  # noqa: E402
from tests.differential.runner import batch_sql, execute, signature  # noqa: E402
from tests.differential.schema import setup_statements  # noqa: E402
from tests.integration.server import WeirServer  # noqa: E402

CLUSTERS = {"bench_small": "1", "bench_scan": "1-scan"}


def _timed(c: object, sql: str) -> float:
    t0 = time.monotonic()
    out = execute(c, sql)  # type: ignore[arg-type]
    if not out.ok:
        raise RuntimeError(f"{sql[:80]}...: {out.show()}")
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    print(f"load average at start: {load_avg()}", flush=True)
    root = Path(tempfile.mkdtemp(prefix="weir-small-"))
    sizes = root / "sizes.json"
    sizes.write_text(json.dumps({"sizes": {"1-scan": {"master": "local[1]", "workers": 1,
                                                      "spark_conf": {"spark.weir.smallInputRecords": "0"}}}}))
    weir = start_weir(WeirServer(root / "data", extra_args=["--replica-sizes", str(sizes)]))
    try:
        with weir.connect() as c:
            for s in setup_statements():
                c.execute(s)  # type: ignore[arg-type]
            for name, size in CLUSTERS.items():
                c.execute(f"CREATE CLUSTER {name} (SIZE '{size}')")
            queries = Generator(7).queries(600)
            groups: dict[tuple[bool, ...], list[int]] = {}
            c.execute("SET cluster = bench_small")
            for i, q in enumerate(queries):
                out = execute(c, q.sql)
                if out.ok and out.types:
                    groups.setdefault(signature(out), []).append(i)
            sig, ids = max(groups.items(), key=lambda kv: len(kv[1]))
            batches = [ids[k:k + args.batch] for k in range(0, args.batch * args.rounds, args.batch)]
            for name in CLUSTERS:  # warm both JVMs up on a batch not measured
                c.execute(f"SET cluster = {name}")
                _timed(c, batch_sql([queries[i] for i in ids[-args.batch:]], ids[-args.batch:], sig))
            print(f"{len(batches)} rounds of {args.batch} queries; load {load_avg()}", flush=True)
            times: dict[tuple[str, str], list[float]] = {}
            for n, batch in enumerate(batches):
                sql = batch_sql([queries[i] for i in batch], batch, sig)
                for name in (CLUSTERS if n % 2 == 0 else reversed(CLUSTERS)):
                    c.execute(f"SET cluster = {name}")
                    times.setdefault((name, "select"), []).append(_timed(c, sql))
                    t0 = time.monotonic()
                    _timed(c, f"CREATE MATERIALIZED VIEW bench_mv AS {sql}")
                    _timed(c, "SELECT * FROM bench_mv")
                    times.setdefault((name, "view"), []).append(time.monotonic() - t0)
                    _timed(c, "DROP MATERIALIZED VIEW bench_mv")
            for what in ("select", "view"):
                small, scan = (statistics.median(times[(n, what)]) for n in CLUSTERS)
                label = "SELECT" if what == "select" else "materialized view, CREATE -> first read"
                print(f"{label}: small inputs {small:.2f} s, Spark scans {scan:.2f} s (median of "
                      f"{args.rounds}): {scan / small:.2f}x", flush=True)
            print(f"load average at end: {load_avg()}", flush=True)
    finally:
        weir.stop()


if __name__ == "__main__":
    main()
