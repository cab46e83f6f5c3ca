"""Plan node ids (design 002's LIR ids): pinned once per dataflow, found again in every run.

A dataflow's plan is the Spark physical plan of its query over its inputs as the dataflow
reads them, numbered as `EXPLAIN FORMATTED` numbers it. The replica that first creates the
dataflow explains it (`explained`) and reports the nodes in DataflowCreated; the catalog
keeps them and every later CreateDataflow carries them, so a replica restart, a rehydration
or a server restart shows and reports the same ids even if Spark would now plan otherwise
(an input grown past the broadcast threshold, ...). Design 002 wants them assigned once,
increasing, unique within the dataflow: Spark's numbering is all three.

Every Spark job a dataflow runs holds its query's plan inside weir's own work (consolidating
the inputs' updates, diffing against the previous result); `align` finds the query's plan
there by its shape and says which of the job's nodes is which pinned node. Nodes of weir's
own work have no plan node id: they are not part of the user's plan.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol

PinnedNode = tuple[int, str, int | None]  # (plan node id, operator, parent's plan node id)

_LINE = re.compile(r"^(?P<lead>[ :+\-|]*)(?:\* )?(?P<name>.*?) \((?P<id>\d+)\)\s*$")


class _Node(Protocol):
    node_id: int
    name: str
    parent_id: int | None


def explained(df: Any) -> list[PinnedNode]:
    """The plan Spark runs for a DataFrame (planning only, nothing runs), by node id."""
    jvm = df.sparkSession._jvm
    text = str(jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "formatted"))
    return parse_formatted(text)


def parse_formatted(text: str) -> list[PinnedNode]:
    """The tree section of EXPLAIN FORMATTED as (id, operator, parent id): a node's parent
    is the nearest line above it that is indented less."""
    stack: list[tuple[int, int]] = []  # (indent, node id) of the open ancestors
    out: list[PinnedNode] = []
    for line in text.strip("\n").split("\n\n", 1)[0].splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        indent = len(m.group("lead"))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        node_id = int(m.group("id"))
        out.append((node_id, m.group("name").strip(), stack[-1][1] if stack else None))
        stack.append((indent, node_id))
    return sorted(out)


def key(name: str) -> str:
    """What must agree between a pinned node and a job's node: the operator's kind
    (EXPLAIN prints `BroadcastHashJoin Inner BuildRight`, a listener `BroadcastHashJoin`)."""
    parts = name.replace("*", " ").split()
    return parts[0] if parts else ""


def _children(nodes: Sequence[tuple[int, int | None]]) -> dict[int | None, list[int]]:
    out: dict[int | None, list[int]] = {}
    for node_id, parent in sorted(nodes):
        out.setdefault(parent, []).append(node_id)  # left to right: ids are post-order
    return out


def align(pinned: Sequence[PinnedNode], job: Sequence[_Node]) -> dict[int, int]:
    """job node id -> pinned plan node id, for the job's nodes that are the pinned plan's.

    The pinned plan's root is looked for among the job's nodes; from each candidate both
    trees are walked together, child by child, as long as the operators agree. The
    candidate that matches the most nodes wins; on a tie, the one whose subtree is most
    like the pinned plan (its operators, counted): once Spark plans the query otherwise
    (a sort-merge join where a broadcast join was pinned), the aggregates above the join
    match as many nodes from the query's root as from the aggregate consolidating one of
    its inputs, which holds a fraction of the plan; then the earliest."""
    if not pinned or not job:
        return {}
    pkids = _children([(i, p) for i, _, p in pinned])
    pnames = {i: key(n) for i, n, _ in pinned}
    jkids = _children([(n.node_id, n.parent_id) for n in job])
    jnames = {n.node_id: key(n.name) for n in job}
    kinds = Counter(pnames.values())
    roots = pkids.get(None) or []
    if not roots:
        return {}
    root = roots[-1]

    def walk(j: int, p: int, out: dict[int, int]) -> None:
        if jnames.get(j) != pnames.get(p):
            return
        out[j] = p
        for jc, pc in zip(jkids.get(j, ()), pkids.get(p, ()), strict=False):
            walk(jc, pc, out)

    def subtree(j: int) -> Counter[str]:
        out: Counter[str] = Counter()
        todo = [j]
        while todo:
            n = todo.pop()
            out[jnames.get(n, "")] += 1
            todo.extend(jkids.get(n, ()))
        return out

    best: dict[int, int] = {}
    best_score = (0, 0.0)
    for j in sorted(jnames):
        if jnames[j] != pnames[root]:
            continue
        found: dict[int, int] = {}
        walk(j, root, found)
        if len(found) < best_score[0]:
            continue
        there = subtree(j)
        score = (len(found), sum((there & kinds).values()) / sum((there | kinds).values()))
        if score > best_score:
            best, best_score = found, score
    return best


def from_wire(raw: Any) -> list[PinnedNode] | None:
    """CreateDataflow's `plan_nodes` ([[id, operator, parent], ...]) or None."""
    if not raw:
        return None
    return [(int(i), str(n), None if p is None else int(p)) for i, n, p in raw]


def to_wire(nodes: Sequence[PinnedNode] | None) -> list[list[Any]] | None:
    return None if nodes is None else [[i, n, p] for i, n, p in nodes]

