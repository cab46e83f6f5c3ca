"""DECLARE ... CURSOR / FETCH [WITH (timeout)] / CLOSE. A cursor's rows are produced by a
background task into a queue, so a FETCH that times out leaves the producer intact."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from weir.adapter import api
from weir.catalog.vars import duration_ms
from weir.errors import SqlState, WeirError
from weir.sql import statements as st

if TYPE_CHECKING:
    from weir.adapter.session import Session

_END = object()


@dataclass
class Cursor:
    columns: list[api.Column]
    queue: asyncio.Queue[Any] = field(default_factory=lambda: asyncio.Queue(maxsize=64))
    task: asyncio.Task[None] | None = None
    pending: list[tuple[Any, ...]] = field(default_factory=list)
    done: bool = False

    async def close(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task


async def _produce(batches: AsyncIterator[list[tuple[Any, ...]]], queue: asyncio.Queue[Any]) -> None:
    try:
        async for batch in batches:
            await queue.put(batch)
        await queue.put(_END)
    except asyncio.CancelledError:
        raise
    except BaseException as e:  # noqa: BLE001 - handed to the FETCH that reads it
        await queue.put(e)


async def declare(session: Session, stmt: st.DeclareCursor) -> api.Command:
    from weir.adapter import planning, subscribe

    if session.txn is None or not session.txn.explicit:
        raise WeirError(SqlState.NO_ACTIVE_SQL_TRANSACTION, "DECLARE CURSOR can only be used in transaction blocks")
    if stmt.name in session.cursors:
        raise WeirError(SqlState.DUPLICATE_CURSOR, f'cursor "{stmt.name}" already exists')
    inner = stmt.inner
    if isinstance(inner, st.Subscribe):
        columns, batches = await subscribe.subscribe(session, inner)
    elif isinstance(inner, st.Query):
        rows = await planning.run(session, inner.expr, as_of=inner.as_of)
        columns, batches = rows.columns, rows.batches
    else:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "DECLARE CURSOR needs a SELECT or SUBSCRIBE")
    cur = Cursor(columns)
    cur.task = asyncio.create_task(_produce(batches, cur.queue), name=f"cursor-{stmt.name}")
    session.cursors[stmt.name] = cur
    return api.Command("DECLARE CURSOR")


async def fetch(session: Session, stmt: st.Fetch) -> api.Rows:
    cur = session.cursors.get(stmt.name)
    if cur is None:
        raise WeirError(SqlState.INVALID_CURSOR_NAME, f'cursor "{stmt.name}" does not exist')
    want = stmt.count
    timeout = duration_ms(stmt.timeout) / 1000 if stmt.timeout is not None else None
    out: list[tuple[Any, ...]] = []

    def take() -> None:
        n = len(cur.pending) if want is None else min(want - len(out), len(cur.pending))
        out.extend(cur.pending[:n])
        del cur.pending[:n]

    take()
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    while not cur.done and (want is None or len(out) < want):
        if out and timeout is None and want is not None:
            # without a timeout, return as soon as some rows are there and no more are ready
            if cur.queue.empty():
                break
        remaining = None if deadline is None else max(0.0, deadline - loop.time())
        if remaining == 0.0 and cur.queue.empty():
            break
        try:
            item = await asyncio.wait_for(cur.queue.get(), remaining) if remaining is not None \
                else await cur.queue.get()
        except TimeoutError:
            break
        if item is _END:
            cur.done = True
        elif isinstance(item, BaseException):
            cur.done = True
            raise item
        else:
            cur.pending.extend(item)
            take()
    rows = out

    async def gen() -> AsyncIterator[list[tuple[Any, ...]]]:
        yield rows

    return api.Rows(cur.columns, gen(), "FETCH")


async def close(session: Session, stmt: st.CloseCursor) -> api.Command:
    if stmt.name is None:
        await close_all(session)
        return api.Command("CLOSE CURSOR ALL")
    cur = session.cursors.pop(stmt.name, None)
    if cur is None:
        raise WeirError(SqlState.INVALID_CURSOR_NAME, f'cursor "{stmt.name}" does not exist')
    await cur.close()
    return api.Command("CLOSE CURSOR")


async def close_all(session: Session) -> None:
    cursors, session.cursors = session.cursors, {}
    for cur in cursors.values():
        await cur.close()
