"""PostgreSQL's interval operators and functions on Spark, for the gate in
`weir.sql.functions`: weir's Spark interval is `struct<months, days, micros>` (weir.types),
which Spark would compare, sort and group field by field; PostgreSQL does all three by the
span (`'1 mon' = '30 days' = '720 hours'`). Each handler here rewrites an interval
operation into its Spark SQL (weir.sql.interval_sql) or refuses it (0A000): no interval
reaches a Spark operator that would read it as a plain struct."""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlglot import exp

from weir import types as T
from weir.codec import interval_parse
from weir.errors import SqlState, WeirError
from weir.sql import infer, udf_calls
from weir.sql import interval_sets as set_operations
from weir.sql import interval_sql as iv
from weir.sql.infer import Types
from weir.sql.literals import interval_literal
from weir.sql.translate import refuse, spark_template


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
        node.set(key, _span_of(side, types))
    return node


def _operand(x: exp.Expression, types: Types) -> exp.Expression:
    """An operand beside an interval: an untyped string is PostgreSQL's interval_in of it;
    a value of another type is refused."""
    if isinstance(x, exp.Literal) and x.is_string:  # '30 days'
        return interval_literal(interval_parse.parse(x.this))
    if not _is(x, types) and not isinstance(x, exp.Null) and types.of(x) is not None:
        raise refuse("comparison of an interval with a value of another type")
    return x


def _span_of(x: exp.Expression, types: Types) -> exp.Expression:
    return iv.span(_operand(x, types))


def membership(node: exp.Expression, types: Types) -> exp.Expression | None:
    """x IN (a, b, ...) and x IN (SELECT ...) by span."""
    if not _is(node.this, types):
        return None
    if any(node.args.get(k) is not None for k in ("unnest", "field")):
        raise refuse("IN (UNNEST) of intervals")
    query = node.args.get("query")
    if query is not None:  # x IN (SELECT i ...): the spans of the subquery's column
        inner = query.this if isinstance(query, exp.Subquery) else query
        source = exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("_weir_in"),
                                                               columns=[exp.to_identifier("_weir_i")]))
        node.set("query", exp.Subquery(this=exp.Select(expressions=[iv.span(exp.column("_weir_i"))]).from_(
            source, copy=False)))
        node.set("this", iv.span(node.this))
        return node
    node.set("this", iv.span(node.this))
    node.set("expressions", [_span_of(e, types) for e in node.expressions])
    return node


def between(node: exp.Expression, types: Types) -> exp.Expression | None:
    if not _is(node.this, types):
        return None
    for key in ("this", "low", "high"):
        node.set(key, _span_of(node.args[key], types))
    return node


def distinct_from(node: exp.Expression, types: Types) -> exp.Expression | None:
    """IS [NOT] DISTINCT FROM by span (NULL's span is NULL)."""
    if not (_is(node.this, types) or _is(node.expression, types)):
        return None
    for key in ("this", "expression"):
        node.set(key, _span_of(node.args[key], types))
    return node


def nullif(node: exp.Expression, types: Types) -> exp.Expression | None:
    """NULLIF(a, b): NULL when the spans are equal, else a with its own fields."""
    if not _is(node.this, types):
        return None
    pair = spark_template("named_struct('a', {a}, 'b', {b})", a=node.this, b=_operand(node.expression, types))
    return iv.bind(pair, lambda v: spark_template(
        "CASE WHEN {sa} = {sb} THEN NULL ELSE {a} END",
        sa=iv.span(iv.field(v, "a")), sb=iv.span(iv.field(v, "b")), a=iv.field(v, "a")))


def extreme(node: exp.Expression, types: Types) -> exp.Expression | None:
    """GREATEST / LEAST by span, NULLs left out; of equal spans the first argument's value
    (ExecEvalMinMax replaces its result only by a strictly greater / lesser one)."""
    args = [node.this, *node.expressions]
    if not any(_is(a, types) for a in args):
        return None
    greatest = isinstance(node, exp.Greatest)
    entries = [spark_template("named_struct('s', {s}, 'i', {i}, 'v', {v})", s=_span_of(a, types),
                              i=exp.Literal.number(-i if greatest else i), v=_operand(a, types))
               for i, a in enumerate(args)]
    chosen = "array_max" if greatest else "array_min"
    return iv.bind(exp.Array(expressions=entries), lambda v: iv.field(
        spark_template(f"{chosen}(filter({{v}}, e -> e.s IS NOT NULL))", v=v), "v"))


