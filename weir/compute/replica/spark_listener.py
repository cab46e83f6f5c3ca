"""A SparkListener that turns the SQL work a replica's Spark runs into Python records.

Spark already knows, per SQL execution, the plan it ran and what every task of it
did; weir's compute introspection (per-operator logs) wants that as data. A
py4j-implemented `SparkListenerInterface` receives the scheduler's events on the
listener bus, has each event it needs turned into JSON inside the JVM by Spark's
own `JsonProtocol` (one py4j call, so no field-by-field round trips), and keeps an
`ExecutionRecord` per execution: the plan (numbered as EXPLAIN FORMATTED numbers
it, see spark_plan), its jobs' stages, and a `TaskRecord` per finished task with
that task's updates of the plan's SQL metrics.

Events used (Spark 4.3; SQL ones arrive through onOtherEvent):
- SparkListenerSQLExecutionStart: executionId, rootExecutionId, description (the
  job description weir sets, else the call site), physicalPlanDescription,
  sparkPlanInfo, time;
- SparkListenerSQLAdaptiveExecutionUpdate: a re-planned sparkPlanInfo (AQE only);
- SparkListenerDriverAccumUpdates: SQL metrics set on the driver (broadcast build
  times and sizes, files read...), never in a task's accumulables;
- SparkListenerSQLExecutionEnd: time, errorMessage ("" when it succeeded);
- SparkListenerJobStart: the job's stage ids and properties (spark.sql.execution.id,
  spark.job.description): how a task (which names only its stage) finds its execution;
- SparkListenerTaskEnd: task info (partition, launch/finish time, accumulables with
  the task's "Update" per accumulator) and task metrics.

Every callback is a synchronous JVM -> Python round trip on the listener bus's
"shared" queue thread, so the ones not needed return at once, with no JVM call.
"""

from __future__ import annotations

import atexit
import copy
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from weir.compute.replica.spark_plan import CodegenStage, PlanNode, codegen_stages, plan_nodes

log = logging.getLogger(__name__)

MAX_ENDED = 256  # ended executions kept until drained
MAX_TASKS = 100_000  # task records per execution; past this, totals only
MAX_RUNNING = 1024  # executions whose end never came (an event dropped) are not kept forever

_SQL = "org.apache.spark.sql.execution.ui."
_START = _SQL + "SparkListenerSQLExecutionStart"
_END = _SQL + "SparkListenerSQLExecutionEnd"
_AQE_UPDATE = _SQL + "SparkListenerSQLAdaptiveExecutionUpdate"
_DRIVER_UPDATES = _SQL + "SparkListenerDriverAccumUpdates"

# the TaskRecord fields that are sums over tasks
_TASK_SUMS = ("run_time_ns", "cpu_ns", "gc_ms", "memory_spilled", "disk_spilled",
              "shuffle_read_bytes", "shuffle_read_records", "shuffle_write_bytes",
              "shuffle_write_records", "shuffle_write_ns", "input_bytes", "input_records",
              "output_records")


@dataclass(frozen=True)
class TaskRecord:
    """One finished task (attempt) of an execution: a partition of a stage."""

    stage_id: int
    stage_attempt: int
    partition: int
    launch_ms: int
    finish_ms: int
    run_time_ns: int  # executor run time, which Spark measures in ms
    cpu_ns: int
    gc_ms: int
    memory_spilled: int  # bytes
    disk_spilled: int
    shuffle_read_bytes: int  # local + remote
    shuffle_read_records: int
    shuffle_write_bytes: int
    shuffle_write_records: int
    shuffle_write_ns: int
    input_bytes: int
    input_records: int
    output_records: int
    failed: bool = False
    # accumulator id -> this task's update, for the SQL metrics of the execution's plan
    metric_updates: dict[int, int] = field(default_factory=dict, hash=False)


