"""Issue 28, part 2: candidate mechanisms for an incremental aggregate's state on Spark's
executors, measured side by side in one run against today's recompute.

    .venv/bin/python bench/incremental_state.py [--rows 100000] [--keys 10000] [--ticks 12]
                                                [--tick-rows 1000]

One SparkSession like a replica of size '1' (local[1], two shuffle partitions), the
RocksDB state store. The view is `SELECT k, sum(v), count(*) FROM input GROUP BY k`; its
input arrives as weir's micro-batches of weighted updates (Parquet files of
`k, v, wt, wd`: the update's time and weight as columns, so retractions are data): a
hydration file of `--rows` inserts, then `--ticks` files of `--tick-rows` random inserts
and deletes each. Per tick it measures the time from the file appearing to the view's
changes (-old / +new row per touched group) being in the driver:

  recompute   a Spark batch job over every file so far (what a recompute dataflow does
              per interval, before its diff)
  tws         transformWithStateInPandas (Spark 4): per-key ValueState in RocksDB on the
              executors, checkpointed; a streaming query with a 50 ms trigger
  apply       applyInPandasWithState: the state travels to Python with each key's rows
  cached      the groups as a cached DataFrame partitioned by key on the executors; per
              tick a Spark job joins the tick's aggregated updates against it, emits the
              touched groups' changes and caches the next state (no checkpoint)

Each incremental strategy's changes, summed, must equal the recompute's final answer
(checked). Prints p50 / p99 per strategy and the load average at start and end."""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

Groups = dict[int, tuple[int, int]]  # k -> (sum, count)


def _session(base: str) -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[1]").appName("incremental-state")
            .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
            .config("spark.driver.memory", "4g")
            .config("spark.sql.streaming.stateStore.providerClass",
                    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
            .config("spark.sql.warehouse.dir", os.path.join(base, "warehouse")).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _write(directory: str, name: str, k: list[int], v: list[int], t: int, d: list[int]) -> None:
    """One micro-batch, renamed into place so a stream never sees it half written."""
    table = pa.table({"k": pa.array(k, pa.int64()), "v": pa.array(v, pa.int64()),
                      "wt": pa.array([t] * len(k), pa.int64()), "wd": pa.array(d, pa.int64())})
    tmp = os.path.join(directory, f".{name}.tmp")
    pq.write_table(table, tmp)
    os.rename(tmp, os.path.join(directory, f"{name}.parquet"))


def _changes(groups: Groups, key: int, df: pd.DataFrame) -> list[tuple[int, int, int, int, int]]:
    """The -old / +new rows of one group for its updates, time by time."""
    s, n = groups.get(key, (0, 0))
    out = []
    for t, g in df.groupby("wt", sort=True):
        dn, ds = int(g["wd"].sum()), int((g["v"] * g["wd"]).sum())
        if dn == 0 and ds == 0:
            continue
        if n > 0:
            out.append((key, s, n, int(t), -1))
        s, n = s + ds, n + dn
        if n > 0:
            out.append((key, s, n, int(t), 1))
    if n > 0:
        groups[key] = (s, n)
    else:
        groups.pop(key, None)
    return out


OUT = "k long, s long, n long, wt long, wd long"
COLUMNS = ["k", "s", "n", "wt", "wd"]


def _tws_processor() -> Any:
    from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
    from pyspark.sql.types import LongType, StructField, StructType

    class SumCount(StatefulProcessor):
        def init(self, handle: StatefulProcessorHandle) -> None:
            self.acc = handle.getValueState("acc", StructType([StructField("s", LongType()),
                                                               StructField("n", LongType())]))

        def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:  # noqa: N802, N803
            k = int(key[0])
            groups: Groups = {k: tuple(self.acc.get())} if self.acc.exists() else {}  # type: ignore[dict-item]
            out = _changes(groups, k, pd.concat(list(rows)))
            if k in groups:
                self.acc.update(groups[k])
            else:
                self.acc.clear()
            yield pd.DataFrame(out, columns=COLUMNS)

        def close(self) -> None:
            pass

    return SumCount()


def _apply(key: Any, pdfs: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
    k = int(key[0])
    groups: Groups = {k: tuple(state.get)} if state.exists else {}  # type: ignore[dict-item]
    out = _changes(groups, k, pd.concat(list(pdfs)))
    if k in groups:
        state.update(groups[k])
    else:
        state.remove()
    yield pd.DataFrame(out, columns=COLUMNS)


class Stream:
    """One incremental strategy as a running streaming query over the micro-batch files."""

    def __init__(self, spark: Any, name: str, directory: str, base: str) -> None:
        from pyspark.sql.types import StructType

        schema = StructType.fromDDL("k long, v long, wt long, wd long")
        grouped = spark.readStream.schema(schema).parquet(directory).groupBy("k")
        if name == "tws":
            df = grouped.transformWithStateInPandas(_tws_processor(), OUT, "Update", "None")
        else:
            df = grouped.applyInPandasWithState(_apply, OUT, "s long, n long", "Update", "NoTimeout")
        self.batches: list[pa.Table] = []
        self._cond = threading.Condition()
        self.query = (df.writeStream.outputMode("update").foreachBatch(self._sink)
                      .option("checkpointLocation", os.path.join(base, f"ckpt-{name}"))
                      .trigger(processingTime="50 milliseconds").start())

    def _sink(self, df: Any, epoch: int) -> None:
        table = df.toArrow()
        with self._cond:
            self.batches.append(table)
            self._cond.notify_all()

    def wait_for(self, n: int, timeout: float = 600.0) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.batches) >= n, timeout):
                raise TimeoutError(f"no micro-batch {n} in {timeout} s")

    def groups(self) -> Groups:
        """The view's contents: every change it emitted, summed."""
        count: dict[tuple[int, int, int], int] = {}
        for t in self.batches:
            for k, s, n, _, d in zip(*(t.column(c).to_pylist() for c in COLUMNS), strict=True):
                count[(k, s, n)] = count.get((k, s, n), 0) + d
        return {k: (s, n) for (k, s, n), c in count.items() if c}


