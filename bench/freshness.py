"""Freshness benchmark: from an acknowledged INSERT to the subscriber receiving the change.

    .venv/bin/python bench/freshness.py [--rows 100000] [--samples 40] [--warmup 3]

Starts a real `weir serve` (tests/integration/server.py, quickstart cluster: one replica
of size '1' = Spark local[1]) in a temp dir. Three cases, one after the other; each
creates its own base table(s), loads them with `INSERT ... SELECT ... FROM generate_series(0, N - 1)`,
creates its view, measures, and drops what it created, so no other dataflow shares the
replica's one Spark core with the case being measured:

  table   SUBSCRIBE fr_a                  (the table itself: the shard's updates are read
                                           directly by the coordinator)
  filter  SUBSCRIBE fr_b_filter           (MV: SELECT id, k, v FROM fr_b WHERE v = 7,
                                           1% of the rows; a "linear" dataflow)
  join    SUBSCRIBE fr_c_agg              (MV: fr_c JOIN fr_dim (1,001 rows) GROUP BY name,
                                           count + sum; kept from deltas, reduce over a delta
                                           join, from 10^5 input updates on: incremental_min_updates)

Each subscription is one `COPY (SUBSCRIBE ... WITH (SNAPSHOT false, PROGRESS)) TO STDOUT`
on its own connection, read by a thread that timestamps every row as it arrives (the
first progress row says the subscription is live). A writer connection then inserts one
identifiable row at a time (id 10^9 + i; for the join case a row of dimension 'probe',
whose count becomes i + 1), waits for the subscriber to see it, then waits a random
0.2-0.6 s (so samples fall at every phase of the server's 1 s tick) before the next.

freshness = time the subscriber received the row - time the INSERT was acknowledged.
Also shown: the INSERT's own round trip (group commit), and received - the row's
mz_timestamp (the write timestamp, ms since the epoch on this machine's clock).

Before the first case, --jvm-warmup untimed updates of a small filter MV and join MV let
the replica's JVM compile its hot paths (else the first case measured pays for it).
--breakdown also polls each view's output shard upper (Iceberg, from this process) and
splits the time into ack -> the view's shard is durable past the write (the replica's
dataflow: Spark job + Iceberg commit) and -> received (the coordinator).

Goal (the issue): p99 < 1 s for the table and the filter MV, < 3 s for the join MV.
"""

from __future__ import annotations

import argparse
import math
import random
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from bench.common import load_avg, start_weir  # noqa: E402
from tests.integration.server import WeirServer  # noqa: E402

PROBE_BASE = 1_000_000_000
DIM_ROWS = 1000
Key = Any
KeyFn = Callable[[tuple[str | None, ...]], Key]


