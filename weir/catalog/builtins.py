"""The one place that defines weir's builtin relations (and, re-exported from
vars.py, its configuration parameters).

Each `BuiltinTable` has a stable id ('s<n>') and oid, Materialize's documented
columns, and `rows(catalog)`: its full contents computed from one catalog
snapshot. The coordinator stores each as a real collection and, after every
DDL, appends the difference between the old and new `rows()`, so rows() is
deterministic (snapshot order is by id) and cheap (one cached snapshot).
Privileges are text[] of 'grantee=letters/grantor' (PUBLIC is an empty grantee),
standing in for Materialize's mz_aclitem[].
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from weir.catalog.model import (
    HOLD,
    INDEX,
    MATERIALIZED_VIEW,
    MZ_CATALOG,
    MZ_INTERNAL,
    PUBLIC_ROLE_ID,
    SINK,
    SOURCE,
    TABLE,
    VIEW,
    ColumnDef,
    Item,
    Snapshot,
)
from weir.catalog.vars import VARS, VarDef, duration_ms, lookup_var, normalize_var
from weir.sql.redact import redact as redact_sql
from weir.types import (
    BOOL,
    BY_NAME,
    BYTEA,
    FLOAT8,
    INT4,
    INT8,
    INTERVAL,
    MZ_TIMESTAMP,
    NUMERIC,
    TEXT,
    TEXT_ARRAY,
    TIMESTAMPTZ,
    UUID,
    PgType,
)

if TYPE_CHECKING:
    from weir.catalog.store import Catalog

__all__ = [
    "BUILTINS", "BUILTIN_TABLES", "BUILTIN_VIEWS", "BuiltinTable", "BuiltinView", "VARS", "VarDef", "builtin_rows", "by_name", "lookup_var",
    "normalize_var", "acl",
]

OID = BY_NAME["oid"]
Row = tuple[Any, ...]

# Default privileges an owner holds on what it owns, by object type.
OWNER_PRIVILEGES = {
    "database": "UC", "schema": "UC", "cluster": "UC", TABLE: "arwd", VIEW: "r",
    MATERIALIZED_VIEW: "r", SOURCE: "r",
}


@dataclass(frozen=True)
class BuiltinTable:
    """A builtin relation: where it lives, its shape, and how to compute it."""

    schema: str
    name: str
    id: str
    oid: int
    columns: tuple[tuple[str, PgType], ...]
    compute: Callable[[Snapshot], list[Row]]
    nullable: frozenset[str] = frozenset()
    # Runtime relations hold what happens (replica statuses, ...), not catalog state: the
    # coordinator appends to them as events occur instead of recomputing them from DDL.
    runtime: bool = False
    # Readable by superusers only (others read views over it that filter what they see).
    restricted: bool = False

    @property
    def full_name(self) -> str:
        return f"{self.schema}.{self.name}"

    def column_defs(self) -> list[ColumnDef]:
        return [ColumnDef(n, ty, n in self.nullable) for n, ty in self.columns]

    def rows(self, catalog: Catalog | Snapshot) -> list[Row]:
        """Current contents, from a Catalog (its cached snapshot) or a Snapshot."""
        snap = catalog if isinstance(catalog, Snapshot) else catalog.snapshot()
        return self.compute(snap)


def acl(snap: Snapshot, object_type: str, object_id: str, owner_id: str) -> list[str]:
    """The privileges array: the owner's defaults, then explicit grants."""
    out = []
    own = OWNER_PRIVILEGES.get(object_type)
    if own:
        out.append(f"{owner_id}={own}/{owner_id}")
    kind = "item" if object_type not in ("database", "schema", "cluster") else object_type
    for p in snap.privileges_on.get((kind, object_id), ()):
        grantee = "" if p.grantee_id == PUBLIC_ROLE_ID else p.grantee_id
        out.append(f"{grantee}={p.privileges}/{p.grantor_id}")
    return out


def redact(sql: str) -> str:
    """create_sql with literals replaced, like Materialize's redacted_create_sql."""
    return redact_sql(sql)


