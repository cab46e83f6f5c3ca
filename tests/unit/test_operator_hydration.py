"""Which Spark stage runs each plan node, and its per-worker hydration, from hand-made
listener records (weir.compute.replica.hydration; no Spark)."""

from __future__ import annotations

from weir.compute.replica.hydration import node_stages, statuses
from weir.compute.replica.spark_listener import ExecutionRecord, TaskRecord
from weir.compute.replica.spark_plan import PlanNode


def _task(stage: int, partition: int, failed: bool = False) -> TaskRecord:
    return TaskRecord(stage, 0, partition, 1, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, failed=failed)


def _record() -> ExecutionRecord:
    # HashAggregate(5) <- Exchange(4) <- HashAggregate(3) <- Project(2) <- Range(1); a root
    # without codegen (6, CollectLimit) on top
    nodes = [PlanNode(1, "Range", "Range (0, 10)", 2, codegen_stage=1),
             PlanNode(2, "Project", "Project", 3, codegen_stage=1),
             PlanNode(3, "HashAggregate", "HashAggregate", 4, codegen_stage=1),
             PlanNode(4, "Exchange", "Exchange hashpartitioning(k#1L, 2), ENSURE_REQUIREMENTS, [plan_id=19]", 5,
                      exchange="hashpartitioning"),
             PlanNode(5, "HashAggregate", "HashAggregate", 6, codegen_stage=2),
             PlanNode(6, "CollectLimit", "CollectLimit 5", None)]
    rec = ExecutionRecord(7, "dataflow u5", nodes, "", 0)
    rec.stage_tasks = {10: 3, 11: 2}
    rec.stage_scopes = {
        10: [("spark_plan_19", "Exchange", "MapPartitionsRDD"), ("spark_plan_18", "WholeStageCodegen (1)", "X")],
        11: [("spark_plan_22", "WholeStageCodegen (2)", "X"), ("spark_plan_19", "Exchange", "ShuffledRowRDD")]}
    return rec


def test_nodes_run_where_their_codegen_stage_or_shuffle_write_runs() -> None:
    assert node_stages(_record()) == {1: 10, 2: 10, 3: 10, 4: 10, 5: 11, 6: 11}


def test_a_node_is_hydrated_on_a_worker_once_its_stage_task_there_finished() -> None:
    rec = _record()
    rec.tasks = [_task(10, 0), _task(10, 2), _task(10, 1, failed=True)]
    s = statuses(rec)
    assert s[(1, 0)] and s[(1, 2)] and not s[(1, 1)] and s[(4, 0)]
    assert [s[(5, w)] for w in range(2)] == [False, False] and (5, 2) not in s
    rec.tasks.append(_task(10, 1))
    rec.tasks.append(_task(11, 0))
    s = statuses(rec)
    assert all(s[(n, w)] for n in (1, 2, 3, 4) for w in range(3)) and s[(5, 0)] and not s[(5, 1)]
    assert all(statuses(rec, hydrated=True).values())


def test_a_node_whose_stage_is_not_known_yet_is_one_worker_not_hydrated() -> None:
    rec = _record()
    rec.stage_scopes, rec.stage_tasks = {}, {}
    assert statuses(rec) == {(n, 0): False for n in range(1, 7)}
