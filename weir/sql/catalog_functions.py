"""PostgreSQL's catalog functions and object-identifier casts, as plain SQL over the
pg_catalog relations (issue 14): what psql's \\d commands and other tools' catalog queries
call. Each call is rewritten, before name resolution, into a subquery or expression over
pg_catalog.pg_class, pg_namespace, pg_roles ... so those relations are resolved like any
others and the query runs the same way on a Spark replica and in process
(weir.sql.in_process). Session-dependent answers (the search path) come from the session
functions (current_schemas(true)), filled in per execution.

- pg_get_userbyid(oid): the role's name (PostgreSQL's "unknown (OID=n)" for none)
- pg_table_is_visible / pg_type_is_visible / pg_function_is_visible(oid): whether the
  object's schema is on the search path (implicit schemas included)
- format_type(type oid, typmod): the type's SQL name, with its modifier
- pg_get_indexdef / pg_get_viewdef / pg_get_constraintdef / pg_get_expr
- obj_description / col_description / shobj_description: from pg_description /
  pg_shdescription
- pg_encoding_to_char, quote_ident, pg_relation_is_publishable,
  pg_get_statisticsobjdef_columns, pg_get_function_result
- has_table_privilege / has_schema_privilege / has_database_privilege (and
  has_any_column_privilege, the table's: weir has no column privileges), from the objects'
  ACLs (pg_class.relacl, pg_namespace.nspacl, pg_database.datacl) and pg_roles; every role
  may CONNECT
- casts to regclass / regtype / regproc / regnamespace: from a string, the object's oid
  looked up by name (on the search path unless qualified); of an oid, the oid itself where
  it is compared or joined, and the object's name where it is output or cast to text; a
  name computed per row (a text expression or column) is looked up per row
  (weir.sql.catalog_names), as are has_*_privilege's and col/obj_description's
- array_upper / array_lower: from 1, but from 0 for int2vector and oidvector columns
- `x OPERATOR(pg_catalog.~) y` as `x ~ y`; `COLLATE pg_catalog.default` / "default"
  (the only collation that means what PostgreSQL's means) dropped
- `pg_catalog.` before a function or type name dropped
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import sqlglot
from sqlglot import exp

from weir.errors import SqlState, WeirError, runtime_marker
from weir.sql import catalog_absent, catalog_arrays, catalog_names
from weir.sql.catalog_definitions import TEMPLATES as DEFINITIONS
from weir.sql.catalog_definitions import indexdef_sql, quote_ident_sql
from weir.types import BY_OID, ZERO_BASED_ARRAYS, PgType, parse_type

_IsText = Callable[[exp.Expression], bool]  # whether an argument is a name (text), not an oid

_ARG = "__weir_arg"

# format_type()'s base names, for every type pg_type lists (weir's, and the vector and
# pseudo-types pg_catalog's columns and pg_proc's signatures use; a unit test checks them
# against weir.catalog.pg_types.format_name, which weir.sql may not import)
_NOT_ARRAYS = {22: "int2vector", 30: "oidvector", 1006: "int2vector[]", 1013: "oidvector[]"}
_PSEUDO = {2206: "regtype", 2276: '"any"', 2277: "anyarray", 2283: "anyelement", 2776: "anynonarray",
           5077: "anycompatible", 5078: "anycompatiblearray"}


def _format_name(oid: int) -> str:
    if oid in _NOT_ARRAYS:
        return _NOT_ARRAYS[oid]
    t = BY_OID[oid]
    if t.element is not None:
        return _format_name(t.element.oid) + "[]"
    return {1114: "timestamp without time zone", 1042: "character"}.get(oid, t.name)


_TYPE_NAMES: dict[int, str] = {**{oid: _format_name(oid) for oid in BY_OID}, **_PSEUDO}
_WITH_LENGTH = {1043: "character varying", 1042: "character"}
_WITH_PRECISION = {1114: ("timestamp", " without time zone"), 1184: ("timestamp", " with time zone")}

_VISIBLE = {
    "pg_table_is_visible": ("pg_class", "relnamespace"),
    "pg_type_is_visible": ("pg_type", "typnamespace"),
    "pg_function_is_visible": ("pg_proc", "pronamespace"),
    "pg_collation_is_visible": ("pg_collation", "collnamespace"),
}

_ROLE = "(SELECT max(weir_r.rolname) FROM pg_catalog.pg_roles weir_r WHERE weir_r.oid = {0})"

_TEMPLATES: dict[tuple[str, int], str] = {
    **DEFINITIONS,  # pg_get_viewdef, pg_get_constraintdef, pg_get_indexdef
    **catalog_absent.TEMPLATES,  # partitions, rules, tablespaces, sizes weir lacks
    ("pg_get_userbyid", 1): "coalesce(" + _ROLE + ", 'unknown (OID=' || CAST({0} AS text) || ')')",
    ("pg_get_expr", 2): "CAST({0} AS text)",
    ("pg_get_expr", 3): "CAST({0} AS text)",
    ("obj_description", 1): "(SELECT max(weir_d.description) FROM pg_catalog.pg_description weir_d "
                            "WHERE weir_d.objoid = {0} AND weir_d.objsubid = 0)",
    ("obj_description", 2): "(SELECT max(weir_d.description) FROM pg_catalog.pg_description weir_d "
                            "JOIN pg_catalog.pg_class weir_c ON weir_c.oid = weir_d.classoid "
                            "JOIN pg_catalog.pg_namespace weir_n ON weir_n.oid = weir_c.relnamespace "
                            "WHERE weir_d.objoid = {0} AND weir_d.objsubid = 0 AND weir_c.relname = {1} "
                            "AND weir_n.nspname = 'pg_catalog')",
    ("col_description", 2): "(SELECT max(weir_d.description) FROM pg_catalog.pg_description weir_d "
                            "JOIN pg_catalog.pg_class weir_c ON weir_c.oid = weir_d.classoid "
                            "JOIN pg_catalog.pg_namespace weir_n ON weir_n.oid = weir_c.relnamespace "
                            "WHERE weir_d.objoid = {0} AND weir_d.objsubid = {1} AND weir_c.relname = 'pg_class' "
                            "AND weir_n.nspname = 'pg_catalog')",
    ("shobj_description", 2): "(SELECT max(weir_d.description) FROM pg_catalog.pg_shdescription weir_d "
                              "JOIN pg_catalog.pg_class weir_c ON weir_c.oid = weir_d.classoid "
                              "JOIN pg_catalog.pg_namespace weir_n ON weir_n.oid = weir_c.relnamespace "
                              "WHERE weir_d.objoid = {0} AND weir_c.relname = {1} AND weir_n.nspname = 'pg_catalog')",
    # PostgreSQL's names of the encodings weir has (UTF8 only); '' for any other number
    ("pg_encoding_to_char", 1): "CASE WHEN {0} IS NULL THEN CAST(NULL AS text) "
                                "WHEN {0} = 6 THEN 'UTF8' ELSE '' END",
    # weir has no publications: nothing is published, so nothing is publishable either
    ("pg_relation_is_publishable", 1): "(SELECT max(false) FROM pg_catalog.pg_class weir_c WHERE weir_c.oid = {0})",
    # weir has no sequences: no column owns one
    ("pg_get_serial_sequence", 2): "CAST(NULL AS text)",
    # weir has no extended statistics objects
    ("pg_get_statisticsobjdef_columns", 1): "CAST(NULL AS text)",
    ("pg_get_function_result", 1): "(SELECT max(" + "{F}" + ") FROM pg_catalog.pg_proc weir_p WHERE weir_p.oid = {0})",
}

# has_*_privilege: the privilege letters of PostgreSQL's privilege names
_LETTERS = {"select": "r", "insert": "a", "update": "w", "delete": "d", "truncate": "D", "references": "x",
            "trigger": "t", "usage": "U", "create": "C", "connect": "c", "temporary": "T", "temp": "T"}
_PRIVILEGE_OBJECTS = {
    "has_table_privilege": ("pg_class", "relname", "relowner", "relacl", "relnamespace"),
    "has_schema_privilege": ("pg_namespace", "nspname", "nspowner", "nspacl", None),
    "has_database_privilege": ("pg_database", "datname", "datdba", "datacl", None),
}


def _fill(template: str, args: list[exp.Expression]) -> exp.Expression:
    tree = _template_tree(template.format(*[f"{_ARG}{k}" for k in range(len(args))], F="{F}")).copy()

    def put(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not node.table and node.name.startswith(_ARG):
            return args[int(node.name.removeprefix(_ARG))].copy()
        return node

    return tree.transform(put, copy=False)  # a copy already


@functools.lru_cache(maxsize=256)
def _template_tree(sql: str) -> exp.Expression:
    """A template parsed once (copied for each use: parsing it was a tenth of planning a
    catalog query)."""
    tree = sqlglot.parse_one(sql, read="postgres")
    for call in tree.find_all(exp.Anonymous):  # the template's own errors (not the arguments')
        if call.name.lower() == "raise_error":
            call.meta["weir_literal"] = True  # weir's own Spark call: weir.sql.functions lets it pass
    return tree


def _parse(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read="postgres")


def _q(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def format_type_sql(t: str, m: str | None, unknown: str = "'???'") -> str:
    """format_type(t, m) as a CASE over weir's types (pg_type's rows are weir's types); oid 0
    is '-' and an oid of no type `unknown` (format_type's '???', regtype's the number)."""
    base = " ".join(f"WHEN {oid} THEN {_q(name)}" for oid, name in _TYPE_NAMES.items())
    base_case = f"CASE {t} WHEN 0 THEN '-' {base} ELSE {unknown} END"
    if m is None:
        return f"CASE WHEN {t} IS NULL THEN NULL ELSE {base_case} END"
    mods = [f"WHEN {t} = {oid} THEN {_q(name + '(')} || CAST({m} - 4 AS text) || ')'"
            for oid, name in _WITH_LENGTH.items()]
    mods += [f"WHEN {t} = {oid} THEN {_q(a + '(')} || CAST({m} AS text) || {_q(')' + b)}"
             for oid, (a, b) in _WITH_PRECISION.items()]
    mods.append(f"WHEN {t} = 1700 THEN 'numeric(' || CAST(({m} - 4) / 65536 AS text) || ',' || "
                f"CAST(({m} - 4) % 65536 AS text) || ')'")
    return (f"CASE WHEN {t} IS NULL THEN NULL WHEN {m} IS NULL OR {m} < 0 THEN {base_case} "
            f"{' '.join(mods)} ELSE {base_case} END")


_MAX_ARGS = 4  # weir's functions take at most 3 arguments


def _function_arguments() -> str:
    """pg_get_function_arguments(oid): the argument types, as format_type names them
    (weir's functions have no argument names or defaults)."""
    names = ", ".join(f"CAST(CASE WHEN weir_p.pronargs >= {k} THEN {format_type_sql(f'weir_p.proargtypes[{k}]', None)} "
                      "END AS text)" for k in range(1, _MAX_ARGS + 1))
    return (f"(SELECT max(CASE WHEN weir_p.pronargs > {_MAX_ARGS} THEN NULL ELSE concat_ws(', ', {names}) END) "
            "FROM pg_catalog.pg_proc weir_p WHERE weir_p.oid = {0})")


def _visible(name: str, arg: exp.Expression) -> exp.Expression:
    table, column = _VISIBLE[name]
    query = _parse(f"SELECT weir_o.oid FROM pg_catalog.{table} weir_o JOIN pg_catalog.pg_namespace weir_n "
                   f"ON weir_n.oid = weir_o.{column} WHERE weir_n.nspname = ANY (current_schemas(false)) "
                   "OR weir_n.nspname = 'pg_catalog' OR weir_n.oid = pg_my_temp_schema()")
    return exp.Paren(this=exp.In(this=arg.copy(), query=exp.Subquery(this=query)))


def _relation_oid(text: str) -> exp.Expression:
    """'name' or 'schema.name' as regclass: the relation's oid (the search path's schemas for
    an unqualified name)."""
    schema, name = _split_name(text)
    lookup = ("(SELECT max(weir_c.oid) FROM pg_catalog.pg_class weir_c JOIN pg_catalog.pg_namespace weir_n "
              f"ON weir_n.oid = weir_c.relnamespace WHERE weir_c.relname = {_q(name)} AND {{}})")
    temp = lookup.format("weir_n.oid = pg_my_temp_schema()")  # the session's own temporary schema
    if schema in ("mz_temp", "pg_temp"):
        return _parse(temp)
    if schema:
        return _parse(lookup.format(f"weir_n.nspname = {_q(schema)}"))
    # searched first, as in PostgreSQL
    return _parse(f"coalesce({temp}, {lookup.format('weir_n.nspname = ANY (current_schemas(true))')})")


def _split_name(text: str) -> tuple[str | None, str]:
    parts = []
    for part in exp.to_table(text, dialect="postgres").parts:
        parts.append(part.name if isinstance(part, exp.Identifier) and part.quoted else part.name.lower())
    return (parts[-2] if len(parts) > 1 else None), parts[-1]


def _relation_name(arg: str) -> str:
    """An oid as regclass output: the relation's name, schema-qualified when its schema is
    not on the search path; the number when there is no such relation."""
    rel, nsp = quote_ident_sql("weir_c.relname"), quote_ident_sql("weir_n.nspname")
    return (f"coalesce((SELECT max(CASE WHEN weir_n.nspname = ANY (current_schemas(true)) "
            f"OR weir_n.oid = pg_my_temp_schema() THEN {rel} "
            f"ELSE {nsp} || '.' || {rel} END) FROM pg_catalog.pg_class weir_c JOIN pg_catalog.pg_namespace weir_n "
            f"ON weir_n.oid = weir_c.relnamespace WHERE weir_c.oid = {arg}), CAST({arg} AS text))")


def _simple_name(table: str, column: str, arg: str) -> str:
    return (f"coalesce((SELECT max(CAST(weir_o.{column} AS text)) FROM pg_catalog.{table} weir_o "
            f"WHERE weir_o.oid = {arg}), CAST({arg} AS text))")


_OID_TYPES = ("regclass", "regtype", "regproc", "regprocedure", "regnamespace", "regrole")


def _oid_type(to: exp.Expression) -> str | None:
    """The reg* type a cast is to, or None."""
    if isinstance(to, exp.ObjectIdentifier):
        name = to.name.lower()
    elif isinstance(to, exp.DataType) and to.this == exp.DataType.Type.USERDEFINED:
        kind = to.args.get("kind")
        name = (kind.name if isinstance(kind, exp.Dot) else str(kind or "")).lower()
    else:
        return None
    return name if name in _OID_TYPES else None


def _outputs_name(cast: exp.Cast) -> bool:
    """Whether a reg* value is output (a projection, an ORDER BY key) or cast to text,
    rather than compared as an oid."""
    parent = cast.parent
    while isinstance(parent, exp.Paren):
        parent = parent.parent
    if isinstance(parent, exp.Cast):  # to text: the name; to oid, an integer or another reg*: the oid
        to = parent.to
        numeric = isinstance(to, exp.DataType) and to.this in exp.DataType.INTEGER_TYPES
        return _oid_type(to) is None and not numeric and to.sql().lower() != "oid"
    if isinstance(parent, (exp.Alias, exp.Ordered)):
        return True
    return isinstance(parent, exp.Select) and cast.arg_key == "expressions"


def _reg_cast(cast: exp.Cast, kind: str, is_text: _IsText) -> exp.Expression:
    out = _reg_value(cast, kind, is_text)
    # PostgreSQL names the column after what is cast (a column's or call's name), else the type
    arg = cast.this
    out.meta["weir_output_name"] = (arg.name if isinstance(arg, exp.Column)
                                    else arg.meta.get("weir_output_name") or kind)
    if isinstance(arg, (exp.Column, exp.Func)) and not isinstance(arg, exp.Cast):
        out.meta["weir_named"] = True  # a cast around it keeps the name
    return out


# PostgreSQL's regproc columns: weir stores a function's name in them (its text output)
_REGPROC_COLUMNS = frozenset({"typinput", "typoutput", "typreceive", "typsend", "typmodin", "typmodout",
                              "typanalyze", "typsubscript", "amhandler", "prosupport", "rngcanonical",
                              "rngsubdiff"})


def _compared_with_regproc_column(cast: exp.Cast) -> bool:
    """`typinput = 'array_in'::regproc` (pgjdbc's test for an array type): a comparison
    with a column weir keeps function names in."""
    parent = cast.parent
    if not isinstance(parent, (exp.EQ, exp.NEQ)):
        return False
    other = parent.expression if parent.this is cast else parent.this
    return isinstance(other, exp.Column) and other.name.lower() in _REGPROC_COLUMNS


def _reg_value(cast: exp.Cast, kind: str, is_text: _IsText) -> exp.Expression:
    arg = cast.this
    if kind == "regproc" and isinstance(arg, exp.Literal) and arg.is_string and _compared_with_regproc_column(cast):
        return exp.Literal.string(_split_name(arg.this)[1])
    if isinstance(arg, exp.Literal) and arg.is_string:
        oid = _reg_literal(arg.this, kind)
        if not _outputs_name(cast):
            return oid
        arg = oid
    elif is_text(arg):  # a name computed per row
        if kind == "regclass":
            return _fill(catalog_names.relation("{0}", output_name=_outputs_name(cast)), [arg])
        if kind == "regnamespace":
            return _fill(catalog_names.schema("{0}", output_name=_outputs_name(cast)), [arg])
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"a computed text cast to {kind} is not supported")
    elif not _outputs_name(cast):
        return arg.copy()
    return _fill(_name_template(kind), [arg])


