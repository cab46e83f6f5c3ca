"""Materialized-view dataflows on a replica.

A dataflow maintains one materialized view: it keeps the view's output shard
equal to its query over its input shards, interval by interval. Every replica
of a cluster runs every dataflow of the cluster and they all write the same
output shard with compare-and-append: the first append of an interval wins,
the others are refused (`UpperMismatch`) and resynchronise from the shard.

Each dataflow runs on its own thread (Spark calls block; peeks keep running on
the replica's peek threads). One step of its loop:

1. U = the output's upper, T = min over inputs of max(upper the controller
   announced in UpdateInputFrontiers, durable upper in Iceberg). Nothing to do
   unless T > U.
2. The distinct input update times in [U, T) come from Iceberg scan planning
   (file statistics; a file spanning several times has only its mz_timestamp
   column read). Times below the inputs' since (compacted) or the as_of are
   forwarded to max(as_of, since); while the output's upper is <= as_of the
   snapshot time itself is one of them (hydration).
3. "recompute": the query runs at each of those times (inputs read as of the
   time from their Parquet files, consolidated) and each result is diffed in
   Spark against the previous one (the output's contents at U-1, cached;
   loaded from the output shard when unknown). "linear": the rewritten query
   (weir.compute.replica.linear) runs once over the inputs' updates in [U, T).
   "reduce": a GROUP BY of count / sum over a linear query or a join; its linear
   part runs over the updates and each group's accumulators change on the
   executors (weir.compute.replica.incremental.reduce). "join": equi-joins (inner
   or outer) of any number of inputs kept stage by stage as delta joins against both
   sides arranged by key on the executors (weir.compute.replica.incremental.join),
   the rest of the query linear over its output. An interval an incremental strategy
   did not apply (recomputed, lost to a different interval) rebuilds its state; a
   restarted replica resumes it from its checkpoint when that is the output's.
4. All diffs, each at its time, go into ONE compare_and_append(U -> T) with the
   replica's writer epoch; no change appends nothing but still advances the
   upper. A refused append means another replica won: the cached result is kept
   if the winner wrote exactly what this replica computed, else dropped (it is
   reloaded from the output shard when next needed). A fenced append pauses the
   dataflow until the controller grants an epoch at least the shard's.

The output shard must have the query's columns in order, and an upper <= as_of
when the view is created (an upper > as_of means the shard already holds the
view up to upper - 1: a replica starting late resumes from there, after rehydrating:
it runs the job of a first hydration at upper - 1, the difference between the query's
result and the output there, which is empty, so its operators run and report as
Materialize's rehydrating replicas' do).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from typing import Any, Protocol

import pyarrow as pa

from weir.compute import protocol as P
from weir.compute.replica import dataflow_io as io
from weir.compute.replica import plan_ids, temporal
from weir.compute.replica.dataflow_errors import ErrorStream, data_error, state_of
from weir.compute.replica.dataflow_spec import (
    INCREMENTAL,
    LINEAR,
    MAINTAINS,
    RECOMPUTE,
    DataflowSpec,
)
from weir.compute.replica.engine import SparkEngine
from weir.compute.replica.errors import translate
from weir.compute.replica.incremental import strategies
from weir.compute.replica.incremental.maintained import Incremental, state_directory
from weir.compute.replica.incremental.reduce import gave_up
from weir.compute.replica.linear import NotLinear, linear_rewrite
from weir.compute.replica.plan_ids import PinnedNode
from weir.compute.replica.temporal import Thresholds
from weir.errors import SqlState, WeirError
from weir.storage.frontiers import Fenced, UpperMismatch
from weir.storage.persist import Shard, ShardStore
from weir.storage.schema import Column

log = logging.getLogger(__name__)

TICK = 1.0
MAX_BACKOFF = 10.0
MAX_TIMES_PER_STEP = 16  # recompute: one evaluation of the query per time
# From deltas (linear, incremental) one job takes an interval's updates at all their times:
# at 16 times a step, a join view over a table written ten times a second fell ever further
# behind (each step ~1 s of Spark for 1.6 s of input under load).
MAX_TIMES_PER_DELTA_STEP = 1024
class Host(Protocol):
    """What a dataflow needs from its replica (every method is thread-safe)."""

    def emit(self, body: dict[str, Any]) -> None: ...

    def fatal(self, why: str) -> None: ...

    def writer_epoch(self) -> int: ...

    def input_upper(self, shard_id: str) -> int: ...

    def now(self) -> int: ...

    def tracking_hydration(self) -> bool: ...

    def state_root(self) -> str | None:
        """Where incremental state and its checkpoints live (None: a temporary directory)."""


@dataclass
class _Input:
    name: str
    shard: Shard
    columns: list[Column]
    planner: io.Planner
    durable_upper: int = 0


class Dataflow:
    def __init__(self, spec: DataflowSpec, engine: SparkEngine, host: Host) -> None:
        self.spec = spec
        self.engine = engine
        self.host = host
        self.tag = f"weir-dataflow-{spec.dataflow_id}-{uuid.uuid4().hex[:8]}"
        self.prepared = False
        self.effective_strategy = RECOMPUTE
        self.why_recompute: str | None = None  # why a strategy asked for is not the one run
        self.upper: int | None = None  # the output's upper as this replica knows it
        self.since: int | None = None  # from AllowCompaction (an index keeps history from it)
        self.columns: list[str] = []
        self.plan_nodes: list[PinnedNode] | None = list(spec.plan_nodes) if spec.plan_nodes else None
        # the QueryExecution of this incarnation's hydration job (the hydration tracker reads
        # its scans' partitions), set while hydration status is tracked
        self.hydration_job: Any = None
        self._hydrating = True  # until the first computation (the snapshot) is done
        self._linear_sql: str | None = None
        self._incremental: Incremental | None = None  # a strategy in INCREMENTAL
        self._schema: Any = None
        self._out: Shard
        self._out_plans: io.Planner
        self._inputs: list[_Input] = []
        self._prev: Any = None  # counted DataFrame: the output's contents at upper - 1
        self._fenced_at: int | None = None
        self._error: str | None = None
        self._errs: ErrorStream | None = None  # the view's errors shard (runtime errors as data)
        self._narrow = False  # a data error in a multi-time step: find its time, one at a time
        self._thresholds = (Thresholds(spec.thresholds_sql, engine.new_session, MAX_TIMES_PER_STEP + 1)
                            if spec.thresholds_sql else None)
        self._stop = threading.Event()
        self._dropped = False  # stopped because dropped: its state goes
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        # appended: intervals this replica wrote; lost: appends refused (another replica
        # won); kept: of those, how many kept the computed result; followed: intervals
        # seen written by another replica before computing; computed: Spark runs.
        # small: intervals recomputed while its inputs were below its threshold (min_updates)
        self.stats = {"appended": 0, "lost": 0, "kept": 0, "followed": 0, "computed": 0, "resumed": 0, "small": 0}

    def explanation(self) -> str:
        """How it is maintained, the state it keeps, and why not as asked (EXPLAIN shows it)."""
        text = MAINTAINS[self.effective_strategy]
        incremental = self._incremental
        for described in (incremental.source.describe(), incremental.describe_own()) if incremental else ():
            if described:
                text += f"; {described}"
        if incremental is not None and self.spec.min_updates > 0:
            text += (f"; recomputed instead while its inputs hold fewer than {self.spec.min_updates:,} updates "
                     f"and its state is not built (incremental_min_updates)")
        if self.why_recompute and self.effective_strategy != self.spec.strategy:
            text += f"; not {self.spec.strategy}: {self.why_recompute}"
        return text

    def allow_compaction(self, since: int) -> None:
        """Recorded only: the output shard's since is the coordinator's to downgrade."""
        self.since = max(self.since or 0, since)

    def status(self) -> dict[str, Any]:
        """The output upper this replica knows, the strategy it runs and its counters."""
        status = {"write_frontier": self.upper, "strategy": self.effective_strategy, **self.stats}
        incremental = self._incremental
        if incremental is not None:  # per stateful operator: [partition, records, runs, bytes] each
            status["state"] = [[list(row) for row in op] for op in incremental.state()]
        return status

    def import_frontiers(self) -> dict[str, int]:
        """Each input shard's upper as this dataflow knows it (introspection)."""
        return {i.shard.shard_id: max(self.host.input_upper(i.shard.shard_id), i.durable_upper)
                for i in list(self._inputs)}

    # -- set-up (blocking; on a worker thread) -----------------------------------------

    def prepare(self, store: ShardStore) -> None:
        """Open the shards and analyse the query; raises WeirError if it cannot run."""
        spec = self.spec
        self._out = store.open_shard(spec.output_shard_id)
        self._out_plans = io.Planner(self._out)
        if spec.errors_shard_id:
            self._errs = ErrorStream(store.open_shard(spec.errors_shard_id))
        self._open_inputs(store)
        self._schema = self._analyse()
        width = len(self._schema.fields)
        if width != len(self._out.columns):
            raise WeirError(SqlState.DATATYPE_MISMATCH,
                            f"the query has {width} columns but output shard "
                            f"{spec.output_shard_id} has {len(self._out.columns)}")
        self.columns = [f.name for f in self._schema.fields]
        if spec.strategy == LINEAR and self._thresholds is None:  # a temporal filter recomputes
            self._linear_sql = self._linear()
        if spec.strategy in INCREMENTAL and self._thresholds is None:
            self._incremental, self.why_recompute = strategies.build(
                spec.strategy, spec.dataflow_id, spec.sql, [(i.name, i.columns) for i in self._inputs],
                self._schema, self.engine.new_session, self.engine.shuffle_partitions(),
                state_directory(self.host.state_root(), spec.dataflow_id))
        self.effective_strategy = (LINEAR if self._linear_sql else spec.strategy if self._incremental
                                   else RECOMPUTE)
        incremental = self._incremental
        if incremental is not None and not self._small([i.planner.plan(spec.as_of + 1) for i in self._inputs],
                                                       count=False):  # the job its hydration runs
            self._pin_plan(lambda session, t: incremental.snapshot_frame(
                session, [(i.name, i.columns, i.planner.plan(t + 1).files) for i in self._inputs], t))
        else:
            self._pin_plan(lambda session, t: temporal.query(session, spec.sql, t, self._thresholds is not None))
        self.prepared = True

    def _pin_plan(self, query: Callable[[Any, int], Any]) -> None:
        """The plan node ids of a dataflow created for the first time: its query's plan over
        its inputs at its as_of, as Spark plans it (nothing runs)."""
        if self.plan_nodes is not None:
            return
        try:
            session = self.engine.new_session()
            for inp in self._inputs:
                plan = inp.planner.plan(self.spec.as_of + 1)
                io.contents_view(session, plan.files, inp.columns, self.spec.as_of).createOrReplaceTempView(inp.name)
            self.plan_nodes = plan_ids.explained(query(session, self.spec.as_of))
        except Exception:  # noqa: BLE001 - without it statuses are per object only
            log.warning("dataflow %s: could not explain its plan", self.spec.dataflow_id, exc_info=True)

    def record_counts(self) -> dict[str, int]:
        """Rows per data file of every shard it read last (scans' expected sizes)."""
        out: dict[str, int] = {}
        for planner in [*(i.planner for i in list(self._inputs)), getattr(self, "_out_plans", None)]:
            if planner is not None:
                out.update(planner.record_counts())
        return out

    def _open_inputs(self, store: ShardStore) -> None:
        for i in self.spec.inputs:
            shard = store.open_shard(i.shard_id)
            cols = list(shard.columns)
            if i.column_names is not None:
                if len(i.column_names) != len(cols):
                    raise WeirError(SqlState.DATATYPE_MISMATCH,
                                    f"input {i.name} names {len(i.column_names)} columns, "
                                    f"shard {i.shard_id} has {len(cols)}")
                cols = [(n, t, nl) for n, (_, t, nl) in zip(i.column_names, cols, strict=True)]
            self._inputs.append(_Input(i.name, shard, cols, io.Planner(shard)))

    def _analyse(self) -> Any:
        """The query's Spark schema (raises WeirError if Spark cannot run it)."""
        try:
            session = self.engine.new_session()
            for inp in self._inputs:
                io.contents_view(session, [], inp.columns, 0).createOrReplaceTempView(inp.name)
            return temporal.query(session, self.spec.sql, self.spec.as_of, self._thresholds is not None).schema
        except Exception as e:
            raise translate(e) from None

    def _linear(self) -> str | None:
        try:
            sql = linear_rewrite(self.spec.sql, {i.name: [c[0] for c in i.columns] for i in self._inputs})
            session = self.engine.new_session()
            for inp in self._inputs:
                io.updates_view(session, [], inp.columns, 0, 1).createOrReplaceTempView(inp.name)
            if len(session.sql(sql).columns) != len(self._schema.fields) + 2:
                raise NotLinear("the rewrite changed the number of columns")
            return sql
        except Exception as e:  # NotLinear, or Spark refusing the rewrite
            log.info("dataflow %s: recomputing (not linear: %s)", self.spec.dataflow_id, e)
            self.why_recompute = f"not linear: {e}"
            return None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"dataflow-{self.spec.dataflow_id}",
                                        daemon=True)
        self._thread.start()

    def stop(self, drop: bool = False) -> None:
        self._dropped = self._dropped or drop
        self._stop.set()
        self._wake.set()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def wake(self) -> None:
        self._wake.set()

    def frontiers_body(self) -> dict[str, Any] | None:
        if self.upper is None:
            return None
        body = {"type": P.FRONTIERS, "dataflow_id": self.spec.dataflow_id,
                "write_frontier": self.upper, "hydrated": self.upper > self.spec.as_of}
        count = self.error_count()
        if count is not None:
            body["error_count"] = count
        return body

    def error_count(self) -> int | None:
        """The errors the export holds at its frontier (None: not known here)."""
        return self._errs.count() if self._errs is not None else None

    def _run(self) -> None:
        sc = self.engine.sc
        sc.addJobTag(self.tag)
        sc.setInterruptOnCancel(True)
        sc.setJobDescription(f"dataflow {self.spec.dataflow_id}")
        delay = TICK
        try:
            while not self._stop.is_set():
                try:
                    more = self._step()
                    self._error, delay = None, TICK
                    if more:
                        continue
                except Fenced as e:
                    log.warning("dataflow %s fenced by epoch %d; waiting for a newer epoch",
                                self.spec.dataflow_id, e.current_epoch)
                    self._fenced_at = e.current_epoch
                except Exception as e:
                    if self._stop.is_set():
                        break
                    if self.engine.jvm_gone(e):
                        self.host.fatal(f"the Spark JVM died in dataflow {self.spec.dataflow_id}")
                        return
                    self._failed(translate(e))
                    delay = min(max(TICK, delay * 2), MAX_BACKOFF)
                self._wake.wait(delay)
                self._wake.clear()
        finally:
            self._drop_prev()
            if self._incremental is not None and self._dropped:
                self._incremental.close()
            try:
                sc.removeJobTag(self.tag)
            except Exception:  # the session may be stopping
                pass

    def _failed(self, err: WeirError) -> None:
        log.warning("dataflow %s: %s", self.spec.dataflow_id, err)
        if self._thresholds is not None:
            self._thresholds.forget()
        self._drop_prev()  # it may depend on files or blocks that are gone
        text = f"{err.sqlstate}:{err.message}"
        if text != self._error:
            self._error = text
            self.host.emit({"type": P.DATAFLOW_ERROR, "dataflow_id": self.spec.dataflow_id,
                            "sqlstate": err.sqlstate, "message": err.message,
                            "detail": err.detail, "hint": err.hint, "at": "run"})

    # -- one step ------------------------------------------------------------------------

    def _advance_to(self, upper: int) -> None:
        if self.upper is not None and upper <= self.upper:
            return
        self.upper = upper
        body = self.frontiers_body()
        assert body is not None
        self.host.emit(body)

    def _input_upper(self, known: int) -> int:
        """min over inputs of max(announced upper, durable upper); polls Iceberg only
        for inputs not announced past `known`."""
        result: int | None = None
        for inp in self._inputs:
            u = max(self.host.input_upper(inp.shard.shard_id), inp.durable_upper)
            if u <= known:
                inp.durable_upper = max(inp.durable_upper, inp.shard.frontiers().upper)
                u = max(u, inp.durable_upper)
            result = u if result is None else min(result, u)
        if result is None:
            # no inputs: constant, complete at every time; it keeps up with the coordinator's
            # clock (one millisecond a step left an index on a constant view ever further
            # behind the reads' timestamps: no read took its fast path)
            return max(known + 1, self.host.now())
        return result

    def _step(self) -> bool:
        """One interval; True if there may be more to do at once."""
        epoch = self.host.writer_epoch()
        if self._fenced_at is not None:
            if epoch < self._fenced_at:
                return False
            self._fenced_at = None
        if self.upper is None:
            current = self._out.frontiers().upper
            if current > self.spec.as_of:
                self._rehydrate(current - 1)
            self._advance_to(current)
        assert self.upper is not None
        upper = self._input_upper(self.upper)
        if upper <= self.upper:
            return False
        lower = self.upper
        plans = [inp.planner.plan(upper, lower) for inp in self._inputs]
        if self._thresholds is not None or lower <= self.spec.as_of or any(p.times for p in plans):
            # Spark work follows: skip it if a peer already wrote the interval. An interval
            # without changes only advances the upper, and compare_and_append finds a peer's
            # write as cheaply as reading the output's frontiers (an Iceberg load per idle
            # view per second: with dozens of views it held the replica's GIL).
            current = self._out.frontiers().upper
            if current > self.upper:
                self.stats["followed"] += 1
                self._caught_up(current)
                return True
        for inp, p in zip(self._inputs, plans, strict=True):
            inp.durable_upper = max(inp.durable_upper, p.frontiers.upper)
        since = max((p.frontiers.since for p in plans), default=0)
        floor = max(self.spec.as_of, since)
        if upper <= floor:
            return False  # not readable yet (as_of not complete, or inputs compacted past it)
        times = {max(t, floor) for p in plans for t in p.times}
        if lower <= self.spec.as_of:
            times.add(floor)  # hydration: the snapshot at as_of
        if self._thresholds is not None:  # a temporal filter: the times its rows flip too
            times |= self._thresholds.times(lambda session, t: self._bind(session, plans, t),
                                            max(lower, floor), upper, sorted(times))
        ordered = sorted(times)
        # after an error the output lacks that time's changes: recompute (never linear) until clean
        erring = self._errs is not None and (bool(self._errs.current()) or self._errs.ahead_of(lower))
        linear = self._linear_sql is not None and lower > self.spec.as_of and since < lower and not erring
        incremental = not linear and bool(ordered) and self._incremental is not None and not erring and (
            since < lower if lower > self.spec.as_of else self._output_empty(lower)) and not self._small(plans)
        if self._narrow or erring:
            limit = 1
        elif (linear or incremental) and self._thresholds is None:
            limit = MAX_TIMES_PER_DELTA_STEP
        else:
            limit = MAX_TIMES_PER_STEP
        more = len(ordered) > limit
        if more:
            upper, ordered = ordered[limit], ordered[:limit]
            if self._thresholds is not None:
                self._thresholds.forget()  # it looked past the shortened interval
        updates: pa.Table | None = None
        result: Any = None
        failed: WeirError | None = None
        if ordered:
            self.stats["computed"] += 1
            try:
                if linear:
                    updates = self._apply_linear(plans, lower, upper)
                elif incremental:
                    updates, result = self._apply_incremental(plans, ordered, lower, upper, floor)
                else:
                    updates, result = self._recompute(plans, ordered, lower)
                    if self._incremental is not None:
                        self._incremental.stale = True
            except Exception as e:
                failed = self._data_error(e)
                if failed is None:
                    raise
                if len(ordered) > 1:
                    self._narrow = True  # which time fails? one at a time until past it
                    return True
        if self._errs is not None:
            try:
                self._errs.record([(t, state_of(failed)) for t in ordered], lower, upper, epoch)
            except BaseException:
                _release(result)
                raise
        try:
            self._out.compare_and_append(updates, lower, upper, epoch)
        except UpperMismatch as e:
            incremental = self._incremental
            if incremental is not None and result is None and e.current == upper and (
                    updates is not None or not ordered):
                # another replica wrote this very interval: its output is ours, so is our state
                incremental.appended(updates is not None, upper)
                self.stats["lost"] += 1
                if self._errs is not None:
                    self._errs.forget()
                self._advance_to(upper)
                return True
            self._lost_race(e.current, lower, upper, updates, result)
            return True
        except BaseException:
            _release(result)
            raise
        self.stats["appended"] += 1
        if self._incremental is not None:
            if failed is not None or result is not None:
                self._incremental.stale = True  # it did not apply this interval
            else:
                self._incremental.appended(updates is not None, upper)
        if failed is None and self._narrow and not (self._errs is not None and self._errs.current()):
            self._narrow = False
        if ordered and failed is None:
            self._drop_prev()
            self._prev = None if self._linear_sql is not None else result
            if self._prev is None:
                _release(result)
        self._advance_to(upper)
        return more

    def _rehydrate(self, t: int) -> None:
        """The output already holds the view up to `t` (this replica restarted, was added,
        or its peer wrote first): rebuild the dataflow from its inputs at `t` with the job
        of a first hydration (the same plan, so each plan node's rows are what the last
        hydration's were), diffed against the output there. Inputs compacted past `t`, or
        a query failing there: the output is read back when needed, as before."""
        plans = [inp.planner.plan(t + 1) for inp in self._inputs]
        if any(p.frontiers.since > t for p in plans):
            return
        if self._incremental is not None and not self._small(plans):
            try:  # resumed from its checkpoint if that is the output's, else rebuilt
                how = self._incremental.restart(
                    self.engine.new_session, [(i.name, i.columns, p.files) for i, p in
                                              zip(self._inputs, plans, strict=True)], t, self._hydration_job)
                log.info("dataflow %s: state %s at %d", self.spec.dataflow_id, how, t + 1)
                self.stats["resumed"] = int(how == "resumed")
            except Exception as e:
                if self.engine.jvm_gone(e) or self._stop.is_set():
                    raise
                log.info("dataflow %s: restoring its state at %d failed (%s)", self.spec.dataflow_id, t, e)
                self._incremental.stale = True
            return
        try:
            updates, result = self._recompute(plans, [t], t + 1)
        except Exception as e:
            if self.engine.jvm_gone(e) or self._stop.is_set():
                raise
            log.info("dataflow %s: rehydration at %d failed (%s); reading the output back",
                     self.spec.dataflow_id, t, e)
            return
        if updates.num_rows:  # the output is the view's at t: a difference is a bug to see
            log.warning("dataflow %s: rehydrated at %d, its query differs from its output by %d updates",
                        self.spec.dataflow_id, t, updates.num_rows)
        self.stats["computed"] += 1
        self._drop_prev()
        if self._linear_sql is None:
            self._prev = result
        else:
            _release(result)

    def _small(self, plans: list[io.Plan], count: bool = True) -> bool:
        """Recompute instead of the incremental strategy: its inputs hold fewer updates than
        the view's threshold and its state is not built (once built it is kept)."""
        incremental = self._incremental
        if incremental is None or not incremental.stale or self.spec.min_updates <= 0:
            return False
        small = sum(p.records for p in plans) < self.spec.min_updates
        if small and count:
            self.stats["small"] += 1
        return small

    def _data_error(self, e: Exception) -> WeirError | None:
        """The error to record as data, if `e` is one and this dataflow records errors."""
        if self._errs is None or self._stop.is_set():
            return None
        err = translate(e)
        if not data_error(err):
            return None
        log.info("dataflow %s: %s (recorded as data)", self.spec.dataflow_id, err)
        return err

    def _recompute(self, plans: list[io.Plan], times: list[int], lower: int) -> tuple[pa.Table, Any]:
        from pyspark.sql import functions as F

        prev = self._prev_at(lower)
        width = len(self._schema.fields)
        results: list[Any] = []
        try:
            for t in times:
                session = self.engine.new_session()
                self._bind(session, plans, t)
                query = temporal.query(session, self.spec.sql, t, self._thresholds is not None)
                results.append(io.counted(query, self._schema).cache())
            parts, before = [], prev
            for t, r in zip(times, results, strict=True):
                parts.append(io.difference(before, r, width).withColumn(io.TIME, F.lit(t).cast("bigint")))
                before = r
            data = reduce(lambda a, b: a.unionByName(b), parts)
            self._hydration_job(data)
            data = data.toArrow()
        except BaseException:
            for r in results:
                _release(r)
            raise
        for r in results[:-1]:
            _release(r)
        return io.output_updates(data, self._out.columns), results[-1]

    def _hydration_job(self, df: Any) -> None:
        """The first job of this incarnation hydrates it: let the tracker see its plan."""
        if self._hydrating:
            self._hydrating = False
            if self.host.tracking_hydration():
                self.hydration_job = df._jdf.queryExecution()

    def _bind(self, session: Any, plans: list[io.Plan], t: int) -> None:
        """The inputs' temp views as of `t`."""
        for inp, p in zip(self._inputs, plans, strict=True):
            io.contents_view(session, p.files, inp.columns, t).createOrReplaceTempView(inp.name)

    def _apply_linear(self, plans: list[io.Plan], lower: int, upper: int) -> pa.Table:
        session = self.engine.new_session()
        for inp, p in zip(self._inputs, plans, strict=True):
            # only the files that can hold updates in [lower, upper): work proportional to the changes
            io.updates_view(session, p.changed, inp.columns, lower, upper).createOrReplaceTempView(inp.name)
        assert self._linear_sql is not None
        data = io.linear_updates(session.sql(self._linear_sql), self._schema).toArrow()
        return io.output_updates(data, self._out.columns)

    def _apply_incremental(self, plans: list[io.Plan], times: list[int], lower: int, upper: int,
                           floor: int) -> tuple[pa.Table, Any]:
        """The interval by an incremental strategy (a hydration: from empty state at `floor`);
        if it gives up (an overflow, a hash collision, a bug), recompute from now on."""
        incremental = self._incremental
        assert incremental is not None
        bound = [(inp.name, inp.columns, p.files) for inp, p in zip(self._inputs, plans, strict=True)]
        changed = [(inp.name, inp.columns, p.changed) for inp, p in zip(self._inputs, plans, strict=True)]
        try:
            data = incremental.interval(self.engine.new_session, bound, changed, lower, upper, floor,
                                        hydrating=lower <= self.spec.as_of, job=self._hydration_job)
        except Exception as e:
            if self.engine.jvm_gone(e) or self._stop.is_set() or (
                    not gave_up(e) and data_error(translate(e))):
                raise  # a data error recompute would meet too: recorded as the view's error
            level = logging.INFO if gave_up(e) else logging.WARNING
            log.log(level, "dataflow %s: recomputing from now on (%s)", self.spec.dataflow_id, e)
            incremental.close()
            self._incremental, self.effective_strategy = None, RECOMPUTE
            self.why_recompute = f"the {self.spec.strategy} strategy gave up: {str(e).splitlines()[0][:200]}"
            return self._recompute(plans, times, lower)
        return io.output_updates(data, self._out.columns), None

    def _output_empty(self, lower: int) -> bool:
        """Nothing written before `lower`: a strategy may hydrate from empty state. Else the
        output holds an older state of the view (a restart whose inputs were compacted past
        the output's upper chose a later as_of): recompute diffs the view against it, and the
        strategy rebuilds its state from the next interval on."""
        return not self._out_plans.plan(lower).files

    def _prev_at(self, lower: int) -> Any:
        """The output's contents at lower - 1 (cached; read from the shard when unknown)."""
        if self._prev is None:
            plan = self._out_plans.plan(lower)
            session = self.engine.new_session()
            self._prev = io.stored_counted(session, plan.files, self._out.columns, self._schema,
                                           as_of=lower - 1).cache()
        return self._prev

    def _lost_race(self, current: int, lower: int, upper: int, ours: pa.Table | None,
                   result: Any) -> None:
        """Another replica appended first: adopt its progress."""
        log.debug("dataflow %s: lost [%d, %d) to another writer (upper %d)", self.spec.dataflow_id,
                  lower, upper, current)
        self.stats["lost"] += 1
        if self._errs is not None:
            self._errs.forget()
        keep = False
        if result is not None and current == upper:
            try:
                theirs = self._out.read_updates(lower, upper)
                keep = io.same_updates(ours, theirs, self._out.columns)
            except WeirError:
                keep = False
        if keep:
            self.stats["kept"] += 1
            self._drop_prev()
            self._prev = result
            self._advance_to(current)
            return
        _release(result)
        self._caught_up(current)

    def _caught_up(self, current: int) -> None:
        """The output advanced to `current` without us: keep the cached contents only if
        nothing was appended since."""
        if self._incremental is not None:
            self._incremental.stale = True
        if self._prev is not None and self.upper is not None:
            if current < self.upper or self._out_plans.plan(current, self.upper).times:
                self._drop_prev()
        if self._errs is not None:
            self._errs.forget()
        if self._thresholds is not None:
            self._thresholds.forget()  # the inputs may have changed in what was skipped
        self._advance_to(current)

    def _drop_prev(self) -> None:
        _release(self._prev)
        self._prev = None


def _release(df: Any) -> None:
    if df is not None:
        try:
            df.unpersist()
        except Exception:  # the session may be stopping
            pass


StoreFn = Callable[[], ShardStore]
