"""One client connection: byte I/O on an asyncio Protocol, and its lifecycle.

A plain `asyncio.Protocol` (not streams) so that we see the client go away
(connection_lost) even while a statement runs, can cancel that statement, and
parse many pipelined messages out of one receive buffer without a coroutine
round trip per message.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import struct
from typing import TYPE_CHECKING

from weir.adapter.api import Session
from weir.errors import SqlState, WeirError, client_safe, from_exception
from weir.pgwire import messages as m

if TYPE_CHECKING:
    from weir.pgwire.server import PgServer

log = logging.getLogger("weir.pgwire")

# Flush the output buffer to the socket once it holds this much (rows streaming).
FLUSH_THRESHOLD = 64 * 1024
# Stop reading from the socket while this much unprocessed input is buffered.
READ_HIGH_WATER = 8 * 1024 * 1024

_I = struct.Struct("!i")


class ConnectionLost(Exception):
    """The client went away (EOF, reset, or we closed the connection)."""


class PgConnection(asyncio.Protocol):
    """Transport-level state of one connection; the protocol logic lives in
    `weir.pgwire.startup` (startup/auth) and `weir.pgwire.query` (everything after)."""

    def __init__(self, server: PgServer) -> None:
        self.server = server
        self.coordinator = server.coordinator
        self.max_message_size = server.max_message_size
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.peer_host = ""
        self.out = bytearray()
        self.session: Session | None = None
        self.task: asyncio.Task[None] | None = None
        # The task running the current adapter call; cancelled if the client goes away.
        self.stmt_task: asyncio.Task[None] | None = None
        self.closed = False
        self.tls_active = False
        self._inbuf = bytearray()
        self._inpos = 0
        self._eof = False
        self._read_waiter: asyncio.Future[None] | None = None
        self._reading_paused = False
        self._write_paused = False
        self._drain_waiter: asyncio.Future[None] | None = None
        self._idle_flush_scheduled = False

    # ---- asyncio.Protocol callbacks -------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer_host = str(peer[0]) if isinstance(peer, tuple) and peer else "localhost"
        self.server.register(self)
        self.task = self.loop.create_task(self._run())

    def data_received(self, data: bytes) -> None:
        self._inbuf += data
        waiter = self._read_waiter
        if waiter is not None:
            if not waiter.done():
                waiter.set_result(None)
        elif (
            not self._reading_paused
            and len(self._inbuf) - self._inpos > READ_HIGH_WATER
            and self.transport is not None
        ):
            self._reading_paused = True
            self.transport.pause_reading()

    def eof_received(self) -> bool:
        # Close our side too: clients never half-close, so EOF means gone.
        self._eof = True
        self._wake_reader()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._eof = True
        self._wake_reader()
        self._wake_drain()
        if self.stmt_task is not None and not self.stmt_task.done():
            self.stmt_task.cancel()

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._wake_drain()

    def _wake_reader(self) -> None:
        if self._read_waiter is not None and not self._read_waiter.done():
            self._read_waiter.set_result(None)

    def _wake_drain(self) -> None:
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_result(None)

    # ---- reading ----------------------------------------------------------------------

    async def _wait_for_data(self) -> None:
        if self._eof:
            raise ConnectionLost("client closed the connection")
        if self._reading_paused and self.transport is not None:
            self._reading_paused = False
            self.transport.resume_reading()
        self._read_waiter = self.loop.create_future()
        try:
            await self._read_waiter
        finally:
            self._read_waiter = None

    def _consume(self, n: int) -> None:
        self._inpos += n
        if self._inpos >= len(self._inbuf):
            self._inbuf.clear()
            self._inpos = 0
        elif self._inpos > 1 << 16:
            del self._inbuf[: self._inpos]
            self._inpos = 0

    def has_buffered_input(self) -> bool:
        return self._inpos < len(self._inbuf)

    async def read_startup_packet(self) -> bytes:
        """Length-prefixed, untyped startup-phase packet; returns the body after the length."""
        while len(self._inbuf) - self._inpos < 4:
            await self._wait_for_data()
        (length,) = _I.unpack_from(self._inbuf, self._inpos)
        if length < 8 or length > m.MAX_STARTUP_PACKET_LENGTH:
            raise m.protocol_violation("invalid length of startup packet", fatal=True)
        while len(self._inbuf) - self._inpos < length:
            await self._wait_for_data()
        body = bytes(self._inbuf[self._inpos + 4 : self._inpos + length])
        self._consume(length)
        return body

    async def read_message(self, *, check_type: bool = True) -> tuple[int, bytes]:
        """Next typed message; bad type or length is FATAL 08P01 (framing is lost)."""
        while True:
            buf = self._inbuf
            pos = self._inpos
            avail = len(buf) - pos
            if avail >= 1 and check_type and buf[pos] not in m.FRONTEND_TYPES:
                raise m.protocol_violation(
                    f"invalid frontend message type {buf[pos]}", fatal=True
                )
            if avail >= 5:
                (length,) = _I.unpack_from(buf, pos + 1)
                if length < 4 or length > self.max_message_size:
                    raise m.protocol_violation("invalid message length", fatal=True)
                if avail > length:
                    typ = buf[pos]
                    body = bytes(buf[pos + 5 : pos + 1 + length])
                    self._consume(length + 1)
                    return typ, body
            await self._wait_for_data()

    # ---- writing ----------------------------------------------------------------------

    def flush(self) -> None:
        """Hand the output buffer to the transport (no waiting)."""
        if self.out:
            transport = self.transport
            if not self.closed and transport is not None and not transport.is_closing():
                transport.write(bytes(self.out))
                self.server.metric("bytes_sent", len(self.out))
            self.out.clear()

    async def flush_and_drain(self) -> None:
        """Flush and wait while the client is slow to read (backpressure)."""
        self.flush()
        if self.closed or self.transport is None or self.transport.is_closing():
            raise ConnectionLost("client closed the connection")
        while self._write_paused and not self.closed:
            self._drain_waiter = self.loop.create_future()
            try:
                await self._drain_waiter
            finally:
                self._drain_waiter = None
        if self.closed:
            raise ConnectionLost("client closed the connection")

    def flush_when_idle(self) -> None:
        """Flush once the running statement waits (e.g. for its next batch of rows),
        so slow streams reach the client promptly while fast ones still coalesce
        into one write with their CommandComplete and ReadyForQuery."""
        if not self._idle_flush_scheduled:
            self._idle_flush_scheduled = True
            self.loop.call_soon(self._idle_flush)

    def _idle_flush(self) -> None:
        self._idle_flush_scheduled = False
        task = self.stmt_task
        if task is not None and not task.done() and self.out:
            self.flush()

    def write_now(self, data: bytes) -> None:
        self.out += data
        self.flush()

    async def start_tls(self, context: ssl.SSLContext) -> None:
        """Upgrade after answering 'S' to SSLRequest."""
        if self.has_buffered_input():
            raise m.protocol_violation("received unencrypted data after SSL request", fatal=True)
        assert self.transport is not None
        self._read_waiter = None
        if self._reading_paused:
            self._reading_paused = False
            self.transport.resume_reading()
        try:
            new = await self.loop.start_tls(self.transport, self, context, server_side=True)
        except (OSError, ssl.SSLError, ConnectionError) as e:
            raise ConnectionLost(f"TLS handshake failed: {e}") from e
        if new is None:
            raise ConnectionLost("TLS handshake failed")
        self.transport = new
        self.tls_active = True

    def send_fatal(self, err: WeirError) -> None:
        if self.closed:
            return
        m.error_response(self.out, client_safe(err), severity="FATAL")
        self.flush()

    def shutdown(self) -> None:
        """Server stop: tell the client (57P01) and close."""
        if self.closed or self.transport is None:
            return
        self.send_fatal(
            WeirError(
                SqlState.ADMIN_SHUTDOWN,
                "terminating connection due to administrator command",
                severity="FATAL",
            )
        )
        self.closed = True
        if self.stmt_task is not None and not self.stmt_task.done():
            self.stmt_task.cancel()
        self._eof = True
        self._wake_reader()
        self._wake_drain()
        self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    # ---- lifecycle --------------------------------------------------------------------

    async def _run(self) -> None:
        from weir.pgwire.query import QueryHandler
        from weir.pgwire.startup import startup

        self.server.metric("connections_opened", 1)
        try:
            try:
                async with asyncio.timeout(self.server.auth_timeout):
                    session = await startup(self)
            except TimeoutError:
                log.info("pgwire: startup from %s timed out", self.peer_host)
                return
            if session is None:
                return
            self.session = session
            await QueryHandler(self, session).serve()
        except ConnectionLost as e:
            log.debug("pgwire: connection from %s closed: %s", self.peer_host, e)
        except WeirError as e:
            if e.severity not in ("FATAL", "PANIC"):
                e = WeirError(e.sqlstate, e.message, e.detail, e.hint, "FATAL", e.position)
            log.info("pgwire: closing connection from %s: %s", self.peer_host, e)
            self.send_fatal(e)
        except asyncio.CancelledError:
            log.debug("pgwire: connection handler for %s cancelled", self.peer_host)
        except Exception as e:
            log.exception("pgwire: internal error on connection from %s", self.peer_host)
            self.send_fatal(from_exception(e))
        finally:
            await self._cleanup()

    async def _cleanup(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            try:
                await session.close()
            except Exception:
                log.exception("pgwire: error closing session")
        self.closed = True
        if self.transport is not None:
            self.transport.close()
        self.server.unregister(self)
        self.server.metric("connections_closed", 1)