def _name_template(kind: str) -> str:
    if kind == "regclass":
        return _relation_name("{0}")
    if kind == "regtype":
        return format_type_sql("{0}", None, "CAST({0} AS text)")
    if kind == "regnamespace":
        return _simple_name("pg_namespace", "nspname", "{0}")
    if kind == "regrole":
        return _simple_name("pg_roles", "rolname", "{0}")
    return _simple_name("pg_proc", "proname", "{0}")


def _reg_literal(text: str, kind: str, strict: bool = True) -> exp.Expression:
    """A name as a reg* value: the object's oid. PostgreSQL resolves the name when it plans
    the query and fails when there is no such object (`strict`); to_regclass and friends
    answer NULL instead."""
    if kind == "regtype":
        try:
            return exp.Literal.number(parse_type(text).oid)
        except Exception:  # noqa: BLE001 - PostgreSQL's message
            raise WeirError(SqlState.UNDEFINED_OBJECT, f'type "{text}" does not exist') from None
    if kind == "regclass":
        oid, error = _relation_oid(text), (SqlState.UNDEFINED_TABLE, f'relation "{text}" does not exist')
    elif kind == "regnamespace":
        oid = _parse(f"(SELECT max(weir_n.oid) FROM pg_catalog.pg_namespace weir_n WHERE weir_n.nspname = "
                     f"{_q(_split_name(text)[1])})")
        error = (SqlState.INVALID_SCHEMA_NAME, f'schema "{text}" does not exist')
    elif kind == "regrole":
        oid = _parse(f"(SELECT max(weir_r.oid) FROM pg_catalog.pg_roles weir_r WHERE weir_r.rolname = {_q(text)})")
        error = (SqlState.UNDEFINED_OBJECT, f'role "{text}" does not exist')
    else:
        schema, name = _split_name(text.split("(", 1)[0])
        where = f"weir_n.nspname = {_q(schema)}" if schema else "weir_n.nspname = ANY (current_schemas(true))"
        oid = _parse(f"(SELECT max(weir_p.oid) FROM pg_catalog.pg_proc weir_p JOIN pg_catalog.pg_namespace weir_n "
                     f"ON weir_n.oid = weir_p.pronamespace WHERE weir_p.proname = {_q(name)} AND {where})")
        error = (SqlState.UNDEFINED_FUNCTION, f'function "{text}" does not exist')
    if not strict:
        return oid
    # the lookup is a subquery over the catalog relations, so the error is raised when it runs
    fail = exp.Anonymous(this="raise_error", expressions=[exp.Literal.string(runtime_marker(*error))])
    fail.meta["weir_literal"] = True  # weir's own Spark call: weir.sql.functions lets it pass
    return exp.Coalesce(this=oid, expressions=[fail])


