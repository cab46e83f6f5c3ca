"""PostgreSQL's array searching functions and containment operators, and date_bin, for
the gate in `weir.sql.functions`, as Spark SQL that computes what PostgreSQL computes.

array_position, array_positions, array_remove and array_replace find elements with IS
NOT DISTINCT FROM (a NULL finds the NULL elements): Spark's `<=>` in a lambda (Spark's
own array_position / array_remove never find a NULL). `@>`, `<@` and `&&` compare
elements with `=`, where a NULL element matches nothing (ARRAY[NULL] @> ARRAY[NULL] is
false), duplicates do not count and an empty array is contained in every array; a NULL
array makes the answer NULL. Elements of types whose Spark equality is not PostgreSQL's
(intervals, jsonb, records, arrays) are refused.

date_bin(stride, source, origin) is the start of the bin of width stride, counted from
origin, that holds source (floor: a source before the origin falls in the bin before),
in microseconds since the epoch; a stride with months is refused (0A000) and one not
greater than zero is an error (22008), where PostgreSQL raises them: when it computes a
non-NULL source and origin."""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from weir import codec
from weir import types as T
from weir.codec import interval as cinterval
from weir.codec import interval_parse
from weir.errors import SqlState, WeirError
from weir.sql import infer, interval_sql
from weir.sql.infer import Types
from weir.sql.literals import literal, value_type
from weir.sql.translate import raise_sql, refuse, spark_template, undefined_operator

# element types whose Spark `<=>` / `=` is PostgreSQL's equality, by category
_CATEGORY: dict[int, str] = {
    **{t.oid: "number" for t in (T.INT2, T.INT4, T.INT8, T.FLOAT4, T.FLOAT8, T.NUMERIC)},
    **{oid: "text" for oid in (T.TEXT.oid, T.VARCHAR.oid, T.BPCHAR.oid, 19)},
    T.BOOL.oid: "bool", T.DATE.oid: "date", T.TIMESTAMP.oid: "timestamp",
    T.TIMESTAMPTZ.oid: "timestamptz", T.BYTEA.oid: "bytea", T.UUID.oid: "uuid",
}


def _undefined(name: str, *kinds: T.PgType | None) -> WeirError:
    args = ", ".join("unknown" if t is None else t.name for t in kinds)
    return WeirError(SqlState.UNDEFINED_FUNCTION, f"function {name}({args}) does not exist",
                     hint="No function matches the given name and argument types. "
                          "You might need to add explicit type casts.")


def _element(name: str, array: exp.Expression, types: Types) -> T.PgType:
    """The element type of a searched array, refused where Spark's equality is not PostgreSQL's."""
    t = types.of(array)
    if t is None and isinstance(array, exp.Array) and array.expressions and all(
            isinstance(e, exp.Null) or isinstance(e, exp.Literal) and e.is_string for e in array.expressions):
        return T.TEXT  # ARRAY['a', NULL]: text[]
    if t is None or not t.is_array or t.element is None:
        if t is not None and not t.is_array and t.oid != T.UNKNOWN.oid:
            raise _undefined(name, t)
        raise refuse(f"function {name} of an array of unknown type")
    if t.element.oid == T.UNKNOWN.oid:  # ARRAY['a', 'b']: text[]
        return T.TEXT
    if t.element.oid not in _CATEGORY:
        raise refuse(f"function {name} of {t.name}")
    return t.element


def _value(name: str, value: exp.Expression, element: T.PgType, array_t: T.PgType,
           types: Types) -> tuple[exp.Expression, T.PgType]:
    """A value compared with (or put in place of) the elements: its Spark form and the
    common element type (PostgreSQL's anycompatible: integers, numeric and floats
    promote; an unknown literal is read as the element type)."""
    t = types.of(value)
    if isinstance(value, exp.Null):
        return value, element
    if t is not None and t.oid == T.UNKNOWN.oid and isinstance(value, exp.Literal):
        if _CATEGORY[element.oid] == "text":
            return value, element
        return exp.Cast(this=value, to=exp.DataType.build(element.spark_ddl, dialect="spark")), element
    if t is None or t.is_array or _CATEGORY.get(t.oid) != _CATEGORY[element.oid]:
        raise _undefined(name, array_t, t)
    return value, infer.promote(element, t) or element


