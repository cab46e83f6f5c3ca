"""information_schema, as PostgreSQL 15 defines its views, derived from the catalog.

Like pg_catalog's per-database relations (weir.catalog.builtin_pg_catalog), each is a view
of `mz_internal.information_schema_<name>_all_databases` keeping the session's database's
rows (and the system's); the *_catalog columns, which name the current database, are
computed in the view. Columns are PostgreSQL's, typed by the base types of its domains
(sql_identifier: name, cardinal_number: integer, character_data and yes_or_no: character
varying, time_stamp: timestamp with time zone).

Where PostgreSQL filters by what the current role may use (enabled_roles, applicable_roles,
role_table_grants, column_privileges), the view filters with current_user. Materialized
views are listed (table_type 'MATERIALIZED VIEW') in tables and columns, as Materialize
does, though PostgreSQL leaves them out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.catalog.builtin_pg_catalog import (
    DATABASE_NAME,
    NAME,
    Columns,
    ids,
    item_acl,
    per_database,
    relation_kind,
    role_name,
)
from weir.catalog.builtins import BuiltinTable, BuiltinView, ItemRows
from weir.catalog.model import (
    INFORMATION_SCHEMA,
    MATERIALIZED_VIEW,
    MZ_INTERNAL,
    PG_CATALOG,
    SOURCE,
    TABLE,
    VIEW,
    Item,
    Snapshot,
)
from weir.catalog.pg_functions import PROCS
from weir.catalog.pg_types import WEIR_SCHEMA_TYPES, format_name, referenced_typname, typname
from weir.types import BY_OID, INT4, TIMESTAMPTZ, VARCHAR, PgType

Row = tuple[Any, ...]
_TABLE_TYPE = {TABLE: "BASE TABLE", SOURCE: "BASE TABLE", VIEW: "VIEW", MATERIALIZED_VIEW: "MATERIALIZED VIEW"}
_PRIVILEGE = {"r": "SELECT", "a": "INSERT", "w": "UPDATE", "d": "DELETE", "D": "TRUNCATE", "x": "REFERENCES",
              "t": "TRIGGER"}
_COLUMN_PRIVILEGES = "rawx"  # the privileges PostgreSQL shows per column
_TEXT_TYPES = (25, 1042, 1043)
_INTEGER_PRECISION = {21: 16, 23: 32, 20: 64}
_FLOAT_PRECISION = {700: 24, 701: 53}
_DATETIME = {1082, 1114, 1184, 1186}


def _cols(names: str, exceptions: dict[str, PgType] | None = None) -> Columns:
    """Columns typed by name, as information_schema's domains type them: *_catalog, *_schema,
    *_name and dtd identifiers are sql_identifier (name), counts and sizes cardinal_number
    (integer), times time_stamp, the rest character_data / yes_or_no (varchar)."""
    out = []
    for n in names.split():
        if exceptions and n in exceptions:
            t = exceptions[n]
        elif n.endswith(("_catalog", "_schema", "_name", "dtd_identifier")):
            t = NAME
        elif n in ("created", "last_altered"):
            t = TIMESTAMPTZ
        elif any(w in n for w in ("length", "precision", "scale", "cardinality", "position", "_sets")):
            t = INT4
        else:
            t = VARCHAR
        out.append((n, t))
    return tuple(out)


def _shape(columns: Columns) -> Callable[..., Row]:
    """Builds a stored row (the columns, then database_name) by name; a column not named
    is NULL (a *_catalog column left NULL shows the current database)."""
    names = [n for n, _ in columns] + [DATABASE_NAME]

    def row(**values: Any) -> Row:
        unknown = values.keys() - set(names)
        assert not unknown, unknown
        return tuple(values.get(n) for n in names)
    return row


def _yes(b: bool) -> str:
    return "YES" if b else "NO"


def _in_information_schema(kind: str | None) -> bool:
    return kind in ("r", "v", "m")


# ---------------------------------------------------------------- the relations' columns

SCHEMATA = _cols("catalog_name schema_name schema_owner default_character_set_catalog "
                 "default_character_set_schema default_character_set_name sql_path", {"schema_owner": NAME})
TABLES_COLUMNS = _cols(
    "table_catalog table_schema table_name table_type self_referencing_column_name reference_generation "
    "user_defined_type_catalog user_defined_type_schema user_defined_type_name is_insertable_into is_typed "
    "commit_action")
VIEWS_COLUMNS = _cols(
    "table_catalog table_schema table_name view_definition check_option is_updatable is_insertable_into "
    "is_trigger_updatable is_trigger_deletable is_trigger_insertable_into")
COLUMNS = _cols(
    "table_catalog table_schema table_name column_name ordinal_position column_default is_nullable data_type "
    "character_maximum_length character_octet_length numeric_precision numeric_precision_radix numeric_scale "
    "datetime_precision interval_type interval_precision character_set_catalog character_set_schema "
    "character_set_name collation_catalog collation_schema collation_name domain_catalog domain_schema "
    "domain_name udt_catalog udt_schema udt_name scope_catalog scope_schema scope_name maximum_cardinality "
    "dtd_identifier is_self_referencing is_identity identity_generation identity_start identity_increment "
    "identity_maximum identity_minimum identity_cycle is_generated generation_expression is_updatable")
TABLE_CONSTRAINTS = _cols(
    "constraint_catalog constraint_schema constraint_name table_catalog table_schema table_name constraint_type "
    "is_deferrable initially_deferred enforced nulls_distinct")
ROUTINES = _cols(
    "specific_catalog specific_schema specific_name routine_catalog routine_schema routine_name routine_type "
    "module_catalog module_schema module_name udt_catalog udt_schema udt_name data_type character_maximum_length "
    "character_octet_length character_set_catalog character_set_schema character_set_name collation_catalog "
    "collation_schema collation_name numeric_precision numeric_precision_radix numeric_scale datetime_precision "
    "interval_type interval_precision type_udt_catalog type_udt_schema type_udt_name scope_catalog scope_schema "
    "scope_name maximum_cardinality dtd_identifier routine_body routine_definition external_name "
    "external_language parameter_style is_deterministic sql_data_access is_null_call sql_path "
    "schema_level_routine max_dynamic_result_sets is_user_defined_cast is_implicitly_invocable security_type "
    "to_sql_specific_catalog to_sql_specific_schema to_sql_specific_name as_locator created last_altered "
    "new_savepoint_level is_udt_dependent result_cast_from_data_type result_cast_as_locator "
    "result_cast_char_max_length result_cast_char_octet_length result_cast_char_set_catalog "
    "result_cast_char_set_schema result_cast_char_set_name result_cast_collation_catalog "
    "result_cast_collation_schema result_cast_collation_name result_cast_numeric_precision "
    "result_cast_numeric_precision_radix result_cast_numeric_scale result_cast_datetime_precision "
    "result_cast_interval_type result_cast_interval_precision result_cast_type_udt_catalog "
    "result_cast_type_udt_schema result_cast_type_udt_name result_cast_scope_catalog result_cast_scope_schema "
    "result_cast_scope_name result_cast_maximum_cardinality result_cast_dtd_identifier",
    {"external_name": VARCHAR})
PARAMETERS = _cols(
    "specific_catalog specific_schema specific_name ordinal_position parameter_mode is_result as_locator "
    "parameter_name data_type character_maximum_length character_octet_length character_set_catalog "
    "character_set_schema character_set_name collation_catalog collation_schema collation_name numeric_precision "
    "numeric_precision_radix numeric_scale datetime_precision interval_type interval_precision udt_catalog "
    "udt_schema udt_name scope_catalog scope_schema scope_name maximum_cardinality dtd_identifier "
    "parameter_default")
ROLE_TABLE_GRANTS = _cols(
    "grantor grantee table_catalog table_schema table_name privilege_type is_grantable with_hierarchy",
    {"grantor": NAME, "grantee": NAME})
COLUMN_PRIVILEGES = _cols(
    "grantor grantee table_catalog table_schema table_name column_name privilege_type is_grantable",
    {"grantor": NAME, "grantee": NAME})
CHARACTER_SETS = _cols(
    "character_set_catalog character_set_schema character_set_name character_repertoire form_of_use "
    "default_collate_catalog default_collate_schema default_collate_name",
    {"character_repertoire": NAME, "form_of_use": NAME})
_SCHEMATA_ROW, _TABLES_ROW, _VIEWS_ROW, _COLUMNS_ROW, _CONSTRAINTS_ROW = (
    _shape(c) for c in (SCHEMATA, TABLES_COLUMNS, VIEWS_COLUMNS, COLUMNS, TABLE_CONSTRAINTS))
_ROUTINES_ROW, _PARAMETERS_ROW, _GRANTS_ROW, _COLUMN_PRIVILEGES_ROW, _CHARACTER_SETS_ROW = (
    _shape(c) for c in (ROUTINES, PARAMETERS, ROLE_TABLE_GRANTS, COLUMN_PRIVILEGES, CHARACTER_SETS))


# ---------------------------------------------------------------- schemata, tables, views


def _schemata(s: Snapshot) -> list[Row]:
    databases = {d.id: d.name for d in s.databases}
    return [_SCHEMATA_ROW(catalog_name=databases.get(x.database_id or ""), schema_name=x.name,
                          schema_owner=role_name(s, x.owner_id), database_name=databases.get(x.database_id or ""))
            for x in s.schemas]


def _tables_of(s: Snapshot, i: Item) -> list[Row]:
    if not _in_information_schema(relation_kind(i)):
        return []
    return [_TABLES_ROW(table_catalog=i.database_name, table_schema=i.schema_name, table_name=i.name,
                        table_type=_TABLE_TYPE[i.kind], is_insertable_into=_yes(i.kind == TABLE and not i.builtin),
                        is_typed="NO", database_name=i.database_name)]


def _views_of(s: Snapshot, i: Item) -> list[Row]:
    if i.kind != VIEW:
        return []
    return [_VIEWS_ROW(table_catalog=i.database_name, table_schema=i.schema_name, table_name=i.name,
                       view_definition=i.definition.get("query", ""), check_option="NONE", is_updatable="NO",
                       is_insertable_into="NO", is_trigger_updatable="NO", is_trigger_deletable="NO",
                       is_trigger_insertable_into="NO", database_name=i.database_name)]


# ---------------------------------------------------------------- columns


def _type_details(t: PgType) -> tuple[Any, ...]:
    """(data_type, character_maximum_length, character_octet_length, numeric_precision,
    numeric_precision_radix, numeric_scale, datetime_precision, udt_schema, udt_name)."""
    oid = t.oid
    if t.element is not None and oid not in (22, 30):
        data_type = "ARRAY"
    elif oid in WEIR_SCHEMA_TYPES:
        data_type = "USER-DEFINED"
    else:
        data_type = format_name(oid)
    char_max = t.length if oid in (1042, 1043) else None
    octets = (char_max * 4 if char_max is not None else 1073741824) if oid in _TEXT_TYPES else None
    precision = radix = scale = None
    if oid in _INTEGER_PRECISION:
        precision, radix, scale = _INTEGER_PRECISION[oid], 2, 0
    elif oid in _FLOAT_PRECISION:
        precision, radix = _FLOAT_PRECISION[oid], 2
    elif oid == 1700:
        radix = 10
        precision, scale = t.precision, (t.scale or 0) if t.precision is not None else None
    datetime_precision = (0 if oid == 1082 else 6) if oid in _DATETIME else None
    schema = "mz_catalog" if oid in WEIR_SCHEMA_TYPES else PG_CATALOG
    return data_type, char_max, octets, precision, radix, scale, datetime_precision, schema, typname(t)


def _columns_of(s: Snapshot, i: Item) -> list[Row]:
    if not _in_information_schema(relation_kind(i)):
        return []
    updatable = _yes(i.kind == TABLE and not i.builtin)
    out = []
    for n, c in enumerate(i.columns, start=1):
        (data_type, char_max, octets, precision, radix, scale, dt_precision, udt_schema,
         udt_name) = _type_details(c.type)
        out.append(_COLUMNS_ROW(
            table_schema=i.schema_name, table_name=i.name, column_name=c.name, ordinal_position=n,
            column_default=c.default, is_nullable=_yes(c.nullable), data_type=data_type,
            character_maximum_length=char_max, character_octet_length=octets, numeric_precision=precision,
            numeric_precision_radix=radix, numeric_scale=scale, datetime_precision=dt_precision,
            udt_schema=udt_schema, udt_name=udt_name, dtd_identifier=str(n), is_self_referencing="NO",
            is_identity="NO", identity_cycle="NO", is_generated="NEVER", is_updatable=updatable,
            database_name=i.database_name))
    return out


def _constraints_of(s: Snapshot, i: Item) -> list[Row]:
    """PostgreSQL lists each NOT NULL column of a table as a CHECK constraint named
    <namespace oid>_<table oid>_<attnum>_not_null; weir has no other constraints."""
    if relation_kind(i) != "r":
        return []
    schema = s.schema_by_id.get(i.schema_id)
    nsp = schema.oid if schema is not None else 0
    return [_CONSTRAINTS_ROW(constraint_catalog=i.database_name, constraint_schema=i.schema_name,
                             constraint_name=f"{nsp}_{i.oid}_{n}_not_null", table_catalog=i.database_name,
                             table_schema=i.schema_name, table_name=i.name, constraint_type="CHECK",
                             is_deferrable="NO", initially_deferred="NO", enforced="YES",
                             database_name=i.database_name)
            for n, c in enumerate(i.columns, start=1) if not c.nullable]


# ---------------------------------------------------------------- routines, parameters


def _type_of_routine(oid: int) -> tuple[str, str]:
    """(data_type, type_udt_name) of a function's result or argument type."""
    t = BY_OID.get(oid)
    if t is not None and t.element is not None and oid not in (22, 30):
        return "ARRAY", typname(t)
    return format_name(oid), referenced_typname(oid)


