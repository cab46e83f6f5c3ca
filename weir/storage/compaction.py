"""Compaction of a shard: its files at or below `since`, grouped by weir.storage.spine,
each group rewritten as one file of consolidated updates forwarded to `since`, in one
commit that rebases over appends landing meanwhile. Correctness never depends on it: a
rewrite that loses a race to another one is given up. Snapshot expiry and the orphan sweep
that follow are weir.storage.maintenance's (Shard.compact)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.conversions import from_bytes
from pyiceberg.exceptions import CommitFailedException, ValidationException
from pyiceberg.manifest import DataFile
from pyiceberg.table import Table
from pyiceberg.types import LongType

from weir.storage import maintenance, spine
from weir.storage.consolidate import consolidate_retractions
from weir.storage.frontiers import MAX_ATTEMPTS, frontiers_of
from weir.storage.schema import TIME_COL, Column, physical_name
from weir.storage.txn import transaction

log = logging.getLogger(__name__)


@dataclass
class CompactionResult:
    committed: bool = False  # a rewrite was committed (False if nothing to do or lost a race)
    since: int = 0
    rows_before: int = 0
    rows_after: int = 0
    files_before: int = 0
    files_after: int = 0
    files_rewritten: int = 0
    snapshots_expired: int = 0
    files_removed: int = 0  # files deleted from the warehouse
    gave_up: bool = False  # a concurrent commit won; retry later
    detail: dict[str, int] = field(default_factory=dict)


class ShardCompaction:
    """The rewrite half of Shard.compact, mixed into weir.storage.persist.Shard, whose
    table, columns and file writing it uses."""

    shard_id: str
    columns: list[Column]
    arrow_schema: pa.Schema
    _table: Table
    _time_id: int
    _refresh: Callable[[], None]
    _write_files: Callable[[pa.Table], list[DataFile]]
    _delete_files: Callable[[list[DataFile]], None]

    def _rewrite(self) -> CompactionResult:
        """Merge the files at or below since that spine.merge_groups picks, each group into one
        consolidated file, in one commit."""
        table = self._table
        since = frontiers_of(table.metadata).since
        res = CompactionResult(since=since)
        snap = table.current_snapshot()
        if snap is None:
            return res
        all_files = [t.file for t in table.scan(snapshot_id=snap.snapshot_id).plan_files()]
        res.files_before = res.files_after = len(all_files)
        res.rows_before = res.rows_after = sum(f.record_count for f in all_files)
        old = []
        for df in all_files:
            lo = (df.lower_bounds or {}).get(self._time_id)
            if lo is None or from_bytes(LongType(), lo) <= since:
                old.append(df)
        groups = spine.merge_groups(old, lambda f: f.file_size_in_bytes)
        if not groups:
            return res
        replaced = [df for group in groups for df in group]
        new_files: list[DataFile] = []
        rows_after = 0
        for group in groups:
            merged = self._merge(group, since)
            rows_after += merged.num_rows
            if merged.num_rows:
                new_files += self._write_files(merged)
        try:
            self._commit_rewrite(replaced, new_files, since)
        except (CommitFailedException, ValidationException) as e:
            log.info("compaction of %s lost a race (%s); giving up for now", self.shard_id, e)
            self._delete_files(new_files)
            res.gave_up = True
            return res
        res.committed = True
        res.files_rewritten = len(replaced)
        res.files_after = len(all_files) - len(replaced) + len(new_files)
        res.rows_after = res.rows_before - sum(f.record_count for f in replaced) + rows_after
        return res

    def _merge(self, files: list[DataFile], since: int) -> pa.Table:
        """The files' updates, those at or below since forwarded to since and consolidated."""
        data = self._read_files(files)
        is_old = pc.less_equal(data[TIME_COL], since)
        low, high = data.filter(is_old), data.filter(pc.invert(is_old))
        low = low.set_column(
            low.schema.get_field_index(TIME_COL), low.schema.field(TIME_COL),
            pa.array([since] * low.num_rows, pa.int64()),
        )
        return pa.concat_tables([consolidate_retractions(low, [c[0] for c in self.columns]), high])

    def _commit_rewrite(self, old: list[DataFile], new: list[DataFile], since: int) -> None:
        """Replace `old` files by `new` ones, rebasing over appends that land meanwhile.

        Appends only add files, so deleting `old` on top of them is still exact.
        If some `old` file is gone (another compaction won), pyiceberg raises
        ValidationException and we give up.
        """
        for attempt in range(MAX_ATTEMPTS):
            txn = transaction(self._table)
            with txn.update_snapshot(snapshot_properties={"weir.compacted-to": str(since)}).overwrite() as ow:
                for df in old:
                    ow.delete_data_file(df)
                for df in new:
                    ow.append_data_file(df)
            try:
                txn.commit_transaction()
                return
            except CommitFailedException:
                if attempt == MAX_ATTEMPTS - 1:
                    raise
                self._refresh()

    def _read_files(self, files: list[DataFile]) -> pa.Table:
        fs, _ = maintenance.filesystem(self._table.location())
        tables = []
        for df in files:
            _, path = maintenance.filesystem(df.file_path)
            t = pq.read_table(path, filesystem=fs, columns=[physical_name(n) for n in self.arrow_schema.names])
            tables.append(t.rename_columns(self.arrow_schema.names).cast(self.arrow_schema))
        return pa.concat_tables(tables)