def pct(xs: list[float], p: float) -> float:
    """Nearest-rank percentile (p99 of 40 samples is the largest)."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


class Subscriber:
    """A COPY (SUBSCRIBE ...) TO STDOUT read by a thread: when each keyed row arrived.

    Rows are text: (mz_timestamp, mz_progressed, mz_diff, *data) (PROGRESS is required).
    key(data) names the probe a data row answers (None: not a probe)."""

    def __init__(self, dsn: str, subscribe_sql: str, key: KeyFn) -> None:
        self.sql = subscribe_sql
        self.key = key
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.seen: dict[Key, tuple[float, float, int]] = {}  # key -> (perf_counter, time, mz_ts)
        self.rows = 0
        self.cond = threading.Condition()
        self.live = threading.Event()
        self.error: BaseException | None = None
        self.closing = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            with self.conn.cursor().copy(f"COPY ({self.sql}) TO STDOUT") as cp:
                for row in cp.rows():
                    now, wall = time.perf_counter(), time.time()
                    if row[1] == "t":
                        self.live.set()
                        continue
                    self.rows += 1
                    k = self.key(row[3:]) if row[2] is not None and int(row[2]) > 0 else None
                    if k is not None:
                        with self.cond:
                            self.seen.setdefault(k, (now, wall, int(row[0])))
                            self.cond.notify_all()
        except BaseException as e:  # noqa: BLE001 - reported by wait(); cancel ends the COPY
            if not self.closing:
                self.error = e
        finally:
            self.live.set()
            with self.cond:
                self.cond.notify_all()

    def wait_live(self, timeout: float) -> None:
        if not self.live.wait(timeout) or self.error is not None:
            raise RuntimeError(f"subscription not live after {timeout}s: {self.sql}: {self.error!r}")

    def wait(self, key: Key, timeout: float) -> tuple[float, float, int] | None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while key not in self.seen:
                if self.error is not None:
                    raise RuntimeError(f"{self.sql}: {self.error!r}")
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)
            return self.seen[key]

    def close(self) -> None:
        self.closing = True
        try:
            self.conn.cancel()
        except psycopg.Error:
            pass
        self.thread.join(30)
        self.conn.close()


class FrontierWatch:
    """--breakdown: polls the upper of a view's output shard (Iceberg, from this process)
    so that ack -> received splits into ack -> durable in the view (the replica's
    dataflow) and durable -> received (the coordinator noticing, reading, sending)."""

    def __init__(self, data_dir: Path, shard_id: str, every: float = 0.01) -> None:
        from weir.storage.persist import ShardStore

        store = ShardStore(f"sqlite:///{data_dir}/catalog.db", str(data_dir / "warehouse"))
        self.shard = store.open_shard(shard_id)
        self.every = every
        self.log: list[tuple[float, int]] = []  # (perf_counter, upper) at every change
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        last = -1
        while not self.stop.is_set():
            upper = self.shard.frontiers().upper
            if upper != last:
                self.log.append((time.perf_counter(), upper))
                last = upper
            time.sleep(self.every)

    def passed(self, ts: int) -> float | None:
        """When the upper was first seen > ts."""
        return next((t for t, u in self.log if u > ts), None)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


@dataclass
class Result:
    name: str
    what: str
    goal: float | None = None
    fresh: list[float] = field(default_factory=list)  # ack -> received
    ack: list[float] = field(default_factory=list)  # INSERT round trip
    from_ts: list[float] = field(default_factory=list)  # received - mz_timestamp (wall clock)
    missed: int = 0
    durable: list[float] = field(default_factory=list)  # ack -> the view's shard upper passed it


    @property
    def met(self) -> bool | None:
        if self.goal is None:
            return None
        return not self.missed and bool(self.fresh) and pct(self.fresh, 99) < self.goal


def measure(writer: psycopg.Connection, sub: Subscriber, insert: Callable[[int], str],
            key_of: Callable[[int], Key], result: Result, samples: int, warmup: int,
            timeout: float, gap: tuple[float, float], first: int = 0, quiet: bool = False,
            watch: FrontierWatch | None = None) -> Result:
    """Insert probe first, first + 1, ... one at a time; time ack -> subscriber saw it."""
    rng = random.Random(first)
    for i in range(first, first + warmup + samples):
        t0 = time.perf_counter()
        writer.execute(insert(i))
        t_ack = time.perf_counter()
        got = sub.wait(key_of(i), timeout)
        counted = i >= first + warmup
        if got is None:
            if counted:
                result.missed += 1
            print(f"  {result.name}: probe {i} not seen within {timeout}s", flush=True)
        elif counted:
            seen, wall, mz_ts = got
            result.fresh.append(seen - t_ack)
            result.ack.append(t_ack - t0)
            result.from_ts.append(wall - mz_ts / 1000)
            if watch is not None:
                time.sleep(0.05)  # let the poller record it
                durable = watch.passed(mz_ts)
                if durable is not None:
                    result.durable.append(durable - t_ack)
        time.sleep(rng.uniform(*gap))
    if not quiet:
        print(f"  {result.name}: {len(result.fresh)} samples, p50 {pct(result.fresh, 50) * 1000:.0f} ms, "
              f"p99 {pct(result.fresh, 99) * 1000:.0f} ms (load average {load_avg()})", flush=True)
    return result


LOAD_CHUNK = 1_000_000


def load_table(conn: psycopg.Connection, table: str, rows: int) -> float:
    """(id bigint, k int, v int): k = id % DIM_ROWS, v = id % 100."""
    conn.execute(f"CREATE TABLE {table} (id bigint, k int, v int)")
    t0 = time.monotonic()
    for lo in range(0, rows, LOAD_CHUNK):  # one INSERT of 10^7 rows is more than a replica of size '1' holds
        hi = min(rows, lo + LOAD_CHUNK) - 1
        conn.execute(f"INSERT INTO {table} SELECT id, id % {DIM_ROWS}, id % 100 FROM generate_series({lo}, {hi}) AS s(id)")
    secs = time.monotonic() - t0
    n = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]
    if n != rows:
        raise RuntimeError(f"{table}: loaded {n} rows, expected {rows}")
    return secs


def load_dim(conn: psycopg.Connection, table: str) -> None:
    conn.execute(f"CREATE TABLE {table} (k int, name text)")
    values = ", ".join(f"({k}, 'g{k}')" for k in range(DIM_ROWS))
    conn.execute(f"INSERT INTO {table} VALUES {values}, (-1, 'probe')")


FILTER_SQL = "SELECT id, k, v FROM {t} WHERE v = 7"
JOIN_SQL = ("SELECT d.name, count(*) AS n, sum(e.v) AS total FROM {t} e JOIN {d} d ON e.k = d.k "
            "GROUP BY d.name")


def probe_row(table: str) -> Callable[[int], str]:
    """A row the filter keeps (v = 7), identified by its id."""
    return lambda i: f"INSERT INTO {table} VALUES ({PROBE_BASE + i}, 0, 7)"


def probe_group(table: str) -> Callable[[int], str]:
    """A row of dimension -1 ('probe'): after probe i the group's count is i + 1."""
    return lambda i: f"INSERT INTO {table} VALUES ({PROBE_BASE + i}, -1, {i})"