@dataclass
class ExecutionRecord:
    """One SQL execution: its plan and what its tasks did."""

    execution_id: int
    description: str
    nodes: list[PlanNode]
    physical_plan: str
    started_ms: int
    ended_ms: int | None = None
    error: str | None = None
    tasks: list[TaskRecord] = field(default_factory=list)
    root_execution_id: int | None = None
    job_ids: list[int] = field(default_factory=list)
    stage_ids: list[int] = field(default_factory=list)
    codegen: list[CodegenStage] = field(default_factory=list)
    # SQL metrics the driver sets (not in any task): accumulator id -> value
    driver_updates: dict[int, int] = field(default_factory=dict)
    # over every task, kept too past MAX_TASKS: accumulator id -> (sum, tasks reporting)
    metric_totals: dict[int, tuple[int, int]] = field(default_factory=dict)
    task_totals: dict[str, int] = field(default_factory=dict)  # _TASK_SUMS summed
    task_count: int = 0
    tasks_truncated: bool = False  # `tasks` was dropped at MAX_TASKS: totals only
    metric_stages: dict[int, set[int]] = field(default_factory=dict)  # accumulator id -> stages

    def _node(self, node_id: int) -> PlanNode | None:
        return next((n for n in self.nodes if n.node_id == node_id), None)

    def node_totals(self, node_id: int) -> dict[str, int]:
        """Each metric of the node over all tasks (and the driver): sums, except
        "average" metrics (the mean of the tasks reporting one, in Spark's units of
        a tenth)."""
        node = self._node(node_id)
        if node is None:
            return {}
        out: dict[str, int] = {}
        for name, (acc, kind) in node.metrics.items():
            total, count = self.metric_totals.get(acc, (0, 0))
            if kind == "average":
                total = total // count if count else 0
            out[name] = total + self.driver_updates.get(acc, 0)
        return out

    def node_per_partition(self, node_id: int) -> dict[tuple[int, int], dict[str, int]]:
        """{(stage id, partition): {metric: value}} for the tasks that updated the
        node's metrics (attempts of one partition summed); empty once truncated."""
        node = self._node(node_id)
        if node is None:
            return {}
        names = {acc: name for name, (acc, _) in node.metrics.items()}
        out: dict[tuple[int, int], dict[str, int]] = {}
        for t in self.tasks:
            hits = [(names[a], v) for a, v in t.metric_updates.items() if a in names]
            if hits:
                row = out.setdefault((t.stage_id, t.partition), {})
                for name, v in hits:
                    row[name] = row.get(name, 0) + v
        return out

    def stages_of_node(self, node_id: int) -> list[int]:
        """The stages whose tasks updated the node's metrics (an exchange: the stage
        writing the shuffle and the one reading it)."""
        node = self._node(node_id)
        if node is None:
            return []
        return sorted({s for acc, _ in node.metrics.values() for s in self.metric_stages.get(acc, ())})

    def stage_of_node(self, node_id: int) -> int | None:
        """The (first) stage whose tasks updated the node's metrics: where it ran."""
        stages = self.stages_of_node(node_id)
        return stages[0] if stages else None

    def snapshot(self) -> ExecutionRecord:
        """A copy a reader can keep while tasks keep arriving."""
        c = copy.copy(self)
        c.nodes = list(self.nodes)
        c.tasks = list(self.tasks)
        c.job_ids = list(self.job_ids)
        c.stage_ids = list(self.stage_ids)
        c.driver_updates = dict(self.driver_updates)
        c.metric_totals = dict(self.metric_totals)
        c.task_totals = dict(self.task_totals)
        c.metric_stages = {a: set(s) for a, s in self.metric_stages.items()}
        return c


def _accumulators(nodes: list[PlanNode], stages: list[CodegenStage]) -> set[int]:
    accs = {acc for n in nodes for acc, _ in n.metrics.values()}
    return accs | {acc for s in stages for acc, _ in s.metrics.values()}


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def task_record(event: Mapping[str, Any], tracked: set[int] | frozenset[int]) -> TaskRecord:
    """A SparkListenerTaskEnd (JSON) as a TaskRecord, keeping the updates of the
    accumulators in `tracked`."""
    info = event.get("Task Info") or {}
    metrics = event.get("Task Metrics") or {}
    read = metrics.get("Shuffle Read Metrics") or {}
    write = metrics.get("Shuffle Write Metrics") or {}
    inp = metrics.get("Input Metrics") or {}
    out = metrics.get("Output Metrics") or {}
    updates: dict[int, int] = {}
    for acc in info.get("Accumulables") or ():
        acc_id = _int(acc.get("ID"))
        if acc_id in tracked and (v := _int(acc.get("Update"))) is not None:
            updates[acc_id] = v  # type: ignore[index]
    partition = _int(info.get("Partition ID"))
    if partition is None or partition < 0:
        partition = int(info.get("Index", -1))
    return TaskRecord(
        stage_id=int(event.get("Stage ID", -1)),
        stage_attempt=int(event.get("Stage Attempt ID", 0)),
        partition=partition,
        launch_ms=int(info.get("Launch Time", 0)),
        finish_ms=int(info.get("Finish Time", 0)),
        run_time_ns=int(metrics.get("Executor Run Time", 0)) * 1_000_000,
        cpu_ns=int(metrics.get("Executor CPU Time", 0)),
        gc_ms=int(metrics.get("JVM GC Time", 0)),
        memory_spilled=int(metrics.get("Memory Bytes Spilled", 0)),
        disk_spilled=int(metrics.get("Disk Bytes Spilled", 0)),
        shuffle_read_bytes=int(read.get("Local Bytes Read", 0)) + int(read.get("Remote Bytes Read", 0)),
        shuffle_read_records=int(read.get("Total Records Read", 0)),
        shuffle_write_bytes=int(write.get("Shuffle Bytes Written", 0)),
        shuffle_write_records=int(write.get("Shuffle Records Written", 0)),
        shuffle_write_ns=int(write.get("Shuffle Write Time", 0)),
        input_bytes=int(inp.get("Bytes Read", 0)),
        input_records=int(inp.get("Records Read", 0)),
        output_records=int(out.get("Records Written", 0)),
        failed=(event.get("Task End Reason") or {}).get("Reason", "Success") != "Success",
        metric_updates=updates,
    )