class ItemRows:
    """A builtin relation computed item by item: its rows are `of(snapshot, item)` over every
    item, so after a change of a few items the builtin writer recomputes only their rows.
    An item's rows that also depend on other items (a table's relhasindex on its indexes)
    name them with `related(old, new, changed ids)`: the other items to recompute too."""

    def __init__(self, of: Callable[[Snapshot, Item], list[Row]],
                 related: Callable[[Snapshot, Snapshot, set[str]], set[str]] | None = None) -> None:
        self.of = of
        self.related = related

    def __call__(self, snap: Snapshot) -> list[Row]:
        return [r for i in snap.items for r in self.of(snap, i)]


def _item_rows(kind: str | None = None, user_only: bool = True
               ) -> Callable[[Callable[[Snapshot, Item], list[Row]]], ItemRows]:
    """Decorates a row function of one item of `kind` (any kind: None)."""
    def wrap(fn: Callable[[Snapshot, Item], list[Row]]) -> ItemRows:
        def of(s: Snapshot, i: Item) -> list[Row]:
            if (kind is not None and i.kind != kind) or (user_only and i.builtin):
                return []
            return fn(s, i)
        return ItemRows(of)
    return wrap


def _interval(text: str | None) -> timedelta | None:
    if text is None:
        return None
    try:
        return timedelta(milliseconds=duration_ms(str(text)))
    except ValueError:
        return None


def _databases(s: Snapshot) -> list[Row]:
    return [(d.id, d.oid, d.name, d.owner_id, acl(s, "database", d.id, d.owner_id))
            for d in s.databases]


def _schemas(s: Snapshot) -> list[Row]:
    return [(x.id, x.oid, x.database_id, x.name, x.owner_id,
             acl(s, "schema", x.id, x.owner_id)) for x in s.schemas]


@_item_rows(TABLE)
def _tables(s: Snapshot, i: Item) -> list[Row]:
    return [(i.id, i.oid, i.schema_id, i.name, i.owner_id, acl(s, i.kind, i.id, i.owner_id),
             i.create_sql, redact(i.create_sql), i.definition.get("source_id"))]


@_item_rows(VIEW)
def _views(s: Snapshot, i: Item) -> list[Row]:
    return [(i.id, i.oid, i.schema_id, i.name, i.definition.get("query", ""), i.owner_id,
             acl(s, i.kind, i.id, i.owner_id), i.create_sql, redact(i.create_sql))]


@_item_rows(MATERIALIZED_VIEW)
def _materialized_views(s: Snapshot, i: Item) -> list[Row]:
    return [(i.id, i.oid, i.schema_id, i.name, i.cluster_id, i.definition.get("query", ""),
             i.owner_id, acl(s, i.kind, i.id, i.owner_id), i.create_sql, redact(i.create_sql))]


@_item_rows(SOURCE)
def _sources(s: Snapshot, i: Item) -> list[Row]:
    return [(i.id, i.oid, i.schema_id, i.name, i.definition.get("type", "load-generator"),
             None, None, i.definition.get("envelope_type"), None, None, i.cluster_id,
             i.owner_id, acl(s, i.kind, i.id, i.owner_id), i.create_sql, redact(i.create_sql))]


@_item_rows(SINK)
def _sinks(s: Snapshot, i: Item) -> list[Row]:
    return [(i.id, i.oid, i.schema_id, i.name, i.definition.get("type", ""), None, None,
             i.definition.get("envelope_type"), i.definition.get("format"), None, None,
             i.cluster_id, i.owner_id, i.create_sql, redact(i.create_sql))]


@_item_rows(INDEX)
def _indexes(s: Snapshot, i: Item) -> list[Row]:
    return [(i.id, i.oid, i.name,
             i.definition.get("on_id") or (i.dependencies[0] if i.dependencies else ""),
             i.cluster_id, i.owner_id, i.create_sql, redact(i.create_sql))]


@_item_rows(INDEX)
def _index_columns(s: Snapshot, i: Item) -> list[Row]:
    """One row per key of each index: a column of the indexed object (on_position, 1-based)
    or an expression over them (on_expression)."""
    out: list[Row] = []
    columns = i.definition.get("columns", [])
    names = [c["name"] for c in columns]
    for n, key in enumerate(i.definition.get("keys", []), start=1):
        if key in names:
            pos = names.index(key)
            out.append((i.id, n, pos + 1, None, bool(columns[pos].get("nullable", True))))
        else:
            out.append((i.id, n, None, key, True))
    return out