def _recompute(spark: Any, directory: str) -> Groups:
    from pyspark.sql import functions as F

    df = spark.read.parquet(directory).groupBy("k").agg(F.sum(F.col("v") * F.col("wd")).alias("s"),
                                                        F.sum("wd").alias("n")).where("n > 0")
    t = df.toArrow()
    return dict(zip(t.column("k").to_pylist(), zip(t.column("s").to_pylist(), t.column("n").to_pylist(),
                                                    strict=True), strict=True))


class CachedState:
    """The groups as a DataFrame cached on the executors, hash-partitioned by key."""

    def __init__(self, spark: Any, hydration: str) -> None:
        from pyspark.sql import functions as F

        self.spark, self.F = spark, F
        self.state = self._keep(spark.read.parquet(hydration).groupBy("k").agg(
            F.sum(F.col("v") * F.col("wd")).alias("s"), F.sum("wd").alias("n")).where("n > 0"))
        self.changes: list[pa.Table] = []

    def _keep(self, df: Any) -> Any:
        """Kept on the executors with its lineage cut (each tick's state is built on the last)."""
        return df.repartition(2, "k").localCheckpoint(eager=True)

    def tick(self, path: str) -> None:
        F = self.F  # noqa: N806
        delta = self.spark.read.parquet(path).groupBy("k", "wt").agg(
            F.sum(F.col("v") * F.col("wd")).alias("ds"), F.sum("wd").alias("dn"))
        joined = delta.join(self.state, "k", "left").select(
            "k", "wt", F.coalesce("s", F.lit(0)).alias("s0"), F.coalesce("n", F.lit(0)).alias("n0"),
            (F.coalesce("s", F.lit(0)) + F.col("ds")).alias("s1"), (F.coalesce("n", F.lit(0)) + F.col("dn")).alias("n1"))
        old = joined.where("n0 > 0").select("k", F.col("s0").alias("s"), F.col("n0").alias("n"), "wt", F.lit(-1).alias("wd"))
        new = joined.where("n1 > 0").select("k", F.col("s1").alias("s"), F.col("n1").alias("n"), "wt", F.lit(1).alias("wd"))
        self.changes.append(old.unionByName(new).toArrow())
        touched = joined.select("k", F.col("s1").alias("s"), F.col("n1").alias("n"))
        previous = self.state
        self.state = self._keep(previous.join(touched.select("k"), "k", "left_anti").unionByName(
            touched.where("n > 0")))
        previous.unpersist()

    def groups(self) -> Groups:
        t = self.state.toArrow()
        return dict(zip(t.column("k").to_pylist(), zip(t.column("s").to_pylist(), t.column("n").to_pylist(),
                                                        strict=True), strict=True))


