"""A replica's introspection logs from Spark execution records (no Spark: the records
are built as weir.compute.replica.spark_listener makes them), and the writer's diffs."""

from __future__ import annotations

from collections import Counter

from weir.compute import introspection as ci
from weir.compute.replica.introspection_logs import IntrospectionLogs, live_table
from weir.compute.replica.introspection_writer import _difference
from weir.compute.replica.spark_listener import ExecutionRecord, TaskRecord
from weir.compute.replica.spark_plan import PlanNode


def _task(partition: int, run_ms: int, updates: dict[int, int]) -> TaskRecord:
    return TaskRecord(stage_id=1, stage_attempt=0, partition=partition, launch_ms=0, finish_ms=run_ms,
                      run_time_ns=run_ms * 1_000_000, cpu_ns=run_ms * 500_000, gc_ms=2, memory_spilled=0,
                      disk_spilled=10, shuffle_read_bytes=0, shuffle_read_records=0, shuffle_write_bytes=40,
                      shuffle_write_records=4, shuffle_write_ns=0, input_bytes=0, input_records=0, output_records=0,
                      metric_updates=updates)


def _record(description: str, ended: int = 1) -> ExecutionRecord:
    scan = PlanNode(1, "Scan parquet", "Scan parquet t", 2, {"number of output rows": (101, "sum"),
                                                               "scan time": (102, "timing")})
    agg = PlanNode(2, "HashAggregate", "HashAggregate(keys=[k])", None, {"number of output rows": (103, "sum"),
                                                                        "time in aggregation build": (104, "timing")})
    tasks = [_task(0, 100, {101: 40, 102: 30, 103: 3, 104: 10}), _task(1, 50, {101: 60, 103: 2})]
    return ExecutionRecord(execution_id=ended, description=description, nodes=[scan, agg], physical_plan="",
                           started_ms=0, ended_ms=ended, tasks=tasks)


def test_operators_time_and_rows_per_worker() -> None:
    logs = IntrospectionLogs()
    logs.names["u5"] = "materialize.public.mv"
    logs.executions([_record("dataflow u5")])
    out = logs.contents()
    dataflows = list(out["mz_dataflows_per_worker"])
    assert dataflows == [(1, 0, "Dataflow: materialize.public.mv")]
    ops = {r[4]: r for r in out["mz_dataflow_operators_per_worker"]}  # by plan node id
    assert {n: r[2] for n, r in ops.items()} == {1: "Scan parquet", 2: "HashAggregate"}
    scan, agg = ops[1][0], ops[2][0]
    assert (scan, agg, 0) in out["mz_dataflow_operator_parents_per_worker"]
    elapsed = {(r[0], r[1]): r[2] for r in out["mz_scheduling_elapsed_per_worker"]}
    # task 0: 100 ms; scan 30 ms and aggregate 10 ms of their own, the other 60 ms split
    assert elapsed[(scan, 0)] == 60_000_000 and elapsed[(agg, 0)] == 40_000_000
    # task 1: 50 ms, no timings of their own: halves
    assert elapsed[(scan, 1)] == elapsed[(agg, 1)] == 25_000_000
    rows = {(r[0], r[1]): r[2] for r in out["mz_spark_operator_metrics_per_worker"]}
    assert rows[(scan, 0)] == 40 and rows[(scan, 1)] == 60 and rows[(agg, 0)] == 3
    channels = list(out["mz_dataflow_channels_per_worker"])
    assert channels == [(scan, 0, scan, agg, "pipeline")]
    assert sum(r[3] for r in out["mz_compute_operator_durations_histogram_per_worker"]) == 4
    # a second tick adds up
    logs.executions([_record("dataflow u5", 2)])
    again = {(r[0], r[1]): r[2] for r in logs.contents()["mz_scheduling_elapsed_per_worker"]}
    assert again[(scan, 0)] == 2 * elapsed[(scan, 0)]


