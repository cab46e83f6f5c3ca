"""Object names computed at run time, as PostgreSQL reads them: a text value cast to
regclass or regnamespace (`format('%I.%I', s, t)::regclass`, Metabase's field sync;
`quote_ident(s)::regnamespace`) or passed to has_table/schema/database_privilege
(`'"' || schemaname || '"."' || tablename || '"'`, Metabase's table privileges). A
constant name is resolved when the query is planned (weir.sql.catalog_oid_casts); a
computed one is parsed per row here, in SQL: a relation name as PostgreSQL parses an
identifier (`schema.name`, each part unquoted and folded to lower case or double-quoted
with "" for a quote), looked up on the search path when unqualified, a schema or a
database name as it is written. A name that names nothing fails as PostgreSQL fails
(42P01, 3F000, 3D000), with the name in the message.

Every lookup is one subquery correlated by equalities only (Spark takes no other), and the
error is raised outside it (an outer reference may appear in a subquery's WHERE only)."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from weir import types as T
from weir.errors import SqlState, runtime_marker
from weir.sql.catalog_definitions import quote_ident_sql

# a part of a name: double-quoted ("" for a quote inside) or unquoted (no quote, no dot)
_PART = '"(?:[^"]|"")*"|[^".]*'
_SCHEMA_PART = f"^({_PART})\\.(?:{_PART})$"
_NAME_PART = f"^(?:(?:{_PART})\\.)?({_PART})$"

# Calls and operators whose value is text (beside string literals and casts to text)
_TEXT_NODES = (exp.DPipe, exp.Concat, exp.ConcatWs, exp.Format, exp.Replace, exp.Lower, exp.Upper,
               exp.Trim, exp.Substring)
_TEXT_CALLS = frozenset({"quote_ident", "format", "concat", "concat_ws", "btrim", "ltrim", "rtrim",
                         "lower", "upper", "replace", "substr", "substring"})
_TEXT_OIDS = frozenset({T.TEXT.oid, T.VARCHAR.oid, T.BPCHAR.oid, 19})  # 19: name

# every relation under its schema's name, and (schema '') those the search path makes
# visible unqualified: one equality per part finds a name either way
_RELATIONS = ("(SELECT weir_rn.nspname AS weir_schema, weir_rc.relname AS weir_name, weir_rc.oid AS weir_oid, "
              "weir_rn.nspname AS weir_nspname FROM pg_catalog.pg_class weir_rc JOIN pg_catalog.pg_namespace weir_rn "
              "ON weir_rn.oid = weir_rc.relnamespace UNION ALL "
              "SELECT '', weir_rc.relname, weir_rc.oid, weir_rn.nspname FROM pg_catalog.pg_class weir_rc "
              "JOIN pg_catalog.pg_namespace weir_rn ON weir_rn.oid = weir_rc.relnamespace "
              "WHERE weir_rn.nspname = ANY (current_schemas(true)))")


def text_valued(arg: exp.Expression, column_type: Callable[[exp.Column], T.PgType | None] | None) -> bool:
    """Whether an argument is text (a name) rather than an oid, as PostgreSQL's choice of
    the function's text or oid form would have it."""
    while isinstance(arg, exp.Paren):
        arg = arg.this
    if isinstance(arg, exp.Literal):
        return arg.is_string
    if isinstance(arg, _TEXT_NODES):
        return True
    if isinstance(arg, exp.Anonymous):
        return arg.name.lower() in _TEXT_CALLS
    if isinstance(arg, exp.Cast):
        to = arg.to
        return isinstance(to, exp.DataType) and to.this in exp.DataType.TEXT_TYPES
    if isinstance(arg, exp.Column) and column_type is not None:
        found = column_type(arg)
        return found is not None and found.oid in _TEXT_OIDS
    return False


def _identifier(token: str) -> str:
    """A part of a name as PostgreSQL reads it: unquoted, folded to lower case; quoted, as
    written with "" for a quote."""
    return (f"CASE WHEN {token} LIKE '\"%' THEN replace(substring({token} FROM '^\"(.*)\"$'), '\"\"', '\"') "
            f"ELSE lower({token}) END")


def _parts(text: str) -> tuple[str, str]:
    """SQL of a relation name's schema part ('' when unqualified) and name part."""
    schema = f"substring({text} FROM '{_SCHEMA_PART}')"
    name = f"substring({text} FROM '{_NAME_PART}')"
    return f"coalesce({_identifier(schema)}, '')", f"coalesce({_identifier(name)}, '')"


