"""Databases, schemas, items (tables, views, sources, indexes, holds ...) and grants.

Items share one namespace per schema, as relations do in PostgreSQL. Their
dependencies are kept in their own table so "who reads this?" is one indexed
lookup; drops refuse (2BP01) or cascade over the transitive dependents and
return what they removed, dependents first, for the coordinator to tear down.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Row, bindparam, delete, insert, select, update

from weir.catalog import tables as t
from weir.catalog.base import CatalogBase, id_key
from weir.catalog.model import (
    MATERIALIZE_ROLE_ID,
    TEMP_SCHEMA,
    TEMP_SCHEMA_ALIASES,
    ColumnDef,
    Database,
    DropResult,
    Item,
    Privilege,
    Schema,
    kind_label,
)
from weir.errors import SqlState, WeirError, undefined_table


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def now_ms() -> int:
    return int(time.time() * 1000)


def _db(r: Row[Any]) -> Database:
    return Database(r.id, int(r.oid), r.name, r.owner_id)


_SCHEMA_COLS = (t.schemas, t.databases.c.name.label("database_name"))
_ITEM_COLS = (t.items, t.schemas.c.name.label("schema_name"),
              t.databases.c.name.label("database_name"))


def _schema(r: Row[Any]) -> Schema:
    return Schema(r.id, int(r.oid), r.database_id, r.name, r.owner_id, r.database_name)


class ObjectsMixin(CatalogBase):
    """Databases, schemas, items, dependencies and object privileges."""

    # -- databases ---------------------------------------------------------------------

    def list_databases(self) -> list[Database]:
        with self._read() as c:
            rows = c.execute(select(t.databases)).all()
        return sorted((_db(r) for r in rows), key=lambda d: id_key(d.id))

    def find_database(self, name: str) -> Database | None:
        if not self.in_transaction:
            return self._names()[0].get(name)
        with self._read() as c:
            r = c.execute(select(t.databases).where(t.databases.c.name == name)).first()
        return _db(r) if r else None

    def _names(self) -> tuple[dict[str, Database], dict[str, list[Schema]]]:
        """Databases and schemas by name, cached per generation: every statement looks its
        schema up, and a catalog query each time was half of a SHOW TABLES. Inside a
        transaction, lookups query (they must see its own changes)."""
        with self._lock:
            cached = self._names_cache
            if cached is None or cached[0] != self._generation:
                schemas: dict[str, list[Schema]] = {}
                for s in self.list_schemas():
                    schemas.setdefault(s.name, []).append(s)
                cached = (self._generation, {d.name: d for d in self.list_databases()}, schemas)
                self._names_cache = cached
            return cached[1], cached[2]

    def get_database(self, name: str) -> Database:
        """By name; 3D000 if there is none."""
        db = self.find_database(name)
        if db is None:
            raise WeirError(SqlState.INVALID_CATALOG_NAME, f'database "{name}" does not exist')
        return db

    def get_database_by_id(self, database_id: str) -> Database:
        with self._read() as c:
            r = c.execute(select(t.databases).where(t.databases.c.id == database_id)).first()
        if r is None:
            raise WeirError(SqlState.INVALID_CATALOG_NAME,
                            f"database with id {database_id} does not exist")
        return _db(r)

    def create_database(self, name: str, owner_id: str = MATERIALIZE_ROLE_ID) -> Database:
        """A database plus its `public` schema (as Materialize does); 42P04 if taken."""
        with self._write() as c:
            if self.find_database(name) is not None:
                raise WeirError(SqlState.DUPLICATE_DATABASE, f'database "{name}" already exists')
            self._require_role_id(c, owner_id)
            db = Database(self._next_id(c, "database"), self._next_oid(c), name, owner_id)
            c.execute(insert(t.databases).values(id=db.id, oid=db.oid, name=name,
                                                 owner_id=owner_id))
            self.create_schema(db.id, "public", owner_id)
            return db

    def drop_database(self, name: str, cascade: bool = False) -> DropResult:
        """Refuses (2BP01) while it has schemas unless `cascade`."""
        with self._write() as c:
            db = self.get_database(name)
            schemas = self.list_schemas(db.id)
            if schemas and not cascade:
                raise WeirError(SqlState.DEPENDENT_OBJECTS_STILL_EXIST,
                                f'database "{name}" cannot be dropped with RESTRICT while '
                                "it contains schemas")
            dropped_items: list[Item] = []
            for s in schemas:
                res = self.drop_schema(s.id, cascade=True)
                dropped_items.extend(res.items)
            c.execute(delete(t.databases).where(t.databases.c.id == db.id))
            self._delete_privileges(c, "database", [db.id])
            return DropResult(items=tuple(dropped_items), schemas=tuple(schemas))

    # -- schemas -----------------------------------------------------------------------

    def _schema_query(self) -> Any:
        return select(*_SCHEMA_COLS).select_from(
            t.schemas.outerjoin(t.databases, t.schemas.c.database_id == t.databases.c.id))

    def list_schemas(self, database_id: str | None = None,
                     include_system: bool = False) -> list[Schema]:
        """Schemas of one database (plus the ambient system ones if asked), or all."""
        q = self._schema_query()
        if database_id is not None:
            cond = t.schemas.c.database_id == database_id
            if include_system:
                cond = cond | t.schemas.c.database_id.is_(None)
            q = q.where(cond)
        with self._read() as c:
            rows = c.execute(q).all()
        return sorted((_schema(r) for r in rows), key=lambda s: id_key(s.id))

    def find_schema(self, database_id: str | None, name: str) -> Schema | None:
        """In a database, or ambient (database_id None). System schemas are found
        from any database, as in Materialize; temporary ones never (each is a session's)."""
        if name in TEMP_SCHEMA_ALIASES:
            return None
        if self.in_transaction:
            with self._read() as c:
                found = [_schema(r) for r in c.execute(self._schema_query().where(t.schemas.c.name == name)).all()]
        else:
            found = self._names()[1].get(name, [])
        for s in found:
            if s.database_id == database_id:
                return s
        for s in found:
            if s.database_id is None:
                return s
        return None

    def get_schema(self, database_id: str | None, name: str) -> Schema:
        s = self.find_schema(database_id, name)
        if s is None:
            raise WeirError(SqlState.INVALID_SCHEMA_NAME, f'schema "{name}" does not exist')
        return s

    def get_schema_by_id(self, schema_id: str) -> Schema:
        q = self._schema_query().where(t.schemas.c.id == schema_id)
        with self._read() as c:
            r = c.execute(q).first()
        if r is None:
            raise WeirError(SqlState.INVALID_SCHEMA_NAME,
                            f"schema with id {schema_id} does not exist")
        return _schema(r)

    def resolve_schema(self, database: str | None, schema: str) -> Schema:
        """`database.schema` by names (3D000 / 3F000); system schemas need no database."""
        if database is None:
            return self.get_schema(None, schema)
        db = self.get_database(database)
        return self.get_schema(db.id, schema)

    def create_schema(self, database_id: str, name: str,
                      owner_id: str = MATERIALIZE_ROLE_ID) -> Schema:
        """42P06 if the database already has it (or it names a system schema)."""
        with self._write() as c:
            db = self.get_database_by_id(database_id)
            if self.find_schema(database_id, name) is not None:
                raise WeirError(SqlState.DUPLICATE_SCHEMA, f'schema "{name}" already exists')
            self._require_role_id(c, owner_id)
            s = Schema(self._next_id(c, "schema"), self._next_oid(c), database_id, name,
                       owner_id, db.name)
            c.execute(insert(t.schemas).values(id=s.id, oid=s.oid, database_id=database_id,
                                               name=name, owner_id=owner_id))
            return s

    def create_temp_schema(self, owner_id: str) -> Schema:
        """A session's `mz_temp` schema, made with its first temporary object."""
        with self._write() as c:
            self._require_role_id(c, owner_id)
            s = Schema(self._next_id(c, "schema"), self._next_oid(c), None, TEMP_SCHEMA, owner_id)
            c.execute(insert(t.schemas).values(id=s.id, oid=s.oid, database_id=None, name=TEMP_SCHEMA,
                                               owner_id=owner_id))
            return s

    def temp_schemas(self) -> list[Schema]:
        """Every session's temporary schema (at start: what a crash left behind)."""
        return [s for s in self.list_schemas() if s.is_temporary]

    def drop_schema(self, schema_id: str, cascade: bool = False) -> DropResult:
        """Refuses (2BP01) while it has items unless `cascade`; never a system schema."""
        with self._write() as c:
            s = self.get_schema_by_id(schema_id)
            if s.is_system:
                raise WeirError(SqlState.INSUFFICIENT_PRIVILEGE,
                                f'cannot drop schema "{s.name}" because it is required by '
                                "the database system")
            ids = [r[0] for r in c.execute(
                select(t.items.c.id).where(t.items.c.schema_id == schema_id))]
            if ids and not cascade:
                raise WeirError(SqlState.DEPENDENT_OBJECTS_STILL_EXIST,
                                f'schema "{s.full_name}" cannot be dropped without CASCADE '
                                "while it contains objects")
            dropped = self._drop_items(c, ids)
            c.execute(delete(t.schemas).where(t.schemas.c.id == schema_id))
            self._delete_privileges(c, "schema", [schema_id])
            return DropResult(items=dropped, schemas=(s,))

    # -- items -------------------------------------------------------------------------

    def _item_query(self) -> Any:
        j = t.items.join(t.schemas, t.items.c.schema_id == t.schemas.c.id).outerjoin(
            t.databases, t.schemas.c.database_id == t.databases.c.id)
        return select(*_ITEM_COLS).select_from(j)

    def _load_items(self, c: Connection, where: Any = None) -> list[Item]:
        q = self._item_query()
        if where is not None:
            q = q.where(where)
        rows = c.execute(q).all()
        if not rows:
            return []
        deps: dict[str, list[str]] = {}
        dq = select(t.item_dependencies)
        if len(rows) < 500:
            dq = dq.where(t.item_dependencies.c.item_id.in_([r.id for r in rows]))
        for d in c.execute(dq):
            deps.setdefault(d.item_id, []).append(d.depends_on)
        # Items are immutable: one whose row and dependencies are unchanged is reused rather
        # than decoded again (a snapshot reads every item after every DDL)
        cache = self._decoded_items
        out = []
        for r in rows:
            key = (tuple(r), tuple(deps.get(r.id, ())))
            item = cache.get(key)
            if item is None:
                item = cache[key] = Item(
                    id=r.id, oid=int(r.oid), schema_id=r.schema_id, name=r.name, kind=r.kind,
                    owner_id=r.owner_id, cluster_id=r.cluster_id,
                    columns=tuple(ColumnDef.from_json(x) for x in json.loads(r.columns)),
                    create_sql=r.create_sql, definition=json.loads(r.definition),
                    created_at=datetime.fromtimestamp(r.created_at / 1000, UTC),
                    dependencies=tuple(sorted(deps.get(r.id, ()), key=id_key)),
                    database_name=r.database_name, schema_name=r.schema_name,
                )
            out.append(item)
        if len(cache) > 4 * len(rows) + 10_000:  # old versions of items
            cache.clear()
        return sorted(out, key=lambda i: id_key(i.id))

    def find_item(self, schema_id: str, name: str) -> Item | None:
        with self._read() as c:
            found = self._load_items(c, (t.items.c.schema_id == schema_id)
                                     & (t.items.c.name == name))
        return found[0] if found else None

    def get_item(self, item_id: str) -> Item:
        """By id; 42P01 if there is none."""
        with self._read() as c:
            found = self._load_items(c, t.items.c.id == item_id)
        if not found:
            raise undefined_table(item_id)
        return found[0]

    def find_item_by_oid(self, oid: int) -> Item | None:
        with self._read() as c:
            found = self._load_items(c, t.items.c.oid == oid)
        return found[0] if found else None

    def resolve_item(self, database: str | None, schema: str, name: str) -> Item:
        """`[database.]schema.name` by names: 3D000 / 3F000 / 42P01."""
        s = self.resolve_schema(database, schema)
        item = self.find_item(s.id, name)
        if item is None:
            raise undefined_table(f"{s.full_name}.{name}")
        return item

    def list_items(self, kind: str | None = None, schema_id: str | None = None,
                   cluster_id: str | None = None) -> list[Item]:
        cond = None
        for col, val in ((t.items.c.kind, kind), (t.items.c.schema_id, schema_id),
                         (t.items.c.cluster_id, cluster_id)):
            if val is not None:
                cond = (col == val) if cond is None else cond & (col == val)
        with self._read() as c:
            return self._load_items(c, cond)

    def create_item(
        self,
        kind: str,
        schema_id: str,
        name: str,
        columns: Sequence[ColumnDef] = (),
        create_sql: str = "",
        definition: dict[str, Any] | None = None,
        owner_id: str = MATERIALIZE_ROLE_ID,
        cluster_id: str | None = None,
        dependencies: Iterable[str] = (),
        item_id: str | None = None,
        oid: int | None = None,
    ) -> Item:
        """A new item; 42P07 if the schema already has that name, 3F000 / 42704 /
        42P01 for an unknown schema / owner or cluster / dependency. `item_id`
        and `oid` are for builtins only (system ids); users get the next 'u' id."""
        if not kind:
            raise ValueError("item kind must not be empty")
        with self._write() as c:
            self.get_schema_by_id(schema_id)
            existing = self.find_item(schema_id, name)
            if existing is not None:
                raise WeirError(SqlState.DUPLICATE_TABLE,
                                f'{kind_label(existing.kind)} "{name}" already exists')
            self._require_role_id(c, owner_id)
            if cluster_id is not None:
                self._require_cluster_id(c, cluster_id)
            deps = sorted(set(dependencies), key=id_key)
            if deps:
                have = {r[0]: (r[1], r[2], r[3]) for r in c.execute(
                    select(t.items.c.id, t.items.c.name, t.schemas.c.database_id, t.schemas.c.name).join(
                        t.schemas, t.items.c.schema_id == t.schemas.c.id).where(t.items.c.id.in_(deps)))}
                for d in deps:
                    if d not in have:
                        raise undefined_table(d)
                temporary = [n for n, db, sn in have.values() if db is None and sn == TEMP_SCHEMA]
                if temporary and not self.get_schema_by_id(schema_id).is_temporary:
                    # Materialize's catalog error, word for word (PostgreSQL's SQLSTATE)
                    raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                                    f"non-temporary items cannot depend on temporary item '{temporary[0]}'")
            new_id = item_id or self._next_id(c, "item")
            self._touch_items([new_id])
            c.execute(insert(t.items).values(
                id=new_id, oid=oid if oid is not None else self._next_oid(c),
                schema_id=schema_id, name=name, kind=kind, owner_id=owner_id,
                cluster_id=cluster_id, columns=dumps([col.to_json() for col in columns]),
                create_sql=create_sql, definition=dumps(definition or {}),
                created_at=now_ms(),
            ))
            if deps:
                c.execute(insert(t.item_dependencies),
                          [{"item_id": new_id, "depends_on": d} for d in deps])
            return self._load_items(c, t.items.c.id == new_id)[0]

    def alter_item(
        self,
        item_id: str,
        *,
        name: str | None = None,
        create_sql: str | None = None,
        definition: dict[str, Any] | None = None,
        columns: Sequence[ColumnDef] | None = None,
        owner_id: str | None = None,
        cluster_id: str | None = None,
        dependencies: Iterable[str] | None = None,
    ) -> Item:
        """Change the given fields (None keeps); renames check for 42P07."""
        with self._write() as c:
            item = self.get_item(item_id)
            self._touch_items([item_id])
            values: dict[str, Any] = {}
            if name is not None and name != item.name:
                other = self.find_item(item.schema_id, name)
                if other is not None:
                    raise WeirError(SqlState.DUPLICATE_TABLE,
                                    f'{kind_label(other.kind)} "{name}" already exists')
                values["name"] = name
            if create_sql is not None:
                values["create_sql"] = create_sql
            if definition is not None:
                values["definition"] = dumps(definition)
            if columns is not None:
                values["columns"] = dumps([col.to_json() for col in columns])
            if owner_id is not None:
                self._require_role_id(c, owner_id)
                values["owner_id"] = owner_id
            if cluster_id is not None:
                self._require_cluster_id(c, cluster_id)
                values["cluster_id"] = cluster_id
            if values:
                c.execute(update(t.items).where(t.items.c.id == item_id).values(**values))
            if dependencies is not None:
                deps = sorted(set(dependencies), key=id_key)
                for d in deps:
                    self.get_item(d)
                c.execute(delete(t.item_dependencies).where(
                    t.item_dependencies.c.item_id == item_id))
                if deps:
                    c.execute(insert(t.item_dependencies),
                              [{"item_id": item_id, "depends_on": d} for d in deps])
            return self._load_items(c, t.items.c.id == item_id)[0]

    def set_definitions(self, definitions: dict[str, dict[str, Any]], reload: bool = True) -> list[Item]:
        """Replace the definitions of several items in one transaction (batched hold
        advances: one commit for every ALTER HOLD ... ADVANCE waiting); the items as they
        are now, unless `reload` is False (then [])."""
        if not definitions:
            return []
        with self._write(structural=False) as c:
            self._touch_items(definitions)
            c.execute(update(t.items).where(t.items.c.id == bindparam("item_id")).values(definition=bindparam("body")),
                      [{"item_id": i, "body": dumps(d)} for i, d in definitions.items()])
            return self._load_items(c, t.items.c.id.in_(sorted(definitions))) if reload else []

    def _dependent_ids(self, c: Connection, roots: Iterable[str]) -> set[str]:
        """Transitive dependents of `roots` (excluding the roots themselves)."""
        seen: set[str] = set()
        frontier = set(roots)
        roots_set = set(frontier)
        while frontier:
            rows = c.execute(select(t.item_dependencies.c.item_id).where(
                t.item_dependencies.c.depends_on.in_(sorted(frontier)))).all()
            frontier = {r[0] for r in rows} - seen - roots_set
            seen |= frontier
        return seen

    def _drop_order(self, c: Connection, ids: set[str]) -> list[Item]:
        """Items ordered so each comes before everything it depends on."""
        items = {i.id: i for i in self._load_items(c, t.items.c.id.in_(sorted(ids)))}
        remaining = dict(items)
        order: list[Item] = []
        while remaining:
            needed = {d for i in remaining.values() for d in i.dependencies}
            ready = sorted((i for i in remaining.values() if i.id not in needed),
                           key=lambda i: id_key(i.id), reverse=True)
            if not ready:  # a cycle cannot be created, but never loop forever
                ready = sorted(remaining.values(), key=lambda i: id_key(i.id), reverse=True)
            for i in ready:
                order.append(i)
                del remaining[i.id]
        return order

    def dependents(self, item_id: str) -> list[Item]:
        """Everything that transitively reads `item_id`, in drop order."""
        with self._read() as c:
            return self._drop_order(c, self._dependent_ids(c, [item_id]))

    def _drop_items(self, c: Connection, ids: Iterable[str]) -> tuple[Item, ...]:
        ids = set(ids)
        if not ids:
            return ()
        order = self._drop_order(c, ids | self._dependent_ids(c, ids))
        all_ids = [i.id for i in order]
        self._touch_items(all_ids)
        for chunk in range(0, len(all_ids), 500):
            part = all_ids[chunk:chunk + 500]
            c.execute(delete(t.item_dependencies).where(
                t.item_dependencies.c.item_id.in_(part)))
            c.execute(delete(t.items).where(t.items.c.id.in_(part)))
        self._delete_privileges(c, "item", all_ids)
        return tuple(order)

    def drop_item(self, item_id: str, cascade: bool = False) -> DropResult:
        """Drop an item; 2BP01 if others depend on it unless `cascade` (which drops
        them too). Returns the dropped items, dependents first."""
        with self._write() as c:
            item = self.get_item(item_id)
            if not cascade:
                # an object's indexes go with it (as in PostgreSQL and Materialize)
                rows = c.execute(select(t.item_dependencies.c.item_id).join(
                    t.items, t.items.c.id == t.item_dependencies.c.item_id).where(
                    (t.item_dependencies.c.depends_on == item_id) & (t.items.c.kind != "index"))).all()
                if rows:
                    first = min((r[0] for r in rows), key=id_key)
                    dep = self.get_item(first)
                    raise WeirError(
                        SqlState.DEPENDENT_OBJECTS_STILL_EXIST,
                        f'cannot drop {kind_label(item.kind)} "{item.name}": still depended '
                        f'upon by {kind_label(dep.kind)} "{dep.name}"',
                        hint="Use DROP ... CASCADE to drop the dependent objects too.")
            return DropResult(items=self._drop_items(c, [item_id]))

    # -- privileges --------------------------------------------------------------------

    def set_owner(self, object_type: str, object_id: str, owner_id: str) -> None:
        """ALTER ... OWNER TO: object_type is database, schema, cluster or item."""
        table = {"database": t.databases, "schema": t.schemas, "cluster": t.clusters, "item": t.items}[object_type]
        with self._write() as c:
            self._require_role_id(c, owner_id)
            if object_type == "item":
                self._touch_items([object_id])
            c.execute(update(table).where(table.c.id == object_id).values(owner_id=owner_id))

    def grant_privileges(self, object_type: str, object_id: str, grantee_id: str,
                         privileges: str, grantor_id: str) -> Privilege:
        """Add ACL letters (e.g. 'r', 'arwd', 'U') for a grantee on an object."""
        with self._write() as c:
            key = ((t.privileges.c.object_type == object_type)
                   & (t.privileges.c.object_id == object_id)
                   & (t.privileges.c.grantee_id == grantee_id)
                   & (t.privileges.c.grantor_id == grantor_id))
            r = c.execute(select(t.privileges.c.privileges).where(key)).first()
            letters = _merge_acl(r[0] if r else "", privileges)
            if r is None:
                c.execute(insert(t.privileges).values(
                    object_type=object_type, object_id=object_id, grantee_id=grantee_id,
                    grantor_id=grantor_id, privileges=letters))
            else:
                c.execute(update(t.privileges).where(key).values(privileges=letters))
            return Privilege(object_type, object_id, grantee_id, grantor_id, letters)

    def revoke_privileges(self, object_type: str, object_id: str, grantee_id: str,
                          privileges: str) -> None:
        """Remove ACL letters granted to a grantee on an object (by any grantor)."""
        with self._write() as c:
            key = ((t.privileges.c.object_type == object_type)
                   & (t.privileges.c.object_id == object_id)
                   & (t.privileges.c.grantee_id == grantee_id))
            for r in c.execute(select(t.privileges).where(key)).all():
                rest = "".join(ch for ch in r.privileges if ch not in privileges)
                row = key & (t.privileges.c.grantor_id == r.grantor_id)
                if rest:
                    c.execute(update(t.privileges).where(row).values(privileges=rest))
                else:
                    c.execute(delete(t.privileges).where(row))

    def list_privileges(self, object_type: str | None = None,
                        object_id: str | None = None) -> list[Privilege]:
        q = select(t.privileges)
        if object_type is not None:
            q = q.where(t.privileges.c.object_type == object_type)
        if object_id is not None:
            q = q.where(t.privileges.c.object_id == object_id)
        with self._read() as c:
            rows = c.execute(q).all()
        out = [Privilege(r.object_type, r.object_id, r.grantee_id, r.grantor_id,
                         r.privileges) for r in rows]
        return sorted(out, key=lambda p: (p.object_type, id_key(p.object_id),
                                          id_key(p.grantee_id), id_key(p.grantor_id)))

    def _delete_privileges(self, c: Connection, object_type: str, ids: list[str]) -> None:
        for chunk in range(0, len(ids), 500):
            c.execute(delete(t.privileges).where(
                (t.privileges.c.object_type == object_type)
                & t.privileges.c.object_id.in_(ids[chunk:chunk + 500])))

    # -- helpers the other mixins provide ------------------------------------------------

    def _require_role_id(self, c: Connection, role_id: str) -> None:
        if c.execute(select(t.roles.c.id).where(t.roles.c.id == role_id)).first() is None:
            raise WeirError(SqlState.UNDEFINED_OBJECT, f"role with id {role_id} does not exist")

    def _require_cluster_id(self, c: Connection, cluster_id: str) -> None:
        if c.execute(select(t.clusters.c.id).where(
                t.clusters.c.id == cluster_id)).first() is None:
            raise WeirError(SqlState.UNDEFINED_OBJECT,
                            f"cluster with id {cluster_id} does not exist")


_ACL_ORDER = "arwdUC"  # insert, select, update, delete, usage, create (mz_aclitem order)


def _merge_acl(have: str, add: str) -> str:
    letters = set(have) | set(add)
    known = [ch for ch in _ACL_ORDER if ch in letters]
    return "".join(known + sorted(letters - set(_ACL_ORDER)))