def id_key(data: tuple[str | None, ...]) -> Key:
    return int(data[0]) if data[0] is not None else None


def probe_count_key(data: tuple[str | None, ...]) -> Key:
    """(name, n, total) of group 'probe' -> the probe that made n."""
    return int(data[1]) - 1 if data[0] == "probe" and data[1] is not None else None


def create_mv(conn: psycopg.Connection, name: str, sql: str, timeout: float = 600) -> float:
    """CREATE MATERIALIZED VIEW and wait until a SELECT answers (hydrated)."""
    t0 = time.monotonic()
    conn.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")
    while True:
        try:
            conn.execute(f"SELECT count(*) FROM {name}").fetchall()
            return time.monotonic() - t0
        except psycopg.Error:
            if time.monotonic() - t0 > timeout:
                raise
            time.sleep(0.5)


def warm_up(conn: psycopg.Connection, writer: psycopg.Connection, dsn: str, probes: int,
            first: int) -> int:
    """Untimed: a filter MV and a join MV over 1,000 rows, `probes` updates each, so the
    replica's JVM has compiled its hot paths before the first timed case (else whatever is
    measured first pays for it). Returns the next unused probe number."""
    if probes <= 0:
        return first
    t0 = time.monotonic()
    load_table(conn, "warm_t", 1000)
    load_dim(conn, "warm_dim")
    for name, sql, key, insert, key_of in (
            ("warm_filter", FILTER_SQL.format(t="warm_t"), id_key, probe_row("warm_t"),
             lambda i: PROBE_BASE + i),
            ("warm_join", JOIN_SQL.format(t="warm_t", d="warm_dim"), probe_count_key,
             probe_group("warm_t"), None)):
        create_mv(conn, name, sql)
        sub = Subscriber(dsn, f"SUBSCRIBE {name} WITH (SNAPSHOT false, PROGRESS)", key)
        try:
            sub.wait_live(120)
            measure(writer, sub, insert, key_of or (lambda i, f=first: i - f), Result(name, name),
                    probes, 0, 120.0, (0.05, 0.1), first=first, quiet=True)
        finally:
            sub.close()
        conn.execute(f"DROP MATERIALIZED VIEW {name}")
        first += probes
    conn.execute("DROP TABLE warm_t, warm_dim")
    print(f"warm-up: {probes} untimed updates each of a filter and a join MV in "
          f"{time.monotonic() - t0:.0f}s", flush=True)
    return first


