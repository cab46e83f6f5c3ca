"""Execute one prepared statement for a session: dispatch on the statement kind."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from weir import types as T
from weir.adapter import (
    api,
    cursors,
    ddl,
    dml,
    explain,
    planning,
    privileges,
    savepoints,
    subscribe,
    temporary,
)
from weir.adapter.session import Transaction
from weir.adapter.show import show_sql
from weir.catalog.vars import VARS, is_system_alias, lookup_var, settable_var
from weir.errors import SqlState, WeirError
from weir.sql import statements as st

if TYPE_CHECKING:
    from weir.adapter.session import Session


async def _rows(columns: list[api.Column], rows: list[tuple[Any, ...]], prefix: str = "SELECT") -> api.Rows:
    async def gen():  # noqa: ANN202
        yield rows

    return api.Rows(columns, gen(), prefix)


async def execute(session: Session, prepared: api.PreparedStatement, params: list[Any]) -> api.ExecuteResult:
    stmt: st.Statement = prepared.plan
    types = prepared.param_types
    if isinstance(stmt, st.Empty):
        return api.EmptyQuery()
    if isinstance(stmt, st.Transaction):
        return await _transaction(session, stmt)
    if isinstance(stmt, st.Savepoint):  # before the check below: ROLLBACK TO undoes a deferred CREATE
        return await savepoints.execute(session, stmt)
    if session.txn is not None and session.txn.ddl and not isinstance(stmt, (st.CreateHold, st.Empty)):
        raise WeirError(SqlState.ACTIVE_SQL_TRANSACTION,
                        "a transaction that creates an object may only create one hold on it next")
    if isinstance(stmt, st.Query):
        session.applying = True  # set_config() in it takes effect
        try:
            return await planning.run(session, stmt.expr, params, types, key=stmt.sql, as_of=stmt.as_of)
        finally:
            session.applying = False
    if isinstance(stmt, st.CopyTo):
        if stmt.subscribe is not None:
            columns, batches = await subscribe.subscribe(session, stmt.subscribe)
            return api.CopyOut(columns, batches)
        rows = await planning.run(session, stmt.query, params, types)
        return api.CopyOut(rows.columns, rows.batches)
    if isinstance(stmt, st.Explain):
        return await explain.explain(session, stmt)
    if isinstance(stmt, st.Subscribe):
        columns, batches = await subscribe.subscribe(session, stmt)
        return api.CopyOut(columns, batches)
    if isinstance(stmt, st.DeclareCursor):
        return await cursors.declare(session, stmt)
    if isinstance(stmt, st.Fetch):
        return await cursors.fetch(session, stmt)
    if isinstance(stmt, st.CloseCursor):
        return await cursors.close(session, stmt)
    if isinstance(stmt, st.ShowObjects):
        rows = await planning.run_sql(session, show_sql(session, stmt))
        return api.Rows(rows.columns, rows.batches, "SHOW")
    if isinstance(stmt, st.ShowPrivileges):
        return privileges.show(session, stmt)
    if isinstance(stmt, st.ShowVariable):
        return await _show_var(session, stmt)
    if isinstance(stmt, st.SetVariable):
        outside = session.txn is None or not session.txn.explicit
        if stmt.name in ("transaction_isolation",) and stmt.local:
            # SET TRANSACTION: every level is serializable or stricter
            if outside and stmt.sql.lstrip().upper().startswith("SET") and \
                    stmt.sql.split()[1].upper() == "TRANSACTION":
                session.notice("SET TRANSACTION can only be used in transaction blocks",
                               SqlState.NO_ACTIVE_SQL_TRANSACTION, "WARNING")
            return api.Command("SET")
        settable_var(stmt.name, "session")
        if stmt.local and outside:
            session.notice("SET LOCAL can only be used in transaction blocks",
                           SqlState.NO_ACTIVE_SQL_TRANSACTION, "WARNING")
        session.set_var(stmt.name, stmt.value, local=stmt.local)
        return api.Command("SET")
    if isinstance(stmt, st.ResetVariable):
        if stmt.name == "all":
            for v in VARS:
                if v.session:
                    session.set_var(v.name, None)
        else:
            settable_var(stmt.name, "session")
            session.set_var(stmt.name, None)
        return api.Command("RESET")
    if isinstance(stmt, st.AlterSystem):
        return _alter_system(session, stmt)
    if isinstance(stmt, st.Prepare):
        return await _prepare(session, stmt)
    if isinstance(stmt, st.Deallocate):
        if stmt.name is None:
            session.sql_prepared.clear()
        else:
            session.sql_prepared.pop(stmt.name, None)
        # Protocol-level prepared statements belong to pgwire and end with the connection;
        # drivers (psycopg) deallocate the ones they evict from their caches.
        return api.Command("DEALLOCATE ALL" if stmt.name is None else "DEALLOCATE")
    if isinstance(stmt, st.Discard):
        return await _discard(session, stmt)
    if isinstance(stmt, (st.Insert, st.Update, st.Delete)):
        return await dml.execute(session, stmt, params, types)
    return await ddl.execute(session, stmt)


async def _show_var(session: Session, stmt: st.ShowVariable) -> api.Rows:
    """SHOW <variable> / SHOW ALL: PostgreSQL's columns and bare SHOW tag (SHOW ALL lists
    weir's variables, as Materialize lists its own)."""
    if stmt.name == "all":
        rows = [(v.name, session.get_var(v.name), v.description) for v in VARS]
        cols = [api.Column("name", T.TEXT), api.Column("setting", T.TEXT), api.Column("description", T.TEXT)]
    else:
        v = lookup_var(stmt.name)
        system = is_system_alias(stmt.name)  # statement_logging_default_sample_rate
        value = session.coord.system_var(v.name) if system else session.get_var(v.name)
        cols, rows = [api.Column(v.name, T.TEXT)], [(value,)]  # named as PostgreSQL names it (DateStyle)
    result = await _rows(cols, rows, "SHOW")
    result.counted = False
    return result