def _json_build_object(args: list[exp.Expression]) -> exp.Expression:
    """json_build_object(k1, v1, ...) (SQLAlchemy's column reflection builds identity and
    collation details with it): json's text, `{"k1" : v1, ...}` in the given order, each
    key as text and each value as to_jsonb writes it (null for NULL). Typed text, not json:
    weir computes no json values at run time (only jsonb)."""
    if not args:
        return _parse("CAST('{}' AS text)")
    pairs = " || ', ' || ".join(
        f"CAST(to_jsonb(CAST({{{k}}} AS text)) AS text) || ' : ' || coalesce(CAST(to_jsonb({{{k + 1}}}) AS text), "
        "'null')" for k in range(0, len(args), 2))
    return _fill(f"'{{{{' || {pairs} || '}}}}'", args)


def _to_reg(name: str, arg: exp.Expression) -> exp.Expression:
    """to_regtype(text) / to_regclass(text): the oid, or NULL where the cast would fail
    (psycopg's TypeInfo.fetch asks for hstore's type this way)."""
    if isinstance(arg, exp.Literal) and arg.is_string:
        try:
            return _reg_literal(arg.this, name.removeprefix("to_"), strict=False)
        except WeirError:
            pass  # a name weir's parser does not know may still be a pg_type typname
    if name == "to_regclass":
        return _fill("(SELECT max(weir_c.oid) FROM pg_catalog.pg_class weir_c JOIN pg_catalog.pg_namespace weir_n "
                     "ON weir_n.oid = weir_c.relnamespace WHERE (weir_c.relname = CAST({0} AS text) AND "
                     "weir_n.nspname = ANY (current_schemas(true))) OR "
                     "weir_n.nspname || '.' || weir_c.relname = CAST({0} AS text))", [arg])
    names = " ".join(f"WHEN {_q(n)} THEN {oid}" for oid, n in _TYPE_NAMES.items() if not n.startswith('"'))
    return _fill(f"coalesce(CASE lower(CAST({{0}} AS text)) {names} END, (SELECT max(weir_t.oid) FROM "
                 "pg_catalog.pg_type weir_t WHERE weir_t.typname = CAST({0} AS text)))", [arg])


