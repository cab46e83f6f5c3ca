"""Everything after startup: simple query, extended query (Parse/Bind/Describe/
Execute/Close/Sync/Flush), portals with row limits, COPY TO STDOUT, errors.

Each call into the adapter that can take time (prepare, execute, pulling rows,
ending the implicit transaction) runs in its own task, `conn.stmt_task`. That
is the task the adapter cancels for a CancelRequest and the one we cancel when
the client goes away; the read loop itself is never cancelled, so a cancel is
an ErrorResponse 57014 and the connection carries on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from weir import codec
from weir.adapter.api import (
    Command,
    CopyOut,
    EmptyQuery,
    PreparedStatement,
    Rows,
    Session,
)
from weir.errors import SqlState, WeirError, client_safe, from_exception, query_canceled
from weir.pgwire import messages as m
from weir.pgwire.connection import FLUSH_THRESHOLD, ConnectionLost, PgConnection
from weir.pgwire.portals import (
    Portal,
    RowStream,
    cannot_run,
    close_iter,
    decode_param,
    encoders_for,
    resolve_formats,
)
from weir.types import PgType

log = logging.getLogger("weir.pgwire")

_EMPTY_PLAN = object()  # plan marker of a Parse of an empty query string

_Q, _P, _B, _E, _D, _C, _S, _H, _X, _F = (ord(c) for c in "QPBEDCSHXF")
# Messages after whose error the server skips input until Sync.
_EXTENDED = frozenset((_P, _B, _E, _D, _C, _H))


class _StepFailed(Exception):
    """An error was already reported for this message."""


def _in_failed_transaction() -> WeirError:
    return WeirError(
        SqlState.IN_FAILED_SQL_TRANSACTION,
        "current transaction is aborted, commands ignored until end of transaction block",
    )


class QueryHandler:
    """Protocol state of an authenticated connection: prepared statements, portals,
    and the skip-until-Sync flag."""

    def __init__(self, conn: PgConnection, session: Session) -> None:
        self.conn = conn
        self.session = session
        self.out = conn.out
        self.statements: dict[str, PreparedStatement] = {}
        self.portals: dict[str, Portal] = {}
        self.ignore_till_sync = False
        self.fatal: WeirError | None = None
        self.handlers: dict[int, Callable[[bytes], Awaitable[None]]] = {
            _Q: self.on_query,
            _P: self.on_parse,
            _B: self.on_bind,
            _E: self.on_execute,
            _D: self.on_describe,
            _C: self.on_close,
            _S: self.on_sync,
            _H: self.on_flush,
            _F: self.on_function_call,
        }

    # ---- the read loop -----------------------------------------------------------------

    async def serve(self) -> None:
        conn = self.conn
        metric = conn.server.metric
        try:
            while True:
                typ, body = await conn.read_message()
                if typ == _X:
                    return
                if self.ignore_till_sync and typ != _S:
                    if typ == _H:  # a Flush still delivers the pending ErrorResponse
                        await conn.flush_and_drain()
                    continue
                handler = self.handlers.get(typ)
                if handler is None:  # CopyData/CopyDone/CopyFail outside COPY: ignored
                    continue
                metric("messages_received", 1)
                failed = False
                try:
                    await handler(body)
                except _StepFailed:
                    failed = True
                except WeirError as e:
                    if e.severity in ("FATAL", "PANIC"):
                        raise
                    self.report(e)
                    failed = True
                    if typ in (_Q, _F):
                        await self.ready_for_query()
                if failed and typ in _EXTENDED:
                    # Like PostgreSQL, send an ErrorResponse at once: a client that
                    # sent Parse/Describe/Flush (asyncpg) waits for it before Sync.
                    self.ignore_till_sync = True
                    await conn.flush_and_drain()
                if self.fatal is not None:  # already reported; just hang up
                    await conn.flush_and_drain()
                    return
                if len(self.out) >= FLUSH_THRESHOLD:
                    await conn.flush_and_drain()
        finally:
            await self.drop_all_portals()

    def report(self, err: WeirError) -> None:
        """ErrorResponse (after pending notices); any error fails the transaction."""
        self.send_notices()
        err = client_safe(err)
        m.error_response(self.out, err)
        self.conn.server.metric("errors", 1)
        if err.severity in ("FATAL", "PANIC"):
            self.fatal = err
        try:
            self.session.mark_failed()
        except Exception:
            log.exception("pgwire: session.mark_failed failed")

    def send_notices(self) -> None:
        for notice in self.session.take_notices():
            m.notice_response(self.out, notice)

    def send_parameter_changes(self) -> None:
        for name, value in self.session.take_parameter_changes().items():
            m.parameter_status(self.out, name, value)

    async def ready_for_query(self) -> None:
        if self.fatal is not None:
            return
        m.ready_for_query(self.out, self.session.transaction_status)
        await self.conn.flush_and_drain()

    async def step(self, fn: Callable[..., Awaitable[None]], *args: Any) -> bool:
        """Run one adapter-facing step in its own task; False if it reported an error.

        Cancelling that task (the adapter on CancelRequest, or us when the client
        disconnects) ends the step with 57014 instead of tearing down the connection.
        """
        conn = self.conn
        outcome: bool | None = None

        async def body() -> None:
            nonlocal outcome
            try:
                await fn(*args)
                outcome = True
            except asyncio.CancelledError:
                outcome = False
                if not conn.closed:
                    self.report(query_canceled())
            except WeirError as e:
                outcome = False
                self.report(e)
            except ConnectionLost:
                outcome = False
            except Exception as e:
                outcome = False
                log.exception("pgwire: internal error while running a statement")
                self.report(from_exception(e))

        task = conn.loop.create_task(body())
        conn.stmt_task = task
        try:
            await task
        except asyncio.CancelledError:
            # Either we are being cancelled (server stop) or the step was cancelled
            # before its body started / after it finished.
            if conn.task is not None and conn.task.cancelling():
                raise
        finally:
            conn.stmt_task = None
        if conn.task is not None and conn.task.cancelling():
            raise asyncio.CancelledError
        if conn.closed:
            raise ConnectionLost("client closed the connection")
        if outcome is None:
            self.report(query_canceled())
            return False
        return outcome

    # ---- simple query -------------------------------------------------------------------

    async def on_query(self, body: bytes) -> None:
        r = m.MessageReader(body)
        sql = r.cstr()
        r.end()
        self.statements.pop("", None)
        await self.drop_portal("")
        conn = self.conn
        conn.server.metric("queries", 1)
        try:
            texts: list[str] | None = self.session.split(sql)
        except WeirError as e:
            self.report(e)
            texts = None
        except Exception as e:
            log.exception("pgwire: session.split failed")
            self.report(from_exception(e))
            texts = None
        if texts is not None and len(texts) > 1:
            syntax_error = self.session.first_syntax_error(texts)
            if syntax_error is not None:
                self.report(syntax_error)
                texts = None
        if texts is not None:
            if not texts:
                self.out += m.EMPTY_QUERY
            for text in texts:
                if not await self.step(self._simple_statement, text):
                    break
        await self.step(self._end_transaction)
        await self.ready_for_query()

    async def _simple_statement(self, sql: str) -> None:
        session = self.session
        stmt = await session.prepare(sql, [], describe_result=False)  # the result describes itself
        result = await session.execute(stmt, [], extended=False)
        self.send_notices()
        out = self.out
        if isinstance(result, Rows):
            cols = result.columns
            m.row_description(out, cols, [0] * len(cols))
            stream = RowStream(result.batches, encoders_for(cols, [0] * len(cols)), result=result)
            try:
                _, count = await self.send_rows(stream, 0)
            finally:
                await close_iter(result.batches)
            self.send_notices()
            m.command_complete(out, result.tag(count))
        elif isinstance(result, CopyOut):
            await self.send_copy(result)
        elif isinstance(result, Command):
            m.command_complete(out, result.tag)
        elif isinstance(result, EmptyQuery):
            out += m.EMPTY_QUERY
        else:
            raise TypeError(f"unexpected execute result {result!r}")
        self.send_parameter_changes()

    async def _end_transaction(self) -> None:
        await self.session.end_implicit_transaction()
        self.send_notices()
        self.send_parameter_changes()
        if self.session.transaction_status == "I":
            await self.drop_all_portals()

    # ---- result streaming ---------------------------------------------------------------

    async def send_rows(self, stream: RowStream, limit: int) -> tuple[bool, int]:
        """DataRows until `limit` (0 = all); returns (suspended, rows sent)."""
        out = self.out
        conn = self.conn
        encoders = stream.encoders
        data_row = m.data_row
        sent = 0
        while True:
            if limit and sent >= limit:
                return True, sent
            pending = stream.pending
            if stream.pos >= len(pending):
                if stream.exhausted:
                    return False, sent
                conn.flush_when_idle()
                try:
                    batch = await anext(stream.batches)
                except StopAsyncIteration:
                    stream.exhausted = True
                    stream.pending = []
                    stream.pos = 0
                    return False, sent
                stream.pending = batch if isinstance(batch, list) else list(batch)
                stream.pos = 0
                continue
            start = stream.pos
            end = len(pending) if not limit else min(len(pending), start + limit - sent)
            mark = len(out)
            for i in range(start, end):
                data_row(out, pending[i], encoders)
                if len(out) >= FLUSH_THRESHOLD:
                    stream.pos = i + 1
                    stream.sent_bytes += len(out) - mark
                    await conn.flush_and_drain()
                    mark = len(out)
            stream.sent_bytes += len(out) - mark
            sent += end - start
            stream.pos = end

    async def send_copy(self, result: CopyOut) -> None:
        """CopyOutResponse, one CopyData per row (text format), CopyDone, COPY n."""
        out = self.out
        conn = self.conn
        types: list[PgType] = [c.type for c in result.columns]
        m.copy_out_response(out, len(types))
        count = 0
        batches = result.batches
        try:
            while True:
                conn.flush_when_idle()
                try:
                    batch = await anext(batches)
                except StopAsyncIteration:
                    break
                mark = len(out)
                for row in batch:
                    m.copy_data(out, codec.copy_text_row(row, types))
                    if len(out) >= FLUSH_THRESHOLD:
                        result.sent_bytes += len(out) - mark
                        await conn.flush_and_drain()
                        mark = len(out)
                result.sent_bytes += len(out) - mark
                count += len(batch)
        finally:
            await close_iter(batches)
        out += m.COPY_DONE
        self.send_notices()
        m.command_complete(out, result.tag(count))

    # ---- extended query -----------------------------------------------------------------

    async def on_parse(self, body: bytes) -> None:
        r = m.MessageReader(body)
        name = r.cstr()
        sql = r.cstr()
        oids = [r.uint32() for _ in range(r.int16())]
        r.end()
        if not name:
            self.statements.pop("", None)
        if self.session.transaction_status == "E" and not self.session.ends_transaction(sql):
            raise _in_failed_transaction()  # as PostgreSQL's Parse does, before analysis
        stmt: PreparedStatement | None = None

        async def prepare() -> None:
            nonlocal stmt
            if not sql.strip().strip(";").strip():
                stmt = PreparedStatement(sql, [], None, plan=_EMPTY_PLAN)
            else:
                stmt = await self.session.prepare(sql, oids, name)
            self.send_notices()

        if not await self.step(prepare):
            raise _StepFailed
        assert stmt is not None
        if name and name in self.statements:
            raise WeirError(
                SqlState.DUPLICATE_PREPARED_STATEMENT, f'prepared statement "{name}" already exists'
            )
        self.statements[name] = stmt
        self.out += m.PARSE_COMPLETE

    def _statement(self, name: str) -> PreparedStatement:
        stmt = self.statements.get(name)
        if stmt is None:
            if not name:
                raise WeirError(
                    SqlState.INVALID_SQL_STATEMENT_NAME, "unnamed prepared statement does not exist"
                )
            raise WeirError(
                SqlState.INVALID_SQL_STATEMENT_NAME, f'prepared statement "{name}" does not exist'
            )
        return stmt

    def _portal(self, name: str) -> Portal:
        portal = self.portals.get(name)
        if portal is None:
            raise WeirError(SqlState.INVALID_CURSOR_NAME, f'portal "{name}" does not exist')
        return portal

    async def on_bind(self, body: bytes) -> None:
        r = m.MessageReader(body)
        portal_name = r.cstr()
        stmt_name = r.cstr()
        param_formats = [r.int16() for _ in range(r.int16())]
        nparams = r.int16()
        raw: list[bytes | None] = []
        for _ in range(nparams):
            n = r.int32()
            raw.append(None if n == -1 else r.bytes(n))
        result_formats = [r.int16() for _ in range(r.int16())]
        r.end()
        if not portal_name:
            await self.drop_portal("")
        stmt = self._statement(stmt_name)
        if self.session.transaction_status == "E" and (
                stmt.plan is _EMPTY_PLAN or not self.session.ends_transaction(stmt.sql)):
            raise _in_failed_transaction()
        if portal_name and portal_name in self.portals:
            raise WeirError(SqlState.DUPLICATE_CURSOR, f'cursor "{portal_name}" already exists')
        if len(param_formats) > 1 and len(param_formats) != nparams:
            raise m.protocol_violation(
                f"bind message has {len(param_formats)} parameter formats "
                f"but {nparams} parameters"
            )
        if nparams != len(stmt.param_types):
            raise m.protocol_violation(
                f"bind message supplies {nparams} parameters, but prepared statement "
                f'"{stmt_name}" requires {len(stmt.param_types)}'
            )
        for code in (*param_formats, *result_formats):
            if code not in (0, 1):
                raise WeirError(
                    SqlState.INVALID_PARAMETER_VALUE, f"unsupported format code: {code}"
                )
        fmts = resolve_formats(param_formats, nparams)
        params = [
            decode_param(value, fmt, t, i)
            for i, (value, fmt, t) in enumerate(zip(raw, fmts, stmt.param_types, strict=True))
        ]
        if stmt.columns is not None:
            resolve_formats(result_formats, len(stmt.columns))
        self.portals[portal_name] = Portal(portal_name, stmt, params, result_formats)
        self.out += m.BIND_COMPLETE

    async def on_describe(self, body: bytes) -> None:
        r = m.MessageReader(body)
        kind = r.byte()
        name = r.cstr()
        r.end()
        out = self.out
        if kind == ord("S"):
            stmt = self._statement(name)
            m.parameter_description(out, [t.oid for t in stmt.param_types])
            if stmt.columns is None:
                out += m.NO_DATA
            else:
                m.row_description(out, stmt.columns, [0] * len(stmt.columns))
        elif kind == ord("P"):
            portal = self._portal(name)
            cols = portal.columns()
            if cols is None:
                out += m.NO_DATA
            else:
                m.row_description(out, cols, resolve_formats(portal.format_codes, len(cols)))
        else:
            raise m.protocol_violation(f"invalid DESCRIBE message subtype {kind}")

    async def on_execute(self, body: bytes) -> None:
        r = m.MessageReader(body)
        name = r.cstr()
        max_rows = r.int32()
        r.end()
        portal = self._portal(name)
        self.conn.server.metric("queries", 1)
        status_before = self.session.transaction_status
        ok = await self.step(self._execute_portal, portal, max(max_rows, 0))
        if status_before != "I" and self.session.transaction_status == "I":
            await self.drop_all_portals()  # COMMIT/ROLLBACK ended the transaction
        if not ok:
            raise _StepFailed

    async def _execute_portal(self, portal: Portal, limit: int) -> None:
        out = self.out
        if portal.failed:
            raise cannot_run(portal)
        try:
            if portal.result is None:
                if portal.stmt.plan is _EMPTY_PLAN:
                    portal.result = EmptyQuery()
                else:
                    portal.result = await self.session.execute(
                        portal.stmt, portal.params, extended=True
                    )
                    self.send_notices()
                if isinstance(portal.result, Rows):
                    cols = portal.result.columns
                    fmts = resolve_formats(portal.format_codes, len(cols))
                    portal.rows = RowStream(portal.result.batches, encoders_for(cols, fmts),
                                            result=portal.result)
            result = portal.result
            if isinstance(result, Rows):
                assert portal.rows is not None
                suspended, count = await self.send_rows(portal.rows, limit)
                if suspended:
                    out += m.PORTAL_SUSPENDED
                    return
                self.send_notices()
                m.command_complete(out, result.tag(count))
            elif isinstance(result, EmptyQuery):
                out += m.EMPTY_QUERY
            elif portal.done:
                raise cannot_run(portal)
            elif isinstance(result, Command):
                portal.done = True
                m.command_complete(out, result.tag)
            elif isinstance(result, CopyOut):
                portal.done = True
                await self.send_copy(result)
            else:
                raise TypeError(f"unexpected execute result {result!r}")
        except BaseException:
            portal.failed = True
            raise
        self.send_parameter_changes()

    async def on_close(self, body: bytes) -> None:
        r = m.MessageReader(body)
        kind = r.byte()
        name = r.cstr()
        r.end()
        if kind == ord("S"):
            self.statements.pop(name, None)
        elif kind == ord("P"):
            await self.drop_portal(name)
        else:
            raise m.protocol_violation(f"invalid CLOSE message subtype {kind}")
        self.out += m.CLOSE_COMPLETE

    async def on_sync(self, body: bytes) -> None:
        self.ignore_till_sync = False
        await self.step(self._end_transaction)
        await self.ready_for_query()

    async def on_flush(self, body: bytes) -> None:
        await self.conn.flush_and_drain()

    async def on_function_call(self, body: bytes) -> None:
        self.report(
            WeirError(SqlState.FEATURE_NOT_SUPPORTED, "function call message not supported")
        )
        await self.ready_for_query()

    # ---- portal lifetime ----------------------------------------------------------------

    async def drop_portal(self, name: str) -> None:
        portal = self.portals.pop(name, None)
        if portal is not None and isinstance(portal.result, (Rows, CopyOut)):
            await close_iter(portal.result.batches)

    async def drop_all_portals(self) -> None:
        for name in list(self.portals):
            await self.drop_portal(name)
