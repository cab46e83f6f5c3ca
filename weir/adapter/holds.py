"""HOLD objects (design 003): durable read holds a client takes on tables, sources,
materialized views and indexes, and advances as it consumes, so that a SUBSCRIBE ... AS OF
the last time it saw stays valid across crashes and reconnects.

A hold is a catalog item (kind 'hold') whose dependencies are its objects (so dropping
one needs CASCADE, which drops the hold) and whose definition keeps its time (`at`), its
MAX LAG and its automatic advances. The coordinator keeps one storage read hold per HOLD,
taken for every hold in the catalog before the storage controller moves any since after
a restart. A hold on an index keeps the index's history twice: in its arrangement, whose
since follows the holds on it (weir.adapter.indexes.allow_compaction), so reads AS OF a
held time are answered from replica memory; and in the storage collections it reads,
so such a read still has an answer (a Spark job) while a restarted replica rebuilds it."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from weir.adapter import api, privileges
from weir.adapter.hold_lag import hold_lag
from weir.catalog.builtins import by_name, hold_row
from weir.catalog.model import HOLD, INDEX, MATERIALIZED_VIEW, SOURCE, TABLE, VIEW, Item, kind_label
from weir.codec import interval_parse
from weir.errors import SqlState, WeirError
from weir.http import metrics
from weir.sql import statements as st

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator
    from weir.adapter.session import Session

log = logging.getLogger(__name__)

DEFAULT_MAX_LAG = "3h"
HOLDABLE = (TABLE, SOURCE, MATERIALIZED_VIEW, INDEX)
HOLDS_RELATION = by_name("mz_catalog", "mz_holds")


def _lag_ms(text: str) -> int:
    try:
        span = interval_parse.parse(text).span()
    except WeirError:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f'invalid MAX LAG: "{text}" is not an interval') from None
    if span <= 0:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f"MAX LAG must be positive, not '{text}'")
    return span // 1000


def storage_ids(coord: Coordinator, item: Item) -> list[str]:
    """The storage collections whose since a hold on `item` keeps back."""
    if item.kind in (TABLE, SOURCE, MATERIALIZED_VIEW):
        return [item.id]
    out: list[str] = []
    seen: set[str] = set()
    todo = list(item.dependencies)
    while todo:
        dep = coord.catalog.get_item(todo.pop())
        if dep.id in seen:
            continue
        seen.add(dep.id)
        if dep.kind in (TABLE, SOURCE, MATERIALIZED_VIEW):
            out.append(dep.id)
        else:
            todo.extend(dep.dependencies)
    return sorted(out)


BATCH_GATHER_S = 0.003  # how long a batch of advances may wait for more to join it


class Holds:
    """The storage read holds of the catalog's HOLD objects, their definitions kept in
    memory (the MAX LAG pass and ADVANCE read them without a catalog query), and the
    batching of advances: every ADVANCE waiting when a batch starts commits in one catalog
    transaction and one append to mz_holds."""

    def __init__(self, coord: Coordinator) -> None:
        self.coord = coord
        self.read_holds: dict[str, Any] = {}  # hold id -> storage ReadHold
        self.definitions: dict[str, dict[str, Any]] = {}  # hold id -> its catalog definition
        self.objects: dict[str, list[str]] = {}  # hold id -> the ids of the objects it holds
        self.on_object: dict[str, set[str]] = {}  # object id -> the holds on it
        self.names: dict[tuple[str, str], str] = {}  # (schema id, name) -> hold id: ADVANCE finds holds here
        self._name_of: dict[str, tuple[str, str]] = {}
        self._pending: dict[str, tuple[dict[str, Any], list[asyncio.Future[None]]]] = {}
        self._search_paths: dict[tuple[Any, ...], list[str]] = {}
        self._items: dict[str, Item] = {}  # hold id -> its item, for mz_holds rows (per generation)
        self._databases: dict[str, str | None] = {}  # schema id -> database id (per generation)
        self._items_generation = -1
        self._batcher: asyncio.Task[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.lag = hold_lag(coord)  # mz_internal.mz_hold_lag

    def _shards(self, hold: Item) -> list[str]:
        return sorted({sid for oid in hold.dependencies for sid in storage_ids(self.coord, self.coord.catalog.get_item(oid))})

    def load(self) -> None:
        """Take every durable hold before any since moves (bootstrap)."""
        storage = self.coord.storage
        for hold in self.coord.catalog.list_items(HOLD):
            shards = [s for s in self._shards(hold) if s in storage.collections]
            at = int(hold.definition["at"])
            since = max((storage.frontiers(s)[0] for s in shards), default=at)
            if since > at:  # cannot happen unless the catalog lost an advance; hold what is left
                log.warning("hold %s is at %d but its objects are compacted to %d", hold.name, at, since)
                at = since
            self.read_holds[hold.id] = storage.acquire_read_hold(shards, at)
            self.definitions[hold.id] = dict(hold.definition, at=at)
            self._objects(hold.id, list(hold.dependencies))
            self.named(hold.id, hold.schema_id, hold.name)

    def add(self, hold: Item, read_hold: Any) -> None:
        self.read_holds[hold.id] = read_hold
        self.definitions[hold.id] = dict(hold.definition)
        self._objects(hold.id, list(hold.dependencies))
        self.named(hold.id, hold.schema_id, hold.name)

    def _objects(self, hold_id: str, object_ids: list[str]) -> None:
        self.objects[hold_id] = object_ids
        for oid in object_ids:
            self.on_object.setdefault(oid, set()).add(hold_id)

    def least_time_on(self, object_id: str) -> int | None:
        """The earliest time a hold on this object keeps (None: no hold on it)."""
        return min((int(self.definitions[h]["at"]) for h in self.on_object.get(object_id, ())
                    if h in self.definitions), default=None)

    def search_path_schemas(self, session: Session) -> list[str]:
        """The ids of the session's search path schemas (cached per catalog generation:
        ADVANCE resolves a name on every call)."""
        key = (self.coord.catalog.generation, session.database, tuple(session.search_path))
        found = self._search_paths.get(key)
        if found is None:
            cat = self.coord.catalog
            db = self.coord.lookup_database(session.database)
            found = [s.id for s in (cat.find_schema(db.id, n) for n in session.search_path) if s is not None]
            if len(self._search_paths) > 64 or any(k[0] != key[0] for k in self._search_paths):
                self._search_paths.clear()
            self._search_paths[key] = found
        return found

    def named(self, hold_id: str, schema_id: str, name: str) -> None:
        """Index a hold under its (new) name."""
        self.names.pop(self._name_of.get(hold_id, ("", "")), None)
        self._name_of[hold_id] = (schema_id, name)
        self.names[(schema_id, name)] = hold_id

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._enforce_max_lag(), name="hold-max-lag"),
                       asyncio.create_task(self.lag.watch(), name="hold-lag")]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()

    def release(self, hold_id: str) -> None:
        self.definitions.pop(hold_id, None)
        for oid in self.objects.pop(hold_id, []):
            held = self.on_object.get(oid)
            if held is not None:
                held.discard(hold_id)
                if not held:
                    del self.on_object[oid]
        self.names.pop(self._name_of.pop(hold_id, ("", "")), None)
        rh = self.read_holds.pop(hold_id, None)
        if rh is not None:
            rh.release()

    def holds_on(self, shard_id: str) -> list[Item]:
        """The HOLD objects that keep this collection's history."""
        ids = [h for h, rh in self.read_holds.items() if shard_id in rh.shard_ids]
        return [self.coord.catalog.get_item(h) for h in ids]

    # -- advancing, in batches ---------------------------------------------------------

    async def advance(self, hold_id: str, changes: dict[str, Any]) -> None:
        """Move a hold: `changes` (at, and for MAX LAG its counters) join the next batch;
        returns once they are durable in the catalog (mz_holds follows, and reads of it wait
        for it: Coordinator.builtin_writes_settled)."""
        rh = self.read_holds[hold_id]
        if int(changes["at"]) < rh.ts:  # back first, alone (raises if no other hold kept that history)
            rh.move_to(int(changes["at"]))
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queued = self._pending.get(hold_id)
        merged = dict(queued[0] if queued else self.definitions[hold_id], **changes)
        self._pending[hold_id] = (merged, (queued[1] if queued else []) + [fut])
        if self._batcher is None or self._batcher.done():
            self._batcher = asyncio.create_task(self._commit_batches(), name="hold-advances")
        await fut

    async def _gather(self) -> None:
        """Let the advances already on their way join the batch: wait while it grows from
        one pass of the event loop to the next (at most BATCH_GATHER_S). One commit for
        sixteen advances costs little more than one for one."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + BATCH_GATHER_S
        size, still = -1, 0
        while still < 2 and loop.time() < deadline:
            still = still + 1 if len(self._pending) == size else 0
            size = len(self._pending)
            await asyncio.sleep(0)

    async def _commit_batches(self) -> None:
        while self._pending:
            await self._gather()
            batch, self._pending = self._pending, {}
            try:
                await self._commit(batch)
            except BaseException as e:  # noqa: BLE001 - reported to every waiting ADVANCE
                for _, futs in batch.values():
                    for f in futs:
                        if not f.done():
                            f.set_exception(e if isinstance(e, Exception) else RuntimeError(str(e)))
                if not isinstance(e, Exception):
                    raise
            else:
                for _, futs in batch.values():
                    for f in futs:
                        if not f.done():
                            f.set_result(None)

    async def _commit(self, batch: dict[str, tuple[dict[str, Any], list[asyncio.Future[None]]]]) -> None:
        """One catalog transaction for the batch. The storage read hold never claims less
        history than the catalog: it moved back before (advance), and moves forward after."""
        cat = self.coord.catalog
        live = {h: d for h, (d, _) in batch.items() if h in self.read_holds}  # not dropped meanwhile
        cat.set_definitions(live, reload=False)
        for h, d in live.items():
            rh = self.read_holds[h]
            if int(d["at"]) > rh.ts:
                rh.move_to(int(d["at"]))
            self.definitions[h] = d
        metrics.HOLD_ADVANCE_BATCHES.inc()
        metrics.HOLD_ADVANCES.inc(len(live))
        items, databases = self._rows_of(list(live))
        await self.coord.replace_builtin_item_rows(HOLDS_RELATION, {
            h: [hold_row(replace(items[h], definition=live[h]), databases[items[h].schema_id])] for h in live})

    def _rows_of(self, hold_ids: list[str]) -> tuple[dict[str, Item], dict[str, str | None]]:
        """The holds' catalog items (name, schema, owner: what mz_holds shows besides the
        definition) and their schemas' databases, read once per catalog generation."""
        cat = self.coord.catalog
        if self._items_generation != cat.generation:
            self._items.clear()
            self._databases.clear()
            self._items_generation = cat.generation
        missing = [h for h in hold_ids if h not in self._items]
        if missing:
            for item in cat.list_items(HOLD):
                self._items[item.id] = item
        for schema_id in {self._items[h].schema_id for h in hold_ids} - set(self._databases):
            self._databases[schema_id] = cat.get_schema_by_id(schema_id).database_id
        return self._items, self._databases

    # -- MAX LAG -----------------------------------------------------------------------

    async def _enforce_max_lag(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            try:
                await self._advance_lagging()
            except Exception:  # noqa: BLE001 - retried at the next pass
                log.warning("enforcing MAX LAG of holds failed", exc_info=True)

    async def _advance_lagging(self) -> None:
        storage = self.coord.storage
        uppers: dict[str, int] = {}  # thousands of holds on a few shards
        moves = []
        for hold_id, d in list(self.definitions.items()):
            rh = self.read_holds.get(hold_id)
            if rh is None or not rh.shard_ids:
                continue
            for s in rh.shard_ids:
                if s not in uppers:
                    uppers[s] = storage.frontiers(s)[1]
            upper = min(uppers[s] for s in rh.shard_ids)
            at, max_lag = int(d["at"]), int(d["max_lag_ms"])
            if upper - at > max_lag:
                moves.append(self.advance(hold_id, {
                    "at": upper - max_lag, "auto_advances": int(d.get("auto_advances", 0)) + 1,
                    "last_auto_advanced_at": int(time.time() * 1000)}))
        if moves:
            await asyncio.gather(*moves)


def _eval_time(session: Session, expr: Any) -> int:
    from weir.adapter.query import eval_as_of

    return eval_as_of(session, expr)


def find_id(session: Session, parts: list[str], *, missing_ok: bool = False) -> str | None:
    """The id of the hold a (possibly qualified) name means, from the holds' name index."""
    coord = session.coord
    names = coord.holds.names
    if len(parts) == 1:
        for schema_id in coord.holds.search_path_schemas(session):
            if (schema_id, parts[0]) in names:
                return names[(schema_id, parts[0])]
    else:
        schema = coord.lookup_schema(parts[0] if len(parts) == 3 else session.database, parts[-2])
        if (schema.id, parts[-1]) in names:
            return names[(schema.id, parts[-1])]
    if missing_ok:
        return None
    raise WeirError(SqlState.UNDEFINED_OBJECT, f'unknown hold "{".".join(parts)}"')


def find(session: Session, parts: list[str], *, missing_ok: bool = False) -> Item | None:
    hold_id = find_id(session, parts, missing_ok=missing_ok)
    return None if hold_id is None else session.coord.catalog.get_item(hold_id)


def _check_time(coord: Coordinator, objects: list[Item], t: int, verb: str) -> None:
    """t must be readable for every object: at or after its since (which no hold lets pass
    the holds on it), and not in the future (an object's write frontier may lag behind t,
    as a materialized view's does: reads at t then wait for it)."""
    storage = coord.storage
    now = coord.oracle.read_ts() + 1
    for obj in objects:
        for sid in storage_ids(coord, obj):
            since, upper = storage.frontiers(sid)
            if t < since:
                raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                                f"cannot {verb} at {t}: {kind_label(obj.kind)} \"{obj.name}\" has been compacted to "
                                f"{since} (its read frontier), and no hold on it is at or before {t}")
            now = max(now, upper)
    if t > now:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                        f"cannot {verb} at {t}: it is in the future (the objects' write frontier is {now})")


