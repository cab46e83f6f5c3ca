"""The coordinator: owns the catalog, the timestamp oracle, sessions, and both
controllers; everything pgwire asks of weir goes through here."""

from __future__ import annotations

import asyncio
import collections
import datetime as dt
import ipaddress
import itertools
import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa

from weir.adapter import api, system_reads, temporary
from weir.adapter.builtin_tables import BuiltinWriter
from weir.adapter.oracle import TimestampOracle
from weir.adapter.replica_health import ReplicaHealth
from weir.adapter.resolver import CatalogResolver
from weir.adapter.session import Session
from weir.catalog import Catalog
from weir.catalog.builtins import BUILTIN_TABLES, BuiltinTable
from weir.catalog.model import ColumnDef, Item
from weir.catalog.vars import lookup_var
from weir.errors import SqlState, WeirError
from weir.sql import parse as sqlparse
from weir.sql import statements as st

log = logging.getLogger(__name__)


@dataclass
class ServerConfig:
    data_dir: Path = Path("weir-data")
    host: str = "127.0.0.1"
    sql_port: int = 6875
    http_port: int = 6876
    catalog_url: str | None = None
    auth: str = "trust"  # trust on loopback; 'password' or 'scram-sha-256' elsewhere/always
    auth_loopback_trust: bool = True
    tls_cert: str | None = None
    tls_key: str | None = None
    tick_ms: int = 1000
    replica_sizes: dict[str, Any] = field(default_factory=dict)
    replica_heartbeat_timeout: float = 30.0  # seconds without a heartbeat before a replica is replaced
    replica_kill_grace: float = 0.0  # seconds an unresponsive replica is left before SIGKILL

    @property
    def catalog_uri(self) -> str:
        return self.catalog_url or f"sqlite:///{(self.data_dir / 'catalog.db').resolve()}"