def _routines(s: Snapshot) -> list[Row]:
    out = []
    for oid, name, flags, *_, rettype, _args, _all, _modes, _names, _src in PROCS:
        kind, volatile, _, strict, _ = flags
        data_type, udt = _type_of_routine(rettype)
        out.append(_ROUTINES_ROW(
            specific_schema=PG_CATALOG, specific_name=f"{name}_{oid}", routine_schema=PG_CATALOG,
            routine_name=name, routine_type="FUNCTION" if kind == "f" else None, data_type=data_type,
            type_udt_schema=PG_CATALOG, type_udt_name=udt, dtd_identifier="0", routine_body="EXTERNAL",
            external_language="INTERNAL", parameter_style="GENERAL", is_deterministic=_yes(volatile == "i"),
            sql_data_access="MODIFIES", is_null_call=_yes(strict == "t"), schema_level_routine="YES",
            max_dynamic_result_sets=0, security_type="INVOKER", as_locator="NO", is_udt_dependent="NO"))
    return out


_MODES = {"i": "IN", "o": "OUT", "b": "INOUT", "v": "IN", "t": "OUT"}


def _parameters(s: Snapshot) -> list[Row]:
    out = []
    for oid, name, *_, args, allargs, modes, names, _src in PROCS:
        for n, arg in enumerate(allargs or args, start=1):
            data_type, udt = _type_of_routine(arg)
            out.append(_PARAMETERS_ROW(
                specific_schema=PG_CATALOG, specific_name=f"{name}_{oid}", ordinal_position=n,
                parameter_mode=_MODES[modes[n - 1]] if modes else "IN", is_result="NO", as_locator="NO",
                parameter_name=names[n - 1] if names and names[n - 1] else None, data_type=data_type,
                udt_schema=PG_CATALOG, udt_name=udt, dtd_identifier=str(n)))
    return out


