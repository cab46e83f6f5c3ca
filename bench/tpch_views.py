"""TPC-H Q3 and Q5 as materialized views over the TPCH load generator, under its stream of
order replacements: how far each view trails its inputs, incremental vs recompute, side by
side in one run.

    .venv/bin/python bench/tpch_views.py [--scale 0.1] [--seconds 60] [--tick 1s] [--queries 3,5]

Starts a real `weir serve` (tests/integration/server.py; quickstart cluster, one replica of
size '1' = Spark local[1]) and `CREATE SOURCE tpch FROM LOAD GENERATOR TPCH (SCALE FACTOR s,
TICK INTERVAL t) FOR ALL TABLES`: each tick replaces one random order (the old order and
its lineitems retracted, a regenerated one inserted). For each query, one view at a time
(so no two dataflows share the replica's one Spark core):

  incremental  CREATE MATERIALIZED VIEW AS <the query without ORDER BY / LIMIT>: kept from
               deltas (EXPLAIN's strategy line is printed: reduce over a delta join)
  recompute    the same with HAVING min(1) = 1 added: every group's min(1) is 1, so the
               answer is the same, but the reduce strategy does not keep min and the
               dataflow recomputes the whole query at every tick

Each view is subscribed (`SUBSCRIBE ... WITH (SNAPSHOT false, PROGRESS)`) for --seconds:
a progress message saying the view is complete up to time T (ms since the epoch, this
machine's clock) that arrives at wall time w gives the view's lag w - T: how far it trails
the source. Prints per query and way: hydration, lag p50 / p99, and the ratio recompute /
incremental. A view that falls behind (no progress) reports how far behind it is when the
window ends. The incremental view's contents are compared with the query run as a SELECT at
the same timestamp (one statement; they must be equal). Load average at start and end.
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from bench.common import load_avg, start_weir  # noqa: E402
from bench.tpch_queries import QUERIES  # noqa: E402
from tests.integration.server import WeirServer  # noqa: E402

TABLES = ("customer", "orders", "lineitem", "supplier", "nation", "region", "part", "partsupp")


def view_sql(q: int, recompute: bool) -> str:
    sql = re.sub(r"\s+ORDER BY .*$", "", QUERIES[q].strip(), flags=re.S)  # a view has no order
    return sql + "\nHAVING min(1) = 1" if recompute else sql


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))] if xs else float("nan")


class Lag:
    """A SUBSCRIBE with PROGRESS read by a thread: wall time - progress time, per message."""

    def __init__(self, dsn: str, view: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.view, self.lags, self.closing = view, [], False
        self.frontier: int | None = None  # the last progress time
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            with self.conn.cursor().copy(
                    f"COPY (SUBSCRIBE {self.view} WITH (SNAPSHOT false, PROGRESS)) TO STDOUT") as cp:
                for row in cp.rows():
                    if row[1] == "t":
                        self.frontier = int(row[0])
                        self.lags.append(time.time() - self.frontier / 1000)
        except BaseException as e:  # noqa: BLE001 - the cancel at close ends the COPY
            if not self.closing:
                self.error = e

    def close(self, since: float) -> list[float]:
        """The lags of the window, and the view's lag at its end (behind since `since` if it
        never progressed)."""
        behind = time.time() - (self.frontier / 1000 if self.frontier is not None else since)
        self.closing = True
        self.conn.cancel()
        self.thread.join(10)
        self.conn.close()
        if self.error is not None:
            raise RuntimeError(f"SUBSCRIBE {self.view}: {self.error!r}")
        return [*self.lags[3:], behind]  # the first messages may predate the subscription


def create(conn: psycopg.Connection, name: str, sql: str) -> float:
    t0 = time.monotonic()
    conn.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")
    conn.execute(f"SELECT count(*) FROM {name}").fetchone()  # waits until it is readable
    return time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=0.1)
    ap.add_argument("--seconds", type=float, default=60.0, help="measured per view")
    ap.add_argument("--tick", default="1s", help="the load generator's TICK INTERVAL")
    ap.add_argument("--queries", default="3,5")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    queries = [int(q) for q in args.queries.split(",")]
    base = Path(tempfile.mkdtemp(prefix="weir-bench-tpch-views-"))
    print(f"load average at start: {load_avg()} (2 cores, shared: other load skews the timings)", flush=True)
    weir = WeirServer(base / "weir")
    results: dict[tuple[int, str], tuple[float, list[float]]] = {}
    same: dict[int, bool] = {}
    try:
        start_weir(weir)
        conn = weir.connect()
        t0 = time.monotonic()
        conn.execute(f"CREATE SOURCE tpch FROM LOAD GENERATOR TPCH (SCALE FACTOR {args.scale}, "
                     f"TICK INTERVAL '{args.tick}') FOR ALL TABLES")
        sizes = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}  # type: ignore[index]
        print(f"TPCH scale {args.scale} loaded in {time.monotonic() - t0:.0f}s: {sizes}", flush=True)
        for q in queries:
            for way in ("incremental", "recompute"):
                name = f"q{q}_{way[:3]}"
                hydration = create(conn, name, view_sql(q, way == "recompute"))
                strategy = conn.execute(f"EXPLAIN PHYSICAL PLAN FOR MATERIALIZED VIEW {name}").fetchone()[0]
                print(f"Q{q} {way}: hydrated in {hydration:.1f}s; {strategy.splitlines()[0][:160]}", flush=True)
                lag = Lag(weir.dsn, name)
                since = time.time()
                time.sleep(args.seconds)
                lags = lag.close(since)
                results[(q, way)] = (hydration, lags)
                print(f"  lag p50 {pct(lags, 50) * 1000:.0f} ms, p99 {pct(lags, 99) * 1000:.0f} ms, at the end "
                      f"{lags[-1] * 1000:.0f} ms ({len(lags) - 1} progress messages; load average {load_avg()})",
                      flush=True)
                if way == "incremental":
                    query = view_sql(q, False)
                    diff = conn.execute(f"SELECT count(*) FROM ((SELECT * FROM {name} EXCEPT ALL {query}) UNION ALL "
                                        f"({query} EXCEPT ALL SELECT * FROM {name})) d").fetchone()
                    same[q] = diff == (0,)
                    print(f"  the view equals the query run as a SELECT at one timestamp: "
                          f"{'yes' if same[q] else f'NO ({diff[0]} rows differ)'}", flush=True)
                conn.execute(f"DROP MATERIALIZED VIEW {name}")
        conn.close()
    finally:
        weir.stop()
    print(f"\n## view lag behind the TPCH source (scale {args.scale}, one order replaced every {args.tick}), "
          f"{args.seconds:.0f} s per view, load average at end {load_avg()}")
    for q in queries:
        inc, rec = results.get((q, "incremental")), results.get((q, "recompute"))
        if inc is None or rec is None:
            continue
        print(f"Q{q}: incremental hydration {inc[0]:.1f} s, lag p50 / p99 {pct(inc[1], 50) * 1000:.0f} / "
              f"{pct(inc[1], 99) * 1000:.0f} ms ({len(inc[1]) - 1} progress messages); recompute hydration "
              f"{rec[0]:.1f} s, lag p50 / p99 {pct(rec[1], 50) * 1000:.0f} / {pct(rec[1], 99) * 1000:.0f} ms "
              f"({len(rec[1]) - 1} progress messages, {rec[1][-1]:.1f} s behind at the end); p50 recompute / "
              f"incremental {pct(rec[1], 50) / pct(inc[1], 50):.1f}x; incremental view equals the query: "
              f"{'yes' if same.get(q) else 'NO'}")
    shutil.rmtree(base, ignore_errors=True)
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
