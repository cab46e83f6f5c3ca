"""Faithful Spark translations of PostgreSQL functions and operators, one per function,
for the gate in `weir.sql.functions`. Each takes a node whose children are already
translated and the query's inferred types, and returns Spark's equivalent or raises.
Runtime errors PostgreSQL raises (log of zero, sqrt of a negative ...) are Spark
raise_error() calls whose text the replica turns back into the PostgreSQL error.

Arrays are translated in weir.sql.translate_arrays, date/time functions in
weir.sql.translate_datetime; the building blocks here (spark_template, refuse, raise_sql)
serve them and the other translation modules."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from weir import types as T
from weir.errors import SqlState, WeirError, runtime_marker
from weir.sql import infer
from weir.sql.infer import Types


def _refuse(what: str) -> WeirError:
    return WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"{what} is not supported")


def _spark(template: str, **args: exp.Expression) -> exp.Expression:
    """A Spark SQL template with {name} placeholders for (already Spark-ready) nodes."""
    tree = sqlglot.parse_one(template.format(**{k: f"__weir_arg_{k}" for k in args}), read="spark")

    def put(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not node.table and node.name.startswith("__weir_arg_"):
            return args[node.name.removeprefix("__weir_arg_")].copy()
        return node

    return tree.transform(put)


spark_template = _spark  # for the other translation modules (translate_arrays, comparisons, regex ...)
refuse = _refuse


def _raise(sqlstate: str, message: str) -> str:
    # a Spark string literal: backslashes escape (a message may quote a name with either)
    text = runtime_marker(sqlstate, message).replace("\\", "\\\\").replace("'", "\\'")
    return f"raise_error('{text}')"


raise_sql = _raise  # Spark SQL that raises this PostgreSQL error when evaluated


def _arg_types(node: exp.Expression, types: Types) -> list[T.PgType | None]:
    return [types.of(a) for a in node.iter_expressions()]


def _float_math(node: exp.Expression, types: Types, name: str) -> None:
    """PostgreSQL computes these in numeric for numeric arguments: Spark only in doubles."""
    args = _arg_types(node, types)
    if any(infer.is_numeric(a) for a in args):
        raise _refuse(f"function {name}(numeric)")
    if any(a is None or not (infer.is_float(a) or infer.is_int(a) or a.oid == T.UNKNOWN.oid) for a in args):
        raise _refuse(f"function {name} with arguments of type "
                      + ", ".join("unknown" if a is None else a.name for a in args))


_LOG_CHECKS = ("CASE WHEN {x} = 0 THEN " + _raise("2201E", "cannot take logarithm of zero")
               + " WHEN {x} < 0 THEN " + _raise("2201E", "cannot take logarithm of a negative number")
               + " ELSE {f}({x}) END")


def log(node: exp.Expression, types: Types) -> exp.Expression:
    """log(x) is base 10; log(b, x) exists only for numeric in PostgreSQL."""
    if node.args.get("expression") is not None:
        raise _refuse("function log(numeric, numeric)")
    _float_math(node, types, "log")
    return _spark(_LOG_CHECKS.replace("{f}", "log10"), x=node.this)


def ln(node: exp.Expression, types: Types) -> exp.Expression:
    _float_math(node, types, "ln")
    return _spark(_LOG_CHECKS.replace("{f}", "ln"), x=node.this)


def exp_(node: exp.Expression, types: Types) -> exp.Expression:
    _float_math(node, types, "exp")
    return _spark("CASE WHEN NOT isnan({x}) AND abs({x}) != double('Infinity') AND exp({x}) = double('Infinity') THEN "
                  + _raise("22003", "value out of range: overflow")
                  + " WHEN NOT isnan({x}) AND abs({x}) != double('Infinity') AND exp({x}) = 0 THEN "
                  + _raise("22003", "value out of range: underflow") + " ELSE exp({x}) END", x=node.this)


def sqrt(node: exp.Expression, types: Types) -> exp.Expression:
    _float_math(node, types, "sqrt")
    return _spark("CASE WHEN {x} < 0 THEN " + _raise("2201F", "cannot take square root of a negative number")
                  + " ELSE sqrt({x}) END", x=node.this)


def power(node: exp.Expression, types: Types) -> exp.Expression:
    _float_math(node, types, "power")
    return _spark(
        "CASE WHEN {x} = 0 AND {y} < 0 THEN " + _raise("2201F", "zero raised to a negative power is undefined")
        + " WHEN {x} < 0 AND {y} != floor({y}) THEN "
        + _raise("2201F", "a negative number raised to a non-integer power yields a complex result")
        + " WHEN power({x}, {y}) = double('Infinity') AND abs({x}) != double('Infinity')"
        + " AND abs({y}) != double('Infinity') THEN " + _raise("22003", "value out of range: overflow")
        # PostgreSQL (C's pow): 1 to any power, and anything to the power 0, is 1 (NaN too)
        + " WHEN ({x} = 1 AND {y} IS NOT NULL) OR ({y} = 0 AND {x} IS NOT NULL) THEN CAST(1 AS DOUBLE)"
        + " ELSE power({x}, {y}) END", x=node.this, y=node.expression)


def array_cat(node: exp.Expression, types: Types) -> exp.Expression:
    rest = node.expressions
    if len(rest) != 1:
        raise _refuse("array_cat with more than two arguments")
    return _cat(node.this, rest[0])


def _cat(a: exp.Expression, b: exp.Expression) -> exp.Expression:
    if isinstance(b, exp.Null):
        return a
    if isinstance(a, exp.Null):
        return b
    return _spark("CASE WHEN {a} IS NULL THEN {b} WHEN {b} IS NULL THEN {a} ELSE concat({a}, {b}) END", a=a, b=b)


_TEXTISH = (T.TEXT.oid, T.VARCHAR.oid, 1042, 19, T.UNKNOWN.oid, T.INT2.oid, T.INT4.oid, T.INT8.oid)


def dpipe(node: exp.Expression, types: Types) -> exp.Expression:
    """`||`: array concatenation (NULL arrays ignored), element append/prepend, jsonb
    concatenation (refused on Spark), or text concatenation of text and integers."""
    a, b = types.of(node.this), types.of(node.expression)
    if (a is not None and a.is_array) or (b is not None and b.is_array):
        if a is not None and a.is_array and b is not None and not b.is_array and b.oid != T.UNKNOWN.oid:
            return _spark("CASE WHEN {a} IS NULL THEN array({b}) ELSE concat({a}, array({b})) END",
                          a=node.this, b=node.expression)
        if b is not None and b.is_array and a is not None and not a.is_array and a.oid != T.UNKNOWN.oid:
            return _spark("CASE WHEN {b} IS NULL THEN array({a}) ELSE concat(array({a}), {b}) END",
                          a=node.this, b=node.expression)
        return _cat(node.this, node.expression)
    if infer.is_jsonb(a) or infer.is_jsonb(b):
        raise _refuse("operator || on jsonb")
    if a is not None and b is not None and not (_text_operand(a) or _text_operand(b)):
        # PostgreSQL's || concatenates text with anything, never two non-text values
        raise undefined_operator(a.name, "||", b.name)
    for key, t in (("this", a), ("expression", b)):
        if infer.is_numeric(t) or infer.is_float(t):  # as its text output
            text = exp.Cast(this=node.args[key], to=exp.DataType.build("TEXT"))
            node.set(key, cast(text, types) if t is not None and t.precision is None else text)
        elif t is not None and t.oid not in _TEXTISH:
            raise _refuse(f"operator || with an operand of type {t.name}")
    return node


def _text_operand(t: T.PgType) -> bool:
    return infer.is_text(t) or t.oid == T.UNKNOWN.oid


def undefined_operator(left: str, op: str, right: str) -> WeirError:
    """PostgreSQL's 42883 for an operator with no implementation of those operand types."""
    return WeirError(SqlState.UNDEFINED_FUNCTION, f"operator does not exist: {left} {op} {right}",
                     hint="No operator matches the given name and argument types. "
                          "You might need to add explicit type casts.")