# ---------------------------------------------------------------- roles and privileges


def _usable_roles(s: Snapshot, role_id: str) -> set[str]:
    """The roles whose privileges `role_id` has (pg_has_role(..., 'USAGE')): itself and what
    it inherits; a superuser all of them."""
    role = s.role_by_id.get(role_id)
    if role is None:
        return set()
    if role.superuser:
        return {r.id for r in s.roles}
    out, todo = {role_id}, [role_id]
    while todo:
        member = todo.pop()
        m = s.role_by_id.get(member)
        if m is not None and not m.inherit and member != role_id:
            continue
        for rm in s.role_members:
            if rm.member_id == member and rm.role_id not in out:
                out.add(rm.role_id)
                todo.append(rm.role_id)
    return out


def _enabled_roles(s: Snapshot) -> list[Row]:
    return [(r.name, role_name(s, x)) for r in s.roles for x in sorted(_usable_roles(s, r.id))]


def _applicable_roles(s: Snapshot) -> list[Row]:
    out = []
    for r in s.roles:
        usable = _usable_roles(s, r.id)
        out += [(r.name, role_name(s, m.member_id), role_name(s, m.role_id), "NO")
                for m in s.role_members if m.member_id in usable]
    return out


def _grants(s: Snapshot, i: Item) -> list[tuple[str, str, str, bool]]:
    """(grantor, grantee, privilege letters, grantee is the owner) of a relation."""
    out = []
    for e in item_acl(s, i):
        grantee, _, rest = e.partition("=")
        letters, _, grantor = rest.partition("/")
        out.append((role_name(s, grantor) or grantor, role_name(s, grantee) if grantee else "PUBLIC", letters,
                    grantee == i.owner_id))
    return out


