"""A shard's frontiers (`since`, `upper`) and writer `epoch`, kept as its Iceberg table's
properties, and the one commit that changes them together with the data they describe.

Compare-and-append rests on a custom commit requirement (`AssertFrontiers`). The SQL
catalog validates requirements against the metadata it reloads at commit time and then
swaps the catalog row only if it still points at that metadata; together that is an
atomic compare-and-swap on the stored upper.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pyiceberg.exceptions import CommitFailedException
from pyiceberg.manifest import DataFile
from pyiceberg.table import Table
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import (
    RemoveSnapshotsUpdate,
    SetPropertiesUpdate,
    ValidatableTableRequirement,
)

from weir.storage import maintenance
from weir.storage.txn import transaction

PROP_UPPER = "weir.upper"
PROP_SINCE = "weir.since"
PROP_EPOCH = "weir.epoch"
MAX_ATTEMPTS = 8  # commits tried before a conflict is given up on


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


def frontiers_of(md: TableMetadata) -> Frontiers:
    p = md.properties
    return Frontiers(int(p.get(PROP_SINCE, "0")), int(p.get(PROP_UPPER, "0")), int(p.get(PROP_EPOCH, "0")))


class AssertFrontiers(ValidatableTableRequirement):
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


def commit_frontiers(
    txn_table: Table,
    props: dict[str, str],
    req: AssertFrontiers,
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
