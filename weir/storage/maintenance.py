"""Snapshot expiry and file clean-up for shard tables.

pyiceberg 0.12's `ExpireSnapshots` only drops snapshots from metadata; it never
deletes files. So weir removes files itself: anything under the table's
location that no retained snapshot (or the metadata log) references and that is
older than a grace period. The grace period protects two kinds of in-flight
work: readers holding a file list planned from a snapshot that has since been
replaced, and writers whose files are written but not yet committed.
"""

from __future__ import annotations

import logging
import time
from typing import Literal
from urllib.parse import urlparse

import pyarrow.fs as pafs
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.manifest import ManifestEntryStatus
from pyiceberg.table import Table
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update import RemoveSnapshotsUpdate, ValidatableTableRequirement

from weir.storage.txn import transaction

log = logging.getLogger(__name__)


def local_path(uri: str) -> str:
    """A location as a filesystem path: strips file:// (Spark's parquet reader wants paths)."""
    if uri.startswith("file://"):
        return urlparse(uri).path
    return uri


def _fs_path(uri: str) -> str:
    p = urlparse(uri)
    if p.scheme in ("", "file"):
        return p.path
    return p.netloc + p.path


def filesystem(location: str) -> tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem and in-filesystem path of a table location (local or object store)."""
    if "://" not in location:
        return pafs.LocalFileSystem(), location
    return pafs.FileSystem.from_uri(location)


def delete_tree(location: str) -> None:
    fs, path = filesystem(location)
    try:
        fs.delete_dir(path)
    except FileNotFoundError:
        pass


def expirable_snapshots(md: TableMetadata, grace_ms: int, now_ms: int) -> list[int]:
    """Snapshots no reader can still need, which may be dropped from the metadata.

    History on `main` is linear. A snapshot whose child is an append can go at
    once: the child still holds all its files. Any other snapshot (e.g. the one a
    compaction replaced) goes once its successor is older than the grace period,
    because readers may still hold its file list. When the true child has been
    expired already, the next retained snapshot's (later) time is used, which
    only keeps snapshots longer.
    """
    current = md.current_snapshot_id
    snaps = sorted(md.snapshots, key=lambda s: (s.sequence_number or 0, s.timestamp_ms))
    out = []
    for snap, succ in zip(snaps, snaps[1:], strict=False):
        if snap.snapshot_id == current:
            continue
        is_child = succ.parent_snapshot_id == snap.snapshot_id
        op = succ.summary.operation if succ.summary is not None else None
        if (is_child and op == Operation.APPEND) or succ.timestamp_ms < now_ms - grace_ms:
            out.append(snap.snapshot_id)
    return out


def expire_snapshots(table: Table, grace_ms: int, now_ms: int | None = None) -> int:
    """Drop expirable snapshots (see `expirable_snapshots`) in their own commit; returns how many."""
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    expire = expirable_snapshots(table.metadata, grace_ms, now_ms)
    if not expire:
        return 0
    txn = transaction(table)
    txn._apply((RemoveSnapshotsUpdate(snapshot_ids=expire),), (AssertSnapshotsExist(snapshot_ids=expire),))
    try:
        txn.commit_transaction()
    except CommitFailedException:
        log.info("snapshot expiry of %s lost a race; will retry at the next compaction", table.name())
        return 0
    return len(expire)


class AssertSnapshotsExist(ValidatableTableRequirement):
    """Turns "snapshot already removed by someone else" into a retryable commit failure."""

    type: Literal["weir-assert-snapshots-exist"] = "weir-assert-snapshots-exist"
    snapshot_ids: list[int]

    def validate(self, base_metadata: TableMetadata | None) -> None:
        have = {s.snapshot_id for s in base_metadata.snapshots} if base_metadata else set()
        if missing := [i for i in self.snapshot_ids if i not in have]:
            raise CommitFailedException(f"weir: snapshots {missing} are gone")


def referenced_files(table: Table) -> set[str]:
    """Filesystem paths of every file the table's current metadata can still reach."""
    md = table.metadata
    io = table.io
    refs = {_fs_path(table.metadata_location)}
    refs.update(_fs_path(e.metadata_file) for e in md.metadata_log)
    seen_manifests: set[str] = set()
    for snap in md.snapshots:
        refs.add(_fs_path(snap.manifest_list))
        for manifest in snap.manifests(io):
            if manifest.manifest_path in seen_manifests:
                continue
            seen_manifests.add(manifest.manifest_path)
            refs.add(_fs_path(manifest.manifest_path))
            for entry in manifest.fetch_manifest_entry(io, discard_deleted=False):
                if entry.status != ManifestEntryStatus.DELETED:
                    refs.add(_fs_path(entry.data_file.file_path))
    for stats in md.statistics:
        refs.add(_fs_path(stats.statistics_path))
    return refs


def remove_unreferenced(table: Table, grace_ms: int, now_ms: int | None = None) -> int:
    """Delete files under the table location no metadata references and older than the grace."""
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    refs = referenced_files(table)
    location = table.location()
    fs, root = filesystem(location)
    scheme = urlparse(location).scheme
    try:
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    except FileNotFoundError:
        return 0
    removed = 0
    for info in infos:
        if info.type != pafs.FileType.File or info.path in refs:
            continue
        mtime_ms = int(info.mtime_ns // 1_000_000) if info.mtime_ns is not None else now_ms
        if mtime_ms > now_ms - grace_ms:
            continue
        uri = f"{scheme}://{info.path}" if scheme and scheme != "file" else f"file://{info.path}"
        try:
            table.io.delete(uri)
            removed += 1
        except FileNotFoundError:
            pass
    return removed
