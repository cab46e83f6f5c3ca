"""A peek's result on the coordinator: its schema, and its rows as they stream in from
the replica that answered first (reissued elsewhere if that replica dies before any row)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from weir.compute import protocol as P
from weir.errors import SqlState, WeirError

if TYPE_CHECKING:
    from weir.compute.controller.compute_controller import ComputeController
    from weir.compute.controller.connection import PeekEvent, ReplicaConnection

log = logging.getLogger(__name__)


class BatchStream:
    """The rows of a peek as they arrive from the replica that answered first."""

    def __init__(self, controller: ComputeController, cluster_id: str, body: dict[str, Any],
                 peek_id: str, conn: ReplicaConnection, queue: asyncio.Queue[PeekEvent], schema: pa.Schema,
                 attempt: int) -> None:
        self._controller = controller
        self._cluster_id = cluster_id
        self._body = body
        self._peek_id = peek_id
        self._conn = conn
        self._queue = queue
        self._schema = schema
        self._attempt = attempt
        self._batches = 0
        self._done = False

    def __aiter__(self) -> BatchStream:
        return self

    async def __anext__(self) -> pa.RecordBatch:
        while not self._done:
            try:
                conn, msg = await self._queue.get()
            except asyncio.CancelledError:
                self.cancel()
                raise
            if conn is not self._conn:
                continue  # a replica that lost the race
            if msg is None:
                await self._replica_lost()
            elif msg.type == P.PEEK_BATCH:
                self._batches += 1
                return P.batch_from_ipc(msg.attachments[0], self._schema)
            elif msg.type == P.PEEK_DONE:
                self._done = True
                if msg.body.get("canceled"):
                    raise WeirError(SqlState.QUERY_CANCELED, "canceling statement due to user request")
        raise StopAsyncIteration

    async def _replica_lost(self) -> None:
        name = self._conn.replica.replica_id
        if self._batches:
            self._done = True
            raise WeirError(SqlState.INTERNAL_ERROR,
                            f"replica {name} failed while returning the results of this query")
        log.info("peek %s: replica %s lost before its rows; reissuing", self._peek_id, name)
        try:
            result = await self._controller.run_peek(self._cluster_id, self._body, self._attempt + 1)
        except BaseException:
            self._done = True
            raise
        stream = result.batches
        assert isinstance(stream, BatchStream)
        if result.schema != self._schema:
            stream.cancel()
            self._done = True
            raise WeirError(SqlState.INTERNAL_ERROR, "replicas disagree on the result schema")
        self._peek_id, self._conn, self._queue = stream._peek_id, stream._conn, stream._queue
        self._attempt = stream._attempt

    def cancel(self) -> None:
        """Stop the peek on its replica (no more batches)."""
        if not self._done:
            self._done = True
            self._conn.cancel_peek(self._peek_id)

    async def aclose(self) -> None:
        self.cancel()


@dataclass
class PeekResult:
    """A peek's result: its schema now, its rows as they stream in."""

    schema: pa.Schema
    batches: AsyncIterator[pa.RecordBatch]
    replica_id: str
    peek_id: str = ""  # the replica's introspection names the peek's Spark job `Dataflow: peek <peek_id>`

    async def collect(self) -> pa.Table:
        return pa.Table.from_batches([b async for b in self.batches], schema=self.schema)

    async def cancel(self) -> None:
        aclose = getattr(self.batches, "aclose", None)
        if aclose is not None:
            await aclose()

    async def __aenter__(self) -> PeekResult:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.cancel()
