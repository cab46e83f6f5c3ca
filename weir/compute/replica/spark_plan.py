"""Spark physical plans as numbered operator records, for per-operator introspection.

Spark tells listeners about an executed plan as a `SparkPlanInfo` tree (the
"sparkPlanInfo" of a `SparkListenerSQLExecutionStart` event, as JSON), but the
operator ids users see ("(3)" in `EXPLAIN FORMATTED`) are only computed while
explain runs and never stored. `plan_nodes` reproduces that numbering from the
JSON alone, so a weir EXPLAIN and the per-operator metrics of a running
dataflow name operators alike, and each operator carries the SQL-metric
accumulator ids its tasks report.

The numbering follows Spark's `ExplainUtils` (4.x): operators are counted
post-order from 1; WholeStageCodegen and InputAdapter are not counted (a
WholeStageCodegen gives its stage id to the operators it fuses); an
InMemoryTableScan is followed by its InMemoryRelation (absent from the JSON)
and then the cached plan; a ReusedExchange is a leaf (its exchange was counted
where it runs); subquery plans are counted after the main plan, in the order
explain lists them; the plans an RDD scan or an empty relation was derived
from are not counted (explain does not show them). Only one thing is out of
reach: after adaptive execution finished, explain also numbers AQE's initial
plan, which the JSON does not hold (replicas run with AQE off, see engine.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DESCRIPTION_LIMIT = 200

_WSCG = re.compile(r"^WholeStageCodegen \((\d+)\)$")
_INPUT_ADAPTER = "InputAdapter"
# BaseSubqueryExec subclasses: SparkPlanInfo lists them after a node's real children
_SUBQUERIES = frozenset({"Subquery", "SubqueryBroadcast", "SubqueryAdaptiveBroadcast"})
_REUSED_SUBQUERY = "ReusedSubquery"
_REUSED_EXCHANGE = "ReusedExchange"
_IN_MEMORY_SCAN = "InMemoryTableScan"
_AQE = "AdaptiveSparkPlan"
_EMPTY_RELATION = "EmptyRelation"


@dataclass(frozen=True)
class PlanNode:
    """One operator of an executed plan, named by its EXPLAIN FORMATTED id."""

    node_id: int
    name: str
    description: str
    parent_id: int | None
    metrics: dict[str, tuple[int, str]] = field(default_factory=dict, hash=False)
    codegen_stage: int | None = None
    exchange: str | None = None


def _name(info: Mapping[str, Any]) -> str:
    return str(info.get("nodeName", ""))


def _children(info: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(info.get("children") or ())


def _acc_ids(info: Mapping[str, Any]) -> frozenset[int]:
    return frozenset(int(m["accumulatorId"]) for m in info.get("metrics") or ())


def _subtree_accs(info: Mapping[str, Any]) -> frozenset[int]:
    """Every accumulator id in a JSON subtree: the identity of the operators it
    holds. SparkPlanInfo copies a subtree wherever the plan refers to one instance
    twice (a cached plan inside another, a subquery in two expressions), and
    only copies share accumulators."""
    out = set(_acc_ids(info))
    for c in _children(info):
        out |= _subtree_accs(c)
    return frozenset(out)


def _lineage_only(info: Mapping[str, Any]) -> bool:
    """Whether the node's non-subquery children are plans it was derived from, which
    explain does not show: an EmptyRelation's logical plan, an RDD scan's
    ("Scan ExistingRDD", since 4.x) SQL plans found in the RDD's lineage."""
    name = _name(info)
    return name == _EMPTY_RELATION or (
        name.startswith("Scan ") and not str(info.get("simpleString", "")).startswith("FileScan"))