def undefined_function(name: str, node: exp.Expression, types: Types) -> WeirError:
    """PostgreSQL's 42883 for a call with no function of those argument types."""
    args = ", ".join("unknown" if (t := types.of(a)) is None else t.name for a in node.iter_expressions())
    return WeirError(SqlState.UNDEFINED_FUNCTION, f"function {name}({args}) does not exist",
                     hint="No function matches the given name and argument types. "
                          "You might need to add explicit type casts.")


def length(node: exp.Expression, types: Types) -> exp.Expression:
    """length() exists for text and bytea (Spark also counts the digits of a number)."""
    t = types.of(node.this)
    if t is not None and not (_text_operand(t) or t.oid == T.BYTEA.oid):
        raise undefined_function(str(node.meta.get("weir_output_name") or "length"), node, types)
    return node


def sum_(node: exp.Expression, types: Types) -> exp.Expression:
    """sum(bigint) is numeric in PostgreSQL (it never overflows a bigint)."""
    if types.of(node.this) is not None and types.of(node.this).oid == T.INT8.oid:  # type: ignore[union-attr]
        return exp.Sum(this=exp.Cast(this=node.this, to=exp.DataType.build("DECIMAL(38,0)")))
    _no_interval_output(node, types)
    return node


def avg(node: exp.Expression, types: Types) -> exp.Expression:
    """avg of integers is numeric in PostgreSQL, never computed in doubles; Spark's avg of
    DECIMAL(28,6) is DECIMAL(32,10): the 10 fractional digits of weir's numeric."""
    if infer.is_int(types.of(node.this)):
        return exp.Avg(this=exp.Cast(this=node.this, to=exp.DataType.build("DECIMAL(28,6)")))
    _no_interval_output(node, types)
    return node