def _failing(text: str, state: str, what: str) -> str:
    """SQL raising PostgreSQL's error for a name that names nothing, the name in it."""
    marker = runtime_marker(state, f'{what} "').replace("'", "''")
    return f"raise_error('{marker}' || {text} || '\" does not exist')"


def strict(text: str, lookup: str, failing: str) -> str:
    """NULL for NULL (the functions are strict), else the lookup's value or the error."""
    return f"CASE WHEN {text} IS NULL THEN NULL ELSE coalesce({lookup}, {failing}) END"


def relation(text: str, *, output_name: bool) -> str:
    """A computed text cast to regclass: the relation's oid, or (`output_name`) its name as
    regclass prints it, schema-qualified when its schema is not on the search path."""
    if output_name:
        rel = quote_ident_sql("weir_v.weir_name")
        value = (f"CASE WHEN weir_v.weir_nspname = ANY (current_schemas(true)) THEN {rel} "
                 f"ELSE {quote_ident_sql('weir_v.weir_nspname')} || '.' || {rel} END")
    else:
        value = "weir_v.weir_oid"
    lookup = f"(SELECT max({value}) FROM {_RELATIONS} weir_v WHERE {_named(text)})"
    return strict(text, lookup, _failing(text, SqlState.UNDEFINED_TABLE, "relation"))


def schema(text: str, *, output_name: bool) -> str:
    """A computed text cast to regnamespace: the schema's oid (or its name)."""
    _, name = _parts(text)
    value = "weir_n.nspname" if output_name else "weir_n.oid"
    lookup = f"(SELECT max({value}) FROM pg_catalog.pg_namespace weir_n WHERE weir_n.nspname = {name})"
    return strict(text, lookup, _failing(text, SqlState.INVALID_SCHEMA_NAME, "schema"))


def _named(text: str) -> str:
    """The condition that finds the relation (`weir_v`) a computed text names."""
    schema_sql, name = _parts(text)
    return f"weir_v.weir_schema = {schema_sql} AND weir_v.weir_name = {name}"


def description(text: str, subid: str, catalog: str | None) -> str:
    """col_description / obj_description of a relation named by a computed text
    (`col_description(format('%I.%I', s, t)::regclass::oid, n)`, Metabase's field sync):
    the lookup and the description in one subquery, since a subquery in another's WHERE
    could not refer to the row. `catalog`: the classoid's catalog name (SQL), if given."""
    of_catalog = (" JOIN pg_catalog.pg_class weir_dc ON weir_dc.oid = weir_d.classoid JOIN pg_catalog.pg_namespace "
                  "weir_dn ON weir_dn.oid = weir_dc.relnamespace" if catalog is not None else "")
    where_catalog = f" AND weir_dc.relname = {catalog} AND weir_dn.nspname = 'pg_catalog'" if catalog is not None else ""
    found = (f"(SELECT max(weir_d.description) FROM {_RELATIONS} weir_v JOIN pg_catalog.pg_description weir_d "
             f"ON weir_d.objoid = weir_v.weir_oid{of_catalog} WHERE {_named(text)} AND weir_d.objsubid = {subid}"
             f"{where_catalog})")
    exists = f"(SELECT max(weir_v.weir_oid) FROM {_RELATIONS} weir_v WHERE {_named(text)})"
    failing = _failing(text, SqlState.UNDEFINED_TABLE, "relation")
    return f"CASE WHEN {text} IS NULL THEN NULL WHEN {exists} IS NULL THEN {failing} ELSE {found} END"


def privilege_source(table: str, text: str) -> tuple[str, str]:
    """has_*_privilege of an object named by a computed text: the FROM item and the WHERE
    condition that find the object (`weir_o`) by that name."""
    if table == "pg_class":
        return (f"{_RELATIONS} weir_v JOIN pg_catalog.pg_class weir_o ON weir_o.oid = weir_v.weir_oid",
                _named(text))
    column = {"pg_namespace": "nspname", "pg_database": "datname"}[table]
    return f"pg_catalog.{table} weir_o", f"weir_o.{column} = {text}"


def privilege_failing(table: str, text: str) -> str:
    """The error for has_*_privilege of a name that names nothing."""
    state, what = {"pg_class": (SqlState.UNDEFINED_TABLE, "relation"),
                   "pg_namespace": (SqlState.INVALID_SCHEMA_NAME, "schema"),
                   "pg_database": (SqlState.INVALID_CATALOG_NAME, "database")}[table]
    return _failing(text, state, what)

