"""`SourceRunner`: drives one load generator source against the storage controller.

It creates (or opens) a shard per relation, writes the snapshot once, then every tick
appends the generator's updates for all relations in ONE `StorageController.append`
(one group commit, so a tick lands in every relation at the same timestamp or not at
all) and saves the generator's state after each successful append.

Exactly-once across crashes: the state store is not written in the data's commit, so
a crash between an append and the state save would replay that tick. With a
`progress_shard_id` the runner also keeps a progress relation (Materialize's
`<source>_progress`: one row, the number of ticks the shards hold) in the same group
commit, and on start lines the generator up with it; without one, a crash in that
window can duplicate one tick (or the snapshot). A clean `stop()` never does.
The storage controller must have replayed its write-ahead files before `start()`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from weir.errors import SqlState, WeirError
from weir.storage.sources.generator import LoadGenerator
from weir.storage.sources.spec import PROGRESS_COLUMNS, LoadGeneratorSpec, subsources

if TYPE_CHECKING:
    from weir.storage.controller import StorageController

log = logging.getLogger(__name__)

_RETRY_S = 0.5


class StateStore(Protocol):
    """Where a runner keeps its generator's state (e.g. catalog or shard metadata).
    Either method may be a coroutine function."""

    def load(self) -> dict[str, Any] | None | Awaitable[dict[str, Any] | None]: ...

    def save(self, state: dict[str, Any]) -> None | Awaitable[None]: ...


@dataclass
class CallbackStateStore:
    """A StateStore from two callables."""

    load_fn: Callable[[], Any]
    save_fn: Callable[[dict[str, Any]], Any]

    def load(self) -> Any:
        return self.load_fn()

    def save(self, state: dict[str, Any]) -> Any:
        return self.save_fn(state)


class MemoryStateStore:
    """A StateStore in memory (tests; sources that need not survive a restart)."""

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        self.state = state
        self.saves = 0

    def load(self) -> dict[str, Any] | None:
        return self.state

    def save(self, state: dict[str, Any]) -> None:
        self.state = state
        self.saves += 1


async def _resolve(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def progress_table(old: int | None, new: int) -> pa.Table:
    """Progress updates: retract the old offset (if any), insert the new one."""
    offsets = ([old] if old is not None else []) + [new]
    diffs = ([-1] if old is not None else []) + [1]
    return pa.table({"offset": pa.array(offsets, pa.int64()), "mz_diff": pa.array(diffs, pa.int64())})


class SourceRunner:
    def __init__(self, storage: StorageController, source_id: str, spec: LoadGeneratorSpec,
                 shard_ids: dict[str, str], state_store: StateStore, *,
                 progress_shard_id: str | None = None,
                 clock_ms: Callable[[], int] | None = None) -> None:
        """`shard_ids` maps relation names (see `subsources`; COUNTER's is "") to shard ids;
        relations left out are not written (FOR TABLES (...))."""
        self.storage = storage
        self.source_id = source_id
        self.spec = spec
        self.relations = subsources(spec)
        names = {name for name, _ in self.relations}
        unknown = set(shard_ids) - names
        if unknown or not shard_ids:
            raise WeirError(SqlState.INTERNAL_ERROR,
                            f"source {source_id}: shard ids for {sorted(shard_ids)}, "
                            f"but its relations are {sorted(names)}")
        self.shard_ids = dict(shard_ids)
        self.state_store = state_store
        self.progress_shard_id = progress_shard_id
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self.generator: LoadGenerator | None = None
        self._written_offset: int | None = None  # the progress row the progress shard holds
        self._pending: tuple[dict[str, pa.Table], dict[str, Any], int] | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self.ticks_written = 0
        self.last_write_ts: int | None = None
        self.last_error: BaseException | None = None

    # ---- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Open the shards, write the snapshot if this source has never written one, resume
        the generator where the shards left off, and start ticking. Returns once the
        snapshot is durable."""
        for name, cols in self.relations:
            if name in self.shard_ids:
                await self.storage.ensure_collection(self.shard_ids[name], cols)
        if self.progress_shard_id is not None:
            await self.storage.ensure_collection(self.progress_shard_id, PROGRESS_COLUMNS)
        saved = await _resolve(self.state_store.load())
        offset = await self._read_progress()
        if saved is None and offset is None:
            gen = LoadGenerator(self.spec, epoch_ms=self._clock_ms())
            self.generator = gen
            ts = await self._write(gen.snapshot(), gen.next_tick)
            self.last_write_ts = ts
            await self._save(gen.state())
            log.info("source %s: snapshot written at %s", self.source_id, ts)
        else:
            gen = LoadGenerator(self.spec, saved) if saved is not None \
                else LoadGenerator(self.spec, epoch_ms=self._clock_ms())
            self.generator = gen
            self._written_offset = offset
            if offset is not None and gen.next_tick != offset:
                log.info("source %s: state at tick %s, shards at %s; catching up",
                         self.source_id, gen.next_tick, offset)
                gen.advance_to(offset)
                await self._save(gen.state())
        self._stop.clear()
        self._task = asyncio.create_task(self._loop(), name=f"source-{self.source_id}")

    async def stop(self, timeout: float = 10.0) -> None:
        """Stop ticking; an append in flight finishes (and its state is saved) first."""
        self._stop.set()
        task, self._task = self._task, None
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout)
        except TimeoutError:
            log.warning("source %s: stopping an append in flight", self.source_id)
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - shutting down
                pass

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    # ---- ticking ---------------------------------------------------------------------------
    async def _loop(self) -> None:
        gen = self.generator
        assert gen is not None
        loop = asyncio.get_running_loop()
        interval = self.spec.tick_ms / 1000
        deadline = loop.time()  # as in Materialize, the first tick comes right away
        while not self._stop.is_set() and (gen.ticking or self._pending is not None):
            delay = deadline - loop.time()
            if delay > 0:
                try:
                    await asyncio.wait_for(self._stop.wait(), delay)
                    break
                except TimeoutError:
                    pass
            deadline = max(deadline + interval, loop.time())  # fall behind rather than burst
            if self._pending is None:
                updates = gen.tick(self._clock_ms())
                self._pending = (updates, gen.state(), gen.next_tick)
            updates, state, offset = self._pending
            try:
                ts = await self._write(updates, offset)
            except WeirError as e:
                self.last_error = e
                if e.sqlstate == SqlState.UNDEFINED_TABLE:
                    log.info("source %s: a shard was dropped; stopping", self.source_id)
                    return
                log.warning("source %s: append failed, will retry: %s", self.source_id, e)
                deadline = loop.time() + _RETRY_S
                continue
            except Exception as e:  # noqa: BLE001 - keep the source alive; retry the same tick
                self.last_error = e
                log.exception("source %s: append failed, will retry", self.source_id)
                deadline = loop.time() + _RETRY_S
                continue
            self._pending = None
            self.ticks_written += 1
            if ts is not None:
                self.last_write_ts = ts
            await self._save(state)

    async def _write(self, updates: dict[str, pa.Table], offset: int) -> int | None:
        """One group commit of `updates` (relation -> table) plus the progress row."""
        batch = {self.shard_ids[name]: t for name, t in updates.items()
                 if name in self.shard_ids and t.num_rows > 0}
        if self.progress_shard_id is not None and offset != self._written_offset:
            batch[self.progress_shard_id] = progress_table(self._written_offset, offset)
        if not batch:
            return None
        ts = await self.storage.append(batch)
        if self.progress_shard_id is not None:
            self._written_offset = offset
        return ts

    async def _save(self, state: dict[str, Any]) -> None:
        try:
            await _resolve(self.state_store.save(state))
        except Exception as e:  # noqa: BLE001 - the next save covers it; progress guards replays
            self.last_error = e
            log.exception("source %s: saving generator state failed", self.source_id)

    async def _read_progress(self) -> int | None:
        """The tick count the shards hold, from the progress relation (None if absent)."""
        sid = self.progress_shard_id
        if sid is None:
            return None
        since, _upper = self.storage.frontiers(sid)
        ts = max(self.storage.oracle.read_ts(), since)
        with self.storage.acquire_read_hold([sid], ts):
            snap = await self.storage.snapshot(sid, ts)
        rows = [o for o, d in zip(snap.column("offset").to_pylist(),
                                  snap.column("mz_diff").to_pylist(), strict=True) if d > 0]
        if len(rows) > 1 or any(o is None for o in rows):
            raise WeirError(SqlState.INTERNAL_ERROR,
                            f"source {self.source_id}: progress relation holds {rows}, not one offset")
        return rows[0] if rows else None
