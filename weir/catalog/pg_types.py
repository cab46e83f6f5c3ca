"""weir's types as PostgreSQL's pg_type shows them.

The oid, length, element and array type of each row come from the type map
(weir.types); what PostgreSQL says of a type beyond that (its internal name, category,
alignment, the functions drivers read in typinput / typreceive ...) is PostgreSQL 15's
own catalog data, kept here for the base types. Array types are derived from their
element, as PostgreSQL defines every array type.
"""

from __future__ import annotations

from typing import Any

from weir.types import BY_OID, PgType

Row = tuple[Any, ...]

# oid: (typname, typbyval, typtype, typcategory, typispreferred, typdelim, typelem, typsubscript,
#       typinput, typoutput, typreceive, typsend, typmodin, typmodout, typanalyze, typalign,
#       typstorage, typcollation), as in PostgreSQL 15's pg_type ('-' is no function).
_FACTS: dict[int, tuple[Any, ...]] = {
    16: ("bool", True, "b", "B", True, ",", 0, "-", "boolin", "boolout", "boolrecv", "boolsend", "-", "-", "-",
         "c", "p", 0),
    17: ("bytea", False, "b", "U", False, ",", 0, "-", "byteain", "byteaout", "bytearecv", "byteasend", "-", "-",
         "-", "i", "x", 0),
    18: ("char", True, "b", "Z", False, ",", 0, "-", "charin", "charout", "charrecv", "charsend", "-", "-", "-",
         "c", "p", 0),
    19: ("name", False, "b", "S", False, ",", 18, "raw_array_subscript_handler", "namein", "nameout", "namerecv",
         "namesend", "-", "-", "-", "c", "p", 950),
    20: ("int8", True, "b", "N", False, ",", 0, "-", "int8in", "int8out", "int8recv", "int8send", "-", "-", "-",
         "d", "p", 0),
    21: ("int2", True, "b", "N", False, ",", 0, "-", "int2in", "int2out", "int2recv", "int2send", "-", "-", "-",
         "s", "p", 0),
    22: ("int2vector", False, "b", "A", False, ",", 21, "array_subscript_handler", "int2vectorin",
         "int2vectorout", "int2vectorrecv", "int2vectorsend", "-", "-", "-", "i", "p", 0),
    23: ("int4", True, "b", "N", False, ",", 0, "-", "int4in", "int4out", "int4recv", "int4send", "-", "-", "-",
         "i", "p", 0),
    24: ("regproc", True, "b", "N", False, ",", 0, "-", "regprocin", "regprocout", "regprocrecv", "regprocsend",
         "-", "-", "-", "i", "p", 0),
    25: ("text", False, "b", "S", True, ",", 0, "-", "textin", "textout", "textrecv", "textsend", "-", "-", "-",
         "i", "x", 100),
    26: ("oid", True, "b", "N", True, ",", 0, "-", "oidin", "oidout", "oidrecv", "oidsend", "-", "-", "-", "i",
         "p", 0),
    30: ("oidvector", False, "b", "A", False, ",", 26, "array_subscript_handler", "oidvectorin", "oidvectorout",
         "oidvectorrecv", "oidvectorsend", "-", "-", "-", "i", "p", 0),
    114: ("json", False, "b", "U", False, ",", 0, "-", "json_in", "json_out", "json_recv", "json_send", "-", "-",
          "-", "i", "x", 0),
    194: ("pg_node_tree", False, "b", "Z", False, ",", 0, "-", "pg_node_tree_in", "pg_node_tree_out",
          "pg_node_tree_recv", "pg_node_tree_send", "-", "-", "-", "i", "x", 100),
    700: ("float4", True, "b", "N", False, ",", 0, "-", "float4in", "float4out", "float4recv", "float4send", "-",
          "-", "-", "i", "p", 0),
    701: ("float8", True, "b", "N", True, ",", 0, "-", "float8in", "float8out", "float8recv", "float8send", "-",
          "-", "-", "d", "p", 0),
    705: ("unknown", False, "p", "X", False, ",", 0, "-", "unknownin", "unknownout", "unknownrecv",
          "unknownsend", "-", "-", "-", "c", "p", 0),
    1033: ("aclitem", False, "b", "U", False, ",", 0, "-", "aclitemin", "aclitemout", "-", "-", "-", "-", "-",
           "i", "p", 0),
    1042: ("bpchar", False, "b", "S", False, ",", 0, "-", "bpcharin", "bpcharout", "bpcharrecv", "bpcharsend",
           "bpchartypmodin", "bpchartypmodout", "-", "i", "x", 100),
    1043: ("varchar", False, "b", "S", False, ",", 0, "-", "varcharin", "varcharout", "varcharrecv",
           "varcharsend", "varchartypmodin", "varchartypmodout", "-", "i", "x", 100),
    1082: ("date", True, "b", "D", False, ",", 0, "-", "date_in", "date_out", "date_recv", "date_send", "-", "-",
           "-", "i", "p", 0),
    1114: ("timestamp", True, "b", "D", False, ",", 0, "-", "timestamp_in", "timestamp_out", "timestamp_recv",
           "timestamp_send", "timestamptypmodin", "timestamptypmodout", "-", "d", "p", 0),
    1184: ("timestamptz", True, "b", "D", True, ",", 0, "-", "timestamptz_in", "timestamptz_out",
           "timestamptz_recv", "timestamptz_send", "timestamptztypmodin", "timestamptztypmodout", "-", "d", "p", 0),
    1186: ("interval", False, "b", "T", True, ",", 0, "-", "interval_in", "interval_out", "interval_recv",
           "interval_send", "intervaltypmodin", "intervaltypmodout", "-", "d", "p", 0),
    1700: ("numeric", False, "b", "N", False, ",", 0, "-", "numeric_in", "numeric_out", "numeric_recv",
           "numeric_send", "numerictypmodin", "numerictypmodout", "-", "i", "m", 0),
    2950: ("uuid", False, "b", "U", False, ",", 0, "-", "uuid_in", "uuid_out", "uuid_recv", "uuid_send", "-", "-",
           "-", "c", "p", 0),
    3802: ("jsonb", False, "b", "U", False, ",", 0, "jsonb_subscript_handler", "jsonb_in", "jsonb_out",
           "jsonb_recv", "jsonb_send", "-", "-", "-", "i", "x", 0),
    # weir's own (Materialize's oid), in mz_catalog
    16552: ("mz_timestamp", True, "b", "U", False, ",", 0, "-", "mz_timestamp_in", "mz_timestamp_out",
            "mz_timestamp_recv", "mz_timestamp_send", "-", "-", "-", "d", "p", 0),
}

