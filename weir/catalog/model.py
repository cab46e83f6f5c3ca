"""Plain, immutable records the catalog hands out.

Callers never see SQLAlchemy rows: every getter returns one of these frozen
dataclasses, so a value read from the catalog cannot be mutated behind its
back and is safe to share between the event loop and executor threads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from weir.types import BY_NAME, PgType, parse_type

# Item kinds the first layers use; the catalog accepts any kind string so later
# issues can add kinds without touching the store.
TABLE = "table"
VIEW = "view"
SOURCE = "source"
MATERIALIZED_VIEW = "materialized-view"
INDEX = "index"
SINK = "sink"
HOLD = "hold"
DURABLE_SUBSCRIPTION = "durable-subscription"

# System schemas: ambient (no database), resolvable from any database.
MZ_CATALOG = "mz_catalog"
MZ_INTERNAL = "mz_internal"
PG_CATALOG = "pg_catalog"
INFORMATION_SCHEMA = "information_schema"
MZ_INTROSPECTION = "mz_introspection"
SYSTEM_SCHEMAS = (MZ_CATALOG, MZ_INTERNAL, PG_CATALOG, INFORMATION_SCHEMA, MZ_INTROSPECTION)
# A session's temporary schema (Materialize's name; PostgreSQL's `pg_temp` names it too):
# ambient like the system schemas, one per session that made a temporary object, never
# found by name in the catalog (each session resolves its own by id).
TEMP_SCHEMA = "mz_temp"
TEMP_SCHEMA_ALIASES = (TEMP_SCHEMA, "pg_temp")

# Well-known ids created by bootstrap.
MZ_SYSTEM_ROLE_ID = "s1"
MZ_SUPPORT_ROLE_ID = "s2"
MZ_MONITOR_ROLE_ID = "s3"
MZ_MONITOR_REDACTED_ROLE_ID = "s4"
MATERIALIZE_ROLE_ID = "u1"
PUBLIC_ROLE_ID = "p"  # the PUBLIC pseudo-role, only used in ACLs


def kind_label(kind: str) -> str:
    """How a kind is named in messages: 'materialized-view' -> 'materialized view'."""
    return kind.replace("-", " ")


@dataclass(frozen=True)
class ColumnDef:
    """One column of a relation. `default` is SQL expression text or None."""

    name: str
    type: PgType
    nullable: bool = True
    default: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type.exact_sql(),
            "nullable": self.nullable,
            "default": self.default,
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> ColumnDef:
        # a bare name is the type itself (catalogs written before character(n) kept its
        # length say "character" for any char column: read as bpchar, not character(1))
        t = BY_NAME.get(d["type"]) or parse_type(d["type"])
        return ColumnDef(d["name"], t, bool(d.get("nullable", True)),
                         d.get("default"))


@dataclass(frozen=True)
class Database:
    id: str
    oid: int
    name: str
    owner_id: str


@dataclass(frozen=True)
class Schema:
    id: str
    oid: int
    database_id: str | None  # None for ambient system schemas
    name: str
    owner_id: str
    database_name: str | None = None

    @property
    def is_system(self) -> bool:
        return self.database_id is None and self.name != TEMP_SCHEMA

    @property
    def is_temporary(self) -> bool:
        return self.database_id is None and self.name == TEMP_SCHEMA

    @property
    def full_name(self) -> str:
        return f"{self.database_name}.{self.name}" if self.database_name else self.name


@dataclass(frozen=True)
class Role:
    id: str
    oid: int
    name: str
    superuser: bool
    login: bool
    inherit: bool
    password: str | None = field(default=None, repr=False)  # RFC 5803 SCRAM verifier

    @property
    def is_system(self) -> bool:
        return not self.id.startswith("u")


@dataclass(frozen=True)
class RoleMembership:
    role_id: str
    member_id: str
    grantor_id: str


@dataclass(frozen=True)
class Cluster:
    id: str
    name: str
    owner_id: str
    managed: bool
    size: str | None
    replication_factor: int | None
    options: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Replica:
    id: str
    cluster_id: str
    name: str
    size: str
    incarnation: int
    owner_id: str
    options: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Item:
    """A catalog object that lives in a schema (table, view, source, index, hold ...).

    `definition` is free-form per kind (views: {"query": ...}; indexes:
    {"on_id": ..., "keys": [...]}); `dependencies` are the item ids it reads.
    """

    id: str
    oid: int
    schema_id: str
    name: str
    kind: str
    owner_id: str
    cluster_id: str | None
    columns: tuple[ColumnDef, ...]
    create_sql: str
    definition: dict[str, Any] = field(hash=False)
    created_at: datetime
    dependencies: tuple[str, ...]
    database_name: str | None = None
    schema_name: str = ""

    @property
    def builtin(self) -> bool:
        """Defined by weir itself (builtins.py), not by a user."""
        return self.id.startswith("s")

    @property
    def full_name(self) -> str:
        parts = [p for p in (self.database_name, self.schema_name, self.name) if p]
        return ".".join(parts)


@dataclass(frozen=True)
class Privilege:
    """An explicit grant on an object; `privileges` uses ACL letters (e.g. 'arwd')."""

    object_type: str
    object_id: str
    grantee_id: str
    grantor_id: str
    privileges: str


@dataclass(frozen=True)
class DropResult:
    """What a drop removed, dependents first, so callers can tear down in order."""

    items: tuple[Item, ...] = ()
    replicas: tuple[Replica, ...] = ()
    schemas: tuple[Schema, ...] = ()


@dataclass(frozen=True)
class ClusterChange:
    """Replicas an ALTER CLUSTER created and dropped (the orchestrator acts on them)."""

    cluster: Cluster
    created: tuple[Replica, ...] = ()
    dropped: tuple[Replica, ...] = ()


@dataclass(frozen=True)
class Snapshot:
    """The whole catalog at one point, for computing builtin relations."""

    generation: int
    databases: tuple[Database, ...]
    schemas: tuple[Schema, ...]
    roles: tuple[Role, ...]
    role_members: tuple[RoleMembership, ...]
    clusters: tuple[Cluster, ...]
    replicas: tuple[Replica, ...]
    items: tuple[Item, ...]
    privileges: tuple[Privilege, ...]
    # the catalog revision it shows (-1: inside a transaction), and, when it was made from
    # the snapshot of `base_revision` by reloading some items, those items (None: dropped)
    revision: int = field(default=-1, compare=False)
    base_revision: int = field(default=-1, compare=False)
    changes: dict[str, Item | None] | None = field(default=None, compare=False, repr=False)

    @cached_property
    def privileges_on(self) -> dict[tuple[str, str], list[Privilege]]:
        """Grants by (object type, object id): an ACL per object without a scan per object."""
        out: dict[tuple[str, str], list[Privilege]] = {}
        for p in self.privileges:
            out.setdefault((p.object_type, p.object_id), []).append(p)
        return out

    @cached_property
    def database_of_schema(self) -> dict[str, str | None]:
        return {x.id: x.database_id for x in self.schemas}

    @cached_property
    def item_by_id(self) -> dict[str, Item]:
        return {i.id: i for i in self.items}

    @cached_property
    def role_by_id(self) -> dict[str, Role]:
        return {r.id: r for r in self.roles}

    @cached_property
    def schema_by_id(self) -> dict[str, Schema]:
        return {x.id: x for x in self.schemas}

    @cached_property
    def indexes_on(self) -> dict[str, list[Item]]:
        """Each indexed object's indexes, by the object's id."""
        out: dict[str, list[Item]] = {}
        for i in self.items:
            if i.kind == INDEX:
                out.setdefault(index_on(i), []).append(i)
        return out

    def non_item_parts(self) -> tuple[Any, ...]:
        """Everything but the items: equal in two snapshots when only items changed."""
        return (self.databases, self.schemas, self.roles, self.role_members, self.clusters,
                self.replicas, self.privileges)


def index_on(index: Item) -> str:
    """The id of the object an index indexes."""
    return index.definition.get("on_id") or (index.dependencies[0] if index.dependencies else "")
