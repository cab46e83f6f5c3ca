"""PostgreSQL's interval operators and functions on Spark, for the gate in
`weir.sql.functions`: weir's Spark interval is `struct<months, days, micros>` (weir.types),
which Spark would compare, sort and group field by field; PostgreSQL does all three by the
span (`'1 mon' = '30 days' = '720 hours'`). Each handler here rewrites an interval
operation into its Spark SQL (weir.sql.interval_sql) or refuses it (0A000): no interval
reaches a Spark operator that would read it as a plain struct."""

from __future__ import annotations

from sqlglot import exp

from weir import types as T
from weir.codec import interval as cinterval
from weir.sql import infer
from weir.sql import interval_sql as iv
from weir.sql.infer import Types
from weir.sql.literals import interval_literal
from weir.sql.translate import refuse


def _is(node: exp.Expression, types: Types) -> bool:
    return infer.is_interval(types.of(node))


def _number(t: T.PgType | None) -> bool:
    return infer.is_int(t) or infer.is_float(t) or infer.is_numeric(t)


def _datetime(t: T.PgType | None) -> bool:
    return infer.is_timestamp(t) or infer.is_date(t)


def arith(node: exp.Expression, types: Types) -> exp.Expression | None:
    """`+ - * /` with an interval operand, or timestamp - timestamp; None for the rest."""
    a, b = types.of(node.this), types.of(node.expression)
    left, right = node.this, node.expression
    if isinstance(node, (exp.Add, exp.Sub)):
        if infer.is_interval(a) and infer.is_interval(b):
            return iv.add(left, right, "+" if isinstance(node, exp.Add) else "-")
        if isinstance(node, exp.Sub) and infer.is_timestamp(a) and infer.is_timestamp(b):
            return iv.from_timestamps(left, right)
        for stamp, span, st, other in ((left, right, a, b), (right, left, b, a)):
            if _datetime(st) and infer.is_interval(other) and (isinstance(node, exp.Add) or stamp is left):
                if infer.is_date(st):  # date ± interval is a timestamp without time zone
                    stamp = exp.Cast(this=stamp, to=exp.DataType.build("TIMESTAMP_NTZ", dialect="spark"))
                return (exp.Add if isinstance(node, exp.Add) else exp.Sub)(
                    this=stamp, expression=iv.to_calendar(span))
        return None
    if isinstance(node, (exp.Mul, exp.Div)):
        op = "*" if isinstance(node, exp.Mul) else "/"
        if infer.is_interval(a) and (_number(b) or b is None):
            return iv.scale(left, right, op)
        if isinstance(node, exp.Mul) and infer.is_interval(b) and (_number(a) or a is None):
            return iv.scale(right, left, op)
        if infer.is_interval(a) or infer.is_interval(b):
            raise refuse(f"operator {op} of these interval operands")
    return None


def neg(node: exp.Expression, types: Types) -> exp.Expression:
    return iv.neg(node.this) if _is(node.this, types) else node


def comparison(node: exp.Expression, types: Types) -> exp.Expression | None:
    """Intervals compare by their spans; None when neither side is an interval."""
    if not (_is(node.this, types) or _is(node.expression, types)):
        return None
    for key in ("this", "expression"):
        side = node.args[key]
        if isinstance(side, (exp.Any, exp.All)) or (isinstance(side, exp.Anonymous)
                                                    and side.name.lower() in ("all", "some")):
            raise refuse("ANY / ALL of intervals")
        if isinstance(side, exp.Literal) and side.is_string:  # '30 days': PostgreSQL's interval_in
            node.set(key, interval_literal(cinterval.parse(side.this)))
        elif not _is(side, types) and not isinstance(side, exp.Null) and types.of(side) is not None:
            raise refuse("comparison of an interval with a value of another type")
    node.set("this", iv.span(node.this))
    node.set("expression", iv.span(node.expression))
    return node


def order_key(key: exp.Expression) -> exp.Expression:
    return iv.span(key)


def min_max(node: exp.Expression, types: Types) -> exp.Expression | None:
    """min / max by span, keeping the fields of the value chosen."""
    if not _is(node.this, types):
        return None
    _plain_aggregate(node, "min" if isinstance(node, exp.Min) else "max")
    fn = "min_by" if isinstance(node, exp.Min) else "max_by"
    return exp.Anonymous(this=fn, expressions=[node.this, iv.span(node.this)])