class Coordinator(api.Coordinator):
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.started_at = dt.datetime.now(dt.UTC)  # pg_postmaster_start_time()
        self.sessions: dict[int, Session] = {}
        self._conn_ids = itertools.count(1)
        self._table_locks: dict[str, asyncio.Lock] = collections.defaultdict(asyncio.Lock)
        self.builtins = BuiltinWriter(self)
        self.system_reads = system_reads.Engine()  # queries over system relations, in process
        self._system_vars: dict[str, str] | None = None
        self.system_var_version = 0  # bumped by ALTER SYSTEM (caches of derived values key on it)
        self._status_task: asyncio.Task[None] | None = None
        self._frontier_task: asyncio.Task[None] | None = None
        self.source_runners: dict[str, Any] = {}
        self.dataflow_holds: dict[str, Any] = {}
        self.index_cache: dict[str, Any] = {}  # indexes by (on, cluster), per catalog generation
        self.index_sinces: dict[str, int] = {}  # index id -> the since its replicas were allowed
        self.index_as_ofs: dict[str, int] = {}  # index id -> the time its dataflow hydrated at
        self.acl_cache: Any = None  # weir.adapter.privileges.Acl of the current catalog
        self.visible_cache: dict[tuple[int, str], list[str]] = {}  # (generation, role) -> privileges.visible_objects
        self.lookup_cache: dict[Any, Any] = {}  # name -> relation, per catalog generation
        self._background: set[asyncio.Task[None]] = set()
        self.plan_cache: dict[Any, Any] = {}  # see weir.adapter.planning
        from weir.adapter.dataflow_errors import DataflowErrors

        self.dataflow_errors = DataflowErrors(self)  # materialized views' runtime errors
        self._errors_task: asyncio.Task[None] | None = None
        self._cluster_ids: tuple[int, dict[str, Any]] = (-1, {})
        from weir.adapter.statement_log import StatementLog

        self.statement_log = StatementLog(self)
        from weir.adapter.holds import Holds

        self.holds = Holds(self)  # HOLD objects' read holds (weir.adapter.holds)
        from weir.adapter.durable_subscriptions import DurableSubscriptions

        self.durable_subscriptions = DurableSubscriptions(self)
        self.health = ReplicaHealth(self)  # mz_cluster_replica_metrics, utilization, mz_dataflow_lag, hydration
        self.catalog: Catalog
        self.oracle: TimestampOracle
        self.storage: Any
        self.compute: Any
        self.orchestrator: Any

    # ---- lifecycle -------------------------------------------------------------------
    async def start(self) -> None:
        from weir.compute.controller import ComputeController
        from weir.orchestrator.process import ProcessOrchestrator
        from weir.storage.controller import StorageController
        from weir.storage.persist import ShardStore

        data = self.config.data_dir.resolve()
        data.mkdir(parents=True, exist_ok=True)
        loop = asyncio.get_running_loop()
        self.catalog = await loop.run_in_executor(None, Catalog, self.config.catalog_uri)
        store = await loop.run_in_executor(
            None, lambda: ShardStore(self.config.catalog_uri, str(data / "warehouse")))
        self.oracle = TimestampOracle(self.catalog.oracle_get, self.catalog.oracle_set)
        epoch = self.catalog.bump_epoch()  # this coordinator's writer epoch (fences older ones)
        temporary.forget_crashed_sessions(self.catalog)  # their shards go with the orphans below
        self.storage = StorageController(store, self.oracle, data / "wal", epoch=epoch,
                                         tick_ms=self.config.tick_ms)
        tables = self.catalog.list_items("table")
        for item in tables:
            await self.storage.ensure_collection(item.id, [(c.name, c.type, c.nullable) for c in item.columns])
        for b in BUILTIN_TABLES:
            await self.storage.ensure_collection(b.id, [(name, t, True) for name, t in b.columns])
        sources = [i for i in self.catalog.list_items("source") if "introspection_log" not in i.definition]
        for item in sources:
            await self.storage.ensure_collection(item.id, [(c.name, c.type, c.nullable) for c in item.columns])
        from weir.adapter import constant_views, introspection

        mv_ids = [i.id for i in self.catalog.list_items("materialized-view")]
        for item in self.catalog.list_items("materialized-view"):
            if constant_views.is_constant(item):
                await constant_views.open_shard(self, item)
                continue
            await self.storage.ensure_collection(item.id, [(c.name, c.type, True) for c in item.columns],
                                                 external=True)
            await self.dataflow_errors.ensure(item.id, self.storage.frontiers(item.id)[1])
        await introspection.open_shards(self)
        await self.storage.replay_wal()
        await self._cleanup_orphan_shards(store, {i.id for i in tables} | {i.id for i in sources} |
                                          set(mv_ids) | self.dataflow_errors.known_shards(mv_ids) |
                                          introspection.known_shards(self))
        await introspection.ensure(self)  # replicas made before introspection existed, or by bootstrap
        from weir.adapter.holds import apply_windows

        apply_windows(self)  # RETAIN HISTORY, and durable holds, before any since moves
        self.holds.load()
        self.durable_subscriptions.load()
        self.storage.start()
        self.holds.start()
        self.durable_subscriptions.start()
        await self.builtins.open()
        await self.statement_log.recover()
        self.statement_log.start()
        from weir.adapter.sources import start_runner

        for item in self.catalog.list_items("source"):
            if "load_generator" in item.definition:
                await start_runner(self, item)
        self.orchestrator = ProcessOrchestrator(log_dir=data / "logs", kill_grace=self.config.replica_kill_grace)
        self.compute = ComputeController(self.orchestrator, storage_config={
            "catalog_uri": self.config.catalog_uri, "warehouse": str(data / "warehouse")}, epoch=epoch,
            heartbeat_timeout=self.config.replica_heartbeat_timeout)
        self.storage.on_commit.append(self._announce_frontiers)
        self.compute.on_write_frontier = self.storage.writer_advanced
        for replica in self.catalog.list_replicas():
            await self.start_replica(replica)
        self._status_task = asyncio.create_task(self._watch_replica_statuses(), name="replica-statuses")
        self.health.start()
        from weir.adapter import frontiers

        self._frontier_task = asyncio.create_task(frontiers.watch(self), name="frontiers")
        from weir.adapter import dataflow_errors

        self._errors_task = asyncio.create_task(dataflow_errors.watch(self), name="compute-error-counts")
        from weir.adapter import indexes, mviews

        restarts = [(item, mviews.restart) for item in self.catalog.list_items("materialized-view")]
        restarts += [(item, indexes.restart) for item in self.catalog.list_items("index")]
        for item, restart in restarts:
            # replicas may take a while to start Spark: resume in the background
            task = asyncio.create_task(restart(self, item), name=f"restart-{item.id}")
            self._background.add(task)
            task.add_done_callback(self._restart_done)

    def size_config(self) -> dict[str, Any] | None:
        return {"sizes": self.config.replica_sizes} if self.config.replica_sizes else None

    async def start_replica(self, replica: Any) -> None:
        rid = replica.id

        def incarnation() -> int:
            return self.catalog.bump_incarnation(rid)

        from weir.adapter import introspection

        await self.compute.add_replica(replica.cluster_id, rid, replica.size, incarnation,
                                       config=self.size_config(),
                                       logging=introspection.logging_config(self, replica))

    async def stop(self) -> None:
        for s in list(self.sessions.values()):
            s.cancel()
        await self.statement_log.stop()
        await self.holds.stop()
        await self.durable_subscriptions.stop()
        await self.health.stop()
        if self._status_task is not None:
            self._status_task.cancel()
        if self._frontier_task is not None:
            self._frontier_task.cancel()
        if self._errors_task is not None:
            self._errors_task.cancel()
        for runner in list(self.source_runners.values()):
            await runner.stop()
        try:
            await self.compute.stop()
        finally:
            await self.storage.stop()
            self.system_reads.close()
            self.catalog.close()

    async def _cleanup_orphan_shards(self, store: Any, known: set[str]) -> None:
        builtin_ids = {b.id for b in BUILTIN_TABLES}
        loop = asyncio.get_running_loop()
        for sid in await loop.run_in_executor(None, store.list_shards):
            if sid not in known and sid not in builtin_ids:
                log.info("dropping orphaned shard %s (its DDL never committed)", sid)
                await loop.run_in_executor(None, store.drop_shard, sid)

    # ---- builtin relations (weir.adapter.builtin_tables) ------------------------------
    async def catalog_changed(self) -> None:
        await self.builtins.catalog_changed()

    async def replace_builtin_item_rows(self, builtin: BuiltinTable, rows: dict[str, list[Any]]) -> None:
        await self.builtins.replace_item_rows(builtin, rows)

    async def builtin_writes_settled(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        for live in (self.holds.lag, self.durable_subscriptions.relation, *self.health.relations):  # measured when read
            if live.ids & set(ids):
                await live.refresh()
        from weir.adapter.statement_log import LIVE_SESSIONS

        if LIVE_SESSIONS is not None and LIVE_SESSIONS.id in ids:
            await self.statement_log.live_sessions_settled()
        await self.builtins.writes_settled(ids)

    def _restart_done(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("a materialized view or index could not be restarted: %s", task.exception())

    def _announce_frontiers(self, ts: int) -> None:
        """Every tick: replicas learn the uppers of the collections the coordinator writes,
        the inputs of materialized views may compact up to the views' frontiers, the
        catalog keeps their last hydrations' row counts, and indexes learn how much history
        to keep."""
        from weir.adapter import indexes, mviews

        uppers = {sid: c.upper for sid, c in self.storage.collections.items() if not c.external}
        self.compute.update_input_frontiers(uppers)
        from weir.adapter import introspection

        introspection.follow_uppers(self)
        mviews.advance_holds(self)
        mviews.pin_row_counts(self)
        indexes.allow_compaction(self)

    async def _watch_replica_statuses(self) -> None:
        """Record replica status changes in mz_cluster_replica_statuses (current) and
        mz_cluster_replica_status_history (every change). A replica whose heartbeats stop
        for HEARTBEAT_TIMEOUT_S is offline even if its connection has not closed."""
        from weir.adapter.replica_status import watch

        await watch(self)

    # ---- names -----------------------------------------------------------------------
    def resolver(self, session: Session) -> CatalogResolver:
        return CatalogResolver(self.catalog, session.database, session.search_path, session.role.superuser,
                               self.lookup_cache, self.introspection_read_time, session.temp_schema_id)

    def introspection_read_time(self, shard_id: str) -> int | None:
        """The latest complete time of a replica's introspection shard (its upper - 1): reads
        of introspection never wait for a replica, live or dead. None: nothing written yet."""
        c = self.storage.collections.get(shard_id)
        return c.upper - 1 if c is not None and c.upper > 0 else None

    def lookup_database(self, name: str) -> Any:
        db = self.catalog.find_database(name)
        if db is None:
            raise WeirError(SqlState.INVALID_CATALOG_NAME, f"unknown database '{name}'")
        return db

    def lookup_schema(self, database: str, name: str) -> Any:
        schema = self.catalog.find_schema(None, name)
        if schema is not None:
            return schema
        db = self.lookup_database(database)
        schema = self.catalog.find_schema(db.id, name)
        if schema is None:
            raise WeirError(SqlState.INVALID_SCHEMA_NAME, f"unknown schema '{name}'")
        return schema

    def _find_cluster(self, name: str) -> Any:
        """A cluster by name (None if there is none), cached per catalog generation."""
        gen, clusters = self._cluster_ids
        if gen != self.catalog.generation:
            clusters = {}
            self._cluster_ids = (self.catalog.generation, clusters)
        if name not in clusters:
            clusters[name] = self.catalog.find_cluster(name)
        return clusters[name]

    def cluster_id_by_name(self, name: str) -> str | None:
        cluster = self._find_cluster(name)
        return cluster.id if cluster is not None else None

    def current_cluster(self, session: Session) -> Any:
        name = session.get_var("cluster")
        cluster = self._find_cluster(name)
        if cluster is None:
            raise WeirError(SqlState.UNDEFINED_OBJECT, f"unknown cluster '{name}'")
        return cluster

    def ready_replica_ids(self) -> list[str]:
        return [s.replica_id for s in self.compute.replica_statuses() if s.status == "online"]

    def system_var(self, name: str) -> str:
        """Server-wide value (ALTER SYSTEM's or the default), cached: read on every statement."""
        if self._system_vars is None:
            self._system_vars = self.catalog.list_system_vars()
        v = lookup_var(name)
        return self._system_vars.get(v.name, v.default)

    def system_vars_changed(self) -> None:
        self._system_vars = None
        self.system_var_version += 1
        compute = getattr(self, "compute", None)
        if compute is not None:  # e.g. enable_compute_operator_hydration_status_logging: replicas apply it now
            from weir.adapter import introspection

            for replica in self.catalog.list_replicas():
                compute.set_logging(replica.id, introspection.logging_config(self, replica))

    @staticmethod
    @lru_cache(maxsize=2048)
    def _parse(sql: str) -> st.Statement:
        return sqlparse.parse_one(sql)

    def parse_cached(self, sql: str) -> st.Statement:
        """Parsing is pure, so identical texts share one parse (pgbench, drivers)."""
        return self._parse(sql)

    # ---- DDL storage -----------------------------------------------------------------
    async def create_table(self, schema_id: str, name: str, cols: list[ColumnDef], create_sql: str,
                           owner_id: str) -> Item:
        # The catalog names the table before its shard exists; a crash in between leaves
        # a table without a shard, which the next start creates (empty, as it was).
        item = self.catalog.create_item("table", schema_id, name, cols, create_sql, {},
                                        owner_id=owner_id)
        try:
            await self.storage.create_collection(item.id, [(c.name, c.type, c.nullable) for c in cols])
        except BaseException:
            self.catalog.drop_item(item.id)
            raise
        await self.catalog_changed()
        return item

    async def drop_storage(self, items: tuple[Item, ...]) -> None:
        from weir.adapter import mviews

        await mviews.drop_items(self, items)
        for item in items:
            if item.kind == "hold":
                self.holds.release(item.id)
            if item.kind == "durable-subscription":
                self.durable_subscriptions.release(item.id)
            if item.kind == "materialized-view":
                await self.storage.drop_collection(item.id)
                await self.dataflow_errors.drop(item.id)
            if item.kind in ("table", "source") and "introspection_log" not in item.definition:
                if item.id in self.source_runners:
                    await self.source_runners.pop(item.id).stop()
                await self.storage.drop_collection(item.id)
        if any("retain_history_ms" in item.definition for item in items):
            from weir.adapter.holds import apply_windows

            apply_windows(self)  # what the dropped objects' RETAIN HISTORY kept

    # ---- writes ----------------------------------------------------------------------
    @asynccontextmanager
    async def table_lock(self, shard_id: str) -> AsyncIterator[None]:
        """Serializes read-then-write statements (UPDATE/DELETE) on one table."""
        async with self._table_locks[shard_id]:
            yield

    async def write(self, session: Session, updates: dict[str, pa.Table], *, locked: bool = False) -> None:
        """Writes of an explicit transaction wait for COMMIT; INSERTs of an implicit one
        (statements before one Sync, or one simple-query string) for its end, so they land
        together or not at all. UPDATE/DELETE (`locked`) commit at once, under their lock."""
        txn = session.txn
        if txn is not None and txn.explicit:
            if txn.read_ts is not None:
                raise WeirError(SqlState.INVALID_TRANSACTION_STATE, "transaction in read-only mode",
                                hint="Writes are not allowed after reads in a transaction block.")
            for sid, t in updates.items():
                txn.writes.setdefault(sid, []).append(t)
            return
        if locked:
            await self.flush_implicit_writes(session)
            await self.storage.append(updates)
            return
        implicit = session.implicit_txn()
        for sid, t in updates.items():
            implicit.writes.setdefault(sid, []).append(t)

    async def flush_implicit_writes(self, session: Session) -> None:
        """A read inside an implicit transaction sees the transaction's earlier writes."""
        txn = session.txn
        if txn is not None and not txn.explicit and txn.writes:
            writes, txn.writes = txn.writes, {}
            await self.commit_writes(writes)

    async def commit_writes(self, writes: dict[str, list[pa.Table]]) -> None:
        if not writes:
            return
        merged = {sid: pa.concat_tables(ts) for sid, ts in writes.items() if sid in self.storage.collections}
        if merged:
            await self.storage.append(merged)

    # ---- sessions and auth -----------------------------------------------------------
    def auth_method(self, user: str, host: str) -> str:
        if self.config.auth == "trust":
            return "trust"
        if self.config.auth_loopback_trust and _is_loopback(host):
            return "trust"
        return self.config.auth

    def scram_verifier(self, user: str) -> str | None:
        return self.catalog.scram_verifier(user) if self.catalog.find_role(user) else None

    def check_password(self, user: str, password: str) -> bool:
        return self.catalog.find_role(user) is not None and self.catalog.verify_password(user, password)

    async def open_session(self, user: str, database: str, params: dict[str, str]) -> Session:
        role = self.catalog.find_role(user)
        if role is None:
            raise WeirError(SqlState.INVALID_AUTHORIZATION_SPECIFICATION, f'role "{user}" does not exist',
                            severity="FATAL")
        conn_id = next(self._conn_ids)
        session = Session(self, conn_id, role, database, params)
        if self.catalog.find_database(database) is None:
            session.notice(f'session database "{database}" does not exist', SqlState.INVALID_CATALOG_NAME,
                           "WARNING")
        self.sessions[conn_id] = session
        self.statement_log.session_opened(session)
        return session

    def session_closed(self, session: Session) -> None:
        if self.sessions.pop(session.connection_id, None) is not None:
            self.statement_log.session_closed(session)

    def cancel(self, connection_id: int, secret_key: int) -> None:
        session = self.sessions.get(connection_id)
        if session is not None and session.secret_key == secret_key:
            session.cancel()


def _is_loopback(host: str) -> bool:
    if not host or host.startswith("/"):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return host == "localhost"
