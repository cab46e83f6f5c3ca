"""Object privileges (issue 11, part 8), as Materialize has them.

PostgreSQL's ACL letters: SELECT r, INSERT a, UPDATE w, DELETE d on tables (SELECT only on
views, materialized views and sources), USAGE U and CREATE C on databases, schemas and
clusters. An object's owner holds all that apply to it; superusers pass every check; a
role has what it was granted and what the roles it belongs to (and PUBLIC) were granted.
Bootstrap grants PUBLIC USAGE on database materialize, schema public and cluster
quickstart, as Materialize does.

Checks, with 42501 naming the missing privilege:
- reading (SELECT, SUBSCRIBE, COPY, holds, durable subscriptions): SELECT on every user
  relation the query names, USAGE on their schemas, USAGE on the cluster a query runs on;
  system relations are readable by everyone (restricted ones are guarded on their own);
- INSERT, UPDATE, DELETE on the table (UPDATE and DELETE also need SELECT);
- creating an object: CREATE on its schema; materialized views, indexes and durable
  subscriptions also CREATE on their cluster; a hold USAGE on its indexes' clusters;
- ALTER, DROP, GRANT and REVOKE on an object: its owner (or a member of the owner role).
A view is read with its owner's rights on what it reads (PostgreSQL's rule), so only the
view itself is checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from weir.catalog.builtins import OWNER_PRIVILEGES
from weir.catalog.model import PUBLIC_ROLE_ID, Snapshot, kind_label
from weir.errors import SqlState, WeirError

if TYPE_CHECKING:
    from weir.adapter.session import Session

NAMES = {"r": "SELECT", "a": "INSERT", "w": "UPDATE", "d": "DELETE", "U": "USAGE", "C": "CREATE"}
LETTERS = {v: k for k, v in NAMES.items()}
CONTAINERS = ("database", "schema", "cluster")


@dataclass
class Acl:
    """Who may do what, from one catalog snapshot (rebuilt when the catalog changes)."""

    generation: int
    owners: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, id) -> owner id
    grants: dict[tuple[str, str], list[tuple[str, str]]] = field(default_factory=dict)
    parents: dict[str, set[str]] = field(default_factory=dict)  # member -> roles it belongs to
    names: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)  # -> (label, name)
    superusers: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, snap: Snapshot) -> Acl:
        acl = cls(snap.generation)
        dbs = {d.id: d.name for d in snap.databases}
        schemas = {s.id: (dbs.get(s.database_id or ""), s.name) for s in snap.schemas}
        for d in snap.databases:
            acl.owners[("database", d.id)] = d.owner_id
            acl.names[("database", d.id)] = ("DATABASE", f'"{d.name}"')
        for s in snap.schemas:
            acl.owners[("schema", s.id)] = s.owner_id
            db = dbs.get(s.database_id or "")
            acl.names[("schema", s.id)] = ("SCHEMA", f'"{db}.{s.name}"' if db else f'"{s.name}"')
        for c in snap.clusters:
            acl.owners[("cluster", c.id)] = c.owner_id
            acl.names[("cluster", c.id)] = ("CLUSTER", f'"{c.name}"')
        for i in snap.items:
            acl.owners[("item", i.id)] = i.owner_id
            db, schema = schemas.get(i.schema_id, (None, ""))
            qualified = ".".join(p for p in (db, schema, i.name) if p)
            acl.names[("item", i.id)] = (kind_label(i.kind).upper(), f'"{qualified}"')
        for p in snap.privileges:
            acl.grants.setdefault((p.object_type, p.object_id), []).append((p.grantee_id, p.privileges))
        for m in snap.role_members:
            acl.parents.setdefault(m.member_id, set()).add(m.role_id)
        acl.superusers = {r.id for r in snap.roles if r.superuser}
        return acl

    def roles_of(self, role_id: str) -> set[str]:
        """The role, every role it belongs to (transitively) and PUBLIC."""
        seen, todo = {role_id, PUBLIC_ROLE_ID}, [role_id]
        while todo:
            for p in self.parents.get(todo.pop(), ()):
                if p not in seen:
                    seen.add(p)
                    todo.append(p)
        return seen

    def owns(self, role_id: str, kind: str, object_id: str) -> bool:
        return role_id in self.superusers or self.owners.get((kind, object_id)) in self.roles_of(role_id)

    def allows(self, role_id: str, kind: str, object_id: str, letter: str) -> bool:
        if self.owns(role_id, kind, object_id):
            return True
        roles = self.roles_of(role_id)
        return any(g in roles and letter in letters for g, letters in self.grants.get((kind, object_id), ()))


def acl(session: Session) -> Acl:
    coord = session.coord
    cached: Acl | None = coord.acl_cache
    if cached is None or cached.generation != coord.catalog.generation:
        cached = coord.acl_cache = Acl.of(coord.catalog.snapshot())
    return cached


def _denied(session: Session, a: Acl, kind: str, object_id: str, letter: str) -> WeirError:
    label, name = a.names.get((kind, object_id), (kind.upper(), object_id))
    return WeirError(SqlState.INSUFFICIENT_PRIVILEGE, f"permission denied for {label} {name}",
                     detail=f'The "{session.role.name}" role needs {NAMES[letter]} privileges on {label} {name}')


def require(session: Session, kind: str, object_id: str, letters: str) -> None:
    """Every privilege in `letters` on the object ('item', 'schema', 'database', 'cluster')."""
    if session.role.superuser:
        return
    a = acl(session)
    for letter in letters:
        if not a.allows(session.role.id, kind, object_id, letter):
            raise _denied(session, a, kind, object_id, letter)


def require_owner(session: Session, kind: str, object_id: str) -> None:
    """ALTER, DROP, GRANT, REVOKE: the owner's (or a member of the owner role's)."""
    if session.role.superuser:
        return
    a = acl(session)
    if not a.owns(session.role.id, kind, object_id):
        label, name = a.names.get((kind, object_id), (kind.upper(), object_id))
        raise WeirError(SqlState.INSUFFICIENT_PRIVILEGE, f"must be owner of {label} {name}")


def require_read(session: Session, item_ids: Iterable[str]) -> None:
    """SELECT on each user relation and USAGE on its schema."""
    if session.role.superuser:
        return
    cat = session.coord.catalog
    for item_id in item_ids:
        if item_id.startswith("s"):
            continue  # system relations: everyone's (restricted ones are guarded where read)
        item = cat.get_item(item_id)
        require(session, "schema", item.schema_id, "U")
        require(session, "item", item_id, "r")


def visible_objects(session: Session) -> list[str] | None:
    """The compute objects and sources whose statuses the session may see (hydration
    relations, mz_visible_objects()): those it may SELECT from, an index when it may SELECT
    from what it indexes; None for a superuser (all of them)."""
    if session.role.superuser:
        return None
    a = acl(session)
    key = (a.generation, session.role.id)
    cached = session.coord.visible_cache.get(key)
    if cached is None:
        cat = session.coord.catalog
        cached = []
        for item in cat.snapshot().items:
            if item.kind not in ("materialized-view", "index", "source"):
                continue
            target = item.definition.get("on_id", item.id) if item.kind == "index" else item.id
            if a.allows(session.role.id, "item", target, "r"):
                cached.append(item.id)
        if len(session.coord.visible_cache) > 256:
            session.coord.visible_cache.clear()
        session.coord.visible_cache[key] = cached
    return cached


def applicable(kind: str) -> str:
    """The letters that mean something on this kind of object."""
    return OWNER_PRIVILEGES.get(kind, "")


# ---- GRANT / REVOKE, ALTER ... OWNER TO, SHOW PRIVILEGES ---------------------------------

def _resolve(session: Session, object_type: str, parts: list[str]) -> tuple[str, str, str]:
    """(ACL object type, id, what it is) of the object a statement names."""
    from weir.adapter import durable_subscriptions, holds

    coord = session.coord
    if object_type == "database":
        return "database", coord.lookup_database(parts[-1]).id, "database"
    if object_type == "schema":
        return "schema", coord.lookup_schema(parts[0] if len(parts) == 2 else session.database, parts[-1]).id, "schema"
    if object_type == "cluster":
        return "cluster", coord.catalog.get_cluster(parts[-1]).id, "cluster"
    if object_type == "hold":
        found = holds.find(session, parts)
    elif object_type == "durable subscription":
        found = durable_subscriptions.find(session, parts)
    else:
        found = coord.catalog.get_item(coord.resolver(session).lookup(parts).id)
        if object_type != "table" and kind_label(found.kind) != object_type:
            raise WeirError(SqlState.WRONG_OBJECT_TYPE, f'"{found.name}" is a {kind_label(found.kind)} not a {object_type}')
    assert found is not None
    return "item", found.id, found.kind


def _grantee_id(session: Session, name: str) -> str:
    if name == "PUBLIC":
        return PUBLIC_ROLE_ID
    return session.coord.catalog.get_role(name).id


async def grant(session: Session, stmt: Any) -> Any:
    from weir.adapter import api

    coord = session.coord
    with coord.catalog.transaction():
        for parts in stmt.names:
            kind, object_id, what = _resolve(session, stmt.object_type, parts)
            require_owner(session, kind, object_id)
            valid = applicable(what)
            letters = "".join(LETTERS[p] for p in stmt.privileges) if stmt.privileges else valid
            wrong = [NAMES[ch] for ch in letters if ch not in valid]
            if wrong:
                raise WeirError(SqlState.INVALID_GRANT_OPERATION,
                                f"invalid privilege types {', '.join(wrong)} for {kind_label(what).upper()}")
            for grantee in stmt.grantees:
                gid = _grantee_id(session, grantee)
                if stmt.revoke:
                    coord.catalog.revoke_privileges(kind, object_id, gid, letters)
                else:
                    coord.catalog.grant_privileges(kind, object_id, gid, letters, session.role.id)
    await coord.catalog_changed()
    return api.Command("REVOKE" if stmt.revoke else "GRANT")


async def alter_owner(session: Session, stmt: Any) -> Any:
    from weir.adapter import api

    coord = session.coord
    kind, object_id, what = _resolve(session, stmt.object_type, stmt.name)
    require_owner(session, kind, object_id)
    new = coord.catalog.get_role(stmt.new_owner)
    if not session.role.superuser and new.id not in acl(session).roles_of(session.role.id):
        raise WeirError(SqlState.INSUFFICIENT_PRIVILEGE, f'must be a member of role "{new.name}"')
    coord.catalog.set_owner(kind, object_id, new.id)
    await coord.catalog_changed()
    return api.Command(f"ALTER {stmt.object_type.upper()}")


_SHOW_ON = {"tables": ("item",), "databases": ("database",), "schemas": ("schema",), "clusters": ("cluster",)}


def show(session: Session, stmt: Any) -> Any:
    """SHOW PRIVILEGES: one row per privilege on a user object, the owner's first, as
    Materialize prints them (grantor, grantee, database, schema, name, object_type,
    privilege_type)."""
    from weir import types as T
    from weir.adapter import api

    snap = session.coord.catalog.snapshot()
    a = acl(session)
    role_names = {r.id: r.name for r in snap.roles} | {PUBLIC_ROLE_ID: "PUBLIC"}
    dbs = {d.id: d.name for d in snap.databases}
    schemas = {s.id: s for s in snap.schemas}
    wanted = a.roles_of(session.coord.catalog.get_role(stmt.role).id) if stmt.role else None
    kinds = _SHOW_ON.get(stmt.on or "", ("database", "schema", "cluster", "item"))
    objects: list[tuple[str, str, str, str | None, str | None, str, str]] = []  # kind, id, owner, db, schema, name, type
    if "database" in kinds:
        objects += [("database", d.id, d.owner_id, None, None, d.name, "database") for d in snap.databases]
    if "schema" in kinds:
        objects += [("schema", s.id, s.owner_id, dbs.get(s.database_id or ""), None, s.name, "schema")
                    for s in snap.schemas if s.database_id]
    if "cluster" in kinds:
        objects += [("cluster", c.id, c.owner_id, None, None, c.name, "cluster") for c in snap.clusters]
    if "item" in kinds:
        for i in snap.items:
            if i.id.startswith("u") and applicable(i.kind):
                sch = schemas.get(i.schema_id)
                objects.append(("item", i.id, i.owner_id, dbs.get(sch.database_id or "") if sch else None,
                                sch.name if sch else None, i.name, kind_label(i.kind)))
    granted: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for p in snap.privileges:
        granted.setdefault((p.object_type, p.object_id), []).append((p.grantor_id, p.grantee_id, p.privileges))
    rows = []
    for kind, oid, owner, db, schema, name, label in objects:
        entries = [(owner, owner, applicable(label if kind == "item" else kind))]
        entries += granted.get((kind, oid), [])
        for grantor, grantee, letters in entries:
            if wanted is not None and grantee not in wanted:
                continue
            for ch in letters:
                rows.append((role_names.get(grantor, grantor), role_names.get(grantee, grantee), db, schema,
                             name, label, NAMES.get(ch, ch)))
    cols = [api.Column(n, T.TEXT) for n in
            ("grantor", "grantee", "database", "schema", "name", "object_type", "privilege_type")]

    async def once() -> Any:
        yield rows

    return api.Rows(cols, once(), "SHOW")