def float_only(node: exp.Expression, types: Types) -> exp.Expression:
    """Statistical aggregates: numeric in PostgreSQL for integer and numeric input."""
    if not infer.is_float(types.of(node.this)):
        raise _refuse(f"function {node.sql_name().lower()} of a non-float argument")
    return node


def sub(node: exp.Expression, types: Types) -> exp.Expression:
    if infer.is_date(types.of(node.this)) and infer.is_date(types.of(node.expression)):
        return exp.Anonymous(this="datediff", expressions=[node.this, node.expression])
    return interval_output(node, types)


def interval_output(node: exp.Expression, types: Types) -> exp.Expression:
    """Interval arithmetic: PostgreSQL keeps days and hours apart ('23 hours' + '2 hours' is
    '25:00:00'), Spark's day-time interval does not; fine inside an expression whose value
    is not an interval, refused where it reaches a result column."""
    t = types.of(node)
    if infer.is_interval(t):
        a, b = types.of(node.this), types.of(node.expression)
        if not (isinstance(node, exp.Sub) and infer.is_timestamp(a) and infer.is_timestamp(b)):
            _no_interval_output(node, types)
    return node


def division(node: exp.Expression, types: Types) -> exp.Expression:
    """Integer / integer truncates toward zero in PostgreSQL, and Spark's `/` divides as
    doubles: Spark's `div` (exact for bigints) in the wider operand type. The types come
    from weir's own inference, which sees through inlined views and subqueries wherever
    sqlglot's qualification (weir.sql.render.typed_division) gives up."""
    _constant_division_by_zero(node)
    a, b = types.of(node.this), types.of(node.expression)
    if infer.is_int(a) and infer.is_int(b) and a is not None and b is not None:
        wider = max((a, b), key=lambda t: t.typlen)
        return exp.Cast(this=exp.IntDiv(this=node.this, expression=node.expression),
                        to=exp.DataType.build(wider.spark_ddl, dialect="spark"))
    return interval_output(node, types)


def _no_interval_output(node: exp.Expression, types: Types) -> None:
    if not infer.is_interval(types.of(node)):
        return
    cur = node
    while cur.parent is not None and not isinstance(cur.parent, exp.Query) and (
            isinstance(cur.parent, (exp.Paren, exp.Alias, exp.Neg)) or infer.is_interval(types.of(cur.parent))):
        cur = cur.parent
    if isinstance(cur.parent, exp.Select) and cur.arg_key == "expressions":
        raise _refuse("interval arithmetic in a result column")


