"""Query shapes PostgreSQL rejects, or that Spark would silently compute differently,
checked before a query is translated. Each check names the construct in its error:
sqlglot parses much that PostgreSQL refuses (a window function inside a window's
ORDER BY, `PARTITION BY a, ORDER BY b`) and drops clauses Spark has no room for
(FOR UPDATE, FILTER on a window function), so without these weir answered such
queries with something else instead of an error."""

from __future__ import annotations

from sqlglot import exp

from weir.errors import SqlState, WeirError
from weir.sql import infer

# PostgreSQL's types weir does not have: a cast to one is refused (0A000) by name, never
# handed to Spark (which read '12:00'::time as today's timestamp and ::money as a decimal).
_PG_TYPES_NOT_SUPPORTED = frozenset("""
money time timetz time_tz bit varbit bit_varying xml inet cidr macaddr macaddr8 point line lseg box
path polygon circle tsvector tsquery regclass regtype regproc regprocedure regnamespace regoper
regoperator regrole regconfig regdictionary regcollation pg_lsn int2vector oidvector txid_snapshot
pg_snapshot int4range int8range numrange tsrange tstzrange daterange int4multirange record "char"
xid xid8 cid tid aclitem
""".split())

# Aggregates that skip NULL inputs: f(x) FILTER (WHERE c) is f(CASE WHEN c THEN x END).
_NULL_SKIPPING = (exp.Sum, exp.Avg, exp.Min, exp.Max, exp.Count, exp.LogicalAnd, exp.LogicalOr,
                  exp.Stddev, exp.StddevPop, exp.StddevSamp, exp.Variance, exp.VariancePop)


def not_supported(what: str) -> WeirError:
    return WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"{what} is not supported")


def check(tree: exp.Expression) -> None:
    """Raise for a shape weir must not run; rewrite window FILTERs in place."""
    for node in list(tree.walk()):
        if isinstance(node, exp.Select) and node.args.get("locks"):
            raise not_supported("SELECT ... FOR UPDATE/SHARE")
        elif isinstance(node, exp.Select) and isinstance(node.args.get("distinct"), exp.Distinct):
            _distinct_on(node)
        if isinstance(node, exp.Select) and node.args.get("group"):
            _grouped_using_columns(node)
        elif isinstance(node, exp.Cast):
            _cast_type(node.to)
        elif isinstance(node, exp.Window):
            _window(node)
        elif isinstance(node, (exp.GroupConcat, exp.ArrayAgg)):
            _distinct_order(node)


def _grouped_using_columns(select: exp.Select) -> None:
    """GROUP BY a JOIN ... USING column by its merged name, then a side's own column
    (`SELECT t1.f1 ... JOIN t2 USING (f1) GROUP BY f1`): PostgreSQL accepts it only when the
    merged column is that side's column as it is (same types; 42803 otherwise), Spark always.
    weir does not compare the sides' types here, so it refuses the shape."""
    using = {i.name.lower() for j in select.args.get("joins") or [] for i in j.args.get("using") or []}
    grouped = select.args["group"].expressions
    merged = {c.name.lower() for c in grouped if isinstance(c, exp.Column) and not c.table} & using
    qualified = {(c.table.lower(), c.name.lower()) for c in grouped if isinstance(c, exp.Column) and c.table}
    if not merged:
        return
    for part in (*select.expressions, select.args.get("having"), select.args.get("order")):
        for col in part.find_all(exp.Column) if part is not None else []:
            if (col.table and col.name.lower() in merged and (col.table.lower(), col.name.lower()) not in qualified
                    and col.find_ancestor(exp.AggFunc, exp.Select) is select):
                raise not_supported(f"a side's column {col.table}.{col.name} under GROUP BY the JOIN ... USING "
                                    f"column {col.name}")


