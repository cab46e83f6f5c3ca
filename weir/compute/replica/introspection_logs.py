"""A replica's introspection logs (weir.compute.introspection): their current contents,
built from what Spark reports about the work the replica runs and from the replica's own
bookkeeping (dataflows, peeks, arrangements).

Dataflows: every export (a materialized view or index dataflow) is one; a slow-path peek's
Spark job is a transient one, kept `PEEK_RETENTION_S` after it ends (at most `MAX_PEEKS`),
so a slow SELECT's operators can still be looked at. Operators: the nodes of the Spark
physical plans a dataflow ran, by plan node id (the ids EXPLAIN FORMATTED prints); each
(dataflow, plan node id, node name) gets a replica-wide operator id. Their metrics add up
over every execution (every tick of a materialized view).

Elapsed time: a task's run time is attributed to the operators it ran (those whose SQL
metrics it updated): each gets its own timing metrics from the task, and the rest of the
run time is divided equally among them. A task's CPU, GC, spill and shuffle figures are
divided equally among its operators in the same way. The worker is the task's partition.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from weir.compute import introspection as ci
from weir.compute.replica.plan_ids import align

log = logging.getLogger(__name__)

PEEK_RETENTION_S = 60.0
MAX_PEEKS = 32
_TIMING_NS = {"timing": 1_000_000, "nsTiming": 1}


@dataclass
class _Operator:
    id: int
    dataflow_id: int
    plan_node_id: int
    name: str
    description: str
    parent_plan_node_id: int | None
    exchange: str | None
    # the node's id in the dataflow's pinned plan (weir.compute.replica.plan_ids); None for
    # weir's own work around the query (consolidating inputs, diffing); a peek has no
    # pinned plan: its Spark numbering is its plan's
    plan_id: int | None = None
    elapsed: Counter[int] = field(default_factory=Counter)  # worker -> ns
    rows: Counter[int] = field(default_factory=Counter)
    bytes: Counter[int] = field(default_factory=Counter)
    histogram: Counter[tuple[int, int]] = field(default_factory=Counter)  # (worker, bucket) -> n
    extras: dict[int, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))


@dataclass
class _Dataflow:
    id: int
    name: str
    export_id: str | None
    ended: float | None = None  # a transient (peek) dataflow's end (monotonic)
    operators: dict[tuple[int, str], _Operator] = field(default_factory=dict)
    # the operators of its latest Spark job's plan: the ones it runs now (the first job of a
    # view, its hydration, may have had another plan)
    current: set[tuple[int, str]] = field(default_factory=set)


@dataclass
class _Peek:
    peek_id: str
    object_id: str
    type: str
    time: int
    started: float


class IntrospectionLogs:
    """Thread-safe: fed from the event loop, dataflow threads and the Spark listener;
    read by the introspection writer and by live peeks of the logs."""

    def __init__(self, exports: Callable[[], dict[str, Any]] | None = None) -> None:
        self._lock = threading.Lock()
        self._exports = exports  # export id -> its dataflow (weir.compute.replica.dataflow)
        self._dataflows: dict[str, _Dataflow] = {}  # key: export id or "peek <tag>"
        self._next_dataflow = 1
        self._next_operator = 1
        self._peeks: dict[str, _Peek] = {}
        self._peek_durations: Counter[tuple[str, int]] = Counter()
        self.names: dict[str, str] = {}  # export id -> its object's name (CreateDataflow)
        self._peek_tags: dict[str, str] = {}  # Spark job tag -> peek id

    # -- feeding ---------------------------------------------------------------------------

    def peek_started(self, peek_id: str, tag: str, object_id: str, kind: str, time_ms: int,
                     record: bool = True) -> None:
        """`tag`: the peek's Spark job tag (its jobs' description is `peek <tag>`). Not
        `record`: its Spark job is not a dataflow of the logs (a read of introspection)."""
        with self._lock:
            self._peeks[peek_id] = _Peek(peek_id, object_id, kind, time_ms, time.monotonic())
            self._peek_tags[tag] = peek_id if record else ""
            while len(self._peek_tags) > 4 * MAX_PEEKS:
                self._peek_tags.pop(next(iter(self._peek_tags)))

    def peek_finished(self, peek_id: str) -> None:
        with self._lock:
            p = self._peeks.pop(peek_id, None)
            if p is not None:
                self._peek_durations[(p.type, ci.bucket_ns(int((time.monotonic() - p.started) * 1e9)))] += 1

    def dataflow_dropped(self, export_id: str) -> None:
        with self._lock:
            self._dataflows.pop(export_id, None)

    def executions(self, records: Iterable[Any]) -> None:
        """Finished Spark SQL executions (weir.compute.replica.spark_listener.ExecutionRecord)."""
        for rec in records:
            key, name, export = _work_of(str(rec.description or ""), self.names, self._peek_tags)
            if key is None or (not rec.tasks and all(str(n.name).startswith("Execute ") for n in rec.nodes)):
                continue  # not a dataflow's, or a command (binding a temp view ...), not work
            with self._lock:
                df = self._dataflows.get(key)
                if df is None:
                    df = self._dataflows[key] = _Dataflow(self._next_dataflow, name, export)
                    self._next_dataflow += 1
                if export is None:
                    df.ended = time.monotonic()
                try:
                    self._add_execution(df, rec)
                except Exception:  # noqa: BLE001 - one odd record must not stop the logs
                    log.exception("introspection: could not record execution %s", getattr(rec, "execution_id", "?"))
        self._expire_peeks()

    def _add_execution(self, df: _Dataflow, rec: Any) -> None:
        ops: dict[int, _Operator] = {}
        flow = (self._exports() if self._exports is not None else {}).get(df.export_id or "")
        pinned = getattr(flow, "plan_nodes", None)
        alignment = align(pinned, rec.nodes) if pinned else None
        if rec.nodes:
            df.current = {(int(n.node_id), str(n.name).strip()) for n in rec.nodes} | {(0, "ArrangeBy")}
        for node in rec.nodes:
            k = (int(node.node_id), str(node.name).strip())
            op = df.operators.get(k)
            if op is None:
                op = df.operators[k] = _Operator(self._next_operator, df.id, int(node.node_id), k[1],
                                                 str(node.description)[:200], node.parent_id, node.exchange)
                self._next_operator += 1
            op.parent_plan_node_id = node.parent_id
            op.plan_id = int(node.node_id) if alignment is None else alignment.get(int(node.node_id))
            ops[int(node.node_id)] = op
        by_acc = {acc: (int(n.node_id), mname, mtype) for n in rec.nodes
                  for mname, (acc, mtype) in n.metrics.items()}
        for task in rec.tasks:
            ran: dict[int, int] = {}  # plan node id -> its own timing (ns) in this task
            for acc, value in task.metric_updates.items():
                hit = by_acc.get(int(acc))
                if hit is None:
                    continue
                node_id, mname, mtype = hit
                ran.setdefault(node_id, 0)
                op = ops[node_id]
                if mname == "number of output rows":
                    op.rows[task.partition] += int(value)
                elif mtype == "size" and ("data size" in mname or "bytes written" in mname):
                    op.bytes[task.partition] += int(value)
                if mtype in _TIMING_NS:
                    ran[node_id] += int(value) * _TIMING_NS[mtype]
            if not ran:
                continue
            run_ns = int(task.run_time_ns)
            own = min(sum(ran.values()), run_ns)
            share = (run_ns - own) // len(ran)
            scale = run_ns / sum(ran.values()) if sum(ran.values()) > run_ns else 1.0
            for node_id, timing in ran.items():
                op = ops[node_id]
                ns = int(timing * scale) + share
                op.elapsed[task.partition] += ns
                op.histogram[(task.partition, ci.bucket_ns(ns))] += 1
                x = op.extras[task.partition]
                n = len(ran)
                x["cpu_ns"] += int(task.cpu_ns) // n
                x["gc_ns"] += int(task.gc_ms) * 1_000_000 // n
                x["spill_bytes"] += (int(task.memory_spilled) + int(task.disk_spilled)) // n
                x["shuffle_read_bytes"] += int(task.shuffle_read_bytes) // n
                x["shuffle_write_bytes"] += int(task.shuffle_write_bytes) // n

    def _expire_peeks(self) -> None:
        now = time.monotonic()
        with self._lock:
            peeks = sorted((d for d in self._dataflows.values() if d.export_id is None), key=lambda d: d.id)
            for d in peeks[:max(0, len(peeks) - MAX_PEEKS)] + [d for d in peeks if now - (d.ended or now)
                                                                > PEEK_RETENTION_S]:
                self._dataflows = {k: v for k, v in self._dataflows.items() if v is not d}

    # -- reading ---------------------------------------------------------------------------

    def contents(self) -> dict[str, Counter[tuple[Any, ...]]]:
        """Every log's current contents: log name -> row -> multiplicity."""
        self._expire_peeks()
        out: dict[str, Counter[tuple[Any, ...]]] = {v.name: Counter() for v in ci.LOG_VARIANTS}
        exports = self._exports() if self._exports is not None else {}
        statuses = {e: _status(flow) for e, flow in exports.items()}
        with self._lock:
            for export_id, status in statuses.items():
                df = self._dataflows.get(export_id)
                if df is None:  # a dataflow that has not run a job yet still exists
                    df = self._dataflows[export_id] = _Dataflow(
                        self._next_dataflow, _dataflow_name(export_id, self.names), export_id)
                    self._next_dataflow += 1
                _export_rows(export_id, df.id, status, out)
                if "records" in status:  # an index: its arrangement in replica memory
                    op = df.operators.get((0, "ArrangeBy"))
                    if op is None:
                        op = df.operators[(0, "ArrangeBy")] = _Operator(
                            self._next_operator, df.id, 0, "ArrangeBy", "the index's arrangement", None, None, 0)
                        self._next_operator += 1
                    # size: the rows' memory; capacity: with the history kept for reads in the past
                    size = int(status.get("size_bytes", 0))
                    capacity = size + int(status.get("history_bytes", 0))
                    out["mz_arrangement_sizes_per_worker"][
                        (op.id, 0, int(status["records"]), int(status.get("batches", 1)), size, capacity,
                         int(status["records"]))] += 1
                if status.get("state"):  # an incremental dataflow's state on the executors
                    _state_rows(df, status["state"], out)
            for df in self._dataflows.values():
                self._dataflow_rows(df, out)
            for p in self._peeks.values():
                out["mz_active_peeks_per_worker"][(p.peek_id, 0, p.object_id, p.type, p.time)] += 1
            for (kind, bucket), n in self._peek_durations.items():
                out["mz_peek_durations_histogram_per_worker"][(0, kind, bucket, n)] += 1
        return out

    def _dataflow_rows(self, df: _Dataflow, out: dict[str, Counter[tuple[Any, ...]]]) -> None:
        out["mz_dataflows_per_worker"][(df.id, 0, df.name)] += 1
        live = [op for k, op in df.operators.items() if not df.current or k in df.current]
        by_node = {op.plan_node_id: op for op in live}
        for op in live:
            out["mz_dataflow_operators_per_worker"][
                (op.id, 0, op.name, df.id, op.plan_id, op.description)] += 1
            parent = by_node.get(op.parent_plan_node_id) if op.parent_plan_node_id is not None else None
            if parent is not None:
                out["mz_dataflow_operator_parents_per_worker"][(op.id, parent.id, 0)] += 1
                # the channel from this operator to its consumer carries this operator's output
                out["mz_dataflow_channels_per_worker"][
                    (op.id, 0, op.id, parent.id, op.exchange or "pipeline")] += 1
                for w in set(op.rows) | set(op.bytes):
                    out["mz_message_counts_per_worker"][
                        (op.id, w, w, op.rows[w], op.rows[w], 1, 1, op.bytes[w])] += 1
            for w, ns in op.elapsed.items():
                out["mz_scheduling_elapsed_per_worker"][(op.id, w, ns)] += 1
            for (w, bucket), n in op.histogram.items():
                out["mz_compute_operator_durations_histogram_per_worker"][(op.id, w, bucket, n)] += 1
            for w, x in op.extras.items():
                out["mz_spark_operator_metrics_per_worker"][
                    (op.id, w, op.rows[w], x["spill_bytes"], x["shuffle_read_bytes"], x["shuffle_write_bytes"],
                     x["gc_ns"], x["cpu_ns"])] += 1