def _number(e: exp.Expression) -> float | None:
    """The value of a numeric literal, parenthesised or negated, else None."""
    while isinstance(e, (exp.Paren, exp.Neg)):
        e = e.this
    if isinstance(e, exp.Literal) and not e.is_string:
        try:
            return float(e.this)
        except ValueError:
            return None
    return None


def _constant_division_by_zero(node: exp.Expression) -> None:
    """PostgreSQL folds constant expressions when it plans a query, so `1/0` fails even in
    a CASE branch no row reaches; Spark would never evaluate it."""
    if _number(node.this) is not None and _number(node.expression) == 0:
        raise WeirError(SqlState.DIVISION_BY_ZERO, "division by zero")


def mod(node: exp.Expression, types: Types) -> exp.Expression:
    _constant_division_by_zero(node)
    a, b = types.of(node.this), types.of(node.expression)
    if infer.is_float(a) or infer.is_float(b):
        raise WeirError(SqlState.UNDEFINED_FUNCTION,
                        f"operator does not exist: {a.name if a else 'unknown'} % {b.name if b else 'unknown'}")
    return node


def substring(node: exp.Expression, types: Types) -> exp.Expression:
    """substring(s, start, len): PostgreSQL counts characters before position 1."""
    start, length = node.args.get("start"), node.args.get("length")
    if start is None:
        return node
    if length is None:
        return _spark("substring({s}, greatest({p}, 1))", s=node.this, p=start)
    return _spark("CASE WHEN {n} < 0 THEN " + _raise("22011", "negative substring length not allowed")
                  + " ELSE substring({s}, greatest({p}, 1), greatest({p} + {n} - greatest({p}, 1), 0)) END",
                  s=node.this, p=start, n=length)


def concat(node: exp.Expression, types: Types) -> exp.Expression:
    """concat() of text (weir.sql.pg_text turns arrays and records into text first)."""
    for a in list(node.expressions):
        t = types.of(a)
        if t is None or not infer.is_text(t):
            raise _refuse(f"function concat with an argument of type {t.name if t else 'unknown'}")
    return node


def pg_typeof(node: exp.Expression, types: Types) -> exp.Expression:
    if len(node.expressions) != 1:
        raise WeirError(SqlState.UNDEFINED_FUNCTION, "function pg_typeof() does not exist")
    t = types.of(node.expressions[0])
    if t is None:
        raise _refuse("pg_typeof of an expression of this kind")
    name = t.name  # regtype's output: PostgreSQL's own name for timestamp
    if name == "timestamp" or name.startswith("timestamp["):
        name = name.replace("timestamp", "timestamp without time zone")
    return exp.Literal.string(name)


_INT_TYPES = (exp.DataType.Type.SMALLINT, exp.DataType.Type.INT, exp.DataType.Type.BIGINT)
_TEXT_TYPES = (exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR,
               exp.DataType.Type.NCHAR, exp.DataType.Type.NVARCHAR)


