"""Join trees that keep PostgreSQL's meaning on their way to Spark SQL.

Two places lose it: a parenthesised join `(x JOIN y ON ...)` is one sqlglot Table
node carrying the other join operands in its `joins`, so replacing that Table by a
collection's view must carry them over; and a FROM list `x, y RIGHT JOIN z ON ...`
is, in PostgreSQL, `x CROSS JOIN (y RIGHT JOIN z ON ...)` (a comma binds loosest),
while Spark folds it left-deep as `(x, y) RIGHT JOIN z`, NULL-extending x too.
"""

from __future__ import annotations

from sqlglot import exp

_JOIN_KEYS = ("joins", "laterals", "pivots")


def replace_table(table: exp.Table, new: exp.Expression) -> exp.Expression:
    """Replace `table` by `new`, keeping the join operands a parenthesised join hangs
    on its first table (without them `(t x CROSS JOIN t y)` reads as just `t x`) and
    the column names of its alias (`t AS x (c, d)` renames t's columns)."""
    old_alias = table.args.get("alias")
    new_alias = new.args.get("alias")
    if old_alias is not None and old_alias.columns and new_alias is not None:
        new_alias.set("columns", [c.copy() for c in old_alias.columns])
    for key in _JOIN_KEYS:
        value = table.args.get(key)
        if value:
            new.set(key, list(value))
    return table.replace(new)


def _is_comma(join: exp.Join) -> bool:
    """`FROM a, b`: sqlglot's Join with no kind, side, method and no condition."""
    return not any(join.args.get(k) for k in ("on", "using", "kind", "side", "method"))


def group_comma_joins(expr: exp.Expression) -> exp.Expression:
    """Parenthesise each comma-separated FROM item that has explicit joins of its own,
    so Spark joins them as PostgreSQL does: `FROM x, y RIGHT JOIN z ON c` becomes
    `FROM x, (y RIGHT JOIN z ON c)`. Returns a copy when anything changes."""
    if not any(_needs_grouping(s) for s in expr.find_all(exp.Select)):
        return expr
    expr = expr.copy()
    for select in list(expr.find_all(exp.Select)):
        if _needs_grouping(select):
            _group(select)
    return expr


def _needs_grouping(select: exp.Select) -> bool:
    joins = select.args.get("joins") or []
    return any(_is_comma(j) for j in joins) and any(
        not _is_comma(j) for j in joins[next(i for i, j in enumerate(joins) if _is_comma(j)):])


def _group(select: exp.Select) -> None:
    joins: list[exp.Join] = list(select.args.get("joins") or [])
    out: list[exp.Join] = []
    i = 0
    while i < len(joins):
        j = joins[i]
        if not _is_comma(j):  # explicit joins of the first FROM item stay where they are
            out.append(j)
            i += 1
            continue
        k = i + 1
        while k < len(joins) and not _is_comma(joins[k]):
            k += 1
        if k == i + 1 or isinstance(j.this, exp.Lateral):
            out.extend(joins[i:k])
        else:
            head = _joinable(j.this.copy())
            head.set("joins", [x.copy() for x in joins[i + 1:k]])
            out.append(exp.Join(this=exp.Subquery(this=head)))
        i = k
    select.set("joins", out)


def _joinable(item: exp.Expression) -> exp.Expression:
    """A FROM item that can carry joins: sqlglot renders a VALUES list's joins before its
    alias (`(VALUES (2) RIGHT JOIN ... AS b(y))`, a syntax error), a subquery's after it."""
    alias = item.args.get("alias")
    if not isinstance(item, exp.Values) or alias is None:
        return item
    item.set("alias", None)
    return exp.Subquery(this=item, alias=alias)