class SparkListenerHandle:
    """The listener's store and its registration with a SparkContext.

    `install(spark)` registers one; `drain()` hands out ended executions (each
    once), `running()` copies of the running ones; `remove()` unregisters.
    Thread-safe: events arrive on py4j's callback thread, readers are anywhere."""

    def __init__(self, max_ended: int = MAX_ENDED, max_tasks: int = MAX_TASKS) -> None:
        self.max_ended = max_ended
        self.max_tasks = max_tasks
        self.dropped = 0  # executions dropped undrained: past max_ended ended or MAX_RUNNING running
        self.errors = 0  # events that could not be read (logged once)
        self.callback_ns = 0  # time spent in the callbacks that did work
        self.events = 0  # the callbacks that did work
        self._lock = threading.Lock()
        self._running: OrderedDict[int, ExecutionRecord] = OrderedDict()
        self._ended: OrderedDict[int, ExecutionRecord] = OrderedDict()
        self._tracked: dict[int, frozenset[int]] = {}  # execution id -> its accumulators
        self._stage_exec: dict[int, int] = {}  # stage id -> execution id
        self._to_json: Callable[..., str] | None = None
        self._options: Any = None
        self._sc: Any = None
        self._java: Any = None  # the JVM's proxy of a _JavaListener

    # -- registration ------------------------------------------------------------

    @classmethod
    def install(cls, spark: Any, **kwargs: Any) -> SparkListenerHandle:
        """Register a new listener with the session's SparkContext."""
        from pyspark.java_gateway import ensure_callback_server_started

        handle = cls(**kwargs)
        sc = spark.sparkContext
        ensure_callback_server_started(sc._gateway)
        jvm = sc._jvm
        handle._to_json = jvm.org.apache.spark.util.JsonProtocol.sparkEventToJsonString
        # internal task-metric accumulators repeat "Task Metrics": leave them out
        conf = jvm.org.apache.spark.SparkConf(False).set(
            "spark.eventLog.includeTaskMetricsAccumulators", "false")
        handle._options = jvm.org.apache.spark.util.JsonProtocolOptions(conf)
        handle._sc = sc
        # py4j makes a new Java proxy each time it passes a Python object, and the
        # listener bus removes by identity: keep the one proxy, to register and remove it
        handle._java = jvm.java.util.Collections.singletonList(_JavaListener(handle)).get(0)
        sc._jsc.sc().addSparkListener(handle._java)
        # before py4j's callback server goes at exit, or the JVM logs every event it fails to send
        atexit.register(handle.remove)
        return handle

    def remove(self) -> None:
        """Unregister (idempotent); the records stay readable."""
        java, self._java = self._java, None
        if java is None or self._sc is None:
            return
        atexit.unregister(self.remove)
        try:
            self._sc._jsc.sc().removeSparkListener(java)
        except Exception:  # noqa: BLE001 - the JVM is gone or stopping: nothing to remove
            log.debug("removing the Spark listener failed", exc_info=True)

    # -- readers ---------------------------------------------------------------------

    def drain(self) -> list[ExecutionRecord]:
        """The executions that ended since the last drain, in the order they ended."""
        with self._lock:
            out = list(self._ended.values())
            self._ended.clear()
            for rec in out:
                self._forget(rec)
        return out

    def running(self) -> list[ExecutionRecord]:
        """Copies of the executions started and not ended."""
        with self._lock:
            return [rec.snapshot() for rec in self._running.values()]

    # -- events (JSON) ----------------------------------------------------------------

    def _json(self, event: Any) -> dict[str, Any]:
        assert self._to_json is not None
        return dict(json.loads(self._to_json(event, self._options)))

    def handle(self, event: Mapping[str, Any]) -> None:
        """Apply one event in JSON form (what the callbacks pass; tests too)."""
        kind = event.get("Event")
        if kind == "SparkListenerTaskEnd":
            self._task_end(event)
        elif kind == "SparkListenerJobStart":
            self._job_start(event)
        elif kind == _START:
            self._execution_start(event)
        elif kind == _END:
            self._execution_end(event)
        elif kind == _DRIVER_UPDATES:
            self._driver_updates(event)
        elif kind == _AQE_UPDATE:
            self._replanned(event)

    def _execution_start(self, e: Mapping[str, Any]) -> None:
        info = e.get("sparkPlanInfo") or {}
        nodes = plan_nodes(info)
        stages = codegen_stages(info)
        eid = int(e["executionId"])
        rec = ExecutionRecord(
            execution_id=eid, description=str(e.get("description") or ""), nodes=nodes,
            physical_plan=str(e.get("physicalPlanDescription") or ""),
            started_ms=int(e.get("time", 0)), root_execution_id=_int(e.get("rootExecutionId")),
            codegen=stages)
        with self._lock:
            self._running[eid] = rec
            self._tracked[eid] = frozenset(_accumulators(nodes, stages))
            while len(self._running) > MAX_RUNNING:
                _, old = self._running.popitem(last=False)
                self._forget(old)
                self.dropped += 1

    def _replanned(self, e: Mapping[str, Any]) -> None:
        info = e.get("sparkPlanInfo") or {}
        nodes, stages = plan_nodes(info), codegen_stages(info)
        eid = int(e["executionId"])
        with self._lock:
            rec = self._running.get(eid)
            if rec is not None:
                rec.nodes, rec.codegen = nodes, stages
                rec.physical_plan = str(e.get("physicalPlanDescription") or rec.physical_plan)
                # updates of the plan replaced still count
                self._tracked[eid] = self._tracked.get(eid, frozenset()) | _accumulators(nodes, stages)

    def _execution_end(self, e: Mapping[str, Any]) -> None:
        eid = int(e["executionId"])
        with self._lock:
            rec = self._running.pop(eid, None)
            if rec is None:
                return
            rec.ended_ms = int(e.get("time", 0))
            rec.error = str(e.get("errorMessage") or "") or None
            self._ended[eid] = rec
            while len(self._ended) > self.max_ended:
                _, old = self._ended.popitem(last=False)
                self._forget(old)
                self.dropped += 1

    def _driver_updates(self, e: Mapping[str, Any]) -> None:
        eid = int(e["executionId"])
        with self._lock:
            rec = self._running.get(eid) or self._ended.get(eid)
            if rec is None:
                return
            for pair in e.get("accumUpdates") or ():
                acc, value = _int(pair[0]), _int(pair[1])
                if acc is not None and value is not None:
                    rec.driver_updates[acc] = value

    def _job_start(self, e: Mapping[str, Any]) -> None:
        props = e.get("Properties") or {}
        eid = _int(props.get("spark.sql.execution.id"))
        if eid is None:
            return
        with self._lock:
            rec = self._running.get(eid)
            if rec is None:
                return
            rec.job_ids.append(int(e.get("Job ID", -1)))
            for sid in e.get("Stage IDs") or ():
                self._stage_exec[int(sid)] = eid
                if int(sid) not in rec.stage_ids:
                    rec.stage_ids.append(int(sid))
            if desc := props.get("spark.job.description"):
                rec.description = str(desc)

    def _task_end(self, e: Mapping[str, Any]) -> None:
        sid = _int(e.get("Stage ID"))
        with self._lock:
            eid = self._stage_exec.get(sid)  # type: ignore[arg-type]
            tracked = self._tracked.get(eid) if eid is not None else None
        if eid is None or tracked is None:
            return
        task = task_record(e, tracked)
        with self._lock:
            rec = self._running.get(eid) or self._ended.get(eid)
            if rec is None:
                return
            rec.task_count += 1
            for name in _TASK_SUMS:
                rec.task_totals[name] = rec.task_totals.get(name, 0) + getattr(task, name)
            for acc, value in task.metric_updates.items():
                total, count = rec.metric_totals.get(acc, (0, 0))
                rec.metric_totals[acc] = (total + value, count + 1)
                rec.metric_stages.setdefault(acc, set()).add(task.stage_id)
            if rec.tasks_truncated:
                return
            if len(rec.tasks) >= self.max_tasks:
                rec.tasks = []  # aggregate totals only from here on
                rec.tasks_truncated = True
            else:
                rec.tasks.append(task)

    def _forget(self, rec: ExecutionRecord) -> None:
        """Drop the lookups of an execution leaving the store (lock held)."""
        self._tracked.pop(rec.execution_id, None)
        for sid in rec.stage_ids:
            if self._stage_exec.get(sid) == rec.execution_id:
                del self._stage_exec[sid]

    def _callback(self, event: Any) -> None:
        """A needed event from the JVM: one py4j call for its JSON, then Python only.
        Never raises into the listener bus."""
        t0 = time.perf_counter_ns()
        try:
            self.handle(self._json(event))
        except Exception:  # noqa: BLE001 - a bad event must not stop the listener
            self.errors += 1
            if self.errors == 1:
                log.warning("could not read a Spark listener event", exc_info=True)
        self.callback_ns += time.perf_counter_ns() - t0
        self.events += 1