def report(results: list[Result], title: str) -> None:
    print(f"\n## {title}")
    print(f"{'case':8s} {'n':>3s} {'p50 ms':>8s} {'p99 ms':>8s} {'max ms':>8s} {'mean ms':>8s} "
          f"{'INSERT ms':>9s} {'vs mz_ts':>9s}  goal")
    for r in results:
        goal = "" if r.goal is None else \
            f"p99 < {r.goal:g} s: {'met' if r.met else 'NOT met'}" + (f" ({r.missed} missed)" if r.missed else "")
        print(f"{r.name:8s} {len(r.fresh):3d} {pct(r.fresh, 50) * 1000:8.0f} {pct(r.fresh, 99) * 1000:8.0f} "
              f"{max(r.fresh, default=float('nan')) * 1000:8.0f} "
              f"{(statistics.mean(r.fresh) if r.fresh else float('nan')) * 1000:8.0f} "
              f"{pct(r.ack, 50) * 1000:9.0f} {pct(r.from_ts, 50) * 1000:9.0f}  {goal}")
    print("(INSERT ms: median round trip of the probe INSERT; vs mz_ts: median received - the "
          "row's mz_timestamp)")
    for r in results:
        if r.durable:
            rest = [f - d for f, d in zip(r.fresh, r.durable, strict=False)]
            print(f"breakdown {r.name}: ack -> view's shard upper past the write (replica dataflow) "
                  f"p50 {pct(r.durable, 50) * 1000:.0f} ms, p99 {pct(r.durable, 99) * 1000:.0f} ms; "
                  f"then -> received (coordinator) p50 {pct(rest, 50) * 1000:.0f} ms, "
                  f"p99 {pct(rest, 99) * 1000:.0f} ms ({len(r.durable)} samples)")


