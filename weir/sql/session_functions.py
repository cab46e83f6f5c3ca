"""Session functions (current_user, current_setting, set_config, mz_now(), now(),
current_schemas, version() ...): which calls depend on the session, their types, and their
values for one statement as typed literals, so that the coordinator and a replica agree."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from weir import types as T
from weir.compute.protocol import MZ_NOW_PARAMETER
from weir.errors import SqlState, WeirError
from weir.sql.literals import literal
from weir.types import PgType

VERSION = "PostgreSQL 15.4 on x86_64-pc-linux-gnu (weir 0.1.0, Apache Spark)"


@dataclass
class SessionContext:
    """What session functions evaluate to for one statement."""

    user: str = "materialize"
    database: str = "materialize"
    search_path: list[str] = field(default_factory=lambda: ["public"])
    connection_id: int = 0
    timestamp: int | None = None  # the read/write timestamp chosen for mz_now()
    statement_time: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    server_started: dt.datetime | None = None  # pg_postmaster_start_time(): when `weir serve` started
    setting: Callable[[str], str] | None = None
    # what the statement-history views show: 'all' (superuser), 'redacted' (mz_monitor), 'own'
    statement_log_access: str = "own"
    # the search_path's schemas that exist (current_schema, current_schemas); None: all of them
    existing_schemas: Callable[[], list[str]] | None = None
    # mz_now() is the parameter of the time a dataflow computes (a temporal filter, weir.sql.temporal)
    mz_now_parameter: bool = False
    # mz_visible_objects(): the ids of the objects whose statuses the session may see; None: all
    visible_objects: Callable[[], list[str] | None] | None = None
    # set_config(name, value, is_local): sets and returns the canonical value; None when the
    # statement is only being described (set_config then changes nothing)
    set_config: Callable[[str, str | None, bool], str] | None = None
    temp_schema_oid: int = 0  # pg_my_temp_schema(): the session's mz_temp, 0 while it has none

    def schemas(self) -> list[str]:
        return self.search_path if self.existing_schemas is None else self.existing_schemas()


# Searched before the search_path, as in Materialize (current_schemas(true) lists them).
IMPLICIT_SCHEMAS = ("mz_catalog", "pg_catalog")


_TEXT_FUNCTIONS = ("mz_statement_log_access",)


# pg_catalog.f(...) of a session function is f(...) (psql, pgjdbc and SQLAlchemy qualify them)
_QUALIFIED: dict[str, Callable[[exp.Anonymous], exp.Expression]] = {
    "version": lambda a: exp.CurrentVersion(),
    "current_database": lambda a: exp.CurrentDatabase(),
    "current_schema": lambda a: exp.CurrentSchema(),
    "current_schemas": lambda a: exp.CurrentSchemas(this=a.expressions[0] if a.expressions else None),
    "current_setting": lambda a: a, "set_config": lambda a: a, "pg_backend_pid": lambda a: a,
    "pg_my_temp_schema": lambda a: a,
    "pg_postmaster_start_time": lambda a: a,
    "now": lambda a: a, "mz_now": lambda a: a,
}


def _unqualified(node: exp.Expression) -> exp.Expression:
    """`pg_catalog.f(...)` / `mz_catalog.f(...)` of a session function as the plain call."""
    if isinstance(node, exp.Dot) and isinstance(node.this, exp.Identifier) \
            and node.this.name.lower() in ("pg_catalog", "mz_catalog") and isinstance(node.expression, exp.Anonymous):
        make = _QUALIFIED.get(node.expression.name.lower())
        if make is not None and not (node.expression.name.lower() in ("version", "current_database")
                                     and node.expression.expressions):
            return make(node.expression)
    return node


def session_function_type(node: exp.Expression) -> PgType | None:
    """The type of a session-dependent function call (its value comes from the session
    or the statement, not from the data), or None if `node` is not one."""
    node = _unqualified(node)
    if isinstance(node, (exp.CurrentVersion, exp.CurrentUser, exp.SessionUser, exp.CurrentDatabase,
                         exp.CurrentSchema, exp.CurrentCatalog)):
        return T.TEXT
    if isinstance(node, exp.Column) and not node.table and node.name.lower() in ("current_role", "user") \
            and not (isinstance(node.this, exp.Identifier) and node.this.quoted):
        return T.TEXT
    if isinstance(node, exp.CurrentTimestamp):
        return T.TIMESTAMPTZ
    if isinstance(node, exp.CurrentSchemas):
        return T.TEXT_ARRAY
    if isinstance(node, exp.Anonymous):
        fname = node.name.lower()
        if fname == "mz_visible_objects":
            return T.TEXT_ARRAY
        if fname == "mz_now":
            return T.MZ_TIMESTAMP
        if fname == "now":
            return T.TIMESTAMPTZ
        if fname in _TEXT_FUNCTIONS:
            return T.TEXT
        if fname == "pg_backend_pid":
            return T.INT4
        if fname == "pg_my_temp_schema" and not node.expressions:
            return T.BY_NAME["oid"]
        if fname == "pg_postmaster_start_time" and not node.expressions:
            return T.TIMESTAMPTZ
        if fname == "current_setting" and len(node.expressions) in (1, 2):
            return T.TEXT
        if fname == "set_config" and len(node.expressions) == 3:
            return T.TEXT
    return None


def _constant_arg(fname: str, e: exp.Expression) -> Any:
    """The value of a constant argument of current_setting / set_config: str, bool or None."""
    while isinstance(e, (exp.Paren, exp.Cast)):
        e = e.this
    if isinstance(e, exp.Literal):
        return e.this
    if isinstance(e, exp.Null):
        return None
    if isinstance(e, exp.Boolean):
        return bool(e.this)
    raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"{fname}() takes constant arguments here")


def _flag(fname: str, value: Any) -> bool:
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("t", "true", "y", "yes", "on", "1"):
            return True
        if low in ("f", "false", "n", "no", "off", "0"):
            return False
        raise WeirError(SqlState.INVALID_TEXT_REPRESENTATION, f'invalid input syntax for type boolean: "{value}"')
    return bool(value)


def _setting_value(node: exp.Anonymous, ctx: SessionContext) -> exp.Expression:
    """current_setting(name [, missing_ok]) and set_config(name, value, is_local), as
    PostgreSQL's: NULL for a NULL name or (missing_ok) an unknown one; set_config's NULL
    value resets the parameter, its NULL is_local is false."""
    fname = node.name.lower()
    if ctx.setting is None:
        return node
    args = [_constant_arg(fname, a) for a in node.expressions]
    if fname == "current_setting":
        name = args[0]
        missing_ok = len(args) == 2 and args[1] is not None and _flag(fname, args[1])
        if name is None or (len(args) == 2 and args[1] is None):
            return literal(None, T.TEXT)
        try:
            return exp.Literal.string(ctx.setting(str(name)))
        except WeirError as e:
            if missing_ok and e.sqlstate == SqlState.UNDEFINED_OBJECT:
                return literal(None, T.TEXT)
            raise
    name, value, local = args
    if name is None:
        raise WeirError(SqlState.NULL_VALUE_NOT_ALLOWED, "SET requires parameter name")
    is_local = local is not None and _flag(fname, local)
    if ctx.set_config is None:  # described, not run: nothing changes
        return exp.Literal.string("" if value is None else str(value))
    return exp.Literal.string(ctx.set_config(str(name), None if value is None else str(value), is_local))


def session_value(node: exp.Expression, ctx: SessionContext) -> exp.Expression:
    node = _unqualified(node)
    if isinstance(node, exp.CurrentCatalog):
        return exp.Literal.string(ctx.database)
    if isinstance(node, exp.CurrentVersion):
        return exp.Literal.string(VERSION)
    if isinstance(node, (exp.CurrentUser, exp.SessionUser, exp.Column)):
        return exp.Literal.string(ctx.user)
    if isinstance(node, exp.CurrentDatabase):
        return exp.Literal.string(ctx.database)
    if isinstance(node, exp.CurrentSchema):
        first = ctx.schemas()[:1]
        return exp.Literal.string(first[0]) if first else literal(None, T.TEXT)
    if isinstance(node, exp.CurrentTimestamp):
        return literal(ctx.statement_time, T.TIMESTAMPTZ)
    if isinstance(node, exp.CurrentSchemas):
        return literal(_current_schemas(node, ctx), T.TEXT_ARRAY)
    fname = node.name.lower()
    if fname == "mz_now" and ctx.mz_now_parameter:
        return exp.Cast(this=exp.Placeholder(this=MZ_NOW_PARAMETER), to=exp.DataType.build("BIGINT"))
    if fname == "mz_now":
        if ctx.timestamp is None:
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "mz_now() is not available here")
        return literal(ctx.timestamp, T.MZ_TIMESTAMP)
    if fname == "now":
        return literal(ctx.statement_time, T.TIMESTAMPTZ)
    if fname == "mz_statement_log_access":
        return exp.Literal.string(ctx.statement_log_access)
    if fname == "mz_visible_objects":
        return literal(ctx.visible_objects() if ctx.visible_objects is not None else None, T.TEXT_ARRAY)
    if fname == "pg_backend_pid":
        return literal(ctx.connection_id, T.INT4)
    if fname == "pg_my_temp_schema":
        return literal(ctx.temp_schema_oid, T.BY_NAME["oid"])
    if fname == "pg_postmaster_start_time":
        return literal(ctx.server_started or ctx.statement_time, T.TIMESTAMPTZ)
    if fname in ("current_setting", "set_config"):
        return _setting_value(node, ctx)  # type: ignore[arg-type]
    return node


def _current_schemas(node: exp.CurrentSchemas, ctx: SessionContext) -> list[str] | None:
    """current_schemas(include_implicit): the search path's existing schemas, after the
    implicitly searched ones when asked for (PostgreSQL leaves out those already listed)."""
    arg = node.this
    while isinstance(arg, (exp.Paren, exp.Cast)):
        arg = arg.this
    if isinstance(arg, exp.Null):
        return None
    if not isinstance(arg, exp.Boolean):
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        "current_schemas() takes a boolean constant (true or false) here")
    schemas = ctx.schemas()
    implicit = [s for s in IMPLICIT_SCHEMAS if s not in schemas] if arg.this else []
    return implicit + schemas


def substitute_session_functions(expr: exp.Expression, ctx: SessionContext) -> exp.Expression:
    """Replace session-dependent functions by literals, so coordinator and replica agree."""

    def visit(node: exp.Expression) -> exp.Expression:
        return node if session_function_type(node) is None else session_value(node, ctx)

    return expr.transform(visit)


def mark_session_functions(expr: exp.Expression) -> tuple[exp.Expression, list[exp.Expression]]:
    """Replace each session-dependent function by a typed slot `CAST(:weir_sK AS type)`
    (see weir.sql.plan.SparkTemplate), returning the functions in slot order: a plan
    renders once and fills the slots with each execution's values."""
    calls: list[exp.Expression] = []

    def visit(node: exp.Expression) -> exp.Expression:
        t = session_function_type(node)
        if t is None:
            return node
        calls.append(node.copy())
        # mz_timestamp keeps its name (Spark's BIGINT when rendered): comparisons with
        # timestamps compare milliseconds (weir.sql.comparisons.comparison)
        to = (exp.DataType.build("mz_timestamp", udt=True) if t.oid == T.MZ_TIMESTAMP.oid
              else exp.DataType.build(t.spark_ddl, dialect="spark"))
        return exp.Cast(this=exp.Placeholder(this=f"weir_s{len(calls)}"), to=to)

    out = expr.transform(visit)
    return out, calls


def uses_session(expr: exp.Expression) -> bool:
    return any(session_function_type(n) is not None for n in expr.walk())