def _dataflow_name(export_id: str, names: dict[str, str]) -> str:
    return f"Dataflow: {names.get(export_id, export_id)}"


def _work_of(description: str, names: dict[str, str], peek_tags: dict[str, str]
             ) -> tuple[str | None, str, str | None]:
    """(key, dataflow name, export id) of the work a job description names."""
    if description.startswith("dataflow "):
        export = description.split(" ", 1)[1]
        return export, _dataflow_name(export, names), export
    if description.startswith("peek "):
        tag = description.split(" ", 1)[1]
        peek_id = peek_tags.get(tag, tag)
        if not peek_id:
            return None, "", None
        return f"peek {peek_id}", f"Dataflow: peek {peek_id}", None
    return None, "", None


def _state_rows(df: _Dataflow, state: list[list[list[int]]], out: dict[str, Counter[tuple[Any, ...]]]) -> None:
    """Each stateful operator's runs per key partition (the partition is the worker, as for
    every operator): the MapInArrow nodes of its plan, in plan order, hold them."""
    stateful = sorted((op for k, op in df.operators.items()
                       if op.name == "MapInArrow" and (not df.current or k in df.current)),
                      key=lambda op: op.plan_node_id)
    for op, partitions in zip(stateful, state, strict=False):
        for partition, records, runs, size in partitions:
            out["mz_arrangement_sizes_per_worker"][(op.id, partition, records, runs, size, size, runs)] += 1