RUNS_OUT = "k long, s long, n long, wt long, wd long, part int, runs string"
PARTITIONS = 4


def _runs_task(directory: str, manifest: dict[int, list[str]], version: int, t: int | None) -> Any:
    """One Spark task per key partition: apply its updates to its runs, emit -old / +new per
    touched group (at the update's time, or `t`) and, last, the runs it now has."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from weir.compute.replica.incremental import runs as r

        got = [b for b in batches if b.num_rows]
        if not got:
            return
        table = pa.Table.from_batches(got)
        p = TaskContext.get().partitionId()
        keys, before, after, files = r.apply_changes(
            manifest.get(p, []), directory, p, version, ("s", "n"), table.column("k").to_numpy(),
            (table.column("s").to_numpy(), table.column("n").to_numpy()))
        old, new = before[1] > 0, after[1] > 0
        at = t if t is not None else int(table.column("wt")[0].as_py())
        k = np.concatenate([keys[old], keys[new]])
        yield pa.record_batch({
            "k": k, "s": np.concatenate([before[0][old], after[0][new]]),
            "n": np.concatenate([before[1][old], after[1][new]]),
            "wt": np.full(len(k), at, np.int64),
            "wd": np.concatenate([np.full(int(old.sum()), -1, np.int64), np.ones(int(new.sum()), np.int64)]),
            "part": pa.nulls(len(k), pa.int32()), "runs": pa.nulls(len(k), pa.string())})
        yield pa.record_batch({"k": pa.nulls(1, pa.int64()), "s": pa.nulls(1, pa.int64()),
                               "n": pa.nulls(1, pa.int64()), "wt": pa.nulls(1, pa.int64()),
                               "wd": pa.nulls(1, pa.int64()), "part": pa.array([p], pa.int32()),
                               "runs": pa.array([json.dumps(files)])})

    return task


class RunsState:
    """The groups as sorted runs per key partition, on the executors, checkpointed as Arrow
    files (weir.compute.replica.incremental.runs): one Spark job per tick, vectorised per
    partition, state touched only at the tick's keys."""

    def __init__(self, spark: Any, hydration: str, base: str) -> None:
        from weir.compute.replica.incremental.runs import Manifest

        self.spark = spark
        self.manifest = Manifest(os.path.join(base, "state-runs"), PARTITIONS, ("groups",))
        self.changes: list[pa.Table] = []
        self._run(hydration, 0)

    def _run(self, path: str, t: int | None) -> None:
        import pyarrow.compute as pc

        m = self.manifest
        df = self.spark.read.parquet(path).selectExpr("k", "v * wd AS s", "wd AS n", "wt")
        out = df.repartition(PARTITIONS, "k").mapInArrow(
            _runs_task(os.path.join(m.directory, "groups"), dict(m.runs["groups"]), m.version + 1, t), RUNS_OUT).toArrow()
        meta = out.filter(pc.is_valid(out.column("part")))
        for p, runs in zip(meta.column("part").to_pylist(), meta.column("runs").to_pylist(), strict=True):
            m.record("groups", p, json.loads(runs))
        m.version += 1
        m.save()
        self.changes.append(out.filter(pc.is_null(out.column("part"))).select(COLUMNS))

    def tick(self, path: str) -> None:
        self._run(path, None)

    def groups(self) -> Groups:
        count: dict[tuple[int, int, int], int] = {}
        for t in self.changes:
            for k, s, n, _, d in zip(*(t.column(c).to_pylist() for c in COLUMNS), strict=True):
                count[(k, s, n)] = count.get((k, s, n), 0) + d
        return {k: (s, n) for (k, s, n), c in count.items() if c}

    def state_bytes(self) -> int:
        return sum(self.manifest.state_bytes().values())


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p * (len(xs) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--ticks", type=int, default=12)
    ap.add_argument("--tick-rows", type=int, default=1000)
    ap.add_argument("--strategies", default="runs,cached,recompute",
                    help="of tws, apply, cached, runs, recompute (recompute always runs: the answer)")
    args = ap.parse_args()
    load0 = os.getloadavg()
    base = tempfile.mkdtemp(prefix="weir-incremental-")
    rng = random.Random(28)
    chosen = [s for s in args.strategies.split(",") if s and s != "recompute"]
    try:
        spark = _session(base)
        dirs = {s: os.path.join(base, f"in-{s}") for s in (*chosen, "recompute")}
        for d in dirs.values():
            os.makedirs(d)
        keys = list(range(args.rows))
        hydrate = ([i % args.keys for i in keys], keys, 1, [1] * args.rows)
        ticks = []
        for tick in range(args.ticks):
            ks = [rng.randrange(args.keys) for _ in range(args.tick_rows)]
            ticks.append((ks, [rng.randrange(100) for _ in ks], tick + 2, [rng.choice((1, 1, -1)) for _ in ks]))
        timings: dict[str, list[float]] = {s: [] for s in (*chosen, "recompute")}
        hydration: dict[str, float] = {}
        answers: dict[str, Groups] = {}
        state: dict[str, str] = {}
        for name in chosen:  # one at a time: they would share the one core
            _write(dirs[name], "0", *hydrate)
            if name in ("tws", "apply"):
                t0 = time.monotonic()
                stream = Stream(spark, name, dirs[name], base)
                stream.wait_for(1)
                hydration[name] = time.monotonic() - t0
                for i, batch in enumerate(ticks):
                    n = len(stream.batches)
                    t0 = time.monotonic()
                    _write(dirs[name], str(i + 1), *batch)
                    stream.wait_for(n + 1)
                    timings[name].append(time.monotonic() - t0)
                stream.query.stop()
                answers[name] = stream.groups()
            else:
                t0 = time.monotonic()
                first = os.path.join(dirs[name], "0.parquet")
                kept = CachedState(spark, first) if name == "cached" else RunsState(spark, first, base)
                hydration[name] = time.monotonic() - t0
                for i, batch in enumerate(ticks):
                    _write(dirs[name], str(i + 1), *batch)
                    t0 = time.monotonic()
                    kept.tick(os.path.join(dirs[name], f"{i + 1}.parquet"))
                    timings[name].append(time.monotonic() - t0)
                answers[name] = kept.groups()
                if isinstance(kept, RunsState):
                    state[name] = (f"{sum(len(r) for r in kept.manifest.runs['groups'].values())} runs, "
                                   f"{kept.state_bytes() / 1e6:.1f} MB")
            print(f"{name}: hydration {hydration[name]:.2f} s, ticks {[round(x, 3) for x in timings[name]]}",
                  flush=True)
        _write(dirs["recompute"], "0", *hydrate)
        t0 = time.monotonic()
        _recompute(spark, dirs["recompute"])
        hydration["recompute"] = time.monotonic() - t0
        for i, batch in enumerate(ticks):
            _write(dirs["recompute"], str(i + 1), *batch)
            t0 = time.monotonic()
            final = _recompute(spark, dirs["recompute"])
            timings["recompute"].append(time.monotonic() - t0)
        for name in chosen:
            assert answers[name] == final, f"{name}: its changes do not sum to the recompute's answer"
        load1 = os.getloadavg()
        print(f"GROUP BY sum/count over {args.rows:,} rows ({args.keys:,} groups), {args.ticks} ticks of "
              f"{args.tick_rows:,} updates; load average {load0[0]:.1f} at start, {load1[0]:.1f} at end")
        print(f"{'strategy':10} {'hydration s':>12} {'tick p50 s':>11} {'tick p99 s':>11}  state")
        for name, xs in timings.items():
            print(f"{name:10} {hydration[name]:12.2f} {statistics.median(xs):11.3f} {_pct(xs, 0.99):11.3f}  "
                  f"{state.get(name, '')}")
        print("answers: every incremental strategy's changes sum to the recompute's final answer")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
