"""Resolve relation names against the catalog for one session (database, search_path)."""

from __future__ import annotations

from typing import Any

from weir.catalog.builtins import BUILTINS
from weir.catalog.model import SYSTEM_SCHEMAS, Item
from weir.errors import SqlState, WeirError
from weir.sql.render import IMPLICIT_SCHEMAS
from weir.sql.resolve import ColumnDesc, RelationDesc


def describe_item(item: Item) -> RelationDesc:
    cols = [ColumnDesc(c.name, c.type, c.nullable, c.default) for c in item.columns]
    view_sql = item.definition.get("query") if item.kind == "view" else None
    kind = item.kind if not item.builtin or item.kind == "view" else "table"
    restricted = item.builtin and item.id in _RESTRICTED
    return RelationDesc(item.id, item.full_name, kind, cols, shard_id=None if view_sql is not None else item.id,
                        view_sql=view_sql, oid=item.oid, restricted=restricted)


_RESTRICTED = frozenset(b.id for b in BUILTINS if b.restricted)


class CatalogResolver:
    def __init__(self, catalog: object, database: str, search_path: list[str],
                 may_read_restricted: bool = True, cache: dict[Any, RelationDesc] | None = None) -> None:
        self.catalog = catalog
        self.database = database
        self.search_path = search_path
        self.may_read_restricted = may_read_restricted
        self._cache = cache  # shared; valid for one catalog generation

    def lookup(self, parts: list[str]) -> RelationDesc:
        if self._cache is None:
            return self._lookup(parts)
        key = (self.catalog.generation, self.database, tuple(self.search_path), tuple(parts))  # type: ignore[attr-defined]
        desc = self._cache.get(key)
        if desc is None:
            desc = self._lookup(parts)
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[key] = desc
        return desc

    def _schema(self, database: str | None, name: str):  # noqa: ANN202
        cat = self.catalog
        if name in SYSTEM_SCHEMAS:
            return cat.find_schema(None, name)  # type: ignore[attr-defined]
        db = cat.find_database(database or self.database)  # type: ignore[attr-defined]
        if db is None:
            if database is not None:
                raise WeirError(SqlState.INVALID_CATALOG_NAME, f"unknown database '{database}'")
            return None
        return cat.find_schema(db.id, name)  # type: ignore[attr-defined]

    def _lookup(self, parts: list[str]) -> RelationDesc:
        name = parts[-1]
        if len(parts) > 3:
            raise WeirError(SqlState.SYNTAX_ERROR, f"improper relation name (too many dotted names): {'.'.join(parts)}")
        if len(parts) == 1:
            candidates = list(IMPLICIT_SCHEMAS) + [s for s in self.search_path if s not in IMPLICIT_SCHEMAS]
            for schema_name in candidates:
                schema = self._schema(None, schema_name)
                if schema is None:
                    continue
                item = self.catalog.find_item(schema.id, name)  # type: ignore[attr-defined]
                if item is not None:
                    return describe_item(item)
            raise WeirError(SqlState.UNDEFINED_TABLE, f"unknown catalog item '{name}'")
        database = parts[0] if len(parts) == 3 else None
        schema = self._schema(database, parts[-2])
        if schema is None:
            raise WeirError(SqlState.INVALID_SCHEMA_NAME, f"unknown schema '{parts[-2]}'")
        item = self.catalog.find_item(schema.id, name)  # type: ignore[attr-defined]
        if item is None:
            raise WeirError(SqlState.UNDEFINED_TABLE, f"unknown catalog item '{'.'.join(parts)}'")
        return describe_item(item)