def cast(node: exp.Expression, types: Types) -> exp.Expression:
    """div(a, b) is sqlglot's CAST(a DIV b AS DECIMAL): keep it an integer-valued numeric.
    Unconstrained numeric to text prints without trailing zeros, as weir's numeric output
    does (Spark's DECIMAL(38,10) would print ten fractional digits); float to text prints
    PostgreSQL's digits (a replica UDF, weir.codec.spark_udfs), not Java's."""
    to = node.to
    if to.this == exp.DataType.Type.USERDEFINED and str(to.args.get("kind") or "").lower() == "mz_timestamp":
        source = types.of(node.this)
        if infer.is_timestamp(source) or infer.is_date(source):
            return exp.Cast(this=epoch_millis(node.this), to=to)
    target = infer.datatype(to)
    if target is not None and target.oid in (T.VARCHAR.oid, T.BPCHAR.oid) and (
            target.length is not None or target.oid == T.BPCHAR.oid):
        return _character(node, target, types)
    if isinstance(node.this, exp.IntDiv) and to.this == exp.DataType.Type.DECIMAL and not to.expressions:
        return exp.Cast(this=node.this, to=exp.DataType.build("DECIMAL(38,0)"))
    if to.this in _INT_TYPES:
        source = types.of(node.this)
        if infer.is_numeric(source):  # PostgreSQL rounds half away from zero; Spark truncates
            return exp.Cast(this=_spark("round({x}, 0)", x=node.this), to=to)
        if infer.is_float(source):  # rint(): half to even
            return exp.Cast(this=_spark("bround({x}, 0)", x=node.this), to=to)
    if to.this in _TEXT_TYPES and not to.expressions:
        source = types.of(node.this)
        if infer.is_float(source) and source is not None:  # PostgreSQL's shortest digits
            name = "weir_float4_out" if source.oid == T.FLOAT4.oid else "weir_float8_out"
            call = exp.Anonymous(this=name, expressions=[node.this])
            call.meta["weir_literal"] = True  # weir's own function: the gate lets it pass
            return call
        trimmed = r"regexp_replace(regexp_replace(CAST({x} AS STRING), '(\\.[0-9]*?)0+$', '$1'), '\\.$', '')"
        if infer.is_numeric(source) and source is not None and source.precision is None:
            return _spark(trimmed, x=node.this)
        if source is None:  # inference lost its type: Spark knows it (typeof folds when planned)
            # an array's or a struct's: refused when the query runs (Spark would print [1, null]);
            # not in VALUES, whose expressions Spark folds (raise_error does not fold)
            unknown = "" if node.find_ancestor(exp.Values) is not None else (
                "WHEN typeof({x}) LIKE 'array<%' OR typeof({x}) LIKE 'struct<%' THEN "
                + _raise("0A000", "text output of an array or a record of this type is not supported") + " ")
            return _spark(f"CASE WHEN typeof({{x}}) = 'decimal(38,10)' THEN {trimmed} {unknown}"
                          "ELSE CAST({x} AS STRING) END", x=node.this)
    return node


def _character(node: exp.Cast, target: T.PgType, types: Types) -> exp.Expression:
    """A cast to character varying(n) cuts the text to n characters (an explicit cast does
    not fail as an INSERT does); to character(n) also drops the padding, which weir keeps
    off bpchar values (weir.codec) and output puts back. Spark's own CHAR/VARCHAR casts
    would do neither."""
    as_text = cast(exp.Cast(this=node.this, to=exp.DataType.build("TEXT")), types)
    types.same_as(as_text, node.this)
    x = as_text
    if target.length is not None:
        x = _spark(f"substring({{x}}, 1, {target.length})", x=x)
    if target.oid == T.BPCHAR.oid:
        x = _spark("rtrim({x})", x=x)
    return exp.Cast(this=x, to=exp.DataType.build("STRING", dialect="spark"))


def lead_lag(node: exp.Expression, types: Types) -> exp.Expression:
    """lead/lag with a default: the result has the common type of the value and the
    default (PostgreSQL: lead(int, 1, -1.4) is numeric), Spark casts the default to the
    value's type (-1)."""
    offset = node.args.get("offset")  # PostgreSQL evaluates it per row; Spark takes a constant
    if offset is not None and offset.find(exp.Column, exp.Select, exp.Subquery) is not None:
        raise _refuse(f"{node.key} with an offset that is not a constant")
    default = node.args.get("default")
    if default is None:
        return node
    value_t, default_t = types.of(node.this), types.of(default)
    common = infer.promote(value_t, default_t)
    if common is not None and value_t is not None and common.oid != value_t.oid and common.oid != T.UNKNOWN.oid:
        node.set("this", exp.Cast(this=node.this, to=exp.DataType.build(common.spark_ddl, dialect="spark")))
    return node


def window_spec(node: exp.Expression, types: Types) -> exp.Expression:
    """Window frames Spark has no equivalent of are refused (it would drop an EXCLUDE
    clause and compute the frame without it)."""
    exclude = node.args.get("exclude")
    if exclude is not None and exclude.name.upper() != "NO OTHERS":
        raise _refuse(f"window frame EXCLUDE {exclude.name.upper()}")
    if str(node.args.get("kind") or "").upper() == "GROUPS":
        raise _refuse("window frame in GROUPS mode")
    return node


def epoch_millis(x: exp.Expression) -> exp.Expression:
    """A date or timestamp as mz_timestamp (the session's time zone is UTC on replicas)."""
    return _spark("unix_millis(CAST({x} AS TIMESTAMP_LTZ))", x=x)
