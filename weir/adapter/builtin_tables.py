"""The builtin relations the coordinator writes from the catalog (mz_catalog.mz_tables,
mz_holds, ...): brought up to date after DDL (`catalog_changed`; only the changed items'
rows when only items changed, weir.catalog.builtin_contents), changed item by item where
a statement knows its rows (`replace_item_rows`: a batch of hold advances), and read by
sessions only once what was queued before them is appended (`writes_settled`)."""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

import pyarrow as pa

from weir.catalog.builtin_contents import BuiltinContents, Changes, Row
from weir.catalog.builtins import BUILTIN_TABLES, BuiltinTable
from weir.codec import interval_value as cinterval_value

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator

log = logging.getLogger(__name__)

BUILTIN_BY_ID = {b.id: b for b in BUILTIN_TABLES}
FLUSH_S = 0.05  # incremental changes wait at most this long to share one append


class BuiltinWriter:
    """Keeps the builtin relations equal to the catalog. Changes queue up and one append at
    a time takes everything queued (group commit): sixteen sessions creating objects at once
    share appends instead of waiting for one each."""

    def __init__(self, coord: Coordinator) -> None:
        self.coord = coord
        self.contents = BuiltinContents()
        self._lock = asyncio.Lock()
        self._generation = -1  # the catalog generation the builtin relations show
        self._generation_seq = 0  # the change that brought them to it
        self._queued: dict[str, collections.Counter[Row]] = {}  # changes not yet appended
        self._urgent = False  # a DDL queued changes: append without delay
        self._flush_task: asyncio.Task[None] | None = None
        self._seq = 0  # changes queued so far
        self._done = 0  # of those, how many are appended (or failed)
        self._failed: list[tuple[int, int, BaseException]] = []  # (first, last) changes an append lost
        self._progress = asyncio.Condition()

    async def open(self) -> None:
        ts = self.coord.oracle.read_ts()
        for b in BUILTIN_TABLES:
            since, upper = self.coord.storage.frontiers(b.id)
            as_of = max(min(ts, upper - 1), since)
            table = await self.coord.storage.snapshot(b.id, as_of)
            names = [name for name, _ in b.columns]
            stored: list[tuple[Row, int]] = []
            if table.num_rows:
                cols_py = [table.column(n).to_pylist() for n in names]
                diffs = table.column("mz_diff").to_pylist()
                stored = list(zip(zip(*cols_py, strict=True), diffs, strict=True))
            self.contents.load(b, stored)
        self._generation = -1
        await self.catalog_changed(wait=True)

    async def catalog_changed(self, wait: bool = False) -> None:
        """Bring every builtin relation up to date with the catalog. A DDL does not wait for
        the append (it took half a second of every DDL): a read of a builtin relation waits
        for what was queued before it (`writes_settled`), and after a crash the relations
        are recomputed from the catalog. `wait`: return once appended (an error if the
        append failed). A pass over a snapshot at least as new as the catalog was when a
        caller changed it covers that caller."""
        wanted = self.coord.catalog.generation
        async with self._lock:
            settled = not self.coord.catalog.in_transaction  # inside one, the snapshot has uncommitted changes
            if settled and self._generation >= wanted:
                target = self._generation_seq
            else:
                snapshot = self.coord.catalog.snapshot()
                target = self._queue(self.contents.update(snapshot))
                if settled:
                    self._generation, self._generation_seq = snapshot.generation, target
                self._urgent = True
                self._start_flush()
        if wait:
            await self._appended(target)

    async def replace_item_rows(self, builtin: BuiltinTable, rows: dict[str, list[Row]]) -> None:
        """Set some items' rows of one builtin relation, without a catalog snapshot (a batch
        of hold advances touches a few rows of mz_holds among thousands). The catalog must
        already hold what `rows` say. Returns once the change is queued: without a DDL
        waiting, queued changes are appended FLUSH_S after the first (one shard commit for
        many batches of advances), and reads of builtin relations wait for what was queued
        before them (`builtin_writes_settled`), so a session reads what it changed."""
        async with self._lock:
            self._queue({builtin.id: self.contents.replace_item_rows(builtin, rows)})
            self._start_flush()

    def _queue(self, changes: dict[str, Changes]) -> int:
        """Add changes to the queue (under the builtin lock); their sequence number."""
        for bid, rows in changes.items():
            queued = self._queued.setdefault(bid, collections.Counter())
            for row, diff in rows:
                queued[row] += diff
        self._seq += 1
        return self._seq

    def _start_flush(self) -> None:
        if self._flush_task is None or self._flush_task.done():
            self._flush_task = asyncio.create_task(self._flush(), name="builtin-flush")

    async def _flush(self) -> None:
        """Append what is queued, one append at a time, until nothing is."""
        while self._done < self._seq:
            if not self._urgent:
                await asyncio.sleep(FLUSH_S)
            async with self._lock:
                self._urgent = False
                updates, taken = self._take_queued()
            error: BaseException | None = None
            if updates:
                try:
                    await self.coord.storage.append(updates)
                except Exception as e:  # noqa: BLE001 - recomputed from the catalog at the next restart
                    log.error("an append to a builtin relation failed: %s", e)
                    error = e
            async with self._progress:
                if error is not None:
                    self._failed = [*self._failed[-15:], (self._done + 1, taken, error)]
                self._done = max(self._done, taken)
                self._progress.notify_all()

    def _take_queued(self) -> tuple[dict[str, pa.Table], int]:
        """The queued changes as appends, and the sequence number they cover (the caller
        holds the builtin lock)."""
        updates = {}
        for bid, queued in self._queued.items():
            rows = [(r, d) for r, d in queued.items() if d != 0]
            if rows:
                updates[bid] = builtin_updates(BUILTIN_BY_ID[bid], rows)
        self._queued = {}
        return updates, self._seq

    async def _appended(self, target: int) -> None:
        """Wait until change `target` is appended; its append's error, if it failed."""
        if self._done < target:
            async with self._progress:
                await self._progress.wait_for(lambda: self._done >= target)
        for first, last, error in self._failed:
            if first <= target <= last:
                raise error

    async def writes_settled(self, ids: Iterable[str]) -> None:
        """Wait until every change queued to builtin relations before now is appended (a
        read of mz_holds right after ALTER HOLD ... ADVANCE sees the advance)."""
        target = self._seq
        if self._done >= target or not any(sid in BUILTIN_BY_ID for sid in ids):
            return
        async with self._progress:
            await self._progress.wait_for(lambda: self._done >= target)


def builtin_updates(b: BuiltinTable, rows: Changes) -> pa.Table:
    arrays = {}
    columns = list(zip(*(r for r, _ in rows), strict=True)) if rows else [()] * len(b.columns)
    for (name, t), column in zip(b.columns, columns, strict=True):
        vals = list(column)
        if t.is_array:
            vals = [list(v) if v is not None else None for v in vals]
        arrays[name] = pa.array(cinterval_value.for_arrow(vals, t), type=t.arrow)
    arrays["mz_diff"] = pa.array([d for _, d in rows], pa.int64())
    return pa.table(arrays)
