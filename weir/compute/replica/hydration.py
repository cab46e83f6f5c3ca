"""Per plan node and per worker hydration of the dataflows a replica runs (design 002),
and how far along it is (issue 13 part 5): weir.compute.replica.hydration_progress says
what is reported and how it is measured.

A dataflow hydrates by running its first Spark job of this incarnation (the snapshot at its
as_of). Its plan nodes are the ones pinned when it was created (weir.compute.replica.
plan_ids), found in that job's plan by shape; an index's arrangement is node 0
(`ArrangeBy`). Once the dataflow's write frontier passes its as_of, every node is hydrated
everywhere (stages Spark skipped included).

A thread of its own polls the Spark listener every POLL_S while something hydrates and sends
only changes, in HydrationStatus responses; a new controller connection gets everything
again. The rows each node produced are kept per dataflow, as the expectation of its next
hydration in this process (a rehydration after its inputs were compacted, ...), and the
update completing a hydration that ran the query says so (`final`): the controller keeps
those rows in the catalog and hands them to every later CreateDataflow (`row_counts`), the
expectation of a replica that has not hydrated the dataflow itself (a restart, a new
replica, a server restart).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from weir.compute import protocol as P
from weir.compute.replica import scan_layout
from weir.compute.replica.hydration_progress import Key, Progress, progress
from weir.compute.replica.plan_ids import align
from weir.compute.replica.spark_listener import ExecutionRecord, SparkListenerHandle

log = logging.getLogger(__name__)

POLL_S = 0.5
Statuses = dict[Key, Progress]


@dataclass
class _Tracked:
    description: str
    started_ms: int
    index: bool
    execution_id: int | None = None  # its hydration's Spark execution, once seen
    alignment: dict[int, int] | None = None  # that execution's nodes -> plan node ids
    scans: list[scan_layout.FileScan] | None = None  # its file scans, from the job's plan
    layout: dict[int, list[int]] = field(default_factory=dict)  # scan rows metric -> rows per partition
    current: Statuses = field(default_factory=dict)
    done: bool = False


class OperatorHydration:
    """Tracks the dataflows still hydrating; `send` gets each HydrationStatus response."""

    def __init__(self, listener: SparkListenerHandle, exports: Callable[[], dict[str, Any]],
                 send: Callable[[dict[str, Any]], None]) -> None:
        self._listener, self._exports, self._send = listener, exports, send
        self._tracked: dict[str, _Tracked] = {}
        self._previous: dict[str, P.RowCounts] = {}  # dataflow -> rows per node and worker, last time
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hydration", daemon=True)
        self._thread.start()

    def track(self, export_id: str, index: bool) -> None:
        """A dataflow was (re)created: it hydrates from here."""
        with self._lock:
            self._tracked[export_id] = _Tracked(f"dataflow {export_id}", int(time.time() * 1000) - 1000, index)
        self._listener.set_live(True)
        self._send({"type": P.HYDRATION_STATUS, "dataflow_id": export_id, "reset": True, "updates": []})
        self._wake.set()

    def forget(self, export_id: str) -> None:
        with self._lock:
            self._tracked.pop(export_id, None)
            self._previous.pop(export_id, None)

    def resend(self) -> None:
        """A new controller connection: everything it should know, again."""
        with self._lock:
            tracked = {e: dict(t.current) for e, t in self._tracked.items()}
        for export_id, current in tracked.items():
            self._send({"type": P.HYDRATION_STATUS, "dataflow_id": export_id, "reset": True,
                        "updates": [p.wire(n, w) for (n, w), p in sorted(current.items())]})

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
                if not busy:
                    self._listener.pull()  # keeps the JVM's queue short when nothing else reads it
            except Exception:  # noqa: BLE001 - statuses are best effort; the dataflows go on
                log.exception("hydration status: poll failed")
            self._wake.wait(POLL_S if busy else 5.0)
            self._wake.clear()

    def poll(self) -> bool:
        """One round: send what changed. True while some dataflow is still hydrating."""
        with self._lock:
            hydrating = {e: t for e, t in self._tracked.items() if not t.done}
        self._listener.set_live(bool(hydrating))
        if not hydrating:
            return False
        exports = self._exports()
        descriptions = {t.description for t in hydrating.values()}
        records = self._listener.recent(descriptions) + self._listener.running(descriptions)
        for export_id, t in hydrating.items():
            flow = exports.get(export_id)
            upper, as_of = getattr(flow, "upper", None), getattr(getattr(flow, "spec", None), "as_of", None)
            hydrated = upper is not None and as_of is not None and upper > as_of
            pinned = getattr(flow, "plan_nodes", None)
            rec = self._hydration_of(t, records)
            if rec is not None:
                if t.alignment is None and pinned:
                    t.alignment = align(pinned, rec.nodes)
                self._read_layout(t, flow, rec)
            previous = self._previous.get(export_id) or getattr(getattr(flow, "spec", None), "row_counts", None)
            new = progress(rec, pinned, t.alignment, t.layout, hydrated, previous or {})
            if t.index:
                new[(0, 0)] = Progress(hydrated)
            changed = [p.wire(n, w) for (n, w), p in sorted(new.items()) if t.current.get((n, w)) != p]
            with self._lock:
                if self._tracked.get(export_id) is not t:
                    continue  # dropped or turned off meanwhile
                t.current = new
                t.done = hydrated
                final = hydrated and rec is not None  # it ran the query: its rows are the next expectation
                if final:
                    self._previous[export_id] = P.row_counts(new)
            if hydrated and flow is not None:
                flow.hydration_job = None  # the JVM plan it kept alive is not needed any more
            if changed or final:
                body: dict[str, Any] = {"type": P.HYDRATION_STATUS, "dataflow_id": export_id, "updates": changed}
                if final:
                    body["final"] = True
                self._send(body)
        return True

    @staticmethod
    def _read_layout(t: _Tracked, flow: Any, rec: ExecutionRecord) -> None:
        """The rows each file scan will produce per partition, once the job reading it has
        started (its input RDD exists then; asking earlier would build it)."""
        job = getattr(flow, "hydration_job", None)
        if job is None:
            return
        try:
            if t.scans is None:
                t.scans = scan_layout.file_scans(job)
            started = {scope for scopes in rec.stage_scopes.values() for scope, _, rdd in scopes
                       if rdd == "FileScanRDD"}
            for scan in t.scans:
                if scan.rows_accumulator not in t.layout and scan.scope in started:
                    rows = scan_layout.partition_rows(scan, flow.record_counts)
                    if rows is not None:
                        t.layout[scan.rows_accumulator] = rows
        except Exception:  # noqa: BLE001 - expectations are best effort: NULL without them
            log.debug("hydration status: reading the scans' layout failed", exc_info=True)
            t.scans = []

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