def _check_shards(coord: Coordinator, shard_ids: list[str], t: int, verb: str, object_ids: list[str]) -> None:
    """_check_time on the collections a hold already knows (no catalog walk on the
    ADVANCE path); the objects are looked up only to word an error."""
    storage = coord.storage
    frontiers = [storage.frontiers(sid) for sid in shard_ids]
    now = max([coord.oracle.read_ts() + 1] + [upper for _, upper in frontiers])
    if t > now or any(t < since for since, _ in frontiers):
        _check_time(coord, [coord.catalog.get_item(o) for o in object_ids], t, verb)


def _default_time(coord: Coordinator, objects: list[Item]) -> int:
    """The least time valid for every object: the greatest of their read frontiers (an
    index's own among them, so that its arrangement answers from the hold's time)."""
    from weir.adapter.indexes import read_frontier

    times = [coord.storage.frontiers(sid)[0] for obj in objects for sid in storage_ids(coord, obj)]
    times += [t for o in objects if o.kind == INDEX and (t := read_frontier(coord, o.id)) is not None]
    return max(times)


async def create(session: Session, stmt: st.CreateHold) -> api.Command:
    from weir.adapter.ddl import target_schema

    coord = session.coord
    cat = coord.catalog
    schema_id, name = target_schema(session, stmt.name)
    if stmt.if_not_exists and cat.find_item(schema_id, name) is not None:
        session.notice(f'hold "{name}" already exists, skipping')
        return api.Command("CREATE HOLD")
    resolver = coord.resolver(session)
    objects: list[Item] = []
    for parts in stmt.objects:
        obj = cat.get_item(resolver.lookup(parts).id)
        if obj.kind not in HOLDABLE:
            what = "an unmaterialized view" if obj.kind == VIEW else f"a {kind_label(obj.kind)}"
            raise WeirError(SqlState.WRONG_OBJECT_TYPE,
                            f'cannot create a hold on "{obj.name}": it is {what}; holds are on tables, '
                            "sources, materialized views and indexes")
        if obj.builtin:
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f'cannot create a hold on system object "{obj.name}"')
        if obj.kind == INDEX:  # an index is read as the relation it indexes, on its cluster
            privileges.require_read(session, [obj.definition["on_id"]])
            privileges.require(session, "cluster", obj.cluster_id or "", "U")
        else:
            privileges.require_read(session, [obj.id])
        if obj.id not in (o.id for o in objects):
            objects.append(obj)
    max_lag_text = stmt.max_lag or DEFAULT_MAX_LAG
    max_lag = _lag_ms(max_lag_text)
    cap = coord.system_var("max_hold_max_lag")
    from weir.catalog.vars import duration_ms

    if max_lag > duration_ms(cap):
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                        f"MAX LAG '{max_lag_text}' exceeds the limit max_hold_max_lag ({cap})")
    at = _eval_time(session, stmt.at) if stmt.at is not None else _default_time(coord, objects)
    _check_time(coord, objects, at, "create a hold")
    shards = sorted({sid for o in objects for sid in storage_ids(coord, o)})
    read_hold = coord.storage.acquire_read_hold(shards, at)  # before any await: since cannot pass it
    try:
        item = cat.create_item(HOLD, schema_id, name, create_sql=stmt.sql, owner_id=session.role.id,
                               dependencies=[o.id for o in objects],
                               definition={"at": at, "max_lag": max_lag_text, "max_lag_ms": max_lag,
                                           "auto_advances": 0, "last_auto_advanced_at": None})
    except BaseException:
        read_hold.release()
        raise
    coord.holds.add(item, read_hold)
    await coord.catalog_changed()
    return api.Command("CREATE HOLD")


