"""Which Spark stage runs each plan node, its per-worker hydration and progress, from
hand-made listener records (weir.compute.replica.hydration_progress; no Spark), and plan
node ids pinned from EXPLAIN and found again in a job's plan (plan_ids)."""

from __future__ import annotations

from weir.compute import protocol as P
from weir.compute.replica.hydration_progress import Progress, node_stages, progress
from weir.compute.replica.plan_ids import align, parse_formatted
from weir.compute.replica.spark_listener import ExecutionRecord, TaskRecord
from weir.compute.replica.spark_plan import PlanNode

ROWS_1, ROWS_3, SHUFFLE_4 = 101, 103, 104  # accumulators: Range's, HashAggregate's rows, Exchange's records


def _task(stage: int, partition: int, failed: bool = False, updates: dict[int, int] | None = None,
          launch: int = 1, finish: int = 2, input_bytes: int = 0) -> TaskRecord:
    return TaskRecord(stage, 0, partition, launch, finish, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, input_bytes, 0, 0,
                      failed=failed, metric_updates=updates or {})


def statuses(rec: ExecutionRecord, hydrated: bool = False) -> dict[tuple[int, int], bool]:
    return {k: p.hydrated for k, p in progress(rec, None, None, {}, hydrated, {}).items()}


def _record() -> ExecutionRecord:
    # HashAggregate(5) <- Exchange(4) <- HashAggregate(3) <- Project(2) <- Range(1); a root
    # without codegen (6, CollectLimit) on top
    nodes = [PlanNode(1, "Range", "Range (0, 10)", 2, {"number of output rows": (ROWS_1, "sum")}, codegen_stage=1),
             PlanNode(2, "Project", "Project", 3, codegen_stage=1),
             PlanNode(3, "HashAggregate", "HashAggregate", 4, {"number of output rows": (ROWS_3, "sum")},
                      codegen_stage=1),
             PlanNode(4, "Exchange", "Exchange hashpartitioning(k#1L, 2), ENSURE_REQUIREMENTS, [plan_id=19]", 5,
                      {"shuffle records written": (SHUFFLE_4, "sum")}, exchange="hashpartitioning"),
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


def test_rows_come_from_finished_tasks_and_running_tasks_heartbeats() -> None:
    rec = _record()
    rec.tasks = [_task(10, 0, updates={ROWS_1: 40, ROWS_3: 4, SHUFFLE_4: 4}, launch=1000, finish=3000,
                       input_bytes=77)]
    rec.running_tasks = {9: (10, 1, 2000)}
    rec.live = {9: {ROWS_1: 15}}
    layout = {ROWS_1: [40, 30, 20]}  # the scan's exact rows per partition
    p = progress(rec, None, None, layout, False, {3: [7, 5, 6]})
    assert p[(1, 0)] == Progress(True, 40, 40, 0, 1000, 3000)
    assert p[(1, 1)] == Progress(False, 15, 30, 0, 2000, None)  # live, inside the running task
    assert p[(1, 2)] == Progress(False, 0, 20, 0, None, None)
    # Project passes its input's rows and expectation on; HashAggregate has its own rows and
    # expects what it produced last time, worker by worker; the exchange writes what its input produced
    assert p[(2, 1)].rows == 15 and p[(2, 1)].expected == 30
    assert (p[(3, 0)].rows, p[(3, 0)].expected, p[(3, 1)].expected) == (4, 7, 5)
    assert p[(4, 0)].expected is None  # nothing known of it
    assert p[(4, 0)].rows == 4
    # the layout does not fit the stage's partitions: nothing is expected rather than a guess
    assert progress(rec, None, None, {ROWS_1: [90]}, False, {})[(1, 0)].expected is None


FORMATTED = """== Physical Plan ==
* HashAggregate (5)
+- Exchange (4)
   +- * HashAggregate (3)
      +- * Project (2)
         +- * Range (1)


(1) Range
Output [1]: [id#0L]
"""


def test_pinned_plan_nodes_are_found_in_a_larger_job_by_shape() -> None:
    pinned = parse_formatted(FORMATTED)
    assert pinned == [(1, "Range", 2), (2, "Project", 3), (3, "HashAggregate", 4), (4, "Exchange", 5),
                      (5, "HashAggregate", None)]
    rec = _record()  # the same plan under a CollectLimit (6): weir's own work around it
    shifted = [PlanNode(n.node_id + 10, n.name, n.description, None if n.parent_id is None else n.parent_id + 10,
                        n.metrics, n.codegen_stage, n.exchange) for n in rec.nodes]
    shifted.append(PlanNode(1, "Range", "another branch", 17))
    assert align(pinned, shifted) == {11: 1, 12: 2, 13: 3, 14: 4, 15: 5}
    assert align(pinned, []) == {} and align([], shifted) == {}
    # statuses and progress are reported under the pinned ids, the rest of the job not at all
    rec.nodes = shifted
    rec.tasks = [_task(10, w) for w in range(3)]
    p = progress(rec, pinned, align(pinned, shifted), {}, False, {})
    assert {n for n, _ in p} == {1, 2, 3, 4, 5} and p[(1, 2)].hydrated and not p[(5, 0)].hydrated
    # a pinned node the job does not have still has a row
    assert progress(None, pinned, None, {}, True, {})[(3, 0)] == Progress(True)


def test_a_node_whose_job_has_not_started_is_not_hydrated_by_its_inputs() -> None:
    """A broadcast's job runs before the main job: until the main job starts, the nodes of
    its codegen stage are not known to run anywhere, however done their inputs are."""
    rec = _record()
    rec.stage_scopes = {10: rec.stage_scopes[10]}  # stage 11 (codegen 2) not started yet
    rec.stage_tasks = {10: 3}
    rec.tasks = [_task(10, w) for w in range(3)]
    stages = node_stages(rec)
    assert stages[4] == 10 and stages[5] is None and stages[6] is None
    s = statuses(rec)
    assert all(s[(1, w)] for w in range(3)) and s[(5, 0)] is False and (5, 1) not in s


def test_the_previous_hydrations_rows_are_the_expectation_of_nodes_nothing_else_sizes() -> None:
    """Per worker when the node runs on as many workers as last time; a node on worker 0
    alone (its stage not started, or a pinned node the run does not have) expects its
    total; another partitioning expects nothing rather than a guess."""
    rec = _record()
    rec.tasks = [_task(10, 0, updates={ROWS_3: 4})]
    p = progress(rec, None, None, {}, False, {3: [7, 5, 6], 5: [2, 3]})
    assert [p[(3, w)].expected for w in range(3)] == [7, 5, 6]
    assert [p[(5, w)].expected for w in range(2)] == [2, 3]
    assert progress(rec, None, None, {}, False, {3: [7, 5]})[(3, 0)].expected is None
    rec.stage_scopes, rec.stage_tasks = {}, {}  # no stage known yet: each node on worker 0
    assert progress(rec, None, None, {}, False, {3: [7, 5, 6]})[(3, 0)].expected == 18
    pinned = parse_formatted(FORMATTED)
    assert progress(None, pinned, None, {}, True, {3: [7, 5, 6]})[(3, 0)] == Progress(True, 0, 18)


def test_row_counts_per_node_and_worker_travel_as_lists() -> None:
    counts = P.row_counts({(3, 1): Progress(True, 5), (3, 0): Progress(True, 7), (5, 1): Progress(True, 2)})
    assert counts == {3: [7, 5], 5: [0, 2]}  # a worker without a report produced nothing
    assert P.row_counts_from_wire(P.row_counts_to_wire(counts)) == counts
    assert P.row_counts_from_wire(None) == {} and P.row_counts_from_wire([["x", [1]]]) == {}


def _chain(names: list[str], first: int, parent: int | None) -> list[tuple[int, str, int | None]]:
    """A linear plan, leaf first, numbered from `first` (EXPLAIN numbers children first)."""
    ids = range(first, first + len(names))
    return [(i, name, i + 1 if i + 1 < first + len(names) else parent) for i, name in zip(ids, names, strict=True)]


# an input as a dataflow reads it: its updates consolidated (the aggregates), one row per copy
_INPUT = ["Scan parquet", "ColumnarToRow", "Filter", "Project", "HashAggregate", "Exchange", "HashAggregate",
          "Filter", "Generate", "Project"]
_TOP = ["Project", "HashAggregate", "Exchange", "HashAggregate"]


def test_a_plan_spark_changes_keeps_the_pinned_nodes_above_the_change_at_the_querys_root() -> None:
    """Pinned with a broadcast hash join; the job joins by sort-merge now. The aggregates above
    the join match four nodes from the query's root, and as many from the aggregates that
    consolidate each input: the root's, whose subtree is the plan, wins."""
    pinned = [*_chain(_INPUT, 1, 22), *_chain([*_INPUT, "BroadcastExchange"], 11, 22),
              (22, "BroadcastHashJoin Inner BuildRight", 23), *_chain(_TOP, 23, None)]
    job = [PlanNode(i, name, name, parent) for i, name, parent in (
        *_chain([*_INPUT, "Exchange", "Sort"], 1, 25), *_chain([*_INPUT, "Exchange", "Sort"], 13, 25),
        (25, "SortMergeJoin", 26), *_chain(_TOP, 26, None))]
    assert align(pinned, job) == {26: 23, 27: 24, 28: 25, 29: 26}
    # the same plan is found whole, wherever it sits
    same = [PlanNode(i + 100, name, name, None if parent is None else parent + 100) for i, name, parent in pinned]
    assert align(pinned, job + same) == {i + 100: i for i, _, _ in pinned}