# Types pg_proc's functions name that are not values weir stores: pg_typeof's result, and the
# pseudo-types of polymorphic functions. oid: (typlen, typarray, facts as above).
_REFERENCED: dict[int, tuple[int, int, tuple[Any, ...]]] = {
    2206: (4, 2211, ("regtype", True, "b", "N", False, ",", 0, "-", "regtypein", "regtypeout", "regtyperecv",
                     "regtypesend", "-", "-", "-", "i", "p", 0)),
    2276: (4, 0, ("any", True, "p", "P", False, ",", 0, "-", "any_in", "any_out", "-", "-", "-", "-", "-", "i",
                  "p", 0)),
    2277: (-1, 0, ("anyarray", False, "p", "P", False, ",", 0, "-", "anyarray_in", "anyarray_out",
                   "anyarray_recv", "anyarray_send", "-", "-", "-", "d", "x", 0)),
    2283: (4, 0, ("anyelement", True, "p", "P", False, ",", 0, "-", "anyelement_in", "anyelement_out", "-", "-",
                  "-", "-", "-", "i", "p", 0)),
    2776: (4, 0, ("anynonarray", True, "p", "P", False, ",", 0, "-", "anynonarray_in", "anynonarray_out", "-",
                  "-", "-", "-", "-", "i", "p", 0)),
    5077: (4, 0, ("anycompatible", True, "p", "P", False, ",", 0, "-", "anycompatible_in", "anycompatible_out",
                  "-", "-", "-", "-", "-", "i", "p", 0)),
    5078: (-1, 0, ("anycompatiblearray", False, "p", "P", False, ",", 0, "-", "anycompatiblearray_in",
                   "anycompatiblearray_out", "anycompatiblearray_recv", "anycompatiblearray_send", "-", "-", "-",
                   "d", "x", 0)),
}

WEIR_SCHEMA_TYPES = frozenset({16552, 16553})  # in mz_catalog; every other type is in pg_catalog


def _array_facts(element: PgType) -> tuple[Any, ...]:
    """PostgreSQL's facts of the array type of `element` (every array type's are alike)."""
    e = _FACTS[element.oid]
    return ("_" + e[0], False, "b", "A", False, ",", element.oid, "array_subscript_handler", "array_in",
            "array_out", "array_recv", "array_send", e[12], e[13], "array_typanalyze",
            "d" if e[15] == "d" else "i", "x", e[17])


def facts(t: PgType) -> tuple[Any, ...]:
    """What pg_type says of `t` beyond the type map (see _FACTS)."""
    if t.oid in _FACTS:
        return _FACTS[t.oid]
    assert t.element is not None, t.name
    return _array_facts(t.element)


def typname(t: PgType) -> str:
    """The type's name in pg_type (int4, _text), as information_schema's udt_name shows it."""
    return str(facts(t)[0])


def type_rows(pg_catalog_oid: int, mz_catalog_oid: int, owner_oid: int) -> list[Row]:
    """pg_type's rows, in its column order (PostgreSQL 15's): every type of weir.types, then
    the pseudo-types pg_proc names."""
    out = []
    types = [(t.oid, t.typlen, t.array_oid, t.element.oid if t.element is not None else None, facts(t))
             for t in sorted(BY_OID.values(), key=lambda t: t.oid)]
    types += [(oid, length, array, None, f) for oid, (length, array, f) in sorted(_REFERENCED.items())]
    for oid, typlen, typarray, element, f in types:
        (name, byval, typtype, category, preferred, delim, elem, subscript, tin, tout, trecv, tsend, modin, modout,
         analyze, align, storage, collation) = f
        namespace = mz_catalog_oid if oid in WEIR_SCHEMA_TYPES else pg_catalog_oid
        out.append((oid, name, namespace, owner_oid, typlen, byval, typtype, category, preferred, True, delim, 0,
                    subscript, element if element is not None else elem, typarray, tin, tout, trecv, tsend, modin,
                    modout, analyze, align, storage, False, 0, -1, 0, collation, None, None, None))
    return out


def referenced_typname(oid: int) -> str:
    """pg_type's name of any type pg_type lists (weir's, and the pseudo-types)."""
    if oid in _REFERENCED:
        return str(_REFERENCED[oid][2][0])
    return typname(BY_OID[oid])


def format_name(oid: int) -> str:
    """The type's name as format_type() gives it without a typmod (information_schema's
    data_type): the SQL name, "any" quoted like "char"."""
    if oid in _REFERENCED:
        name = referenced_typname(oid)
        return '"any"' if name == "any" else name
    t = BY_OID[oid]
    if t.element is not None and t.oid not in _FACTS:
        return format_name(t.element.oid) + "[]"
    return "timestamp without time zone" if t.oid == 1114 else "character" if t.oid == 1042 else t.name
