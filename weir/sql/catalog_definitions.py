"""PostgreSQL's definition functions as plain SQL over the catalog relations (for
weir.sql.catalog_functions, which fills them in): pg_get_viewdef, pg_get_constraintdef and
pg_get_indexdef, whole or one key column at a time (pgjdbc's getIndexInfo, SQLAlchemy's
index reflection), and the quoting of names they use. Templates take their arguments as
{0}, {1} ...; they run the same on a Spark replica and in process (weir.sql.in_process)."""

from __future__ import annotations

# PostgreSQL 15's keywords that quote_ident quotes (kwlist.h: every category but unreserved)
QUOTED_KEYWORDS = frozenset("""
all analyse analyze and any array as asc asymmetric both case cast check collate column constraint
create current_catalog current_date current_role current_time current_timestamp current_user default
deferrable desc distinct do else end except false fetch for foreign from grant group having in
initially intersect into lateral leading limit localtime localtimestamp not null offset on only or
order placing primary references returning select session_user some symmetric table then to
trailing true union unique user using variadic when where window with
between bigint bit boolean char character coalesce dec decimal exists extract float greatest
grouping inout int integer interval least national nchar none normalize nullif numeric out overlay
position precision real row setof smallint substring time timestamp treat trim values varchar
xmlattributes xmlconcat xmlelement xmlexists xmlforest xmlnamespaces xmlparse xmlpi xmlroot
xmlserialize xmltable
authorization binary collation concurrently cross current_schema freeze full ilike inner is isnull
join left like natural notnull outer overlaps right similar tablesample verbose
""".split())



_KEYWORD_LIST = ", ".join(f"'{k}'" for k in sorted(QUOTED_KEYWORDS))


def quote_ident_sql(s: str) -> str:
    """quote_ident(s): PostgreSQL's quote_identifier (safe characters, keywords quoted)."""
    return (f"CASE WHEN {s} ~ '^[a-z_][a-z0-9_]*$' AND {s} NOT IN ({_KEYWORD_LIST}) THEN {s} "
            f"ELSE '\"' || replace({s}, '\"', '\"\"') || '\"' END")


_INDEXDEF = ("(SELECT max(weir_i.indexdef) FROM pg_catalog.pg_class weir_c "
             "JOIN pg_catalog.pg_namespace weir_n ON weir_n.oid = weir_c.relnamespace "
             "JOIN pg_catalog.pg_indexes weir_i ON weir_i.schemaname = weir_n.nspname "
             "AND weir_i.indexname = weir_c.relname WHERE weir_c.oid = {0})")

TEMPLATES: dict[tuple[str, int], str] = {
    ("pg_get_constraintdef", 1): "(SELECT max(CAST(NULL AS text)) FROM pg_catalog.pg_constraint weir_k "
                                 "WHERE weir_k.oid = {0})",
    ("pg_get_constraintdef", 2): "(SELECT max(CAST(NULL AS text)) FROM pg_catalog.pg_constraint weir_k "
                                 "WHERE weir_k.oid = {0})",
    ("pg_get_viewdef", 1): "(SELECT max(weir_v.definition) FROM pg_catalog.pg_class weir_c "
                           "JOIN pg_catalog.pg_namespace weir_n ON weir_n.oid = weir_c.relnamespace "
                           "JOIN (SELECT schemaname, viewname, definition FROM pg_catalog.pg_views "
                           "UNION ALL SELECT schemaname, matviewname, definition FROM pg_catalog.pg_matviews) "
                           "weir_v ON weir_v.schemaname = weir_n.nspname AND weir_v.viewname = weir_c.relname "
                           "WHERE weir_c.oid = {0})",
    ("pg_get_indexdef", 1): _INDEXDEF,
}

# an expression key that is one function call (one level of nested parentheses at most)
# prints bare, any other in parentheses, as PostgreSQL's pg_get_indexdef prints them
_CALL = r"'^[A-Za-z_][A-Za-z0-9_$.]*\([^()]*(\([^()]*\)[^()]*)*\)$'"

# the n-th key of the index: its column's name, or its expression
_KEY = ("(SELECT max(CASE WHEN weir_ic.on_position IS NOT NULL THEN " + quote_ident_sql("weir_col.name")
        + f" WHEN weir_ic.on_expression ~ {_CALL} THEN weir_ic.on_expression "
        "ELSE '(' || weir_ic.on_expression || ')' END) "
        "FROM mz_catalog.mz_indexes weir_ix JOIN mz_catalog.mz_index_columns weir_ic ON weir_ic.index_id = weir_ix.id "
        "LEFT JOIN mz_catalog.mz_columns weir_col ON weir_col.id = weir_ix.on_id "
        "AND weir_col.position = weir_ic.on_position "
        "WHERE weir_ix.oid = {0} AND weir_ic.index_position = {1})")
_INDEX_EXISTS = "(SELECT max(weir_ix.oid) FROM mz_catalog.mz_indexes weir_ix WHERE weir_ix.oid = {0})"


def indexdef_sql(arg_count: int) -> str:
    """pg_get_indexdef(index) or pg_get_indexdef(index, column_no, pretty): column 0 is the
    whole definition; column n the n-th key's column name (quoted as needed) or expression,
    '' when the index has no such key; NULL for an oid that is no index, as for a NULL
    argument (the function is strict)."""
    if arg_count == 1:
        return _INDEXDEF
    return (f"CASE WHEN {{0}} IS NULL OR {{1}} IS NULL OR {{2}} IS NULL THEN CAST(NULL AS text) "
            f"WHEN {{1}} = 0 THEN {_INDEXDEF} "
            f"WHEN {_INDEX_EXISTS} IS NULL THEN CAST(NULL AS text) "
            f"ELSE coalesce({_KEY}, '') END")
