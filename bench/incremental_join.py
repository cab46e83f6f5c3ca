"""Issue 28, part 2: a join + aggregate kept incrementally with its state on Spark's
executors (sorted runs per key partition, weir.compute.replica.incremental.runs), per
update, side by side in one run with today's recompute, at several input sizes.

    .venv/bin/python bench/incremental_join.py [--sizes 10000,100000,1000000] [--ticks 12]
                                               [--tick-rows 1000] [--partitions 2]

One SparkSession like a replica of size '1' (local[1]). The view:

    SELECT c.region, count(*), sum(o.amount) FROM orders o JOIN customers c
    ON o.cust = c.c_id GROUP BY c.region

over `N` orders and `N / 10` customers in 1,000 regions. Its inputs arrive as weir's
updates (Parquet files of rows + weight): a snapshot, then `--ticks` ticks of
`--tick-rows` order changes (half deletes of existing orders, half inserts) and 10
customers moving region (a retraction and an insertion each), so both sides of the join
change every tick.

  runs       one Spark job per tick: the tick's updates hash-partitioned by join key;
             each task looks the delta up in the other side's sorted runs
             (dA join B + A' join dB), appends its own run (a geometric LSM, checkpointed
             as Arrow files), passes the joined changes, partitioned by region, to tasks
             that keep count and sum per region the same way and emit -old / +new per
             touched region. State touched: the tick's keys, never the inputs.
  recompute  a Spark batch job over every update so far, consolidated, joined and
             aggregated (what a recompute dataflow does per interval, before its diff)

The runs' changes summed must equal the recompute's final answer and numpy's (checked).
Prints per size: hydration, tick p50 / p99 for each, the state's bytes per input row, and
the ratios of the largest size's p50 to the smallest's; the load average at start and end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from weir.compute.replica.incremental.runs import Manifest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
REGIONS = 1000
Answer = dict[int, tuple[int, int]]  # region -> (count, sum)

JOINED = "g long, amount long, w long, op string, part int, runs string"
CHANGES = "g long, n long, s long, wd long, op string, part int, runs string"


def _session(base: str, partitions: int) -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[1]").appName("incremental-join")
             .config("spark.sql.shuffle.partitions", str(partitions)).config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "6g")
             .config("spark.sql.warehouse.dir", os.path.join(base, "warehouse")).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _meta(op: str, part: int, files: list[str], names: list[str]) -> pa.RecordBatch:
    cols: dict[str, Any] = {n: pa.nulls(1, pa.int64()) for n in names}
    cols.update(op=pa.array([op]), part=pa.array([part], pa.int32()), runs=pa.array([json.dumps(files)]))
    return pa.record_batch(cols)


def _split(batches: Iterator[pa.RecordBatch]) -> tuple[pa.Table | None, list[pa.RecordBatch]]:
    """A task's rows, and the state reports of earlier stages passing through it."""
    data, meta = [], []
    for b in batches:
        if not b.num_rows:
            continue
        if "part" not in b.schema.names:
            data.append(b)
            continue
        reports = pc.is_valid(b.column("part"))
        if pc.any(reports).as_py():
            meta.append(b.filter(reports))
            b = b.filter(pc.invert(reports))
        if b.num_rows:
            data.append(b)
    return (pa.Table.from_batches(data) if data else None), meta


