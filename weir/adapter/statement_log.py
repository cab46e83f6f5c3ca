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
from typing import TYPE_CHECKING, Any

from weir.catalog.builtins import by_name
from weir.catalog.vars import lookup_var
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
LIVE_SESSIONS = by_name("mz_internal", "mz_sessions")
MAX_BUFFER_BYTES = 64 << 20
RETENTION_EVERY_S = 3600.0
MAX_BACKOFF_S = 60.0
Row = tuple[Any, ...]


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class PreparedInfo:
    """What a prepared statement is, for the log; logged with its first sampled execution."""

    sql: str
    name: str
    statement_type: str
    prepared_at: datetime = field(default_factory=_now)
    id: str | None = None
    logged: bool = False


@dataclass
class Execution:
    """One sampled execution between `began` and `ended`."""

    id: str
    row: list[Any]  # the running row, completed when it ends
    flushed: bool = False  # the running row was written (ending must retract it)
    size: int = 0  # the row's size estimate


_I = {name: i for i, (name, _) in enumerate(EXECUTIONS.columns)} if EXECUTIONS else {}
_FIXED_SIZE_TYPES = frozenset({type(None), bool, int, float, datetime})
# An execution's id before the draw: the size estimate is made for every execution (the
# unsampled-bytes metric), the uuid only for sampled ones; a uuid's text is always 36 chars.
_ID_STANDIN = "00000000-0000-0000-0000-000000000000"
_SAMPLED = metrics.STATEMENT_LOG_RECORDS.labels(sampled="true")
_UNSAMPLED = metrics.STATEMENT_LOG_RECORDS.labels(sampled="false")


# An execution row's size estimate without its variable text: 36-char ids, 8 per fixed-size
# value, and the finished_status / execution_strategy words.
_EXEC_FIXED = 2 * 40 + 17 * 8 + 2 * 12


def _uuid() -> str:
    """A random (version 4) UUID's text, as uuid.uuid4() gives it but cheaper."""
    h = f"{random.getrandbits(128) & _V4_MASK | _V4_BITS:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_V4_MASK = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_V4_BITS = (0x4000 << 64) | (0x8000 << 48)


def _count(params: Any) -> int:
    return len(params) if isinstance(params, list) else 1


def _prepared_size(sql: str) -> int:
    """sql, redacted_sql, a 32-byte hash, ids and the rest."""
    return 2 * (len(sql) + 4) + 32 + 2 * 40 + 3 * 8 + 20


def _bytes(row: Row | list[Any]) -> int:
    """A cheap size estimate of a row as the log stores it: 8 per fixed-size value, 4 more
    than the length of text, and of each array element's text."""
    n = 0
    for v in row:
        t = type(v)
        if t is str:
            n += len(v) + 4
        elif t in _FIXED_SIZE_TYPES:
            n += 8
        elif isinstance(v, (str, bytes)):
            n += len(v) + 4
        elif isinstance(v, (list, tuple)):
            n += sum([len(str(x)) for x in v]) + 4 * len(v) + 4
        else:
            n += 8
    return n


