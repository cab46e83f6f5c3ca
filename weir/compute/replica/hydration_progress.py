"""Per plan node and per worker: has it hydrated, and how far along is it (design 002,
issue 13 parts 2 and 5), computed from one Spark execution as the listener recorded it.

A **worker** is a partition of the Spark stage that runs the node: the meaning
introspection uses. Which stage runs a node comes from the RDD scopes Spark records per
stage when a job starts: a whole-stage-codegen node runs where its `WholeStageCodegen (k)`
does, an exchange where its shuffle is written (`[plan_id=n]`) — until the job running
that stage has started, such a node's stage is unknown (a broadcast's job runs first) —
any other node with its input (its first child), else with its consumer. A node is
hydrated on a worker once that stage's task for the partition has finished: it has
produced all its output for the as_of there.

What each node reports, per worker:
- rows processed: its "number of output rows" SQL metric (an exchange: the records its
  shuffle wrote), from finished tasks and, inside a running task, from the executor's
  heartbeats (once a second); a node without such a metric (Project, Sort ...) reports its
  input's, which it passes on unchanged;
- rows expected, only where it is known rather than guessed: a file scan reads exactly the
  rows its files hold (their statistics: weir.compute.replica.scan_layout); Project,
  ColumnarToRow, Sort, InputAdapter and an exchange's map side pass their input's rows on,
  so they expect what their input expects; any other node (filter, join, aggregate ...)
  expects what it produced in the dataflow's previous hydration: this replica's, else the
  last one any replica completed (the controller keeps it in the catalog, so it survives
  replica and server restarts: CreateDataflow's `row_counts`), and NULL without one. That
  run's rows are per worker: a node running on as many workers expects each worker's; a
  node reported on worker 0 alone (one partition, its stage not started yet, or a pinned
  node this run's plan no longer has) expects the node's total; any other count of
  workers (a replica size that partitions otherwise) expects NULL;
- bytes processed: a scan's worker, the bytes its task read from files; an exchange, the
  bytes its shuffle wrote; otherwise its "data size" metric, or 0;
- started / finished: the launch of the first task for the worker's partition of the
  node's stage and the end of the one that completed it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from weir.compute import protocol as P
from weir.compute.replica.plan_ids import PinnedNode, key
from weir.compute.replica.spark_listener import ExecutionRecord

_CODEGEN = re.compile(r"^WholeStageCodegen \((\d+)\)$")
_PLAN_ID = re.compile(r"\[plan_id=(\d+)\]")
ROWS = "number of output rows"
SHUFFLE_ROWS = "shuffle records written"
SHUFFLE_BYTES = "shuffle bytes written"
DATA_SIZE = "data size"
# operators whose output rows are their input's rows, partition by partition
PASS_THROUGH = frozenset({"Project", "ColumnarToRow", "Sort", "InputAdapter", "Exchange", "RowToColumnar"})


Progress = P.HydrationProgress
Key = tuple[int, int]  # (plan node id, worker)


def node_stages(rec: ExecutionRecord) -> dict[int, int | None]:
    """job plan node id -> the Spark stage that runs it (None: not known yet)."""
    codegen: dict[int, int] = {}
    exchange: dict[str, int] = {}
    for sid in sorted(rec.stage_scopes):
        for scope_id, scope_name, rdd in rec.stage_scopes[sid]:
            m = _CODEGEN.match(scope_name)
            if m:
                codegen.setdefault(int(m.group(1)), sid)
            elif scope_name == "Exchange" and rdd != "ShuffledRowRDD":
                exchange.setdefault(scope_id, sid)  # the stage writing the shuffle
    children = _children(rec)
    out: dict[int, int | None] = {}
    own: set[int] = set()  # nodes that name their stage (codegen, shuffle): only it will do
    for n in sorted(rec.nodes, key=lambda n: n.node_id):  # EXPLAIN's ids: children first
        stage: int | None = None
        if n.codegen_stage is not None:
            stage = codegen.get(n.codegen_stage)
            own.add(n.node_id)
        elif (m := _PLAN_ID.search(n.description)) and n.name.strip().endswith("Exchange"):
            stage = exchange.get(f"spark_plan_{m.group(1)}")
            own.add(n.node_id)
        if stage is None and n.node_id not in own:
            stage = next((out[c] for c in children.get(n.node_id, ()) if out.get(c) is not None), None)
        out[n.node_id] = stage
    for n in sorted(rec.nodes, key=lambda n: -n.node_id):  # parents first: a leaf with no stage
        if out[n.node_id] is None and n.parent_id is not None and n.node_id not in own:
            out[n.node_id] = out.get(n.parent_id)
    return out


def _children(rec: ExecutionRecord) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for n in sorted(rec.nodes, key=lambda n: n.node_id):
        if n.parent_id is not None:
            out.setdefault(n.parent_id, []).append(n.node_id)
    return out


class _Run:
    """One execution's per-partition facts, computed once per poll."""

    def __init__(self, rec: ExecutionRecord, layout: Mapping[int, Sequence[int]]) -> None:
        self.rec = rec
        self.layout = layout
        self.stages = node_stages(rec)
        self.children = _children(rec)
        self.nodes = {n.node_id: n for n in rec.nodes}
        self.done: dict[tuple[int, int], int] = {}  # (stage, partition) -> finish ms
        self.launched: dict[tuple[int, int], int] = {}  # (stage, partition) -> first launch ms
        self.input_bytes: dict[tuple[int, int], int] = {}
        for t in rec.tasks:
            k = (t.stage_id, t.partition)
            self.launched[k] = min(self.launched.get(k, t.launch_ms), t.launch_ms)
            if not t.failed:
                self.done[k] = t.finish_ms
                self.input_bytes[k] = t.input_bytes
        for stage, partition, launch in rec.running_tasks.values():
            k = (stage, partition)
            self.launched[k] = min(self.launched.get(k, launch), launch)

    def workers(self, node: int) -> int:
        stage = self.stages.get(node)
        return max(1, self.rec.stage_tasks.get(stage, 1)) if stage is not None else 1

    def metric(self, node: int, name: str) -> dict[int, int] | None:
        """The node's metric per partition of its stage (finished tasks, then running
        ones' heartbeats; a driver-side value on worker 0); None if it has no such metric."""
        n = self.nodes.get(node)
        if n is None or name not in n.metrics:
            return None
        acc = n.metrics[name][0]
        stage = self.stages.get(node)
        out: dict[int, int] = {}
        for t in self.rec.tasks:
            if not t.failed and (stage is None or t.stage_id == stage) and acc in t.metric_updates:
                out[t.partition] = out.get(t.partition, 0) + t.metric_updates[acc]
        for task_id, (st, partition, _) in self.rec.running_tasks.items():
            value = self.rec.live.get(task_id, {}).get(acc)
            if value and (stage is None or st == stage):
                out[partition] = out.get(partition, 0) + value
        if acc in self.rec.driver_updates:
            out[0] = out.get(0, 0) + self.rec.driver_updates[acc]
        return out

    def _same_stage_child(self, node: int) -> int | None:
        kids = self.children.get(node, [])
        if len(kids) == 1 and self.stages.get(kids[0]) == self.stages.get(node):
            return kids[0]
        return None

    def rows(self, node: int) -> dict[int, int]:
        for name in (ROWS, SHUFFLE_ROWS):
            found = self.metric(node, name)
            if found is not None:
                return found
        child = self._same_stage_child(node)
        return self.rows(child) if child is not None else {}

    def expected(self, node: int) -> list[int] | None:
        """Rows the node will produce per partition, where known exactly."""
        n = self.nodes.get(node)
        if n is None:
            return None
        acc = n.metrics.get(ROWS, (None,))[0]
        if acc is not None and acc in self.layout:
            parts = list(self.layout[acc])
            return parts if len(parts) == self.workers(node) else None
        if key(n.name) in PASS_THROUGH:
            child = self._same_stage_child(node)
            if child is not None:
                return self.expected(child)
        return None

    def bytes(self, node: int) -> dict[int, int]:
        n = self.nodes.get(node)
        if n is not None and n.name.strip().startswith("Scan"):
            stage = self.stages.get(node)
            return {p: b for (s, p), b in self.input_bytes.items() if s == stage}
        for name in (SHUFFLE_BYTES, DATA_SIZE):
            found = self.metric(node, name)
            if found is not None:
                return found
        return {}