def _retyped(array: exp.Expression, element: T.PgType, common: T.PgType) -> exp.Expression:
    """The array with elements of the common type (int[] with a numeric value is numeric[])."""
    if common.oid == element.oid:
        return array
    return exp.Cast(this=array, to=exp.DataType.build(T.array_of(common).spark_ddl, dialect="spark"))


def array_position(node: exp.Expression, types: Types) -> exp.Expression:
    """array_position(a, x [, start]): the first subscript at or after start whose element
    IS NOT DISTINCT FROM x; NULL when none is; start NULL is an error (22004)."""
    array, value, start = node.this, node.expression, node.args.get("zero_based")
    element = _element("array_position", array, types)
    value, _ = _value("array_position", value, element, types.of(array), types)
    positions = _positions(array, value)
    if start is None:
        return spark_template("array_min({p})", p=positions)
    if not (infer.is_int(types.of(start)) or isinstance(start, exp.Null)):
        raise _undefined("array_position", types.of(array), types.of(value), types.of(start))
    return spark_template("CASE WHEN {a} IS NULL THEN NULL WHEN {s} IS NULL THEN "
                          + raise_sql("22004", "initial position must not be null")
                          + " ELSE array_min(filter({p}, _weir_ap -> _weir_ap >= {s})) END",
                          a=array, s=start, p=positions)


def _positions(array: exp.Expression, value: exp.Expression) -> exp.Expression:
    return spark_template("filter(transform({a}, (_weir_ae, _weir_ai) -> IF(_weir_ae <=> {x}, _weir_ai + 1, NULL)), "
                          "_weir_ap -> _weir_ap IS NOT NULL)", a=array, x=value)


def array_positions(node: exp.Expression, types: Types) -> exp.Expression:
    """array_positions(a, x): every subscript whose element IS NOT DISTINCT FROM x ({} for none)."""
    if len(node.expressions) != 2:
        raise _undefined("array_positions", *(types.of(a) for a in node.expressions))
    array, value = node.expressions
    element = _element("array_positions", array, types)
    value, _ = _value("array_positions", value, element, types.of(array), types)
    return _positions(array, value)


def array_remove(node: exp.Expression, types: Types) -> exp.Expression:
    """array_remove(a, x): a without the elements that are NOT DISTINCT FROM x."""
    array = node.this
    element = _element("array_remove", array, types)
    value, common = _value("array_remove", node.expression, element, types.of(array), types)
    return spark_template("filter({a}, _weir_ae -> NOT (_weir_ae <=> {x}))",
                          a=_retyped(array, element, common), x=value)


def array_replace(node: exp.Expression, types: Types) -> exp.Expression:
    """array_replace(a, x, y): each element NOT DISTINCT FROM x replaced by y."""
    if len(node.expressions) != 3:
        raise _undefined("array_replace", *(types.of(a) for a in node.expressions))
    array, old, new = node.expressions
    element = _element("array_replace", array, types)
    old, common = _value("array_replace", old, element, types.of(array), types)
    new, common = _value("array_replace", new, common, types.of(array), types)
    return spark_template("transform({a}, _weir_ae -> IF(_weir_ae <=> {x}, {y}, _weir_ae))",
                          a=_retyped(array, element, common), x=old, y=new)


def is_array_operand(node: exp.Expression, types: Types) -> bool:
    """Whether `@>` / `<@` / `&&` compares arrays (rather than jsonb)."""
    return any(t is not None and t.is_array for t in (types.of(node.this), types.of(node.expression)))


_OPERATOR = {exp.ArrayContainsAll: "@>", exp.ArrayContainedBy: "<@", exp.ArrayOverlaps: "&&"}