def _join_task(directory: str, manifest: dict[str, dict[int, list[str]]], version: int) -> Any:
    """Orders (side 0: key cust, value amount) and customers (side 1: key c_id, value
    region) of one join-key partition: dO join C + O' join dC, as (region, amount, weight)."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from weir.compute.replica.incremental import runs as r

        table, _ = _split(batches)
        if table is None:
            return
        p = TaskContext.get().partitionId()
        side = table.column("side").to_numpy()
        key, value, w = (table.column(c).to_numpy() for c in ("key", "value", "w"))
        d_o = r.consolidated_rows(key[side == 0], (value[side == 0], w[side == 0]))
        d_c = r.consolidated_rows(key[side == 1], (value[side == 1], w[side == 1]))
        files_o, files_c = manifest["orders"].get(p, []), manifest["customers"].get(p, [])
        orders = [r.read_run(os.path.join(directory, "orders", f)) for f in files_o]
        customers = [r.read_run(os.path.join(directory, "customers", f)) for f in files_c]
        g, amount, weight = [], [], []
        for di, run, ri in r.matches(customers, d_o.keys):  # dO join C (before the tick)
            g.append(run.values[0][ri]), amount.append(d_o.values[0][di])
            weight.append(d_o.values[1][di] * run.values[1][ri])
        orders, files_o = r.arrange(orders, files_o, d_o, os.path.join(directory, "orders"),
                                    f"p{p}-v{version}.arrow", ("amount", "w"))
        for di, run, ri in r.matches(orders, d_c.keys):  # O' join dC (O after the tick)
            g.append(d_c.values[0][di]), amount.append(run.values[0][ri])
            weight.append(d_c.values[1][di] * run.values[1][ri])
        _, files_c = r.arrange(customers, files_c, d_c, os.path.join(directory, "customers"),
                               f"p{p}-v{version}.arrow", ("region", "w"))
        if g:
            n = sum(len(x) for x in g)
            yield pa.record_batch({"g": np.concatenate(g), "amount": np.concatenate(amount),
                                   "w": np.concatenate(weight), "op": pa.nulls(n, pa.string()),
                                   "part": pa.nulls(n, pa.int32()), "runs": pa.nulls(n, pa.string())})
        yield _meta("orders", p, files_o, ["g", "amount", "w"])
        yield _meta("customers", p, files_c, ["g", "amount", "w"])

    return task


def _aggregate_task(directory: str, manifest: dict[str, dict[int, list[str]]], version: int) -> Any:
    """One region partition: count and sum per region, -old / +new for the touched ones."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from weir.compute.replica.incremental import runs as r

        table, passing = _split(batches)
        for b in passing:  # the join's state reports, on their way to the driver
            yield pa.record_batch({"g": pa.nulls(b.num_rows, pa.int64()), "n": pa.nulls(b.num_rows, pa.int64()),
                                   "s": pa.nulls(b.num_rows, pa.int64()), "wd": pa.nulls(b.num_rows, pa.int64()),
                                   "op": b.column("op"), "part": b.column("part"), "runs": b.column("runs")})
        if table is None:
            return
        p = TaskContext.get().partitionId()
        w = table.column("w").to_numpy()
        keys, before, after, files = r.apply_changes(
            manifest["groups"].get(p, []), os.path.join(directory, "groups"), p, version, ("n", "s"),
            table.column("g").to_numpy(), (w, table.column("amount").to_numpy() * w))
        old, new = before[0] > 0, after[0] > 0
        k = np.concatenate([keys[old], keys[new]])
        yield pa.record_batch({
            "g": k, "n": np.concatenate([before[0][old], after[0][new]]),
            "s": np.concatenate([before[1][old], after[1][new]]),
            "wd": np.concatenate([np.full(int(old.sum()), -1, np.int64), np.ones(int(new.sum()), np.int64)]),
            "op": pa.nulls(len(k), pa.string()), "part": pa.nulls(len(k), pa.int32()),
            "runs": pa.nulls(len(k), pa.string())})
        yield _meta("groups", p, files, ["g", "n", "s", "wd"])

    return task


