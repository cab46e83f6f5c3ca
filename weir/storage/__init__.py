"""Storage: shards ("persist") on Apache Iceberg. See weir/storage/persist.py."""

from weir.storage.persist import (
    CompactionResult,
    Fenced,
    Frontiers,
    ScanPlan,
    Shard,
    ShardStore,
    UpperMismatch,
)

__all__ = [
    "CompactionResult",
    "Fenced",
    "Frontiers",
    "ScanPlan",
    "Shard",
    "ShardStore",
    "UpperMismatch",
]