async def alter(session: Session, stmt: st.AlterHold) -> api.Command:
    coord = session.coord
    hold_id = find_id(session, stmt.name)
    assert hold_id is not None
    privileges.require_owner(session, "item", hold_id)
    if stmt.action == "rename":
        assert stmt.new_name is not None
        hold = coord.catalog.alter_item(hold_id, name=stmt.new_name)
        coord.holds.named(hold_id, hold.schema_id, hold.name)
        await coord.catalog_changed()
        return api.Command("ALTER HOLD")
    rh = coord.holds.read_holds[hold_id]
    at = int(coord.holds.definitions[hold_id]["at"])
    if stmt.to is not None:
        t = _eval_time(session, stmt.to)
    else:  # the objects' read frontier without this hold: what their other holds and windows allow
        storage = coord.storage
        t = max(at, min(storage.collections[s].upper - storage.collections[s].window_ms for s in rh.shard_ids)
                if rh.shard_ids else at)
        t = max(t, max((storage.frontiers(s)[0] for s in rh.shard_ids), default=t))
    _check_shards(coord, rh.shard_ids, t, "advance the hold", coord.holds.objects[hold_id])
    await coord.holds.advance(hold_id, {"at": t})
    return api.Command("ALTER HOLD")


def too_old_detail(coord: Coordinator, shard_id: str, t: int) -> str | None:
    """For a read AS OF t before a collection's since: the holds on it that start after t."""
    later = [h for h in coord.holds.holds_on(shard_id) if int(h.definition["at"]) > t]
    if not later:
        return None
    return "; ".join(f'hold "{h.name}" keeps its history from {int(h.definition["at"])}, after {t}' for h in later)


