"""A pyiceberg Transaction that caches its staged metadata.

pyiceberg 0.12 recomputes `Transaction.table_metadata` (replaying the staged
updates and deep-copying the whole metadata) on every access, and a snapshot
producer reads it a dozen times per commit: over a third of an append's time.
Metadata objects are frozen pydantic models, so sharing one is safe; the cache
is keyed on the identities of the base metadata and the staged-updates tuple,
both replaced (never mutated) whenever they change.
"""

from __future__ import annotations

from typing import Any

from pyiceberg.table import Table, Transaction
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import update_table_metadata


class CachedTransaction(Transaction):
    def __init__(self, table: Table, autocommit: bool = False) -> None:
        super().__init__(table, autocommit)
        self._cached: tuple[Any, Any, TableMetadata] | None = None

    @property
    def table_metadata(self) -> TableMetadata:
        base, updates = self._table.metadata, self._updates
        c = self._cached
        if c is None or c[0] is not base or c[1] is not updates:
            c = self._cached = (base, updates, update_table_metadata(base, updates))
        return c[2]


def transaction(table: Table) -> CachedTransaction:
    return CachedTransaction(table)