@_item_rows(user_only=False)
def _columns(s: Snapshot, i: Item) -> list[Row]:
    return [(i.id, c.name, pos, c.nullable, c.type.name, c.default, c.type.oid, c.type.typmod)
            for pos, c in enumerate(i.columns, start=1)]


def _clusters(s: Snapshot) -> list[Row]:
    out = []
    for c in s.clusters:
        o = c.options
        zones = o.get("availability_zones")
        out.append((c.id, c.name, c.owner_id, acl(s, "cluster", c.id, c.owner_id), c.managed,
                    c.size, c.replication_factor, bool(o.get("disk", False)),
                    list(zones) if zones is not None else None,
                    bool(o.get("introspection_debugging", False)),
                    _interval(o.get("introspection_interval", "1s"))))
    return out


def _replicas(s: Snapshot) -> list[Row]:
    return [(r.id, r.name, r.cluster_id, r.size, r.options.get("availability_zone"),
             r.owner_id, bool(r.options.get("disk", False))) for r in s.replicas]


def _roles(s: Snapshot) -> list[Row]:
    return [(r.id, r.oid, r.name, r.inherit, r.login, r.superuser) for r in s.roles]


def _role_members(s: Snapshot) -> list[Row]:
    return [(m.role_id, m.member_id, m.grantor_id) for m in s.role_members]


def _item_acl(s: Snapshot, i: Item) -> list[str]:
    """Builtins are readable by everyone (PUBLIC SELECT), like Materialize's."""
    if i.builtin:
        return [f"{i.owner_id}=r/{i.owner_id}", f"=r/{i.owner_id}"]
    return acl(s, i.kind, i.id, i.owner_id)


@_item_rows(user_only=False)
def _objects(s: Snapshot, i: Item) -> list[Row]:
    return [(i.id, i.oid, i.schema_id, i.name, i.kind, i.owner_id, i.cluster_id,
             _item_acl(s, i))]


@_item_rows(user_only=False)
def _object_dependencies(s: Snapshot, i: Item) -> list[Row]:
    return [(i.id, d) for d in i.dependencies]


@_item_rows(HOLD)
def _holds(s: Snapshot, i: Item) -> list[Row]:
    """HOLD objects (weir.adapter.holds): their time and how MAX LAG has moved them."""
    return [hold_row(i, s.database_of_schema.get(i.schema_id))]


def hold_row(i: Item, database_id: str | None) -> Row:
    """One hold's row of mz_holds (also written alone when a batch of advances commits)."""
    d = i.definition
    last = d.get("last_auto_advanced_at")
    return (i.id, database_id, i.schema_id, i.name, int(d["at"]), i.owner_id,
            timedelta(milliseconds=int(d["max_lag_ms"])), i.created_at, int(d.get("auto_advances", 0)),
            datetime.fromtimestamp(last / 1000, tz=UTC) if last is not None else None)


@_item_rows(HOLD)
def _hold_objects(s: Snapshot, i: Item) -> list[Row]:
    return [(i.id, d) for d in i.dependencies]


@_item_rows()
def _history_retention(s: Snapshot, i: Item) -> list[Row]:
    """Materialize's mz_history_retention_strategies: every object's compaction window
    ('FOR', milliseconds as jsonb; RETAIN HISTORY sets it, 1 s by default)."""
    if i.kind not in (TABLE, SOURCE, MATERIALIZED_VIEW, INDEX):
        return []
    return [(i.id, "FOR", str(int(i.definition.get("retain_history_ms", 1000))))]


def _runtime(s: Snapshot) -> list[Row]:
    return []


def _t(*cols: tuple[str, PgType]) -> tuple[tuple[str, PgType], ...]:
    return cols


_CREATE_SQL = (("create_sql", TEXT), ("redacted_create_sql", TEXT))

_REPLICA_METRICS = _t(("replica_id", TEXT), ("process_id", INT8), ("cpu_nano_cores", INT8), ("memory_bytes", INT8),
                      ("heap_bytes", INT8), ("heap_limit", INT8), ("gc_ns", INT8))

