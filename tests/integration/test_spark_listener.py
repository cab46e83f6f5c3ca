"""The replica's SparkListener on a real local[1] SparkSession (and on hand-made events)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from tests.integration.test_spark_plan import start_session
from weir.compute.replica.spark_listener import (
    ExecutionRecord,
    SparkListenerHandle,
    TaskRecord,
)
from weir.compute.replica.spark_plan import plan_info_of, plan_nodes


@pytest.fixture(scope="session")
def spark(java: None) -> Iterator[Any]:
    s = start_session()  # the session test_spark_plan made, when it ran first
    yield s
    s.stop()


@pytest.fixture(scope="module")
def listener(spark: Any) -> Iterator[SparkListenerHandle]:
    handle = SparkListenerHandle.install(spark)
    yield handle
    handle.remove()


@pytest.fixture
def described(spark: Any) -> Iterator[None]:
    spark.sparkContext.setJobDescription("dataflow u5")
    yield
    spark.sparkContext.setJobDescription(None)


def ended(listener: SparkListenerHandle, n: int = 1, timeout: float = 20.0) -> list[ExecutionRecord]:
    """The next `n` executions to end (events arrive asynchronously)."""
    out: list[ExecutionRecord] = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        out += listener.drain()
        time.sleep(0.02)
    assert len(out) == n, out
    return out


def node(rec: ExecutionRecord, name: str) -> int:
    return next(n.node_id for n in rec.nodes if n.name == name)


def check_tasks(rec: ExecutionRecord) -> dict[int, list[TaskRecord]]:
    """Every stage has one task per partition 0..n-1, each with run time."""
    stages: dict[int, list[TaskRecord]] = {}
    for t in rec.tasks:
        stages.setdefault(t.stage_id, []).append(t)
    for tasks in stages.values():
        assert sorted(t.partition for t in tasks) == list(range(len(tasks)))
        for t in tasks:
            assert t.cpu_ns > 0 and t.finish_ms >= t.launch_ms > 0 and not t.failed
    assert rec.task_totals["run_time_ns"] > 0
    return stages


def test_records_of_a_shuffle(spark: Any, listener: SparkListenerHandle, described: None) -> None:
    listener.drain()
    df = spark.range(0, 1000, 1, 4).selectExpr("id % 7 AS g").groupBy("g").count()
    assert len(df.collect()) == 7
    (rec,) = ended(listener)
    assert rec.description == "dataflow u5" and rec.error is None
    assert rec.nodes == plan_nodes(plan_info_of(df))
    assert rec.physical_plan.startswith("== Physical Plan ==") and "HashAggregate (5)" in rec.physical_plan
    assert rec.ended_ms is not None and rec.ended_ms >= rec.started_ms > 0
    stages = check_tasks(rec)
    assert sorted(len(t) for t in stages.values()) == [2, 4]  # 4 map tasks, 2 shuffle partitions
    scan = node(rec, "Range")
    assert rec.node_totals(scan)["number of output rows"] == 1000
    map_stage = min(stages)
    assert rec.stage_of_node(scan) == map_stage
    per_partition = rec.node_per_partition(scan)
    assert sorted(per_partition) == [(map_stage, p) for p in range(4)]
    assert sum(v["number of output rows"] for v in per_partition.values()) == 1000
    exchange = node(rec, "Exchange")
    assert rec.stages_of_node(exchange) == sorted(stages)  # written by one stage, read by the other
    assert rec.node_totals(exchange)["shuffle records written"] == sum(
        t.shuffle_write_records for t in rec.tasks)
    assert rec.node_totals(node(rec, "HashAggregate"))["number of output rows"] == 7 * 4
    assert [(s.stage_id, s.node_ids) for s in rec.codegen] == [(1, (1, 2, 3)), (2, (5,))]


def test_arrow_input_cache_and_driver_metrics(spark: Any, listener: SparkListenerHandle,
                                              described: None) -> None:
    from pyspark.sql import functions as F

    a = spark.createDataFrame(pa.table({"k": list(range(100)), "v": [str(i % 7) for i in range(100)]}))
    listener.drain()
    a.collect()  # a local relation: counted on the driver, no task
    (rec,) = ended(listener)
    assert not rec.tasks and rec.node_totals(node(rec, "LocalTableScan")) == {"number of output rows": 100}
    cached = a.where("k >= 10").cache()
    try:
        df = cached.groupBy("v").agg(F.count(F.lit(1)).alias("n"))
        df.collect()
        (rec,) = ended(listener)  # fills the cache
        assert rec.nodes == plan_nodes(plan_info_of(df))
        check_tasks(rec)
        # (the optimizer folds the filter into the local relation)
        assert rec.node_totals(node(rec, "LocalTableScan"))["number of output rows"] == 90
        assert rec.node_totals(node(rec, "InMemoryTableScan"))["number of output rows"] == 90
        df = cached.where("v = '3'")
        df.collect()
        (rec,) = ended(listener)  # reads it
        assert rec.node_totals(node(rec, "LocalTableScan"))["number of output rows"] == 0
        assert rec.node_totals(node(rec, "InMemoryTableScan"))["number of output rows"] == 90
        assert rec.description == "dataflow u5"
    finally:
        cached.unpersist()


def test_failed_execution(spark: Any, listener: SparkListenerHandle, described: None) -> None:
    listener.drain()
    with pytest.raises(Exception, match="CAST_INVALID_INPUT"):
        spark.range(0, 10, 1, 1).selectExpr("CAST(concat('x', id) AS INT)").collect()
    (rec,) = ended(listener)
    assert rec.error is not None and "CAST_INVALID_INPUT" in rec.error
    assert [t.failed for t in rec.tasks] == [True]


def test_many_tasks(spark: Any, listener: SparkListenerHandle, described: None) -> None:
    listener.drain()
    errors = listener.errors
    df = spark.range(0, 5000, 1, 50).selectExpr("id % 10 AS g").groupBy("g").count()
    df.collect()
    (rec,) = ended(listener)
    stages = check_tasks(rec)
    assert sorted(len(t) for t in stages.values()) == [2, 50]
    assert rec.node_totals(node(rec, "Range"))["number of output rows"] == 5000
    assert listener.errors == errors and listener.running() == []


def test_the_jvm_queue_is_bounded(spark: Any) -> None:
    """Nobody pulls: the JVM listener keeps at most its capacity and counts the rest."""
    handle = SparkListenerHandle.install(spark, queue_capacity=5)
    try:
        spark.range(0, 1000, 1, 20).groupBy().count().collect()
        deadline = time.monotonic() + 20
        while handle.jvm_dropped() == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert handle.jvm_dropped() > 0
        handle.pull()
        assert handle.errors == 0
        assert len(handle.running()) + len(handle.drain()) <= 1
    finally:
        handle.remove()


# ---- the store, on hand-made events (no Spark) -------------------------------------------

_PLAN = {"nodeName": "WholeStageCodegen (1)", "simpleString": "", "metadata": {},
         "metrics": [{"name": "duration", "accumulatorId": 8, "metricType": "timing"}],
         "children": [{"nodeName": "Range", "simpleString": "Range (0, 10)", "children": [], "metadata": {},
                       "metrics": [{"name": "number of output rows", "accumulatorId": 7, "metricType": "sum"}]}]}
_SQL = "org.apache.spark.sql.execution.ui."


def _start(eid: int) -> dict[str, Any]:
    return {"Event": _SQL + "SparkListenerSQLExecutionStart", "executionId": eid, "description": "peek p-1",
            "physicalPlanDescription": "", "sparkPlanInfo": _PLAN, "time": 1000 + eid}


def _end(eid: int) -> dict[str, Any]:
    return {"Event": _SQL + "SparkListenerSQLExecutionEnd", "executionId": eid, "time": 2000, "errorMessage": ""}


def _job(eid: int, stage: int) -> dict[str, Any]:
    return {"Event": "SparkListenerJobStart", "Job ID": stage, "Stage IDs": [stage],
            "Properties": {"spark.sql.execution.id": str(eid), "spark.job.description": "dataflow u7"}}


def _task(stage: int, partition: int, rows: int) -> dict[str, Any]:
    return {"Event": "SparkListenerTaskEnd", "Stage ID": stage, "Stage Attempt ID": 0,
            "Task End Reason": {"Reason": "Success"},
            "Task Info": {"Index": partition, "Partition ID": partition, "Launch Time": 5, "Finish Time": 9,
                          "Accumulables": [{"ID": 7, "Update": str(rows)}, {"ID": 8, "Update": "2"},
                                           {"ID": 99, "Update": 1}]},
            "Task Metrics": {"Executor Run Time": 3, "Executor CPU Time": 2_000_000, "JVM GC Time": 1,
                             "Shuffle Read Metrics": {"Local Bytes Read": 4, "Remote Bytes Read": 6},
                             "Input Metrics": {"Records Read": rows}}}


def test_store_bounds_and_snapshots() -> None:
    h = SparkListenerHandle(max_ended=2, max_tasks=3)
    h.handle(_start(1))
    h.handle(_job(1, 10))
    h.handle(_task(10, 0, 5))
    h.handle({"Event": "SparkListenerTaskEnd", "Stage ID": 11})  # a stage of no known execution
    (snap,) = h.running()
    h.handle(_task(10, 1, 6))
    assert len(snap.tasks) == 1 and snap.description == "dataflow u7"
    t = snap.tasks[0]
    assert (t.run_time_ns, t.cpu_ns, t.shuffle_read_bytes, t.input_records, t.metric_updates) == (
        3_000_000, 2_000_000, 10, 5, {7: 5, 8: 2})  # 99: not the plan's
    for p in range(2, 6):
        h.handle(_task(10, p, 1))
    (rec,) = h.running()
    assert rec.tasks_truncated and rec.tasks == [] and rec.task_count == 6
    assert rec.node_totals(1) == {"number of output rows": 15} and rec.stage_of_node(1) == 10
    assert rec.metric_totals[8] == (12, 6)  # the codegen stage's time: (sum, tasks)
    for eid in (1, 2, 3, 4):
        if eid > 1:
            h.handle(_start(eid))
        h.handle(_end(eid))
    assert [r.execution_id for r in h.drain()] == [3, 4] and h.dropped == 2
    assert h.drain() == [] and h.running() == []
    h.handle(_task(10, 0, 5))  # after its execution left the store: ignored
    assert h.errors == 0


def test_remove(spark: Any) -> None:
    handle = SparkListenerHandle.install(spark)
    spark.range(3).collect()
    assert len(ended(handle)) == 1
    handle.remove()
    handle.remove()  # idempotent
    spark.range(3).collect()
    time.sleep(0.5)
    assert handle.drain() == [] and handle.running() == []