def containment(node: exp.Expression, types: Types) -> exp.Expression:
    """`a @> b` (every element of b equals one of a), `a <@ b` (b @> a), `a && b` (an
    element of a equals one of b); the arrays must be of one type (an array of string
    literals takes the other's text type)."""
    op = _OPERATOR[type(node)]
    left, right = node.this, node.expression
    a, b = types.of(left), types.of(right)
    if isinstance(left, exp.Null) or isinstance(right, exp.Null):
        other = b if isinstance(left, exp.Null) else a
        if other is not None and other.is_array:
            return exp.Cast(this=exp.Null(), to=exp.DataType.build("BOOLEAN"))
    if _text_literal(left) and _searchable(b) is not None:
        a = b = _searchable(b)  # ARRAY[1] @> '{1}': the literal is read as the other's type
        left = _array_literal(left, a)  # type: ignore[arg-type]
    if _text_literal(right) and _searchable(a) is not None:
        a = b = _searchable(a)
        right = _array_literal(right, b)  # type: ignore[arg-type]
    for t in (a, b):
        if t is None or t.oid == T.UNKNOWN.oid:
            raise refuse(f"operator {op} with an operand of unknown type (write ARRAY[...] or cast it)")
    if a.is_array and b.is_array and unknown_elements(b):  # type: ignore[union-attr]
        b = a if unknown_elements(a) or _CATEGORY.get(a.element.oid) == "text" else b  # type: ignore[union-attr]
    if a.is_array and b.is_array and unknown_elements(a):  # type: ignore[union-attr]
        a = b if _CATEGORY.get(b.element.oid) == "text" else a  # type: ignore[union-attr]
    if unknown_elements(a) and unknown_elements(b):  # ARRAY['a'] @> ARRAY['b']: text[]
        a = b = T.TEXT_ARRAY
    if unknown_elements(a) or unknown_elements(b):  # PostgreSQL reads the literals as the other's elements
        raise refuse(f"operator {op} of an array of string literals and {b.name if unknown_elements(a) else a.name}")  # type: ignore[union-attr]
    if not (a.is_array and b.is_array) or a.oid != b.oid:  # type: ignore[union-attr]
        raise undefined_operator(a.name, op, b.name)  # type: ignore[union-attr]
    if a.element is None or a.element.oid not in _CATEGORY:  # type: ignore[union-attr]
        raise refuse(f"operator {op} of {a.name}")  # type: ignore[union-attr]
    if isinstance(node, exp.ArrayContainedBy):
        left, right = right, left
    if isinstance(node, exp.ArrayOverlaps):
        test = "exists({a}, _weir_ax -> _weir_ax IS NOT NULL AND exists({b}, _weir_ay -> _weir_ay <=> _weir_ax))"
    else:  # a contains b
        test = "forall({b}, _weir_ax -> _weir_ax IS NOT NULL AND exists({a}, _weir_ay -> _weir_ay <=> _weir_ax))"
    return spark_template(f"CASE WHEN {{a}} IS NULL OR {{b}} IS NULL THEN NULL ELSE {test} END",
                          a=left, b=right)


def _searchable(t: T.PgType | None) -> T.PgType | None:
    """An array type whose elements compare in Spark as in PostgreSQL (text[] for ARRAY['a'])."""
    if unknown_elements(t):
        return T.TEXT_ARRAY
    return t if t is not None and t.is_array and t.element is not None and t.element.oid in _CATEGORY else None


