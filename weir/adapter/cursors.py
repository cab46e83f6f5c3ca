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
    # A query's cursor keeps the rows it has read, so it can move back (PostgreSQL's SCROLL);
    # position 0 is before the first row, len(rows) + 1 after the last. A SUBSCRIBE's streams.
    scrollable: bool = False
    backward: bool = True  # DECLARE ... NO SCROLL: forward only
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    position: int = 0

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
    cur = Cursor(columns, scrollable=isinstance(inner, st.Query), backward=stmt.scroll)
    cur.task = asyncio.create_task(_produce(batches, cur.queue), name=f"cursor-{stmt.name}")
    session.cursors[stmt.name] = cur
    return api.Command("DECLARE CURSOR")


async def fetch(session: Session, stmt: st.Fetch) -> api.Rows | api.Command:
    cur = session.cursors.get(stmt.name)
    if cur is None:
        raise WeirError(SqlState.INVALID_CURSOR_NAME, f'cursor "{stmt.name}" does not exist')
    if cur.scrollable:
        rows = await _scroll(cur, stmt)
    elif stmt.direction != "forward" or stmt.move:
        raise WeirError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE, "cursor can only scan forward",
                        hint="A SUBSCRIBE cursor streams its updates: FETCH reads them forward only.")
    else:
        rows = await _stream(cur, stmt)
    if stmt.move:
        return api.Command(f"MOVE {len(rows)}")

    async def gen() -> AsyncIterator[list[tuple[Any, ...]]]:
        yield rows

    return api.Rows(cur.columns, gen(), "FETCH")


async def _read(cur: Cursor, upto: int | None) -> None:
    """Read the query's rows until there are `upto` (None: all of them)."""
    while not cur.done and (upto is None or len(cur.rows) < upto):
        cur.rows.extend(_rows_of(cur, await cur.queue.get()))


async def _scroll(cur: Cursor, stmt: st.Fetch) -> list[tuple[Any, ...]]:
    """PostgreSQL's FETCH / MOVE on a cursor that can scroll (portal.c's DoPortalRunFetch):
    the rows in the direction asked, the cursor left on the last one returned, or before the
    first / after the last row when the fetch ran off an end."""
    n, pos = stmt.count, cur.position
    if stmt.direction != "forward" and not cur.backward:
        raise WeirError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE, "cursor can only scan forward",
                        hint="Declare it with SCROLL option to enable backward scan.")
    if stmt.direction in ("absolute", "relative"):
        assert n is not None
        target = n if stmt.direction == "absolute" else pos + n
        if stmt.direction == "absolute" and n < 0:
            await _read(cur, None)
            target = len(cur.rows) + 1 + n
        elif stmt.direction == "relative" and pos > len(cur.rows):  # after the end: now known
            await _read(cur, None)
            target = len(cur.rows) + 1 + n
        if target <= 0:
            cur.position = 0
            return []
        await _read(cur, target)
        if target > len(cur.rows):
            cur.position = len(cur.rows) + 1
            return []
        cur.position = target
        return [cur.rows[target - 1]]
    if stmt.direction == "forward":
        await _read(cur, None if n is None else pos + n)
        out = cur.rows[pos:] if n is None else cur.rows[pos:pos + n]
        cur.position = pos + n if n is not None and len(out) == n else len(cur.rows) + 1
        return out
    if pos > len(cur.rows):  # after the end: the rows before it are all the rows
        await _read(cur, None)
        pos = len(cur.rows) + 1
    stop = 0 if n is None else max(pos - 1 - n, 0)
    out = [cur.rows[k - 1] for k in range(pos - 1, stop, -1)]
    cur.position = pos - len(out) if n is not None and len(out) == n else 0
    return out


async def _stream(cur: Cursor, stmt: st.Fetch) -> list[tuple[Any, ...]]:
    """FETCH forward from a SUBSCRIBE: what has arrived, waiting as its timeout says."""
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
        cur.pending.extend(_rows_of(cur, item))
        take()
    return out


def _rows_of(cur: Cursor, item: Any) -> list[tuple[Any, ...]]:
    """What the producer queued: a batch of rows, its end (none, and the cursor is done)
    or its error (raised, and the cursor is done)."""
    if item is _END or isinstance(item, BaseException):
        cur.done = True
        if isinstance(item, BaseException):
            raise item
        return []
    return item


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
