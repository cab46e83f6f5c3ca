"""`Catalog`: the durable, transactional catalog (SQLite by default, PostgreSQL by URL).

Opening a catalog creates its tables if missing, bootstraps a fresh one
(database `materialize` with schema `public`, the system schemas, role
`materialize` and the system roles, cluster `quickstart` with replica `r1`),
and brings the builtin relations' items in line with builtins.py. It also
keeps the timestamp oracle's durable high-water mark, ALTER SYSTEM values
and a small key/value store. The object APIs live in the mixins:
objects.py (databases, schemas, items, grants), roles.py, clusters.py.
"""

from __future__ import annotations

import time

from sqlalchemy import delete, insert, select, update

from weir.catalog import tables as t
from weir.catalog.base import SYSTEM_OID_START, id_key
from weir.catalog.builtins import BUILTIN_VIEWS, BUILTINS
from weir.catalog.introspection import IntrospectionMixin
from weir.catalog.model import (
    MATERIALIZE_ROLE_ID,
    MZ_MONITOR_REDACTED_ROLE_ID,
    MZ_MONITOR_ROLE_ID,
    MZ_SUPPORT_ROLE_ID,
    MZ_SYSTEM_ROLE_ID,
    PUBLIC_ROLE_ID,
    SYSTEM_SCHEMAS,
    TABLE,
    VIEW,
    Item,
    RoleMembership,
    Snapshot,
)
from weir.catalog.objects import dumps
from weir.catalog.vars import VARS, lookup_var, normalize_var

CATALOG_VERSION = "1"
MAX_ITEMS_RELOADED = 400  # more items changed since the cached snapshot: read them all

# Static system objects: (id, oid, name). Builtin relations use oids 16400+.
_SYSTEM_SCHEMAS = [(f"s{n}", SYSTEM_OID_START + n - 1, name)
                   for n, name in enumerate(SYSTEM_SCHEMAS, start=1)]
_SYSTEM_ROLES = [  # id, oid, name, superuser, login
    (MZ_SYSTEM_ROLE_ID, 16390, "mz_system", True, True),
    (MZ_SUPPORT_ROLE_ID, 16391, "mz_support", False, True),
    (MZ_MONITOR_ROLE_ID, 16392, "mz_monitor", False, False),
    (MZ_MONITOR_REDACTED_ROLE_ID, 16393, "mz_monitor_redacted", False, False),
]