BUILTINS: tuple[BuiltinTable, ...] = (
    BuiltinTable(MZ_CATALOG, "mz_databases", "s100", 16400, _t(
        ("id", TEXT), ("oid", OID), ("name", TEXT), ("owner_id", TEXT),
        ("privileges", TEXT_ARRAY)), _databases),
    BuiltinTable(MZ_CATALOG, "mz_schemas", "s101", 16401, _t(
        ("id", TEXT), ("oid", OID), ("database_id", TEXT), ("name", TEXT), ("owner_id", TEXT),
        ("privileges", TEXT_ARRAY)), _schemas, frozenset({"database_id"})),
    BuiltinTable(MZ_CATALOG, "mz_tables", "s102", 16402, _t(
        ("id", TEXT), ("oid", OID), ("schema_id", TEXT), ("name", TEXT), ("owner_id", TEXT),
        ("privileges", TEXT_ARRAY), *_CREATE_SQL, ("source_id", TEXT)), _tables,
        frozenset({"create_sql", "redacted_create_sql", "source_id"})),
    BuiltinTable(MZ_CATALOG, "mz_views", "s103", 16403, _t(
        ("id", TEXT), ("oid", OID), ("schema_id", TEXT), ("name", TEXT), ("definition", TEXT),
        ("owner_id", TEXT), ("privileges", TEXT_ARRAY), *_CREATE_SQL), _views),
    BuiltinTable(MZ_CATALOG, "mz_materialized_views", "s104", 16404, _t(
        ("id", TEXT), ("oid", OID), ("schema_id", TEXT), ("name", TEXT), ("cluster_id", TEXT),
        ("definition", TEXT), ("owner_id", TEXT), ("privileges", TEXT_ARRAY), *_CREATE_SQL),
        _materialized_views),
    BuiltinTable(MZ_CATALOG, "mz_sources", "s105", 16405, _t(
        ("id", TEXT), ("oid", OID), ("schema_id", TEXT), ("name", TEXT), ("type", TEXT),
        ("connection_id", TEXT), ("size", TEXT), ("envelope_type", TEXT), ("key_format", TEXT),
        ("value_format", TEXT), ("cluster_id", TEXT), ("owner_id", TEXT),
        ("privileges", TEXT_ARRAY), *_CREATE_SQL), _sources,
        frozenset({"connection_id", "size", "envelope_type", "key_format", "value_format",
                   "cluster_id", "create_sql", "redacted_create_sql"})),
    BuiltinTable(MZ_CATALOG, "mz_sinks", "s106", 16406, _t(
        ("id", TEXT), ("oid", OID), ("schema_id", TEXT), ("name", TEXT), ("type", TEXT),
        ("connection_id", TEXT), ("size", TEXT), ("envelope_type", TEXT), ("format", TEXT),
        ("key_format", TEXT), ("value_format", TEXT), ("cluster_id", TEXT),
        ("owner_id", TEXT), *_CREATE_SQL), _sinks,
        frozenset({"connection_id", "size", "envelope_type", "format", "key_format",
                   "value_format"})),
    BuiltinTable(MZ_CATALOG, "mz_indexes", "s107", 16407, _t(
        ("id", TEXT), ("oid", OID), ("name", TEXT), ("on_id", TEXT), ("cluster_id", TEXT),
        ("owner_id", TEXT), *_CREATE_SQL), _indexes),
    BuiltinTable(MZ_CATALOG, "mz_index_columns", "s115", 16415, _t(
        ("index_id", TEXT), ("index_position", INT8), ("on_position", INT8), ("on_expression", TEXT),
        ("nullable", BOOL)), _index_columns, frozenset({"on_position", "on_expression"})),
    BuiltinTable(MZ_CATALOG, "mz_columns", "s108", 16408, _t(
        ("id", TEXT), ("name", TEXT), ("position", INT8), ("nullable", BOOL), ("type", TEXT),
        ("default", TEXT), ("type_oid", OID), ("type_mod", INT4)), _columns,
        frozenset({"default"})),
    BuiltinTable(MZ_CATALOG, "mz_clusters", "s109", 16409, _t(
        ("id", TEXT), ("name", TEXT), ("owner_id", TEXT), ("privileges", TEXT_ARRAY),
        ("managed", BOOL), ("size", TEXT), ("replication_factor", INT4), ("disk", BOOL),
        ("availability_zones", TEXT_ARRAY), ("introspection_debugging", BOOL),
        ("introspection_interval", INTERVAL)), _clusters,
        frozenset({"size", "replication_factor", "disk", "availability_zones",
                   "introspection_debugging", "introspection_interval"})),
    BuiltinTable(MZ_CATALOG, "mz_cluster_replicas", "s110", 16410, _t(
        ("id", TEXT), ("name", TEXT), ("cluster_id", TEXT), ("size", TEXT),
        ("availability_zone", TEXT), ("owner_id", TEXT), ("disk", BOOL)), _replicas,
        frozenset({"size", "availability_zone", "disk"})),
    BuiltinTable(MZ_CATALOG, "mz_roles", "s111", 16411, _t(
        ("id", TEXT), ("oid", OID), ("name", TEXT), ("inherit", BOOL), ("rolcanlogin", BOOL),
        ("rolsuper", BOOL)), _roles, frozenset({"rolcanlogin", "rolsuper"})),
    BuiltinTable(MZ_CATALOG, "mz_role_members", "s112", 16412, _t(
        ("role_id", TEXT), ("member", TEXT), ("grantor", TEXT)), _role_members),
    BuiltinTable(MZ_CATALOG, "mz_objects", "s113", 16413, _t(
        ("id", TEXT), ("oid", OID), ("schema_id", TEXT), ("name", TEXT), ("type", TEXT),
        ("owner_id", TEXT), ("cluster_id", TEXT), ("privileges", TEXT_ARRAY)), _objects,
        frozenset({"cluster_id"})),
    # HOLD objects (design 003): one row per hold, one per object it holds
    BuiltinTable(MZ_CATALOG, "mz_holds", "s116", 16416, _t(
        ("id", TEXT), ("database_id", TEXT), ("schema_id", TEXT), ("name", TEXT), ("at", MZ_TIMESTAMP),
        ("owner_id", TEXT), ("max_lag", INTERVAL), ("created_at", TIMESTAMPTZ), ("auto_advances", INT8),
        ("last_auto_advanced_at", TIMESTAMPTZ)), _holds, frozenset({"database_id", "last_auto_advanced_at"})),
    BuiltinTable(MZ_CATALOG, "mz_hold_objects", "s117", 16417, _t(
        ("hold_id", TEXT), ("on_id", TEXT)), _hold_objects),
    # how far each hold trails its objects' write frontiers, how much MAX LAG is left, and
    # what it keeps from compaction, measured from the held shards' files (weir.adapter.hold_lag)
    BuiltinTable(MZ_INTERNAL, "mz_hold_lag", "s222", 16522, _t(
        ("hold_id", TEXT), ("object_id", TEXT), ("write_frontier", MZ_TIMESTAMP), ("lag", INTERVAL),
        ("headroom", INTERVAL), ("retained_bytes", INT8)), _runtime, runtime=True),
    # durable subscriptions (weir.adapter.durable_subscriptions): where each stands, measured
    BuiltinTable(MZ_INTERNAL, "mz_durable_subscriptions", "s223", 16523, _t(
        ("id", TEXT), ("name", TEXT), ("query", TEXT), ("cluster_id", TEXT), ("acknowledged_up_to", MZ_TIMESTAMP),
        ("time_since_ack", INTERVAL), ("lag", INTERVAL), ("state", TEXT), ("reader_session_id", TEXT)),
        _runtime, frozenset({"lag", "reader_session_id"}), runtime=True),
    # replica health (weir.adapter.replica_health): what each replica's heartbeat reports
    BuiltinTable(MZ_INTERNAL, "mz_cluster_replica_metrics", "s230", 16530, _REPLICA_METRICS, _runtime,
                 frozenset({"cpu_nano_cores", "heap_bytes", "heap_limit", "gc_ns"}), runtime=True),
    BuiltinTable(MZ_INTERNAL, "mz_cluster_replica_metrics_history", "s231", 16531,
                 _REPLICA_METRICS + (("occurred_at", TIMESTAMPTZ),), _runtime,
                 frozenset({"cpu_nano_cores", "heap_bytes", "heap_limit", "gc_ns"}), runtime=True),
    BuiltinTable(MZ_INTERNAL, "mz_cluster_replica_utilization", "s232", 16532, _t(
        ("replica_id", TEXT), ("process_id", INT8), ("cpu_percent", FLOAT8), ("memory_percent", FLOAT8),
        ("heap_percent", FLOAT8)), _runtime, frozenset({"cpu_percent", "heap_percent"}), runtime=True),
    BuiltinTable(MZ_INTERNAL, "mz_dataflow_lag", "s233", 16533, _t(
        ("object_id", TEXT), ("replica_id", TEXT), ("write_frontier", MZ_TIMESTAMP),
        ("input_frontier", MZ_TIMESTAMP), ("lag_ms", INT8)), _runtime, runtime=True),
    # each replica's introspection writer: how far it has written, what it could not
    BuiltinTable(MZ_INTERNAL, "mz_cluster_replica_introspection", "s235", 16535, _t(
        ("replica_id", TEXT), ("shard_id", TEXT), ("write_frontier", MZ_TIMESTAMP), ("commits", INT8),
        ("skipped", INT8), ("failures", INT8), ("fenced", BOOL), ("error", TEXT)), _runtime,
        frozenset({"shard_id", "error"}), runtime=True),
    # hydration (design 002, weir.adapter.hydration): per compute object and replica, from the
    # replicas' Frontiers responses; mz_hydration_statuses covers sources too (replica_id NULL).
    # Read through the views of the same names without _raw, which show a role only the
    # objects it may SELECT from (mz_visible_objects())
    BuiltinTable(MZ_INTERNAL, "mz_compute_hydration_times_raw", "s236", 16536, _t(
        ("replica_id", TEXT), ("object_id", TEXT), ("time_ns", INT8)), _runtime,
        frozenset({"time_ns"}), runtime=True, restricted=True),
    BuiltinTable(MZ_INTERNAL, "mz_compute_hydration_statuses_raw", "s237", 16537, _t(
        ("object_id", TEXT), ("replica_id", TEXT), ("hydrated", BOOL), ("hydration_time", INTERVAL)), _runtime,
        frozenset({"hydration_time"}), runtime=True, restricted=True),
    BuiltinTable(MZ_INTERNAL, "mz_compute_operator_hydration_statuses_per_worker_raw", "s239", 16539, _t(
        ("object_id", TEXT), ("plan_node_id", INT8), ("replica_id", TEXT), ("worker_id", INT8),
        ("hydrated", BOOL)), _runtime, runtime=True, restricted=True),
    # how far each plan node is, per worker (issue 13 part 5; weir.compute.replica.hydration_progress
    # says what each column measures); the pinned plan nodes of every installed dataflow
    BuiltinTable(MZ_INTERNAL, "mz_compute_hydration_progress_raw", "s240", 16540, _t(
        ("object_id", TEXT), ("replica_id", TEXT), ("plan_node_id", INT8), ("worker_id", INT8),
        ("rows_processed", INT8), ("rows_expected", INT8), ("bytes_processed", INT8),
        ("started_at", TIMESTAMPTZ), ("rate_rows_per_second", FLOAT8), ("estimated_remaining", INTERVAL)),
        _runtime, frozenset({"rows_expected", "started_at", "estimated_remaining"}), runtime=True, restricted=True),
    BuiltinTable(MZ_INTERNAL, "mz_compute_plan_nodes_raw", "s241", 16541, _t(
        ("object_id", TEXT), ("plan_node_id", INT8), ("parent_plan_node_id", INT8), ("operator", TEXT)),
        _runtime, frozenset({"parent_plan_node_id"}), runtime=True, restricted=True),
    BuiltinTable(MZ_INTERNAL, "mz_hydration_statuses_raw", "s238", 16538, _t(
        ("object_id", TEXT), ("replica_id", TEXT), ("hydrated", BOOL)), _runtime,
        frozenset({"replica_id"}), runtime=True, restricted=True),
    # the dataflows (Spark jobs) a sampled statement execution ran, by the name a replica's
    # introspection gives them: joins mz_statement_execution_history to mz_dataflows_persist
    BuiltinTable(MZ_INTERNAL, "mz_statement_dataflows", "s234", 16534, _t(
        ("statement_id", UUID), ("replica_id", TEXT), ("dataflow_name", TEXT)), _runtime, runtime=True),
    BuiltinTable(MZ_INTERNAL, "mz_history_retention_strategies", "s221", 16521, _t(
        ("id", TEXT), ("strategy", TEXT), ("value", BY_NAME["jsonb"])), _history_retention),
    BuiltinTable(MZ_INTERNAL, "mz_object_dependencies", "s200", 16500, _t(
        ("object_id", TEXT), ("referenced_object_id", TEXT)), _object_dependencies),
    BuiltinTable(MZ_INTERNAL, "mz_cluster_replica_statuses", "s201", 16501, _t(
        ("replica_id", TEXT), ("process_id", INT8), ("status", TEXT), ("reason", TEXT),
        ("updated_at", TIMESTAMPTZ)), _runtime, frozenset({"reason"}), runtime=True),
    BuiltinTable(MZ_INTERNAL, "mz_cluster_replica_status_history", "s202", 16502, _t(
        ("replica_id", TEXT), ("process_id", INT8), ("status", TEXT), ("reason", TEXT),
        ("occurred_at", TIMESTAMPTZ)), _runtime, frozenset({"reason"}), runtime=True),
    BuiltinTable(MZ_INTERNAL, "mz_frontiers", "s203", 16503, _t(
        ("object_id", TEXT), ("read_frontier", MZ_TIMESTAMP), ("write_frontier", MZ_TIMESTAMP)),
        _runtime, frozenset({"read_frontier", "write_frontier"}), runtime=True),
    BuiltinTable(MZ_CATALOG, "mz_cluster_replica_frontiers", "s114", 16414, _t(
        ("object_id", TEXT), ("replica_id", TEXT), ("write_frontier", MZ_TIMESTAMP)),
        _runtime, frozenset({"write_frontier"}), runtime=True),
    # Statement history as the coordinator records it (weir.adapter.statement_log). Only
    # superusers read these directly; everyone else reads the views below, which show
    # each user what they may see.
    BuiltinTable(MZ_INTERNAL, "mz_session_history_raw", "s204", 16504, _t(
        ("id", UUID), ("application_name", TEXT), ("user", TEXT), ("connected_at", TIMESTAMPTZ)),
        _runtime, frozenset({"application_name"}), runtime=True, restricted=True),
    BuiltinTable(MZ_INTERNAL, "mz_prepared_statement_history_raw", "s205", 16505, _t(
        ("id", UUID), ("session_id", UUID), ("name", TEXT), ("sql", TEXT), ("redacted_sql", TEXT),
        ("sql_hash", BYTEA), ("statement_type", TEXT), ("prepared_at", TIMESTAMPTZ),
        ("throttled_count", INT8)), _runtime, frozenset({"name", "sql", "redacted_sql"}), runtime=True,
        restricted=True),
    BuiltinTable(MZ_INTERNAL, "mz_statement_execution_history_raw", "s206", 16506, _t(
        ("id", UUID), ("prepared_statement_id", UUID), ("sample_rate", FLOAT8), ("params", TEXT_ARRAY),
        ("began_at", TIMESTAMPTZ), ("finished_at", TIMESTAMPTZ), ("was_successful", BOOL),
        ("was_canceled", BOOL), ("was_aborted", BOOL), ("error_message", TEXT), ("rows_returned", INT8),
        ("was_fast_path", BOOL), ("cluster_id", TEXT), ("cluster_name", TEXT), ("application_name", TEXT),
        ("database_name", TEXT), ("search_path", TEXT_ARRAY), ("transaction_isolation", TEXT),
        ("transaction_id", INT8), ("execution_timestamp", MZ_TIMESTAMP), ("finished_status", TEXT),
        ("execution_strategy", TEXT), ("result_size", INT8)), _runtime, frozenset({
            "params", "finished_at", "was_successful", "was_canceled", "error_message", "rows_returned",
            "was_fast_path", "cluster_id", "cluster_name", "application_name", "database_name",
            "search_path", "transaction_isolation", "transaction_id", "execution_timestamp",
            "execution_strategy", "result_size"}), runtime=True, restricted=True),
    BuiltinTable(MZ_INTERNAL, "mz_statement_lifecycle_history_raw", "s207", 16507, _t(
        ("statement_id", UUID), ("event_type", TEXT), ("occurred_at", TIMESTAMPTZ)),
        _runtime, runtime=True, restricted=True),
    BuiltinTable(MZ_INTERNAL, "mz_sessions", "s208", 16508, _t(
        ("id", UUID), ("connection_id", INT4), ("role_id", TEXT), ("client_ip", TEXT),
        ("connected_at", TIMESTAMPTZ)), _runtime, frozenset({"client_ip"}), runtime=True),
    # Materialize's mz_compute_error_counts (export_id, count), one row per export that holds
    # errors on each replica: weir's union over replicas, tagged with the replica.
    BuiltinTable(MZ_INTERNAL, "mz_compute_error_counts", "s220", 16520, _t(
        ("export_id", TEXT), ("replica_id", TEXT), ("count", NUMERIC)), _runtime, runtime=True),
)


