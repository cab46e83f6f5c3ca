"""The compute controller's dataflow bookkeeping (coordinator side).

It remembers the dataflows installed on each cluster and replays them to every
replica that connects (again), the input uppers the coordinator announced, and
what replicas report (write frontiers, errors). It also hands out **writer
epochs**: every (re)connection of a replica bumps its cluster's epoch, which
goes to the new connection in CreateInstance and to the cluster's other
replicas in SetWriterEpoch. All replicas of a cluster write the same output
shards, so their epochs must agree: a per-replica incarnation would let one
restarted replica fence its live peers. A zombie (an older process of a
replica, cut off from the controller) never learns a newer epoch, so the first
append with a newer one fences it. Epochs are `base * 1_000_000 + n`, `base`
being the environment epoch the controller was given (or its start time in
milliseconds), so they also grow across coordinator restarts.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from weir.compute import protocol as P
from weir.errors import SqlState, WeirError

if TYPE_CHECKING:
    from weir.compute.controller.compute_controller import ComputeController
    from weir.compute.controller.connection import ReplicaConnection

log = logging.getLogger(__name__)

EPOCH_STRIDE = 1_000_000
DROP_TIMEOUT = 30.0


@dataclass
class Hydration:
    """One replica's hydration of one dataflow, as its responses say (unix seconds):
    `started` when the dataflow went to the replica's connection (None while it has no
    connection), `done` at the first Frontiers saying it hydrated."""

    started: float | None
    done: float | None = None

    @property
    def time_ns(self) -> int | None:
        if self.started is None or self.done is None:
            return None
        return max(0, int((self.done - self.started) * 1e9))


@dataclass
class InstalledDataflow:
    cluster_id: str
    dataflow_id: str
    sql: str
    inputs: list[dict[str, Any]]
    output_shard_id: str
    as_of: int
    strategy: str
    index: dict[str, Any] | None = None  # an index's export (arrangement in replica memory)
    errors_shard_id: str | None = None  # a materialized view's runtime errors (as data)
    thresholds_sql: str | None = None  # a temporal filter's flip times (weir.sql.temporal)
    since: int | None = None
    name: str | None = None  # the object's name (replica introspection names its dataflow after it)
    min_updates: int = 0  # an incremental strategy recomputes while its inputs hold fewer updates
    frontiers: dict[str, int] = field(default_factory=dict)  # replica id -> write frontier
    strategies: dict[str, str] = field(default_factory=dict)  # replica id -> strategy it runs
    explanations: dict[str, str] = field(default_factory=dict)  # replica id -> how it runs it, the state kept
    errors: dict[str, dict[str, Any]] = field(default_factory=dict)  # replica id -> last error
    error_counts: dict[str, int] = field(default_factory=dict)  # replica id -> errors it holds now
    hydration: dict[str, Hydration] = field(default_factory=dict)  # replica id -> its hydration
    # replica id -> (plan node id, worker) -> its progress, as its HydrationStatus responses say
    operators: dict[str, dict[tuple[int, int], P.HydrationProgress]] = field(default_factory=dict)
    # the plan's nodes [[id, operator, parent id], ...], pinned when a replica first created it
    plan_nodes: list[list[Any]] | None = None
    # rows per plan node and worker of the last hydration a replica completed by running the
    # query ([[id, [rows on worker 0, ...]], ...]): the next hydrations' expectations
    row_counts: list[list[Any]] | None = None
    counted: bool = False  # row_counts changed since the coordinator last took them
    created: asyncio.Future[dict[str, Any]] | None = None

    def command(self) -> dict[str, Any]:
        """CreateDataflow, resuming from the furthest output upper seen (the replica reads
        the output shard from there instead of recomputing from the original as_of); an
        index with a since, from its since."""
        if self.index is not None and self.since is not None:
            as_of = max(self.as_of, self.since)  # an index rebuilds the history it was asked to keep
        else:
            as_of = max(self.as_of, self.since or 0, max(self.frontiers.values(), default=0) - 1)
        output: dict[str, Any] = {"index": self.index} if self.index is not None else \
            {"shard_id": self.output_shard_id}
        if self.errors_shard_id is not None:
            output["errors_shard_id"] = self.errors_shard_id
        command = {"type": P.CREATE_DATAFLOW, "dataflow_id": self.dataflow_id, "sql": self.sql,
                   "inputs": self.inputs, "output": output, "as_of": as_of, "strategy": self.strategy}
        if self.thresholds_sql is not None:
            command["thresholds_sql"] = self.thresholds_sql
        if self.since is not None:
            command["since"] = self.since
        if self.name is not None:
            command["name"] = self.name
        if self.plan_nodes is not None:
            command["plan_nodes"] = self.plan_nodes
        if self.row_counts is not None:
            command["row_counts"] = self.row_counts
        if self.min_updates:
            command["min_updates"] = self.min_updates
        return command


class DataflowControl:
    def __init__(self, controller: ComputeController, epoch: int | None = None) -> None:
        self._ctl = controller
        self.dataflows: dict[str, InstalledDataflow] = {}
        self.uppers: dict[str, int] = {}
        self._epoch_base = (epoch if epoch is not None else int(time.time() * 1000)) * EPOCH_STRIDE
        self._epoch_n = 0
        self._cluster_epochs: dict[str, int] = {}
        self._drops: dict[tuple[int, str], asyncio.Future[None]] = {}

    # -- epochs and connections ------------------------------------------------------------

    def next_epoch(self, cluster_id: str) -> int:
        """A new writer epoch for the cluster (a replica is connecting); tells the others."""
        self._epoch_n += 1
        epoch = self._epoch_base + self._epoch_n
        self._cluster_epochs[cluster_id] = epoch
        for conn in self._conns(cluster_id):
            conn.out.send_nowait({"type": P.SET_WRITER_EPOCH, "epoch": epoch})
        return epoch

    def writer_epoch(self, cluster_id: str) -> int | None:
        return self._cluster_epochs.get(cluster_id)

    def _conns(self, cluster_id: str) -> list[ReplicaConnection]:
        return [r.conn for r in self._ctl.replicas.values()
                if r.cluster_id == cluster_id and r.conn is not None and not r.conn.closed]

    def on_connected(self, conn: ReplicaConnection) -> None:
        """Replay the announced uppers and the cluster's dataflows to a new connection."""
        if self.uppers:
            conn.out.send_nowait({"type": P.UPDATE_INPUT_FRONTIERS, "uppers": dict(self.uppers)})
        for df in self.dataflows.values():
            if df.cluster_id == conn.replica.cluster_id:
                conn.out.send_nowait(df.command())
                df.hydration[conn.replica.replica_id] = Hydration(time.time())  # it hydrates anew
                df.operators.pop(conn.replica.replica_id, None)  # its statuses come again
                if df.since is not None:
                    conn.out.send_nowait({"type": P.ALLOW_COMPACTION, "dataflow_id": df.dataflow_id,
                                          "since": df.since})

    def on_lost(self, conn: ReplicaConnection) -> None:
        for key, fut in list(self._drops.items()):
            if key[0] == id(conn) and not fut.done():
                fut.set_result(None)
        replica = conn.replica
        if replica.conn is conn or replica.conn is None:  # not a connection already replaced
            for df in self.dataflows.values():
                if replica.replica_id in df.hydration:
                    df.hydration[replica.replica_id] = Hydration(None)  # serves nothing until back
                df.operators.pop(replica.replica_id, None)

    def on_replica_dropped(self, replica_id: str) -> None:
        for df in self.dataflows.values():
            df.frontiers.pop(replica_id, None)
            df.strategies.pop(replica_id, None)
            df.explanations.pop(replica_id, None)
            df.errors.pop(replica_id, None)
            df.error_counts.pop(replica_id, None)
            df.hydration.pop(replica_id, None)
            df.operators.pop(replica_id, None)

    def on_message(self, conn: ReplicaConnection, msg: P.Message) -> bool:
        """Handle a dataflow response; False if `msg` is not one."""
        kind, body = msg.type, msg.body
        if kind not in (P.FRONTIERS, P.DATAFLOW_CREATED, P.DATAFLOW_ERROR, P.DATAFLOW_DROPPED,
                        P.HYDRATION_STATUS):
            return False
        dataflow_id = str(body.get("dataflow_id"))
        replica_id = conn.replica.replica_id
        if kind == P.DATAFLOW_DROPPED:
            fut = self._drops.pop((id(conn), dataflow_id), None)
            if fut is not None and not fut.done():
                fut.set_result(None)
            return True
        df = self.dataflows.get(dataflow_id)
        if df is None or df.cluster_id != conn.replica.cluster_id:
            return True  # dropped meanwhile
        if kind == P.FRONTIERS:
            frontier = int(body.get("write_frontier", 0))
            advanced = frontier > max(df.frontiers.values(), default=0)
            df.frontiers[replica_id] = max(frontier, df.frontiers.get(replica_id, 0))
            if advanced and df.index is None and self._ctl.on_write_frontier is not None:
                self._ctl.on_write_frontier(df.output_shard_id, df.errors_shard_id, frontier)
            df.errors.pop(replica_id, None)
            if body.get("error_count") is not None:
                df.error_counts[replica_id] = int(body["error_count"])
            h = df.hydration.setdefault(replica_id, Hydration(time.time()))
            if body.get("hydrated") and h.done is None:
                h.done = time.time()
            elif body.get("hydrated") is False and h.done is not None:
                df.hydration[replica_id] = Hydration(time.time())  # rehydrating
        elif kind == P.HYDRATION_STATUS:
            ops = {} if body.get("reset") else df.operators.get(replica_id, {})
            for update in body.get("updates") or ():
                k, progress = P.HydrationProgress.from_wire(update)
                ops[k] = progress
            df.operators[replica_id] = ops
            if body.get("final"):
                df.row_counts, df.counted = P.row_counts_to_wire(P.row_counts(ops)), True
        elif kind == P.DATAFLOW_CREATED:
            df.strategies[replica_id] = str(body.get("strategy"))
            df.explanations[replica_id] = str(body.get("explanation") or "")
            if df.plan_nodes is None and body.get("plan_nodes"):
                df.plan_nodes = [list(n) for n in body["plan_nodes"]]
            if df.created is not None and not df.created.done():
                df.created.set_result(body)
        else:
            df.errors[replica_id] = dict(body)
            log.warning("dataflow %s on replica %s: %s", dataflow_id, replica_id, body.get("message"))
            if body.get("at") == "create" and df.created is not None and not df.created.done():
                df.created.set_result(body)
        return True

    # -- API -------------------------------------------------------------------------------

    async def create(self, cluster_id: str, dataflow_id: str, sql: str,
                     inputs: Sequence[Mapping[str, Any]], output_shard_id: str, as_of: int,
                     strategy: str, index: Mapping[str, Any] | None = None,
                     errors_shard_id: str | None = None, thresholds_sql: str | None = None,
                     since: int | None = None, name: str | None = None,
                     plan_nodes: Sequence[Sequence[Any]] | None = None,
                     row_counts: Sequence[Sequence[Any]] | None = None, min_updates: int = 0) -> str:
        if dataflow_id in self.dataflows:
            raise WeirError(SqlState.DUPLICATE_OBJECT, f"dataflow {dataflow_id} already exists")
        conns = await self._ctl.ready_connections(cluster_id)
        df = InstalledDataflow(cluster_id, dataflow_id, sql, [dict(i) for i in inputs],
                               output_shard_id, int(as_of), strategy,
                               dict(index) if index is not None else None, errors_shard_id,
                               thresholds_sql, since, name, min_updates)
        df.plan_nodes = [list(n) for n in plan_nodes] if plan_nodes else None
        df.row_counts = P.row_counts_to_wire(P.row_counts_from_wire(row_counts)) if row_counts else None
        df.created = asyncio.get_running_loop().create_future()
        self.dataflows[dataflow_id] = df
        command = df.command()
        for conn in conns:
            conn.out.send_nowait(command)
            df.hydration[conn.replica.replica_id] = Hydration(time.time())
        try:
            # Replicas that reconnect meanwhile get it replayed and answer too.
            answer = await asyncio.wait_for(asyncio.shield(df.created), self._ctl.ready_timeout)
        except TimeoutError:
            await self.drop(cluster_id, dataflow_id, wait=False)
            raise WeirError(SqlState.CANNOT_CONNECT_NOW,
                            f"no replica of cluster '{cluster_id}' installed dataflow {dataflow_id} "
                            f"within {self._ctl.ready_timeout:.0f}s") from None
        except BaseException:
            await self.drop(cluster_id, dataflow_id, wait=False)
            raise
        if answer.get("type") == P.DATAFLOW_ERROR:
            await self.drop(cluster_id, dataflow_id, wait=False)
            raise WeirError(str(answer.get("sqlstate") or SqlState.INTERNAL_ERROR),
                            str(answer.get("message") or "the dataflow could not be created"),
                            detail=answer.get("detail"), hint=answer.get("hint"))
        return str(answer.get("strategy") or strategy)

    async def drop(self, cluster_id: str, dataflow_id: str, wait: bool = True) -> None:
        df = self.dataflows.get(dataflow_id)
        if df is None or df.cluster_id != cluster_id:
            return
        del self.dataflows[dataflow_id]
        if df.created is not None and not df.created.done():
            df.created.cancel()
        waits = []
        loop = asyncio.get_running_loop()
        for conn in self._conns(cluster_id):
            if wait:
                fut: asyncio.Future[None] = loop.create_future()
                self._drops[(id(conn), dataflow_id)] = fut
                waits.append(fut)
            conn.out.send_nowait({"type": P.DROP_DATAFLOW, "dataflow_id": dataflow_id})
        if waits:
            done, pending = await asyncio.wait(waits, timeout=DROP_TIMEOUT)
            for fut in pending:
                fut.cancel()
            if pending:
                log.warning("dataflow %s: %d replicas did not confirm the drop", dataflow_id,
                            len(pending))
        for key in [k for k in self._drops if k[1] == dataflow_id]:
            self._drops.pop(key, None)

    def allow_compaction(self, cluster_id: str, dataflow_id: str, since: int) -> None:
        df = self.dataflows.get(dataflow_id)
        if df is None or df.cluster_id != cluster_id:
            return
        df.since = max(df.since or 0, int(since))
        for conn in self._conns(cluster_id):
            conn.out.send_nowait({"type": P.ALLOW_COMPACTION, "dataflow_id": dataflow_id,
                                  "since": df.since})

    def update_input_frontiers(self, uppers: Mapping[str, int]) -> None:
        changed = {}
        for shard_id, upper in uppers.items():
            if int(upper) > self.uppers.get(shard_id, 0):
                self.uppers[shard_id] = int(upper)
                changed[shard_id] = int(upper)
        if not changed:
            return
        body = {"type": P.UPDATE_INPUT_FRONTIERS, "uppers": changed}
        for r in self._ctl.replicas.values():
            if r.conn is not None and not r.conn.closed:
                r.conn.out.send_nowait(body)

    def take_row_counts(self) -> dict[str, list[list[Any]]]:
        """dataflow id -> its row counts, for those a hydration completed since the last call."""
        out = {}
        for d, df in self.dataflows.items():
            if df.counted and df.row_counts is not None:
                out[d], df.counted = df.row_counts, False
        return out

    def write_frontiers(self) -> dict[str, dict[str, int]]:
        return {d: dict(df.frontiers) for d, df in self.dataflows.items()}
