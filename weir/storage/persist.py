"""Shards ("persist") on Apache Iceberg: the store of shards, and a shard's
compare-and-append, fencing, reads and compaction.

One shard = one Iceberg table in namespace `weir`. Its `upper`, `since` and writer
`epoch` are table properties, changed in the same Iceberg commit as the data they
describe, so a commit is all-or-nothing: the catalog row flips to a metadata file that
holds both, or to neither (weir.storage.frontiers). Compaction's rewrite is
weir.storage.compaction's.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
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
from pyiceberg.types import LongType

from weir.errors import SqlState, WeirError
from weir.storage import maintenance
from weir.storage.compaction import CompactionResult, ShardCompaction
from weir.storage.consolidate import consolidate, expand
from weir.storage.frontiers import (
    MAX_ATTEMPTS,
    PROP_EPOCH,
    PROP_SINCE,
    PROP_UPPER,
    AssertFrontiers,
    Fenced,
    Frontiers,
    UpperMismatch,
    commit_frontiers,
    frontiers_of,
)
from weir.storage.schema import (
    DIFF_COL,
    TIME_COL,
    Column,
    columns_from_json,
    columns_to_json,
    from_storage,
    iceberg_schema,
    legacy_forms,
    storage_schema,
    time_bounds,
    to_storage,
)

log = logging.getLogger(__name__)

NAMESPACE = "weir"
PROP_COLUMNS = "weir.columns"
SWEEP_EVERY_S = 600.0  # the orphan sweep when compaction changed nothing


@dataclass
class ScanPlan:
    files: list[str]  # local paths (file:// stripped), readable by Spark's parquet reader
    may_have_retractions: bool  # some listed file may hold mz_diff != 1 (must be consolidated)
    arrow_schema: pa.Schema  # storage schema of the files
    frontiers: Frontiers | None = None
    snapshot_id: int | None = None
    row_count: int = 0  # rows in the listed files (before filtering on as_of)


_NOT_LANDED = (UpperMismatch, Fenced, CommitFailedException, ValidationException, WeirError)


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


class Shard(ShardCompaction):
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
        for _ in range(MAX_ATTEMPTS):
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
                commit_frontiers(self._table, props, AssertFrontiers(upper=expected, max_epoch=epoch), files, expire)
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
            for _ in range(MAX_ATTEMPTS):
                f = frontiers_of(self._table.metadata)
                if epoch < f.epoch:
                    self._refresh()
                    f = frontiers_of(self._table.metadata)
                    if epoch < f.epoch:
                        raise Fenced(f.epoch, epoch)
                try:
                    commit_frontiers(self._table, {PROP_EPOCH: str(epoch)}, AssertFrontiers(max_epoch=epoch), [])
                    return frontiers_of(self._table.metadata)
                except CommitFailedException:
                    self._refresh()
        raise WeirError(SqlState.SERIALIZATION_FAILURE, f"fencing shard {self.shard_id} kept conflicting")

    def downgrade_since(self, since: int) -> None:
        """Allow compaction up to `since`. Monotonic: a lower value than the current one is ignored."""
        with self._lock:
            for _ in range(MAX_ATTEMPTS):
                if since <= frontiers_of(self._table.metadata).since:
                    return  # cached since is never above the stored one
                try:
                    commit_frontiers(self._table, {PROP_SINCE: str(since)}, AssertFrontiers(since_below=since), [])
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
