"""Per plan node and per worker hydration of the dataflows a replica runs (design 002).

A dataflow hydrates by running its first Spark job at its as_of (the snapshot); its
operators are the nodes of that job's physical plan, by the ids EXPLAIN PHYSICAL PLAN
WITH (node_ids) prints. A **worker** is a partition of the Spark stage that runs the node
(the meaning introspection uses), and a node is hydrated on a worker once that stage's
task for the partition has finished: it has produced all its output for the as_of there.
Which stage runs a node comes from the RDD scopes Spark records per stage at job start: a
whole-stage-codegen node runs where its `WholeStageCodegen (k)` does, an exchange where
its shuffle is written (`[plan_id=n]`), any other node with its input (its first child),
else with its consumer. Until its stage is known, a node reports worker 0, not hydrated.
Once the dataflow's write frontier passes its as_of, every node is hydrated everywhere
(stages Spark skipped included). An index's arrangement is node 0 (`ArrangeBy`).

The replica sends only changes, in HydrationStatus responses; a new controller
connection gets everything again.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from weir.compute import protocol as P
from weir.compute.replica.spark_listener import ExecutionRecord, SparkListenerHandle

log = logging.getLogger(__name__)

POLL_S = 0.5
_CODEGEN = re.compile(r"^WholeStageCodegen \((\d+)\)$")
_PLAN_ID = re.compile(r"\[plan_id=(\d+)\]")
Statuses = dict[tuple[int, int], bool]  # (plan node id, worker) -> hydrated


def node_stages(rec: ExecutionRecord) -> dict[int, int | None]:
    """plan node id -> the Spark stage that runs it (None: not known yet)."""
    codegen: dict[int, int] = {}
    exchange: dict[str, int] = {}
    for sid in sorted(rec.stage_scopes):
        for scope_id, scope_name, rdd in rec.stage_scopes[sid]:
            m = _CODEGEN.match(scope_name)
            if m:
                codegen.setdefault(int(m.group(1)), sid)
            elif scope_name == "Exchange" and rdd != "ShuffledRowRDD":
                exchange.setdefault(scope_id, sid)  # the stage writing the shuffle
    children: dict[int, list[int]] = {}
    for n in rec.nodes:
        if n.parent_id is not None:
            children.setdefault(n.parent_id, []).append(n.node_id)
    out: dict[int, int | None] = {}
    for n in sorted(rec.nodes, key=lambda n: n.node_id):  # EXPLAIN's ids: children first
        stage: int | None = None
        if n.codegen_stage is not None:
            stage = codegen.get(n.codegen_stage)
        elif (m := _PLAN_ID.search(n.description)) and n.name.strip().endswith("Exchange"):
            stage = exchange.get(f"spark_plan_{m.group(1)}")
        if stage is None:
            stage = next((out[c] for c in sorted(children.get(n.node_id, ())) if out.get(c) is not None), None)
        out[n.node_id] = stage
    for n in sorted(rec.nodes, key=lambda n: -n.node_id):  # parents first: a leaf with no stage
        if out[n.node_id] is None and n.parent_id is not None:
            out[n.node_id] = out.get(n.parent_id)
    return out


def statuses(rec: ExecutionRecord, hydrated: bool = False) -> Statuses:
    """Each node's status per worker in this (hydration) execution."""
    done = {(t.stage_id, t.partition) for t in rec.tasks if not t.failed}
    out: Statuses = {}
    for node_id, stage in node_stages(rec).items():
        tasks = rec.stage_tasks.get(stage) if stage is not None else None
        if not tasks:
            out[(node_id, 0)] = hydrated
            continue
        for w in range(tasks):
            out[(node_id, w)] = hydrated or (stage, w) in done
    return out


@dataclass
class _Tracked:
    description: str
    started_ms: int
    index: bool
    execution_id: int | None = None  # its hydration's Spark execution, once seen
    current: Statuses = field(default_factory=dict)
    done: bool = False


class OperatorHydration:
    """Tracks the dataflows still hydrating; `send` gets each HydrationStatus response."""

    def __init__(self, listener: SparkListenerHandle, exports: Callable[[], dict[str, Any]],
                 send: Callable[[dict[str, Any]], None]) -> None:
        self._listener, self._exports, self._send = listener, exports, send
        self._tracked: dict[str, _Tracked] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hydration", daemon=True)
        self._thread.start()

    def track(self, export_id: str, index: bool) -> None:
        """A dataflow was (re)created: it hydrates from here."""
        with self._lock:
            self._tracked[export_id] = _Tracked(f"dataflow {export_id}", int(time.time() * 1000) - 1000, index)
        self._send({"type": P.HYDRATION_STATUS, "dataflow_id": export_id, "reset": True, "updates": []})
        self._wake.set()

    def forget(self, export_id: str) -> None:
        with self._lock:
            self._tracked.pop(export_id, None)

    def resend(self) -> None:
        """A new controller connection: everything it should know, again."""
        with self._lock:
            tracked = {e: dict(t.current) for e, t in self._tracked.items()}
        for export_id, current in tracked.items():
            self._send({"type": P.HYDRATION_STATUS, "dataflow_id": export_id, "reset": True,
                        "updates": [[n, w, h] for (n, w), h in sorted(current.items())]})

    def set_enabled(self, on: bool) -> None:
        """Off: stop tracking and retract what was reported (new dataflows are not tracked)."""
        if on:
            return
        with self._lock:
            gone, self._tracked = list(self._tracked), {}
        for export_id in gone:
            self._send({"type": P.HYDRATION_STATUS, "dataflow_id": export_id, "reset": True, "updates": []})

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            busy = False
            try:
                busy = self.poll()
            except Exception:  # noqa: BLE001 - statuses are best effort; the dataflows go on
                log.exception("hydration status: poll failed")
            self._wake.wait(POLL_S if busy else 5.0)
            self._wake.clear()

    def poll(self) -> bool:
        """One round: send what changed. True while some dataflow is still hydrating."""
        with self._lock:
            hydrating = {e: t for e, t in self._tracked.items() if not t.done}
        if not hydrating:
            return False
        exports = self._exports()
        descriptions = {t.description for t in hydrating.values()}
        records = self._listener.recent(descriptions) + self._listener.running(descriptions)
        for export_id, t in hydrating.items():
            flow = exports.get(export_id)
            upper, as_of = getattr(flow, "upper", None), getattr(getattr(flow, "spec", None), "as_of", None)
            hydrated = upper is not None and as_of is not None and upper > as_of
            rec = self._hydration_of(t, records)
            new: Statuses = statuses(rec, hydrated) if rec is not None else {}
            if t.index:
                new[(0, 0)] = hydrated
            changed = [[n, w, h] for (n, w), h in sorted(new.items()) if t.current.get((n, w)) != h]
            with self._lock:
                if self._tracked.get(export_id) is not t:
                    continue  # dropped or turned off meanwhile
                t.current = new
                t.done = hydrated
            if changed:
                self._send({"type": P.HYDRATION_STATUS, "dataflow_id": export_id, "updates": changed})
        return True

    @staticmethod
    def _hydration_of(t: _Tracked, records: list[ExecutionRecord]) -> ExecutionRecord | None:
        """The dataflow's first Spark execution since it was (re)created that did work."""
        candidates = [r for r in records if r.description == t.description and r.started_ms >= t.started_ms
                      and (t.execution_id is None or r.execution_id == t.execution_id)
                      and not all(str(n.name).startswith("Execute ") for n in r.nodes)]
        if not candidates:
            return None
        rec = min(candidates, key=lambda r: r.execution_id)
        t.execution_id = rec.execution_id
        return rec