def _text_literal(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


def _array_literal(node: exp.Expression, t: T.PgType, types: Types | None = None) -> exp.Expression:
    """'{1,NULL}' as an array of type t, read as PostgreSQL's array_in reads it (22P02 as its);
    with `types`, the literal's type (its dimensions the value's) is recorded there."""
    value = codec.decode_text(node.this.encode(), t)
    out = literal(value, t)
    if types is not None:
        types.assign(out, value_type(value, t) if value is not None else t)
    return out


def unknown_elements(t: T.PgType | None) -> bool:
    """ARRAY['a', 'b']: an array of string literals, text[] beside text[] (or by itself)."""
    return t is not None and t.is_array and t.element is not None and t.element.oid == T.UNKNOWN.oid


def _stride_literal(stride: exp.Expression) -> str | None:
    if isinstance(stride, exp.Literal) and stride.is_string:
        return stride.this
    if isinstance(stride, exp.Cast) and isinstance(stride.this, exp.Literal) and stride.this.is_string \
            and stride.to.this == exp.DataType.Type.INTERVAL:
        return stride.this.this
    return None


def date_bin(node: exp.Expression, types: Types) -> exp.Expression:
    """date_bin(stride, source, origin) of timestamps (or of timestamptzs)."""
    stride, source, origin = node.this, node.expression, node.args.get("unit")
    st, ot = types.of(source), types.of(origin) if origin is not None else None
    if origin is None:
        raise _undefined("date_bin", types.of(stride), st)
    if not isinstance(origin, exp.Paren):  # weir.sql.dialect reads the origin in parentheses
        raise refuse("function date_bin with this origin")
    while isinstance(origin, exp.Paren):
        origin = origin.this
    if isinstance(source, exp.Null) or isinstance(origin, exp.Null) or isinstance(stride, exp.Null):
        return exp.Cast(this=exp.Null(), to=exp.DataType.build(
            "TIMESTAMP_LTZ" if T.TIMESTAMPTZ.oid in (getattr(st, "oid", None), getattr(ot, "oid", None))
            else "TIMESTAMP_NTZ", dialect="spark"))
    if not infer.is_timestamp(st):
        raise refuse("function date_bin of a source of type " + (st.name if st is not None else "unknown"))
    if ot is not None and ot.oid == T.UNKNOWN.oid and isinstance(origin, exp.Literal):
        origin = exp.Cast(this=origin, to=exp.DataType.build(st.spark_ddl, dialect="spark"))  # type: ignore[union-attr]
    elif infer.is_date(ot) and st.oid == T.TIMESTAMP.oid:  # type: ignore[union-attr]
        origin = exp.Cast(this=origin, to=exp.DataType.build("TIMESTAMP_NTZ", dialect="spark"))  # midnight
    elif ot is None or ot.oid != st.oid:  # type: ignore[union-attr]
        raise refuse("function date_bin of a " + st.name + " source and an origin of type "  # type: ignore[union-attr]
                     + (ot.name if ot is not None else "unknown"))
    text = _stride_literal(stride)
    if text is not None:
        value = interval_parse.parse(text)
        if value.months:
            return _bin_error(source, origin, _spark_timestamp(st), "0A000", "timestamps cannot be binned into intervals containing "
                                                       "months or years")
        micros = value.days * cinterval.USEC_PER_DAY + value.micros
        if micros <= 0:
            return _bin_error(source, origin, _spark_timestamp(st), "22008", "stride must be greater than zero")
        width: exp.Expression = exp.Literal.number(micros)
    elif infer.is_interval(types.of(stride)):  # days and time in microseconds; months refused as PostgreSQL does
        width = spark_template(
            "CASE WHEN {m} <> 0 THEN " + raise_sql("0A000", "timestamps cannot be binned into intervals containing "
                                                   "months or years")
            + " ELSE CAST({d} AS BIGINT) * 86400000000 + {t} END",
            m=interval_sql.field(stride, "months"), d=interval_sql.field(stride, "days"),
            t=interval_sql.field(stride, "micros"))
    else:
        raise refuse("function date_bin of a stride of type "
                     + (types.of(stride).name if types.of(stride) is not None else "unknown"))  # type: ignore[union-attr]
    micros_of = "unix_micros(CAST({x} AS TIMESTAMP_LTZ))"
    binned = spark_template(
        "timestamp_micros(" + micros_of.format(x="{o}") + " + ((" + micros_of.format(x="{s}") + " - "
        + micros_of.format(x="{o}") + ") - pmod(" + micros_of.format(x="{s}") + " - " + micros_of.format(x="{o}")
        + ", {w})))", s=source, o=origin, w=width)
    if text is None:
        binned = spark_template("CASE WHEN {w} <= 0 AND {s} IS NOT NULL AND {o} IS NOT NULL THEN "
                                + raise_sql("22008", "stride must be greater than zero") + " ELSE {b} END",
                                w=width, s=source, o=origin, b=binned)
    if st.oid == T.TIMESTAMP.oid:  # type: ignore[union-attr]
        return spark_template("CAST({b} AS TIMESTAMP_NTZ)", b=binned)
    return binned


def _spark_timestamp(t: T.PgType | None) -> str:
    return "TIMESTAMP_LTZ" if t is not None and t.oid == T.TIMESTAMPTZ.oid else "TIMESTAMP_NTZ"


def _bin_error(source: exp.Expression, origin: exp.Expression, spark_type: str, sqlstate: str,
               message: str) -> exp.Expression:
    """PostgreSQL's error for a stride, raised where date_bin runs: on a non-NULL source and origin."""
    return spark_template("CAST(CASE WHEN {s} IS NULL OR {o} IS NULL THEN NULL ELSE " + raise_sql(sqlstate, message)
                          + f" END AS {spark_type})", s=source, o=origin)


HANDLERS = {
    exp.ArrayPosition: array_position, exp.ArrayRemove: array_remove, exp.DateBin: date_bin,
}
FUNCTIONS = {"array_positions": array_positions, "array_replace": array_replace}


# operators and functions whose operands PostgreSQL resolves to one type: an untyped
# literal among them takes an array operand's type ('{1,2}' = ARRAY[1,2], ARRAY[1] || '{2}')
_BINARY_SAME_TYPE = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ, exp.NullSafeNEQ,
                     exp.DPipe, exp.Nullif)