class StatementLog:
    def __init__(self, coord: Coordinator) -> None:
        self.coord = coord
        self.updates: dict[str, list[tuple[Row, int]]] = {}
        self.running: dict[str, Execution] = {}  # running rows not flushed yet
        self.buffered_bytes = 0
        self.dropped = 0
        self.logged_sessions: set[str] = set()
        self.collected_prepared: set[str] = set()  # logged once, then garbage-collected
        self._tokens = 0.0
        self._tokens_at = time.monotonic()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._max_age_ms: int | None = None
        self._last_retention = 0.0
        self._parsed: dict[tuple[str, str], Any] = {}  # (variable, text) -> parsed value
        self._rates: dict[tuple[str, str], float] = {}  # (session rate, system max) text -> effective
        self._appends: set[asyncio.Task[Any]] = set()

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

    def effective_rate(self, session: Session) -> float:
        key = (session.get_var("statement_history_sample_rate"),
               self.coord.system_var("statement_history_max_sample_rate"))
        effective = self._rates.get(key)
        if effective is None:
            rate = float(lookup_var("statement_history_sample_rate").parse(key[0]))
            effective = max(0.0, min(rate, float(lookup_var("statement_history_max_sample_rate").parse(key[1]))))
            if len(self._rates) > 1024:
                self._rates.clear()
            self._rates[key] = effective
        return effective

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
        from weir.adapter.coordinator import _builtin_updates

        try:
            table = _builtin_updates(by_id(builtin_id), rows)
            task = asyncio.get_running_loop().create_task(self.coord.storage.append({builtin_id: table}))
        except Exception:  # noqa: BLE001 - the log never fails a session
            log.exception("statement log: recording a session change")
            return
        self._appends.add(task)  # a reference until it is done (the loop keeps only weak ones)
        task.add_done_callback(self._appended)

    def _appended(self, task: asyncio.Task[Any]) -> None:
        self._appends.discard(task)
        _log_failure(task)

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
        mode = self.mode()
        if mode == "off":
            return None
        rate = self.effective_rate(session)
        sampled = session.log_rng.random() < rate
        (_SAMPLED if sampled else _UNSAMPLED).inc()
        cluster = session.get_var("cluster")
        # id and began_at are filled in once sampled (same size estimate: 36 chars, 8 bytes)
        row: list[Any] = [
            _ID_STANDIN, info.id, rate, params, None, None, None, None, False, None, None, None,
            self.coord.cluster_id_by_name(cluster), cluster, session.get_var("application_name"),
            session.database, session.search_path, session.get_var("transaction_isolation"),
            session.transaction_id, None, "running", None, None]
        size = _EXEC_FIXED + len(cluster) + len(row[14] or "") + len(row[15] or "") + len(row[17] or "") \
            + sum(len(p) + 4 for p in row[16]) + (0 if params is None else 16 * _count(params)) \
            + (0 if info.logged else _prepared_size(info.sql))
        metrics.STATEMENT_LOG_UNSAMPLED_BYTES.inc(size)
        if not sampled:
            return None
        if not self._take_tokens(size):
            session.log_throttled += 1
            metrics.STATEMENT_LOG_THROTTLED.inc()
            return None
        metrics.STATEMENT_LOG_ACTUAL_BYTES.inc(size)
        if mode != "on":
            return None  # dry_run: counted, not written
        if not self._fits(size):
            return None
        if callable(params):
            params = params()
            row[_I["params"]] = params
        exec_id = _uuid()
        now = _now()
        row[_I["id"]] = exec_id
        row[_I["began_at"]] = now
        if info.id is None:
            info.id = _uuid()
            row[_I["prepared_statement_id"]] = info.id
        if not info.logged or info.id in self.collected_prepared:
            self._log_prepared(session, info)
        execution = Execution(exec_id, row, size=size - (0 if info.logged else _prepared_size(info.sql)))
        self.running[exec_id] = execution
        self.buffered_bytes += size
        return execution

    def _log_prepared(self, session: Session, info: PreparedInfo) -> None:
        if session.log_id not in self.logged_sessions:
            self.logged_sessions.add(session.log_id)
            self._add(SESSIONS.id, (session.log_id, session.get_var("application_name"), session.user,
                                    session.connected_at))
        redacted = redact_statement(info.sql)
        self._add(PREPARED.id, (info.id, session.log_id, info.name, info.sql, redacted,
                                hashlib.sha256(info.sql.encode()).digest(), info.statement_type,
                                info.prepared_at, session.log_throttled), size=_prepared_size(info.sql))
        session.log_throttled = 0
        info.logged = True
        self.collected_prepared.discard(info.id)  # type: ignore[arg-type]

    def lifecycle(self, execution: Execution | None, event: str, at: datetime | None = None) -> None:
        if execution is not None:
            self._add(LIFECYCLE.id, (execution.id, event, at or _now()), size=64)

    def end(self, execution: Execution | None, status: str, *, error: str | None = None,
            rows: int | None = None, result_size: int | None = None, strategy: str | None = None,
            timestamp: int | None = None) -> None:
        """The execution finished: status is success, error, canceled or aborted."""
        if execution is None:
            return
        try:
            self._end(execution, status, error, rows, result_size, strategy, timestamp)
        except Exception:  # noqa: BLE001 - the log must not fail a statement
            log.exception("statement log: recording an execution's end")

    def _end(self, execution: Execution, status: str, error: str | None, rows: int | None,
             result_size: int | None, strategy: str | None, timestamp: int | None) -> None:
        now = _now()
        row = list(execution.row)
        if self.running.pop(execution.id, None) is None:
            self._add(EXECUTIONS.id, tuple(row), -1, size=execution.size)  # the running row was written
        ok = status == "success"
        row[_I["finished_at"]] = now
        row[_I["was_successful"]] = ok
        row[_I["was_canceled"]] = status == "canceled"
        row[_I["was_aborted"]] = status == "aborted"
        row[_I["error_message"]] = error if status in ("error", "aborted") else None
        row[_I["rows_returned"]] = rows if ok else None
        row[_I["was_fast_path"]] = strategy == "fast-path"
        row[_I["execution_timestamp"]] = timestamp
        row[_I["finished_status"]] = status
        row[_I["execution_strategy"]] = strategy
        row[_I["result_size"]] = result_size if ok else None
        self._add(EXECUTIONS.id, tuple(row), size=execution.size + (len(error) if error else 0))

    # -- buffer --------------------------------------------------------------------------

    def _fits(self, size: int) -> bool:
        if self.buffered_bytes + size > MAX_BUFFER_BYTES:
            self.dropped += 1
            metrics.STATEMENT_LOG_DROPPED.inc()
            return False
        return True

    def _add(self, builtin_id: str, row: Row, diff: int = 1, size: int | None = None) -> None:
        self.updates.setdefault(builtin_id, []).append((row, diff))
        self.buffered_bytes += _bytes(row) if size is None else size

    def _take_tokens(self, size: int) -> bool:
        rate = int(self._system("statement_logging_target_data_rate") or 0)
        if rate <= 0:
            return True
        now = time.monotonic()
        self._tokens = min(float(rate), self._tokens + (now - self._tokens_at) * rate)
        self._tokens_at = now
        if self._tokens < size:
            return False
        self._tokens -= size
        return True

    def _take(self) -> dict[str, list[tuple[Row, int]]]:
        """The buffer's updates, running rows included (they are flushed from now on)."""
        out, self.updates = self.updates, {}
        if self.running:
            rows = out.setdefault(EXECUTIONS.id, [])
            for execution in self.running.values():
                rows.append((tuple(execution.row), 1))
                execution.flushed = True
            self.running = {}
        self.buffered_bytes = 0
        return out

    async def flush(self) -> int:
        """Write the buffer as one group commit; returns the rows written."""
        from weir.adapter.coordinator import _builtin_updates

        batch = self._take()
        if not batch:
            return 0
        try:
            # building Arrow tables of a few thousand rows takes milliseconds: not on the loop
            tables = await asyncio.get_running_loop().run_in_executor(
                None, lambda: {bid: _builtin_updates(by_id(bid), rows) for bid, rows in batch.items() if rows})
            await self.coord.storage.append(tables)
        except BaseException:
            for bid, rows in batch.items():  # keep them for the next attempt, bounded
                kept = self.updates.setdefault(bid, [])
                for r in rows:
                    if self._fits(_bytes(r[0])):
                        kept.append(r)
                        self.buffered_bytes += _bytes(r[0])
            raise
        return sum(len(r) for r in batch.values())

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
        from weir.adapter.coordinator import _builtin_updates

        if fixes:
            updates[EXECUTIONS.id] = _builtin_updates(EXECUTIONS, fixes)
        if stale:
            updates[LIVE_SESSIONS.id] = _builtin_updates(LIVE_SESSIONS, stale)
        if updates:
            await self.coord.storage.append(updates)
        if fixes:
            log.info("statement log: %d executions were running at an unclean stop: marked aborted",
                     len(fixes) // 2)
        return len(fixes) // 2

    async def apply_retention(self, max_age_ms: int) -> dict[str, int]:
        """Delete executions older than max_age, then the prepared statements and sessions
        nothing references any more."""
        from weir.adapter.coordinator import _builtin_updates

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
                updates[b.id] = _builtin_updates(b, [(r, -n) for r, n in rows])
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
    for b in (SESSIONS, PREPARED, EXECUTIONS, LIFECYCLE, LIVE_SESSIONS):
        if b is not None and b.id == builtin_id:
            return b
    raise KeyError(builtin_id)


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("statement log: recording a session change failed: %s", task.exception())
