"""Arithmetic Spark cannot do as PostgreSQL does. numeric division and avg (PostgreSQL's
result scale gives at least 16 significant digits; Spark's decimal division keeps as few
as 6 fractional digits, 1/3000000 is 0), and ln, log, exp, sqrt and power of numeric arguments
(Spark has them only in doubles), run by the replica's UDF `weir_numeric`
(weir.codec.numeric_math); results are weir's numeric, DECIMAL(38,10): PostgreSQL's value
rounded to 10 fractional digits. Rounding: round, ceil, floor and trunc keep double
precision and the sign of zero."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from weir import types as T
from weir.errors import SqlState, WeirError
from weir.sql import infer, udf_calls
from weir.sql import translate as tr
from weir.sql.infer import Types

Handler = Callable[[exp.Expression, Types], exp.Expression]
UDF = "weir_numeric"
_NUMERIC = "DECIMAL(38,10)"


def _numeric(operation: str, *args: exp.Expression) -> exp.Expression:
    return exp.Cast(this=udf_calls.checked(UDF, operation, *args), to=exp.DataType.build(_NUMERIC))


def _exact(t: object) -> bool:
    return infer.is_int(t) or infer.is_numeric(t)  # type: ignore[arg-type]


def division(node: exp.Expression, types: Types) -> exp.Expression:
    a, b = types.of(node.this), types.of(node.expression)
    if _exact(a) and _exact(b) and (infer.is_numeric(a) or infer.is_numeric(b)):
        tr.division(node, types)  # its checks (a constant divisor of 0)
        return _numeric("div", node.this, node.expression)
    return tr.division(node, types)


def _avg_parts(agg: exp.Avg, types: Types) -> tuple[exp.Expression, exp.Expression] | None:
    """sum and count for PostgreSQL's avg of integers or numerics (numeric_avg divides
    them with numeric division)."""
    arg = agg.this
    distinct = isinstance(arg, exp.Distinct)
    inner = arg.expressions[0] if distinct else arg
    if inner is None or not _exact(types.of(inner)):
        return None
    summed: exp.Expression = exp.Cast(this=inner.copy(), to=exp.DataType.build(_NUMERIC))
    counted: exp.Expression = inner.copy()
    if distinct:
        summed, counted = exp.Distinct(expressions=[summed]), exp.Distinct(expressions=[counted])
    return exp.Sum(this=summed), exp.Count(this=counted)


def avg(node: exp.Expression, types: Types) -> exp.Expression:
    if isinstance(node.parent, (exp.Window, exp.Filter)):
        return node  # its OVER or FILTER wraps the sum and the count (avg_in below)
    parts = _avg_parts(node, types)  # type: ignore[arg-type]
    if parts is None:
        return tr.avg(node, types)
    return _numeric("div", *parts)


def avg_in(node: exp.Expression, types: Types) -> exp.Expression:
    """avg(x) FILTER (...) and avg(x) OVER (...): the same clauses over sum and count."""
    if isinstance(node, exp.Filter) and isinstance(node.parent, exp.Window):
        return node
    inner = node.this.this if isinstance(node.this, exp.Filter) else node.this
    if not isinstance(inner, exp.Avg):
        return node
    parts = _avg_parts(inner, types)
    if parts is None:
        if isinstance(node.this, exp.Filter):
            node.this.set("this", tr.avg(inner, types))
        else:
            node.set("this", tr.avg(inner, types))
        return node
    wrapped = []
    for part in parts:
        outer = node.copy()
        target = outer.this if isinstance(outer.this, exp.Filter) else outer
        target.set("this", part)
        wrapped.append(outer)
    return _numeric("div", *wrapped)


def _math(operation: str, fallback: Handler) -> Handler:
    def handler(node: exp.Expression, types: Types) -> exp.Expression:
        args = [a for a in (node.this, node.args.get("expression")) if a is not None]
        kinds = [types.of(a) for a in args]
        # log(b, x) exists only for numeric: integer arguments are cast to it
        if (any(infer.is_numeric(t) for t in kinds) or len(args) == 2) and all(_exact(t) for t in kinds):
            return _numeric(operation, *args)
        return fallback(node, types)
    return handler


def round_(node: exp.Expression, types: Types) -> exp.Expression:
    """round(double) rounds half to even in PostgreSQL (rint); round(double, n) does not exist."""
    t = types.of(node.this)
    if infer.is_float(t):
        if node.args.get("decimals") is not None:
            raise WeirError(SqlState.UNDEFINED_FUNCTION,
                            "function round(double precision, integer) does not exist")
        return exp.Anonymous(this="bround", expressions=[node.this])
    if t is None:
        raise tr.refuse("function round of an argument of unknown type")
    return node


def ceil_floor(node: exp.Expression, types: Types) -> exp.Expression:
    """ceil/floor of a double stay doubles in PostgreSQL (Spark returns bigint), keeping
    the sign of a zero (ceil(-0.5) is -0)."""
    if infer.is_float(types.of(node.this)):
        ceil = isinstance(node, exp.Ceil)
        zero = "WHEN {x} > -1 AND {x} < 0 THEN -CAST(0 AS DOUBLE) " if ceil else ""
        return tr.spark_template("CASE WHEN abs({x}) >= 4503599627370496 OR isnan({x}) OR {x} = 0 THEN {x} " + zero
                      + f"ELSE CAST({'ceil' if ceil else 'floor'}({{x}}) AS DOUBLE) END", x=node.this)
    return node


def trunc(node: exp.Expression, types: Types) -> exp.Expression:
    """trunc(double) keeps the sign of zero (trunc(-0.5) is -0), and trunc(integer) is
    trunc(double); trunc(numeric [, s]) truncates toward zero at scale s (a constant)."""
    t, places = types.of(node.this), node.args.get("decimals")
    if (infer.is_float(t) or infer.is_int(t)) and places is None:
        x = exp.Cast(this=node.this, to=exp.DataType.build("DOUBLE"))
        return tr.spark_template(
            "CASE WHEN abs({x}) >= 4503599627370496 OR isnan({x}) OR {x} = 0 THEN {x} "
            "WHEN {x} < 0 THEN -CAST(floor(-{x}) AS DOUBLE) ELSE CAST(floor({x}) AS DOUBLE) END", x=x)
    if not _exact(t) or (places is not None and not (
            isinstance(places, exp.Literal) and not places.is_string
            or isinstance(places, exp.Neg) and isinstance(places.this, exp.Literal))):
        raise tr.refuse("function trunc of " + (t.name if t is not None else "an argument of unknown type")
                        + ("" if places is None or infer.is_float(t) else " to a scale that is not a constant"))
    s = places.sql() if places is not None else "0"
    x = exp.Cast(this=node.this, to=exp.DataType.build(_NUMERIC))
    return exp.Cast(this=tr.spark_template(f"CASE WHEN {{x}} < 0 THEN ceil({{x}}, {s}) ELSE floor({{x}}, {s}) END",
                                           x=x), to=exp.DataType.build(_NUMERIC))


def float_cast(previous: Handler) -> Handler:
    """float4/float8 -> numeric with PostgreSQL's digits (6 / 15 significant: 1.23::float4
    is 1.23), exactly, on the replica (numeric_math.from_float); other casts go to
    `previous`."""
    def handler(node: exp.Expression, types: Types) -> exp.Expression:
        source = types.of(node.this)
        to = node.to  # type: ignore[attr-defined]
        if to.this != exp.DataType.Type.DECIMAL or not infer.is_float(source) or source is None:
            return previous(node, types)
        as_numeric = _numeric("float4" if source.oid == T.FLOAT4.oid else "float8", node.this)
        if not to.expressions:
            return as_numeric
        return previous(exp.Cast(this=as_numeric, to=to), types)  # numeric(p,s) rounds as numeric does
    return handler


HANDLERS: dict[type, Handler] = {
    exp.Div: division, exp.Avg: avg, exp.Window: avg_in, exp.Filter: avg_in,
    exp.Ln: _math("ln", tr.ln), exp.Log: _math("log", tr.log), exp.Exp: _math("exp", tr.exp_),
    exp.Sqrt: _math("sqrt", tr.sqrt), exp.Pow: _math("power", tr.power), exp.Trunc: trunc, exp.Round: round_, exp.Ceil: ceil_floor,
    exp.Floor: ceil_floor,
}