def _computed_relation(arg: exp.Expression, is_text: _IsText) -> exp.Expression | None:
    """The text of `text::regclass` or `text::regclass::oid` when the text is computed."""
    if isinstance(arg, exp.Cast) and _oid_type(arg.to) is None and arg.to.sql().lower() == "oid":
        arg = arg.this
    if isinstance(arg, exp.Cast) and _oid_type(arg.to) == "regclass" and is_text(arg.this) \
            and not (isinstance(arg.this, exp.Literal)):
        return arg.this
    return None


def _privilege(name: str, args: list[exp.Expression], is_text: _IsText) -> exp.Expression:
    """has_*_privilege([user,] object, privilege): a superuser, the owner, or a grant (to
    the role or PUBLIC) in the object's ACL with every privilege asked for."""
    table, name_col, owner_col, acl_col, nsp_col = _PRIVILEGE_OBJECTS[name]
    if len(args) == 3:
        user, obj, priv = args
    elif len(args) == 2:
        user, (obj, priv) = exp.CurrentUser(), args
    else:
        raise _no_function(name, args)
    if not (isinstance(priv, exp.Literal) and priv.is_string):
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"{name}() takes a constant privilege name here")
    letters = []
    for p in priv.this.split(","):
        word = p.strip().lower().removesuffix(" with grant option").strip()
        if word not in _LETTERS:
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f"unrecognized privilege type: \"{p.strip()}\"")
        letters.append(_LETTERS[word])
    source, computed = f"pg_catalog.{table} weir_o", False
    if isinstance(obj, exp.Literal) and obj.is_string:
        if table == "pg_class":
            match = f"weir_o.oid = {_sql(_relation_oid(obj.this))}"
        else:
            match = f"weir_o.{name_col} = {_q(_split_name(obj.this)[1])}"
    elif is_text(obj):  # the object's name computed per row (weir.sql.catalog_names)
        source, match = catalog_names.privilege_source(table, f"{_ARG}0")
        computed = True
    else:
        match = f"weir_o.oid = {_ARG}0"
    if isinstance(user, exp.Literal) and user.is_string:
        role = f"weir_u.rolname = {_q(user.this)}"
    elif isinstance(user, exp.CurrentUser):
        role = "weir_u.rolname = current_user"
    else:
        role = f"weir_u.oid = {_ARG}1"
    # the role's items made PUBLIC's (`role=rw/owner` -> `=rw/owner`), so that one constant
    # pattern finds a letter granted to the role or to PUBLIC
    acl = f"replace(',' || array_to_string(weir_o.{acl_col}, ','), ',' || weir_u.rolname || '=', ',=')"
    # every role may connect to every database (weir has no CONNECT privilege to withhold;
    # PostgreSQL grants it to PUBLIC by default)
    grants = " AND ".join("true" if (table, letter) == ("pg_database", "c") else f"({acl}) ~ ',=[A-Za-z*]*{letter}'"
                          for letter in letters)
    holds = f"max(CASE WHEN weir_u.rolsuper OR weir_o.{owner_col} = weir_u.oid OR ({grants}) THEN 1 ELSE 0 END)"
    if computed:  # no such object: PostgreSQL's error, raised outside the subquery
        sql = (f"(SELECT {holds} = 1 FROM {source} CROSS JOIN pg_catalog.pg_roles weir_u WHERE {match} AND {role})")
        sql = catalog_names.strict(f"{_ARG}0", sql, catalog_names.privilege_failing(table, f"{_ARG}0"))
    else:
        sql = (f"(SELECT coalesce({holds}, 0) = 1 FROM {source} CROSS JOIN pg_catalog.pg_roles weir_u "
               f"WHERE {match} AND {role})")
    return _fill(sql, [obj, user])


