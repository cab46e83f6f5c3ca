"""Sources: Materialize's load generators (COUNTER, AUCTION, TPCH), written into
shards by the storage controller like tables.

`parse_options` validates CREATE SOURCE options into a `LoadGeneratorSpec`,
`subsources` names the relations a source produces, `LoadGenerator` is the
deterministic, restartable generator and `SourceRunner` drives one source against a
`StorageController`.
"""

from weir.storage.sources.counter import PRIMARY_RELATION
from weir.storage.sources.generator import LoadGenerator
from weir.storage.sources.runner import (
    CallbackStateStore,
    MemoryStateStore,
    SourceRunner,
    StateStore,
    progress_table,
)
from weir.storage.sources.spec import (
    KINDS,
    PROGRESS_COLUMNS,
    LoadGeneratorSpec,
    parse_interval_us,
    parse_options,
    subsources,
)

__all__ = [
    "KINDS",
    "PRIMARY_RELATION",
    "PROGRESS_COLUMNS",
    "CallbackStateStore",
    "LoadGenerator",
    "LoadGeneratorSpec",
    "MemoryStateStore",
    "SourceRunner",
    "StateStore",
    "parse_interval_us",
    "parse_options",
    "progress_table",
    "subsources",
]