def _distinct_on(select: exp.Select) -> None:
    """DISTINCT ON as Spark can run it: row_number() OVER (PARTITION BY on ORDER BY order)
    in a subquery, the first row of each partition kept, then ORDER BY / LIMIT / OFFSET
    outside. (sqlglot's own rewrite dropped the ORDER BY of the result and read `1` in
    the window as the constant 1.)"""
    on = select.args["distinct"].args.get("on")
    if on is None:
        return
    from weir.sql.render import output_name

    outputs = select.expressions
    if any(isinstance(p, exp.Star) or isinstance(p, exp.Column) and isinstance(p.this, exp.Star)
           for p in outputs):
        raise not_supported("DISTINCT ON with * in the select list")
    by_alias = {p.alias: p.this for p in outputs if isinstance(p, exp.Alias)}

    def spelled(e: exp.Expression, clause: str) -> exp.Expression:
        if isinstance(e, exp.Literal) and not e.is_string and e.this.isdigit():
            k = int(e.this)
            if not 1 <= k <= len(outputs):
                raise WeirError(SqlState.INVALID_COLUMN_REFERENCE, f"{clause} position {k} is not in select list")
            p = outputs[k - 1]
            return (p.this if isinstance(p, exp.Alias) else p).copy()
        if isinstance(e, exp.Column) and not e.table and e.name in by_alias:
            return by_alias[e.name].copy()
        return e.copy()

    keys = [spelled(e, "DISTINCT ON") for e in on.expressions]
    order = select.args.get("order")
    ordered = [o.copy() for o in order.expressions] if order is not None else []
    for o in ordered:
        o.set("this", spelled(o.this, "ORDER BY"))
    names = [output_name(p) for p in outputs]
    inner = select.copy()
    for arg in ("distinct", "order", "limit", "offset"):
        inner.set(arg, None)
    rank = exp.Window(this=exp.RowNumber(), partition_by=keys,
                      order=exp.Order(expressions=[o.copy() for o in ordered]) if ordered else None)
    inner.set("expressions", [exp.alias_(p.this if isinstance(p, exp.Alias) else p, f"_weir_p{k}")
                              for k, p in enumerate(outputs)]
              + [exp.alias_(rank, "_weir_rn")]
              + [exp.alias_(o.this.copy(), f"_weir_o{k}") for k, o in enumerate(ordered)])
    outer = exp.select(*(exp.alias_(exp.column(f"_weir_p{k}"), n, quoted=True) for k, n in enumerate(names)))
    outer = outer.from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("_weir_d"))))
    outer = outer.where(exp.EQ(this=exp.column("_weir_rn"), expression=exp.Literal.number(1)))
    if ordered:
        outer.set("order", exp.Order(expressions=[
            exp.Ordered(this=exp.column(f"_weir_o{k}"), desc=o.args.get("desc"),
                        nulls_first=o.args.get("nulls_first")) for k, o in enumerate(ordered)]))
    for arg in ("limit", "offset"):
        outer.set(arg, select.args.get(arg))
    for arg in {*select.args, *outer.args}:
        select.set(arg, outer.args.get(arg))


def _cast_type(to: exp.DataType) -> None:
    if infer.datatype(to) is not None or to.this == exp.DataType.Type.USERDEFINED and (
            str(to.args.get("kind") or "").lower() == "mz_timestamp"):
        return
    name = to.sql(dialect="postgres").lower().split("(")[0].removesuffix("[]").strip()
    if name in _PG_TYPES_NOT_SUPPORTED or name.replace(" ", "_") in _PG_TYPES_NOT_SUPPORTED:
        raise not_supported(f'type "{name}"')
    raise WeirError(SqlState.UNDEFINED_OBJECT, f'type "{name}" does not exist')


def _window(window: exp.Window) -> None:
    spec_parts = [*(window.args.get("partition_by") or []), window.args.get("order")]
    for part in spec_parts:
        if part is not None and any(isinstance(n, exp.Window) for n in part.walk()):
            raise WeirError(SqlState.WINDOWING_ERROR,
                            "window functions are not allowed in window definitions")
    func = window.this
    if any(isinstance(n, exp.Window) for n in func.walk() if n is not func):
        raise WeirError(SqlState.WINDOWING_ERROR, "window function calls cannot be nested")
    if isinstance(func, exp.Filter):
        window.set("this", _filtered(func))
    if isinstance(func, _ORDERED_ONLY) and window.args.get("order") is None:
        # PostgreSQL takes the rows in an unspecified order (all of them peers); Spark
        # refuses these functions over an unordered window: order it by a constant
        window.set("order", exp.Order(expressions=[exp.Ordered(this=exp.Literal.number(0))]))


# window functions Spark runs only over an ordered window, PostgreSQL over any
_ORDERED_ONLY = (exp.RowNumber, exp.Lag, exp.Lead, exp.Rank, exp.DenseRank, exp.PercentRank,
                 exp.CumeDist, exp.Ntile)


def _filtered(filtered: exp.Filter) -> exp.Expression:
    """`agg(x) FILTER (WHERE c) OVER w`: Spark has no FILTER on window functions (it
    dropped the clause); for aggregates that skip NULLs it is agg(CASE WHEN c THEN x END)."""
    agg, where = filtered.this, filtered.expression
    cond = where.this if isinstance(where, exp.Where) else where
    if not isinstance(agg, _NULL_SKIPPING) or isinstance(agg.this, exp.Distinct):
        raise not_supported("FILTER on this window function")
    arg = agg.this
    if isinstance(agg, exp.Count) and (arg is None or isinstance(arg, exp.Star)):
        arg = exp.Literal.number(1)
    new = agg.copy()
    new.set("this", exp.Case(ifs=[exp.If(this=cond.copy(), true=arg.copy())]))
    return new


def _distinct_order(agg: exp.Expression) -> None:
    """string_agg(DISTINCT x, ',' ORDER BY y) / array_agg(DISTINCT x ORDER BY y): PostgreSQL
    requires y to be an argument (42P10); Spark ordered by anything."""
    inner = agg.this
    order = None
    if isinstance(inner, exp.Order):
        order, inner = inner, inner.this
    elif isinstance(agg, exp.GroupConcat) and isinstance(agg.args.get("separator"), exp.Order):
        order = agg.args["separator"]
    if order is None or not isinstance(inner, exp.Distinct):
        return
    args = [a.sql() for a in inner.expressions]
    for key in order.expressions:
        e = key.this if isinstance(key, exp.Ordered) else key
        if e.sql() not in args:
            raise WeirError(SqlState.INVALID_COLUMN_REFERENCE,
                            "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list")
