"""format_type(type oid, typmod) as SQL over weir's types: the type's name as PostgreSQL
writes it, with its modifier (also regtype's output and pg_get_function_arguments' names)."""

from __future__ import annotations

from weir.sql.catalog_templates import quote_literal
from weir.types import BY_OID

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


TYPE_NAMES: dict[int, str] = {**{oid: _format_name(oid) for oid in BY_OID}, **_PSEUDO}
_WITH_LENGTH = {1043: "character varying", 1042: "character"}
_WITH_PRECISION = {1114: ("timestamp", " without time zone"), 1184: ("timestamp", " with time zone")}


def format_type_sql(t: str, m: str | None, unknown: str = "'???'") -> str:
    """format_type(t, m) as a CASE over weir's types (pg_type's rows are weir's types); oid 0
    is '-' and an oid of no type `unknown` (format_type's '???', regtype's the number)."""
    base = " ".join(f"WHEN {oid} THEN {quote_literal(name)}" for oid, name in TYPE_NAMES.items())
    base_case = f"CASE {t} WHEN 0 THEN '-' {base} ELSE {unknown} END"
    if m is None:
        return f"CASE WHEN {t} IS NULL THEN NULL ELSE {base_case} END"
    mods = [f"WHEN {t} = {oid} THEN {quote_literal(name + '(')} || CAST({m} - 4 AS text) || ')'"
            for oid, name in _WITH_LENGTH.items()]
    mods += [f"WHEN {t} = {oid} THEN {quote_literal(a + '(')} || CAST({m} AS text) || {quote_literal(')' + b)}"
             for oid, (a, b) in _WITH_PRECISION.items()]
    mods.append(f"WHEN {t} = 1700 THEN 'numeric(' || CAST(({m} - 4) / 65536 AS text) || ',' || "
                f"CAST(({m} - 4) % 65536 AS text) || ')'")
    return (f"CASE WHEN {t} IS NULL THEN NULL WHEN {m} IS NULL OR {m} < 0 THEN {base_case} "
            f"{' '.join(mods)} ELSE {base_case} END")
