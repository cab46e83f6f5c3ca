"""Durable subscriptions (issue 11, part 6): a SUBSCRIBE whose position lives in the
catalog, so a client resumes where it acknowledged after any crash or reconnection.

A durable subscription is a catalog item (kind 'durable-subscription') whose definition
keeps its query (qualified, so any session reads the same thing), the storage
collections it reads, the time acknowledged up to, when that was, how long it waits for
an acknowledgement and its state. Like a HOLD it keeps one storage read hold on its
inputs, at the acknowledged time, taken again before any since moves after a restart.
Without START AT it starts at the present (the time a SELECT would read), so its
snapshot includes every write committed before it.

- `SUBSCRIBE USING DURABLE SUBSCRIPTION ds` is `SUBSCRIBE (query) AS OF <acknowledged>`
  on the subscription's cluster (SNAPSHOT false unless asked): every update after the
  acknowledged time, exactly once per reader. One reader at a time: a new one takes
  over, the old one ends with 55006.
- `ACKNOWLEDGE DURABLE SUBSCRIPTION ds UP TO t` (any session): the client has applied
  every update at times <= t. t may not be before what was acknowledged nor at or past
  the inputs' write frontier (updates there are not final).
- Not acknowledged within ACKNOWLEDGE WITHIN: state 'expired', its read hold released,
  its reader ended, resuming refused until `ALTER DURABLE SUBSCRIPTION ds RESET` (which
  starts it again at the present).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp

from weir.adapter import api, planning, privileges
from weir.adapter.live_relation import LiveRelation
from weir.catalog.builtins import by_name
from weir.catalog.model import DURABLE_SUBSCRIPTION, Item
from weir.codec import interval_parse
from weir.errors import SqlState, WeirError
from weir.sql import statements as st

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator
    from weir.adapter.session import Session

log = logging.getLogger(__name__)

RELATION = by_name("mz_internal", "mz_durable_subscriptions")
ACTIVE, EXPIRED = "active", "expired"
EXPIRY_CHECK_S = 1.0
Row = tuple[Any, ...]


def _now_ms() -> int:
    return int(time.time() * 1000)


def _within_ms(text: str) -> int:
    try:
        span = interval_parse.parse(text).span()
    except WeirError:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                        f'invalid ACKNOWLEDGE WITHIN: "{text}" is not an interval') from None
    if span <= 0:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f"ACKNOWLEDGE WITHIN must be positive, not '{text}'")
    return span // 1000


class _Reader:
    """The session reading a durable subscription now; ended when another takes over or
    the subscription expires (its SUBSCRIBE raises the reason at its next step)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.ended: WeirError | None = None

    def check(self) -> None:
        if self.ended is not None:
            raise self.ended


