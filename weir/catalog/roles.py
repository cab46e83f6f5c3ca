"""Roles, role membership and passwords.

Roles are looked up by name (that is what SQL and the startup message carry);
membership is stored as direct grants and expanded transitively on demand.
Passwords are kept only as SCRAM-SHA-256 verifiers (see scram.py).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Row, delete, insert, or_, select, update

from weir.catalog import tables as t
from weir.catalog.base import id_key
from weir.catalog.model import MZ_SYSTEM_ROLE_ID, Role, RoleMembership
from weir.catalog.objects import ObjectsMixin
from weir.catalog.scram import check_password, is_verifier, make_verifier
from weir.errors import SqlState, WeirError

# PostgreSQL's reserved_name; SqlState may not list it yet.
RESERVED_NAME = getattr(SqlState, "RESERVED_NAME", "42939")
RESERVED_ROLE_PREFIXES = ("mz_", "pg_")
RESERVED_ROLE_NAMES = ("public", "none", "current_role", "current_user", "session_user")


def _role(r: Row[Any]) -> Role:
    return Role(r.id, int(r.oid), r.name, bool(r.superuser), bool(r.login), bool(r.inherit),
                r.password)


def _verifier(password: str | None) -> str | None:
    """None/'' clear the password; a ready-made SCRAM verifier is kept as is (like
    PostgreSQL); anything else is hashed."""
    if not password:
        return None
    return password if is_verifier(password) else make_verifier(password)


class RolesMixin(ObjectsMixin):
    """Roles, membership, password verifiers."""

    def list_roles(self) -> list[Role]:
        with self._read() as c:
            rows = c.execute(select(t.roles)).all()
        return sorted((_role(r) for r in rows), key=lambda r: id_key(r.id))

    def find_role(self, name: str) -> Role | None:
        with self._read() as c:
            r = c.execute(select(t.roles).where(t.roles.c.name == name)).first()
        return _role(r) if r else None

    def get_role(self, name: str) -> Role:
        """By name; 42704 if there is none."""
        role = self.find_role(name)
        if role is None:
            raise WeirError(SqlState.UNDEFINED_OBJECT, f'role "{name}" does not exist')
        return role

    def get_role_by_id(self, role_id: str) -> Role:
        with self._read() as c:
            r = c.execute(select(t.roles).where(t.roles.c.id == role_id)).first()
        if r is None:
            raise WeirError(SqlState.UNDEFINED_OBJECT, f"role with id {role_id} does not exist")
        return _role(r)

    def _insert_role(self, c: Connection, role_id: str, oid: int, name: str, superuser: bool,
                     login: bool, inherit: bool, password: str | None) -> Role:
        c.execute(insert(t.roles).values(id=role_id, oid=oid, name=name, superuser=superuser,
                                         login=login, inherit=inherit, password=password))
        return Role(role_id, oid, name, superuser, login, inherit, password)

    def create_role(self, name: str, superuser: bool = False, login: bool = False,
                    password: str | None = None, inherit: bool = True) -> Role:
        """42710 if it exists, 42939 for reserved names (mz_*, pg_*, public ...)."""
        low = name.lower()
        if low.startswith(RESERVED_ROLE_PREFIXES) or low in RESERVED_ROLE_NAMES:
            raise WeirError(RESERVED_NAME, f'role name "{name}" is reserved')
        with self._write() as c:
            if self.find_role(name) is not None:
                raise WeirError(SqlState.DUPLICATE_OBJECT, f'role "{name}" already exists')
            return self._insert_role(c, self._next_id(c, "role"), self._next_oid(c), name,
                                     superuser, login, inherit, _verifier(password))

    def alter_role(self, name: str, *, superuser: bool | None = None,
                   login: bool | None = None, inherit: bool | None = None,
                   password: str | None = None, clear_password: bool = False,
                   rename_to: str | None = None) -> Role:
        """Change the given attributes; None keeps. `password=''` or
        `clear_password=True` removes the password (PASSWORD NULL)."""
        with self._write() as c:
            role = self.get_role(name)
            values: dict[str, Any] = {}
            if superuser is not None:
                values["superuser"] = superuser
            if login is not None:
                values["login"] = login
            if inherit is not None:
                values["inherit"] = inherit
            if clear_password or password == "":
                values["password"] = None
            elif password is not None:
                values["password"] = _verifier(password)
            if rename_to is not None and rename_to != name:
                if role.is_system:
                    raise WeirError(RESERVED_NAME, f'role name "{name}" is reserved')
                if self.find_role(rename_to) is not None:
                    raise WeirError(SqlState.DUPLICATE_OBJECT,
                                    f'role "{rename_to}" already exists')
                values["name"] = rename_to
            if values:
                c.execute(update(t.roles).where(t.roles.c.id == role.id).values(**values))
            return self.get_role_by_id(role.id)

    def owned_objects(self, role_id: str) -> list[str]:
        """Descriptions ('owner of table materialize.public.t') of what blocks a drop."""
        out: list[str] = []
        with self._read() as c:
            for r in c.execute(select(t.databases.c.name).where(
                    t.databases.c.owner_id == role_id)):
                out.append(f'owner of database "{r[0]}"')
            for s in self.list_schemas():
                if s.owner_id == role_id and not s.is_system:
                    out.append(f'owner of schema "{s.full_name}"')
            for r in c.execute(select(t.clusters.c.name).where(
                    t.clusters.c.owner_id == role_id)):
                out.append(f'owner of cluster "{r[0]}"')
            for r in c.execute(select(t.replicas.c.name).where(
                    t.replicas.c.owner_id == role_id)):
                out.append(f'owner of cluster replica "{r[0]}"')
            for i in self._load_items(c, t.items.c.owner_id == role_id):
                out.append(f'owner of {i.kind.replace("-", " ")} "{i.full_name}"')
            n = c.execute(select(t.privileges.c.object_id).where(or_(
                t.privileges.c.grantee_id == role_id,
                t.privileges.c.grantor_id == role_id))).all()
            if n:
                out.append(f"privileges on {len(n)} object(s)")
        return out

    def drop_role(self, name: str) -> Role:
        """2BP01 while it owns objects or holds grants; memberships go with it."""
        with self._write() as c:
            role = self.get_role(name)
            if role.is_system:
                raise WeirError(RESERVED_NAME, f'role name "{name}" is reserved')
            owned = self.owned_objects(role.id)
            if owned:
                raise WeirError(SqlState.DEPENDENT_OBJECTS_STILL_EXIST,
                                f'role "{name}" cannot be dropped because some objects '
                                "depend on it", detail="\n".join(owned))
            c.execute(delete(t.role_members).where(or_(
                t.role_members.c.role_id == role.id, t.role_members.c.member_id == role.id)))
            c.execute(delete(t.roles).where(t.roles.c.id == role.id))
            return role

    # -- membership --------------------------------------------------------------------

    def role_members(self, role: str | None = None) -> list[RoleMembership]:
        """Direct grants (of `role` if given, else all)."""
        q = select(t.role_members)
        if role is not None:
            q = q.where(t.role_members.c.role_id == self.get_role(role).id)
        with self._read() as c:
            rows = c.execute(q).all()
        out = [RoleMembership(r.role_id, r.member_id, r.grantor_id) for r in rows]
        return sorted(out, key=lambda m: (id_key(m.role_id), id_key(m.member_id)))

    def memberships(self, member_id: str) -> set[str]:
        """Ids of every role `member_id` belongs to, transitively (itself included)."""
        with self._read() as c:
            edges = c.execute(select(t.role_members.c.member_id, t.role_members.c.role_id)).all()
        parents: dict[str, set[str]] = {}
        for m, r in edges:
            parents.setdefault(m, set()).add(r)
        seen = {member_id}
        stack = [member_id]
        while stack:
            for p in parents.get(stack.pop(), ()):
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
        return seen

    def is_member(self, role: str, member: str) -> bool:
        """Whether `member` belongs to `role` directly or through other roles
        (a role is a member of itself)."""
        r, m = self.get_role(role), self.get_role(member)
        return r.id in self.memberships(m.id)

    def grant_role(self, role: str, member: str, grantor_id: str = MZ_SYSTEM_ROLE_ID) -> bool:
        """GRANT role TO member. False if it already was a direct member; 0LP01 for
        a grant that would make a cycle."""
        with self._write() as c:
            r, m = self.get_role(role), self.get_role(member)
            if r.id == m.id or m.id in self.memberships(r.id):  # would close a cycle
                raise WeirError(SqlState.INVALID_GRANT_OPERATION,
                                f'role "{role}" is a member of role "{member}"')
            key = (t.role_members.c.role_id == r.id) & (t.role_members.c.member_id == m.id)
            if c.execute(select(t.role_members).where(key)).first() is not None:
                return False
            c.execute(insert(t.role_members).values(role_id=r.id, member_id=m.id,
                                                    grantor_id=grantor_id))
            return True

    def revoke_role(self, role: str, member: str) -> bool:
        """REVOKE role FROM member. False if it was not a direct member."""
        with self._write() as c:
            r, m = self.get_role(role), self.get_role(member)
            res = c.execute(delete(t.role_members).where(
                (t.role_members.c.role_id == r.id) & (t.role_members.c.member_id == m.id)))
            return bool(res.rowcount)

    # -- passwords ---------------------------------------------------------------------

    def scram_verifier(self, role: str) -> str | None:
        """The stored RFC 5803 verifier, None if the role has no password or none exists."""
        r = self.find_role(role)
        return r.password if r else None

    def verify_password(self, role: str, password: str) -> bool:
        """Cleartext check; False for unknown roles and roles without a password."""
        return check_password(self.scram_verifier(role), password)
