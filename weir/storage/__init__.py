"""Storage: shards ("persist") on Apache Iceberg. See weir/storage/persist.py."""

from weir.storage.compaction import CompactionResult
from weir.storage.frontiers import Fenced, Frontiers, UpperMismatch
from weir.storage.persist import ScanPlan, Shard, ShardStore

__all__ = [
    "CompactionResult",
    "Fenced",
    "Frontiers",
    "ScanPlan",
    "Shard",
    "ShardStore",
    "UpperMismatch",
]