def test_commands_and_introspection_reads_are_not_dataflows() -> None:
    logs = IntrospectionLogs()
    cmd = ExecutionRecord(execution_id=9, description="dataflow u5",
                          nodes=[PlanNode(1, "Execute CreateViewCommand", "", None, {})], physical_plan="",
                          started_ms=0, ended_ms=1)
    logs.executions([cmd])
    logs.peek_started("p1", "tag-1", "u3", "persist", 5, record=False)
    logs.executions([_record("peek tag-1")])
    logs.peek_started("p2", "tag-2", "u3", "persist", 6)
    logs.executions([_record("peek tag-2")])
    out = logs.contents()
    assert [r[2] for r in out["mz_dataflows_per_worker"]] == ["Dataflow: peek p2"]
    assert {r[0] for r in out["mz_active_peeks_per_worker"]} == {"p1", "p2"}
    logs.peek_finished("p1")
    out = logs.contents()
    assert {r[0] for r in out["mz_active_peeks_per_worker"]} == {"p2"}
    assert sum(r[3] for r in out["mz_peek_durations_histogram_per_worker"]) == 1


def test_writer_diff_and_live_table() -> None:
    logs = IntrospectionLogs()
    logs.executions([_record("dataflow u5")])
    first = logs.contents()
    empty = {v.name: Counter() for v in ci.LOG_VARIANTS}
    ups = _difference(first, empty)
    assert ups and all(d == 1 for _, d in ups)
    assert _difference(first, first) == []
    # what an earlier incarnation left is retracted as it is
    stale = {**empty, "mz_dataflows_per_worker": Counter({(7, 0, "Dataflow: gone"): 1})}
    back = _difference(first, stale)
    assert ({"log": "mz_dataflows_per_worker", "i1": 7, "worker_id": 0, "t1": "Dataflow: gone"}, -1) in back
    table = live_table(first)
    assert set(table.column_names) == {n for n, _ in ci.SHARD_COLUMNS}
    assert table.num_rows == sum(sum(c.values()) for c in first.values())


def test_writer_retries_storage_failures_and_stops_when_fenced(tmp_path) -> None:  # noqa: ANN001
    import time as _time

    from weir.compute.replica.introspection_writer import IntrospectionWriter
    from weir.storage.persist import ShardStore

    store = ShardStore(f"sqlite:///{tmp_path}/catalog.db", str(tmp_path / "warehouse"))
    logs = IntrospectionLogs()
    logs.executions([_record("dataflow u5")])
    sid = ci.shard_id("u9")
    writer = IntrospectionWriter(logs, lambda: store, sid, epoch=2, interval_s=0.05)
    writer.start()
    deadline = _time.time() + 10
    while writer.skipped < 2 and _time.time() < deadline:  # its shard does not exist yet
        _time.sleep(0.05)
    assert writer.skipped >= 2 and writer.commits == 0 and writer.last_error
    store.create_shard(sid, [(n, t, True) for n, t in ci.SHARD_COLUMNS])
    writer.interval_s = 0.05
    while writer.commits == 0 and _time.time() < deadline + 40:  # backoff doubles: retried, then written
        _time.sleep(0.1)
    assert writer.commits >= 1
    shard = store.open_shard(sid)
    rows = shard.snapshot(shard.frontiers().upper - 1).to_pylist()
    assert {r["t1"] for r in rows if r["log"] == "mz_dataflows_per_worker"} == {"Dataflow: u5"}
    # an older incarnation is fenced: it stops and writes nothing
    zombie = IntrospectionWriter(IntrospectionLogs(), lambda: store, sid, epoch=1, interval_s=0.05)
    zombie.start()
    while not zombie.fenced and _time.time() < deadline + 60:
        _time.sleep(0.05)
    assert zombie.fenced and zombie.commits == 0
    writer.stop()
    after = store.open_shard(sid)
    flows = [r for r in after.snapshot(after.frontiers().upper - 1).to_pylist() if r["log"] == "mz_dataflows_per_worker"]
    assert [(r["t1"], r["mz_diff"]) for r in flows] == [("Dataflow: u5", 1)]  # the zombie retracted nothing
