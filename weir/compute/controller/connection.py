"""One replica as the compute controller sees it: its process state and its TCP
connection, which routes the replica's responses to waiting peeks and describes
and hands dataflow messages to the controller's dataflow bookkeeping."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from weir.compute import protocol as P

log = logging.getLogger(__name__)

IncarnationFn = Callable[[], "int | Awaitable[int]"]
PeekEvent = tuple["ReplicaConnection", "P.Message | None"]  # None: the connection was lost


class ConnectionOwner(Protocol):
    """What a connection reports to: the compute controller."""

    def on_dataflow_message(self, conn: ReplicaConnection, msg: P.Message) -> bool: ...

    def on_connection_lost(self, conn: ReplicaConnection, reason: str) -> None: ...


class ReplicaGone(Exception):
    """The replica's connection closed before it answered."""


@dataclass
class ReplicaState:
    cluster_id: str
    replica_id: str
    size: str
    incarnation_fn: IncarnationFn
    incarnation: int | None = None
    conn: ReplicaConnection | None = None
    address: tuple[str, int] | None = None
    alive: bool = False  # its process is up (between on_ready and on_exit)
    pid: int | None = None
    ui_url: str | None = None
    last_heartbeat: float | None = None
    last_status: dict[str, Any] = field(default_factory=dict)
    reason: str | None = "starting"
    exit_code: int | None = None
    reconnect: asyncio.Task[None] | None = None
    logging: dict[str, Any] | None = None  # CreateInstance's logging configuration, this replica's own


class ReplicaConnection:
    """One TCP connection to a replica: routes responses to waiting peeks."""

    def __init__(self, owner: ConnectionOwner, replica: ReplicaState,
                 reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.owner = owner
        self.replica = replica
        self.reader = reader
        self.out = P.MessageWriter(writer)
        self.peeks: dict[str, asyncio.Queue[PeekEvent]] = {}
        self.describes: dict[str, asyncio.Future[P.Message]] = {}
        self.closed = False
        self.task: asyncio.Task[None] | None = None

    async def handshake(self, incarnation: int, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        hello = await P.read_message(self.reader)
        if hello is None or hello.type != P.HELLO:
            raise P.ProtocolError(f"expected Hello, got {hello and hello.type}")
        if hello.body.get("protocol") != P.PROTOCOL_VERSION:
            raise P.ProtocolError(f"replica speaks protocol {hello.body.get('protocol')}, "
                                  f"controller {P.PROTOCOL_VERSION}")
        await self.out.send({"type": P.CREATE_INSTANCE, "replica_id": self.replica.replica_id,
                             "incarnation": incarnation, **(extra or {})})
        while True:
            msg = await P.read_message(self.reader)
            if msg is None:
                raise ConnectionResetError("replica closed the connection during CreateInstance")
            if msg.type == P.INSTANCE_CREATED:
                return hello.body
            if msg.type == P.ERROR:
                raise P.ProtocolError(str(msg.body.get("message")))
            self.dispatch(msg)

    def start(self) -> None:
        self.task = asyncio.create_task(self._read_loop(), name=f"conn-{self.replica.replica_id}")

    async def _read_loop(self) -> None:
        reason = "connection closed by replica"
        try:
            while (msg := await P.read_message(self.reader)) is not None:
                self.dispatch(msg)
        except (P.ProtocolError, ConnectionError, OSError) as e:
            reason = f"connection lost: {e}"
        except asyncio.CancelledError:
            reason = "connection closed"
        finally:
            self.lost(reason)

    def dispatch(self, msg: P.Message) -> None:
        kind, body = msg.type, msg.body
        if kind == P.STATUS:
            self.replica.last_heartbeat = time.time()
            self.replica.last_status = body
            self.replica.ui_url = body.get("ui_url", self.replica.ui_url)
        elif kind in (P.PEEK_RESPONSE, P.PEEK_BATCH, P.PEEK_DONE):
            peek_id = str(body.get("peek_id"))
            queue = self.peeks.get(peek_id)
            if queue is not None:
                queue.put_nowait((self, msg))
                if kind == P.PEEK_DONE or (kind == P.PEEK_RESPONSE and body.get("status") != "rows"):
                    self.peeks.pop(peek_id, None)
        elif kind == P.DESCRIBE_RESPONSE:
            fut = self.describes.pop(str(body.get("request_id")), None)
            if fut is not None and not fut.done():
                fut.set_result(msg)
        elif kind == P.ERROR:
            log.warning("replica %s: %s", self.replica.replica_id, body.get("message"))
        elif self.owner.on_dataflow_message(self, msg):
            pass
        elif kind != P.PONG:
            log.warning("replica %s sent unexpected %s", self.replica.replica_id, kind)

    def send_peek(self, peek_id: str, queue: asyncio.Queue[PeekEvent], body: dict[str, Any]) -> bool:
        if self.closed or self.out.closed:
            return False
        self.peeks[peek_id] = queue
        self.out.send_nowait({**body, "peek_id": peek_id})
        return True

    def cancel_peek(self, peek_id: str) -> None:
        if self.peeks.pop(peek_id, None) is not None and not self.closed:
            self.out.send_nowait({"type": P.CANCEL_PEEK, "peek_id": peek_id})

    def describe(self, request_id: str, body: dict[str, Any]) -> asyncio.Future[P.Message]:
        fut: asyncio.Future[P.Message] = asyncio.get_running_loop().create_future()
        if self.closed:
            fut.set_exception(ReplicaGone())
            return fut
        self.describes[request_id] = fut
        self.out.send_nowait({**body, "request_id": request_id})
        return fut

    def lost(self, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        self.out.close()
        for queue in self.peeks.values():
            queue.put_nowait((self, None))
        self.peeks.clear()
        for fut in self.describes.values():
            if not fut.done():
                fut.set_exception(ReplicaGone())
        self.describes.clear()
        self.owner.on_connection_lost(self, reason)