class Catalog(IntrospectionMixin):
    """The catalog. Thread-safe; see base.py for the transaction rules.

    `builtin_changes` lists what opening did to builtin relations
    ('created mz_catalog.mz_tables', 'changed ...', 'removed ...') so the
    coordinator knows which builtin collections to (re)create.
    """

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self._snapshot: Snapshot | None = None
        self._snapshot_revision = -1
        t.metadata.create_all(self._engine)
        with self.transaction():
            if self.get_metadata("catalog_version") is None:
                self._bootstrap()
            self.builtin_changes: list[str] = self._sync_builtins()

    # -- bootstrap ---------------------------------------------------------------------

    def _bootstrap(self) -> None:
        with self._write() as c:
            for role_id, oid, name, superuser, login in _SYSTEM_ROLES:
                self._insert_role(c, role_id, oid, name, superuser, login, True, None)
            for schema_id, oid, name in _SYSTEM_SCHEMAS:
                c.execute(insert(t.schemas).values(id=schema_id, oid=oid, database_id=None,
                                                   name=name, owner_id=MZ_SYSTEM_ROLE_ID))
            role = self._insert_role(c, self._next_id(c, "role"), self._next_oid(c),
                                     "materialize", True, True, True, None)
            assert role.id == MATERIALIZE_ROLE_ID
            db = self.create_database("materialize", role.id)
            public = self.get_schema(db.id, "public")
            cluster = self.create_cluster("quickstart", "1", 1, managed=True, owner_id=role.id)
            for object_type, object_id in (("database", db.id), ("schema", public.id),
                                           ("cluster", cluster.id)):
                self.grant_privileges(object_type, object_id, PUBLIC_ROLE_ID, "U", role.id)
            c.execute(insert(t.oracle).values(id=1, ts=0))
            for key, value in (("catalog_version", CATALOG_VERSION), ("deploy_generation", "0"),
                               ("bootstrapped_at", str(int(time.time() * 1000)))):
                c.execute(insert(t.kv).values(key=key, value=value))

    def _sync_builtins(self) -> list[str]:
        """Make the builtin items match BUILTINS (ids and oids are stable)."""
        changes: list[str] = []
        with self._write() as c:
            for schema_id, oid, name in _SYSTEM_SCHEMAS:  # schemas added since the bootstrap
                if self.find_schema(None, name) is None:
                    c.execute(insert(t.schemas).values(id=schema_id, oid=oid, database_id=None,
                                                       name=name, owner_id=MZ_SYSTEM_ROLE_ID))
                    changes.append(f"created schema {name}")
            existing = {i.id: i for i in self._load_items(c, t.items.c.id.like("s%"))}
            for b in BUILTINS:
                schema = self.get_schema(None, b.schema)
                cols = b.column_defs()
                cur = existing.pop(b.id, None)
                if cur is None:
                    self.create_item(TABLE, schema.id, b.name, cols, "", {"builtin": True},
                                     MZ_SYSTEM_ROLE_ID, item_id=b.id, oid=b.oid)
                    changes.append(f"created {b.full_name}")
                elif (cur.name, cur.schema_id, cur.oid, list(cur.columns)) != (
                        b.name, schema.id, b.oid, cols):
                    c.execute(update(t.items).where(t.items.c.id == b.id).values(
                        name=b.name, schema_id=schema.id, oid=b.oid,
                        columns=dumps([col.to_json() for col in cols])))
                    changes.append(f"changed {b.full_name}")
            for v in BUILTIN_VIEWS:
                schema = self.get_schema(None, v.schema)
                cols = v.column_defs()
                definition = v.definition()
                cur = existing.pop(v.id, None)
                if cur is None:
                    self.create_item(VIEW, schema.id, v.name, cols, "", definition, MZ_SYSTEM_ROLE_ID,
                                     item_id=v.id, oid=v.oid)
                    changes.append(f"created {v.full_name}")
                elif (cur.name, cur.schema_id, cur.oid, list(cur.columns), cur.definition) != (
                        v.name, schema.id, v.oid, cols, definition):
                    c.execute(update(t.items).where(t.items.c.id == v.id).values(
                        name=v.name, schema_id=schema.id, oid=v.oid, kind=VIEW,
                        columns=dumps([col.to_json() for col in cols]), definition=dumps(definition)))
                    changes.append(f"changed {v.full_name}")
            for gone in existing.values():
                self._drop_items(c, [gone.id])
                changes.append(f"removed {gone.full_name}")
        return changes

    # -- snapshot ----------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """Everything, consistently, for builtins.rows(); cached until the next
        committed change (inside a transaction: fresh, with its own changes). Items not
        changed since the cached snapshot are taken from it (with thousands of holds, a
        CREATE HOLD would otherwise re-read every item)."""
        with self._lock:
            cached = self._snapshot
            if not self.in_transaction and cached is not None and self._snapshot_revision == self._revision:
                return cached
            with self._read() as c:
                members = c.execute(select(t.role_members)).all()
                databases, schemas = tuple(self.list_databases()), tuple(self.list_schemas())
                changes: dict[str, Item | None] | None = None
                if (self.in_transaction or cached is None or len(self._items_touched) > MAX_ITEMS_RELOADED
                        or (databases, schemas) != (cached.databases, cached.schemas)):
                    items = tuple(self._load_items(c))  # schema and database names are in items
                else:
                    reloaded = self._load_items(c, t.items.c.id.in_(sorted(self._items_touched)))
                    changes = dict.fromkeys(self._items_touched)
                    changes.update((i.id, i) for i in reloaded)
                    items = self._merge_items(cached.items, reloaded)
                snap = Snapshot(
                    generation=self._generation,
                    databases=databases,
                    schemas=schemas,
                    roles=tuple(self.list_roles()),
                    role_members=tuple(sorted(
                        (RoleMembership(m.role_id, m.member_id, m.grantor_id)
                         for m in members), key=lambda m: (m.role_id, m.member_id))),
                    clusters=tuple(self.list_clusters()),
                    replicas=tuple(self.list_replicas()),
                    items=items,
                    privileges=tuple(self.list_privileges()),
                    revision=-1 if self.in_transaction else self._revision,
                    base_revision=cached.revision if changes is not None and cached is not None else -1,
                    changes=changes,
                )
            if not self.in_transaction:
                self._snapshot, self._snapshot_revision = snap, self._revision
                self._items_touched = set()
            return snap

    def _merge_items(self, old: tuple[Item, ...], reloaded: list[Item]) -> tuple[Item, ...]:
        """`old` with the touched items replaced by their reloaded versions (absent: dropped),
        in id order."""
        touched = self._items_touched
        kept = [i for i in old if i.id not in touched]
        if not reloaded:
            return tuple(kept)
        reloaded.sort(key=lambda i: id_key(i.id))
        if not kept or id_key(kept[-1].id) < id_key(reloaded[0].id):  # new items: the newest ids
            return (*kept, *reloaded)
        return tuple(sorted((*kept, *reloaded), key=lambda i: id_key(i.id)))

    # -- system variables (ALTER SYSTEM) -----------------------------------------------

    def get_system_var(self, name: str) -> str:
        """The server-wide value: ALTER SYSTEM's, else the default. 42704 if unknown."""
        v = lookup_var(name)
        with self._read() as c:
            r = c.execute(select(t.system_vars.c.value).where(
                t.system_vars.c.name == v.name)).first()
        return r[0] if r else v.default

    def set_system_var(self, name: str, value: str) -> str:
        """ALTER SYSTEM SET: validates (22023 / 55P02 / 42704), stores canonical text."""
        v, text = normalize_var(name, value, "system")
        with self._write() as c:
            key = t.system_vars.c.name == v.name
            if c.execute(select(t.system_vars.c.name).where(key)).first() is None:
                c.execute(insert(t.system_vars).values(name=v.name, value=text))
            else:
                c.execute(update(t.system_vars).where(key).values(value=text))
        return text

    def reset_system_var(self, name: str) -> None:
        """ALTER SYSTEM RESET: back to the default."""
        v = lookup_var(name)
        v.check_settable("system")
        with self._write() as c:
            c.execute(delete(t.system_vars).where(t.system_vars.c.name == v.name))

    def list_system_vars(self) -> dict[str, str]:
        """Every parameter's server-wide value, by its canonical name."""
        with self._read() as c:
            stored = dict(c.execute(select(t.system_vars.c.name, t.system_vars.c.value)).all())
        return {v.name: stored.get(v.name, v.default) for v in VARS}

    # -- timestamp oracle --------------------------------------------------------------

    def oracle_get(self) -> int:
        """The durable high-water mark (0 on a fresh catalog)."""
        with self._read() as c:
            r = c.execute(select(t.oracle.c.ts).where(t.oracle.c.id == 1)).first()
        return int(r[0]) if r else 0

    def oracle_set(self, ts: int) -> int:
        """Raise the high-water mark to `ts` (never lowers it); returns the new mark."""
        with self._write(dirty=False) as c:
            c.execute(update(t.oracle).where((t.oracle.c.id == 1) & (t.oracle.c.ts < ts))
                      .values(ts=ts))
            r = c.execute(select(t.oracle.c.ts).where(t.oracle.c.id == 1)).first()
            assert r is not None
            return int(r[0])

    # -- key/value metadata ------------------------------------------------------------

    def get_metadata(self, key: str, default: str | None = None) -> str | None:
        with self._read() as c:
            r = c.execute(select(t.kv.c.value).where(t.kv.c.key == key)).first()
        return r[0] if r else default

    def bump_epoch(self) -> int:
        """Durably increment and return the coordinator epoch (storage writers'
        fencing token: a restarted coordinator always writes with a higher one)."""
        with self._write(dirty=False):
            epoch = int(self.get_metadata("epoch", "0") or "0") + 1
            self.set_metadata("epoch", str(epoch))
            return epoch

    def set_metadata(self, key: str, value: str) -> None:
        with self._write(dirty=False) as c:
            cond = t.kv.c.key == key
            if c.execute(select(t.kv.c.key).where(cond)).first() is None:
                c.execute(insert(t.kv).values(key=key, value=value))
            else:
                c.execute(update(t.kv).where(cond).values(value=value))
