"""A client session: variables, transaction state, prepared statements' planning and
execution dispatch. One per connection; pgwire drives it through weir.adapter.api."""

from __future__ import annotations

import asyncio
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from weir.adapter import api, privileges, savepoints, temporary
from weir.catalog.model import Role
from weir.catalog.vars import VARS, lookup_var, normalize_var, settable_var
from weir.errors import SqlState, WeirError
from weir.sql import parse as sqlparse
from weir.sql import statements as st
from weir.sql.render import SessionContext

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator


@dataclass
class Transaction:
    explicit: bool
    failed: bool = False
    read_ts: int | None = None
    writes: dict[str, list[pa.Table]] = field(default_factory=dict)
    hold: Any = None  # read hold at read_ts for the transaction's lifetime
    # BEGIN; CREATE INDEX | MATERIALIZED VIEW ...; CREATE HOLD ... ON it; COMMIT: run at COMMIT
    ddl: list[Any] = field(default_factory=list)
    # variables changed in the transaction: their values before it (None: not set), restored
    # at ROLLBACK; and the values SET (not SET LOCAL) in it, which COMMIT keeps
    saved_vars: dict[str, str | None] = field(default_factory=dict)
    session_vars: dict[str, str | None] = field(default_factory=dict)
    savepoints: list[Any] = field(default_factory=list)  # weir.adapter.savepoints.Mark, oldest first

    def release(self) -> None:
        if self.hold is not None:
            self.hold.release()
            self.hold = None


