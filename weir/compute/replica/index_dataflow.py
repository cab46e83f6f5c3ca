"""Index dataflows: keep an arrangement (weir.compute.replica.arrangement) up to date in
replica memory instead of writing an output shard.

Two ways to feed it, chosen by the coordinator in the index export:
- direct: the index is on one stored collection (table, source, materialized
  view). Hydration reads the shard's snapshot at the as_of and each step reads
  the shard's updates in [upper, new upper) with pyarrow: no Spark at all.
- query: the index is on a view. The view's query runs on Spark at each new
  input time (as a recomputing materialized view does) and the difference to
  the arrangement's contents is applied at that time.

The step loop, back-off, input frontiers and frontier reports are the
materialized-view dataflow's (`weir.compute.replica.dataflow.Dataflow`).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

import pyarrow as pa

from weir.compute.replica import dataflow_io as io
from weir.compute.replica.arrangement import Arrangement, FastPath, NotFastPath, arranged_rows
from weir.compute.replica.dataflow import MAX_TIMES_PER_STEP, Dataflow
from weir.compute.replica.dataflow_errors import ErrorLog, data_error
from weir.compute.replica.dataflow_spec import ARRANGE
from weir.compute.replica.errors import translate
from weir.errors import SqlState, WeirError
from weir.storage.persist import ShardStore
from weir.types import parse_type

log = logging.getLogger(__name__)


class IndexDataflow(Dataflow):
    """An index; a data error of its view's query at a time is kept in `errors` (and the
    arrangement left as it was), so peeks at that time fail with it."""

    arrangement: Arrangement
    errors: ErrorLog

    def prepare(self, store: ShardStore) -> None:
        spec = self.spec
        assert spec.index is not None
        self._open_inputs(store)
        cols = spec.index.get("columns") or []
        self.direct = bool(spec.index.get("direct"))
        if self.direct:
            if len(self._inputs) != 1:
                raise WeirError(SqlState.PROTOCOL_VIOLATION, "a direct index reads exactly one collection")
            schema = pa.schema([(n, t.arrow) for n, t, _ in self._inputs[0].columns])
        else:
            self._schema = self._analyse()
            if len(self._schema.fields) != len(cols):
                raise WeirError(SqlState.DATATYPE_MISMATCH,
                                f"the view has {len(self._schema.fields)} columns, the index {len(cols)}")
            schema = pa.schema([(str(c["name"]), parse_type(str(c["pg_type"])).arrow) for c in cols])
            self._pin_plan(lambda session, t: session.sql(spec.sql))
        keys = [int(k) for k in spec.index.get("keys") or []]
        if any(not 0 <= k < len(schema) for k in keys):
            raise WeirError(SqlState.INVALID_COLUMN_REFERENCE, f"index key positions {keys} out of range")
        self.arrangement = Arrangement(schema, keys, since=self.since)
        self.errors = ErrorLog()
        self.columns = list(schema.names)
        self.effective_strategy = ARRANGE
        self.prepared = True

    # -- peeks (called on a peek thread) -------------------------------------------------

    def peek(self, body: dict[str, Any], wait: float) -> pa.Table:
        arr = self.arrangement
        ts = int(body["timestamp"])
        fast = FastPath(body, arr.schema)
        if not arr.wait_for(ts, wait):
            raise NotFastPath(f"index {self.spec.dataflow_id} has not caught up to {ts} "
                              f"(upper {arr.upper})")
        self._raise_error_at(ts)
        return fast.run(arr.rows_at(ts, fast.keys(arr)))

    def _raise_error_at(self, ts: int) -> None:
        err = self.errors.at(ts)
        if err is not None:
            raise WeirError(err.sqlstate, err.message, detail=err.detail, hint=err.hint)

    def allow_compaction(self, since: int) -> None:
        super().allow_compaction(since)
        if self.prepared:
            self.arrangement.allow_compaction(since)

    def status(self) -> dict[str, Any]:
        """Beside the counters: what the arrangement's history holds (held by the since)."""
        arr = self.arrangement
        return {**super().status(), "history_bytes": arr.history_bytes, "held_bytes": arr.held_bytes(),
                "history_floor": arr.floor, "records": arr.records, "size_bytes": arr.size_bytes,
                "batches": 1}

    def error_count(self) -> int | None:
        return self.errors.count() if self.prepared else None

    def contents_at(self, ts: int, wait: float) -> pa.Table:
        """Every row at `ts` (repeated by multiplicity): the index as a peek's input."""
        arr = self.arrangement
        if not arr.wait_for(ts, wait):
            raise NotFastPath(f"index {self.spec.dataflow_id} has not caught up to {ts}")
        self._raise_error_at(ts)
        rows = arr.rows_at(ts, None)
        return pa.Table.from_arrays(
            [pa.array([r[i] for r in rows], type=f.type) for i, f in enumerate(arr.schema)],
            schema=arr.schema)

    # -- maintenance (the dataflow's thread) ----------------------------------------------

    def _step(self) -> bool:
        arr = self.arrangement
        if not arr.hydrated:
            return self._hydrate()
        lower = arr.upper
        upper = self._input_upper(lower)
        if upper <= lower:
            return False
        plans = [inp.planner.plan(upper, lower) for inp in self._inputs]
        for inp, p in zip(self._inputs, plans, strict=True):
            inp.durable_upper = max(inp.durable_upper, p.frontiers.upper)
        if any(p.frontiers.since >= lower for p in plans):
            log.info("index %s: inputs compacted past %d; rehydrating", self.spec.dataflow_id, lower)
            arr.upper = 0
            self.errors.clear()
            return True
        times = sorted({t for p in plans for t in p.times})
        more = len(times) > MAX_TIMES_PER_STEP
        if more:
            upper, times = times[MAX_TIMES_PER_STEP], times[:MAX_TIMES_PER_STEP]
        if times:
            self.stats["computed"] += 1
            if self.direct:
                arr.apply(self._inputs[0].shard.read_updates(lower, upper), upper)
            else:
                for t in times:
                    new = self._evaluate_or_record(plans, t)
                    if new is None:
                        continue  # the view errs at t: its rows stay as they were
                    old = arr.contents()
                    diff = Counter(new)
                    diff.subtract(old)
                    arr.apply_rows(((r, d) for r, d in diff.items() if d), t, t + 1)
        arr.advance(upper)
        self._advance_to(upper)
        return more

    def _hydrate(self) -> bool:
        arr = self.arrangement
        # poll the inputs' durable uppers until they pass the as_of (an input written by a
        # replica, a materialized view's output, is not announced by the controller)
        upper = self._input_upper(self.spec.as_of)
        plans = [inp.planner.plan(upper) for inp in self._inputs]
        since = max((p.frontiers.since for p in plans), default=0)
        floor = max(self.spec.as_of, since)
        if upper <= floor:
            return False
        if self.direct:
            arr.load(self._inputs[0].shard.snapshot(floor), floor)
        else:
            counts = self._evaluate_or_record(plans, floor) or Counter()
            arr.load(_counted_table(counts, arr.schema), floor)
        self.stats["computed"] += 1
        log.info("index %s hydrated at %d: %d records", self.spec.dataflow_id, floor, arr.records)
        self._advance_to(arr.upper)
        return True

    def _evaluate_or_record(self, plans: list[io.Plan], t: int) -> Counter[tuple[Any, ...]] | None:
        """The view's rows at `t`, or None after recording the data error it raised there."""
        try:
            counts = self._evaluate(plans, t)
        except Exception as e:
            err = translate(e)
            if self._stop.is_set() or not data_error(err):
                raise
            log.info("index %s: %s at %d (recorded as data)", self.spec.dataflow_id, err, t)
            self.errors.set(t, err)
            return None
        self.errors.set(t, None)
        return counts

    def _evaluate(self, plans: list[io.Plan], t: int) -> Counter[tuple[Any, ...]]:
        """The view's rows at `t` (Spark), counted."""
        session = self.engine.new_session()
        for inp, p in zip(self._inputs, plans, strict=True):
            io.contents_view(session, p.files, inp.columns, t).createOrReplaceTempView(inp.name)
        df = session.sql(self.spec.sql)
        self._hydration_job(df)
        result = df.toArrow()
        schema = self.arrangement.schema
        result = result.rename_columns(schema.names)
        try:
            result = result.cast(schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass  # keep Spark's types where they do not convert exactly
        return Counter(arranged_rows(result, len(schema)))


def _counted_table(counts: Counter[tuple[Any, ...]], schema: pa.Schema) -> pa.Table:
    rows = [r for r, n in counts.items() if n > 0]
    arrays = [pa.array([r[i] for r in rows], type=schema.field(i).type) for i in range(len(schema))]
    arrays.append(pa.array([counts[r] for r in rows], type=pa.int64()))
    return pa.Table.from_arrays(arrays, names=[*schema.names, "mz_diff"])