class _JavaListener:
    """The py4j side: every SparkListenerInterface method, the unused ones no-ops."""

    class Java:
        implements = ["org.apache.spark.scheduler.SparkListenerInterface"]

    def __init__(self, handle: SparkListenerHandle) -> None:
        self._handle = handle

    # java.lang.Object's, which the JVM asks the proxy too (the listener bus, on removal)
    def equals(self, other: Any) -> bool:
        return other is self

    def hashCode(self) -> int:  # noqa: N802
        return id(self) & 0x7FFFFFFF

    def toString(self) -> str:  # noqa: N802
        return f"weir SparkListener {id(self):x}"

    # used
    def onTaskEnd(self, event: Any) -> None:  # noqa: N802 - the Java interface's names
        self._handle._callback(event)

    def onJobStart(self, event: Any) -> None:  # noqa: N802
        self._handle._callback(event)

    def onOtherEvent(self, event: Any) -> None:  # noqa: N802 - SQL execution start/end, driver metrics
        self._handle._callback(event)

    # unused
    def onStageCompleted(self, event: Any) -> None: ...  # noqa: N802
    def onStageSubmitted(self, event: Any) -> None: ...  # noqa: N802
    def onTaskStart(self, event: Any) -> None: ...  # noqa: N802
    def onTaskGettingResult(self, event: Any) -> None: ...  # noqa: N802
    def onJobEnd(self, event: Any) -> None: ...  # noqa: N802
    def onEnvironmentUpdate(self, event: Any) -> None: ...  # noqa: N802
    def onBlockManagerAdded(self, event: Any) -> None: ...  # noqa: N802
    def onBlockManagerRemoved(self, event: Any) -> None: ...  # noqa: N802
    def onUnpersistRDD(self, event: Any) -> None: ...  # noqa: N802
    def onApplicationStart(self, event: Any) -> None: ...  # noqa: N802
    def onApplicationEnd(self, event: Any) -> None: ...  # noqa: N802
    def onExecutorMetricsUpdate(self, event: Any) -> None: ...  # noqa: N802
    def onStageExecutorMetrics(self, event: Any) -> None: ...  # noqa: N802
    def onExecutorAdded(self, event: Any) -> None: ...  # noqa: N802
    def onExecutorRemoved(self, event: Any) -> None: ...  # noqa: N802
    def onExecutorBlacklisted(self, event: Any) -> None: ...  # noqa: N802
    def onExecutorExcluded(self, event: Any) -> None: ...  # noqa: N802
    def onExecutorBlacklistedForStage(self, event: Any) -> None: ...  # noqa: N802
    def onExecutorExcludedForStage(self, event: Any) -> None: ...  # noqa: N802
    def onNodeBlacklistedForStage(self, event: Any) -> None: ...  # noqa: N802
    def onNodeExcludedForStage(self, event: Any) -> None: ...  # noqa: N802
    def onExecutorUnblacklisted(self, event: Any) -> None: ...  # noqa: N802
    def onExecutorUnexcluded(self, event: Any) -> None: ...  # noqa: N802
    def onNodeBlacklisted(self, event: Any) -> None: ...  # noqa: N802
    def onNodeExcluded(self, event: Any) -> None: ...  # noqa: N802
    def onNodeUnblacklisted(self, event: Any) -> None: ...  # noqa: N802
    def onNodeUnexcluded(self, event: Any) -> None: ...  # noqa: N802
    def onUnschedulableTaskSetAdded(self, event: Any) -> None: ...  # noqa: N802
    def onUnschedulableTaskSetRemoved(self, event: Any) -> None: ...  # noqa: N802
    def onBlockUpdated(self, event: Any) -> None: ...  # noqa: N802
    def onSpeculativeTaskSubmitted(self, event: Any) -> None: ...  # noqa: N802
    def onResourceProfileAdded(self, event: Any) -> None: ...  # noqa: N802