def previously(previous: Mapping[int, Sequence[int]], node: int, worker: int, workers: int) -> int | None:
    """What a node's worker expects from the previous hydration's rows per worker."""
    rows = previous.get(node)
    if not rows:
        return None
    if workers == 1:
        return sum(rows)
    return rows[worker] if len(rows) == workers else None


def progress(rec: ExecutionRecord | None, pinned: Sequence[PinnedNode] | None,
             alignment: Mapping[int, int] | None, layout: Mapping[int, Sequence[int]],
             hydrated: bool, previous: Mapping[int, Sequence[int]]) -> dict[Key, Progress]:
    """Each plan node's progress per worker in this (hydration) execution. `alignment`:
    job node -> pinned node (None: the job's own numbering is the plan's); `hydrated`: the
    dataflow's frontier passed its as_of, so everything has; `previous`: plan node -> rows
    per worker of the previous hydration."""
    out: dict[Key, Progress] = {}
    if rec is not None:
        run = _Run(rec, layout)
        mapping = alignment if alignment is not None else {n.node_id: n.node_id for n in rec.nodes}
        for job_node, node in mapping.items():
            stage = run.stages.get(job_node)
            rows, nbytes = run.rows(job_node), run.bytes(job_node)
            expected = run.expected(job_node)
            workers = run.workers(job_node)
            for w in range(workers):
                k = (stage, w) if stage is not None else None
                finished = run.done.get(k) if k is not None else None
                exp = expected[w] if expected is not None else previously(previous, node, w, workers)
                out[(node, w)] = Progress(hydrated or finished is not None, rows.get(w, 0), exp,
                                          nbytes.get(w, 0), run.launched.get(k) if k else None, finished)
    for node, _, _ in pinned or ():
        if not any(n == node for n, _ in out):  # not found in this run (or none yet)
            out[(node, 0)] = Progress(hydrated, 0, previously(previous, node, 0, 1))
    return out