class RunsView:
    """The view's state as runs per key partition on the executors; one Spark job per tick."""

    OPS = ("orders", "customers", "groups")

    def __init__(self, spark: Any, base: str, partitions: int) -> None:
        self.spark, self.partitions = spark, partitions
        self.manifest = Manifest(os.path.join(base, "state"), partitions, self.OPS)
        self.answer: Answer = {}

    def tick(self, orders: str, customers: str) -> None:
        from pyspark.sql import functions as F

        m = self.manifest
        version = m.version + 1
        delta = (self.spark.read.parquet(orders).select(F.lit(0).alias("side"), F.col("cust").alias("key"),
                                                        F.col("amount").alias("value"), "w")
                 .unionByName(self.spark.read.parquet(customers).select(
                     F.lit(1).alias("side"), F.col("c_id").alias("key"), F.col("region").alias("value"), "w")))
        joined = delta.repartition(self.partitions, "key").mapInArrow(
            _join_task(m.directory, m.runs, version), JOINED)
        out = joined.repartition(self.partitions, "g").mapInArrow(
            _aggregate_task(m.directory, m.runs, version), CHANGES).toArrow()
        reports = out.filter(pc.is_valid(out.column("part")))
        for op, p, files in zip(*(reports.column(c).to_pylist() for c in ("op", "part", "runs")), strict=True):
            m.record(op, p, json.loads(files))
        m.version = version
        m.save()  # the checkpoint
        changes = out.filter(pc.is_null(out.column("part")))
        for g, n, s, d in zip(*(changes.column(c).to_pylist() for c in ("g", "n", "s", "wd")), strict=True):
            if d < 0:
                assert self.answer.get(g) == (n, s), f"retracted {g} {(n, s)} but held {self.answer.get(g)}"
                del self.answer[g]
            else:
                assert g not in self.answer, f"region {g} inserted twice"
                self.answer[g] = (n, s)

    def state_bytes(self) -> int:
        return sum(self.manifest.state_bytes().values())


def _recompute(spark: Any, orders: str, customers: str) -> Answer:
    from pyspark.sql import functions as F

    def contents(path: str, cols: list[str]) -> Any:
        df = spark.read.parquet(path).groupBy(*cols).agg(F.sum("w").alias("w")).where("w > 0")
        return df.withColumn("i", F.explode(F.sequence(F.lit(1).cast("bigint"), F.col("w")))).select(*cols)

    o, c = contents(orders, ["o_id", "cust", "amount"]), contents(customers, ["c_id", "region"])
    t = (o.join(c, o.cust == c.c_id).groupBy("region")
         .agg(F.count(F.lit(1)).alias("n"), F.sum("amount").alias("s")).toArrow())
    return {g: (n, s) for g, n, s in zip(*(t.column(x).to_pylist() for x in ("region", "n", "s")), strict=True)}


