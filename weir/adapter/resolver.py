"""Resolve relation names against the catalog for one session (database, search_path)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.catalog.builtins import BUILTINS
from weir.catalog.model import SYSTEM_SCHEMAS, TEMP_SCHEMA, TEMP_SCHEMA_ALIASES, Item
from weir.errors import SqlState, WeirError
from weir.sql.render import IMPLICIT_SCHEMAS
from weir.sql.resolve import ColumnDesc, RelationDesc

ReadTime = Callable[[str], "int | None"]


def describe_item(item: Item, read_time: ReadTime | None = None) -> RelationDesc:
    cols = [ColumnDesc(c.name, c.type, c.nullable, c.default) for c in item.columns]
    log_part = item.definition.get("introspection_log")
    if log_part is not None:  # a replica's introspection source: its part of the replica's shard
        shard = item.definition["shard_id"]
        return RelationDesc(item.id, item.full_name, "source", cols, shard_id=shard, oid=item.oid,
                            part=log_part, read_at=read_time(shard) if read_time else None)
    view_sql = item.definition.get("query") if item.kind == "view" else None
    kind = item.kind if not item.builtin or item.kind == "view" else "table"
    restricted = item.builtin and item.id in _RESTRICTED
    return RelationDesc(item.id, item.full_name, kind, cols, shard_id=None if view_sql is not None else item.id,
                        view_sql=view_sql, oid=item.oid, restricted=restricted,
                        temporary=item.database_name is None and item.schema_name == TEMP_SCHEMA)


_RESTRICTED = frozenset(b.id for b in BUILTINS if b.restricted)


class CatalogResolver:
    def __init__(self, catalog: object, database: str, search_path: list[str],
                 may_read_restricted: bool = True, cache: dict[Any, RelationDesc] | None = None,
                 read_time: ReadTime | None = None, temp_schema_id: str | None = None) -> None:
        self.catalog = catalog
        self.temp_schema_id = temp_schema_id  # the session's mz_temp schema, if it made one
        self.read_time = read_time  # an introspection shard's latest complete time
        self.database = database
        self.search_path = search_path
        self.may_read_restricted = may_read_restricted
        self._cache = cache  # shared; valid for one catalog generation

    def lookup(self, parts: list[str]) -> RelationDesc:
        if self._cache is None:
            return self._lookup(parts)
        key = (self.catalog.generation, self.database, tuple(self.search_path), self.temp_schema_id,  # type: ignore[attr-defined]
               tuple(parts))
        desc = self._cache.get(key)
        if desc is None:
            desc = self._lookup(parts)
            if not _volatile(desc):
                if len(self._cache) > 4096:
                    self._cache.clear()
                self._cache[key] = desc
        return desc

    def _schema(self, database: str | None, name: str):  # noqa: ANN202
        cat = self.catalog
        if name in TEMP_SCHEMA_ALIASES:  # the session's own temporary schema, never another's
            return cat.get_schema_by_id(self.temp_schema_id) if self.temp_schema_id else None  # type: ignore[attr-defined]
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
            if not any(s in TEMP_SCHEMA_ALIASES for s in self.search_path):
                candidates.insert(0, TEMP_SCHEMA)  # PostgreSQL: searched first unless placed in the path
            for schema_name in candidates:
                schema = self._schema(None, schema_name)
                if schema is None:
                    continue
                item = self.catalog.find_item(schema.id, name)  # type: ignore[attr-defined]
                if item is not None:
                    return self._describe(item)
            raise WeirError(SqlState.UNDEFINED_TABLE, f"unknown catalog item '{name}'")
        database = parts[0] if len(parts) == 3 else None
        schema = self._schema(database, parts[-2])
        if schema is None and parts[-2] in TEMP_SCHEMA_ALIASES:
            raise WeirError(SqlState.UNDEFINED_TABLE, f"unknown catalog item '{'.'.join(parts)}'")
        if schema is None:
            raise WeirError(SqlState.INVALID_SCHEMA_NAME, f"unknown schema '{parts[-2]}'")
        item = self.catalog.find_item(schema.id, name)  # type: ignore[attr-defined]
        if item is None:
            raise WeirError(SqlState.UNDEFINED_TABLE, f"unknown catalog item '{'.'.join(parts)}'")
        return self._describe(item)

    def _describe(self, item: Item) -> RelationDesc:
        union = item.definition.get("introspection_union")
        if union is not None:
            return persist_union(self.catalog, item, union, self.read_time)
        live = item.definition.get("introspection_live")
        if live is not None:  # the targeted replica's in-memory log
            from weir.compute import introspection as ci

            cols = [ColumnDesc(c.name, c.type, c.nullable, c.default) for c in item.columns]
            return RelationDesc(item.id, item.full_name, "source", cols, shard_id=ci.LIVE_LOGS, oid=item.oid,
                                part=live, volatile=True)
        return describe_item(item, self.read_time)


def _volatile(desc: RelationDesc) -> bool:
    """Read at a time chosen when it is resolved: never cached."""
    return desc.volatile or desc.read_at is not None or desc.part is not None


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def persist_union(catalog: Any, item: Item, base: str, read_time: ReadTime | None) -> RelationDesc:
    """`mz_introspection.<base>_persist`: the union of every current replica's `<base>_<id>`,
    tagged with its cluster, replica and the time its part is read at (design 004). Expanded
    when a query is planned, so views on it see the replicas of the moment."""
    from weir.compute import introspection as ci

    cols = [ColumnDesc(c.name, c.type, c.nullable, c.default) for c in item.columns]
    own = [c.name for c in cols[len(ci.TAG_COLUMNS):]]
    schema = catalog.find_schema(None, ci.SCHEMA)
    clusters = {c.id: c.name for c in catalog.list_clusters()}
    parts = []
    for r in catalog.list_replicas():
        if catalog.find_item(schema.id, f"{base}_{r.id}") is None:
            continue
        t = read_time(ci.shard_id(r.id)) if read_time else None
        read_at = f"CAST({t} AS mz_timestamp)" if t is not None else "CAST(NULL AS mz_timestamp)"
        select = ", ".join(f'x."{n}"' for n in own)
        parts.append(f"SELECT {_text(clusters.get(r.cluster_id, ''))} AS cluster, {_text(r.name)} AS replica, "
                     f"{_text(r.id)} AS replica_id, {read_at} AS read_at, {select} "
                     f'FROM {ci.SCHEMA}."{base}_{r.id}" x')
    if not parts:
        typed = ", ".join(f'CAST(NULL AS {c.type.sql()}) AS "{c.name}"' for c in cols)
        parts.append(f"SELECT {typed} WHERE false")
    return RelationDesc(item.id, item.full_name, "view", cols, view_sql=" UNION ALL ".join(parts),
                        oid=item.oid, volatile=True)
