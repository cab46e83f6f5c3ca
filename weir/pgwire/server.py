"""The listening side of pgwire: binds the port, owns the set of live connections,
and shuts them down (57P01) on stop."""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable

from weir.adapter.api import Coordinator
from weir.pgwire.connection import PgConnection

log = logging.getLogger("weir.pgwire")

MetricsCallback = Callable[[str, float], None]


class PgServer:
    """PostgreSQL wire protocol v3 server in front of a `Coordinator`.

    `metrics`, if given, is called as metrics(name, amount) for: connections_opened,
    connections_closed, auth_failures, cancel_requests, messages_received, queries,
    errors, bytes_sent. It must be cheap and must not raise.
    """

    def __init__(
        self,
        coordinator: Coordinator,
        host: str = "127.0.0.1",
        port: int = 6875,
        *,
        tls: ssl.SSLContext | None = None,
        max_message_size: int = 256 * 1024 * 1024,
        metrics: MetricsCallback | None = None,
        auth_timeout: float = 60.0,
    ) -> None:
        self.coordinator = coordinator
        self.host = host
        self.port = port
        self.tls = tls
        self.max_message_size = max_message_size
        self.metrics = metrics
        self.auth_timeout = auth_timeout
        self.connections: set[PgConnection] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        """Bind and start accepting; with port 0, `self.port` becomes the real port."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: PgConnection(self), self.host, self.port, reuse_address=True, backlog=1024
        )
        sockets = self._server.sockets
        if sockets:
            self.port = sockets[0].getsockname()[1]
        log.info("pgwire: listening on %s:%s", self.host, self.port)

    async def stop(self, grace: float = 5.0) -> None:
        """Stop listening, send 57P01 to every client, and wait for sessions to close."""
        if self._server is not None:
            self._server.close()
        conns = list(self.connections)
        for conn in conns:
            conn.shutdown()
        tasks = [c.task for c in conns if c.task is not None and not c.task.done()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=grace)
            for task in pending:
                task.cancel()
            for conn in conns:
                if conn.task in pending:
                    conn.abort()
            if pending:
                await asyncio.wait(pending, timeout=grace)
        for conn in conns:  # clients that stopped reading: don't wait on their buffers
            transport = conn.transport
            # a closed TLS transport has dropped its protocol: asking its buffer size raises
            if transport is not None and not transport.is_closing() and transport.get_write_buffer_size():
                conn.abort()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    def register(self, conn: PgConnection) -> None:
        self.connections.add(conn)

    def unregister(self, conn: PgConnection) -> None:
        self.connections.discard(conn)

    def metric(self, name: str, amount: float) -> None:
        if self.metrics is not None:
            try:
                self.metrics(name, amount)
            except Exception:
                log.debug("pgwire: metrics callback failed", exc_info=True)
