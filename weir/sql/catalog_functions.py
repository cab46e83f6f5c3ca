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
  (weir.sql.catalog_format_type)
- pg_get_indexdef / pg_get_viewdef / pg_get_constraintdef / pg_get_expr
- obj_description / col_description / shobj_description: from pg_description /
  pg_shdescription
- pg_encoding_to_char, quote_ident, pg_relation_is_publishable,
  pg_get_statisticsobjdef_columns, pg_get_function_result
- has_table_privilege / has_schema_privilege / has_database_privilege (and
  has_any_column_privilege, the table's: weir has no column privileges), from the objects'
  ACLs (pg_class.relacl, pg_namespace.nspacl, pg_database.datacl) and pg_roles; every role
  may CONNECT
- casts to regclass / regtype / regproc / regnamespace, to_regclass / to_regtype
  (weir.sql.catalog_oid_casts); a name computed per row (a text expression or column) is
  looked up per row (weir.sql.catalog_names), as are has_*_privilege's and
  col/obj_description's
- array_upper / array_lower: from 1, but from 0 for int2vector and oidvector columns
- `x OPERATOR(pg_catalog.~) y` as `x ~ y`; `COLLATE pg_catalog.default` / "default"
  (the only collation that means what PostgreSQL's means) dropped
- `pg_catalog.` before a function or type name dropped
"""

from __future__ import annotations

from collections.abc import Callable

import sqlglot
from sqlglot import exp

from weir.errors import SqlState, WeirError
from weir.sql import catalog_absent, catalog_arrays, catalog_names
from weir.sql.catalog_definitions import TEMPLATES as DEFINITIONS
from weir.sql.catalog_definitions import indexdef_sql, quote_ident_sql
from weir.sql.catalog_format_type import format_type_sql
from weir.sql.catalog_oid_casts import (
    OID_TYPES,
    IsText,
    computed_relation,
    oid_type,
    order_by_output,
    reg_cast,
    reg_literal,
    relation_oid,
    split_name,
    to_reg,
)
from weir.sql.catalog_templates import ARG, fill, parse_sql, quote_literal
from weir.types import ZERO_BASED_ARRAYS, PgType

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
    query = parse_sql(f"SELECT weir_o.oid FROM pg_catalog.{table} weir_o JOIN pg_catalog.pg_namespace weir_n "
                   f"ON weir_n.oid = weir_o.{column} WHERE weir_n.nspname = ANY (current_schemas(false)) "
                   "OR weir_n.nspname = 'pg_catalog' OR weir_n.oid = pg_my_temp_schema()")
    return exp.Paren(this=exp.In(this=arg.copy(), query=exp.Subquery(this=query)))


def _json_build_object(args: list[exp.Expression]) -> exp.Expression:
    """json_build_object(k1, v1, ...) (SQLAlchemy's column reflection builds identity and
    collation details with it): json's text, `{"k1" : v1, ...}` in the given order, each
    key as text and each value as to_jsonb writes it (null for NULL). Typed text, not json:
    weir computes no json values at run time (only jsonb)."""
    if not args:
        return parse_sql("CAST('{}' AS text)")
    pairs = " || ', ' || ".join(
        f"CAST(to_jsonb(CAST({{{k}}} AS text)) AS text) || ' : ' || coalesce(CAST(to_jsonb({{{k + 1}}}) AS text), "
        "'null')" for k in range(0, len(args), 2))
    return fill(f"'{{{{' || {pairs} || '}}}}'", args)


def _privilege(name: str, args: list[exp.Expression], is_text: IsText) -> exp.Expression:
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
            match = f"weir_o.oid = {_sql(relation_oid(obj.this))}"
        else:
            match = f"weir_o.{name_col} = {quote_literal(split_name(obj.this)[1])}"
    elif is_text(obj):  # the object's name computed per row (weir.sql.catalog_names)
        source, match = catalog_names.privilege_source(table, f"{ARG}0")
        computed = True
    else:
        match = f"weir_o.oid = {ARG}0"
    if isinstance(user, exp.Literal) and user.is_string:
        role = f"weir_u.rolname = {quote_literal(user.this)}"
    elif isinstance(user, exp.CurrentUser):
        role = "weir_u.rolname = current_user"
    else:
        role = f"weir_u.oid = {ARG}1"
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
        sql = catalog_names.strict(f"{ARG}0", sql, catalog_names.privilege_failing(table, f"{ARG}0"))
    else:
        sql = (f"(SELECT coalesce({holds}, 0) = 1 FROM {source} CROSS JOIN pg_catalog.pg_roles weir_u "
               f"WHERE {match} AND {role})")
    return fill(sql, [obj, user])


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
    if name.lower() in OID_TYPES:
        return None
    try:
        return exp.DataType.build(name, dialect="postgres")
    except Exception:  # noqa: BLE001 - a type name weir's gate refuses by name later
        return exp.DataType.build(name, dialect="postgres", udt=True)


def _call(node: exp.Anonymous, is_text: IsText, is_vector: IsText) -> exp.Expression | None:
    name, args = node.name.lower(), list(node.expressions)
    if name in _VISIBLE and len(args) == 1:
        return _visible(name, args[0])
    if name in ("col_description", "obj_description") and len(args) in (1, 2):
        text = computed_relation(args[0], is_text)
        if text is not None:  # the relation named per row (weir.sql.catalog_names)
            subid, catalog = ("{1}", "'pg_class'") if name == "col_description" \
                else ("0", "{1}" if len(args) == 2 else None)
            return fill(catalog_names.description("{0}", subid, catalog), [text, *args[1:]])
    if name == "has_any_column_privilege":  # weir grants no column privileges: the table's
        name = "has_table_privilege"
    if name in _PRIVILEGE_OBJECTS:
        return _privilege(name, args, is_text)
    if name == "format_type" and len(args) == 2:
        return fill(format_type_sql("{0}", "{1}"), args)
    if name == "quote_ident" and len(args) == 1:
        return fill(quote_ident_sql("{0}"), args)
    if name == "pg_get_indexdef" and len(args) in (1, 3):
        return fill(indexdef_sql(len(args)), args)
    if name == "pg_get_viewdef" and len(args) in (1, 2):
        view = args[0]
        if isinstance(view, exp.Literal) and view.is_string:  # a regclass: 42P01 when it names nothing
            view = reg_literal(view.this, "regclass")
        return fill(_TEMPLATES[("pg_get_viewdef", 1)], [view])
    if name == "pg_get_function_result" and len(args) == 1:
        return fill(_TEMPLATES[(name, 1)].replace("{F}", format_type_sql("weir_p.prorettype", None)), args)
    if name == "pg_get_function_arguments" and len(args) == 1:
        return fill(_function_arguments(), args)
    if name in ("array_upper", "array_lower") and len(args) == 2 and args[1].sql() == "1":
        # weir's arrays are one-dimensional and start at 1; int2vector and oidvector at 0
        first = 0 if is_vector(args[0]) else 1
        return fill(("array_length({0}, 1)" if first else "array_length({0}, 1) - 1") if name == "array_upper"
                     else f"CASE WHEN array_length({{0}}, 1) IS NOT NULL THEN {first} END", args[:1])
    if name in ("to_regtype", "to_regclass") and len(args) == 1:
        return to_reg(name, args[0])
    if name == "json_build_object" and len(args) % 2 == 0:
        return _json_build_object(args)
    template = _TEMPLATES.get((name, len(args)))
    if template is not None:
        return fill(template, args)
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
            kind = oid_type(node.to)
            if kind is not None:
                return reg_cast(node, kind, is_text)
        if isinstance(node, exp.Anonymous):
            if node.name.lower() in _NAMES:
                _qualify_arguments(node)
            new = _call(node, is_text, is_vector)
            if new is not None:  # PostgreSQL names the column after the function
                new.meta.setdefault("weir_output_name", node.meta.get("weir_output_name") or node.name.lower())
                return new
        if isinstance(node, exp.Format) and isinstance(node.this, exp.Literal) and node.this.is_string:
            new = catalog_absent.format_call([node.this, *node.expressions], fill)
            if new is None:
                return node
            new.meta.setdefault("weir_output_name", "format")  # PostgreSQL names the column after it
            return new
        return node

    # pre-order: a reg* cast sees its parent (whether it is output as a name) unchanged
    out = expr.copy()
    catalog_arrays.expand_arrays(out)
    order_by_output(out)
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
        if isinstance(node, exp.Cast) and oid_type(node.to) is not None:
            return True
        if isinstance(node, exp.DataType) and _unqualified_type(node) is not None:
            return True
    return False