def sum_avg(node: exp.Expression, types: Types) -> exp.Expression | None:
    """sum field by field (interval_pl, no cascade); avg is that sum / count (interval_div)."""
    if not _is(node.this, types):
        return None
    name = "sum" if isinstance(node, exp.Sum) else "avg"
    _plain_aggregate(node, name)
    m, d, t = iv.fields(node.this)
    total = iv.build(exp.Sum(this=m), exp.Sum(this=d),
                     exp.Sum(this=exp.Cast(this=t, to=exp.DataType.build("DECIMAL(38,0)"))))
    if isinstance(node, exp.Sum):
        return total
    count = exp.Anonymous(this="nullif", expressions=[exp.Count(this=node.this.copy()), exp.Literal.number(0)])
    return iv.scale(total, count, "/")


def _plain_aggregate(node: exp.Expression, name: str) -> None:
    if isinstance(node.parent, (exp.Window, exp.Filter)) or isinstance(node.this, exp.Distinct):
        raise refuse(f"{name} of intervals with OVER, FILTER or DISTINCT")


def justify(node: exp.Expression, types: Types) -> exp.Expression:
    if not _is(node.this, types):
        return node
    fn = {exp.JustifyDays: iv.justify_days, exp.JustifyHours: iv.justify_hours,
          exp.JustifyInterval: iv.justify_interval}[type(node)]
    return fn(node.this)


def extract(node: exp.Expression, types: Types) -> exp.Expression | None:
    if not _is(node.expression, types):
        return None
    unit = node.this
    while isinstance(unit, exp.Cast):
        unit = unit.this
    name = unit.name if isinstance(unit, (exp.Var, exp.Literal, exp.Column)) and unit.name else None
    date_part = node.meta.get("weir_output_name") == "date_part"
    out = None if name is None else (iv.date_part if date_part else iv.extract)(name, node.expression)
    if out is None:
        raise refuse(f"{'date_part' if date_part else 'EXTRACT'}({(name or 'this unit').lower()} of an interval)")
    return out


def text(x: exp.Expression) -> exp.Expression:
    return iv.text(x)


def cast(node: exp.Expression, types: Types) -> exp.Expression | None:
    """A cast to interval of a value that is not one: only constants are (the coordinator
    reads them with PostgreSQL's interval_in); a cast of an interval to interval is itself."""
    to = node.args.get("to")
    if not isinstance(to, exp.DataType) or to.this != exp.DataType.Type.INTERVAL and not (
            to.this == exp.DataType.Type.STRUCT and to.sql("spark").replace(" ", "") == T.INTERVAL_DDL.replace(" ", "")):
        return None
    if _is(node.this, types):  # itself, typed as weir's interval struct (its fields nullable)
        return exp.Cast(this=node.this, to=exp.DataType.build(T.INTERVAL_DDL, dialect="spark"))
    if isinstance(node.this, (exp.Null, exp.Placeholder)):  # NULL::interval, a parameter's slot
        return exp.Cast(this=node.this.copy(), to=exp.DataType.build(T.INTERVAL_DDL, dialect="spark"))
    if isinstance(node.this, exp.Literal) and node.this.is_string:  # PostgreSQL's interval_in
        return interval_literal(cinterval.parse(node.this.this))
    raise refuse(f"cast of {(types.of(node.this) or T.UNKNOWN).name} to interval on Spark")


_KEYS = "weir_interval_keys"  # Select meta: the interval columns it groups by (by span)
_AGGREGATES = ("min_by", "max_by", "first", "collect_list")


def check(tree: exp.Expression, types: Types) -> None:
    """Before the handlers: GROUP BY / DISTINCT on interval columns are noted, to group by
    span (regroup()); refused is what would compare, group or sort intervals as Spark's
    structs: grouping by an interval expression, UNION / INTERSECT / EXCEPT (but ALL), IN,
    BETWEEN, GREATEST / LEAST, IS DISTINCT FROM, PARTITION BY, count(DISTINCT interval)."""
    for select in list(tree.find_all(exp.Select)):
        _note_keys(select, types)
    for node in tree.find_all(exp.Distinct, exp.SetOperation, exp.In, exp.Between, exp.Greatest,
                              exp.Least, exp.NullSafeEQ, exp.NullSafeNEQ, exp.Window, exp.Nullif, exp.TimestampTrunc):
        if isinstance(node, exp.Nullif) and _is(node.this, types):
            raise refuse("NULLIF of intervals")
        if isinstance(node, exp.TimestampTrunc) and _is(node.this, types):
            raise refuse("date_trunc of an interval")
        if isinstance(node, exp.Distinct) and node.arg_key != "distinct" and any(_is(e, types) for e in node.expressions):
            raise refuse("DISTINCT of intervals in an aggregate")
        if isinstance(node, exp.SetOperation) and node.args.get("distinct") is not False:
            first = node.this
            while isinstance(first, exp.SetOperation):
                first = first.this
            if isinstance(first, exp.Select) and any(_is(e, types) for e in first.expressions):
                raise refuse("UNION, INTERSECT or EXCEPT of intervals")
        if isinstance(node, (exp.In, exp.Between, exp.NullSafeEQ, exp.NullSafeNEQ)) and _is(node.this, types):
            raise refuse("IN, BETWEEN or IS DISTINCT FROM of intervals")
        if isinstance(node, (exp.Greatest, exp.Least)) and any(_is(e, types) for e in node.iter_expressions()):
            raise refuse("GREATEST / LEAST of intervals")
        if isinstance(node, exp.Window) and any(_is(e, types) for e in node.args.get("partition_by") or []):
            raise refuse("PARTITION BY an interval")