def _status(flow: Any) -> dict[str, Any]:
    """What the introspection reads of a dataflow (weir.compute.replica.dataflow)."""
    status = dict(flow.status()) if getattr(flow, "prepared", False) else {}
    status["imports"] = flow.import_frontiers() if hasattr(flow, "import_frontiers") else {}
    status["errors"] = flow.error_count() if getattr(flow, "prepared", False) else None
    return status


def _export_rows(export_id: str, dataflow_id: int, status: dict[str, Any],
                 out: dict[str, Counter[tuple[Any, ...]]]) -> None:
    """Frontiers, imports and errors of one export."""
    out["mz_compute_exports_per_worker"][(export_id, 0, dataflow_id)] += 1
    frontier = status.get("write_frontier")
    if frontier is not None:
        out["mz_compute_frontiers_per_worker"][(export_id, 0, int(frontier))] += 1
    for shard_id, upper in status["imports"].items():
        out["mz_compute_import_frontiers_per_worker"][(export_id, shard_id, 0, int(upper))] += 1
    if status.get("errors"):
        out["mz_compute_error_counts_per_worker"][(export_id, 0, int(status["errors"]))] += 1


def shard_rows(rows: list[dict[str, Any]]) -> dict[str, pa.Array]:
    """Shard-shaped rows (weir.compute.introspection.SHARD_COLUMNS) as Arrow columns."""
    return {n: pa.array([r.get(n) for r in rows], type=ty.arrow) for n, ty in ci.SHARD_COLUMNS}


def live_table(contents: dict[str, Counter[tuple[Any, ...]]]) -> pa.Table:
    """The logs' current contents in the shard's shape, each row repeated by its count:
    what a targeted read of the live logs (`mz_introspection.<log>`) reads."""
    rows = [ci.BY_NAME[name].encode(key) for name, counts in contents.items() if name in ci.BY_NAME
            for key, n in counts.items() for _ in range(max(0, n))]
    return pa.table(shard_rows(rows))
