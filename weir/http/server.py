"""HTTP endpoints: /metrics (Prometheus text format) and /health. A minimal HTTP/1.1
GET server on asyncio, so it shares the coordinator's event loop."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

log = logging.getLogger(__name__)


class HttpServer:
    def __init__(self, host: str, port: int, health: Callable[[], dict[str, Any]]) -> None:
        self.host = host
        self.port = port
        self._health = health
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            line = request.split(b"\r\n", 1)[0].decode("latin-1")
            parts = line.split()
            method, path = (parts[0], parts[1]) if len(parts) >= 2 else ("", "")
            path = path.split("?", 1)[0]
            if method not in ("GET", "HEAD"):
                status, ctype, body = "405 Method Not Allowed", "text/plain", b"method not allowed\n"
            elif path == "/metrics":
                status, ctype, body = "200 OK", CONTENT_TYPE_LATEST, generate_latest(REGISTRY)
            elif path in ("/health", "/api/health"):
                info = self._health()
                status = "200 OK" if info.get("status") == "ok" else "503 Service Unavailable"
                ctype, body = "application/json", json.dumps(info).encode() + b"\n"
            else:
                status, ctype, body = "404 Not Found", "text/plain", b"not found\n"
            head = (f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                    "Connection: close\r\n\r\n").encode()
            writer.write(head + (body if method == "GET" else b""))
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            pass
        except Exception:  # noqa: BLE001 - one bad request must not take the server down
            log.exception("http request failed")
        finally:
            writer.close()
