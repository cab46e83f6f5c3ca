"""PostgreSQL functions about what weir does not have or does not track, as plain SQL (for
weir.sql.catalog_functions, which fills the templates in: arguments are {0}, {1} ...), and
format() with a constant format string. Each answers what PostgreSQL answers where weir
has a truthful answer; a quantity weir does not track is NULL (unknown), never 0."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from weir.errors import SqlState, runtime_marker
from weir.sql.catalog_definitions import quote_ident_sql

TEMPLATES: dict[tuple[str, int], str] = {
    # weir has no partitioned tables: PostgreSQL's answer for any other relation is NULL
    ("pg_get_partkeydef", 1): "CAST(NULL AS text)",
    # weir has no rewrite rules (pg_rewrite is empty): no oid is a rule's, and
    # pg_get_ruledef answers NULL for an oid that is not
    ("pg_get_ruledef", 1): "CAST(NULL AS text)",
    ("pg_get_ruledef", 2): "CAST(NULL AS text)",
    # weir's tablespaces are PostgreSQL's built-in two (pg_default 1663, pg_global 1664),
    # whose location PostgreSQL prints as '' (the data directory), as it does 0, a
    # relation's "default tablespace"; any other oid is none
    ("pg_tablespace_location", 1): "CASE WHEN {0} IN (0, 1663, 1664) THEN CAST('' AS text) "
                                   "ELSE CAST(NULL AS text) END",
    # weir does not track the bytes a relation takes on disk, nor how often an index is
    # scanned: unknown
    ("pg_relation_size", 1): "CAST(NULL AS bigint)",
    ("pg_relation_size", 2): "CAST(NULL AS bigint)",
    ("pg_total_relation_size", 1): "CAST(NULL AS bigint)",
    ("pg_table_size", 1): "CAST(NULL AS bigint)",
    ("pg_indexes_size", 1): "CAST(NULL AS bigint)",
    ("pg_stat_get_numscans", 1): "CAST(NULL AS bigint)",
    ("pg_database_size", 1): "CAST(NULL AS bigint)",
    # weir's functions are built in: none has an SQL body
    ("pg_get_function_sqlbody", 1): "CAST(NULL AS text)",
    ("pg_tablespace_size", 1): "CAST(NULL AS bigint)",
}



def _size_pretty() -> str:
    """pg_size_pretty(bytes) as PostgreSQL 15 prints a size: bytes below 10 kB, else the
    largest unit (kB ... PB) that keeps the number below 20480, halves rounded away from
    zero; each unit's number is the bytes divided, truncated, as PostgreSQL's int64 math."""
    size = "CAST({0} AS bigint)"

    def rounded(divided: str) -> str:
        return f"CAST(({divided} + CASE WHEN {divided} < 0 THEN -1 ELSE 1 END) / 2 AS text)"

    arms = [f"WHEN abs({size}) < 10240 THEN CAST({size} AS text) || ' bytes'"]
    for k, unit in enumerate(("kB", "MB", "GB", "TB")):
        divided = f"({size} / {2 ** (9 + 10 * k)})"
        arms.append(f"WHEN abs({divided}) < 20479 THEN {rounded(divided)} || ' {unit}'")
    return f"CASE WHEN {{0}} IS NULL THEN CAST(NULL AS text) {' '.join(arms)} ELSE {rounded(f'({size} / {2 ** 49})')} || ' PB' END"


# the sizes above print as PostgreSQL prints them (psql's \\dt+ and \\l+ call this)
TEMPLATES[("pg_size_pretty", 1)] = _size_pretty()

# what format()'s %I of a NULL raises, filled in by weir.sql.catalog_functions
NULL_IDENTIFIER = "weir_format_null_identifier"


def format_sql(pattern: str, arg_count: int) -> str | None:
    """format(pattern, {1}, {2} ...) as a concatenation: %s is the argument's text ('' for
    NULL), %I the argument quoted as an identifier (an error for NULL), %% a percent sign.
    None (format() stays refused) for anything else (%L, positions, widths) and for fewer
    arguments than the pattern takes (PostgreSQL's error)."""
    parts: list[str] = []
    text, used, i = "", 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch != "%":
            text += ch
            i += 1
            continue
        spec = pattern[i + 1:i + 2]
        i += 2
        if spec == "%":
            text += "%"
            continue
        if spec not in ("s", "I"):
            return None
        used += 1
        if used > arg_count:
            return None
        if text:
            parts.append("'" + text.replace("'", "''") + "'")
            text = ""
        value = f"CAST({{{used}}} AS text)"
        parts.append(f"coalesce({value}, '')" if spec == "s"
                     else f"coalesce({quote_ident_sql(value)}, {NULL_IDENTIFIER}())")
    if text or not parts:
        parts.append("'" + text.replace("'", "''") + "'")
    return "CAST(" + " || ".join(parts) + " AS text)"


def format_call(args: list[exp.Expression],
                fill: Callable[[str, list[exp.Expression]], exp.Expression]) -> exp.Expression | None:
    """format('constant', ...) rewritten (`fill` puts the arguments in a template)."""
    template = format_sql(args[0].this, len(args) - 1)
    if template is None:
        return None
    fail = exp.Anonymous(this="raise_error", expressions=[exp.Literal.string(runtime_marker(
        SqlState.NULL_VALUE_NOT_ALLOWED, "null values cannot be formatted as an SQL identifier"))])
    fail.meta["weir_literal"] = True  # weir's own Spark call: weir.sql.functions lets it pass
    return fill(template, args).transform(
        lambda n: fail.copy() if isinstance(n, exp.Anonymous) and n.name == NULL_IDENTIFIER else n)
