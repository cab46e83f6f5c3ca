"""CREATE / DROP SOURCE ... FROM LOAD GENERATOR: catalog items for the source and its
subsources, shards for each, and a SourceRunner that writes them every tick."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from weir.adapter import api
from weir.catalog.model import ColumnDef, Item
from weir.errors import SqlState, WeirError
from weir.sql import statements as st
from weir.storage.sources import (
    PRIMARY_RELATION,
    PROGRESS_COLUMNS,
    CallbackStateStore,
    LoadGeneratorSpec,
    SourceRunner,
    parse_options,
    subsources,
)

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator
    from weir.adapter.session import Session

log = logging.getLogger(__name__)

_STATE_KEY = "source_state:{}"


def _cols(cols: list[tuple[str, Any, bool]]) -> list[ColumnDef]:
    return [ColumnDef(n, t, nullable) for n, t, nullable in cols]


async def create_source(session: Session, stmt: st.CreateSource) -> api.Command:
    from weir.adapter.ddl import target_schema

    coord = session.coord
    cat = coord.catalog
    spec = parse_options(stmt.generator, stmt.options)
    relations = subsources(spec)
    schema_id, name = target_schema(session, stmt.name)
    if cat.find_item(schema_id, name) is not None and stmt.if_not_exists:
        session.notice(f'source "{name}" already exists, skipping')
        return api.Command("CREATE SOURCE")
    single = len(relations) == 1 and relations[0][0] == PRIMARY_RELATION
    if not single and stmt.tables is None and "FOR ALL TABLES" not in stmt.sql.upper():
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        "multi-output sources require a FOR TABLES (..) or FOR ALL TABLES statement",
                        hint=f"e.g. CREATE SOURCE {name} FROM LOAD GENERATOR {stmt.generator.upper()} "
                             "FOR ALL TABLES")
    wanted = relations
    if stmt.tables is not None:
        known = {r for r, _ in relations}
        for t in stmt.tables:
            if t not in known:
                raise WeirError(SqlState.UNDEFINED_TABLE,
                                f"reference to {t} not found in source; valid tables: {', '.join(sorted(known))}")
        wanted = [(r, c) for r, c in relations if r in stmt.tables]
    cluster = coord.catalog.get_cluster(stmt.cluster or session.get_var("cluster"))
    definition = {"load_generator": spec.to_dict(), "generator": stmt.generator}
    with cat.transaction():
        main_cols = wanted[0][1] if single else list(PROGRESS_COLUMNS)
        main = cat.create_item("source", schema_id, name, _cols(main_cols), stmt.sql,
                               {**definition, "relation": PRIMARY_RELATION if single else "__progress"},
                               owner_id=session.role.id, cluster_id=cluster.id)
        if single:
            cat.create_item("source", schema_id, f"{name}_progress", _cols(list(PROGRESS_COLUMNS)),
                            "", {"subsource_of": main.id, "relation": "__progress"},
                            owner_id=session.role.id, cluster_id=cluster.id, dependencies=[main.id])
        else:
            for rel, cols in wanted:
                if cat.find_item(schema_id, rel) is not None:
                    raise WeirError(SqlState.DUPLICATE_TABLE, f'relation "{rel}" already exists')
                cat.create_item("source", schema_id, rel, _cols(cols), "",
                                {"subsource_of": main.id, "relation": rel},
                                owner_id=session.role.id, cluster_id=cluster.id, dependencies=[main.id])
    try:
        await start_runner(coord, main)
    except BaseException:
        result = cat.drop_item(main.id, cascade=True)
        await coord.drop_storage(result.items)
        raise
    await coord.catalog_changed()
    return api.Command("CREATE SOURCE")


def source_items(coord: Coordinator, main: Item) -> list[Item]:
    return [main] + [i for i in coord.catalog.list_items("source")
                     if i.definition.get("subsource_of") == main.id]


async def ensure_collections(coord: Coordinator, main: Item) -> None:
    for item in source_items(coord, main):
        await coord.storage.ensure_collection(item.id, [(c.name, c.type, c.nullable) for c in item.columns])


async def start_runner(coord: Coordinator, main: Item) -> None:
    spec = LoadGeneratorSpec.from_dict(main.definition["load_generator"])
    shard_ids: dict[str, str] = {}
    progress = None
    for item in source_items(coord, main):
        rel = item.definition.get("relation")
        if rel == "__progress":
            progress = item.id
        else:
            shard_ids[rel] = item.id
    await ensure_collections(coord, main)
    key = _STATE_KEY.format(main.id)
    cat = coord.catalog

    def load() -> dict[str, Any] | None:
        raw = cat.get_metadata(key)
        return json.loads(raw) if raw else None

    def save(state: dict[str, Any]) -> None:
        cat.set_metadata(key, json.dumps(state))

    runner = SourceRunner(coord.storage, main.id, spec, shard_ids, CallbackStateStore(load, save),
                          progress_shard_id=progress)
    await runner.start()
    coord.source_runners[main.id] = runner


async def stop_runner(coord: Coordinator, main_id: str) -> None:
    runner = coord.source_runners.pop(main_id, None)
    if runner is not None:
        await runner.stop()
    try:
        coord.catalog.set_metadata(_STATE_KEY.format(main_id), "")
    except Exception:  # noqa: BLE001 - state of a dropped source is garbage either way
        pass


async def drop_source(session: Session, stmt: st.Drop) -> None:
    coord = session.coord
    cat = coord.catalog
    for parts in stmt.names:
        try:
            desc = coord.resolver(session).lookup(parts)
        except WeirError as e:
            if e.sqlstate == SqlState.UNDEFINED_TABLE and stmt.if_exists:
                session.notice(f'source "{".".join(parts)}" does not exist, skipping')
                continue
            raise
        item = cat.get_item(desc.id)
        if item.kind != "source":
            raise WeirError(SqlState.WRONG_OBJECT_TYPE, f'"{desc.name}" is a {item.kind} not a source')
        main_id = item.definition.get("subsource_of", item.id)
        main = cat.get_item(main_id)
        own = {i.id for i in source_items(coord, main)}
        others = [d for d in cat.dependents(main.id) if d.id not in own]
        if others and not stmt.cascade:
            raise WeirError(SqlState.DEPENDENT_OBJECTS_STILL_EXIST,
                            f'cannot drop source "{main.name}": still depended upon by '
                            f'{others[0].kind.replace("-", " ")} "{others[0].name}"',
                            hint="Use DROP ... CASCADE to drop the dependent objects too.")
        await stop_runner(coord, main.id)
        result = cat.drop_item(main.id, cascade=True)
        await coord.drop_storage(result.items)
