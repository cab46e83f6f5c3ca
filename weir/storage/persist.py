"""Shards ("persist") on Apache Iceberg: frontiers, compare-and-append, fencing, compaction.

One shard = one Iceberg table in namespace `weir`. Its `upper`, `since` and
writer `epoch` are table properties, changed in the same Iceberg commit as the
data they describe, so a commit is all-or-nothing: the catalog row flips to a
metadata file that holds both, or to neither.

Compare-and-append rests on a custom commit requirement (`_AssertFrontiers`).
The SQL catalog validates requirements against the metadata it reloads at
commit time and then swaps the catalog row only if it still points at that
metadata; together that is an atomic compare-and-swap on the stored upper.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.conversions import from_bytes
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NoSuchTableError,
    TableAlreadyExistsError,
    ValidationException,
)
from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan, LessThanOrEqual
from pyiceberg.io.pyarrow import _dataframe_to_data_files
from pyiceberg.manifest import DataFile
from pyiceberg.table import Table
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import (
    RemoveSnapshotsUpdate,
    SetPropertiesUpdate,
    ValidatableTableRequirement,
)
from pyiceberg.types import LongType

from weir.errors import SqlState, WeirError
from weir.storage import maintenance, spine
from weir.storage.consolidate import consolidate, consolidate_retractions, expand
from weir.storage.schema import (
    DIFF_COL,
    TIME_COL,
    Column,
    columns_from_json,
    columns_to_json,
    from_storage,
    iceberg_schema,
    legacy_forms,
    physical_name,
    storage_schema,
    time_bounds,
    to_storage,
)
from weir.storage.txn import transaction

log = logging.getLogger(__name__)

NAMESPACE = "weir"
PROP_UPPER = "weir.upper"
PROP_SINCE = "weir.since"
PROP_EPOCH = "weir.epoch"
PROP_COLUMNS = "weir.columns"
_MAX_ATTEMPTS = 8
SWEEP_EVERY_S = 600.0  # the orphan sweep when compaction changed nothing


@dataclass(frozen=True)
class Frontiers:
    since: int
    upper: int
    epoch: int


class UpperMismatch(Exception):  # noqa: N818 - name fixed by the storage API
    """A compare-and-append named an upper that is not the shard's current upper."""

    def __init__(self, current: int, expected: int | None = None) -> None:
        super().__init__(f"upper mismatch: expected {expected}, shard upper is {current}")
        self.current = current
        self.expected = expected


class Fenced(Exception):  # noqa: N818 - name fixed by the storage API
    """A writer of an older epoch than the shard has seen tried to write."""

    def __init__(self, current_epoch: int, epoch: int | None = None) -> None:
        super().__init__(f"writer epoch {epoch} fenced by epoch {current_epoch}")
        self.current_epoch = current_epoch
        self.epoch = epoch


@dataclass
class ScanPlan:
    files: list[str]  # local paths (file:// stripped), readable by Spark's parquet reader
    may_have_retractions: bool  # some listed file may hold mz_diff != 1 (must be consolidated)
    arrow_schema: pa.Schema  # storage schema of the files
    frontiers: Frontiers | None = None
    snapshot_id: int | None = None
    row_count: int = 0  # rows in the listed files (before filtering on as_of)


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


def frontiers_of(md: TableMetadata) -> Frontiers:
    p = md.properties
    return Frontiers(int(p.get(PROP_SINCE, "0")), int(p.get(PROP_UPPER, "0")), int(p.get(PROP_EPOCH, "0")))


_NOT_LANDED = (UpperMismatch, Fenced, CommitFailedException, ValidationException, WeirError)