def partition_by(node: exp.Expression, types: Types) -> None:
    """PARTITION BY an interval partitions by its span; the window's handler goes on."""
    keys = node.args.get("partition_by") or []
    node.set("partition_by", [iv.span(k) if _is(k, types) else k for k in keys])


def count_distinct(node: exp.Expression, types: Types) -> None:
    """count(DISTINCT interval) counts distinct spans; count's own handling goes on."""
    d = node.this
    if isinstance(d, exp.Distinct):
        d.set("expressions", [iv.span(e) if _is(e, types) else e for e in d.expressions])


def order_key(key: exp.Expression) -> exp.Expression:
    return iv.span(key)


def min_max(node: exp.Expression, types: Types) -> exp.Expression | None:
    """min / max by span, keeping the fields of the value chosen (one aggregate: FILTER and
    OVER apply to it as they are)."""
    value = _distinct_operand(node) or node.this  # DISTINCT changes no minimum
    if not _is(value, types):
        return None
    fn = "min_by" if isinstance(node, exp.Min) else "max_by"
    return exp.Anonymous(this=fn, expressions=[value, iv.span(value)])


def sum_avg(node: exp.Expression, types: Types) -> exp.Expression | None:
    """sum field by field (interval_pl, no cascade); avg is that sum / count (interval_div).
    Under FILTER or OVER each field's aggregate takes the same FILTER / window."""
    distinct = _distinct_operand(node)
    if distinct is not None:
        return _sum_avg_distinct(node, distinct, types) if _is(distinct, types) else None
    if not _is(node.this, types):
        return None
    wrap = _wrapper(node, types)
    m, d, t = iv.fields(node.this)
    total = iv.build(wrap(exp.Sum(this=m)), wrap(exp.Sum(this=d)),
                     wrap(exp.Sum(this=exp.Cast(this=t, to=exp.DataType.build("DECIMAL(38,0)")))))
    if isinstance(node, exp.Sum):
        out = total
    else:
        count = exp.Anonymous(this="nullif", expressions=[wrap(exp.Count(this=node.this.copy())),
                                                          exp.Literal.number(0)])
        out = iv.scale(total, count, "/")
    if wrap is not _same:
        out.meta[_WRAPPED] = True  # its FILTER / OVER is inside: unwrapped()
    return out


_WRAPPED = "weir_interval_wrapped"


def _same(e: exp.Expression) -> exp.Expression:
    return e


def _wrapper(node: exp.Expression, types: Types) -> Callable[[exp.Expression], exp.Expression]:
    """How each field's aggregate takes the FILTER and the window `node` is under."""
    layers: list[exp.Expression] = []
    cur = node
    while isinstance(cur.parent, (exp.Filter, exp.Window)) and cur.arg_key == "this":
        layers.append(cur.parent)
        cur = cur.parent
    if not layers:
        return _same

    def wrap(aggregate: exp.Expression) -> exp.Expression:
        out = aggregate
        for layer in layers:
            copy = layer.__class__(**{k: v.copy() if isinstance(v, exp.Expression) else
                                      [x.copy() for x in v] if isinstance(v, list) else v
                                      for k, v in layer.args.items() if k != "this"})
            if isinstance(layer, exp.Window):  # PARTITION BY an interval: by its span
                keys = layer.args.get("partition_by") or []
                copy.set("partition_by", [iv.span(c) if _is(k, types) else c
                                          for k, c in zip(keys, copy.args.get("partition_by") or [], strict=True)])
            copy.set("this", out)
            out = copy
        return out

    return wrap


def unwrapped(node: exp.Expression, types: Types) -> exp.Expression | None:
    """A FILTER or window around an interval sum / avg whose fields took it already."""
    return node.this if node.this.meta.get(_WRAPPED) else None


def _distinct_operand(node: exp.Expression) -> exp.Expression | None:
    """x of agg(DISTINCT x); under OVER it is PostgreSQL's 0A000, as there."""
    d = node.this
    if not (isinstance(d, exp.Distinct) and len(d.expressions) == 1):
        return None
    cur = node
    while isinstance(cur.parent, (exp.Filter, exp.Window)) and cur.arg_key == "this":
        if isinstance(cur.parent, exp.Window):
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "DISTINCT is not implemented for window functions")
        cur = cur.parent
    return d.expressions[0]


