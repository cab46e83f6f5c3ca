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

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator

log = logging.getLogger(__name__)

BUILTIN_BY_ID = {b.id: b for b in BUILTIN_TABLES}
FLUSH_S = 0.05  # incremental changes wait at most this long to share one append


class BuiltinWriter:
    """Keeps the builtin relations equal to the catalog, one group commit per change."""

    def __init__(self, coord: Coordinator) -> None:
        self.coord = coord
        self.contents = BuiltinContents()
        self._lock = asyncio.Lock()
        self._generation = -1  # the catalog generation the builtin relations show
        self._queued: dict[str, collections.Counter[Row]] = {}  # incremental changes not yet appended
        self._flush_task: asyncio.Task[None] | None = None
        self._seq = 0  # incremental changes queued so far
        self._done = 0  # of those, how many are appended (or failed)
        self._progress = asyncio.Condition()
        self._tail: asyncio.Task[None] | None = None  # marks the latest builtin append done

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
        await self.catalog_changed()

    async def catalog_changed(self) -> None:
        """Bring every builtin relation up to date with the catalog (one group commit).
        Concurrent callers share one pass: a pass over a snapshot at least as new as the
        catalog was when a caller changed it covers that caller."""
        wanted = self.coord.catalog.generation
        async with self._lock:
            settled = not self.coord.catalog.in_transaction  # inside one, the snapshot has uncommitted changes
            if settled and self._generation >= wanted:
                return
            snapshot = self.coord.catalog.snapshot()
            if settled:
                self._generation = snapshot.generation
            updates = {bid: builtin_updates(BUILTIN_BY_ID[bid], rows)
                       for bid, rows in self.contents.update(snapshot).items()}
            queued, taken = self._take_queued()
            for bid, table in queued.items():  # one append with the queued changes: never reordered
                updates[bid] = pa.concat_tables([updates[bid], table]) if bid in updates else table
            done, finished = self._append(updates, taken)
        await finished
        if done is not None and done.exception() is not None:
            raise done.exception()

    async def replace_item_rows(self, builtin: BuiltinTable, rows: dict[str, list[Row]]) -> None:
        """Set some items' rows of one builtin relation, without a catalog snapshot (a batch
        of hold advances touches a few rows of mz_holds among thousands). The catalog must
        already hold what `rows` say. Returns once the change is queued: queued changes are
        appended together every FLUSH_S (one shard commit for many batches of advances),
        and reads of builtin relations wait for what was queued before them
        (`builtin_writes_settled`), so a session reads what it changed."""
        async with self._lock:
            queued = self._queued.setdefault(builtin.id, collections.Counter())
            for row, diff in self.contents.replace_item_rows(builtin, rows):
                queued[row] += diff
            self._seq += 1
            if self._flush_task is None or self._flush_task.done():
                self._flush_task = asyncio.create_task(self._flush(), name="builtin-flush")

    async def _flush(self) -> None:
        while self._queued:
            await asyncio.sleep(FLUSH_S)
            async with self._lock:
                if not self._queued:
                    break  # a catalog_changed pass took them
                updates, taken = self._take_queued()
                _, finished = self._append(updates, taken)
            await finished

    def _take_queued(self) -> tuple[dict[str, pa.Table], int]:
        """The queued incremental changes as appends, and the sequence number they cover
        (the caller holds the builtin lock)."""
        updates = {}
        for bid, queued in self._queued.items():
            rows = [(r, d) for r, d in queued.items() if d != 0]
            if rows:
                updates[bid] = builtin_updates(BUILTIN_BY_ID[bid], rows)
        self._queued = {}
        return updates, self._seq

    def _append(self, updates: dict[str, pa.Table], taken: int
                         ) -> tuple[asyncio.Future[int] | None, asyncio.Task[None]]:
        """Start an append to builtin relations (under the builtin lock, so appends keep the
        order of the changes) and a task that, once it and every earlier one are done,
        marks the changes up to `taken` appended for builtin_writes_settled."""
        done = asyncio.ensure_future(self.coord.storage.append(updates)) if updates else None
        before = self._tail

        async def finished() -> None:
            try:
                if before is not None:
                    await asyncio.wait([before])
                if done is not None:
                    await asyncio.wait([done])
                    if done.exception() is not None:  # recomputed from the catalog at the next restart
                        log.error("an append to a builtin relation failed: %s", done.exception())
            finally:
                async with self._progress:
                    self._done = max(self._done, taken)
                    self._progress.notify_all()

        self._tail = asyncio.create_task(finished(), name="builtin-appended")
        return done, self._tail

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
        arrays[name] = pa.array(vals, type=t.arrow)
    arrays["mz_diff"] = pa.array([d for _, d in rows], pa.int64())
    return pa.table(arrays)
