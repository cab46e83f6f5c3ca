"""The storage controller: the coordinator's view of every shard it writes (tables,
builtin relations). Group-commits writes once per tick through a write-ahead file so
a multi-shard commit is all-or-nothing across crashes, advances uppers every tick,
holds `since` back for reads in flight, and compacts."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

from weir.errors import SqlState, WeirError
from weir.types import PgType

log = logging.getLogger(__name__)

COMPACTION_WINDOW_MS = 1000


@dataclass
class _Collection:
    shard: Any
    columns: list[tuple[str, PgType, bool]]
    durable_upper: int
    upper: int
    since: int
    durable_since: int
    holds: dict[int, int] = field(default_factory=dict)  # hold id -> timestamp
    dirty_since_compaction: bool = False
    # Written by replicas (materialized view outputs): the coordinator never advances the
    # upper, it follows the shard's durable upper.
    external: bool = False
    # an external collection whose writer reports its upper (observe_upper) instead of
    # being polled every tick (a replica's introspection shard: its heartbeat says)
    reported: bool = False
    # how far since trails upper when nothing holds it (RETAIN HISTORY)
    window_ms: int = COMPACTION_WINDOW_MS
    persisted_tick: int = 0  # the tick its frontiers were last made durable
    # no data at a time past this: the latest append with rows (before one in this process,
    # everything is below the durable upper found at opening); `contents` relies on it
    last_write: int = 0
    cached: tuple[int, pa.Table] | None = None  # (last_write, rows) of `contents`

    def advance_since(self) -> None:
        held = min(self.holds.values(), default=self.upper)
        self.since = max(self.since, min(self.upper - self.window_ms, held))


@dataclass
class _Pending:
    updates: dict[str, pa.Table]
    done: asyncio.Future[int]


class ReadHold:
    """Keeps `since` of some collections at or below a timestamp until released."""

    def __init__(self, controller: StorageController, hold_id: int, shard_ids: list[str], ts: int) -> None:
        self._controller = controller
        self.hold_id = hold_id
        self.shard_ids = shard_ids
        self.ts = ts
        self._released = False
        self._others: list[ReadHold] = []

    def also(self, other: ReadHold) -> None:
        """Release `other` with this one (holds at other times, on other collections)."""
        self._others.append(other)

    def downgrade(self, ts: int) -> None:
        """Let `since` advance up to `ts` (a subscription that has moved on)."""
        if ts > self.ts and not self._released:
            self.ts = ts
            for sid in self.shard_ids:
                c = self._controller.collections.get(sid)
                if c is not None and self.hold_id in c.holds:
                    c.holds[self.hold_id] = ts

    def move_to(self, ts: int) -> None:
        """Hold at `ts`, earlier or later: earlier only where every collection's since
        still allows it (another hold kept it there); raises otherwise, holding as before."""
        for sid in self.shard_ids:
            c = self._controller.collections.get(sid)
            if c is not None and ts < c.since:
                raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                                f"Timestamp ({ts}) is not valid for all inputs: since is {c.since}")
        self.ts = ts
        for sid in self.shard_ids:
            c = self._controller.collections.get(sid)
            if c is not None and self.hold_id in c.holds:
                c.holds[self.hold_id] = ts

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._controller.release_hold(self)
            for other in self._others:
                other.release()

    def __enter__(self) -> ReadHold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class StorageController:
    def __init__(self, store: Any, oracle: Any, wal_dir: Path, *, epoch: int = 1,
                 tick_ms: int = 1000, persist_every_ticks: int = 5, compact_every_ticks: int = 30,
                 persist_lag_ticks: int | None = None, persist_per_round: int = 8) -> None:
        self.store = store
        self.oracle = oracle
        self.epoch = epoch
        self.wal_dir = wal_dir
        self.wal_dir.mkdir(parents=True, exist_ok=True)
        self.tick_ms = tick_ms
        self.persist_every_ticks = persist_every_ticks
        # An idle collection's frontiers only move with time: making them durable is an
        # Iceberg commit per collection (two, with its since), and doing it for every builtin
        # every 5 s kept an idle server at 15% of a core and stalled writes behind the burst;
        # once a minute, a server holding 144 collections (the test suite's shared one)
        # still spent a fifth to half of a core on it. They are made durable once they are
        # this many ticks old (10 min at 1 s ticks), a few collections per round; a restart
        # moves them on at its first tick.
        self.persist_lag_ticks = persist_every_ticks * 120 if persist_lag_ticks is None else persist_lag_ticks
        self.persist_per_round = persist_per_round
        self.compact_every_ticks = compact_every_ticks
        self.collections: dict[str, _Collection] = {}
        self._pending: list[_Pending] = []
        self._wake = asyncio.Event()
        # Writes (appends, frontier updates, compaction) run one at a time, in order;
        # reads (scan planning, snapshots) run beside them.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="storage-write")
        self._read_executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="storage-read")
        self._task: asyncio.Task[None] | None = None
        self._next_hold = 0
        self._ticks = 0
        self._stopping = False
        self.on_commit: list[Callable[[int], None]] = []
        self.commits = 0

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def _read(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._read_executor, fn, *args)

    # ---- lifecycle -------------------------------------------------------------

    async def _open_one(self, shard_id: str, *, external: bool = False) -> None:
        shard = await self._run(self.store.open_shard, shard_id)
        fr = await self._run(shard.frontiers)
        upper = fr.upper if external else max(fr.upper, self.oracle.read_ts() + 1)
        self.collections[shard_id] = _Collection(shard, list(shard.columns), fr.upper, upper,
                                                 fr.since, fr.since, external=external,
                                                 last_write=fr.upper - 1)

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="storage-controller")

    async def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        try:
            await self._persist_frontiers(everything=True)
        except Exception:  # noqa: BLE001 - best effort at shutdown
            log.exception("persisting frontiers at shutdown")
        self._executor.shutdown(wait=True)
        self._read_executor.shutdown(wait=True)

    # ---- collections -----------------------------------------------------------
    async def create_collection(self, shard_id: str, columns: list[tuple[str, PgType, bool]], *,
                                external: bool = False, initial_upper: int | None = None,
                                readable_from: int | None = None) -> None:
        """`readable_from`: the collection's first since (default: just before its upper). A
        materialized view's output has no contents before its as_of: a read there would
        answer empty, not with the view's contents."""
        upper = initial_upper if initial_upper is not None else self.oracle.read_ts() + 1
        shard = await self._run(lambda: self.store.create_shard(shard_id, columns, initial_upper=upper))
        self.collections[shard_id] = _Collection(shard, list(columns), upper, upper,
                                                 upper - 1 if readable_from is None else readable_from,
                                                 upper - 1, external=external, last_write=upper - 1)

    async def ensure_collection(self, shard_id: str, columns: list[tuple[str, PgType, bool]],
                                *, external: bool = False, initial_upper: int | None = None,
                                readable_from: int | None = None) -> None:
        if shard_id in self.collections:
            return
        exists = await self._run(self.store.shard_exists, shard_id)
        if exists:
            await self._open_one(shard_id, external=external)
        else:
            await self.create_collection(shard_id, columns, external=external, initial_upper=initial_upper,
                                         readable_from=readable_from)

    async def drop_collection(self, shard_id: str) -> None:
        self.collections.pop(shard_id, None)
        await self._run(self.store.drop_shard, shard_id)

    def frontiers(self, shard_id: str) -> tuple[int, int]:
        c = self.collections[shard_id]
        return c.since, c.upper

    # ---- reads -----------------------------------------------------------------
    def set_compaction_window(self, shard_id: str, window_ms: int) -> None:
        """How far since trails upper for this collection from now on (RETAIN HISTORY)."""
        c = self.collections.get(shard_id)
        if c is not None:
            c.window_ms = window_ms

    def acquire_read_hold(self, shard_ids: list[str], ts: int) -> ReadHold:
        """Pin `since` of these collections at `ts`; raise if `ts` is already compacted away."""
        for sid in shard_ids:
            c = self.collections.get(sid)
            if c is None:
                raise WeirError(SqlState.UNDEFINED_TABLE, f"collection {sid} does not exist")
            if ts < c.since:
                raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                                f"Timestamp ({ts}) is not valid for all inputs: since is {c.since}")
        self._next_hold += 1
        hold = ReadHold(self, self._next_hold, list(shard_ids), ts)
        for sid in shard_ids:
            self.collections[sid].holds[hold.hold_id] = ts
        return hold

    def release_hold(self, hold: ReadHold) -> None:
        for sid in hold.shard_ids:
            c = self.collections.get(sid)
            if c is not None:
                c.holds.pop(hold.hold_id, None)

    async def scan_plan(self, shard_id: str, as_of: int) -> Any:
        c = self.collections[shard_id]
        return await self._read(c.shard.data_files, as_of)

    async def read_updates(self, shard_id: str, lower: int, upper: int) -> pa.Table:
        """Updates with lower <= time < upper (a hold must keep since below lower)."""
        c = self.collections[shard_id]
        return await self._read(c.shard.read_updates, lower, upper)

    async def snapshot(self, shard_id: str, as_of: int) -> pa.Table:
        c = self.collections[shard_id]
        return await self._read(c.shard.snapshot, as_of)

    async def contents(self, shard_id: str, as_of: int) -> pa.Table:
        """Contents at `as_of` as plain rows (each repeated by its multiplicity). A collection
        this controller writes keeps its latest contents in memory: a read at or after its
        latest write gets them without reading the shard (catalog reads, again and again)."""
        c = self.collections[shard_id]
        if c.external or as_of < c.last_write:
            return await self._read(c.shard.read, as_of)
        cached = c.cached
        if cached is not None and cached[0] == c.last_write:
            return cached[1]
        version = c.last_write
        rows = await self._read(c.shard.read, as_of)
        if c.last_write == version:
            c.cached = (version, rows)
        return rows

    async def file_times(self, shard_id: str) -> list[tuple[int, int, int]]:
        """Each data file's time range and size (weir.storage.persist.Shard.file_times)."""
        return await self._read(self.collections[shard_id].shard.file_times)

    def natural_since(self, shard_id: str) -> int:
        """Where since would be with no read hold: the compaction window behind upper."""
        c = self.collections[shard_id]
        return max(c.since, c.upper - c.window_ms)

    # ---- writes ----------------------------------------------------------------
    async def append(self, updates: dict[str, pa.Table]) -> int:
        """Group-commit `updates` (shard id -> data columns + mz_diff) at the next write
        timestamp; returns that timestamp once durable."""
        for sid in updates:
            if sid not in self.collections:
                raise WeirError(SqlState.UNDEFINED_TABLE, f"collection {sid} does not exist")
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._pending.append(_Pending(updates, fut))
        self._wake.set()
        return await asyncio.shield(fut)

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        next_tick = loop.time() + self.tick_ms / 1000
        while not self._stopping:
            timeout = max(0.0, next_tick - loop.time())
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                if self._pending:
                    await self._commit_pending()
                if loop.time() >= next_tick:
                    next_tick = loop.time() + self.tick_ms / 1000
                    await self._tick()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - keep the loop alive; the failure was reported
                log.exception("storage controller loop")
                await asyncio.sleep(0.5)

    async def _commit_pending(self) -> None:
        batch, self._pending = self._pending, []
        merged: dict[str, list[pa.Table]] = {}
        for p in batch:
            for sid, t in p.updates.items():
                merged.setdefault(sid, []).append(t)
        ts = self.oracle.write_ts()
        try:
            tables = {sid: self._with_time(pa.concat_tables(ts_list, promote_options="permissive"), ts)
                      for sid, ts_list in merged.items() if sid in self.collections}
            await self._commit(tables, ts)
        except Exception as e:  # noqa: BLE001 - every waiter learns of the failure
            err = e if isinstance(e, WeirError) else WeirError(SqlState.IO_ERROR, f"write failed: {e}")
            for p in batch:
                if not p.done.done():
                    p.done.set_exception(err)
            return
        self._advance_all(ts)
        for p in batch:
            if not p.done.done():
                p.done.set_result(ts)

    @staticmethod
    def _with_time(t: pa.Table, ts: int) -> pa.Table:
        return t.append_column("mz_timestamp", pa.array([ts] * t.num_rows, pa.int64())) \
            if "mz_timestamp" not in t.column_names else t

    async def _commit(self, tables: dict[str, pa.Table], ts: int) -> None:
        wal = self.wal_dir / f"{ts:020d}.arrow"
        multi = len(tables) > 1
        if multi:
            await self._run(self._write_wal, wal, tables)
        for sid, t in tables.items():
            c = self.collections[sid]
            if t.num_rows:
                c.last_write = ts  # before the data is visible: a read racing it caches nothing
            fr = await self._run(c.shard.compare_and_append, t, c.durable_upper, ts + 1, self.epoch)
            c.durable_upper = fr.upper
            c.dirty_since_compaction = True
        if multi:
            await self._run(os.unlink, wal)
        self.commits += 1

    def _write_wal(self, path: Path, tables: dict[str, pa.Table]) -> None:
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            for sid, t in tables.items():
                t = t.replace_schema_metadata({"shard_id": sid})
                sink = pa.BufferOutputStream()
                with ipc.new_stream(sink, t.schema) as w:
                    w.write_table(t)
                buf = sink.getvalue()
                f.write(len(buf).to_bytes(8, "big"))
                f.write(buf)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    async def replay_wal(self) -> None:
        """Finish group commits a crash interrupted: each write-ahead file lands whole."""
        for path in sorted(self.wal_dir.glob("*.arrow")):
            ts = int(path.stem)
            data = path.read_bytes()
            off = 0
            while off < len(data):
                n = int.from_bytes(data[off:off + 8], "big")
                t = ipc.open_stream(pa.py_buffer(data[off + 8:off + 8 + n])).read_all()
                off += 8 + n
                sid = (t.schema.metadata or {}).get(b"shard_id", b"").decode()
                c = self.collections.get(sid)
                if c is None or c.durable_upper > ts:
                    continue  # dropped since, or this part already landed
                c.last_write, c.cached = max(c.last_write, ts), None
                fr = await self._run(c.shard.compare_and_append, t.replace_schema_metadata(None),
                                     c.durable_upper, ts + 1, self.epoch)
                c.durable_upper = fr.upper
                c.upper = max(c.upper, fr.upper)
            log.info("replayed write-ahead file %s", path.name)
            path.unlink()
        for p in self.wal_dir.glob("*.tmp"):
            p.unlink()

    def _advance_all(self, ts: int) -> None:
        for c in self.collections.values():
            if not c.external:
                c.upper = max(c.upper, ts + 1)
            c.advance_since()
        self.oracle.apply_write(ts)
        for cb in self.on_commit:
            cb(ts)

    async def _tick(self) -> None:
        ts = self.oracle.write_ts()
        self._advance_all(ts)
        await self._follow_external()
        self._ticks += 1
        if self._ticks % self.persist_every_ticks == 0:
            await self._persist_frontiers()
        if self._ticks % self.compact_every_ticks == 0:
            await self._compact_some()

    async def _follow_external(self) -> None:
        """Replicas advance the uppers of the shards they write: read back those no writer
        reports (writer_advanced, observe_upper), in creation order, and publish them
        together, so a reader never sees a shard's new upper beside an older state of a
        shard created after it that its writer appends to first (a view's errors shard,
        weir.storage.error_shards)."""
        read = [(c, await self._read(c.shard.frontiers)) for c in list(self.collections.values())
                if c.external and not c.reported]
        for c, fr in read:
            self._follow(c, fr.upper)

    def writer_advanced(self, shard_id: str, errors_shard_id: str | None, upper: int) -> None:
        """A replica appended a materialized view's output through `upper` (or saw it
        appended), durably: follow it without reading the shard back, so that a read or
        subscription waiting for the view sees its change at once and an idle view costs
        no Iceberg metadata load a second. From now on reports, not polling, move it. Its
        errors shard, appended before the output and only when its errors change, is read
        back by the reader that needs it (weir.adapter.dataflow_errors)."""
        for sid in (shard_id, errors_shard_id):
            c = self.collections.get(sid) if sid else None
            if c is not None and c.external:
                c.reported = True
        c = self.collections.get(shard_id)
        if c is not None and c.external:
            self._follow(c, upper)

    def _follow(self, c: _Collection, upper: int) -> None:
        if upper > c.upper:
            c.dirty_since_compaction = True
        c.upper = c.durable_upper = max(c.upper, upper)
        c.advance_since()

    def observe_upper(self, shard_id: str, upper: int) -> None:
        """A writer's report of an external collection's durable upper; from now on its
        reports, not polling, move the collection's upper."""
        c = self.collections.get(shard_id)
        if c is not None and c.external:
            c.reported = True
            self._follow(c, upper)

    async def refresh_upper(self, shard_id: str) -> int:
        """An external collection's durable upper now (not as of the last tick)."""
        c = self.collections[shard_id]
        if c.external:
            self._follow(c, (await self._read(c.shard.frontiers)).upper)
        return c.upper

    async def wait_for_upper(self, shard_ids: list[str], ts: int) -> None:
        """Until every collection's upper is past `ts` (a read at `ts` is then complete)."""
        while any(self.collections[sid].upper <= ts for sid in shard_ids if sid in self.collections):
            await asyncio.sleep(0.05)

    async def _persist_frontiers(self, everything: bool = False) -> None:
        """Make the uppers and sinces advanced in memory durable (a data-less append).
        Lagging durable frontiers are safe: a restart resumes from them and the first tick
        moves the uppers on (the oracle's time is durable on its own); a since that is
        durable later only keeps history longer."""
        due = [c for c in list(self.collections.values())
               if (c.upper > c.durable_upper and not c.external) or c.since > c.durable_since]
        if not everything:
            due = [c for c in due if self._ticks - c.persisted_tick >= self.persist_lag_ticks]
            due.sort(key=lambda c: c.persisted_tick)
            rounds = max(1, self.persist_lag_ticks // self.persist_every_ticks)
            due = due[:max(self.persist_per_round, -(-len(self.collections) // rounds))]
        for c in due:
            c.persisted_tick = self._ticks
            if c.upper > c.durable_upper and not c.external:
                fr = await self._run(c.shard.compare_and_append, None, c.durable_upper, c.upper, self.epoch)
                c.durable_upper = fr.upper
            if c.since > c.durable_since:
                await self._run(c.shard.downgrade_since, c.since)
                c.durable_since = c.since

    async def _compact_some(self) -> None:
        for c in list(self.collections.values()):
            if c.dirty_since_compaction and c.durable_since > 0:
                c.dirty_since_compaction = False
                try:
                    res = await self._run(c.shard.compact)
                    # what it replaced is expired and deleted after the grace period, by a later round
                    c.dirty_since_compaction = c.dirty_since_compaction or res.committed
                except Exception:  # noqa: BLE001 - compaction may give up and retry later
                    log.warning("compaction of %s failed; will retry", c.shard.shard_id, exc_info=True)