def _sql(e: exp.Expression) -> str:
    return e.sql(dialect="postgres")


def _no_function(name: str, args: list[exp.Expression]) -> WeirError:
    return WeirError(SqlState.UNDEFINED_FUNCTION, f"function {name}({', '.join('unknown' for _ in args)}) does "
                     "not exist", hint="No function matches the given name and argument types. "
                     "You might need to add explicit type casts.")


_OPERATORS = {"~": "~", "!~": "!~", "~*": "~*", "!~*": "!~*", "=": "=", "<>": "<>", "!=": "<>", "<": "<",
              ">": ">", "<=": "<=", ">=": ">=", "~~": "LIKE", "!~~": "NOT LIKE", "~~*": "ILIKE",
              "!~~*": "NOT ILIKE", "||": "||", "+": "+", "-": "-", "*": "*", "/": "/"}


def _operator(node: exp.Operator) -> exp.Expression:
    op = str(node.args.get("operator") or "").strip()
    schema, _, name = op.rpartition(".")
    if schema not in ("", "pg_catalog") or name not in _OPERATORS:
        raise WeirError(SqlState.UNDEFINED_FUNCTION, f"operator does not exist: OPERATOR({op})")
    left, right = "__weir_arg0", "__weir_arg1"
    tree = sqlglot.parse_one(f"{left} {_OPERATORS[name]} {right}", read="postgres")
    args = {left: node.this, right: node.expression}
    return tree.transform(lambda n: args[n.name].copy()
                          if isinstance(n, exp.Column) and not n.table and n.name in args else n)


