"""Statement AST for weir: sqlglot expressions for standard SQL, dataclasses for
weir's own statements (SHOW ..., SET, roles, transactions) that sqlglot does not model."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp


@dataclass
class Statement:
    sql: str
    # CREATE TABLE / SOURCE / MATERIALIZED VIEW / INDEX ... WITH (RETAIN HISTORY FOR 'interval')
    retain_history: str | None = field(default=None, kw_only=True)

    @property
    def kind(self) -> str:
        """Statement type in snake case (select, insert, create_table, ...) for logging."""
        return "unknown"


@dataclass
class AsOf:
    """AS OF [AT LEAST] <expr>: the time a read uses (exact) or its lower bound."""

    expr: exp.Expression
    at_least: bool = False


@dataclass
class Query(Statement):
    expr: exp.Query = field(repr=False, default=None)  # type: ignore[assignment]
    as_of: AsOf | None = None

    @property
    def kind(self) -> str:
        return "select"


@dataclass
class Insert(Statement):
    expr: exp.Insert = field(repr=False, default=None)  # type: ignore[assignment]

    @property
    def kind(self) -> str:
        return "insert"


@dataclass
class Update(Statement):
    expr: exp.Update = field(repr=False, default=None)  # type: ignore[assignment]

    @property
    def kind(self) -> str:
        return "update"


@dataclass
class Delete(Statement):
    expr: exp.Delete = field(repr=False, default=None)  # type: ignore[assignment]

    @property
    def kind(self) -> str:
        return "delete"


@dataclass
class CreateTable(Statement):
    expr: exp.Create = field(repr=False, default=None)  # type: ignore[assignment]
    temporary: bool = False  # TEMP / TEMPORARY: in the session's mz_temp schema

    @property
    def kind(self) -> str:
        return "create_table"


@dataclass
class CreateView(Statement):
    expr: exp.Create = field(repr=False, default=None)  # type: ignore[assignment]
    temporary: bool = False  # TEMP / TEMPORARY: in the session's mz_temp schema

    @property
    def kind(self) -> str:
        return "create_view"


@dataclass
class Drop(Statement):
    object_kind: str = ""  # table, view, database, schema, role, cluster, ...
    names: list[list[str]] = field(default_factory=list)  # qualified name parts
    if_exists: bool = False
    cascade: bool = False

    @property
    def kind(self) -> str:
        return "drop_" + self.object_kind.replace(" ", "_")


@dataclass
class CopyTo(Statement):
    """COPY (query) TO STDOUT / COPY table [(cols)] TO STDOUT."""

    query: exp.Query = field(repr=False, default=None)  # type: ignore[assignment]
    subscribe: Subscribe | None = None

    @property
    def kind(self) -> str:
        return "copy"


@dataclass
class Transaction(Statement):
    action: str = "begin"  # begin | commit | rollback
    isolation: str | None = None

    @property
    def kind(self) -> str:
        return self.action


@dataclass
class Savepoint(Statement):
    """SAVEPOINT name / RELEASE [SAVEPOINT] name / ROLLBACK TO [SAVEPOINT] name."""

    action: str = "savepoint"  # savepoint | release | rollback_to
    name: str = ""

    @property
    def kind(self) -> str:
        return {"savepoint": "savepoint", "release": "release_savepoint"}.get(self.action, "rollback_to_savepoint")


@dataclass
class SetVariable(Statement):
    name: str = ""
    value: str | None = None  # None = DEFAULT
    local: bool = False

    @property
    def kind(self) -> str:
        return "set_variable"


@dataclass
class ResetVariable(Statement):
    name: str = ""  # "all" resets every variable

    @property
    def kind(self) -> str:
        return "reset_variable"


@dataclass
class AlterSystem(Statement):
    """ALTER SYSTEM SET name {=|TO} value|DEFAULT, ALTER SYSTEM RESET name|ALL."""

    name: str = ""  # "all" with value None: RESET ALL
    value: str | None = None  # None = RESET / DEFAULT

    @property
    def kind(self) -> str:
        return "alter_system"


@dataclass
class ShowVariable(Statement):
    name: str = ""  # "all" shows every variable

    @property
    def kind(self) -> str:
        return "show_variable"


@dataclass
class ShowObjects(Statement):
    """SHOW TABLES / VIEWS / MATERIALIZED VIEWS / INDEXES / OBJECTS / CLUSTERS / CLUSTER REPLICAS /
    COLUMNS FROM / ..."""

    what: str = ""  # tables, views, materialized views, indexes, sources, objects, clusters, ...
    from_name: list[str] | None = None  # FROM schema (FROM object for COLUMNS, cluster for REPLICAS)
    on_name: list[str] | None = None  # SHOW INDEXES ON object
    in_cluster: str | None = None  # IN CLUSTER c
    like: str | None = None
    where: str | None = None

    @property
    def kind(self) -> str:
        return "show_" + self.what.replace(" ", "_")


@dataclass
class RoleOptions:
    superuser: bool | None = None
    login: bool | None = None
    inherit: bool | None = None
    password: str | None = None
    password_null: bool = False


@dataclass
class CreateRole(Statement):
    name: str = ""
    options: RoleOptions = field(default_factory=RoleOptions)

    @property
    def kind(self) -> str:
        return "create_role"


@dataclass
class AlterRole(Statement):
    name: str = ""
    options: RoleOptions = field(default_factory=RoleOptions)

    @property
    def kind(self) -> str:
        return "alter_role"


@dataclass
class GrantRole(Statement):
    roles: list[str] = field(default_factory=list)
    members: list[str] = field(default_factory=list)
    revoke: bool = False

    @property
    def kind(self) -> str:
        return "revoke_role" if self.revoke else "grant_role"


@dataclass
class GrantPrivileges(Statement):
    """GRANT | REVOKE {priv [, ...] | ALL [PRIVILEGES]} ON [TABLE | VIEW | MATERIALIZED VIEW |
    SOURCE | DATABASE | SCHEMA | CLUSTER] name [, ...] TO | FROM role [, ...]."""

    privileges: list[str] = field(default_factory=list)  # names (SELECT, ...); empty: ALL
    object_type: str = "table"  # table (any relation) | view | materialized view | source | database | schema | cluster
    names: list[list[str]] = field(default_factory=list)
    grantees: list[str] = field(default_factory=list)  # role names; "PUBLIC"
    revoke: bool = False

    @property
    def kind(self) -> str:
        return "revoke_privilege" if self.revoke else "grant_privilege"


@dataclass
class AlterOwner(Statement):
    """ALTER <kind> name OWNER TO role."""

    object_type: str = ""
    name: list[str] = field(default_factory=list)
    new_owner: str = ""

    @property
    def kind(self) -> str:
        return "alter_owner"


@dataclass
class ShowPrivileges(Statement):
    """SHOW PRIVILEGES [ON TABLES | DATABASES | SCHEMAS | CLUSTERS] [FOR role]."""

    on: str | None = None
    role: str | None = None

    @property
    def kind(self) -> str:
        return "show_privileges"


@dataclass
class CreateDatabase(Statement):
    name: str = ""
    if_not_exists: bool = False

    @property
    def kind(self) -> str:
        return "create_database"


@dataclass
class CreateSchema(Statement):
    name: list[str] = field(default_factory=list)
    if_not_exists: bool = False

    @property
    def kind(self) -> str:
        return "create_schema"


@dataclass
class Discard(Statement):
    what: str = "ALL"  # ALL | PLANS | SEQUENCES | TEMP

    @property
    def kind(self) -> str:
        return "discard"


@dataclass
class Empty(Statement):
    @property
    def kind(self) -> str:
        return "empty"


@dataclass
class ReplicaDef:
    name: str
    options: dict[str, str]


@dataclass
class CreateCluster(Statement):
    name: str = ""
    options: dict[str, str] = field(default_factory=dict)  # SIZE, REPLICATION FACTOR
    replicas: list[ReplicaDef] | None = None  # unmanaged: REPLICAS (...)

    @property
    def kind(self) -> str:
        return "create_cluster"


@dataclass
class CreateClusterReplica(Statement):
    cluster: str = ""
    name: str = ""
    options: dict[str, str] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return "create_cluster_replica"


@dataclass
class AlterCluster(Statement):
    name: str = ""
    options: dict[str, str] = field(default_factory=dict)
    if_exists: bool = False

    @property
    def kind(self) -> str:
        return "alter_cluster"


@dataclass
class Deallocate(Statement):
    name: str | None = None  # None = ALL

    @property
    def kind(self) -> str:
        return "deallocate"


@dataclass
class CreateSource(Statement):
    name: list[str] = field(default_factory=list)
    generator: str = ""  # counter | auction | tpch
    options: dict[str, str] = field(default_factory=dict)
    tables: list[str] | None = None  # FOR TABLES (...); None = FOR ALL TABLES / single relation
    cluster: str | None = None
    if_not_exists: bool = False

    @property
    def kind(self) -> str:
        return "create_source"


@dataclass
class Subscribe(Statement):
    """SUBSCRIBE [TO] relation | (query) [ENVELOPE UPSERT | DEBEZIUM (KEY (col, ...)) |
    WITHIN TIMESTAMP ORDER BY col [ASC | DESC] [NULLS FIRST | LAST], ...]
    [WITH (SNAPSHOT, PROGRESS)] [AS OF [AT LEAST] t] [UP TO t]."""

    query: exp.Query = field(repr=False, default=None)  # type: ignore[assignment]
    snapshot: bool = True
    progress: bool = False
    as_of: AsOf | None = None
    up_to: exp.Expression | None = None
    envelope: str | None = None  # "upsert" or "debezium"
    envelope_key: list[str] = field(default_factory=list)
    within_order: list[exp.Ordered] = field(default_factory=list)
    durable: list[str] | None = None  # SUBSCRIBE USING DURABLE SUBSCRIPTION name
    snapshot_given: bool = False  # WITH (SNAPSHOT ...) was written

    @property
    def kind(self) -> str:
        return "subscribe"


@dataclass
class DeclareCursor(Statement):
    name: str = ""
    inner: Statement | None = None
    scroll: bool = True  # NO SCROLL: only forward fetches

    @property
    def kind(self) -> str:
        return "declare"


@dataclass
class Fetch(Statement):
    name: str = ""
    count: int | None = 1  # None = ALL
    timeout: str | None = None
    # forward / backward (count rows, None = ALL), absolute / relative (count is the position)
    direction: str = "forward"
    move: bool = False  # MOVE: position the cursor, return no rows

    @property
    def kind(self) -> str:
        return "fetch"


@dataclass
class CloseCursor(Statement):
    name: str | None = None  # None = ALL

    @property
    def kind(self) -> str:
        return "close"


@dataclass
class Explain(Statement):
    """EXPLAIN [RAW | OPTIMIZED | PHYSICAL] PLAN [WITH (...)] FOR <query | MATERIALIZED VIEW x | INDEX x>,
    or EXPLAIN TIMESTAMP FOR <query>."""

    stage: str = "physical"  # raw | optimized | physical | timestamp
    options: list[str] = field(default_factory=list)
    query: exp.Query | None = field(repr=False, default=None)
    object_kind: str | None = None  # "materialized view" | "index"
    object_name: list[str] | None = None

    @property
    def kind(self) -> str:
        return "explain_plan" if self.stage != "timestamp" else "explain_timestamp"


@dataclass
class CreateMaterializedView(Statement):
    name: list[str] = field(default_factory=list)
    query: exp.Query = field(repr=False, default=None)  # type: ignore[assignment]
    cluster: str | None = None
    if_not_exists: bool = False
    replace: bool = False
    column_names: list[str] | None = None
    not_null: list[str] = field(default_factory=list)  # WITH (ASSERT NOT NULL col, ...)

    @property
    def kind(self) -> str:
        return "create_materialized_view"


@dataclass
class CreateIndex(Statement):
    """CREATE [DEFAULT] INDEX [IF NOT EXISTS] [name] [IN CLUSTER c] ON obj [(key, ...)]."""

    name: str | None = None
    on: list[str] = field(default_factory=list)
    keys: list[exp.Expression] | None = field(repr=False, default=None)  # None: DEFAULT INDEX
    cluster: str | None = None
    if_not_exists: bool = False

    @property
    def kind(self) -> str:
        return "create_index"


@dataclass
class Prepare(Statement):
    """PREPARE name [(type, ...)] AS statement."""

    name: str = ""
    param_types: list[str] = field(default_factory=list)
    body: str = ""

    @property
    def kind(self) -> str:
        return "prepare"


@dataclass
class ExecutePrepared(Statement):
    """EXECUTE name [(arg, ...)]."""

    name: str = ""
    args: list[exp.Expression] = field(repr=False, default_factory=list)

    @property
    def kind(self) -> str:
        return "execute"


@dataclass
class CreateHold(Statement):
    """CREATE HOLD name ON obj [, ...] [AT t] [WITH (MAX LAG = interval)] (design 003)."""

    name: list[str] = field(default_factory=list)
    objects: list[list[str]] = field(default_factory=list)
    at: exp.Expression | None = field(default=None, repr=False)
    max_lag: str | None = None  # interval text; None: the default ('3h')
    if_not_exists: bool = False

    @property
    def kind(self) -> str:
        return "create_hold"


@dataclass
class AlterHold(Statement):
    """ALTER HOLD name ADVANCE [TO t] | RENAME TO new."""

    name: list[str] = field(default_factory=list)
    action: str = "advance"  # advance | rename
    to: exp.Expression | None = field(default=None, repr=False)
    new_name: str | None = None

    @property
    def kind(self) -> str:
        return "alter_hold"


@dataclass
class AlterRetainHistory(Statement):
    """ALTER TABLE | SOURCE | MATERIALIZED VIEW | INDEX name SET (RETAIN HISTORY FOR 'x')
    or RESET (RETAIN HISTORY): the object's compaction window."""

    object_kind: str = ""
    name: list[str] = field(default_factory=list)
    value: str | None = None  # None: RESET (the default window)

    @property
    def kind(self) -> str:
        return "alter_" + self.object_kind.replace(" ", "_")


