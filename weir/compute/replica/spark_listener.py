"""A SparkListener that turns the SQL work a replica's Spark runs into Python records.

Spark already knows, per SQL execution, the plan it ran and what every task of it
did; weir's compute introspection (per-operator logs) wants that as data. A listener
in the JVM (WeirIntrospectionListener.java, compiled at run time by the Janino
compiler Spark ships) keeps the events weir needs, turned into JSON by Spark's own
`JsonProtocol`, in a bounded queue; the handle here pulls them with one py4j call
whenever it is read (once per introspection interval) and keeps an `ExecutionRecord`
per execution: the plan (numbered as EXPLAIN FORMATTED numbers it, see spark_plan),
its jobs' stages, and a `TaskRecord` per finished task with that task's updates of
the plan's SQL metrics. A py4j-implemented listener would cost a JVM -> Python round
trip for every event on the bus (task starts, block updates, executor heartbeats
...), most of them unused: measured, that was a third of introspection's CPU.

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
  the task's "Update" per accumulator) and task metrics;
- SparkListenerTaskStart: which partition a task id works on, from when;
- SparkListenerExecutorMetricsUpdate: each running task's SQL metric values so far,
  once per executor heartbeat (1 s on replicas): hydration progress inside a task.
  These two only while something hydrates (`set_live`).
"""

from __future__ import annotations

import copy
import json
import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from weir.compute.replica.spark_plan import CodegenStage, PlanNode, codegen_stages, plan_nodes

log = logging.getLogger(__name__)

MAX_ENDED = 256  # ended executions kept until drained
MAX_TASKS = 100_000  # task records per execution; past this, totals only
MAX_RUNNING = 1024  # executions whose end never came (an event dropped) are not kept forever
MAX_QUEUED = 5_000  # events the JVM keeps between two pulls (a few KB each); past this it drops and counts them
JAVA_SOURCE = Path(__file__).with_name("WeirIntrospectionListener.java")
_compiled: dict[int, Any] = {}  # id(py4j gateway) -> the compiled listener class

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
    # from its jobs' starts: stage id -> number of tasks (partitions), and the operator scopes
    # of its RDDs: (scope id, scope name, RDD class), e.g. ("spark_plan_19", "Exchange",
    # "ShuffledRowRDD") or ("spark_plan_18", "WholeStageCodegen (1)", "MapPartitionsRDD")
    stage_tasks: dict[int, int] = field(default_factory=dict)
    stage_scopes: dict[int, list[tuple[str, str, str]]] = field(default_factory=dict)
    # tasks started and not ended: task id -> (stage id, partition, launch ms), and the
    # values of their SQL metrics so far (heartbeats): task id -> accumulator id -> value
    running_tasks: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    live: dict[int, dict[int, int]] = field(default_factory=dict)

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
        c.stage_tasks = dict(self.stage_tasks)
        c.stage_scopes = {sid: list(v) for sid, v in self.stage_scopes.items()}
        c.running_tasks = dict(self.running_tasks)
        c.live = {t: dict(v) for t, v in self.live.items()}
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


def _scope(rdd: Mapping[str, Any]) -> tuple[str, str, str]:
    try:
        scope = json.loads(rdd.get("Scope") or "{}")
    except (TypeError, ValueError):
        scope = {}
    return str(scope.get("id", "")), str(scope.get("name", "")), str(rdd.get("Name", ""))


