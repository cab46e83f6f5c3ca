"""DDL: tables, views, databases, schemas, roles, drops. Each change is one catalog
transaction plus the storage it needs; builtin relations are refreshed after."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from weir import types as T
from weir.adapter import (
    api,
    clusters,
    durable_subscriptions,
    holds,
    indexes,
    mviews,
    planning,
    privileges,
    sources,
    temporary,
)
from weir.catalog.model import ColumnDef
from weir.errors import SqlState, WeirError
from weir.sql import statements as st
from weir.sql.resolve import table_parts

if TYPE_CHECKING:
    from weir.adapter.session import Session


def _require_superuser(session: Session, what: str) -> None:
    if not session.role.superuser:
        raise WeirError(SqlState.INSUFFICIENT_PRIVILEGE, f"permission denied to {what}",
                        detail="You must be a superuser.")


_DEFERRED_TAGS = {st.CreateIndex: "CREATE INDEX", st.CreateMaterializedView: "CREATE MATERIALIZED VIEW",
                  st.CreateHold: "CREATE HOLD"}


def _defer(session: Session, stmt: st.Statement) -> api.Command:
    """Inside a transaction (design 003): one CREATE INDEX or MATERIALIZED VIEW, then at most
    one CREATE HOLD naming only that object; both run at COMMIT, the hold from the new
    object's first time. Anything else fails the transaction, which then leaves nothing."""
    txn = session.txn
    assert txn is not None
    what = stmt.kind.replace("_", " ").upper()
    if isinstance(stmt, (st.CreateIndex, st.CreateMaterializedView)) and not txn.ddl and not txn.writes \
            and txn.read_ts is None:
        txn.ddl.append(stmt)
        return api.Command(_DEFERRED_TAGS[type(stmt)])
    if isinstance(stmt, st.CreateHold) and len(txn.ddl) == 1:
        created = txn.ddl[0]
        name = getattr(created, "name", None)
        created_name = (name if isinstance(name, list) else [name])[-1] if name else None
        if len(stmt.objects) != 1 or created_name is None or stmt.objects[0][-1] != created_name:
            raise WeirError(SqlState.ACTIVE_SQL_TRANSACTION,
                            "CREATE HOLD in a transaction must name exactly the object the transaction creates")
        txn.ddl.append(stmt)
        return api.Command("CREATE HOLD")
    raise WeirError(SqlState.ACTIVE_SQL_TRANSACTION, f"{what} cannot be run inside a transaction block"
                    + (" (after CREATE INDEX or MATERIALIZED VIEW only one CREATE HOLD on it may follow)"
                       if txn.ddl else ""))


async def run_deferred(session: Session, statements: list[st.Statement]) -> None:
    """COMMIT of a transaction that created an object and its hold; a failure drops what it made."""
    before = {i.id for i in session.coord.catalog.list_items()}
    try:
        for stmt in statements:
            await execute(session, stmt)
    except BaseException:
        made = [i for i in session.coord.catalog.list_items() if i.id not in before]
        for item in sorted(made, key=lambda i: i.kind != "hold"):  # the hold first
            try:
                await session.coord.drop_storage(session.coord.catalog.drop_item(item.id, cascade=True).items)
            except WeirError:
                pass
        await session.coord.catalog_changed()
        raise


async def execute(session: Session, stmt: st.Statement) -> api.Command:
    if session.txn is not None and session.txn.explicit:
        return _defer(session, stmt)
    if stmt.retain_history is None:
        return await _execute(session, stmt)
    if not isinstance(stmt, (st.CreateTable, st.CreateSource, st.CreateMaterializedView, st.CreateIndex)):
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"{stmt.kind.replace('_', ' ').upper()} does not take "
                        "RETAIN HISTORY (tables, sources, materialized views and indexes do)")
    holds.retain_ms(stmt.retain_history)  # a bad value fails before anything is created
    before = {i.id for i in session.coord.catalog.list_items()}
    done = await _execute(session, stmt)
    for item in session.coord.catalog.list_items():
        if item.id not in before and item.kind in holds.RETAINABLE:
            await holds.set_retain_history(session, item, stmt.retain_history)
    return done