def _column_of(e: exp.Expression) -> exp.Column | None:
    e = e.this if isinstance(e, exp.Alias) else e
    return e if isinstance(e, exp.Column) else None


def _note_keys(select: exp.Select, types: Types) -> None:
    """SELECT DISTINCT with interval columns becomes GROUP BY its columns; each interval
    GROUP BY key must be a column (of the FROM, or a result column's position or name)."""
    distinct = select.args.get("distinct")
    items = select.expressions
    if distinct is not None and any(_is(e, types) for e in items):
        if distinct.args.get("on") is not None or select.args.get("group") is not None:
            raise refuse("DISTINCT ON or DISTINCT with GROUP BY of intervals")
        if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)) for e in items):
            raise refuse("SELECT DISTINCT * of intervals")
        select.set("distinct", None)
        select.set("group", exp.Group(expressions=[(e.this if isinstance(e, exp.Alias) else e).copy() for e in items]))
        for new, old in zip(select.args["group"].expressions, items, strict=True):
            types.same_as(new, old.this if isinstance(old, exp.Alias) else old)
    group = select.args.get("group")
    if group is None:
        return
    keys: list[exp.Column] = []
    for i, e in enumerate(list(group.expressions)):
        if isinstance(e, exp.Literal) and not e.is_string and e.this.isdigit() and 1 <= int(e.this) <= len(items):
            item = items[int(e.this) - 1]
            if _is(item, types):
                col = _column_of(item)
                if col is None:
                    raise refuse("GROUP BY the position of an interval that is not a column")
                e = col.copy()
                types.same_as(e, col)
                group.expressions[i].replace(e)
        elif isinstance(e, exp.Column) and not e.table:
            named = [x for x in items if isinstance(x, exp.Alias) and x.alias == e.name and _is(x, types)]
            if named and _column_of(named[0]) is None:
                raise refuse("GROUP BY the name of an interval result that is not a column")
        if _is(e, types):
            if not isinstance(e, exp.Column):
                raise refuse("GROUP BY an interval expression that is not a column")
            keys.append(e.copy())
    if keys:
        select.meta[_KEYS] = keys


def regroup(tree: exp.Expression) -> exp.Expression:
    """After the handlers: a SELECT noted by check() groups by the span of each interval
    column, and shows the first value of its group (PostgreSQL shows one of the equal
    spans' values too); references outside aggregates read that value."""
    for select in list(tree.find_all(exp.Select)):
        keys = select.meta.get(_KEYS)
        if not keys:
            continue
        same = {(k.table, k.name) for k in keys}

        def key_of(node: exp.Expression, same: set[tuple[str, str]] = same) -> bool:
            return isinstance(node, exp.Column) and (node.table, node.name) in same

        for e in list(select.args["group"].expressions):
            if key_of(e):
                e.replace(iv.span(e.copy()))
        parts = list(select.expressions) + [select.args.get(k) for k in ("having", "order")]
        for part in parts:
            if part is None:
                continue
            for col in list(part.find_all(exp.Column)):
                if key_of(col) and not _in_aggregate(col, select):
                    col.replace(exp.Anonymous(this="first", expressions=[col.copy()]))
    return tree


def _in_aggregate(node: exp.Expression, select: exp.Select) -> bool:
    cur = node.parent
    while cur is not None and cur is not select:
        if isinstance(cur, exp.AggFunc) or (isinstance(cur, exp.Anonymous) and cur.name.lower() in _AGGREGATES):
            return True
        cur = cur.parent
    return False