class DurableSubscriptions:
    """The read holds, definitions and readers of the catalog's durable subscriptions."""

    def __init__(self, coord: Coordinator) -> None:
        self.coord = coord
        self.read_holds: dict[str, Any] = {}  # id -> storage ReadHold (active ones only)
        self.definitions: dict[str, dict[str, Any]] = {}
        self.items: dict[str, Item] = {}
        self.readers: dict[str, _Reader] = {}
        assert RELATION is not None
        self.relation = LiveRelation(coord, RELATION, ("id",), self._measure)
        self._tasks: list[asyncio.Task[None]] = []

    # -- life cycle --------------------------------------------------------------------

    def load(self) -> None:
        """Take every active subscription's read hold before any since moves (bootstrap)."""
        storage = self.coord.storage
        for item in self.coord.catalog.list_items(DURABLE_SUBSCRIPTION):
            d = dict(item.definition)
            if d["state"] == ACTIVE:
                inputs = [s for s in d["inputs"] if s in storage.collections]
                at = int(d["acknowledged_up_to"])
                since = max((storage.frontiers(s)[0] for s in inputs), default=at)
                if since > at:  # cannot happen unless the catalog lost an acknowledgement
                    log.warning("durable subscription %s is at %d but its inputs are compacted to %d",
                                item.name, at, since)
                self.read_holds[item.id] = storage.acquire_read_hold(inputs, max(at, since))
            self.definitions[item.id] = d
            self.items[item.id] = item

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._expire_loop(), name="durable-subscription-expiry"),
                       asyncio.create_task(self.relation.watch(), name="durable-subscriptions")]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()

    def release(self, ds_id: str) -> None:
        """Forget a dropped subscription: its read hold goes, its reader ends."""
        rh = self.read_holds.pop(ds_id, None)
        if rh is not None:
            rh.release()
        self.definitions.pop(ds_id, None)
        item = self.items.pop(ds_id, None)
        reader = self.readers.pop(ds_id, None)
        if reader is not None and item is not None:
            reader.ended = WeirError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE,
                                     f'durable subscription "{item.name}" was dropped')

    def _store(self, ds_id: str, **changes: Any) -> None:
        """Make a change durable (one catalog transaction), then remember it."""
        d = dict(self.definitions[ds_id], **changes)
        (item,) = self.coord.catalog.set_definitions({ds_id: d})
        self.definitions[ds_id], self.items[ds_id] = d, item

    # -- expiry ------------------------------------------------------------------------

    async def _expire_loop(self) -> None:
        while True:
            await asyncio.sleep(EXPIRY_CHECK_S)
            try:
                await self.expire_overdue()
            except Exception:  # noqa: BLE001 - retried at the next pass
                log.warning("expiring durable subscriptions failed", exc_info=True)

    async def expire_overdue(self) -> None:
        now = _now_ms()
        expired = False
        for ds_id, d in list(self.definitions.items()):
            if d["state"] == ACTIVE and now - int(d["last_acknowledged_at"]) > int(d["acknowledge_within_ms"]):
                self._store(ds_id, state=EXPIRED)
                rh = self.read_holds.pop(ds_id, None)
                if rh is not None:
                    rh.release()
                name = self.items[ds_id].name
                log.info("durable subscription %s expired: not acknowledged within %s", name,
                         d["acknowledge_within"])
                reader = self.readers.pop(ds_id, None)
                if reader is not None:
                    reader.ended = _expired_error(name, d)
                expired = True
        if expired:
            await self.relation.refresh()

    # -- mz_internal.mz_durable_subscriptions -------------------------------------------

    def frontier(self, ds_id: str) -> int:
        """Its inputs' write frontier: updates before it are final."""
        storage = self.coord.storage
        uppers = [storage.frontiers(s)[1] for s in self.definitions[ds_id]["inputs"] if s in storage.collections]
        return min(uppers, default=0)

    async def _measure(self) -> dict[Any, Row]:
        now, rows = _now_ms(), {}
        for ds_id, d in list(self.definitions.items()):
            item = self.items[ds_id]
            ack = int(d["acknowledged_up_to"])
            frontier = self.frontier(ds_id)
            reader = self.readers.get(ds_id)
            rows[(ds_id,)] = (ds_id, item.name, d["query"], item.cluster_id, ack,
                              timedelta(milliseconds=max(0, now - int(d["last_acknowledged_at"]))),
                              timedelta(milliseconds=max(0, frontier - 1 - ack)) if frontier else None,
                              d["state"], reader.session_id if reader is not None else None)
        return rows


def _expired_error(name: str, d: dict[str, Any]) -> WeirError:
    return WeirError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE,
                     f'durable subscription "{name}" has expired: it was not acknowledged within '
                     f'{d["acknowledge_within"]} (last acknowledged up to {d["acknowledged_up_to"]})',
                     hint=f'ALTER DURABLE SUBSCRIPTION "{name}" RESET starts it again at the present.')


def _eval_time(session: Session, expr: exp.Expression) -> int:
    from weir.adapter.query import eval_as_of

    return eval_as_of(session, expr)


