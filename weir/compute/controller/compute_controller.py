"""The compute controller: the coordinator's side of the compute protocol.

It asks the orchestrator to run each replica, connects to it when it is
ready, and sends every peek to all connected replicas of the cluster (active
replication), keeping the first answer and canceling the rest. Peeks outlive
replica failures: a peek whose replicas all die before any row reached the
caller is reissued once a replica is back (up to `peek_attempts` times).

Liveness: a connected replica whose heartbeats stop for `heartbeat_timeout`
seconds (stopped, hung, or cut off) is replaced through the orchestrator; its
new incarnation's epoch fences whatever the old process still tries to write.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from weir.compute import protocol as P
from weir.compute.controller.connection import (
    IncarnationFn,
    PeekEvent,
    ReplicaConnection,
    ReplicaGone,
    ReplicaState,
)
from weir.compute.controller.dataflows import DataflowControl
from weir.compute.controller.peeks import BatchStream, PeekResult
from weir.compute.sizes import resolve_size
from weir.errors import SqlState, WeirError

log = logging.getLogger(__name__)



def _weir_error(err: Mapping[str, Any] | None) -> WeirError:
    err = err or {}
    return WeirError(str(err.get("sqlstate") or SqlState.INTERNAL_ERROR),
                     str(err.get("message") or "unknown replica error"),
                     detail=err.get("detail"), hint=err.get("hint"))


class Orchestrator(Protocol):
    """What the controller needs from an orchestrator (see weir.orchestrator.process)."""

    async def ensure_replica(self, replica_id: str, size: str, on_start: Callable[[], Any],
                             on_ready: Callable[[str, int, int], Awaitable[None]],
                             on_exit: Callable[[int | None, str], Any],
                             config: dict[str, Any] | None = None) -> None: ...

    async def drop_replica(self, replica_id: str) -> None: ...

    def replace_replica(self, replica_id: str, reason: str) -> bool: ...


@dataclass
class ReplicaStatus:
    """What the controller knows about one replica (for mz_cluster_replica_statuses)."""

    cluster_id: str
    replica_id: str
    size: str
    status: str  # "online" | "offline"
    incarnation: int | None
    pid: int | None
    last_heartbeat: float | None  # unix time of the last Status message
    ui_url: str | None
    address: str | None
    reason: str | None  # why it is offline, or how it last exited
    exit_code: int | None = None


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class ComputeController:
    """`storage_config` ({"catalog_uri", "warehouse"}) goes to every replica so its
    dataflows can open the shards; `epoch` (the environment's, growing across
    restarts) seeds the writer epochs of dataflow appends (see dataflow_control)."""

    def __init__(self, orchestrator: Orchestrator, *, ready_timeout: float = 60.0, peek_attempts: int = 2,
                 connect_timeout: float = 30.0, storage_config: Mapping[str, Any] | None = None,
                 epoch: int | None = None, heartbeat_timeout: float = 30.0) -> None:
        self.orchestrator = orchestrator
        self.heartbeat_timeout = heartbeat_timeout
        self._watchdog: asyncio.Task[None] | None = None
        self.storage_config = dict(storage_config) if storage_config else None
        self._dataflows = DataflowControl(self, epoch)
        # told a replica's dataflow advanced its output to a durable upper: (output shard,
        # its errors shard or None, that upper); the coordinator's storage follows it
        self.on_write_frontier: Callable[[str, str | None, int], None] | None = None
        self.ready_timeout = ready_timeout
        self.peek_attempts = peek_attempts
        self.connect_timeout = connect_timeout
        self.replicas: dict[str, ReplicaState] = {}
        self._changed = asyncio.Event()
        self._ids = itertools.count(1)
        self._stopping = False

    # -- replicas ---------------------------------------------------------

    async def add_replica(self, cluster_id: str, replica_id: str, size: str,
                          incarnation_fn: IncarnationFn,
                          config: dict[str, Any] | None = None,
                          logging: dict[str, Any] | None = None) -> None:
        """Have the orchestrator run the replica; returns before Spark is up. `logging`:
        its CreateInstance logging configuration (introspection interval, its own shard)."""
        resolve_size(size, config)
        if replica_id in self.replicas:
            raise WeirError(SqlState.DUPLICATE_OBJECT, f"replica '{replica_id}' already exists")
        r = ReplicaState(cluster_id, replica_id, str(size), incarnation_fn)
        r.logging = logging
        self.replicas[replica_id] = r
        self._notify()
        if self._watchdog is None and self.heartbeat_timeout > 0:
            self._watchdog = asyncio.create_task(self._watch_heartbeats(), name="replica-liveness")

        async def on_start() -> int:
            r.incarnation = int(await _maybe_await(r.incarnation_fn()))
            if r.exit_code is None:
                r.reason = "starting"
            # else a restart: keep how the last life ended (e.g. "oom-killed") until it is online
            # again; the status relations poll every second and would miss a 0.5 s window
            return r.incarnation

        async def on_ready(host: str, port: int, incarnation: int) -> None:
            r.address, r.alive = (host, port), True
            await asyncio.wait_for(self._connect(r, incarnation), self.connect_timeout)

        def on_exit(code: int | None, reason: str) -> None:
            r.alive, r.pid, r.exit_code, r.reason = False, None, code, reason
            if r.reconnect is not None:
                r.reconnect.cancel()
            if r.conn is not None:
                r.conn.lost(reason)
            self._notify()

        try:
            await self.orchestrator.ensure_replica(replica_id, str(size), on_start, on_ready,
                                                   on_exit, config=config)
        except BaseException:
            self.replicas.pop(replica_id, None)
            raise

    def set_logging(self, replica_id: str, logging: dict[str, Any] | None) -> None:
        """A replica's logging configuration changed: it applies it now, and every later
        CreateInstance carries it."""
        r = self.replicas.get(replica_id)
        if r is None or r.logging == logging:
            return
        r.logging = logging
        if r.conn is not None and not r.conn.closed:
            r.conn.out.send_nowait({"type": P.UPDATE_LOGGING, "logging": logging})

    async def drop_replica(self, replica_id: str) -> None:
        r = self.replicas.pop(replica_id, None)
        if r is None:
            return
        if r.reconnect is not None:
            r.reconnect.cancel()
        await self.orchestrator.drop_replica(replica_id)
        if r.conn is not None:
            r.conn.lost("replica dropped")
        self._dataflows.on_replica_dropped(replica_id)
        self._notify()

    async def _watch_heartbeats(self, every: float = 1.0) -> None:
        """Replace connected replicas whose heartbeats stopped. A round that itself ran late
        (this event loop was busy, so Status messages may be queued unread) decides nothing."""
        loop = asyncio.get_running_loop()
        while not self._stopping:
            due = loop.time() + every
            await asyncio.sleep(every)
            if loop.time() - due > every:
                continue
            now = time.time()
            for r in list(self.replicas.values()):
                silent = now - (r.last_heartbeat or now)
                if r.conn is None or r.conn.closed or not r.alive or silent <= self.heartbeat_timeout:
                    continue
                reason = f"not responding: no heartbeat for {silent:.0f}s"
                if self.orchestrator.replace_replica(r.replica_id, reason):
                    log.warning("replica %s incarnation %s: %s; replacing it", r.replica_id,
                                r.incarnation, reason)

    async def stop(self) -> None:
        self._stopping = True
        if self._watchdog is not None:
            self._watchdog.cancel()
        await asyncio.gather(*(self.drop_replica(r) for r in list(self.replicas)),
                             return_exceptions=True)

    def replica_statuses(self) -> list[ReplicaStatus]:
        return [
            ReplicaStatus(
                r.cluster_id, r.replica_id, r.size, "online" if r.conn is not None else "offline",
                r.incarnation, r.pid, r.last_heartbeat, r.ui_url,
                f"{r.address[0]}:{r.address[1]}" if r.address else None,
                None if r.conn is not None else r.reason, r.exit_code)
            for r in self.replicas.values()
        ]

    async def wait_for_replicas(self, cluster_id: str, timeout: float | None = None) -> int:
        """Wait until some replica of the cluster is online; returns how many are."""
        return len(await self.ready_connections(cluster_id, timeout))

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def _connect(self, r: ReplicaState, incarnation: int) -> None:
        assert r.address is not None
        reader, writer = await asyncio.open_connection(*r.address)
        conn = ReplicaConnection(self, r, reader, writer)
        extra: dict[str, Any] = {"writer_epoch": self._dataflows.next_epoch(r.cluster_id)}
        if self.storage_config:
            extra["storage"] = self.storage_config
        if r.logging is not None:
            extra["logging"] = r.logging
        try:
            hello = await conn.handshake(incarnation, extra)
        except BaseException:
            writer.close()
            raise
        if r.conn is not None:
            r.conn.lost("replaced by a new connection")
        r.conn, r.pid, r.reason = conn, hello.get("pid"), None
        r.ui_url = hello.get("ui_url")
        r.last_heartbeat = time.time()
        current = self._dataflows.writer_epoch(r.cluster_id)
        if current is not None and current > extra["writer_epoch"]:
            # a peer connected during our handshake: its SetWriterEpoch missed us (we had no
            # connection yet), and an older epoch would leave our dataflows fenced for good
            conn.out.send_nowait({"type": P.SET_WRITER_EPOCH, "epoch": current})
        conn.start()
        self._dataflows.on_connected(conn)
        log.info("replica %s incarnation %d online (pid %s, Spark UI %s)", r.replica_id,
                 incarnation, r.pid, r.ui_url)
        self._notify()

    def on_dataflow_message(self, conn: ReplicaConnection, msg: P.Message) -> bool:
        return self._dataflows.on_message(conn, msg)

    def on_connection_lost(self, conn: ReplicaConnection, reason: str) -> None:
        self._dataflows.on_lost(conn)
        r = conn.replica
        if r.conn is not conn:
            return
        r.conn, r.reason = None, reason
        log.warning("replica %s offline: %s", r.replica_id, reason)
        self._notify()
        if (r.alive and not self._stopping and self.replicas.get(r.replica_id) is r
                and (r.reconnect is None or r.reconnect.done())):
            r.reconnect = asyncio.create_task(self._reconnect(r))

    async def _reconnect(self, r: ReplicaState, attempts: int = 10) -> None:
        """The process lives but the socket broke: dial it again until it exits."""
        delay = 0.2
        for _ in range(attempts):
            await asyncio.sleep(delay)
            if not r.alive or r.conn is not None or r.incarnation is None:
                return
            try:
                await asyncio.wait_for(self._connect(r, r.incarnation), self.connect_timeout)
                return
            except (OSError, P.ProtocolError, TimeoutError) as e:
                log.info("replica %s: reconnect failed: %s", r.replica_id, e)
            delay = min(delay * 2, 5.0)

    async def ready_connections(self, cluster_id: str, timeout: float | None = None,
                                replica_id: str | None = None) -> list[ReplicaConnection]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.ready_timeout if timeout is None else timeout)
        while True:
            replicas = [r for r in self.replicas.values() if r.cluster_id == cluster_id
                        and (replica_id is None or r.replica_id == replica_id)]
            if not replicas:
                raise WeirError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE,
                                f"cluster '{cluster_id}' has no replicas")
            conns = [r.conn for r in replicas if r.conn is not None and not r.conn.closed]
            if conns:
                return conns
            changed, remaining = self._changed, deadline - loop.time()
            try:
                if remaining <= 0:
                    raise TimeoutError
                await asyncio.wait_for(changed.wait(), remaining)
            except TimeoutError:
                states = ", ".join(f"{r.replica_id}: {r.reason or 'offline'}" for r in replicas)
                raise WeirError(SqlState.CANNOT_CONNECT_NOW,
                                f"cluster '{cluster_id}' has no ready replicas",
                                detail=f"Replica states: {states}.",
                                hint="Replicas may still be starting; try again shortly.") from None

    # -- peeks ------------------------------------------------------------

    async def peek(self, cluster_id: str, sql: str, inputs: Sequence[Mapping[str, Any]],
                   timestamp: int | None, replica_id: str | None = None) -> PeekResult:
        """Run `sql` over `inputs` on the cluster (only on `replica_id` when given: a
        targeted read); rows stream in `PeekResult.batches`."""
        body = {"type": P.PEEK, "sql": sql, "inputs": [dict(i) for i in inputs],
                "timestamp": timestamp, "_id": next(self._ids)}
        if replica_id is not None:
            body["_replica"] = replica_id
        return await self.run_peek(cluster_id, body, 1)

    async def run_peek(self, cluster_id: str, body: dict[str, Any], attempt: int) -> PeekResult:
        while True:
            peek_id = f"{body['_id']}.{attempt}"
            conn, first, queue = await self._issue(cluster_id, peek_id, body)
            if conn is not None and first is not None:
                status = first.body.get("status")
                if status == "error":
                    raise _weir_error(first.body.get("error"))
                schema = P.schema_from_ipc(first.attachments[0])
                stream = BatchStream(self, cluster_id, body, peek_id, conn, queue, schema, attempt)
                return PeekResult(schema, stream, conn.replica.replica_id, peek_id)
            if attempt >= self.peek_attempts:
                raise await self._all_failed(cluster_id, "running this query", attempt)
            attempt += 1

    async def peek_index(self, cluster_id: str, index_id: str, timestamp: int,
                         fast_path: Mapping[str, Any]) -> PeekResult:
        """A fast-path peek at index `index_id`'s arrangement, on the replica furthest
        ahead with it (no Spark job). Raises WeirError with detail "not-fast-path" when
        the arrangement cannot answer (not installed, not caught up)."""
        df = self._dataflows.dataflows.get(index_id)
        if df is None or df.cluster_id != cluster_id:
            raise WeirError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE, f"index {index_id} is not installed",
                            detail="not-fast-path")
        if not any(f > 0 for f in df.frontiers.values()):
            raise WeirError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE, f"index {index_id} is not hydrated yet",
                            detail="not-fast-path")
        conns = await self.ready_connections(cluster_id)
        best = max(conns, key=lambda c: (df.frontiers.get(c.replica.replica_id, 0) > timestamp,
                                         df.frontiers.get(c.replica.replica_id, 0)))
        body = {"type": P.PEEK, "index": index_id, "timestamp": timestamp, **fast_path,
                "_id": next(self._ids), "_conns": [best]}
        return await self.run_peek(cluster_id, body, self.peek_attempts)

    async def _issue(self, cluster_id: str, peek_id: str, body: dict[str, Any]
                     ) -> tuple[ReplicaConnection | None, P.Message | None, asyncio.Queue[PeekEvent]]:
        """Send the peek to every ready replica; the first rows or error wins."""
        conns = body.get("_conns") or await self.ready_connections(cluster_id, replica_id=body.get("_replica"))
        queue: asyncio.Queue[PeekEvent] = asyncio.Queue()
        wire = {k: v for k, v in body.items() if not k.startswith("_")}
        sent = [c for c in conns if c.send_peek(peek_id, queue, wire)]
        remaining = set(sent)
        try:
            while remaining:
                conn, msg = await queue.get()
                if conn not in remaining:
                    continue
                if msg is None or (msg.type == P.PEEK_RESPONSE and msg.body.get("status") == "canceled"):
                    remaining.discard(conn)
                    conn.peeks.pop(peek_id, None)
                    continue
                if msg.type != P.PEEK_RESPONSE:
                    continue
                for other in sent:
                    if other is not conn:
                        other.cancel_peek(peek_id)
                return conn, msg, queue
            return None, None, queue
        except BaseException:
            for c in sent:
                c.cancel_peek(peek_id)
            raise

    async def describe(self, cluster_id: str, sql: str,
                       inputs: Sequence[Mapping[str, Any]]) -> pa.Schema:
        """The result schema of `sql` (analysis only, nothing runs)."""
        body = {"type": P.DESCRIBE, "sql": sql, "inputs": [dict(i) for i in inputs]}
        for _ in range(self.peek_attempts):
            conns = await self.ready_connections(cluster_id)
            conn = max(conns, key=lambda c: c.replica.last_heartbeat or 0.0)
            request_id = f"d{next(self._ids)}"
            fut = conn.describe(request_id, body)
            try:
                msg = await fut
            except ReplicaGone:
                continue
            finally:
                conn.describes.pop(request_id, None)
            if msg.body.get("status") != "ok":
                raise _weir_error(msg.body.get("error"))
            return P.schema_from_ipc(msg.attachments[0])
        raise await self._all_failed(cluster_id, "describing this query", self.peek_attempts)

    async def _all_failed(self, cluster_id: str, doing: str, attempts: int) -> WeirError:
        """The error for a query that outlived its replicas, saying how they ended."""
        replicas = [r for r in self.replicas.values() if r.cluster_id == cluster_id]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 2.0  # let the orchestrator see the exits (e.g. oom-killed)
        while loop.time() < deadline and any(r.alive and r.conn is None for r in replicas):
            await asyncio.sleep(0.1)
        states = ", ".join(f"{r.replica_id}: {r.reason or 'online'}" for r in replicas)
        oom = any(r.reason == "oom-killed" for r in replicas)
        return WeirError(SqlState.OUT_OF_MEMORY if oom else SqlState.INTERNAL_ERROR,
                         f"every replica of cluster '{cluster_id}' failed while {doing}",
                         detail=f"{attempts} attempts. Replica states: {states}.")

    # -- dataflows (materialized views) -----------------------------------

    async def create_dataflow(self, cluster_id: str, dataflow_id: str, sql: str,
                              inputs: Sequence[Mapping[str, Any]], output_shard_id: str, as_of: int,
                              strategy: str = "recompute", index: Mapping[str, Any] | None = None,
                              errors_shard_id: str | None = None, thresholds_sql: str | None = None,
                              since: int | None = None, name: str | None = None,
                              plan_nodes: Sequence[Sequence[Any]] | None = None,
                              row_counts: Sequence[Sequence[Any]] | None = None, min_updates: int = 0) -> str:
        """Install a materialized-view dataflow on every replica of the cluster, now and
        whenever one (re)connects. Returns once a replica accepted it, with the strategy it
        runs ("linear" falls back to "recompute" for non-linear queries); raises WeirError
        if the query cannot run. `inputs`: [{"name", "shard_id", "columns"?}]. An index passes
        `index` (its export: keys, columns, direct) and no output shard. A view passing
        `errors_shard_id` has its query's data errors recorded there instead of retried; one
        with a temporal filter passes the query of its rows' flip times (`thresholds_sql`).
        `since`: a first AllowCompaction that travels with it (an index keeps history from
        there from its first step). `name`: the object's name, for the replica's introspection.
        `plan_nodes`: its plan, pinned when it was first created (`plan_nodes(dataflow_id)`
        says it after that); `row_counts`: what its plan nodes produced in its last completed
        hydration (`take_row_counts()` says when that changes), the replicas' expectations.
        `min_updates`: an incremental strategy recomputes instead while its inputs hold fewer
        updates and its state is not built."""
        return await self._dataflows.create(cluster_id, dataflow_id, sql, inputs, output_shard_id,
                                            as_of, strategy, index, errors_shard_id, thresholds_sql, since, name,
                                            plan_nodes, row_counts, min_updates)

    def plan_nodes(self, dataflow_id: str) -> list[list[Any]] | None:
        """The dataflow's pinned plan [[plan node id, operator, parent id], ...], once known."""
        df = self._dataflows.dataflows.get(dataflow_id)
        return None if df is None else df.plan_nodes

    def take_row_counts(self) -> dict[str, list[list[Any]]]:
        """dataflow id -> [[plan node id, [rows per worker]], ...] of the hydrations that
        replicas completed (by running the query) since the last call."""
        return self._dataflows.take_row_counts()

    async def drop_dataflow(self, cluster_id: str, dataflow_id: str) -> None:
        """Uninstall it; returns once the connected replicas stopped it (or 30 s passed)."""
        await self._dataflows.drop(cluster_id, dataflow_id)

    def allow_compaction(self, cluster_id: str, dataflow_id: str, since: int) -> None:
        """Nothing will read the dataflow's output before `since` (replays start there)."""
        self._dataflows.allow_compaction(cluster_id, dataflow_id, since)

    def update_input_frontiers(self, uppers: Mapping[str, int]) -> None:
        """Announce the uppers of shards the coordinator writes to every replica."""
        self._dataflows.update_input_frontiers(uppers)

    def writer_epoch(self, cluster_id: str) -> int | None:
        """The writer epoch the cluster's dataflow appends carry now."""
        return self._dataflows.writer_epoch(cluster_id)

    def write_frontiers(self) -> dict[str, dict[str, int]]:
        """dataflow id -> replica id -> the output upper that replica last reported."""
        return self._dataflows.write_frontiers()

    def dataflow_errors(self) -> dict[str, dict[str, dict[str, Any]]]:
        """dataflow id -> replica id -> its last DataflowError (cleared when it progresses)."""
        return {d: dict(df.errors) for d, df in self._dataflows.dataflows.items() if df.errors}

    def error_counts(self) -> dict[str, dict[str, int]]:
        """dataflow id -> replica id -> how many runtime errors its export holds now."""
        return {d: dict(df.error_counts) for d, df in self._dataflows.dataflows.items()}

    def dataflow_definitions(self) -> dict[str, Any]:
        """dataflow id -> what was installed (inputs) and each replica's write frontier."""
        return dict(self._dataflows.dataflows)

    def dataflow_statuses(self) -> dict[str, dict[str, dict[str, Any]]]:
        """dataflow id -> replica id -> what that replica's last heartbeat said of it
        (protocol Status: counters; an index's history_bytes and history_floor)."""
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for rid, r in list(self.replicas.items()):
            if r.conn is None or r.conn.closed:
                continue  # a replica that is down keeps nothing
            for did, st in (r.last_status.get("dataflows") or {}).items():
                out.setdefault(did, {})[rid] = st
        return out

    def dataflow_strategy(self, dataflow_id: str) -> dict[str, tuple[str, str]]:
        """replica id -> the strategy it runs the dataflow by, and its explanation (the state
        it keeps; why not the strategy asked for)."""
        df = self._dataflows.dataflows.get(dataflow_id)
        if df is None:
            return {}
        return {r: (s, df.explanations.get(r, "")) for r, s in df.strategies.items()}