def _default_collation(node: exp.Collate) -> bool:
    c = node.expression
    if isinstance(c, exp.Column):
        return c.name.lower() == "default" and (not c.table or c.table.lower() == "pg_catalog")
    if isinstance(c, (exp.Identifier, exp.Var)):
        return c.name == "default"
    return isinstance(c, exp.Literal) and c.this == "default"


def _unqualified_function(node: exp.Dot) -> exp.Expression | None:
    if isinstance(node.this, exp.Identifier) and node.this.name.lower() == "pg_catalog" \
            and isinstance(node.expression, exp.Func):
        call = node.expression
        if isinstance(call, exp.Anonymous):  # read as a plain call after the qualifier: as if unqualified
            from weir.sql.dialect import Weir

            name = call.name.lower()
            built = Weir.Parser.FUNCTIONS.get(name.upper())
            if built is not None:
                try:
                    call = built(list(call.expressions)) if not _takes_dialect(built) \
                        else built(list(call.expressions), dialect=Weir)
                except Exception:  # noqa: BLE001 - the arguments do not fit sqlglot's class: keep the call
                    call = node.expression
            call.meta["weir_output_name"] = name
        return call
    return None


def _takes_dialect(builder) -> bool:  # noqa: ANN001
    import inspect

    try:
        return "dialect" in inspect.signature(builder).parameters
    except (TypeError, ValueError):
        return False