def find(session: Session, parts: list[str], *, missing_ok: bool = False) -> Item | None:
    coord = session.coord
    cat = coord.catalog
    if len(parts) == 1:
        db = coord.lookup_database(session.database)
        schemas = [s for s in (cat.find_schema(db.id, n) for n in session.search_path) if s is not None]
    else:
        schemas = [coord.lookup_schema(parts[0] if len(parts) == 3 else session.database, parts[-2])]
    for schema in schemas:
        item = cat.find_item(schema.id, parts[-1])
        if item is not None and item.kind == DURABLE_SUBSCRIPTION:
            return item
    if missing_ok:
        return None
    raise WeirError(SqlState.UNDEFINED_OBJECT, f'unknown durable subscription "{".".join(parts)}"')


def _owned(session: Session, parts: list[str]) -> Item:
    """The durable subscription named, for its owner only: reading, acknowledging and
    altering it move its position, which is its owner's."""
    item = find(session, parts)
    assert item is not None
    privileges.require_owner(session, "item", item.id)
    return item


def _check_start(coord: Coordinator, inputs: list[str], t: int, names: dict[str, str]) -> None:
    storage = coord.storage
    for sid in inputs:
        since, _ = storage.frontiers(sid)
        if t < since:
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                            f'cannot start at {t}: "{names.get(sid, sid)}" has been compacted to {since}')
    now = max([coord.oracle.read_ts() + 1] + [storage.frontiers(s)[1] for s in inputs])
    if t > now:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f"cannot start at {t}: it is in the future")


def _present(coord: Coordinator, inputs: list[str]) -> int:
    """Now, as a SELECT would read: every committed write is at or before it (and every
    input can still be read there)."""
    return max([coord.oracle.read_ts()] + [coord.storage.frontiers(s)[0] for s in inputs])


async def create(session: Session, stmt: st.CreateDurableSubscription) -> api.Command:
    from weir.adapter.ddl import target_schema
    from weir.adapter.subscribe import refuse_mz_now

    coord = session.coord
    cat = coord.catalog
    tag = api.Command("CREATE DURABLE SUBSCRIPTION")
    schema_id, name = target_schema(session, stmt.name)
    if stmt.if_not_exists and cat.find_item(schema_id, name) is not None:
        session.notice(f'durable subscription "{name}" already exists, skipping')
        return tag
    cluster = cat.get_cluster(stmt.cluster or session.get_var("cluster"))
    privileges.require(session, "cluster", cluster.id, "UC")
    within_ms = _within_ms(stmt.acknowledge_within)
    plan = planning.plan(session, stmt.query, qualify=True)
    assert plan.spark is not None and plan.spark.qualified is not None
    inputs = sorted(plan.inputs)
    if not inputs:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        "a durable subscription to a query that reads no relation is not supported",
                        hint="Its answer never changes: SELECT it instead.")
    refuse_mz_now(plan)
    privileges.require_read(session, plan.depends_on)
    await planning.describe(session, plan)  # the query must run
    names = {sid: desc.name for sid, desc in plan.inputs.items()}
    start = _eval_time(session, stmt.start_at) if stmt.start_at is not None else _present(coord, inputs)
    _check_start(coord, inputs, start, names)
    read_hold = coord.storage.acquire_read_hold(inputs, start)  # before any await: since cannot pass it
    try:
        item = cat.create_item(
            DURABLE_SUBSCRIPTION, schema_id, name, create_sql=stmt.sql, owner_id=session.role.id,
            cluster_id=cluster.id, dependencies=list(plan.depends_on),
            definition={"query": plan.spark.qualified.sql(dialect="postgres"), "inputs": inputs,
                        "acknowledged_up_to": start, "last_acknowledged_at": _now_ms(),
                        "acknowledge_within": stmt.acknowledge_within, "acknowledge_within_ms": within_ms,
                        "state": ACTIVE})
    except BaseException:
        read_hold.release()
        raise
    subs = coord.durable_subscriptions
    subs.read_holds[item.id] = read_hold
    subs.definitions[item.id] = dict(item.definition)
    subs.items[item.id] = item
    await coord.catalog_changed()
    await subs.relation.refresh()
    return tag