async def _execute(session: Session, stmt: st.Statement) -> api.Command:
    coord = session.coord
    if isinstance(stmt, st.CreateTable):
        return await _create_table(session, stmt)
    if isinstance(stmt, st.CreateView):
        return await _create_view(session, stmt)
    if isinstance(stmt, st.Drop):
        return await _drop(session, stmt)
    if isinstance(stmt, st.CreateMaterializedView):
        return await mviews.create(session, stmt)
    if isinstance(stmt, st.CreateIndex):
        return await indexes.create(session, stmt)
    if isinstance(stmt, st.CreateHold):
        return await holds.create(session, stmt)
    if isinstance(stmt, st.AlterHold):
        return await holds.alter(session, stmt)
    if isinstance(stmt, st.AlterRetainHistory):
        return await holds.alter_retain_history(session, stmt)
    if isinstance(stmt, st.GrantPrivileges):
        return await privileges.grant(session, stmt)
    if isinstance(stmt, st.AlterOwner):
        return await privileges.alter_owner(session, stmt)
    if isinstance(stmt, st.CreateDurableSubscription):
        return await durable_subscriptions.create(session, stmt)
    if isinstance(stmt, st.AlterDurableSubscription):
        return await durable_subscriptions.alter(session, stmt)
    if isinstance(stmt, st.AcknowledgeDurableSubscription):
        return await durable_subscriptions.acknowledge(session, stmt)
    if isinstance(stmt, st.CreateSource):
        return await sources.create_source(session, stmt)
    if isinstance(stmt, st.CreateCluster):
        return await clusters.create_cluster(session, stmt)
    if isinstance(stmt, st.CreateClusterReplica):
        return await clusters.create_replica(session, stmt)
    if isinstance(stmt, st.AlterCluster):
        return await clusters.alter_cluster(session, stmt)
    if isinstance(stmt, st.CreateDatabase):
        if stmt.if_not_exists and coord.catalog.find_database(stmt.name) is not None:
            session.notice(f'database "{stmt.name}" already exists, skipping')
        else:
            coord.catalog.create_database(stmt.name, owner_id=session.role.id)
        await coord.catalog_changed()
        return api.Command("CREATE DATABASE")
    if isinstance(stmt, st.CreateSchema):
        db = stmt.name[0] if len(stmt.name) == 2 else session.database
        database = coord.lookup_database(db)
        if stmt.if_not_exists and coord.catalog.find_schema(database.id, stmt.name[-1]) is not None:
            session.notice(f'schema "{stmt.name[-1]}" already exists, skipping')
        else:
            coord.catalog.create_schema(database.id, stmt.name[-1], owner_id=session.role.id)
        await coord.catalog_changed()
        return api.Command("CREATE SCHEMA")
    if isinstance(stmt, st.CreateRole):
        _require_superuser(session, "create role")
        o = stmt.options
        coord.catalog.create_role(stmt.name, superuser=bool(o.superuser), login=bool(o.login),
                                  password=o.password)
        await coord.catalog_changed()
        return api.Command("CREATE ROLE")
    if isinstance(stmt, st.AlterRole):
        o = stmt.options
        if session.role.name != stmt.name or o.superuser is not None:
            _require_superuser(session, "alter role")
        password = "" if o.password_null else o.password
        coord.catalog.alter_role(stmt.name, superuser=o.superuser, login=o.login, password=password)
        await coord.catalog_changed()
        return api.Command("ALTER ROLE")
    if isinstance(stmt, st.GrantRole):
        _require_superuser(session, "grant role" if not stmt.revoke else "revoke role")
        with coord.catalog.transaction():
            for role in stmt.roles:
                for member in stmt.members:
                    if stmt.revoke:
                        coord.catalog.revoke_role(role, member)
                    else:
                        coord.catalog.grant_role(role, member, grantor_id=session.role.id)
        await coord.catalog_changed()
        return api.Command("REVOKE ROLE" if stmt.revoke else "GRANT ROLE")
    raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"{stmt.kind} not yet supported")