class Session(api.Session):
    def __init__(self, coord: Coordinator, connection_id: int, role: Role, database: str,
                 startup: dict[str, str]) -> None:
        self.coord = coord
        self.connection_id = connection_id
        self.secret_key = secrets.randbits(31)
        self.role = role
        self.vars: dict[str, str] = {}
        self.var_version = 0  # bumped by every change to `vars` (caches of derived values key on it)
        self._param_changes: dict[str, str] = {}
        self._notices: list[api.Notice] = []
        self.txn: Transaction | None = None
        self.running: asyncio.Task[Any] | None = None
        self.execution_strategy: str | None = None  # how the last read ran: fast-path, ...
        self.execution_timestamp: int | None = None  # the timestamp the last read/write used
        # statement history (weir.adapter.statement_log)
        self.log_id = str(uuid.uuid4())
        self.connected_at = datetime.now(UTC)
        self.log_rng = coord.statement_log.rng_for_session()
        self.log_throttled = 0  # sampled executions throttled since the last logged statement
        self.transaction_id = 0
        self.execution: Any = None  # the sampled execution running now, if any
        self.log_context: Any = None  # statement_log's per-session cache
        self.closing = False
        self.client_ip: str | None = None  # mz_sessions.client_ip (not known to the adapter yet)
        self._log_access: tuple[int, str] = (-1, "own")
        self.cursors: dict[str, Any] = {}
        self.sql_prepared: dict[str, api.PreparedStatement] = {}  # PREPARE name AS ...
        self._planning_key: tuple[Any, Any] = (None, None)
        self.temp_schema_id: str | None = None  # its mz_temp schema (weir.adapter.temporary)
        self.temp_schema_oid = 0
        self.applying = False  # a statement is being executed (not described): set_config() applies
        self.vars["database"] = database
        self.startup_database = database  # what RESET ALL / DISCARD ALL go back to
        for key, value in startup.items():
            if key in ("user", "database", "replication"):
                continue
            if key == "options":
                self._apply_options(value)
                continue
            try:
                self.set_var(key, value, report=False)
            except WeirError as e:
                self._notices.append(api.Notice(e.sqlstate, e.message, "WARNING"))

    def _apply_options(self, options: str) -> None:
        # `-c name=value` pairs, as psql/libpq pass them
        parts = options.replace("--", "-c ").split()
        for i, p in enumerate(parts):
            if p == "-c" and i + 1 < len(parts) and "=" in parts[i + 1]:
                k, v = parts[i + 1].split("=", 1)
                self.set_var(k, v, report=False)

    # ---- variables -----------------------------------------------------------------
    def get_var(self, name: str) -> str:
        v = lookup_var(name)
        if v.name == "is_superuser":
            return "on" if self.role.superuser else "off"
        if v.name == "session_authorization":
            return self.role.name
        if v.name in self.vars:
            return self.vars[v.name]
        return self.coord.system_var(v.name)

    def set_var(self, name: str, value: str | None, *, report: bool = True, local: bool = False) -> str:
        """SET (value None: RESET) `name` for the session, or with `local` for the explicit
        transaction only (outside one, SET LOCAL changes nothing). Returns the value as SHOW
        gives it. A change made in a transaction is undone if it rolls back, as in PostgreSQL."""
        v = lookup_var(name)
        canonical = normalize_var(name, value, "session")[1] if value is not None else None
        txn = self.txn if self.txn is not None and self.txn.explicit else None
        if local and txn is None:
            return canonical if canonical is not None else self._default_of(v.name)
        if txn is not None:
            txn.saved_vars.setdefault(v.name, self.vars.get(v.name))
            if not local:
                txn.session_vars[v.name] = canonical
        return self._put_var(v.name, canonical, report)

    def _default_of(self, name: str) -> str:
        return self.coord.system_var(name) if name != "database" else self.startup_database

    def _put_var(self, name: str, canonical: str | None, report: bool = True) -> str:
        v = lookup_var(name)
        self.var_version += 1
        if canonical is None and v.name == "database":
            canonical = self.vars[v.name] = self.startup_database  # the connection's, as in PostgreSQL
        elif canonical is None:
            self.vars.pop(v.name, None)
            canonical = self.get_var(v.name)
        else:
            self.vars[v.name] = canonical
        if report and v.report:
            self._param_changes[v.name] = canonical
        return canonical

    def set_config(self, name: str, value: str | None, local: bool) -> str:
        """set_config(name, value, is_local): SET (or SET LOCAL) from a query; returns the new value."""
        settable_var(name, "session")
        return self.set_var(name, value, local=local)

    def end_transaction_vars(self, txn: Transaction, committed: bool) -> None:
        """Undo the transaction's SET LOCALs (and, unless it committed, its SETs)."""
        for name, before in txn.saved_vars.items():
            after = txn.session_vars[name] if committed and name in txn.session_vars else before
            if self.vars.get(name) != after:
                self._put_var(name, after)

    def restore_vars(self, values: dict[str, str | None]) -> None:
        """Put variables back to these values (None: not set), as ROLLBACK TO a savepoint does."""
        for name, value in values.items():
            if self.vars.get(name) != value:
                self._put_var(name, value)

    def discard_vars(self) -> None:
        """DISCARD ALL: every session variable back to its default."""
        changed = [name for name in self.vars if name != "database"]
        self.vars = {"database": self.startup_database}
        self.var_version += 1
        for name in changed:
            if lookup_var(name).report:
                self._param_changes[name] = self.get_var(name)

    def parameter_statuses(self) -> dict[str, str]:
        return {v.name: self.get_var(v.name) for v in VARS if v.report}

    def take_parameter_changes(self) -> dict[str, str]:
        out, self._param_changes = self._param_changes, {}
        return out

    def take_notices(self) -> list[api.Notice]:
        out, self._notices = self._notices, []
        return out

    def notice(self, message: str, sqlstate: str = SqlState.SUCCESSFUL_COMPLETION,
               severity: str = "NOTICE") -> None:
        self._notices.append(api.Notice(sqlstate, message, severity))

    @property
    def user(self) -> str:
        return self.role.name

    @property
    def database(self) -> str:
        return self.get_var("database")

    @property
    def search_path(self) -> list[str]:
        return lookup_var("search_path").parse(self.get_var("search_path"))

    def planning_key(self) -> tuple[Any, ...]:
        """What, besides the text, changes a query's plan for this session (database,
        search_path, cluster, superuser); recomputed only when a variable changes."""
        version = (self.var_version, self.coord.system_var_version, self.role.id, self.role.superuser,
                   self.temp_schema_id)
        if self._planning_key[0] != version:
            # the temporary schema: the same text names another session's own temporary objects
            self._planning_key = (version, (self.database, tuple(self.search_path), self.get_var("cluster"),
                                            self.role.superuser, self.temp_schema_id))
        return self._planning_key[1]

    def context(self, timestamp: int | None = None) -> SessionContext:
        return SessionContext(user=self.user, database=self.database, search_path=self.search_path,
                              connection_id=self.connection_id, timestamp=timestamp,
                              server_started=self.coord.started_at,
                              setting=self.get_var, set_config=self.set_config if self.applying else None,
                              statement_log_access=self.statement_log_access(),
                              existing_schemas=self.existing_schemas, temp_schema_oid=self.temp_schema_oid,
                              visible_objects=lambda: privileges.visible_objects(self))

    def existing_schemas(self) -> list[str]:
        """The search_path's schemas that exist, in order (what current_schemas lists)."""
        out = []
        for name in self.search_path:
            try:
                self.coord.lookup_schema(self.database, name)
            except WeirError:
                continue
            out.append(name)
        return out

    def statement_log_access(self) -> str:
        """What the statement-history views show this session: everything (superuser), every
        row with redacted text (mz_monitor), or its user's own statements."""
        if self.role.superuser:
            return "all"
        gen = self.coord.catalog.generation
        if self._log_access[0] != gen:
            member = self.coord.catalog.is_member("mz_monitor", self.role.name)
            self._log_access = (gen, "redacted" if member else "own")
        return self._log_access[1]

    # ---- transactions --------------------------------------------------------------
    @property
    def transaction_status(self) -> str:
        if self.txn is None or not self.txn.explicit:
            return "I"
        return "E" if self.txn.failed else "T"

    def implicit_txn(self) -> Transaction:
        if self.txn is None:
            self.txn = Transaction(explicit=False)
        return self.txn

    def lifecycle(self, event: str) -> None:
        """A statement-lifecycle event of the running execution (if it is sampled)."""
        if self.execution is not None:
            self.coord.statement_log.lifecycle(self.execution, event)

    def dataflow_ran(self, replica_id: str, name: str) -> None:
        """The running execution ran this dataflow (if it is sampled): a peek's Spark job, or
        the dataflow a CREATE MATERIALIZED VIEW / INDEX installed."""
        if self.execution is not None:
            self.coord.statement_log.dataflow(self.execution, replica_id, name)

    def mark_failed(self) -> None:
        if self.txn is not None:
            if self.txn.explicit:
                self.txn.failed = True
            else:
                self.txn.release()
                self.txn = None

    async def end_implicit_transaction(self) -> None:
        if self.txn is not None and not self.txn.explicit:
            txn, self.txn = self.txn, None
            txn.release()
            if not txn.failed:
                await self.coord.commit_writes(txn.writes)

    # ---- statements ----------------------------------------------------------------
    def split(self, sql: str) -> list[str]:
        return sqlparse.split(sql)

    def first_syntax_error(self, texts: list[str]) -> WeirError | None:
        for text in texts:
            try:
                self.coord.parse_cached(text)
            except WeirError as e:
                if e.sqlstate == SqlState.SYNTAX_ERROR:
                    return e
            except Exception:  # noqa: BLE001 - anything else is reported when the statement runs
                pass
        return None

    def ends_transaction(self, sql: str) -> bool:
        try:
            parsed = self.coord.parse_cached(sql)
        except Exception:  # noqa: BLE001 - not parseable: let prepare report it
            return True
        if isinstance(parsed, st.Empty):
            return True  # an empty query is not refused either
        return savepoints.allowed_when_failed(parsed)

    async def prepare(self, sql: str, param_oids: list[int], name: str = "", *,
                      describe_result: bool = True) -> api.PreparedStatement:
        from weir.adapter import describe
        from weir.adapter.statement_log import PreparedInfo

        stmt = self.coord.parse_cached(sql)
        prepared = await describe.prepare(self, stmt, param_oids, describe_result=describe_result)
        prepared.logging = PreparedInfo(sql, name, stmt.kind)
        return prepared

    async def execute(self, stmt: api.PreparedStatement, params: list[Any], *,
                      extended: bool = False) -> api.ExecuteResult:
        """Execute, recording the execution in the statement log when it is sampled."""
        if isinstance(stmt.plan, st.ExecutePrepared):  # logged as an execution of the PREPAREd one
            from weir.adapter.execute import execute_args

            inner, values = execute_args(self, stmt.plan)
            return await self.execute(inner, values, extended=extended)
        info = stmt.logging
        if info is None:
            return await self._execute(stmt, params)
        slog = self.coord.statement_log
        if self.txn is None or (not self.txn.explicit and not self.txn.writes):
            self.transaction_id += 1
        execution = slog.begin(self, info, (lambda: _param_texts(params, stmt.param_types)) if params else None)
        self.execution = execution
        self.execution_strategy = self.execution_timestamp = None
        try:
            result = await self._execute(stmt, params)
        except WeirError as e:
            status = "canceled" if e.sqlstate == SqlState.QUERY_CANCELED else "error"
            slog.end(execution, status, error=e.message if status == "error" else None,
                     strategy=self.execution_strategy, timestamp=self.execution_timestamp)
            raise
        except asyncio.CancelledError:
            slog.end(execution, "canceled", strategy=self.execution_strategy, timestamp=self.execution_timestamp)
            raise
        except BaseException as e:
            slog.end(execution, "error", error=str(e) or type(e).__name__)
            raise
        finally:
            self.execution = None
        if isinstance(result, (api.Rows, api.CopyOut)):
            if execution is not None:
                result.batches = self._logged_rows(result, result.batches, execution,
                                                   self.execution_strategy, self.execution_timestamp)
        else:
            slog.end(execution, "success", strategy=self.execution_strategy, timestamp=self.execution_timestamp)
        return result

    async def _logged_rows(self, result: api.Rows | api.CopyOut, inner: Any, execution: Any,
                           strategy: str | None, timestamp: int | None) -> Any:
        """The result's rows, ending the logged execution when they are all sent (or fail)."""
        slog = self.coord.statement_log
        rows = 0
        status, error = "success", None
        try:
            async for batch in inner:
                rows += len(batch)
                yield batch
        except WeirError as e:
            status = "canceled" if e.sqlstate == SqlState.QUERY_CANCELED else "error"
            error = e.message
            raise
        except asyncio.CancelledError:
            status = "canceled"
            raise
        except GeneratorExit:  # closed before the end: a portal closed early is a success
            status = "canceled" if self.closing or not isinstance(result, api.Rows) else "success"
            raise
        except BaseException as e:
            status, error = "error", str(e) or type(e).__name__
            raise
        finally:
            slog.end(execution, status, error=error if status == "error" else None, rows=rows,
                     result_size=result.sent_bytes, strategy=strategy, timestamp=timestamp)
            aclose = getattr(inner, "aclose", None)
            if aclose is not None:
                try:
                    await aclose()
                except Exception:  # noqa: BLE001 - the stream is being abandoned
                    pass

    async def _execute(self, stmt: api.PreparedStatement, params: list[Any]) -> api.ExecuteResult:
        from weir.adapter import execute

        self.running = asyncio.current_task()
        parsed: st.Statement = stmt.plan
        if self.txn is not None and self.txn.failed and not savepoints.allowed_when_failed(parsed):
            raise WeirError(SqlState.IN_FAILED_SQL_TRANSACTION,
                            "current transaction is aborted, commands ignored until end of transaction block")
        timeout_ms = lookup_var("statement_timeout").parse(self.get_var("statement_timeout"))
        try:
            if timeout_ms:
                try:
                    return await asyncio.wait_for(execute.execute(self, stmt, params), timeout_ms / 1000)
                except TimeoutError:
                    raise WeirError(SqlState.QUERY_CANCELED,
                                    "canceling statement due to statement timeout") from None
            return await execute.execute(self, stmt, params)
        except WeirError:
            self.mark_failed()
            raise
        except asyncio.CancelledError:
            self.mark_failed()
            raise

    def cancel(self) -> None:
        task = self.running
        if task is not None and not task.done():
            task.cancel()

    async def close(self) -> None:
        from weir.adapter.cursors import close_all

        self.closing = True
        self.cancel()
        if self.txn is not None:
            self.txn.release()
        self.txn = None
        await close_all(self)
        try:
            await temporary.drop_all(self)  # its temporary objects and their shards
        finally:
            self.coord.session_closed(self)


def _param_texts(params: list[Any], types: list[Any]) -> list[str | None] | None:
    """Each bound argument in its text form (statement history's params)."""
    if not params:
        return None
    from weir import codec

    out: list[str | None] = []
    for value, t in zip(params, types, strict=False):
        if value is None:
            out.append(None)
            continue
        try:
            out.append(codec.encode_text(value, t).decode())
        except Exception:  # noqa: BLE001 - any text is better than none
            out.append(str(value))
    return out
