"""information_schema._pg_expandarray(a) (issue 14): PostgreSQL's set-returning function
over an index's or a constraint's key array, which pgjdbc's getPrimaryKeys and getIndexInfo
call in a select list, written before name resolution as a lateral
`unnest(a) WITH ORDINALITY` joined to the select's FROM (weir.sql.catalog_functions)."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from weir.errors import SqlState, WeirError

EXPAND = "_pg_expandarray"


def _expand_call(node: exp.Expression) -> exp.Anonymous | None:
    """The _pg_expandarray(a) call `node` is, qualified with information_schema or not."""
    if isinstance(node, exp.Dot) and isinstance(node.this, exp.Identifier) \
            and node.this.name.lower() == "information_schema":
        node = node.expression
    return node if isinstance(node, exp.Anonymous) and node.name.lower() == EXPAND else None


def expand_arrays(tree: exp.Expression) -> None:
    """information_schema._pg_expandarray(a) in a select list (pgjdbc's getPrimaryKeys,
    getIndexInfo): a row per element, (x the element, n its position from 1); its calls in
    one select list run in lockstep. Written as `unnest(a) WITH ORDINALITY AS weir_e(x, n)`
    joined to the select's FROM: `(call).x` / `.n` are its columns, and a bare call named k
    (a record, which weir does not have) is two columns, k__x and k__n, which
    `(q.k).x` / `.n` read."""
    records: set[str] = set()
    for select in list(tree.find_all(exp.Select)):
        calls = [c for c in select.find_all(exp.Anonymous) if c.name.lower() == EXPAND
                 and c.find_ancestor(exp.Select) is select]
        if not calls:
            continue
        if len({c.sql() for c in calls}) != 1 or len(calls[0].expressions) != 1 \
                or (select.args.get("from_") or select.args.get("from")) is None:
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "_pg_expandarray() of several arrays in one select list")
        array = calls[0].expressions[0].copy()
        for call in calls:
            node = call.parent if isinstance(call.parent, exp.Dot) and _expand_call(call.parent) else call
            field = node.parent.parent if isinstance(node.parent, exp.Paren) else None
            if isinstance(field, exp.Dot) and field.name.lower() in ("x", "n"):
                field.replace(_element(field.name.lower()))
            elif isinstance(node.parent, exp.Alias) and node.parent.parent is select:
                name = node.parent.alias if node.parent.args["alias"].quoted else node.parent.alias.lower()
                records.add(name)
                node.parent.replace(exp.alias_(_element("x"), f"{name}__x", quoted=True))
                select.select(exp.alias_(_element("n"), f"{name}__n", quoted=True), copy=False)
            else:
                raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "_pg_expandarray() used this way")
        rows = sqlglot.parse_one("SELECT 1 FROM t, unnest(__weir_arg0) WITH ORDINALITY AS weir_e(x, n)",
                                read="postgres").args["joins"][0]
        rows.find(exp.Column).replace(array)
        select.append("joins", rows)
    for dot in list(tree.find_all(exp.Dot)):
        inner = dot.this.this if isinstance(dot.this, exp.Paren) else None
        if isinstance(inner, exp.Column) and inner.name.lower() in records and dot.name.lower() in ("x", "n"):
            dot.replace(exp.column(f"{inner.name.lower()}__{dot.name.lower()}", table=inner.table or None,
                                   quoted=True))


def _element(field: str) -> exp.Expression:
    """weir_e.x, or weir_e.n as _pg_expandarray's int (ordinality's is a bigint)."""
    col = exp.column(field, table="weir_e")
    return col if field == "x" else exp.Cast(this=col, to=exp.DataType.build("INT"))