def _sum_avg_distinct(node: exp.Expression, value: exp.Expression, types: Types) -> exp.Expression:
    """sum / avg(DISTINCT interval): the values of distinct spans (of equal spans, one
    value: PostgreSQL keeps whichever its sort puts first), summed field by field."""
    wrap = _wrapper(node, types)
    entry = spark_template("CASE WHEN {v} IS NULL THEN NULL ELSE named_struct('s', {s}, 'v', {v}) END",
                           v=value, s=iv.span(value))
    collected = wrap(exp.Anonymous(this="collect_list", expressions=[entry]))

    def body(entries: exp.Expression) -> exp.Expression:
        values = spark_template("transform(array_distinct(transform({e}, x -> x.s)), "
                                "k -> filter({e}, x -> x.s = k)[0].v)", e=entries)
        return iv.bind(values, lambda vs: _summed(vs, isinstance(node, exp.Avg)))

    out = iv.bind(collected, body)
    if wrap is not _same:
        out.meta[_WRAPPED] = True
    return out


def _summed(values: exp.Expression, average: bool) -> exp.Expression:
    """The field-by-field sum (or that sum / count) of an array of intervals; NULL if empty."""
    def total(name: str, ddl: str) -> exp.Expression:
        return spark_template(f"aggregate({{vs}}, CAST(0 AS {ddl}), (a, x) -> a + x.{name})", vs=values)

    totals = spark_template("named_struct('m', {m}, 'd', {d}, 't', {t})", m=total("months", "BIGINT"),
                            d=total("days", "BIGINT"), t=total("micros", "DECIMAL(38,0)"))
    summed = iv.bind(totals, lambda v: iv.build(iv.field(v, "m"), iv.field(v, "d"), iv.field(v, "t")))
    out = iv.scale(summed, spark_template("size({vs})", vs=values), "/") if average else summed
    return spark_template(f"CASE WHEN size({{vs}}) = 0 THEN CAST(NULL AS {T.INTERVAL_DDL}) ELSE {{o}} END",
                          vs=values, o=out)


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


# interval_trunc's units: each keeps its own field and those above it; the months of a
# decade, a century and a millennium are whole multiples of their years (C's truncation)
_TRUNC_MONTHS = {"millennium": 12000, "century": 1200, "decade": 120, "year": 12, "quarter": 3, "month": 1}
_TRUNC_MICROS = {"day": None, "hour": 3_600_000_000, "minute": 60_000_000, "second": 1_000_000,
                 "millisecond": 1000, "microsecond": 1}


def date_trunc(node: exp.Expression, types: Types) -> exp.Expression | None:
    """date_trunc(unit, interval) as interval_trunc: the fields below the unit become zero,
    each truncated toward zero (interval2itm); weeks and other units are 0A000 as there."""
    if not _is(node.this, types):
        return None
    if node.args.get("zone") is not None:
        raise refuse("date_trunc of an interval with a time zone argument")
    unit_node = node.args.get("unit")
    word = unit_node.name.lower() if isinstance(unit_node, (exp.Var, exp.Literal)) else ""
    unit = interval_parse.UNIT_WORDS.get(word[:10])
    if unit is None or unit in ("ago", "ignore"):
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f'unit "{word}" not recognized for type interval')
    if unit not in _TRUNC_MONTHS and unit not in _TRUNC_MICROS:
        hint = "Months usually have fractional weeks." if unit == "week" else None
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f'unit "{word}" not supported for type interval',
                        detail=hint)

    def body(v: exp.Expression) -> exp.Expression:
        m, d, t = iv.fields(v)
        zero = spark_template("({t} * 0)", t=t)  # NULL for a NULL interval (build() reads the time's)
        if unit in _TRUNC_MONTHS:
            step = _TRUNC_MONTHS[unit]
            months = m if step == 1 else spark_template(f"({{m}} - {{m}} % {step})", m=m)
            return iv.build(months, zero, zero)
        step = _TRUNC_MICROS[unit]
        micros = zero if step is None else t if step == 1 else spark_template(f"({{t}} - {{t}} % {step})", t=t)
        return iv.build(m, d, micros)

    return iv.bind(node.this, body)


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
        return interval_literal(interval_parse.parse(node.this.this))
    if infer.is_text(types.of(node.this)) and to.this == exp.DataType.Type.INTERVAL and not to.expressions:
        return _interval_in(node.this)
    raise refuse(f"cast of {(types.of(node.this) or T.UNKNOWN).name} to interval on Spark")


def _interval_in(text: exp.Expression) -> exp.Expression:
    """PostgreSQL's interval_in of a text column, in the replica's UDF (errors included)."""
    fields = udf_calls.checked("weir_datetime", "interval_in", exp.Cast(
        this=text, to=exp.DataType.build("STRING", dialect="spark")))
    return iv.bind(fields, lambda v: iv.build(*(spark_template(f"CAST(split({{v}}, ',')[{i}] AS BIGINT)", v=v)
                                                for i in range(3))))