def target_schema(session: Session, parts: list[str]) -> tuple[str, str]:
    """(schema id, object name) for a name being created."""
    coord = session.coord
    if len(parts) == 1:
        for name in session.search_path:
            schema = coord.catalog.find_schema(coord.lookup_database(session.database).id, name)
            if schema is not None:
                privileges.require(session, "schema", schema.id, "C")
                return schema.id, parts[0]
        raise WeirError(SqlState.INVALID_SCHEMA_NAME, "no schema has been selected to create in")
    db = parts[0] if len(parts) == 3 else session.database
    schema = coord.lookup_schema(db, parts[-2])
    if schema.is_system:
        raise WeirError(SqlState.INSUFFICIENT_PRIVILEGE,
                        f"system schema '{schema.name}' cannot be modified")
    privileges.require(session, "schema", schema.id, "C")
    return schema.id, parts[-1]


def _column_defs(create: exp.Create) -> list[ColumnDef]:
    schema = create.this
    cols: list[ColumnDef] = []
    seen: set[str] = set()
    for cd in schema.expressions:
        if not isinstance(cd, exp.ColumnDef):
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"table constraint {cd.sql()} not yet supported")
        name = cd.name if cd.this.quoted else cd.name.lower()
        if name in seen:
            raise WeirError(SqlState.DUPLICATE_COLUMN, f'column "{name}" specified more than once')
        seen.add(name)
        kind = cd.args.get("kind")
        if kind is None:
            raise WeirError(SqlState.SYNTAX_ERROR, f'column "{name}" needs a type')
        pg = T.parse_type(kind.sql(dialect="postgres"))
        if pg.ndims > 1:  # int[][] is PostgreSQL's int[]: a table's arrays have one dimension in weir
            pg = T.with_ndims(pg, 1)
        nullable, default = True, None
        for c in cd.args.get("constraints") or []:
            k = c.kind
            if isinstance(k, exp.NotNullColumnConstraint):
                nullable = bool(k.args.get("allow_null"))
            elif isinstance(k, exp.DefaultColumnConstraint):
                default = k.this.sql(dialect="postgres")
            elif isinstance(k, exp.PrimaryKeyColumnConstraint):
                nullable = False
            else:
                raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                                f"column constraint {c.sql(dialect='postgres')} not yet supported")
        cols.append(ColumnDef(name, pg, nullable, default))
    if not cols:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "tables without columns are not supported")
    return cols


async def _create_table(session: Session, stmt: st.CreateTable) -> api.Command:
    coord = session.coord
    create = stmt.expr
    parts = table_parts(create.this.this)
    if stmt.temporary or temporary.names_temp_schema(parts):
        schema_id, name = temporary.target(session, parts)
    else:
        schema_id, name = target_schema(session, parts)
    if coord.catalog.find_item(schema_id, name) is not None and create.args.get("exists"):
        session.notice(f'relation "{name}" already exists, skipping')
        return api.Command("CREATE TABLE")
    cols = _column_defs(create)
    await coord.create_table(schema_id, name, cols, stmt.sql, session.role.id)
    return api.Command("CREATE TABLE")


async def _create_view(session: Session, stmt: st.CreateView) -> api.Command:
    coord = session.coord
    create = stmt.expr
    target = create.this.this if isinstance(create.this, exp.Schema) else create.this
    parts = table_parts(target)
    body = create.expression
    plan = planning.plan(session, body, qualify=True)
    if stmt.temporary or temporary.names_temp_schema(parts):
        schema_id, name = temporary.target(session, parts)
    elif temporary.first_temporary(plan.depends_on) is not None:
        # PostgreSQL's rule (Materialize refuses instead): a view over a temporary object is one
        session.notice(f'view "{parts[-1]}" will be a temporary view')
        schema_id, name = temporary.target(session, parts)
    else:
        schema_id, name = target_schema(session, parts)
    assert plan.spark is not None and plan.spark.qualified is not None
    qualified = plan.spark.qualified
    columns = await planning.describe(session, plan)
    if isinstance(create.this, exp.Schema):
        names = [c.name for c in create.this.expressions]
        if len(names) != len(columns):
            raise WeirError(SqlState.SYNTAX_ERROR, "CREATE VIEW specifies the wrong number of column names")
        columns = [api.Column(n, c.type) for n, c in zip(names, columns, strict=True)]
        # SELECT * FROM (query) AS v(names): also for VALUES, which has no output names to select
        qualified = exp.select("*").from_(exp.Subquery(this=qualified, alias=exp.TableAlias(
            this=exp.to_identifier("v"), columns=[exp.to_identifier(n, quoted=True) for n in names])))
    planning.require_unique_names(columns)
    replace = bool(create.args.get("replace"))
    existing = coord.catalog.find_item(schema_id, name)
    if existing is not None and replace and existing.kind == "view":
        coord.catalog.drop_item(existing.id)
    elif existing is not None and create.args.get("exists"):
        session.notice(f'view "{name}" already exists, skipping')
        return api.Command("CREATE VIEW")
    coord.catalog.create_item(
        "view", schema_id, name, [ColumnDef(c.name, c.type) for c in columns], stmt.sql,
        {"query": qualified.sql(dialect="postgres")}, owner_id=session.role.id,
        dependencies=list(plan.depends_on))
    await coord.catalog_changed()
    return api.Command("CREATE VIEW")


