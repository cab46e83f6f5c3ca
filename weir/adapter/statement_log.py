"""Statement logging: a sampled, durable history of sessions, prepared statements and
statement executions, written into builtin collections (mz_internal.*_raw; users read
the views over them, see weir.catalog.builtins).

Every execution draws against the session's effective sample rate (the lower of
`statement_history_sample_rate` and the system's `statement_history_max_sample_rate`);
a sampled one records `began` (a running row: finished_at NULL) and `ended` (the
running row retracted, the finished row added). A prepared statement, and its
session, are recorded once, with the first of their executions that is sampled.

Events collect in an in-memory buffer bounded in bytes; every
`statement_log_flush_interval` the buffer is written as one group commit (one
append per relation). A failed flush keeps the buffer and retries with backoff;
what does not fit is dropped and counted, never stalling statements. At startup
executions left running by an unclean stop are marked aborted, and then and
periodically, executions older than `statement_log_max_age` are deleted and the
prepared statements and sessions nobody references any more are collected.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from weir.catalog.builtins import by_name
from weir.catalog.vars import lookup_var
from weir.codec import interval_value as cinterval_value
from weir.http import metrics
from weir.sql.redact import redact as redact_statement

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator
    from weir.adapter.session import Session

log = logging.getLogger(__name__)

SESSIONS = by_name("mz_internal", "mz_session_history_raw")
PREPARED = by_name("mz_internal", "mz_prepared_statement_history_raw")
EXECUTIONS = by_name("mz_internal", "mz_statement_execution_history_raw")
LIFECYCLE = by_name("mz_internal", "mz_statement_lifecycle_history_raw")
DATAFLOWS = by_name("mz_internal", "mz_statement_dataflows")
LIVE_SESSIONS = by_name("mz_internal", "mz_sessions")
MAX_BUFFER_BYTES = 64 << 20
RETENTION_EVERY_S = 3600.0
MAX_BACKOFF_S = 60.0
Row = tuple[Any, ...]


def _now() -> datetime:
    return datetime.now(UTC)


def _now_us() -> int:
    """Now, in microseconds since the epoch: how the buffer holds times (Arrow takes them as is)."""
    return time.time_ns() // 1000


def _us(dt: datetime) -> int:
    return (dt - _EPOCH) // _MICROSECOND


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


@dataclass(slots=True)
class PreparedInfo:
    """What a prepared statement is, for the log; logged with its first sampled execution."""

    sql: str
    name: str
    statement_type: str
    prepared_at: int = field(default_factory=_now_us)  # microseconds since the epoch
    id: str | None = None
    logged: bool = False


@dataclass(slots=True)
class LogContext:
    """What every execution of a session records alike, cached on the session until one of
    its variables, a system variable or the catalog changes."""

    key: tuple[int, int, int]
    mode: str
    rate: float  # the effective sample rate
    target_rate: int  # statement_logging_target_data_rate, 0 = no limit
    cluster_id: str | None
    cluster: str
    application_name: str
    database: str
    search_path: tuple[str, ...]
    isolation: str
    size: int  # an execution row's size estimate, without params and error


@dataclass(slots=True)
class Execution:
    """One sampled execution between `began` and `ended`."""

    id: str
    prepared_id: str
    rate: float
    params: list[str | None] | None
    began_at: int  # microseconds since the epoch
    ctx: LogContext
    transaction_id: int
    size: int  # the row's size estimate
    flushed: bool = False  # the running row was written (ending must retract it)

    def row(self, finished_at: int | None = None, ok: bool | None = None, canceled: bool | None = None,
            aborted: bool = False, error: str | None = None, rows: int | None = None,
            fast: bool | None = None, timestamp: int | None = None, status: str = "running",
            strategy: str | None = None, result_size: int | None = None) -> Row:
        """The execution row (its running form by default), in EXECUTION_COLUMNS order."""
        c = self.ctx
        return (self.id, self.prepared_id, self.rate, self.params, self.began_at, finished_at, ok, canceled,
                aborted, error, rows, fast, c.cluster_id, c.cluster, c.application_name, c.database,
                c.search_path, c.isolation, self.transaction_id, timestamp, status, strategy, result_size)


EXECUTION_COLUMNS = (
    "id", "prepared_statement_id", "sample_rate", "params", "began_at", "finished_at", "was_successful",
    "was_canceled", "was_aborted", "error_message", "rows_returned", "was_fast_path", "cluster_id",
    "cluster_name", "application_name", "database_name", "search_path", "transaction_isolation",
    "transaction_id", "execution_timestamp", "finished_status", "execution_strategy", "result_size")
assert EXECUTIONS is None or tuple(n for n, _ in EXECUTIONS.columns) == EXECUTION_COLUMNS, \
    "Execution.row must follow mz_statement_execution_history_raw's columns"
_I = {name: i for i, name in enumerate(EXECUTION_COLUMNS)}
_SAMPLED = metrics.STATEMENT_LOG_RECORDS.labels(sampled="true")
_UNSAMPLED = metrics.STATEMENT_LOG_RECORDS.labels(sampled="false")
_LIFECYCLE_SIZE = 64  # a lifecycle row's size estimate: id, event, time


# An execution row's size estimate without its variable text: 36-char ids, 8 per fixed-size
# value, and the finished_status / execution_strategy words.
_EXEC_FIXED = 2 * 40 + 17 * 8 + 2 * 12


class _Ids:
    """Execution and prepared-statement ids: UUIDs (version 8, RFC 9562's custom layout) made
    of 74 random bits drawn at startup and a 48-bit counter, so they are unique like random
    ones without drawing 128 random bits per statement."""

    def __init__(self) -> None:
        hi = random.SystemRandom().getrandbits(64) & ~(0xF << 12) | (0x8 << 12)  # version 8
        var = random.SystemRandom().getrandbits(14) | 0x8000  # variant 10
        h = f"{hi:016x}"
        self._prefix = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{var:04x}-"
        self._next = 0

    def __call__(self) -> str:
        self._next += 1
        return f"{self._prefix}{self._next & 0xFFFFFFFFFFFF:012x}"


def _count(params: Any) -> int:
    return len(params) if isinstance(params, list) else 1


def _prepared_size(sql: str) -> int:
    """sql, redacted_sql, a 32-byte hash, ids and the rest."""
    return 2 * (len(sql) + 4) + 32 + 2 * 40 + 3 * 8 + 20


def _bytes(row: Row) -> int:
    """A cheap size estimate of a row as the log stores it: 8 per fixed-size value, 4 more
    than the length of text, and of each array element's text."""
    n = 0
    for v in row:
        if isinstance(v, (str, bytes)):
            n += len(v) + 4
        elif isinstance(v, (list, tuple)):
            n += sum([len(str(x)) for x in v]) + 4 * len(v) + 4
        else:
            n += 8
    return n


def _batch(b: Any, added: list[Row], retracted: list[Row]) -> pa.Table:
    """A builtin's updates as Arrow: `added` with diff +1, `retracted` with -1. Times are
    microseconds since the epoch, arrays tuples or lists: both as Arrow takes them."""
    rows = added + retracted
    arrays = {name: pa.array(cinterval_value.for_arrow(list(map(itemgetter(i), rows)), t), type=t.arrow)
              for i, (name, t) in enumerate(b.columns)}
    arrays["mz_diff"] = pa.array(np.repeat(np.array([1, -1], np.int64), [len(added), len(retracted)]))
    return pa.table(arrays)


class _Buffer:
    """The updates of one builtin waiting for the next flush."""

    __slots__ = ("added", "retracted")

    def __init__(self) -> None:
        self.added: list[Row] = []
        self.retracted: list[Row] = []

    def __len__(self) -> int:
        return len(self.added) + len(self.retracted)


class StatementLog:
    def __init__(self, coord: Coordinator) -> None:
        self.coord = coord
        self.updates: dict[str, _Buffer] = {}
        self._lifecycle = self._buffer(LIFECYCLE.id).added if LIFECYCLE else []
        self._executions = self._buffer(EXECUTIONS.id) if EXECUTIONS else _Buffer()
        self.running: dict[str, Execution] = {}  # running rows not flushed yet
        self.buffered_bytes = 0
        self.dropped = 0
        self.logged_sessions: set[str] = set()
        self.collected_prepared: set[str] = set()  # logged once, then garbage-collected
        self._new_id = _Ids()
        self._tokens = 0.0
        self._tokens_at = time.monotonic()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._max_age_ms: int | None = None
        self._last_retention = 0.0
        self._parsed: dict[tuple[str, str], Any] = {}  # (variable, text) -> parsed value
        self._appends: set[asyncio.Task[Any]] = set()

    def _buffer(self, builtin_id: str) -> _Buffer:
        buf = self.updates.get(builtin_id)
        if buf is None:
            buf = self.updates[builtin_id] = _Buffer()
        return buf

    # -- settings ------------------------------------------------------------------------

    def _system(self, name: str) -> Any:
        text = self.coord.system_var(name)
        try:
            return self._parsed[(name, text)]
        except KeyError:
            if len(self._parsed) > 1024:
                self._parsed.clear()
            value = self._parsed[(name, text)] = lookup_var(name).parse(text)
            return value

    def mode(self) -> str:
        return str(self.coord.system_var("statement_logging_mode"))

    def context(self, session: Session) -> LogContext:
        """The session's LogContext, rebuilt when a variable or the catalog changed."""
        key = (session.var_version, self.coord.system_var_version, self.coord.catalog.generation)
        ctx = session.log_context
        if ctx is not None and ctx.key == key:
            return ctx
        rate = float(lookup_var("statement_history_sample_rate").parse(
            session.get_var("statement_history_sample_rate")))
        cluster = session.get_var("cluster")
        application = session.get_var("application_name")
        database = session.database
        search_path = tuple(session.search_path)
        isolation = session.get_var("transaction_isolation")
        size = _EXEC_FIXED + len(cluster) + len(application or "") + len(database or "") + len(isolation or "") \
            + sum(len(p) + 4 for p in search_path)
        ctx = session.log_context = LogContext(
            key, self.mode(), max(0.0, min(rate, float(self._system("statement_history_max_sample_rate")))),
            int(self._system("statement_logging_target_data_rate") or 0), self.coord.cluster_id_by_name(cluster),
            cluster, application, database, search_path, isolation, size)
        return ctx

    def effective_rate(self, session: Session) -> float:
        return self.context(session).rate

    def rng_for_session(self) -> random.Random:
        seed = self.coord.system_var("statement_log_random_seed")
        return random.Random(int(seed)) if seed not in ("", None) else random.Random()

    # -- sessions ------------------------------------------------------------------------

    def _live_row(self, session: Session) -> Row:
        return (session.log_id, session.connection_id, session.role.id, session.client_ip, session.connected_at)

    def session_opened(self, session: Session) -> None:
        self._append_now(LIVE_SESSIONS.id, [(self._live_row(session), 1)])

    def session_closed(self, session: Session) -> None:
        self._append_now(LIVE_SESSIONS.id, [(self._live_row(session), -1)])

    def _append_now(self, builtin_id: str, rows: list[tuple[Row, int]]) -> None:
        """Live-session changes go out at once (the storage controller batches them)."""
        from weir.adapter.builtin_tables import builtin_updates

        try:
            table = builtin_updates(by_id(builtin_id), rows)
            task = asyncio.get_running_loop().create_task(self.coord.storage.append({builtin_id: table}))
        except Exception:  # noqa: BLE001 - the log never fails a session
            log.exception("statement log: recording a session change")
            return
        self._appends.add(task)  # a reference until it is done (the loop keeps only weak ones)
        task.add_done_callback(self._appended)

    def _appended(self, task: asyncio.Task[Any]) -> None:
        self._appends.discard(task)
        _log_failure(task)

    async def live_sessions_settled(self) -> None:
        """Wait for the session changes already sent: a session reading mz_sessions (or
        pg_stat_activity) right after connecting sees itself, as in PostgreSQL."""
        pending = list(self._appends)
        if pending:
            await asyncio.wait(pending)

    # -- executions ----------------------------------------------------------------------

    def begin(self, session: Session, info: PreparedInfo, params: Any) -> Execution | None:
        """An execution starts: sample it; returns the handle `end` needs, or None. Never
        raises: the log must not fail a statement."""
        try:
            return self._begin(session, info, params)
        except Exception:  # noqa: BLE001
            log.exception("statement log: recording an execution's start")
            return None

    def _begin(self, session: Session, info: PreparedInfo, params: Any) -> Execution | None:
        """`params`: the bound arguments' text forms, or a callable giving them (only
        called for a sampled execution)."""
        ctx = self.context(session)
        if ctx.mode == "off":
            return None
        sampled = session.log_rng.random() < ctx.rate
        (_SAMPLED if sampled else _UNSAMPLED).inc()
        size = ctx.size + (0 if params is None else 16 * _count(params))
        if not info.logged:
            size += _prepared_size(info.sql)
        metrics.STATEMENT_LOG_UNSAMPLED_BYTES.inc(size)
        if not sampled:
            return None
        if ctx.target_rate and not self._take_tokens(size, ctx.target_rate):
            session.log_throttled += 1
            metrics.STATEMENT_LOG_THROTTLED.inc()
            return None
        metrics.STATEMENT_LOG_ACTUAL_BYTES.inc(size)
        if ctx.mode != "on":
            return None  # dry_run: counted, not written
        if not self._fits(size):
            return None
        if callable(params):
            params = params()
        if info.id is None:
            info.id = self._new_id()
        if not info.logged or info.id in self.collected_prepared:
            self._log_prepared(session, info)
            size -= _prepared_size(info.sql)
        execution = Execution(self._new_id(), info.id, ctx.rate, params, _now_us(), ctx, session.transaction_id,
                              size)
        self.running[execution.id] = execution
        self.buffered_bytes += size
        return execution

    def _log_prepared(self, session: Session, info: PreparedInfo) -> None:
        if session.log_id not in self.logged_sessions:
            self.logged_sessions.add(session.log_id)
            self._add(SESSIONS.id, (session.log_id, session.get_var("application_name"), session.user,
                                    _us(session.connected_at)))
        redacted = redact_statement(info.sql)
        self._add(PREPARED.id, (info.id, session.log_id, info.name, info.sql, redacted,
                                hashlib.sha256(info.sql.encode()).digest(), info.statement_type,
                                info.prepared_at, session.log_throttled), size=_prepared_size(info.sql))
        session.log_throttled = 0
        info.logged = True
        self.collected_prepared.discard(info.id)  # type: ignore[arg-type]

    def lifecycle(self, execution: Execution | None, event: str) -> None:
        if execution is not None:
            self._lifecycle.append((execution.id, event, _now_us()))
            self.buffered_bytes += _LIFECYCLE_SIZE

    def dataflow(self, execution: Execution | None, replica_id: str, name: str) -> None:
        """The execution ran this dataflow on this replica (mz_internal.mz_statement_dataflows)."""
        if execution is not None and DATAFLOWS is not None:
            row = (execution.id, replica_id, name)
            if self._fits(_bytes(row)):
                self._add(DATAFLOWS.id, row)

    def end(self, execution: Execution | None, status: str, *, error: str | None = None,
            rows: int | None = None, result_size: int | None = None, strategy: str | None = None,
            timestamp: int | None = None) -> None:
        """The execution finished: status is success, error, canceled or aborted."""
        if execution is None:
            return
        try:
            if self.running.pop(execution.id, None) is None:  # the running row was written
                self._executions.retracted.append(execution.row())
                self.buffered_bytes += execution.size
            ok = status == "success"
            self._executions.added.append(execution.row(
                _now_us(), ok, status == "canceled", status == "aborted",
                error if status in ("error", "aborted") else None, rows if ok else None, strategy == "fast-path",
                timestamp, status, strategy, result_size if ok else None))
            self.buffered_bytes += len(error) if error else 0
        except Exception:  # noqa: BLE001 - the log must not fail a statement
            log.exception("statement log: recording an execution's end")

    # -- buffer --------------------------------------------------------------------------

    def _fits(self, size: int) -> bool:
        if self.buffered_bytes + size > MAX_BUFFER_BYTES:
            self.dropped += 1
            metrics.STATEMENT_LOG_DROPPED.inc()
            return False
        return True

    def _add(self, builtin_id: str, row: Row, size: int | None = None) -> None:
        self._buffer(builtin_id).added.append(row)
        self.buffered_bytes += _bytes(row) if size is None else size

    def _take_tokens(self, size: int, rate: int) -> bool:
        now = time.monotonic()
        self._tokens = min(float(rate), self._tokens + (now - self._tokens_at) * rate)
        self._tokens_at = now
        if self._tokens < size:
            return False
        self._tokens -= size
        return True

    def _take(self) -> dict[str, _Buffer]:
        """The buffer's updates, running rows included (they are flushed from now on)."""
        out = {bid: buf for bid, buf in self.updates.items() if len(buf)}
        for execution in self.running.values():
            self._executions.added.append(execution.row())
            execution.flushed = True
        if self.running:
            out[EXECUTIONS.id] = self._executions
        self.running = {}
        self.updates = {}
        self._lifecycle = self._buffer(LIFECYCLE.id).added
        self._executions = self._buffer(EXECUTIONS.id)
        self.buffered_bytes = 0
        return out

    async def flush(self) -> int:
        """Write the buffer as one group commit; returns the rows written."""
        batch = self._take()
        if not batch:
            return 0
        try:
            # building Arrow tables of a few thousand rows takes milliseconds: not on the loop
            tables = await asyncio.get_running_loop().run_in_executor(
                None, lambda: {bid: _batch(by_id(bid), buf.added, buf.retracted) for bid, buf in batch.items()})
            await self.coord.storage.append(tables)
        except BaseException:
            for bid, buf in batch.items():  # keep them for the next attempt, bounded
                kept = self._buffer(bid)
                for rows, into in ((buf.added, kept.added), (buf.retracted, kept.retracted)):
                    for r in rows:
                        if self._fits(_bytes(r)):
                            into.append(r)
                            self.buffered_bytes += _bytes(r)
            raise
        return sum(len(buf) for buf in batch.values())

    # -- background ----------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="statement-log")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - stopping
                pass
        try:
            await asyncio.wait_for(self.flush(), 10)
        except Exception as e:  # noqa: BLE001 - the storage may be stopping
            log.warning("statement log: final flush failed: %s", e)

    def wake(self) -> None:
        """Flush now (tests, settings changes)."""
        self._wake.set()

    async def _run(self) -> None:
        backoff = 0.0
        while True:
            interval = self._system("statement_log_flush_interval") / 1000
            try:
                await asyncio.wait_for(self._wake.wait(), max(0.05, backoff or interval))
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                await self.flush()
                backoff = 0.0
                max_age = int(self._system("statement_log_max_age"))
                if max_age != self._max_age_ms or time.monotonic() - self._last_retention > RETENTION_EVERY_S:
                    self._max_age_ms = max_age
                    await self.apply_retention(max_age)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - retried with backoff, statements carry on
                backoff = min(MAX_BACKOFF_S, max(1.0, backoff * 2))
                log.warning("statement log: flush failed (retrying in %.0fs): %s", backoff, e)

    # -- startup: aborted executions, retention ------------------------------------------

    async def _contents(self, builtin_id: str) -> list[tuple[Row, int]]:
        storage = self.coord.storage
        ts = self.coord.oracle.read_ts()
        table = await storage.snapshot(builtin_id, max(ts, storage.frontiers(builtin_id)[0]))
        cols = [table.column(i).to_pylist() for i in range(table.num_columns - 1)]
        diffs = table.column("mz_diff").to_pylist()
        rows = list(zip(*cols, strict=True)) if cols else []
        return [(tuple(tuple(v) if isinstance(v, list) else v for v in r), d) for r, d in zip(rows, diffs,
                                                                                              strict=True)]

    async def recover(self) -> int:
        """Executions an unclean stop left running are aborted; live sessions are cleared."""
        now = _now()
        fixes: list[tuple[Row, int]] = []
        for row, n in await self._contents(EXECUTIONS.id):
            if row[_I["finished_status"]] != "running":
                continue
            done = list(row)
            done[_I["finished_at"]] = now
            done[_I["was_aborted"]] = True
            done[_I["error_message"]] = "aborted: the server stopped before the statement finished"
            done[_I["finished_status"]] = "aborted"
            fixes += [(row, -n), (tuple(done), n)]
        stale = [(row, -n) for row, n in await self._contents(LIVE_SESSIONS.id)]
        updates = {}
        from weir.adapter.builtin_tables import builtin_updates

        if fixes:
            updates[EXECUTIONS.id] = builtin_updates(EXECUTIONS, fixes)
        if stale:
            updates[LIVE_SESSIONS.id] = builtin_updates(LIVE_SESSIONS, stale)
        if updates:
            await self.coord.storage.append(updates)
        if fixes:
            log.info("statement log: %d executions were running at an unclean stop: marked aborted",
                     len(fixes) // 2)
        return len(fixes) // 2

    async def apply_retention(self, max_age_ms: int) -> dict[str, int]:
        """Delete executions older than max_age, then the prepared statements and sessions
        nothing references any more."""
        from weir.adapter.builtin_tables import builtin_updates

        self._last_retention = time.monotonic()
        await self.flush()  # what is about to be judged must be in storage
        cutoff = _now() - timedelta(milliseconds=max_age_ms)
        executions = await self._contents(EXECUTIONS.id)
        old = [(r, n) for r, n in executions if r[_I["began_at"]] is not None and r[_I["began_at"]] < cutoff]
        gone = {r[0] for r, _ in old}
        kept_prepared = {r[_I["prepared_statement_id"]] for r, _ in executions if r[0] not in gone}
        prepared = await self._contents(PREPARED.id)
        dead_prepared = [(r, n) for r, n in prepared if r[0] not in kept_prepared and r[7] < cutoff]
        kept_sessions = {r[1] for r, _ in prepared if r[0] in kept_prepared or r[7] >= cutoff}
        live = {s.log_id for s in self.coord.sessions.values()}
        sessions = await self._contents(SESSIONS.id)
        dead_sessions = [(r, n) for r, n in sessions
                         if r[0] not in kept_sessions and r[0] not in live and r[3] < cutoff]
        lifecycle = [(r, n) for r, n in await self._contents(LIFECYCLE.id) if r[0] in gone or r[2] < cutoff]
        updates = {}
        for b, rows in ((EXECUTIONS, old), (PREPARED, dead_prepared), (SESSIONS, dead_sessions),
                        (LIFECYCLE, lifecycle)):
            if rows:
                updates[b.id] = builtin_updates(b, [(r, -n) for r, n in rows])
        if updates:
            await self.coord.storage.append(updates)
        self.collected_prepared.update(r[0] for r, _ in dead_prepared)
        if len(self.collected_prepared) > 1_000_000:
            self.collected_prepared.clear()
        self.logged_sessions.difference_update(r[0] for r, _ in dead_sessions)
        counts = {"executions": len(old), "prepared": len(dead_prepared), "sessions": len(dead_sessions),
                  "lifecycle": len(lifecycle)}
        if any(counts.values()):
            log.info("statement log retention (older than %d ms): deleted %s", max_age_ms, counts)
        return counts


def by_id(builtin_id: str) -> Any:
    for b in (SESSIONS, PREPARED, EXECUTIONS, LIFECYCLE, LIVE_SESSIONS, DATAFLOWS):
        if b is not None and b.id == builtin_id:
            return b
    raise KeyError(builtin_id)


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("statement log: recording a session change failed: %s", task.exception())