class SparkListenerHandle:
    """The listener's store and its registration with a SparkContext.

    `install(spark)` registers one; `drain()` hands out ended executions (each
    once), `running()` copies of the running ones; `remove()` unregisters.
    Both readers first pull what the JVM queued. Thread-safe."""

    def __init__(self, max_ended: int = MAX_ENDED, max_tasks: int = MAX_TASKS) -> None:
        self.max_ended = max_ended
        self.max_tasks = max_tasks
        self.dropped = 0  # executions dropped undrained: past max_ended ended or MAX_RUNNING running
        self.errors = 0  # events that could not be read (logged once)
        self._lock = threading.Lock()
        self._pull_lock = threading.Lock()  # one puller at a time: events apply in order
        self._running: OrderedDict[int, ExecutionRecord] = OrderedDict()
        self._ended: OrderedDict[int, ExecutionRecord] = OrderedDict()
        self._recent: deque[ExecutionRecord] = deque(maxlen=max_ended)  # ended, drained or not
        self._tracked: dict[int, frozenset[int]] = {}  # execution id -> its accumulators
        self._stage_exec: dict[int, int] = {}  # stage id -> execution id
        self._task_exec: dict[int, int] = {}  # running task id -> execution id
        self._sc: Any = None
        self._java: Any = None  # the JVM's WeirIntrospectionListener
        self._live = False  # it keeps task starts and heartbeats

    # -- registration ------------------------------------------------------------

    @classmethod
    def install(cls, spark: Any, queue_capacity: int = MAX_QUEUED, **kwargs: Any) -> SparkListenerHandle:
        """Compile the JVM listener and register it with the session's SparkContext."""
        handle = cls(**kwargs)
        sc = spark.sparkContext
        jvm = sc._jvm
        listener_class = _compiled.get(id(sc._gateway))
        if listener_class is None:
            # once per JVM: py4j caches methods by class name, so a second class of the same
            # name would be called with the first one's methods
            compiler = jvm.org.codehaus.janino.SimpleCompiler()
            compiler.setParentClassLoader(jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader())
            compiler.cook(JAVA_SOURCE.read_text())
            listener_class = compiler.getClassLoader().loadClass("WeirIntrospectionListener")
            _compiled[id(sc._gateway)] = listener_class
        args = sc._gateway.new_array(jvm.java.lang.Object, 1)
        args[0] = queue_capacity
        handle._java = listener_class.getConstructors()[0].newInstance(args)
        handle._sc = sc
        sc._jsc.sc().addSparkListener(handle._java)
        return handle

    def remove(self) -> None:
        """Unregister (idempotent); what it had queued is applied, the records stay readable."""
        java = self._java
        if java is None or self._sc is None:
            return
        try:
            self._sc._jsc.sc().removeSparkListener(java)
        except Exception:  # noqa: BLE001 - the JVM is gone or stopping: nothing to remove
            log.debug("removing the Spark listener failed", exc_info=True)
        self.pull()
        self._java = None

    # -- readers ---------------------------------------------------------------------

    def drain(self) -> list[ExecutionRecord]:
        """The executions that ended since the last drain, in the order they ended."""
        self.pull()
        with self._lock:
            out = list(self._ended.values())
            self._ended.clear()
            for rec in out:
                self._forget(rec)
        return out

    def recent(self, descriptions: set[str]) -> list[ExecutionRecord]:
        """Copies of the last executions to end with one of these descriptions, drained or
        not (a second reader's view: hydration)."""
        self.pull()
        with self._lock:
            return [rec.snapshot() for rec in self._recent if rec.description in descriptions]

    def running(self, descriptions: set[str] | None = None) -> list[ExecutionRecord]:
        """Copies of the executions started and not ended (with one of these descriptions)."""
        self.pull()
        with self._lock:
            return [rec.snapshot() for rec in self._running.values()
                    if descriptions is None or rec.description in descriptions]

    def set_live(self, on: bool) -> None:
        """Keep running tasks' starts and heartbeats (live progress inside a task) or not:
        only while something hydrates, they are not free."""
        java = self._java
        if java is not None and on != self._live:
            try:
                java.setLive(on)
                self._live = on
            except Exception:  # noqa: BLE001 - the JVM is gone
                log.debug("switching live task events failed", exc_info=True)

    def jvm_dropped(self) -> int:
        """Events the JVM listener could not keep (its queue was full, or JSON failed)."""
        java = self._java
        try:
            return int(java.dropped()) if java is not None else 0
        except Exception:  # noqa: BLE001 - the JVM is gone
            return 0

    # -- events (JSON) ----------------------------------------------------------------

    def pull(self) -> None:
        """Apply the events the JVM listener queued since the last pull (one py4j call)."""
        java = self._java
        if java is None:
            return
        with self._pull_lock:
            try:
                text = str(java.drain())
            except Exception:  # noqa: BLE001 - the JVM is gone or stopping
                log.debug("pulling Spark listener events failed", exc_info=True)
                return
            for line in text.splitlines():
                try:
                    self.handle(json.loads(line))
                except Exception:  # noqa: BLE001 - a bad event must not stop the rest
                    self.errors += 1
                    if self.errors == 1:
                        log.warning("could not read a Spark listener event", exc_info=True)

    def handle(self, event: Mapping[str, Any]) -> None:
        """Apply one event in JSON form (what the callbacks pass; tests too)."""
        kind = event.get("Event")
        if kind == "SparkListenerTaskEnd":
            self._task_end(event)
        elif kind == "SparkListenerExecutorMetricsUpdate":
            self._heartbeat(event)
        elif kind == "SparkListenerTaskStart":
            self._task_start(event)
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
            for task_id in rec.running_tasks:  # killed with their execution
                self._task_exec.pop(task_id, None)
            rec.running_tasks.clear()
            rec.live.clear()
            self._ended[eid] = rec
            self._recent.append(rec)
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
            for info in e.get("Stage Infos") or ():
                sid = int(info.get("Stage ID", -1))
                rec.stage_tasks[sid] = int(info.get("Number of Tasks", 0))
                rec.stage_scopes[sid] = [_scope(rdd) for rdd in info.get("RDD Info") or ()]

    def _task_start(self, e: Mapping[str, Any]) -> None:
        info = e.get("Task Info") or {}
        sid, task_id = _int(e.get("Stage ID")), _int(info.get("Task ID"))
        partition = _int(info.get("Partition ID"))
        if partition is None or partition < 0:
            partition = _int(info.get("Index"))
        with self._lock:
            eid = self._stage_exec.get(sid)  # type: ignore[arg-type]
            rec = self._running.get(eid) if eid is not None else None
            if rec is None or task_id is None or sid is None or partition is None:
                return
            rec.running_tasks[task_id] = (sid, partition, int(info.get("Launch Time", 0)))
            self._task_exec[task_id] = eid  # type: ignore[assignment]

    def _heartbeat(self, e: Mapping[str, Any]) -> None:
        with self._lock:
            for m in e.get("Metrics Updated") or ():
                task_id = _int(m.get("Task ID"))
                eid = self._task_exec.get(task_id)  # type: ignore[arg-type]
                rec = self._running.get(eid) if eid is not None else None
                tracked = self._tracked.get(eid) if eid is not None else None
                if rec is None or tracked is None or task_id not in rec.running_tasks:
                    continue
                live = rec.live.setdefault(task_id, {})  # type: ignore[arg-type]
                for acc in m.get("Accumulator Updates") or ():
                    acc_id, v = _int(acc.get("ID")), _int(acc.get("Update"))
                    if acc_id in tracked and v is not None:
                        live[acc_id] = v  # type: ignore[index]

    def _task_end(self, e: Mapping[str, Any]) -> None:
        sid = _int(e.get("Stage ID"))
        task_id = _int((e.get("Task Info") or {}).get("Task ID"))
        with self._lock:
            eid = self._stage_exec.get(sid)  # type: ignore[arg-type]
            tracked = self._tracked.get(eid) if eid is not None else None
            self._task_exec.pop(task_id, None)  # type: ignore[arg-type]
        if eid is None or tracked is None:
            return
        task = task_record(e, tracked)
        with self._lock:
            rec = self._running.get(eid) or self._ended.get(eid)
            if rec is None:
                return
            rec.running_tasks.pop(task_id, None)  # type: ignore[arg-type]
            rec.live.pop(task_id, None)  # type: ignore[arg-type]
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
        for task_id in rec.running_tasks:
            self._task_exec.pop(task_id, None)
        for sid in rec.stage_ids:
            if self._stage_exec.get(sid) == rec.execution_id:
                del self._stage_exec[sid]