async def _discard(session: Session, stmt: st.Discard) -> api.Command:
    """DISCARD ALL: close the session's cursors, deallocate its PREPAREd statements, reset
    its variables and drop its temporary objects, as a connection pooler expects; TEMP drops
    only those. PLANS and SEQUENCES have nothing to discard (plans are shared and re-planned
    when the catalog changes; weir has no sequences)."""
    if stmt.what == "ALL":
        if session.txn is not None and session.txn.explicit:
            raise WeirError(SqlState.ACTIVE_SQL_TRANSACTION, "DISCARD ALL cannot run inside a transaction block")
        await cursors.close_all(session)
        session.sql_prepared.clear()
        session.discard_vars()
    if stmt.what in ("ALL", "TEMP"):
        await temporary.drop_all(session)
    return api.Command(f"DISCARD {stmt.what}")


def _alter_system(session: Session, stmt: st.AlterSystem) -> api.Command:
    """ALTER SYSTEM SET/RESET: superusers change the server-wide value (the default of
    sessions that have not SET their own), durably in the catalog."""
    if not session.role.superuser:
        raise WeirError(SqlState.INSUFFICIENT_PRIVILEGE, "permission denied to alter system",
                        detail="You must be a superuser to alter system.")
    if session.txn is not None and session.txn.explicit:
        raise WeirError(SqlState.ACTIVE_SQL_TRANSACTION,
                        "ALTER SYSTEM cannot be run inside a transaction block")
    catalog = session.coord.catalog
    try:
        if stmt.name == "all" and stmt.value is None:
            with catalog.transaction():
                for v in VARS:
                    if v.system:
                        catalog.reset_system_var(v.name)
        elif stmt.value is None:
            catalog.reset_system_var(stmt.name)
        else:
            catalog.set_system_var(stmt.name, stmt.value)
    finally:
        session.coord.system_vars_changed()
    return api.Command("ALTER SYSTEM")


async def _transaction(session: Session, stmt: st.Transaction) -> api.Command:
    txn = session.txn
    if stmt.action == "begin":
        if txn is not None and txn.explicit:
            session.notice("there is already a transaction in progress", SqlState.ACTIVE_SQL_TRANSACTION,
                           "WARNING")
            return api.Command("BEGIN")
        if stmt.isolation:
            lookup_var("transaction_isolation").normalize(stmt.isolation)
        pending = txn.writes if txn is not None else {}
        session.txn = Transaction(explicit=True, writes=pending)
        return api.Command("BEGIN")
    if txn is None or not txn.explicit:
        session.notice("there is no transaction in progress", SqlState.NO_ACTIVE_SQL_TRANSACTION, "WARNING")
        return api.Command("COMMIT" if stmt.action == "commit" else "ROLLBACK")
    session.txn = None
    txn.release()
    await cursors.close_all(session)
    session.end_transaction_vars(txn, committed=stmt.action == "commit" and not txn.failed)
    if stmt.action == "rollback" or txn.failed:
        return api.Command("ROLLBACK")
    if txn.ddl:
        await ddl.run_deferred(session, txn.ddl)
    try:
        await session.coord.commit_writes(txn.writes)
    except WeirError:
        raise
    return api.Command("COMMIT")



async def _prepare(session: Session, stmt: st.Prepare) -> api.Command:
    """PREPARE name [(types)] AS statement: a named prepared statement of the session."""
    if stmt.name in session.sql_prepared:
        raise WeirError(SqlState.DUPLICATE_PREPARED_STATEMENT, f'prepared statement "{stmt.name}" already exists')
    oids = [T.parse_type(t).oid for t in stmt.param_types]
    session.sql_prepared[stmt.name] = await session.prepare(stmt.body, oids, stmt.name)
    return api.Command("PREPARE")


def execute_args(session: Session, stmt: st.ExecutePrepared) -> tuple[api.PreparedStatement, list[Any]]:
    """EXECUTE name (args): the prepared statement and its arguments, as bound parameters."""
    from sqlglot import exp

    from weir import codec
    from weir.sql import constant

    prepared = session.sql_prepared.get(stmt.name)
    if prepared is None:
        raise WeirError(SqlState.INVALID_SQL_STATEMENT_NAME, f'prepared statement "{stmt.name}" does not exist')
    types = prepared.param_types
    if len(stmt.args) != len(types):
        raise WeirError(SqlState.SYNTAX_ERROR,
                        f"wrong number of parameters for prepared statement \"{stmt.name}\"",
                        detail=f"Expected {len(types)} parameters but got {len(stmt.args)}.")
    if not types:
        return prepared, []
    try:
        _, _, rows = constant.evaluate(exp.select(*[a.copy() for a in stmt.args]), session.context(None))
    except constant.NotConstant:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "EXECUTE arguments must be constant expressions") from None
    values: list[Any] = []
    for v, t in zip(rows[0], types, strict=True):
        if v is None:
            values.append(None)
        elif isinstance(v, bool):
            values.append(codec.decode_text("true" if v else "false", t))
        else:
            values.append(codec.decode_text(str(v), t))
    return prepared, values
