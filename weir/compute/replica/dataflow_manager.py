"""The replica's side of the dataflow commands: installs, drops and feeds dataflows.

Dataflows belong to the replica process, not to a controller connection: they
keep running while the controller reconnects, and a replayed CreateDataflow
with the same definition is answered again (DataflowCreated, then the current
Frontiers) instead of starting a second copy.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from weir.compute import protocol as P
from weir.compute.replica import plan_ids
from weir.compute.replica.dataflow import Dataflow
from weir.compute.replica.dataflow_spec import DataflowSpec
from weir.compute.replica.engine import SparkEngine
from weir.compute.replica.errors import translate
from weir.compute.replica.index_dataflow import IndexDataflow
from weir.errors import SqlState, WeirError
from weir.storage.persist import ShardStore

log = logging.getLogger(__name__)

DROP_TIMEOUT = 30.0


class DataflowManager:
    """Every dataflow of one replica; implements `weir.compute.replica.dataflow.Host`."""

    def __init__(self, engine: SparkEngine, send: Callable[[dict[str, Any]], None],
                 fatal: Callable[[str], None], replica_id: str = "") -> None:
        self.engine = engine
        self.replica_id = replica_id
        self._send = send  # called on the event loop: sends on the current connection
        self._fatal = fatal  # called on the event loop
        self.dataflows: dict[str, Dataflow] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._uppers: dict[str, int] = {}
        self._now = 0
        self._epoch = 0
        self._storage: dict[str, Any] | None = None
        self._store: ShardStore | None = None
        self._store_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="dataflow-ctl")
        self._early_sinces: dict[str, int] = {}  # AllowCompaction ahead of its CreateDataflow
        self.track_hydration = True  # enable_compute_operator_hydration_status_logging

    # -- Host (thread-safe) ----------------------------------------------------------------

    def state_root(self) -> str | None:
        """Where this replica's incremental dataflows keep their state and checkpoints:
        beside the shards, so every incarnation (and an executor elsewhere) finds it."""
        if not self.replica_id:
            return None
        return os.path.join(self._store_for().warehouse_path, "_weir_compute_state", self.replica_id)

    def emit(self, body: dict[str, Any]) -> None:
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._send, body)
        except RuntimeError:  # the loop is closed: the replica is exiting
            pass

    def fatal(self, why: str) -> None:
        if self._loop is not None:
            try:
                self._loop.call_soon_threadsafe(self._fatal, why)
            except RuntimeError:
                pass

    def writer_epoch(self) -> int:
        with self._lock:
            return self._epoch

    def input_upper(self, shard_id: str) -> int:
        with self._lock:
            return self._uppers.get(shard_id, 0)

    def now(self) -> int:
        """The coordinator's time as this replica knows it: the greatest upper it announced
        (it announces every collection it writes at every tick)."""
        return self._now

    def tracking_hydration(self) -> bool:
        return self.track_hydration

    # -- commands (on the event loop) ------------------------------------------------------

    def configure(self, storage: Mapping[str, Any] | None, writer_epoch: int | None,
                  incarnation: int) -> None:
        """From CreateInstance: where shards live, and the epoch writes carry."""
        self._loop = asyncio.get_running_loop()
        if storage:
            self._storage = dict(storage)
        self.set_writer_epoch({"epoch": writer_epoch if writer_epoch is not None else incarnation})

    def set_writer_epoch(self, body: Mapping[str, Any]) -> None:
        epoch = int(body.get("epoch", 0))
        with self._lock:
            if epoch <= self._epoch:
                return
            self._epoch = epoch
        for df in list(self.dataflows.values()):
            df.wake()

    def update_input_frontiers(self, body: Mapping[str, Any]) -> None:
        changed: set[str] = set()
        with self._lock:
            for shard_id, upper in (body.get("uppers") or {}).items():
                if int(upper) > self._uppers.get(str(shard_id), 0):
                    self._uppers[str(shard_id)] = int(upper)
                    changed.add(str(shard_id))
                    self._now = max(self._now, int(upper))
        if changed:
            for df in list(self.dataflows.values()):
                # a dataflow without inputs (a constant view's index) follows the time itself
                if not df.spec.inputs or any(i.shard_id in changed for i in df.spec.inputs):
                    df.wake()

    def allow_compaction(self, body: Mapping[str, Any]) -> None:
        dataflow_id, since = str(body.get("dataflow_id")), body.get("since")
        if since is None:
            return
        df = self.dataflows.get(dataflow_id)
        if df is not None:
            df.allow_compaction(int(since))
        else:  # its CreateDataflow, sent just before, has not started yet: it takes this
            self._early_sinces[dataflow_id] = max(self._early_sinces.get(dataflow_id, 0), int(since))

    def store(self) -> ShardStore:
        """The replica's shard store (CreateInstance's storage), opened once."""
        return self._store_for()

    def _store_for(self) -> ShardStore:
        with self._store_lock:
            if self._store is None:
                if not self._storage:
                    raise WeirError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE,
                                    "this replica has no storage configuration (CreateInstance.storage)")
                self._store = ShardStore(str(self._storage["catalog_uri"]),
                                         str(self._storage["warehouse"]))
            return self._store

    def _error(self, dataflow_id: Any, err: WeirError, at: str) -> None:
        self._send({"type": P.DATAFLOW_ERROR, "dataflow_id": dataflow_id, "sqlstate": err.sqlstate,
                    "message": err.message, "detail": err.detail, "hint": err.hint, "at": at})

    async def create(self, body: Mapping[str, Any]) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            spec = DataflowSpec.from_body(body)
        except WeirError as e:
            self._error(body.get("dataflow_id"), e, "create")
            return
        existing = self.dataflows.get(spec.dataflow_id)
        if existing is not None:
            if not existing.spec.same_definition(spec):
                self._error(spec.dataflow_id, WeirError(
                    SqlState.DUPLICATE_OBJECT,
                    f"dataflow {spec.dataflow_id} already exists with another definition"), "create")
            elif existing.prepared:
                self._created(existing)
            return  # still preparing: that create answers
        df = (IndexDataflow if spec.index is not None else Dataflow)(spec, self.engine, self)
        if body.get("since") is not None:
            df.allow_compaction(int(body["since"]))
        if spec.dataflow_id in self._early_sinces:
            df.allow_compaction(self._early_sinces.pop(spec.dataflow_id))
        self.dataflows[spec.dataflow_id] = df
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._pool, lambda: df.prepare(self._store_for()))
        except Exception as e:
            if self.dataflows.get(spec.dataflow_id) is df:
                del self.dataflows[spec.dataflow_id]
            err = translate(e)
            log.info("dataflow %s refused: %s", spec.dataflow_id, err)
            self._error(spec.dataflow_id, err, "create")
            return
        if self.dataflows.get(spec.dataflow_id) is not df:
            return  # dropped while preparing
        log.info("dataflow %s installed (%s, as_of %d)", spec.dataflow_id, df.effective_strategy,
                 spec.as_of)
        self._created(df)
        df.start()

    def _created(self, df: Dataflow) -> None:
        self._send({"type": P.DATAFLOW_CREATED, "dataflow_id": df.spec.dataflow_id,
                    "strategy": df.effective_strategy, "explanation": df.explanation(),
                    "columns": df.columns,
                    "plan_nodes": plan_ids.to_wire(df.plan_nodes)})
        frontiers = df.frontiers_body()
        if frontiers is not None:
            self._send(frontiers)

    async def drop(self, body: Mapping[str, Any]) -> None:
        dataflow_id = str(body.get("dataflow_id"))
        self._early_sinces.pop(dataflow_id, None)
        df = self.dataflows.pop(dataflow_id, None)
        if df is not None:
            await self._stop(df, drop=True)
            log.info("dataflow %s dropped", dataflow_id)
        self._send({"type": P.DATAFLOW_DROPPED, "dataflow_id": dataflow_id})

    async def _stop(self, df: Dataflow, drop: bool = False) -> None:
        """Stop its thread; a dropped dataflow's state goes, a stopping replica's stays."""
        df.stop(drop)
        loop = asyncio.get_running_loop()

        def stop() -> None:
            try:
                self.engine.cancel(df.tag)
            except Exception as e:  # the session may be stopping
                log.debug("cancel %s: %s", df.tag, e)
            df.join(DROP_TIMEOUT)

        await loop.run_in_executor(None, stop)

    def index_peek(self, body: dict[str, Any], wait: float) -> Any:
        """A fast-path peek at an index's arrangement (blocking: waits up to `wait` seconds
        for the arrangement to reach the peek's timestamp). Raises NotFastPath when the
        arrangement cannot answer; the adapter then runs the query on Spark."""
        from weir.compute.replica.arrangement import NotFastPath

        df = self.dataflows.get(str(body.get("index")))
        if not isinstance(df, IndexDataflow) or not df.prepared:
            raise NotFastPath(f"index {body.get('index')} is not installed on this replica")
        return df.peek(body, wait)

    def index_contents(self, index_id: str, ts: int, wait: float) -> Any:
        """An index's contents at `ts` as Arrow, for a Spark peek that reads it (blocking)."""
        from weir.compute.replica.arrangement import NotFastPath

        df = self.dataflows.get(index_id)
        if not isinstance(df, IndexDataflow) or not df.prepared:
            raise NotFastPath(f"index {index_id} is not installed on this replica")
        return df.contents_at(ts, wait)

    def status(self) -> dict[str, dict[str, Any]]:
        """Per dataflow: the output upper this replica knows, strategy and counters."""
        return {d: df.status() for d, df in list(self.dataflows.items()) if df.prepared}

    async def stop_all(self) -> None:
        dfs = list(self.dataflows.values())
        self.dataflows.clear()
        if dfs:
            await asyncio.gather(*(self._stop(df) for df in dfs), return_exceptions=True)
        self._pool.shutdown(wait=False, cancel_futures=True)