class _AssertFrontiers(ValidatableTableRequirement):
    """Commit requirement on the stored frontiers, checked against the catalog's current metadata."""

    type: Literal["weir-assert-frontiers"] = "weir-assert-frontiers"
    upper: int | None = None  # stored upper must equal this
    max_epoch: int | None = None  # stored epoch must be <= this
    since_below: int | None = None  # stored since must be < this

    def validate(self, base_metadata: TableMetadata | None) -> None:
        if base_metadata is None:
            raise CommitFailedException("weir: shard is gone")
        f = frontiers_of(base_metadata)
        if self.max_epoch is not None and f.epoch > self.max_epoch:
            raise CommitFailedException(f"weir: fenced by epoch {f.epoch}")
        if self.upper is not None and f.upper != self.upper:
            raise CommitFailedException(f"weir: upper is {f.upper}, expected {self.upper}")
        if self.since_below is not None and f.since >= self.since_below:
            raise CommitFailedException(f"weir: since is already {f.since}")


def _commit(
    txn_table: Table,
    props: dict[str, str],
    req: _AssertFrontiers,
    files: list[DataFile],
    expire: Sequence[int] = (),
) -> None:
    """One Iceberg commit: property changes, the requirement, (optionally) appended files and
    snapshots to drop (piggybacked so metadata stays small without extra commits)."""
    txn = transaction(txn_table)
    txn._apply((SetPropertiesUpdate(updates=props),), (req,))
    if expire:
        txn._apply(
            (RemoveSnapshotsUpdate(snapshot_ids=list(expire)),),
            (maintenance.AssertSnapshotsExist(snapshot_ids=list(expire)),),
        )
    if files:
        with txn.update_snapshot().merge_append() as app:
            for f in files:
                app.append_data_file(f)
    txn.commit_transaction()


class ShardStore:
    """The set of shards in one Iceberg SQL catalog + warehouse. Safe to share across threads."""

    def __init__(
        self,
        catalog_uri: str,
        warehouse_path: str,
        *,
        grace_seconds: float = 60.0,
        metadata_versions_kept: int = 5,
    ) -> None:
        self.warehouse_path = os.path.abspath(warehouse_path)
        os.makedirs(self.warehouse_path, exist_ok=True)
        self.grace_seconds = grace_seconds
        self.grace_ms = int(grace_seconds * 1000)
        self.metadata_versions_kept = metadata_versions_kept
        self.catalog = SqlCatalog("weir", uri=catalog_uri, warehouse="file://" + self.warehouse_path)
        try:
            self.catalog.create_namespace_if_not_exists(NAMESPACE)
        except NamespaceAlreadyExistsError:  # another process won the race
            pass

    def _ident(self, shard_id: str) -> tuple[str, str]:
        return (NAMESPACE, shard_id)

    def load_table(self, shard_id: str) -> Table:
        for attempt in range(3):
            try:
                return self.catalog.load_table(self._ident(shard_id))
            except NoSuchTableError:
                raise WeirError(SqlState.UNDEFINED_TABLE, f"shard {shard_id} does not exist") from None
            except FileNotFoundError:  # metadata file replaced and deleted under us
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def create_shard(self, shard_id: str, columns: list[Column], *, initial_upper: int = 0) -> Shard:
        """Create an empty shard with since=0, upper=initial_upper, epoch=0."""
        props = {
            PROP_UPPER: str(initial_upper),
            PROP_SINCE: "0",
            PROP_EPOCH: "0",
            PROP_COLUMNS: columns_to_json(columns),
            "write.metadata.delete-after-commit.enabled": "true",
            "write.metadata.previous-versions-max": str(self.metadata_versions_kept),
            # weir decides itself when a failed commit may be retried (never for a lost CAS).
            "commit.retry.num-retries": "0",
            # Merge small per-append manifests so scan planning reads a few files, not one per append.
            "commit.manifest-merge.enabled": "true",
            "commit.manifest.min-count-to-merge": "16",
        }
        try:
            table = self.catalog.create_table(self._ident(shard_id), schema=iceberg_schema(columns), properties=props)
        except TableAlreadyExistsError:
            raise WeirError(SqlState.DUPLICATE_TABLE, f"shard {shard_id} already exists") from None
        return Shard(self, table)

    def open_shard(self, shard_id: str) -> Shard:
        return Shard(self, self.load_table(shard_id))

    def shard_exists(self, shard_id: str) -> bool:
        return bool(self.catalog.table_exists(self._ident(shard_id)))

    def drop_shard(self, shard_id: str) -> None:
        """Drop the table and delete everything under its location."""
        table = self.load_table(shard_id)
        self.catalog.drop_table(self._ident(shard_id))
        maintenance.delete_tree(table.location())

    def list_shards(self) -> list[str]:
        return sorted(ident[-1] for ident in self.catalog.list_tables(NAMESPACE))