def _table_grants_of(s: Snapshot, i: Item) -> list[Row]:
    if not _in_information_schema(relation_kind(i)):
        return []
    return [_GRANTS_ROW(grantor=grantor, grantee=grantee, table_catalog=i.database_name, table_schema=i.schema_name,
                        table_name=i.name, privilege_type=_PRIVILEGE[p], is_grantable=_yes(owner),
                        with_hierarchy=_yes(p == "r"), database_name=i.database_name)
            for grantor, grantee, letters, owner in _grants(s, i) for p in letters if p in _PRIVILEGE]


def _column_privileges_of(s: Snapshot, i: Item) -> list[Row]:
    if not _in_information_schema(relation_kind(i)):
        return []
    return [_COLUMN_PRIVILEGES_ROW(grantor=grantor, grantee=grantee, table_catalog=i.database_name,
                                   table_schema=i.schema_name, table_name=i.name, column_name=c.name,
                                   privilege_type=_PRIVILEGE[p], is_grantable=_yes(owner),
                                   database_name=i.database_name)
            for grantor, grantee, letters, owner in _grants(s, i) for c in i.columns for p in letters
            if p in _COLUMN_PRIVILEGES]


def _character_sets(s: Snapshot) -> list[Row]:
    """The databases' one character set, UTF8, and their collation, C (pg_database)."""
    return [_CHARACTER_SETS_ROW(character_set_name="UTF8", character_repertoire="UCS", form_of_use="UTF8",
                                default_collate_schema=PG_CATALOG, default_collate_name="C")]