@dataclass(frozen=True)
class BuiltinView:
    """A builtin view: its shape and its query (PostgreSQL SQL, names fully qualified).
    `mz_statement_log_access()` is 'all' for superusers, 'redacted' for members of
    mz_monitor and 'own' for everyone else (weir.sql.render substitutes it per session)."""

    schema: str
    name: str
    id: str
    oid: int
    columns: tuple[tuple[str, PgType], ...]
    query: str
    # `mz_introspection.<base>_persist`: the union over the replicas of the moment, expanded
    # when a query is planned (weir.adapter.resolver.persist_union), not a fixed query
    introspection_union: str | None = None
    # `mz_introspection.<log>`: the in-memory log of the replica a read targets
    introspection_live: str | None = None

    @property
    def full_name(self) -> str:
        return f"{self.schema}.{self.name}"

    def column_defs(self) -> list[ColumnDef]:
        return [ColumnDef(n, ty, True) for n, ty in self.columns]

    def definition(self) -> dict[str, Any]:
        out: dict[str, Any] = {"builtin": True, "query": self.query}
        if self.introspection_union is not None:
            out["introspection_union"] = self.introspection_union
        if self.introspection_live is not None:
            out["introspection_live"] = self.introspection_live
        return out


# pg_catalog and information_schema (issue 14), built from the classes above
# (and the views over mz_catalog / mz_internal / mz_introspection relations, builtin_mz_views)
from weir.catalog import builtin_information_schema as _is, builtin_pg_catalog as _pg  # noqa: E402, I001
from weir.catalog import builtin_mz_views as _mz, builtin_pg_system as _sys  # noqa: E402
BUILTINS, BUILTIN_VIEWS = (*BUILTINS, *_pg.TABLES, *_sys.TABLES, *_is.TABLES), (
    *_mz.VIEWS, *_pg.VIEWS, *_sys.VIEWS, *_is.VIEWS)

PG_FIXED_OIDS = _pg.PG_FIXED_OIDS  # pg_class is 1259 ... (weir.catalog.builtin_pg_catalog)
BUILTINS = tuple(replace(b, oid=PG_FIXED_OIDS[b.name]) if b.schema == _pg.PG_CATALOG and b.name in PG_FIXED_OIDS
                 else b for b in BUILTINS)
BUILTIN_VIEWS = tuple(replace(v, oid=PG_FIXED_OIDS[v.name]) if v.schema == _pg.PG_CATALOG and v.name in PG_FIXED_OIDS
                      else v for v in BUILTIN_VIEWS)
BUILTIN_TABLES = BUILTINS  # the name the adapter uses

_BY_NAME = {(b.schema, b.name): b for b in BUILTINS}


def by_name(schema: str, name: str) -> BuiltinTable | None:
    return _BY_NAME.get((schema, name))


def builtin_rows(catalog: Catalog | Snapshot) -> dict[str, list[Row]]:
    """Every builtin's rows keyed by builtin id, all from one snapshot."""
    snap = catalog if isinstance(catalog, Snapshot) else catalog.snapshot()
    return {b.id: b.compute(snap) for b in BUILTINS}