@dataclass
class CreateDurableSubscription(Statement):
    """CREATE DURABLE SUBSCRIPTION name [IN CLUSTER c] WITH (ACKNOWLEDGE WITHIN 'interval'
    [, START AT t]) AS query (issue 11, part 6)."""

    name: list[str] = field(default_factory=list)
    cluster: str | None = None
    acknowledge_within: str = ""  # interval text
    start_at: exp.Expression | None = field(default=None, repr=False)
    query: exp.Query = field(repr=False, default=None)  # type: ignore[assignment]
    query_text: str = ""
    if_not_exists: bool = False

    @property
    def kind(self) -> str:
        return "create_durable_subscription"


@dataclass
class AlterDurableSubscription(Statement):
    """ALTER DURABLE SUBSCRIPTION name RESET | RENAME TO new."""

    name: list[str] = field(default_factory=list)
    action: str = "reset"  # reset | rename
    new_name: str | None = None

    @property
    def kind(self) -> str:
        return "alter_durable_subscription"


@dataclass
class AcknowledgeDurableSubscription(Statement):
    """ACKNOWLEDGE DURABLE SUBSCRIPTION name UP TO t."""

    name: list[str] = field(default_factory=list)
    up_to: exp.Expression = field(repr=False, default=None)  # type: ignore[assignment]

    @property
    def kind(self) -> str:
        return "acknowledge_durable_subscription"