def _unqualified_type(node: exp.DataType) -> exp.DataType | None:
    kind = node.args.get("kind")
    if node.this != exp.DataType.Type.USERDEFINED or not isinstance(kind, exp.Dot):
        return None
    if not (isinstance(kind.this, exp.Identifier) and kind.this.name.lower() == "pg_catalog"):
        return None
    name = kind.expression.name
    if name.lower() in _OID_TYPES:
        return None
    try:
        return exp.DataType.build(name, dialect="postgres")
    except Exception:  # noqa: BLE001 - a type name weir's gate refuses by name later
        return exp.DataType.build(name, dialect="postgres", udt=True)


def _call(node: exp.Anonymous, is_text: _IsText, is_vector: _IsText) -> exp.Expression | None:
    name, args = node.name.lower(), list(node.expressions)
    if name in _VISIBLE and len(args) == 1:
        return _visible(name, args[0])
    if name in ("col_description", "obj_description") and len(args) in (1, 2):
        text = _computed_relation(args[0], is_text)
        if text is not None:  # the relation named per row (weir.sql.catalog_names)
            subid, catalog = ("{1}", "'pg_class'") if name == "col_description" \
                else ("0", "{1}" if len(args) == 2 else None)
            return _fill(catalog_names.description("{0}", subid, catalog), [text, *args[1:]])
    if name == "has_any_column_privilege":  # weir grants no column privileges: the table's
        name = "has_table_privilege"
    if name in _PRIVILEGE_OBJECTS:
        return _privilege(name, args, is_text)
    if name == "format_type" and len(args) == 2:
        return _fill(format_type_sql("{0}", "{1}"), args)
    if name == "quote_ident" and len(args) == 1:
        return _fill(quote_ident_sql("{0}"), args)
    if name == "pg_get_indexdef" and len(args) in (1, 3):
        return _fill(indexdef_sql(len(args)), args)
    if name == "pg_get_viewdef" and len(args) in (1, 2):
        view = args[0]
        if isinstance(view, exp.Literal) and view.is_string:  # a regclass: 42P01 when it names nothing
            view = _reg_literal(view.this, "regclass")
        return _fill(_TEMPLATES[("pg_get_viewdef", 1)], [view])
    if name == "pg_get_function_result" and len(args) == 1:
        return _fill(_TEMPLATES[(name, 1)].replace("{F}", format_type_sql("weir_p.prorettype", None)), args)
    if name == "pg_get_function_arguments" and len(args) == 1:
        return _fill(_function_arguments(), args)
    if name in ("array_upper", "array_lower") and len(args) == 2 and args[1].sql() == "1":
        # weir's arrays are one-dimensional and start at 1; int2vector and oidvector at 0
        first = 0 if is_vector(args[0]) else 1
        return _fill(("array_length({0}, 1)" if first else "array_length({0}, 1) - 1") if name == "array_upper"
                     else f"CASE WHEN array_length({{0}}, 1) IS NOT NULL THEN {first} END", args[:1])
    if name in ("to_regtype", "to_regclass") and len(args) == 1:
        return _to_reg(name, args[0])
    if name == "json_build_object" and len(args) % 2 == 0:
        return _json_build_object(args)
    template = _TEMPLATES.get((name, len(args)))
    if template is not None:
        return _fill(template, args)
    return None