def _none(s: Snapshot) -> list[Row]:
    return []


TABLES: list[BuiltinTable] = []
VIEWS: list[BuiltinView] = []
_IS = INFORMATION_SCHEMA
_ENABLED = f"(SELECT role_name FROM {_IS}.enabled_roles)"


def _add(pair: tuple[BuiltinTable, BuiltinView]) -> None:
    TABLES.append(pair[0])
    VIEWS.append(pair[1])


def _all_nullable(columns: Columns, *not_null: str) -> frozenset[str]:
    return frozenset(n for n, _ in columns if n not in not_null)


def _per_database(name: str, n: int, hidden: int, columns: Columns, compute: Any, not_null: tuple[str, ...],
                  current: tuple[str, ...], where: str = "") -> None:
    """An information_schema view of the session's database: the `current` columns show it
    (for the system's objects too, whose rows have none)."""
    _add(per_database(_IS, name, n, hidden, columns, compute, _all_nullable(columns, *not_null), current, where))


_per_database("schemata", 660, 680, SCHEMATA, _schemata, ("schema_name",), ("catalog_name",))
_per_database("tables", 661, 681, TABLES_COLUMNS, ItemRows(_tables_of),
              ("table_schema", "table_name", "table_type", "is_insertable_into", "is_typed"), ("table_catalog",))