_LIST_SAME_TYPE = (exp.Coalesce, exp.Greatest, exp.Least)


def _same_type_groups(tree: exp.Expression) -> Iterator[list[exp.Expression | None]]:
    """Groups of expressions PostgreSQL resolves to one type: an operator's or a function's
    operands, CASE's results, a column of VALUES or of a set operation's branches."""
    for node in list(tree.find_all(*_BINARY_SAME_TYPE, exp.In, *_LIST_SAME_TYPE, exp.Case, exp.Values,
                                   exp.SetOperation)):
        if isinstance(node, _BINARY_SAME_TYPE):
            yield [node.this, node.expression]
        elif isinstance(node, exp.In):
            yield [node.this, *node.expressions]
        elif isinstance(node, exp.Case):
            if node.this is None:  # CASE x WHEN ...: left to the comparisons it stands for
                yield [i.args.get("true") for i in node.args.get("ifs") or []] + [node.args.get("default")]
        elif isinstance(node, exp.Values):
            rows = [r.expressions for r in node.expressions if isinstance(r, exp.Tuple)]
            yield from (list(column) for column in zip(*rows, strict=False))
        elif isinstance(node, exp.SetOperation) and not isinstance(node.parent, exp.SetOperation):
            leaves = list(_branches(node))
            if all(isinstance(b, exp.Select) for b in leaves):
                yield from ([p.this if isinstance(p, exp.Alias) else p for p in column]
                            for column in zip(*(b.expressions for b in leaves), strict=False))
        else:
            yield [node.this, *node.expressions]


def _branches(node: exp.Expression) -> Iterator[exp.Expression]:
    while isinstance(node, exp.Subquery):
        node = node.this
    if isinstance(node, exp.SetOperation):
        yield from _branches(node.this)
        yield from _branches(node.expression)
    else:
        yield node


def unknown_literals_as_arrays(tree: exp.Expression, types: Types) -> list[exp.Expression]:
    """Untyped string literals beside an array operand become arrays of its type, read as
    PostgreSQL's array_in reads them (22P02 when malformed): Spark would compare or
    concatenate the array with a string, or fail to. Of an array of string literals
    (ARRAY['a']), the literal is text[], as PostgreSQL resolves both. Returns the literals
    made (Spark-ready already)."""
    made: list[exp.Expression] = []
    for operands in _same_type_groups(tree):
        array_t = next((t for o in operands if o is not None and not _text_literal(o)
                        and (t := types.of(o)) is not None and t.is_array), None)
        if array_t is None:
            continue
        if unknown_elements(array_t):
            array_t = T.TEXT_ARRAY
        for o in operands:
            if o is not None and _text_literal(o) and types.of(o) is not None and types.of(o).oid == T.UNKNOWN.oid:  # type: ignore[union-attr]
                new = _array_literal(o, T.array_of(array_t.element), types)  # type: ignore[arg-type]
                o.replace(new)
                made.append(new)
    return made