class Inputs:
    """The two tables' updates, as Parquet files per tick, and their contents in numpy."""

    def __init__(self, base: str, rows: int, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.dirs = {t: os.path.join(base, t) for t in ("orders", "customers")}
        for d in self.dirs.values():
            os.makedirs(d)
        self.customers = max(10, rows // 10)
        self.cust = self.rng.integers(0, self.customers, rows)
        self.amount = self.rng.integers(1, 100, rows)
        self.live = np.ones(rows, bool)
        self.region = np.arange(self.customers) % REGIONS
        self.next_id = rows
        self.tick = 0
        self._write(np.arange(rows), self.cust, self.amount, np.ones(rows, np.int64),
                    np.arange(self.customers), self.region.copy(), np.ones(self.customers, np.int64))

    def _write(self, o_id: Any, cust: Any, amount: Any, ow: Any, c_id: Any, region: Any, cw: Any) -> None:
        pq.write_table(pa.table({"o_id": o_id, "cust": cust, "amount": amount, "w": ow}),
                       os.path.join(self.dirs["orders"], f"{self.tick}.parquet"))
        pq.write_table(pa.table({"c_id": c_id, "region": region, "w": cw}),
                       os.path.join(self.dirs["customers"], f"{self.tick}.parquet"))

    def files(self) -> tuple[str, str]:
        return (os.path.join(self.dirs["orders"], f"{self.tick}.parquet"),
                os.path.join(self.dirs["customers"], f"{self.tick}.parquet"))

    def next(self, changes: int) -> None:
        self.tick += 1
        gone = self.rng.choice(np.flatnonzero(self.live), changes // 2, replace=False)
        self.live[gone] = False
        new = changes - len(gone)
        ids = np.arange(self.next_id, self.next_id + new)
        self.next_id += new
        cust, amount = self.rng.integers(0, self.customers, new), self.rng.integers(1, 100, new)
        self.cust, self.amount = np.concatenate([self.cust, cust]), np.concatenate([self.amount, amount])
        self.live = np.concatenate([self.live, np.ones(new, bool)])
        moved = self.rng.choice(self.customers, 10, replace=False)
        old = self.region[moved].copy()
        self.region[moved] = (old + 1 + self.rng.integers(0, REGIONS - 1, 10)) % REGIONS
        self._write(np.concatenate([gone, ids]), np.concatenate([self.cust[gone], cust]),
                    np.concatenate([self.amount[gone], amount]),
                    np.concatenate([-np.ones(len(gone), np.int64), np.ones(new, np.int64)]),
                    np.concatenate([moved, moved]), np.concatenate([old, self.region[moved]]),
                    np.concatenate([-np.ones(10, np.int64), np.ones(10, np.int64)]))

    def answer(self) -> Answer:
        g = self.region[self.cust[self.live]]
        n = np.bincount(g, minlength=REGIONS)
        s = np.bincount(g, weights=self.amount[self.live], minlength=REGIONS).astype(np.int64)
        return {int(k): (int(n[k]), int(s[k])) for k in np.flatnonzero(n)}


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p * (len(xs) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--ticks", type=int, default=12)
    ap.add_argument("--tick-rows", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=2)
    args = ap.parse_args()
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    load0 = os.getloadavg()
    base = tempfile.mkdtemp(prefix="weir-incremental-join-")
    rows_out = []
    try:
        spark = _session(base, args.partitions)
        for size in (int(s) for s in args.sizes.split(",")):
            here = os.path.join(base, str(size))
            inputs = Inputs(here, size, seed=28)
            view = RunsView(spark, here, args.partitions)
            t0 = time.monotonic()
            view.tick(*inputs.files())
            hydration = time.monotonic() - t0
            t0 = time.monotonic()
            _recompute(spark, inputs.dirs["orders"], inputs.dirs["customers"])
            hydration_rc = time.monotonic() - t0
            runs_t, recompute_t = [], []
            for _ in range(args.ticks):
                inputs.next(args.tick_rows)
                t0 = time.monotonic()
                view.tick(*inputs.files())
                runs_t.append(time.monotonic() - t0)
                t0 = time.monotonic()
                final = _recompute(spark, inputs.dirs["orders"], inputs.dirs["customers"])
                recompute_t.append(time.monotonic() - t0)
            truth = inputs.answer()
            assert view.answer == truth, f"{size}: the runs' changes differ from numpy's answer"
            assert final == truth, f"{size}: the recompute differs from numpy's answer"
            per_row = view.state_bytes() / (size + size // 10)
            rows_out.append((size, hydration, runs_t, hydration_rc, recompute_t, per_row))
            print(f"{size:>10,}: runs hydration {hydration:.2f} s, ticks {[round(x, 3) for x in runs_t]}; "
                  f"recompute {[round(x, 3) for x in recompute_t]}", flush=True)
        load1 = os.getloadavg()
        print(f"\njoin + aggregate, {args.ticks} ticks of {args.tick_rows:,} order changes + 10 customer moves, "
              f"{args.partitions} key partitions, local[1]; load average {load0[0]:.1f} at start, "
              f"{load1[0]:.1f} at end")
        print(f"{'rows':>10} {'runs hydr s':>11} {'runs p50':>9} {'runs p99':>9} {'recomp p50':>10} "
              f"{'recomp p99':>10} {'state B/row':>11}")
        for size, hyd, rt, _, ct, per_row in rows_out:
            print(f"{size:>10,} {hyd:11.2f} {statistics.median(rt):9.3f} {_pct(rt, 0.99):9.3f} "
                  f"{statistics.median(ct):10.3f} {_pct(ct, 0.99):10.3f} {per_row:11.1f}")
        first, last = rows_out[0], rows_out[-1]
        print(f"p50 ratio {last[0]:,} / {first[0]:,} rows: runs "
              f"{statistics.median(last[2]) / statistics.median(first[2]):.2f}, recompute "
              f"{statistics.median(last[4]) / statistics.median(first[4]):.2f}")
        print("answers: the runs' changes and the recompute equal numpy's answer at every size")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