_KEYS = "weir_interval_keys"  # Select meta: the interval columns it groups by (by span)
_EXPRESSION_KEYS = "weir_interval_expression_keys"  # ... and the positions of its interval expressions
_AGGREGATES = ("min_by", "max_by", "first", "collect_list")


def check(tree: exp.Expression, types: Types) -> exp.Expression:
    """Before the handlers: GROUP BY / DISTINCT on interval columns are noted, to group by
    span (regroup()); UNION / INTERSECT / EXCEPT of intervals become groupings by span
    (weir.sql.interval_sets); refused is what would compare, group or sort intervals as
    Spark's structs: DISTINCT of intervals in an aggregate other than count, sum, avg, min and max."""
    for select in list(tree.find_all(exp.Select)):
        _note_keys(select, types)
    for node in tree.find_all(exp.Distinct):
        if (isinstance(node, exp.Distinct) and node.arg_key != "distinct"
                and not isinstance(node.parent, (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max))
                and any(_is(e, types) for e in node.expressions)):
            raise refuse("DISTINCT of intervals in an aggregate")
    return set_operations.by_span(tree, types)


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
    expressions: list[tuple[int, int | None]] = []  # (group position, select item it names)
    for i, e in enumerate(list(group.expressions)):
        if isinstance(e, exp.Literal) and not e.is_string and e.this.isdigit() and 1 <= int(e.this) <= len(items):
            item = items[int(e.this) - 1]
            if _is(item, types):
                col = _column_of(item)
                if col is None:  # GROUP BY 2, an expression: grouped by its span (_regroup_expressions)
                    expressions.append((i, int(e.this) - 1))
                    continue
                e = col.copy()
                types.same_as(e, col)
                group.expressions[i].replace(e)
        elif isinstance(e, exp.Column) and not e.table:
            named = [k for k, x in enumerate(items)
                     if isinstance(x, exp.Alias) and x.alias == e.name and _is(x, types)]
            if named and _column_of(items[named[0]]) is None:  # GROUP BY the name of an expression
                expressions.append((i, named[0]))
                continue
        if _is(e, types):
            if isinstance(e, exp.Column):
                keys.append(e.copy())
            else:
                expressions.append((i, None))
    if keys:
        select.meta[_KEYS] = keys
    if expressions:
        select.meta[_EXPRESSION_KEYS] = expressions


def regroup(tree: exp.Expression) -> exp.Expression:
    """After the handlers: a SELECT noted by check() groups by the span of each interval
    column, and shows the first value of its group (PostgreSQL shows one of the equal
    spans' values too); references outside aggregates read that value."""
    for select in list(tree.find_all(exp.Select)):
        _regroup_expressions(select)
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


def _text(e: exp.Expression) -> str:
    """An expression's SQL, its interval lambdas' variables unnumbered (interval_sql.bind
    numbers them anew in each translation of the same expression)."""
    return re.sub(r"_weir_iv\d+", "_weir_iv", e.sql())


def _regroup_expressions(select: exp.Select) -> None:
    """GROUP BY an interval expression groups by its span; the same expression outside an
    aggregate (in the select list, HAVING or ORDER BY) shows its group's first value."""
    positions = select.meta.get(_EXPRESSION_KEYS)
    group = select.args.get("group")
    if not positions or group is None:
        return
    texts = set()
    for i, item in positions:
        e = group.expressions[i]
        if item is not None:  # a position or a name: the item's expression, as translated
            named = select.expressions[item]
            e.replace(iv.span((named.this if isinstance(named, exp.Alias) else named).copy()))
            texts.add(_text(named.this if isinstance(named, exp.Alias) else named))
            continue
        texts.add(_text(e))
        e.replace(iv.span(e.copy()))
    for part in [*select.expressions, select.args.get("having"), select.args.get("order")]:
        if part is None:
            continue
        for node in list(part.walk(bfs=True)):
            if _text(node) in texts and not _in_aggregate(node, select) and node.parent is not None:
                node.replace(exp.Anonymous(this="first", expressions=[node.copy()]))


def _in_aggregate(node: exp.Expression, select: exp.Select) -> bool:
    cur = node.parent
    while cur is not None and cur is not select:
        if isinstance(cur, exp.AggFunc) or (isinstance(cur, exp.Anonymous) and cur.name.lower() in _AGGREGATES):
            return True
        cur = cur.parent
    return False