def rewrite(expr: exp.Expression,
            column_type: Callable[[exp.Column], PgType | None] | None = None) -> exp.Expression:
    """The query with PostgreSQL's catalog functions, reg* casts, OPERATOR(...) and the
    default COLLATE written as plain SQL over pg_catalog's relations. `column_type`: a
    column's type where known (a text column names an object, an oid column is its oid)."""
    if not _mentions(expr):
        return expr

    def is_text(arg: exp.Expression) -> bool:
        return catalog_names.text_valued(arg, column_type)

    def is_vector(arg: exp.Expression) -> bool:  # int2vector / oidvector: subscripts from 0
        found = column_type(arg) if isinstance(arg, exp.Column) and column_type is not None else None
        return found is not None and found.oid in ZERO_BASED_ARRAYS

    def visit(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Dot):
            inner = _unqualified_function(node)
            if inner is not None:
                return visit(inner)
        if isinstance(node, exp.DataType):
            plain = _unqualified_type(node)
            if plain is not None:
                return plain
        if isinstance(node, exp.Operator):
            return _operator(node)
        if isinstance(node, exp.Collate) and _default_collation(node):
            return node.this
        if isinstance(node, exp.Cast):
            kind = _oid_type(node.to)
            if kind is not None:
                return _reg_cast(node, kind, is_text)
        if isinstance(node, exp.Anonymous):
            if node.name.lower() in _NAMES:
                _qualify_arguments(node)
            new = _call(node, is_text, is_vector)
            if new is not None:  # PostgreSQL names the column after the function
                new.meta.setdefault("weir_output_name", node.meta.get("weir_output_name") or node.name.lower())
                return new
        if isinstance(node, exp.Format) and isinstance(node.this, exp.Literal) and node.this.is_string:
            new = catalog_absent.format_call([node.this, *node.expressions], _fill)
            if new is None:
                return node
            new.meta.setdefault("weir_output_name", "format")  # PostgreSQL names the column after it
            return new
        return node

    # pre-order: a reg* cast sees its parent (whether it is output as a name) unchanged
    out = expr.copy()
    catalog_arrays.expand_arrays(out)
    _order_by_output(out)
    return _transform_pre(out, visit)


def _qualify_arguments(call: exp.Anonymous) -> None:
    """`shobj_description(oid, ...)` over one relation: an unqualified `oid` qualified with
    that relation's name, since a template puts it inside a subquery over catalog relations
    that have an oid column too (pg_class.oid), where it would be ambiguous."""
    select = call.find_ancestor(exp.Select)
    source = select.args.get("from_") if select is not None else None
    if source is None or select.args.get("joins") or not isinstance(source.this, exp.Table):
        return
    name = source.this.alias_or_name
    if not name or not isinstance(source.this.this, exp.Identifier):
        return
    for column in call.find_all(exp.Column):
        if not column.table and column.name.lower() == "oid" and column.find_ancestor(exp.Select) is select:
            column.set("table", exp.to_identifier(name, quoted=source.this.args.get("alias") is None
                                                  and source.this.this.quoted))


def _order_by_output(tree: exp.Expression) -> None:
    """`ORDER BY x::regclass[::text]` where the select list outputs `x::regclass` orders by
    that output column (its position): Spark takes no correlated subquery in ORDER BY."""
    for select in tree.find_all(exp.Select):
        order = select.args.get("order")
        if order is None:
            continue
        outputs = {}
        for k, p in enumerate(select.expressions, start=1):
            inner = p.this if isinstance(p, exp.Alias) else p
            if isinstance(inner, exp.Cast) and _oid_type(inner.to) is not None:
                outputs.setdefault((_oid_type(inner.to), inner.this.sql()), k)
        for ordered in order.expressions:
            key = ordered.this
            if isinstance(key, exp.Cast) and _oid_type(key.to) is None and isinstance(key.this, exp.Cast):
                key = key.this  # ::regclass::text: the name, as the output column is
            if isinstance(key, exp.Cast) and _oid_type(key.to) is not None:
                k = outputs.get((_oid_type(key.to), key.this.sql()))
                if k is not None:
                    ordered.set("this", exp.Literal.number(k))


def _transform_pre(root: exp.Expression, visit) -> exp.Expression:  # noqa: ANN001
    new_root = visit(root)
    if new_root is not root:
        return _transform_pre(new_root, visit) if new_root.find(exp.Anonymous, exp.Cast, exp.Dot) else new_root
    stack = list(root.iter_expressions())
    while stack:
        node = stack.pop()
        new = visit(node)
        if new is not node:
            node.replace(new)
            stack.append(new)  # its own parts may need rewriting too (a rewrite's arguments)
            continue
        stack.extend(node.iter_expressions())
    return root


_NAMES = frozenset({*(n for n, _ in _TEMPLATES), *_VISIBLE, *_PRIVILEGE_OBJECTS, "has_any_column_privilege",
                    "format_type", "quote_ident",
                    "pg_get_function_arguments", "to_regtype", "to_regclass", "json_build_object",
                    "array_upper", "array_lower", catalog_arrays.EXPAND})


def _mentions(expr: exp.Expression) -> bool:
    for node in expr.walk():
        if isinstance(node, (exp.Operator, exp.Collate, exp.Dot, exp.Format)):
            return True
        if isinstance(node, exp.Anonymous) and node.name.lower() in _NAMES:
            return True
        if isinstance(node, exp.Cast) and _oid_type(node.to) is not None:
            return True
        if isinstance(node, exp.DataType) and _unqualified_type(node) is not None:
            return True
    return False