def _split_children(info: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """(the plan children, the subqueries) of an ordinary node's SparkPlanInfo."""
    real: list[Mapping[str, Any]] = []
    subs: list[Mapping[str, Any]] = []
    for child in _children(info):
        (subs if _name(child) in _SUBQUERIES or _name(child) == _REUSED_SUBQUERY else real).append(child)
    return real, subs


def _metrics(info: Mapping[str, Any]) -> dict[str, tuple[int, str]]:
    out: dict[str, tuple[int, str]] = {}
    for m in info.get("metrics") or ():
        name = str(m.get("name"))
        if name in out:  # two metrics of one node with one display name: keep both
            name = f"{name} #{m['accumulatorId']}"
        out[name] = (int(m["accumulatorId"]), str(m.get("metricType", "sum")))
    return out


def exchange_kind(info: Mapping[str, Any]) -> str | None:
    """The partitioning an exchange node sends rows by ("hashpartitioning",
    "SinglePartition", "rangepartitioning", "broadcast", ...), else None."""
    name = _name(info)
    if name == "BroadcastExchange":
        return "broadcast"
    if name == _REUSED_EXCHANGE:
        kids = _children(info)
        return exchange_kind(kids[0]) if kids else None
    if name == "Exchange":
        rest = str(info.get("simpleString", ""))[len("Exchange"):].strip()
        kind = re.split(r"[(,\s]", rest, maxsplit=1)[0]
        return kind or None
    return None


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= DESCRIPTION_LIMIT else line[:DESCRIPTION_LIMIT - 1] + "…"


@dataclass(eq=False)
class _Op:
    """An operator explain counts (WholeStageCodegen and InputAdapter folded away)."""

    info: Mapping[str, Any]
    codegen: int | None
    ident: frozenset[int]  # accumulator ids of its subtree (empty: unknown)
    name: str | None = None  # set for the InMemoryRelation, absent from the JSON
    stage: Mapping[str, Any] | None = None  # the WholeStageCodegen fusing it
    children: list[_Op] = field(default_factory=list)  # counted before the operator
    inner: list[_Op] = field(default_factory=list)  # counted after it (innerChildren)
    subqueries: list[_Sub] = field(default_factory=list)  # in expression order
    reused: _Op | None = None  # a ReusedExchange's copy of the exchange it reuses


@dataclass(eq=False)
class _Sub:
    info: Mapping[str, Any]
    plan: list[_Op]  # empty for a ReusedSubquery (its plan is counted where it first ran)


def _build(info: Mapping[str, Any], codegen: int | None,
           stage: Mapping[str, Any] | None = None) -> list[_Op]:
    """The operators of a SparkPlanInfo subtree; `codegen`: the enclosing
    WholeStageCodegen's stage id (None below an InputAdapter or outside one),
    `stage` that WholeStageCodegen's node.

    A WholeStageCodegen gives its id to the operators it fuses, as its tree shows
    (Spark's own explain can print another stage's id for the operators after a
    BuildLeft broadcast, through a counter it shares across siblings)."""
    name = _name(info)
    if (m := _WSCG.match(name)) is not None:
        return [op for c in _children(info) for op in _build(c, int(m.group(1)), info)]
    if name == _INPUT_ADAPTER:
        return [op for c in _children(info) for op in _build(c, None)]
    reused = name in (_REUSED_EXCHANGE, _REUSED_SUBQUERY)  # its copy is not its identity
    op = _Op(info, codegen, frozenset() if reused else _subtree_accs(info), stage=stage)
    real, subs = _split_children(info)
    if name == _REUSED_EXCHANGE:
        copies = [o for c in real for o in _build(c, None)]
        op.reused = copies[0] if copies else None
    elif name == _IN_MEMORY_SCAN:
        relation = _Op({"nodeName": "InMemoryRelation", "simpleString": "InMemoryRelation"},
                       None, frozenset(), name="InMemoryRelation")
        relation.inner = [o for c in real for o in _build(c, None)]
        op.inner = [relation]
    elif _lineage_only(info):
        pass
    elif name == _AQE or name.endswith("QueryStage"):
        op.children = [o for c in real for o in _build(c, None)]
    else:
        op.children = [o for c in real for o in _build(c, codegen, stage)]
    for sub in subs:
        plan = [] if _name(sub) == _REUSED_SUBQUERY else \
            [o for c in _children(sub) for o in _build(c, None)]
        op.subqueries.append(_Sub(sub, plan))
    return [op]


class _Numbering:
    """ExplainUtils' id assignment, over `_Op` trees."""

    def __init__(self) -> None:
        self.ids: dict[int, int] = {}  # id(op) -> explain id
        self.parents: dict[int, _Op | None] = {}  # id(op) -> the operator above it
        self.ops: list[_Op] = []
        # the operators counted, by `_Op.ident`: how a copy in the JSON (the
        # exchange under a ReusedExchange, a shared cached plan) is known
        self.by_ident: dict[frozenset[int], _Op] = {}
        self.reused: list[_Op] = []

    def count(self, op: _Op, parent: _Op | None, note_reused: bool = True) -> None:
        if op.ident and (first := self.by_ident.get(op.ident)) is not None and first is not op:
            # a copy of operators already counted (explain's identity map: same ids)
            self.ids[id(op)] = self.ids[id(first)]
            return
        for c in op.children:
            self.count(c, op, note_reused)
        if id(op) not in self.ids:
            self.ids[id(op)] = len(self.ops) + 1
            self.parents[id(op)] = parent
            self.ops.append(op)
            if op.ident and op.name is None:
                self.by_ident.setdefault(op.ident, op)
            if op.reused is not None and note_reused:
                self.reused.append(op)
        for c in op.inner:
            self.count(c, op, note_reused)

    def nodes(self) -> list[PlanNode]:
        out = []
        for op in self.ops:
            parent = self.parents[id(op)]
            out.append(PlanNode(
                node_id=self.ids[id(op)],
                name=op.name or _name(op.info),
                description=_one_line(str(op.info.get("simpleString", ""))),
                parent_id=None if parent is None else self.ids[id(parent)],
                metrics=_metrics(op.info),
                codegen_stage=op.codegen,
                exchange=exchange_kind(op.info),
            ))
        return out


def _hosted(op: _Op, out: list[tuple[_Op, _Sub]]) -> None:
    """Explain's subquery list: operators pre-order (cached plans and reused
    exchanges not searched), each one's subqueries in expression order, a
    subquery's own subqueries right after it."""
    for s in op.subqueries:
        out.append((op, s))
        for c in s.plan:
            _hosted(c, out)
    for c in op.children:
        _hosted(c, out)


def _number(plan_info: Mapping[str, Any]) -> _Numbering:
    num = _Numbering()
    roots = _build(plan_info, None)
    for root in roots:
        num.count(root, None)
    hosted: list[tuple[_Op, _Sub]] = []
    for root in roots:
        _hosted(root, hosted)
    for host, sub in hosted:
        for c in sub.plan:  # a subquery in two expressions: its copy is not counted again
            num.count(c, host)
    # an exchange only reachable through a ReusedExchange (AQE optimized it out)
    for reused in list(num.reused):
        copy = reused.reused
        if copy is not None and copy.ident not in num.by_ident:
            num.count(copy, reused, note_reused=False)
    return num


def plan_nodes(plan_info: Mapping[str, Any]) -> list[PlanNode]:
    """The operators of a SparkPlanInfo (JSON form), numbered as EXPLAIN FORMATTED
    numbers them, sorted by id."""
    return sorted(_number(plan_info).nodes(), key=lambda n: n.node_id)


@dataclass(frozen=True)
class CodegenStage:
    """A WholeStageCodegen: not an operator of explain's, but its "duration" metric
    is the time spent in the operators it fuses (`node_ids`)."""

    stage_id: int
    node_ids: tuple[int, ...]
    metrics: dict[str, tuple[int, str]] = field(default_factory=dict, hash=False)


def codegen_stages(plan_info: Mapping[str, Any]) -> list[CodegenStage]:
    """The plan's WholeStageCodegen nodes with the operators (explain ids) they fuse.
    Stage ids repeat between a query and the cached plans it reads."""
    num = _number(plan_info)
    stages: dict[int, tuple[Mapping[str, Any], list[int]]] = {}
    for op in num.ops:
        if op.stage is not None:
            stages.setdefault(id(op.stage), (op.stage, []))[1].append(num.ids[id(op)])
    out = []
    for info, ids in stages.values():
        m = _WSCG.match(_name(info))
        out.append(CodegenStage(int(m.group(1)) if m else 0, tuple(sorted(ids)), _metrics(info)))
    return sorted(out, key=lambda s: s.node_ids)


def explain_text(nodes: Sequence[PlanNode]) -> str:
    """An indented tree, `Name (id)` per line, children two spaces under their parent."""
    kids: dict[int | None, list[PlanNode]] = {}
    known = {n.node_id for n in nodes}
    for n in sorted(nodes, key=lambda n: n.node_id):
        parent = n.parent_id if n.parent_id in known else None
        kids.setdefault(parent, []).append(n)
    lines: list[str] = []

    def visit(n: PlanNode, depth: int) -> None:
        lines.append(f"{'  ' * depth}{n.name} ({n.node_id})")
        for k in kids.get(n.node_id, ()):
            visit(k, depth + 1)

    # the root is the highest id of the main plan; subquery roots hang under hosts
    for root in sorted(kids.get(None, ()), key=lambda n: -n.node_id):
        visit(root, 0)
    return "\n".join(lines)


def plan_info_of(df: Any) -> dict[str, Any]:
    """The SparkPlanInfo (JSON form, as listener events carry it) of a DataFrame's
    executed plan: what `plan_nodes` needs to number a plan before it runs."""
    jvm = df.sparkSession.sparkContext._jvm
    plan = df._jdf.queryExecution().executedPlan()
    info = getattr(jvm.org.apache.spark.sql.execution, "SparkPlanInfo$").__getattr__("MODULE$")
    module = getattr(jvm.com.fasterxml.jackson.module.scala, "DefaultScalaModule$").__getattr__("MODULE$")
    mapper = jvm.com.fasterxml.jackson.databind.ObjectMapper()
    mapper.registerModule(module)
    return dict(json.loads(mapper.writeValueAsString(info.fromSparkPlan(plan))))