async def acknowledge(session: Session, stmt: st.AcknowledgeDurableSubscription) -> api.Command:
    coord = session.coord
    subs = coord.durable_subscriptions
    item = _owned(session, stmt.name)
    d = subs.definitions[item.id]
    if d["state"] != ACTIVE:
        raise _expired_error(item.name, d)
    t = _eval_time(session, stmt.up_to)
    ack = int(d["acknowledged_up_to"])
    if t < ack:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                        f'cannot acknowledge durable subscription "{item.name}" up to {t}: it is already '
                        f"acknowledged up to {ack}")
    frontier = subs.frontier(item.id)
    if t >= frontier:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                        f'cannot acknowledge durable subscription "{item.name}" up to {t}: its inputs are '
                        f"complete only up to {frontier - 1}",
                        hint="Acknowledge the times of updates (or progress messages minus one) it has sent.")
    subs._store(item.id, acknowledged_up_to=t, last_acknowledged_at=_now_ms())
    rh = subs.read_holds.get(item.id)
    if rh is not None:
        rh.move_to(t)  # forward only, after the catalog says so
    return api.Command("ACKNOWLEDGE DURABLE SUBSCRIPTION")


async def alter(session: Session, stmt: st.AlterDurableSubscription) -> api.Command:
    coord = session.coord
    subs = coord.durable_subscriptions
    item = _owned(session, stmt.name)
    if stmt.action == "rename":
        assert stmt.new_name is not None
        subs.items[item.id] = coord.catalog.alter_item(item.id, name=stmt.new_name)
    else:  # RESET: start again at the present
        d = subs.definitions[item.id]
        inputs = [s for s in d["inputs"] if s in coord.storage.collections]
        start = _present(coord, inputs)
        old = subs.read_holds.pop(item.id, None)
        subs.read_holds[item.id] = coord.storage.acquire_read_hold(inputs, start)
        if old is not None:
            old.release()
        subs._store(item.id, acknowledged_up_to=start, last_acknowledged_at=_now_ms(), state=ACTIVE)
    await coord.catalog_changed()
    await subs.relation.refresh()
    return api.Command("ALTER DURABLE SUBSCRIPTION")


async def subscribe(session: Session, stmt: st.Subscribe) -> tuple[list[api.Column], AsyncIterator[list[Row]]]:
    """SUBSCRIBE USING DURABLE SUBSCRIPTION: its query from its acknowledged time, as its
    one reader."""
    from weir.adapter import subscribe as plain

    coord = session.coord
    subs = coord.durable_subscriptions
    assert stmt.durable is not None
    item = _owned(session, stmt.durable)
    d = subs.definitions[item.id]
    if d["state"] != ACTIVE:
        raise _expired_error(item.name, d)
    inner = st.Subscribe(stmt.sql, query=sqlglot.parse_one(d["query"], read="postgres"),  # type: ignore[arg-type]
                         snapshot=stmt.snapshot, progress=stmt.progress,
                         as_of=st.AsOf(exp.Literal.number(int(d["acknowledged_up_to"]))),
                         envelope=stmt.envelope, envelope_key=stmt.envelope_key, within_order=stmt.within_order)
    reader = _Reader(session.log_id)
    columns, rows = await plain.subscribe(session, inner, cluster_id=item.cluster_id, check=reader.check)
    previous = subs.readers.get(item.id)
    if previous is not None:
        previous.ended = WeirError(SqlState.OBJECT_IN_USE,
                                   f'durable subscription "{item.name}" was taken over by another reader '
                                   f"(session {session.log_id})")
    subs.readers[item.id] = reader

    async def read() -> AsyncIterator[list[Row]]:
        try:
            async for batch in rows:
                yield batch
        finally:
            if subs.readers.get(item.id) is reader:
                del subs.readers[item.id]

    return columns, read()
