"""Casts to PostgreSQL's object-identifier types (regclass, regtype, regproc, regprocedure,
regnamespace, regrole) as plain SQL over pg_catalog's relations, for
weir.sql.catalog_functions: from a string, the object's oid looked up by name (on the
search path unless qualified), failing as PostgreSQL fails when it names nothing (to_regclass
and to_regtype answer NULL instead); of an oid, the oid itself where it is compared or
joined, and the object's name where it is output or cast to text. A name computed per row
is looked up per row (weir.sql.catalog_names)."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from weir.errors import SqlState, WeirError, runtime_marker
from weir.sql import catalog_names
from weir.sql.catalog_definitions import quote_ident_sql
from weir.sql.catalog_format_type import TYPE_NAMES, format_type_sql
from weir.sql.catalog_templates import fill, parse_sql, quote_literal
from weir.types import parse_type

IsText = Callable[[exp.Expression], bool]  # whether an argument is a name (text), not an oid


def relation_oid(text: str) -> exp.Expression:
    """'name' or 'schema.name' as regclass: the relation's oid (the search path's schemas for
    an unqualified name)."""
    schema, name = split_name(text)
    lookup = ("(SELECT max(weir_c.oid) FROM pg_catalog.pg_class weir_c JOIN pg_catalog.pg_namespace weir_n "
              f"ON weir_n.oid = weir_c.relnamespace WHERE weir_c.relname = {quote_literal(name)} AND {{}})")
    temp = lookup.format("weir_n.oid = pg_my_temp_schema()")  # the session's own temporary schema
    if schema in ("mz_temp", "pg_temp"):
        return parse_sql(temp)
    if schema:
        return parse_sql(lookup.format(f"weir_n.nspname = {quote_literal(schema)}"))
    # searched first, as in PostgreSQL
    return parse_sql(f"coalesce({temp}, {lookup.format('weir_n.nspname = ANY (current_schemas(true))')})")


def split_name(text: str) -> tuple[str | None, str]:
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


OID_TYPES = ("regclass", "regtype", "regproc", "regprocedure", "regnamespace", "regrole")


def oid_type(to: exp.Expression) -> str | None:
    """The reg* type a cast is to, or None."""
    if isinstance(to, exp.ObjectIdentifier):
        name = to.name.lower()
    elif isinstance(to, exp.DataType) and to.this == exp.DataType.Type.USERDEFINED:
        kind = to.args.get("kind")
        name = (kind.name if isinstance(kind, exp.Dot) else str(kind or "")).lower()
    else:
        return None
    return name if name in OID_TYPES else None


def _outputs_name(cast: exp.Cast) -> bool:
    """Whether a reg* value is output (a projection, an ORDER BY key) or cast to text,
    rather than compared as an oid."""
    parent = cast.parent
    while isinstance(parent, exp.Paren):
        parent = parent.parent
    if isinstance(parent, exp.Cast):  # to text: the name; to oid, an integer or another reg*: the oid
        to = parent.to
        numeric = isinstance(to, exp.DataType) and to.this in exp.DataType.INTEGER_TYPES
        return oid_type(to) is None and not numeric and to.sql().lower() != "oid"
    if isinstance(parent, (exp.Alias, exp.Ordered)):
        return True
    return isinstance(parent, exp.Select) and cast.arg_key == "expressions"


def reg_cast(cast: exp.Cast, kind: str, is_text: IsText) -> exp.Expression:
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


def _reg_value(cast: exp.Cast, kind: str, is_text: IsText) -> exp.Expression:
    arg = cast.this
    if kind == "regproc" and isinstance(arg, exp.Literal) and arg.is_string and _compared_with_regproc_column(cast):
        return exp.Literal.string(split_name(arg.this)[1])
    if isinstance(arg, exp.Literal) and arg.is_string:
        oid = reg_literal(arg.this, kind)
        if not _outputs_name(cast):
            return oid
        arg = oid
    elif is_text(arg):  # a name computed per row
        if kind == "regclass":
            return fill(catalog_names.relation("{0}", output_name=_outputs_name(cast)), [arg])
        if kind == "regnamespace":
            return fill(catalog_names.schema("{0}", output_name=_outputs_name(cast)), [arg])
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"a computed text cast to {kind} is not supported")
    elif not _outputs_name(cast):
        return arg.copy()
    return fill(_name_template(kind), [arg])


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


def reg_literal(text: str, kind: str, strict: bool = True) -> exp.Expression:
    """A name as a reg* value: the object's oid. PostgreSQL resolves the name when it plans
    the query and fails when there is no such object (`strict`); to_regclass and friends
    answer NULL instead."""
    if kind == "regtype":
        try:
            return exp.Literal.number(parse_type(text).oid)
        except Exception:  # noqa: BLE001 - PostgreSQL's message
            raise WeirError(SqlState.UNDEFINED_OBJECT, f'type "{text}" does not exist') from None
    if kind == "regclass":
        oid, error = relation_oid(text), (SqlState.UNDEFINED_TABLE, f'relation "{text}" does not exist')
    elif kind == "regnamespace":
        oid = parse_sql(f"(SELECT max(weir_n.oid) FROM pg_catalog.pg_namespace weir_n WHERE weir_n.nspname = "
                     f"{quote_literal(split_name(text)[1])})")
        error = (SqlState.INVALID_SCHEMA_NAME, f'schema "{text}" does not exist')
    elif kind == "regrole":
        oid = parse_sql(f"(SELECT max(weir_r.oid) FROM pg_catalog.pg_roles weir_r WHERE weir_r.rolname = {quote_literal(text)})")
        error = (SqlState.UNDEFINED_OBJECT, f'role "{text}" does not exist')
    else:
        schema, name = split_name(text.split("(", 1)[0])
        where = f"weir_n.nspname = {quote_literal(schema)}" if schema else "weir_n.nspname = ANY (current_schemas(true))"
        oid = parse_sql(f"(SELECT max(weir_p.oid) FROM pg_catalog.pg_proc weir_p JOIN pg_catalog.pg_namespace weir_n "
                     f"ON weir_n.oid = weir_p.pronamespace WHERE weir_p.proname = {quote_literal(name)} AND {where})")
        error = (SqlState.UNDEFINED_FUNCTION, f'function "{text}" does not exist')
    if not strict:
        return oid
    # the lookup is a subquery over the catalog relations, so the error is raised when it runs
    fail = exp.Anonymous(this="raise_error", expressions=[exp.Literal.string(runtime_marker(*error))])
    fail.meta["weir_literal"] = True  # weir's own Spark call: weir.sql.functions lets it pass
    return exp.Coalesce(this=oid, expressions=[fail])


def to_reg(name: str, arg: exp.Expression) -> exp.Expression:
    """to_regtype(text) / to_regclass(text): the oid, or NULL where the cast would fail
    (psycopg's TypeInfo.fetch asks for hstore's type this way)."""
    if isinstance(arg, exp.Literal) and arg.is_string:
        try:
            return reg_literal(arg.this, name.removeprefix("to_"), strict=False)
        except WeirError:
            pass  # a name weir's parser does not know may still be a pg_type typname
    if name == "to_regclass":
        return fill("(SELECT max(weir_c.oid) FROM pg_catalog.pg_class weir_c JOIN pg_catalog.pg_namespace weir_n "
                     "ON weir_n.oid = weir_c.relnamespace WHERE (weir_c.relname = CAST({0} AS text) AND "
                     "weir_n.nspname = ANY (current_schemas(true))) OR "
                     "weir_n.nspname || '.' || weir_c.relname = CAST({0} AS text))", [arg])
    names = " ".join(f"WHEN {quote_literal(n)} THEN {oid}" for oid, n in TYPE_NAMES.items() if not n.startswith('"'))
    return fill(f"coalesce(CASE lower(CAST({{0}} AS text)) {names} END, (SELECT max(weir_t.oid) FROM "
                 "pg_catalog.pg_type weir_t WHERE weir_t.typname = CAST({0} AS text)))", [arg])


def computed_relation(arg: exp.Expression, is_text: IsText) -> exp.Expression | None:
    """The text of `text::regclass` or `text::regclass::oid` when the text is computed."""
    if isinstance(arg, exp.Cast) and oid_type(arg.to) is None and arg.to.sql().lower() == "oid":
        arg = arg.this
    if isinstance(arg, exp.Cast) and oid_type(arg.to) == "regclass" and is_text(arg.this) \
            and not (isinstance(arg.this, exp.Literal)):
        return arg.this
    return None


def order_by_output(tree: exp.Expression) -> None:
    """`ORDER BY x::regclass[::text]` where the select list outputs `x::regclass` orders by
    that output column (its position): Spark takes no correlated subquery in ORDER BY."""
    for select in tree.find_all(exp.Select):
        order = select.args.get("order")
        if order is None:
            continue
        outputs = {}
        for k, p in enumerate(select.expressions, start=1):
            inner = p.this if isinstance(p, exp.Alias) else p
            if isinstance(inner, exp.Cast) and oid_type(inner.to) is not None:
                outputs.setdefault((oid_type(inner.to), inner.this.sql()), k)
        for ordered in order.expressions:
            key = ordered.this
            if isinstance(key, exp.Cast) and oid_type(key.to) is None and isinstance(key.this, exp.Cast):
                key = key.this  # ::regclass::text: the name, as the output column is
            if isinstance(key, exp.Cast) and oid_type(key.to) is not None:
                k = outputs.get((oid_type(key.to), key.this.sql()))
                if k is not None:
                    ordered.set("this", exp.Literal.number(k))
