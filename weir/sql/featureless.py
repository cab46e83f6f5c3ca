"""pg_catalog relations of features weir does not have (row-level security policies,
publications, extended statistics, inheritance, triggers, rewrite rules) are always empty.
Tools still query them, with SQL weir cannot run on Spark (psql's `\\d t` reads policies
with `ARRAY(SELECT ... correlated ...)`, publications with a correlated generate_series):
in a SELECT that reads one of them through an inner join, a result column computed by a
subquery is NULL (text, the type these columns have), since the SELECT has no rows for it
to be computed on. Everything else about the query, its other columns included, is kept."""

from __future__ import annotations

from sqlglot import exp

# The catalog defines each of these with no rows (weir.catalog.builtin_pg_system /
# builtin_pg_catalog; tests/unit/test_pg_catalog.py checks the two lists agree).
ALWAYS_EMPTY = frozenset({
    "pg_policy", "pg_publication", "pg_publication_namespace", "pg_publication_rel",
    "pg_statistic_ext", "pg_inherits", "pg_trigger", "pg_rewrite", "pg_event_trigger",
})


def prune(expr: exp.Expression) -> exp.Expression:
    """The query with subquery columns of SELECTs over an always-empty relation as NULL."""
    if not any(_reads_empty(s) for s in expr.find_all(exp.Select)):
        return expr
    expr = expr.copy()
    for select in [s for s in expr.find_all(exp.Select) if _reads_empty(s)]:
        for i, p in enumerate(list(select.expressions)):
            value = p.this if isinstance(p, exp.Alias) else p
            if value.find(exp.Select) is None:
                continue
            name = p.alias if isinstance(p, exp.Alias) else _name(value)
            null = exp.Cast(this=exp.Null(), to=exp.DataType.build("text"))
            select.expressions[i].replace(exp.alias_(null, name, quoted=True))
    return expr


def _reads_empty(select: exp.Select) -> bool:
    """Whether the SELECT's FROM or an inner / cross join of it names an always-empty
    pg_catalog relation (no rows can come out of it)."""
    from_ = select.args.get("from_") or select.args.get("from")
    tables = [from_.this] if from_ is not None else []
    for join in select.args.get("joins") or []:
        if not join.side and join.kind.upper() not in ("ANTI", "SEMI"):
            tables.append(join.this)
    return any(isinstance(t, exp.Table) and t.name in ALWAYS_EMPTY and t.db in ("", "pg_catalog")
               for t in tables)


def _name(value: exp.Expression) -> str:
    """PostgreSQL's name of a column that has no alias, for the kinds that reach here."""
    if isinstance(value, exp.Case):
        return "case"
    if isinstance(value, exp.Subquery) and isinstance(value.this, exp.Select) and value.this.expressions:
        first = value.this.expressions[0]
        return first.alias_or_name or "?column?"
    if isinstance(value, exp.Func):
        return value.sql_name().lower() if not isinstance(value, exp.Anonymous) else value.name.lower()
    return "?column?"