_per_database("views", 662, 682, VIEWS_COLUMNS, ItemRows(_views_of), ("table_schema", "table_name",
                                                                      "view_definition"), ("table_catalog",))
_per_database("columns", 663, 683, COLUMNS, ItemRows(_columns_of),
              ("table_schema", "table_name", "column_name", "ordinal_position", "is_nullable", "data_type",
               "udt_schema", "udt_name"), ("table_catalog", "udt_catalog"))
_per_database("table_constraints", 664, 684, TABLE_CONSTRAINTS, ItemRows(_constraints_of),
              ("constraint_schema", "constraint_name", "table_schema", "table_name", "constraint_type"),
              ("constraint_catalog", "table_catalog"))
_per_database("routines", 667, 685, ROUTINES, _routines,
              ("specific_schema", "specific_name", "routine_schema", "routine_name"),
              ("specific_catalog", "routine_catalog", "type_udt_catalog"))
_per_database("parameters", 668, 686, PARAMETERS, _parameters, ("specific_schema", "specific_name",
                                                                 "ordinal_position"), ("specific_catalog", "udt_catalog"))
_per_database("role_table_grants", 672, 687, ROLE_TABLE_GRANTS, ItemRows(_table_grants_of),
              ("grantor", "grantee", "table_schema", "table_name", "privilege_type"), ("table_catalog",),
              f" AND (x.grantor IN {_ENABLED} OR x.grantee IN {_ENABLED})")
_per_database("column_privileges", 673, 688, COLUMN_PRIVILEGES, ItemRows(_column_privileges_of),
              ("grantor", "grantee", "table_schema", "table_name", "column_name", "privilege_type"),
              ("table_catalog",), f" AND (x.grantor IN {_ENABLED} OR x.grantee IN {_ENABLED} OR x.grantee = 'PUBLIC')")
_per_database("character_sets", 669, 691, CHARACTER_SETS, _character_sets,
              ("character_set_name", "character_repertoire", "form_of_use", "default_collate_schema",
               "default_collate_name"), ("default_collate_catalog",))

# roles: every role's view, kept for the current user
_ENABLED_COLUMNS = _cols("role_name")
_APPLICABLE_COLUMNS = _cols("grantee role_name is_grantable", {"grantee": NAME})
TABLES += [
    BuiltinTable(MZ_INTERNAL, "information_schema_enabled_roles_all", *ids(689),
                 (("for_role", NAME), *_ENABLED_COLUMNS), _enabled_roles),
    BuiltinTable(MZ_INTERNAL, "information_schema_applicable_roles_all", *ids(690),
                 (("for_role", NAME), *_APPLICABLE_COLUMNS), _applicable_roles),
    # weir has no keys or foreign keys
    BuiltinTable(_IS, "key_column_usage", *ids(665), _cols(
        "constraint_catalog constraint_schema constraint_name table_catalog table_schema table_name column_name "
        "ordinal_position position_in_unique_constraint"), _none),
    BuiltinTable(_IS, "referential_constraints", *ids(666), _cols(
        "constraint_catalog constraint_schema constraint_name unique_constraint_catalog unique_constraint_schema "
        "unique_constraint_name match_option update_rule delete_rule"), _none),
]
VIEWS += [
    BuiltinView(_IS, "enabled_roles", *ids(671), _ENABLED_COLUMNS,
                f"SELECT x.role_name FROM {MZ_INTERNAL}.information_schema_enabled_roles_all x "
                "WHERE x.for_role = current_user"),
    BuiltinView(_IS, "applicable_roles", *ids(670), _APPLICABLE_COLUMNS,
                f"SELECT x.grantee, x.role_name, x.is_grantable FROM {MZ_INTERNAL}.information_schema_applicable_"
                "roles_all x WHERE x.for_role = current_user"),
]