# ---- RETAIN HISTORY: an object's own compaction window -------------------------------

MIN_RETAIN_MS = 1000
RETAINABLE = (TABLE, SOURCE, MATERIALIZED_VIEW, INDEX)


def retain_ms(text: str) -> int:
    try:
        ms = interval_parse.parse(text).span() // 1000
    except WeirError:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f'invalid RETAIN HISTORY: "{text}" is not an interval') from None
    if ms < MIN_RETAIN_MS:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                        f"RETAIN HISTORY FOR '{text}' is too short: the least is 1s")
    return ms


def windows(coord: Coordinator) -> dict[str, int]:
    """Each collection's compaction window: the longest RETAIN HISTORY of the objects kept
    in it (an index's history lives in the collections it reads)."""
    out: dict[str, int] = {}
    for kind in RETAINABLE:
        for item in coord.catalog.list_items(kind):
            ms = item.definition.get("retain_history_ms")
            if ms is not None:
                for sid in storage_ids(coord, item):
                    out[sid] = max(out.get(sid, MIN_RETAIN_MS), int(ms))
    return out


def apply_windows(coord: Coordinator) -> None:
    from weir.storage.controller import COMPACTION_WINDOW_MS

    found = windows(coord)
    for sid in coord.storage.collections:
        coord.storage.set_compaction_window(sid, found.get(sid, COMPACTION_WINDOW_MS))


async def set_retain_history(session: Session, item: Item, value: str | None) -> None:
    coord = session.coord
    definition = dict(item.definition)
    if value is None:
        definition.pop("retain_history_ms", None)
        definition.pop("retain_history", None)
    else:
        definition.update(retain_history_ms=retain_ms(value), retain_history=value)
    coord.catalog.alter_item(item.id, definition=definition)
    apply_windows(coord)
    await coord.catalog_changed()


async def alter_retain_history(session: Session, stmt: st.AlterRetainHistory) -> api.Command:
    coord = session.coord
    if stmt.value is not None:
        retain_ms(stmt.value)
    item = coord.catalog.get_item(coord.resolver(session).lookup(stmt.name).id)
    privileges.require_owner(session, "item", item.id)
    if kind_label(item.kind) != stmt.object_kind:
        raise WeirError(SqlState.WRONG_OBJECT_TYPE, f'"{item.name}" is a {kind_label(item.kind)} not a {stmt.object_kind}')
    await set_retain_history(session, item, stmt.value)
    return api.Command(f"ALTER {stmt.object_kind.upper()}")
