"""Temporary tables and views, as Materialize has them: each session that makes one gets
its own ambient `mz_temp` schema (PostgreSQL's `pg_temp` names it too), searched before
the search_path and invisible to every other session. They are real catalog items with
real shards, so every statement works on them as on others; they go, shards and all, when
the session ends or DISCARDs them, and a crash's leftovers at the next start."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from weir.catalog.model import TEMP_SCHEMA_ALIASES
from weir.errors import SqlState, WeirError
from weir.sql.resolve import RelationDesc

if TYPE_CHECKING:
    from weir.adapter.session import Session
    from weir.catalog import Catalog

log = logging.getLogger(__name__)


def names_temp_schema(parts: list[str]) -> bool:
    """`mz_temp.t` / `pg_temp.t`: a temporary object, with or without TEMP."""
    return len(parts) >= 2 and parts[-2] in TEMP_SCHEMA_ALIASES


def target(session: Session, parts: list[str]) -> tuple[str, str]:
    """(schema id, name) of a temporary object being created: the session's mz_temp, made
    now if this is its first temporary object. Another schema is PostgreSQL's 42P16."""
    if len(parts) >= 2 and not names_temp_schema(parts):
        raise WeirError(SqlState.INVALID_TABLE_DEFINITION, "cannot create temporary item in non-temporary schema")
    if session.temp_schema_id is None:
        schema = session.coord.catalog.create_temp_schema(session.role.id)
        session.temp_schema_id, session.temp_schema_oid = schema.id, schema.oid
    return session.temp_schema_id, parts[-1]


def first_temporary(depends_on: dict[str, RelationDesc]) -> RelationDesc | None:
    return next((d for d in depends_on.values() if d.temporary), None)


def refuse_dependencies(depends_on: dict[str, RelationDesc]) -> None:
    """A durable object (materialized view, hold, subscription ...) cannot read a temporary
    one: Materialize's catalog error, word for word, with PostgreSQL's SQLSTATE for it
    (0A000, "materialized views must not use temporary tables or views"; Materialize's
    own is XX000, which says nothing). Checked before anything is acquired; the catalog
    checks it again when the item is made."""
    temp = first_temporary(depends_on)
    if temp is not None:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        f"non-temporary items cannot depend on temporary item '{temp.name.split('.')[-1]}'")


async def drop_all(session: Session) -> None:
    """DISCARD TEMP / ALL and the session's end: its schema with everything in it."""
    schema_id, session.temp_schema_id, session.temp_schema_oid = session.temp_schema_id, None, 0
    if schema_id is None:
        return
    coord = session.coord
    result = coord.catalog.drop_schema(schema_id, cascade=True)
    await coord.drop_storage(result.items)
    await coord.catalog_changed()


def forget_crashed_sessions(catalog: Catalog) -> None:
    """At start, before any shard is opened: the temporary schemas of sessions a crash (or a
    kill) ended without their clean-up. Their shards are then orphans, dropped as such."""
    for schema in catalog.temp_schemas():
        dropped = catalog.drop_schema(schema.id, cascade=True)
        log.info("dropped temporary schema %s of a session that did not end cleanly (%d objects)",
                 schema.id, len(dropped.items))
