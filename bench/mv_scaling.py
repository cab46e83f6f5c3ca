"""MV scaling benchmark: per-update latency of a filter MV and a join + aggregate MV as the
input grows (10^4, 10^5, 10^6 rows).

    .venv/bin/python bench/mv_scaling.py [--sizes 10000,100000,1000000] [--samples 20]

Starts a real `weir serve` (tests/integration/server.py; quickstart cluster, one replica
of size '1' = Spark local[1]) in a temp dir. For each size N, in turn: a table
`sc_N (id bigint, k int, v int)` loaded with `INSERT ... SELECT id, id % 1000, id % 100
FROM generate_series(0, N - 1)`, and then, one view at a time (so the two dataflows never share the
replica's one Spark core):

  filter  CREATE MATERIALIZED VIEW ... AS SELECT id, k, v FROM sc_N WHERE v = 7
          (1% of the rows; weir runs it as a "linear" dataflow over the updates only)
  group   CREATE MATERIALIZED VIEW ... AS SELECT k, count(*), sum(v) FROM sc_N GROUP BY k
          (1,001 groups; a "reduce" dataflow: each group's count and sum kept from deltas,
          as sorted runs per key partition on Spark's executors)
  join    CREATE MATERIALIZED VIEW ... AS SELECT d.name, count(*), sum(e.v)
          FROM sc_N e JOIN sc_dim d ON e.k = d.k GROUP BY d.name
          (sc_dim: 1,001 rows; a "recompute" dataflow: the whole query per update)

The view is subscribed to (`COPY (SUBSCRIBE <view> WITH (SNAPSHOT false, PROGRESS)) TO
STDOUT`, read by a thread), and a writer inserts one probe row at a time, as in
bench/freshness.py (whose machinery this reuses): per-update latency = the subscriber
received the change - the INSERT was acknowledged. The view is dropped before the next.

Prints p50 / p99 per size and view, and the ratio largest / smallest size of the p50s
(and p99s): a filter MV's per-update cost should not depend on the input's size (ratio
near 1); the recomputing join + aggregate's grows with it.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import load_avg, start_weir  # noqa: E402
from bench.freshness import (  # noqa: E402
    FILTER_SQL,
    JOIN_SQL,
    PROBE_BASE,
    FrontierWatch,
    Result,
    Subscriber,
    create_mv,
    id_key,
    load_dim,
    load_table,
    measure,
    pct,
    probe_count_key,
    probe_group,
    probe_row,
    warm_up,
)
from tests.integration.server import WeirServer  # noqa: E402

KINDS = ("filter", "group", "join")
GROUP_SQL = "SELECT k, count(*) AS n, sum(v) AS total FROM {t} GROUP BY k"


def group_probe_key(data: tuple[str | None, ...]) -> int | None:
    """(k, n, total) of group -2 -> the probe that made n."""
    return int(data[1]) - 1 if data[0] == "-2" and data[1] is not None else None


def group_probe(table: str) -> Callable[[int], str]:
    """A row of group -2 (no dimension row: the join never sees it): after probe i its count is i + 1."""
    return lambda i: f"INSERT INTO {table} VALUES ({PROBE_BASE + i}, -2, {i})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated input row counts")
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated views of " + ", ".join(KINDS))
    ap.add_argument("--samples", type=int, default=20, help="timed probes per size and view")
    ap.add_argument("--warmup", type=int, default=3, help="untimed probes first")
    ap.add_argument("--jvm-warmup", type=int, default=15,
                    help="untimed updates of a small filter and join MV before the first size "
                         "(else the first size measured pays for the replica JVM's warm-up)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for one probe")
    ap.add_argument("--gap", type=float, nargs=2, default=(0.2, 0.6), metavar=("MIN", "MAX"),
                    help="random pause between probes (s)")
    ap.add_argument("--breakdown", action="store_true",
                    help="also poll each view's output shard upper (see bench/freshness.py)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    kinds = [k for k in KINDS if k in args.kinds.split(",")]

    base = Path(tempfile.mkdtemp(prefix="weir-bench-mvscale-"))
    print(f"load average at start: {load_avg()} (2 cores, shared: other load skews the timings)")
    weir = WeirServer(base / "weir")
    results: dict[tuple[str, int], Result] = {}
    hydration: dict[tuple[str, int], float] = {}
    loads: dict[int, float] = {}
    started = time.monotonic()
    try:
        start_weir(weir)
        conn = weir.connect()
        writer = weir.connect()
        first = warm_up(conn, writer, weir.dsn, args.jvm_warmup, 0)  # probe numbers stay unique
        load_dim(conn, "sc_dim")
        for n in sizes:
            table = f"sc_{n}"
            loads[n] = load_table(conn, table, n)
            print(f"{n:,} rows loaded in {loads[n]:.1f}s (load average {load_avg()})", flush=True)
            for kind in kinds:
                view = f"{table}_{kind}"
                sql = {"filter": FILTER_SQL, "group": GROUP_SQL, "join": JOIN_SQL}[kind].format(t=table, d="sc_dim")
                hydration[(kind, n)] = create_mv(conn, view, sql)
                print(f"  {view}: hydrated in {hydration[(kind, n)]:.1f}s", flush=True)
                watch = None
                if args.breakdown:
                    sid = conn.execute("SELECT id FROM mz_catalog.mz_materialized_views WHERE name = %s",
                                       (view,)).fetchone()[0]  # type: ignore[index]
                    watch = FrontierWatch(weir.data_dir, sid)
                if kind == "filter":
                    key, insert, key_of = id_key, probe_row(table), (lambda i: PROBE_BASE + i)
                elif kind == "group":  # group -2 counts this view's probes
                    key, insert, key_of = group_probe_key, group_probe(table), (lambda i, f=first: i - f)
                else:
                    # the group 'probe' counts the probe rows of this table only
                    key, insert, key_of = probe_count_key, probe_group(table), (lambda i, f=first: i - f)
                sub = Subscriber(weir.dsn, f"SUBSCRIBE {view} WITH (SNAPSHOT false, PROGRESS)", key)
                try:
                    sub.wait_live(120)
                    results[(kind, n)] = measure(
                        writer, sub, insert, key_of, Result(f"{kind} {n:,}", view), args.samples,
                        args.warmup, args.timeout, tuple(args.gap), first=first,  # type: ignore[arg-type]
                        watch=watch)
                finally:
                    sub.close()
                    if watch is not None:
                        watch.close()
                conn.execute(f"DROP MATERIALIZED VIEW {view}")
                # the join's probes stay in the table: the next view starts its count after them
                first += args.warmup + args.samples
            conn.execute(f"DROP TABLE {table}")
        writer.close()
        conn.close()
    finally:
        weir.stop()

    print(f"\n## per-update latency (INSERT acknowledged -> subscriber received), "
          f"{args.samples} samples per point; took {time.monotonic() - started:.0f}s")
    print(f"{'rows':>10s} {'load s':>7s} | " + " | ".join(
        f"{k + ' hydr s':>13s} {'p50 ms':>7s} {'p99 ms':>7s}" for k in kinds))
    for n in sizes:
        cells = []
        for kind in kinds:
            r = results.get((kind, n))
            if r is None:
                cells.append(f"{'-':>13s} {'-':>7s} {'-':>7s}")
                continue
            cells.append(f"{hydration[(kind, n)]:13.1f} {pct(r.fresh, 50) * 1000:7.0f} "
                         f"{pct(r.fresh, 99) * 1000:7.0f}" + (f" ({r.missed} missed)" if r.missed else ""))
        print(f"{n:>10,} {loads.get(n, float('nan')):7.1f} | " + " | ".join(cells))
    if args.breakdown:
        for (kind, n), r in results.items():
            if r.durable:
                rest = [f - d for f, d in zip(r.fresh, r.durable, strict=False)]
                print(f"breakdown {kind} {n:,}: ack -> view durable p50 {pct(r.durable, 50) * 1000:.0f} ms; "
                      f"then -> received p50 {pct(rest, 50) * 1000:.0f} ms")
    lo, hi = min(sizes), max(sizes)
    ratios: dict[str, tuple[float, float]] = {}
    for kind in kinds:
        a, b = results.get((kind, lo)), results.get((kind, hi))
        if a is None or b is None or not a.fresh or not b.fresh:
            continue
        ratios[kind] = (pct(b.fresh, 50) / pct(a.fresh, 50), pct(b.fresh, 99) / pct(a.fresh, 99))
        print(f"ratio {hi:,} / {lo:,} rows, {kind}: p50 {ratios[kind][0]:.2f}x, p99 {ratios[kind][1]:.2f}x"
              + ("   (goal: near 1)" if kind == "filter" else ""))
    print(f"load average at end: {load_avg()}")
    print("\n## for the README (command / figure)")
    for kind in kinds:
        if kind not in ratios:
            continue
        pts = ", ".join(f"{n:,}: {pct(results[(kind, n)].fresh, 50) * 1000:.0f}/"
                        f"{pct(results[(kind, n)].fresh, 99) * 1000:.0f} ms"
                        for n in sizes if (kind, n) in results)
        print(f"`.venv/bin/python bench/mv_scaling.py` / {kind} MV per-update latency p50/p99 by input rows: "
              f"{pts}; {hi:,}/{lo:,} = {ratios[kind][0]:.2f}x (p50)")
    shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