async def _drop(session: Session, stmt: st.Drop) -> api.Command:
    coord = session.coord
    tag = f"DROP {stmt.object_kind.upper()}"
    if stmt.object_kind == "source":
        await sources.drop_source(session, stmt)
        await coord.catalog_changed()
        return api.Command(tag)
    if stmt.object_kind in ("cluster", "cluster replica"):
        await clusters.drop(session, stmt)
        await coord.catalog_changed()
        return api.Command(tag)
    for parts in stmt.names:
        if stmt.object_kind == "role":
            _require_superuser(session, "drop role")
            if coord.catalog.find_role(parts[0]) is None and stmt.if_exists:
                session.notice(f'role "{parts[0]}" does not exist, skipping')
                continue
            if parts[0] == session.role.name:
                raise WeirError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE, "current role cannot be dropped")
            coord.catalog.drop_role(parts[0])
        elif stmt.object_kind == "database":
            if coord.catalog.find_database(parts[0]) is None and stmt.if_exists:
                session.notice(f'database "{parts[0]}" does not exist, skipping')
                continue
            privileges.require_owner(session, "database", coord.lookup_database(parts[0]).id)
            result = coord.catalog.drop_database(parts[0], cascade=stmt.cascade)
            await coord.drop_storage(result.items)
        elif stmt.object_kind == "schema":
            db = parts[0] if len(parts) == 2 else session.database
            database = coord.lookup_database(db)
            schema = coord.catalog.find_schema(database.id, parts[-1])
            if schema is None:
                if stmt.if_exists:
                    session.notice(f'schema "{parts[-1]}" does not exist, skipping')
                    continue
                raise WeirError(SqlState.INVALID_SCHEMA_NAME, f"unknown schema '{parts[-1]}'")
            privileges.require_owner(session, "schema", schema.id)
            result = coord.catalog.drop_schema(schema.id, cascade=stmt.cascade)
            await coord.drop_storage(result.items)
        elif stmt.object_kind == "hold":
            hold = holds.find(session, parts, missing_ok=stmt.if_exists)
            if hold is None:
                session.notice(f'hold "{".".join(parts)}" does not exist, skipping')
                continue
            privileges.require_owner(session, "item", hold.id)
            await coord.drop_storage(coord.catalog.drop_item(hold.id).items)
        elif stmt.object_kind == "durable subscription":
            ds = durable_subscriptions.find(session, parts, missing_ok=stmt.if_exists)
            if ds is None:
                session.notice(f'durable subscription "{".".join(parts)}" does not exist, skipping')
                continue
            privileges.require_owner(session, "item", ds.id)
            await coord.drop_storage(coord.catalog.drop_item(ds.id).items)
        else:
            try:
                desc = coord.resolver(session).lookup(parts)
            except WeirError as e:
                if e.sqlstate == SqlState.UNDEFINED_TABLE and stmt.if_exists:
                    session.notice(f'{stmt.object_kind} "{".".join(parts)}" does not exist, skipping')
                    continue
                raise
            if desc.id.startswith("s"):
                raise WeirError(SqlState.INSUFFICIENT_PRIVILEGE, f"cannot drop item {desc.name} because it is required by the database system")
            if desc.kind.replace("-", " ") != stmt.object_kind:
                raise WeirError(SqlState.WRONG_OBJECT_TYPE, f'"{desc.name}" is a {desc.kind} not a {stmt.object_kind}')
            privileges.require_owner(session, "item", desc.id)
            result = coord.catalog.drop_item(desc.id, cascade=stmt.cascade)
            await coord.drop_storage(result.items)
    await coord.catalog_changed()
    return api.Command(tag)