class Background:
    """Inserts `per_second` rows a second into a fact table (as load_table's, ids past the
    loaded ones), ten VALUES statements a second on a connection of its own (a VALUES
    insert is the coordinator's; a DELETE or INSERT ... SELECT would run on the replica's
    one Spark core beside the view being measured)."""

    def __init__(self, dsn: str, table: str, first_id: int, per_second: int) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.table, self.next_id, self.batch = table, first_id, max(1, per_second // 10)
        self.changed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        tick = time.monotonic()
        while not self._stop.is_set():
            ids = range(self.next_id, self.next_id + self.batch)
            self.next_id += self.batch
            self.conn.execute(f"INSERT INTO {self.table} VALUES "
                              + ", ".join(f"({i}, {i % DIM_ROWS}, {i % 100})" for i in ids))
            self.changed += self.batch
            tick += 0.1
            self._stop.wait(max(0.0, tick - time.monotonic()))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(10)
        self.conn.close()
        return self.changed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000, help="rows in each base table")
    ap.add_argument("--samples", type=int, default=40, help="timed probes per case")
    ap.add_argument("--warmup", type=int, default=3, help="untimed probes per case first")
    ap.add_argument("--jvm-warmup", type=int, default=15,
                    help="untimed updates of a small filter and join MV before the first case")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for one probe")
    ap.add_argument("--gap", type=float, nargs=2, default=(0.2, 0.6), metavar=("MIN", "MAX"),
                    help="random pause between probes (s)")
    ap.add_argument("--breakdown", action="store_true",
                    help="also poll each view's output shard upper (Iceberg) to split the time into "
                         "the replica's part and the coordinator's")
    ap.add_argument("--cases", default="table,filter,join", help="comma-separated subset")
    ap.add_argument("--background-rows", type=int, default=0,
                    help="while the join case is measured, also insert this many rows a second into its "
                         "fact table (ten VALUES statements a second, on a connection of their own)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]

    base = Path(tempfile.mkdtemp(prefix="weir-bench-fresh-"))
    print(f"load average at start: {load_avg()} (2 cores, shared: other load skews the timings)")
    weir = WeirServer(base / "weir")
    results: list[Result] = []
    timing = dict(samples=args.samples, warmup=args.warmup, timeout=args.timeout, gap=tuple(args.gap))
    try:
        start_weir(weir)
        conn = weir.connect()
        writer = weir.connect()
        warm_up(conn, writer, weir.dsn, args.jvm_warmup, 0)

        def run(name: str, what: str, goal: float, subscribe: str, insert: Callable[[int], str],
                key: KeyFn, key_of: Callable[[int], Key] = lambda i: PROBE_BASE + i) -> None:
            watch = None
            if args.breakdown and name != "table":
                sid = conn.execute("SELECT id FROM mz_catalog.mz_materialized_views WHERE name = %s",
                                   (subscribe,)).fetchone()[0]  # type: ignore[index]
                watch = FrontierWatch(weir.data_dir, sid)
            sub = Subscriber(weir.dsn, f"SUBSCRIBE {subscribe} WITH (SNAPSHOT false, PROGRESS)", key)
            try:
                sub.wait_live(120)
                results.append(measure(writer, sub, insert, key_of, Result(name, what, goal),
                                       watch=watch, **timing))  # type: ignore[arg-type]
            finally:
                sub.close()
                if watch is not None:
                    watch.close()

        if "table" in cases:
            secs = load_table(conn, "fr_a", args.rows)
            print(f"table: loaded {args.rows:,} rows in {secs:.1f}s", flush=True)
            run("table", "SUBSCRIBE to a table", 1.0, "fr_a", probe_row("fr_a"), id_key)
            conn.execute("DROP TABLE fr_a")
        if "filter" in cases:
            secs = load_table(conn, "fr_b", args.rows)
            sql = FILTER_SQL.format(t="fr_b")
            hyd = create_mv(conn, "fr_b_filter", sql)
            print(f"filter: loaded {args.rows:,} rows in {secs:.1f}s; MV hydrated in {hyd:.1f}s: {sql}",
                  flush=True)
            run("filter", "SUBSCRIBE to a filter MV", 1.0, "fr_b_filter", probe_row("fr_b"), id_key)
            conn.execute("DROP MATERIALIZED VIEW fr_b_filter")
            conn.execute("DROP TABLE fr_b")
        if "join" in cases:
            secs = load_table(conn, "fr_c", args.rows)
            load_dim(conn, "fr_dim")
            sql = JOIN_SQL.format(t="fr_c", d="fr_dim")
            hyd = create_mv(conn, "fr_c_agg", sql)
            print(f"join: loaded {args.rows:,} rows in {secs:.1f}s; MV hydrated in {hyd:.1f}s: {sql}",
                  flush=True)
            background = Background(weir.dsn, "fr_c", args.rows, args.background_rows) \
                if args.background_rows else None
            try:
                what = "SUBSCRIBE to a join + aggregate MV" + (
                    f" while {args.background_rows} rows/s are inserted" if background else "")
                run("join", what, 3.0 if not background else 1.0, "fr_c_agg", probe_group("fr_c"),
                    probe_count_key, key_of=lambda i: i)
            finally:
                if background is not None:
                    print(f"background: {background.stop():,} rows inserted", flush=True)
            conn.execute("DROP MATERIALIZED VIEW fr_c_agg")
            conn.execute("DROP TABLE fr_c, fr_dim")
        writer.close()
        conn.close()
    finally:
        weir.stop()

    report(results, f"freshness: INSERT acknowledged -> subscriber received, {args.rows:,}-row base tables, "
                    f"{args.samples} samples each")
    print(f"load average at end: {load_avg()}")
    print("\n## for the README (command / figure)")
    for r in results:
        print(f"`.venv/bin/python bench/freshness.py` / {r.what}, {args.rows:,} rows, {len(r.fresh)} samples: "
              f"p50 {pct(r.fresh, 50) * 1000:.0f} ms, p99 {pct(r.fresh, 99) * 1000:.0f} ms "
              f"(goal p99 < {r.goal:g} s: {'met' if r.met else 'NOT met'})")
    shutil.rmtree(base, ignore_errors=True)
    return 0 if results and all(r.met for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