class Shard:
    """A handle on one shard. Methods block; use one handle from one thread at a time."""

    def __init__(self, store: ShardStore, table: Table) -> None:
        self._store = store
        self._table = table
        self._lock = threading.RLock()
        self._swept_at = 0.0  # monotonic time of the last sweep for unreferenced files
        self.shard_id: str = table.name()[-1]
        schema = table.schema()
        self.columns: list[Column] = legacy_forms(columns_from_json(table.metadata.properties[PROP_COLUMNS]), schema)
        self.arrow_schema = storage_schema(self.columns)
        self._time_id = schema.find_field(TIME_COL).field_id
        self._diff_id = schema.find_field(DIFF_COL).field_id

    def __repr__(self) -> str:
        return f"Shard({self.shard_id!r}, {frontiers_of(self._table.metadata)})"

    @property
    def table(self) -> Table:
        return self._table

    def _refresh(self) -> None:
        self._table = self._store.load_table(self.shard_id)

    def frontiers(self, refresh: bool = True) -> Frontiers:
        with self._lock:
            if refresh:
                self._refresh()
            return frontiers_of(self._table.metadata)

    # ---- writing ---------------------------------------------------------------------------

    def compare_and_append(
        self, updates: pa.Table | None, expected_upper: int, new_upper: int, epoch: int
    ) -> Frontiers:
        """Append updates with times in [expected_upper, new_upper) and advance upper to new_upper.

        Raises UpperMismatch(current) if the shard's upper is not `expected_upper`
        and Fenced(current_epoch) if `epoch` is older than the shard's; either way
        nothing is written. An append of no rows only advances the upper.
        """
        if new_upper <= expected_upper:
            raise ValueError(f"new upper {new_upper} must be greater than expected upper {expected_upper}")
        data = None
        if updates is not None and updates.num_rows > 0:
            data = to_storage(updates, self.columns)
            lo, hi = time_bounds(data)
            if lo < expected_upper or hi >= new_upper:
                raise ValueError(
                    f"update times [{lo}, {hi}] outside the appended interval [{expected_upper}, {new_upper})"
                )
            data = data.filter(pc.not_equal(data[DIFF_COL], 0))
            if data.num_rows == 0:
                data = None
        with self._lock:
            self._precheck(expected_upper, epoch)  # losers of a race usually stop here, before any IO
            files = self._write_files(data) if data is not None else []
            try:
                return self._append_files(files, expected_upper, new_upper, epoch)
            except _NOT_LANDED:
                # Only when the commit certainly did not land; after an unknown outcome
                # the files stay for compaction's orphan sweep.
                self._delete_files(files)
                raise

    def _precheck(self, expected: int, epoch: int) -> None:
        f = frontiers_of(self._table.metadata)
        if f.upper == expected and epoch >= f.epoch:
            return
        self._refresh()
        f = frontiers_of(self._table.metadata)
        if epoch < f.epoch:
            raise Fenced(f.epoch, epoch)
        if f.upper != expected:
            raise UpperMismatch(f.upper, expected)

    def _append_files(self, files: list[DataFile], expected: int, new_upper: int, epoch: int) -> Frontiers:
        fresh = False
        for _ in range(_MAX_ATTEMPTS):
            f = frontiers_of(self._table.metadata)
            if epoch < f.epoch or f.upper != expected:
                if not fresh:  # our cached metadata may be stale; decide on the catalog's
                    self._refresh()
                    fresh = True
                    continue
                if epoch < f.epoch:
                    raise Fenced(f.epoch, epoch)
                raise UpperMismatch(f.upper, expected)
            props = {PROP_UPPER: str(new_upper)}
            if epoch > f.epoch:
                props[PROP_EPOCH] = str(epoch)
            expire = maintenance.expirable_snapshots(
                self._table.metadata, self._store.grace_ms, int(time.time() * 1000)
            )
            try:
                _commit(self._table, props, _AssertFrontiers(upper=expected, max_epoch=epoch), files, expire)
                return frontiers_of(self._table.metadata)
            except CommitFailedException as e:
                # Lost a race. If the frontiers still match, the winner was compaction or
                # maintenance and appending on top is safe; otherwise we refuse above.
                log.debug("append to %s conflicted: %s", self.shard_id, e)
                self._refresh()
                fresh = True
        raise WeirError(SqlState.SERIALIZATION_FAILURE, f"append to shard {self.shard_id} kept conflicting")

    def _write_files(self, data: pa.Table) -> list[DataFile]:
        data = data.sort_by(TIME_COL) if data.num_rows > 1 else data
        return list(
            _dataframe_to_data_files(
                table_metadata=self._table.metadata, df=data, io=self._table.io, write_uuid=uuid.uuid4()
            )
        )

    def _delete_files(self, files: list[DataFile]) -> None:
        for f in files:
            try:
                self._table.io.delete(f.file_path)
            except (FileNotFoundError, OSError):
                log.warning("could not delete uncommitted file %s", f.file_path)

    def fence(self, epoch: int) -> Frontiers:
        """Record `epoch` as the shard's writer epoch without appending (fences older writers)."""
        with self._lock:
            for _ in range(_MAX_ATTEMPTS):
                f = frontiers_of(self._table.metadata)
                if epoch < f.epoch:
                    self._refresh()
                    f = frontiers_of(self._table.metadata)
                    if epoch < f.epoch:
                        raise Fenced(f.epoch, epoch)
                try:
                    _commit(self._table, {PROP_EPOCH: str(epoch)}, _AssertFrontiers(max_epoch=epoch), [])
                    return frontiers_of(self._table.metadata)
                except CommitFailedException:
                    self._refresh()
        raise WeirError(SqlState.SERIALIZATION_FAILURE, f"fencing shard {self.shard_id} kept conflicting")

    def downgrade_since(self, since: int) -> None:
        """Allow compaction up to `since`. Monotonic: a lower value than the current one is ignored."""
        with self._lock:
            for _ in range(_MAX_ATTEMPTS):
                if since <= frontiers_of(self._table.metadata).since:
                    return  # cached since is never above the stored one
                try:
                    _commit(self._table, {PROP_SINCE: str(since)}, _AssertFrontiers(since_below=since), [])
                    return
                except CommitFailedException:
                    self._refresh()
        raise WeirError(SqlState.SERIALIZATION_FAILURE, f"downgrading since of {self.shard_id} kept conflicting")

    # ---- reading ---------------------------------------------------------------------------

    def _check_as_of(self, f: Frontiers, as_of: int) -> None:
        if as_of < f.since:
            raise WeirError(
                SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE,
                f"timestamp {as_of} is not valid for shard {self.shard_id}: its since is {f.since}",
                detail=f"since={f.since} upper={f.upper}",
            )

    def data_files(self, as_of: int) -> ScanPlan:
        """Data files holding every update at time <= as_of, pruned on mz_timestamp statistics."""
        with self._lock:
            self._refresh()
            table = self._table
        f = frontiers_of(table.metadata)
        self._check_as_of(f, as_of)
        snap = table.current_snapshot()
        if snap is None:
            return ScanPlan([], False, self.arrow_schema, f, None, 0)
        tasks = table.scan(row_filter=LessThanOrEqual(TIME_COL, as_of), snapshot_id=snap.snapshot_id).plan_files()
        files, retractions, rows = [], False, 0
        for task in tasks:
            df = task.file
            files.append(maintenance.local_path(df.file_path))
            rows += df.record_count
            lower = (df.lower_bounds or {}).get(self._diff_id)
            upper = (df.upper_bounds or {}).get(self._diff_id)
            if lower is None or from_bytes(LongType(), lower) < 1 or upper is None \
                    or from_bytes(LongType(), upper) > 1:
                retractions = True  # or multiplicities: either way the reader must consolidate
        return ScanPlan(files, retractions, self.arrow_schema, f, snap.snapshot_id, rows)

    def file_times(self) -> list[tuple[int, int, int]]:
        """(least mz_timestamp, greatest mz_timestamp, bytes) of each live data file, from
        Iceberg's statistics: what a hold keeps from compaction is measured from these."""
        with self._lock:
            self._refresh()
            table = self._table
        snap = table.current_snapshot()
        if snap is None:
            return []
        out = []
        for task in table.scan(snapshot_id=snap.snapshot_id).plan_files():
            df = task.file
            lo, hi = (df.lower_bounds or {}).get(self._time_id), (df.upper_bounds or {}).get(self._time_id)
            if lo is not None and hi is not None:
                out.append((from_bytes(LongType(), lo), from_bytes(LongType(), hi), df.file_size_in_bytes))
        return out

    def _scan(self, table: Table, lower: int | None, upper: int) -> pa.Table:
        snap = table.current_snapshot()
        if snap is None:
            return self.arrow_schema.empty_table()
        flt = LessThan(TIME_COL, upper)
        if lower is not None:
            flt = And(GreaterThanOrEqual(TIME_COL, lower), flt)
        return table.scan(row_filter=flt, snapshot_id=snap.snapshot_id).to_arrow()

    def read_updates(self, lower: int, upper: int) -> pa.Table:
        """Raw updates with lower <= mz_timestamp < upper (caller types, plus mz_timestamp, mz_diff).

        Updates at times <= since have been forwarded to since by compaction, so
        `lower` must be 0 (read from the beginning) or greater than since.
        """
        with self._lock:
            self._refresh()
            table = self._table
        f = frontiers_of(table.metadata)
        if 0 < lower <= f.since:
            raise WeirError(
                SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE,
                f"updates from {lower} of shard {self.shard_id} were compacted (since is {f.since})",
            )
        data = self._scan(table, lower if lower > 0 else None, upper)
        return from_storage(data.sort_by(TIME_COL) if data.num_rows > 1 else data, self.columns)

    def snapshot(self, as_of: int) -> pa.Table:
        """Contents at `as_of`: one row per distinct row, mz_diff = its (positive) count."""
        with self._lock:
            self._refresh()
            table = self._table
        self._check_as_of(frontiers_of(table.metadata), as_of)
        raw = self._scan(table, None, as_of + 1).drop_columns([TIME_COL])
        names = [c[0] for c in self.columns]
        return from_storage(consolidate(raw, names, keep_negative=False), self.columns)

    def read(self, as_of: int) -> pa.Table:
        """Contents at `as_of` as plain rows, each repeated by its multiplicity."""
        return expand(self.snapshot(as_of))

    # ---- compaction ------------------------------------------------------------------------

    def compact(self, grace_seconds: float | None = None) -> CompactionResult:
        """Consolidate updates at times <= since, then expire snapshots and delete dead files.

        Files whose updates are all after since are kept as they are. If another
        commit lands first, the rewrite is abandoned (`gave_up`) and can be tried
        again later; correctness never depends on compaction.
        """
        grace_ms = int((self._store.grace_seconds if grace_seconds is None else grace_seconds) * 1000)
        with self._lock:
            self._refresh()
            res = self._rewrite()
            self._refresh()
            res.snapshots_expired = maintenance.expire_snapshots(self._table, grace_ms)
            if res.snapshots_expired:
                self._refresh()
            # The sweep reads every manifest: only when expiring snapshots unreferenced files,
            # or now and then for what a failed commit left behind.
            if res.snapshots_expired or time.monotonic() - self._swept_at > SWEEP_EVERY_S \
                    or grace_ms == 0:
                self._swept_at = time.monotonic()
                res.files_removed = maintenance.remove_unreferenced(self._table, grace_ms)
            return res

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
        for attempt in range(_MAX_ATTEMPTS):
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
                if attempt == _MAX_ATTEMPTS - 1:
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
