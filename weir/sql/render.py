"""Turn a resolved query into Spark SQL: bind parameters, replace session functions by
their values, name output columns the way PostgreSQL does."""

from __future__ import annotations

import decimal
from collections.abc import Callable
from typing import Any

import sqlglot
from sqlglot import exp

from weir import types as T
from weir.codec import interval_parse
from weir.errors import SqlState, WeirError, runtime_marker
from weir.sql.infer import jsonb_parameter_type
from weir.sql.joins import group_comma_joins
from weir.sql.literals import literal as literal
from weir.sql.session_functions import IMPLICIT_SCHEMAS as IMPLICIT_SCHEMAS
from weir.sql.session_functions import VERSION as VERSION
from weir.sql.session_functions import SessionContext as SessionContext
from weir.sql.session_functions import mark_session_functions as mark_session_functions
from weir.sql.session_functions import session_function_type as session_function_type
from weir.sql.session_functions import session_value
from weir.sql.session_functions import substitute_session_functions as substitute_session_functions
from weir.sql.session_functions import uses_session as uses_session
from weir.sql.spark_dialect import WeirSpark
from weir.types import PgType


def _folded(ident: object, name: str) -> str:
    return name if not isinstance(ident, exp.Identifier) or ident.quoted else name.lower()


def output_name(e: exp.Expression) -> str:
    """PostgreSQL's FigureColname for a projection (an unquoted name folded to lower case,
    as PostgreSQL reads it: `SELECT 1 AS TABLE_CAT` is column table_cat)."""
    if isinstance(e, exp.Alias):
        return _folded(e.args.get("alias"), e.alias)
    if isinstance(e, exp.Column):
        return _folded(e.this, e.name)
    if e.meta.get("weir_output_name"):  # a call, named as it was written
        return str(e.meta["weir_output_name"])
    if isinstance(e, exp.Subquery) and isinstance(e.this, exp.Select) and len(e.this.expressions) == 1:
        return output_name(e.this.expressions[0])  # a scalar subquery: its column's name
    if isinstance(e, exp.Cast):
        # the argument's name when it is a column's or a call's, else the type's
        return output_name(e.this) if _named(e.this) else _type_label(e.to)
    if isinstance(e, (exp.Paren, exp.Filter, exp.Bracket)):
        return output_name(e.this)  # a[i]: the array's name, as PostgreSQL names a subscript
    if isinstance(e, exp.Case):
        return "case"
    if isinstance(e, exp.AtTimeZone):
        return "timezone"  # PostgreSQL's function behind the operator
    if isinstance(e, exp.Window):
        return output_name(e.this)  # the window function's name
    if isinstance(e, exp.Array):
        return "array"
    if isinstance(e, exp.Tuple):  # a row constructor (a cast of one keeps the name)
        return "row"
    if isinstance(e, exp.CurrentVersion):
        return "version"
    if isinstance(e, exp.Dot) and isinstance(e.expression, exp.Func):
        return output_name(e.expression)  # pg_catalog.version(): the function's name
    if isinstance(e, exp.CurrentCatalog):
        return "current_catalog"
    if isinstance(e, exp.Anonymous):
        return e.meta.get("weir_output_name") or e.name.lower()
    if isinstance(e, (exp.CurrentUser, exp.SessionUser)):
        return "current_user" if isinstance(e, exp.CurrentUser) else "session_user"
    if isinstance(e, exp.Binary):
        return "?column?"  # an operator (~ is sqlglot's RegexpLike), not a call: those carry their name
    if isinstance(e, exp.Func):
        from weir.sql.functions import pg_name

        name = pg_name(e)
        return {"current_timestamp": "now" if e.args.get("sysdate") is None else name}.get(name, name)
    return "?column?"


def _named(e: exp.Expression) -> bool:
    """Whether PostgreSQL's FigureColname gives `e` a strong name (a column's, a call's,
    ARRAY[...]'s), which a cast around it keeps; a constant's, a CASE's or an inner
    cast's type name is weaker than the outer cast's type."""
    while isinstance(e, (exp.Paren, exp.Cast)) and not e.meta.get("weir_folded"):
        e = e.this
    if e.meta.get("weir_named"):  # a rewritten call named after what it was (a reg* cast of a call)
        return True
    if e.meta.get("weir_folded") or isinstance(e, (exp.Literal, exp.Null, exp.Case, exp.Boolean)):
        return False
    if isinstance(e, exp.Binary) and not e.meta.get("weir_output_name"):
        return False  # an operator (j #- p, j -> 'a', 2 ^ 3), which sqlglot may model as a function
    return isinstance(e, (exp.Column, exp.Subquery, exp.Func, exp.Tuple)) or bool(e.meta.get("weir_output_name"))


def _type_label(to: exp.DataType) -> str:
    if to.this == exp.DataType.Type.ARRAY and to.expressions:
        return _type_label(to.expressions[0])  # the type's last name: text[] is "text"
    labels = {
        "INT": "int4", "BIGINT": "int8", "SMALLINT": "int2", "TEXT": "text", "VARCHAR": "varchar",
        "BOOLEAN": "bool", "DOUBLE": "float8", "FLOAT": "float4", "DECIMAL": "numeric",
        "DATE": "date", "TIMESTAMP": "timestamp", "TIMESTAMPTZ": "timestamptz",
        "INTERVAL": "interval", "UUID": "uuid", "JSONB": "jsonb", "CHAR": "bpchar", "BPCHAR": "bpchar",
        "VARBINARY": "bytea", "BINARY": "bytea",
    }
    return labels.get(to.this.name if hasattr(to.this, "name") else str(to.this), "?column?")


def name_outputs(expr: exp.Expression) -> list[str | None]:
    """Alias unaliased top-level projections with PostgreSQL's names. Returns each
    projection's name (None for a star, whose names Spark knows)."""
    select = expr
    while isinstance(select, exp.SetOperation):
        select = select.this
    if isinstance(select, exp.Subquery):
        select = select.this
    if not isinstance(select, exp.Select):
        return []
    names: list[str | None] = []
    new_exprs = []
    for i, p in enumerate(select.expressions):
        if isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star)):
            names.append(None)
            new_exprs.append(p)
            continue
        name = output_name(p)
        names.append(name)
        if isinstance(p, exp.Alias):
            new_exprs.append(p)
        elif isinstance(p, exp.Column):
            new_exprs.append(p)
        else:
            new_exprs.append(exp.alias_(p, f"_weir_c{i}", quoted=True))
    select.set("expressions", new_exprs)
    return names




def session_value_sql(call: exp.Expression, ctx: SessionContext) -> str:
    """The Spark SQL of one session function's value for this execution. A value that is
    a constant (current_schemas' text[], current_database()'s text) renders the same every
    time: its rendering is kept (half a millisecond for an array, in every catalog query)."""
    value = session_value(call.copy(), ctx)
    if not _plain_value(value):
        return to_spark(value)
    key: object = ("string", value.this) if isinstance(value, exp.Literal) and value.is_string else value.sql()
    found = _VALUE_SQL.get(key)
    if found is None:
        if len(_VALUE_SQL) >= 512:
            _VALUE_SQL.clear()
        found = _VALUE_SQL[key] = to_spark(value)
    return found


_VALUE_SQL: dict[object, str] = {}
_LITERAL_SQL: dict[tuple[PgType, type, object], str] = {}
_SIMPLE = (str, int, float, bool, decimal.Decimal, type(None))


def literal_sql(value: object, pg_type: PgType) -> str:
    """The Spark SQL of a parameter's value: kept for simple values (an ORM's catalog query
    binds twenty constants, each a sqlglot literal rendered at 60 us)."""
    if not isinstance(value, _SIMPLE):
        return to_spark(literal(value, pg_type, parameter=True))
    # equal values may differ in their text (-0.0 and 0.0, Decimal 1.0 and 1.00): keyed by repr
    key = (pg_type, type(value), repr(value) if isinstance(value, (float, decimal.Decimal)) else value)
    found = _LITERAL_SQL.get(key)
    if found is None:
        if len(_LITERAL_SQL) >= 4096:
            _LITERAL_SQL.clear()
        found = _LITERAL_SQL[key] = to_spark(literal(value, pg_type))
    return found
_PLAIN = (exp.Literal, exp.Null, exp.Boolean, exp.Array, exp.Cast, exp.DataType, exp.DataTypeParam,
          exp.Neg)


def _plain_value(node: exp.Expression) -> bool:
    return all(isinstance(n, _PLAIN) for n in node.walk())


def bind_params(expr: exp.Expression, values: list[Any], types: list[PgType]) -> exp.Expression:
    """Replace $n by typed literals of the bound values."""

    def visit(node: exp.Expression) -> exp.Expression | None:
        if isinstance(node, (exp.Limit, exp.Offset)) and isinstance(
                node.expression, (exp.Parameter, exp.Placeholder)):
            return _bind_limit(node, values)
        if isinstance(node, (exp.Parameter, exp.Placeholder)):
            n = param_number(node)
            if n < 1 or n > len(values):
                raise WeirError(SqlState.UNDEFINED_PARAMETER, f"there is no parameter ${n}")
            return literal(values[n - 1], types[n - 1], parameter=True)
        return node

    return expr.transform(visit)


def _bind_limit(node: exp.Limit | exp.Offset, values: list[Any]) -> exp.Expression | None:
    """LIMIT $n / OFFSET $n: Spark wants a plain integer there (not a cast bigint);
    NULL means no limit / no offset, as in PostgreSQL."""
    n = param_number(node.expression)
    if n < 1 or n > len(values):
        raise WeirError(SqlState.UNDEFINED_PARAMETER, f"there is no parameter ${n}")
    v = limit_value(values[n - 1], isinstance(node, exp.Limit))
    if v is None:
        return None
    bound = node.copy()
    bound.set("expression", exp.Literal.number(v))
    return bound


def limit_value(value: Any, is_limit: bool) -> int | None:
    """A LIMIT / OFFSET parameter's value: a non-negative integer, None for no limit."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | decimal.Decimal | float):
        raise WeirError(SqlState.DATATYPE_MISMATCH, "argument of LIMIT must be type bigint")
    v = int(value)
    if v < 0:
        if is_limit:
            raise WeirError("2201W", "LIMIT must not be negative")
        raise WeirError("2201X", "OFFSET must not be negative")
    return v


def param_number(node: exp.Expression) -> int:
    inner = node.this
    text = inner.name if isinstance(inner, exp.Expression) else str(inner)
    try:
        return int(text)
    except ValueError:
        raise WeirError(SqlState.SYNTAX_ERROR, f"invalid parameter reference {node.sql()}") from None


def infer_param_types(
    expr: exp.Expression, given: list[int], column_type: Callable[[exp.Column], PgType | None]
) -> list[PgType]:
    """Types for $1..$n: the client's where given, else from context (a cast, or a
    comparison/arithmetic with a column or typed expression), else text."""
    params = list(expr.find_all(exp.Parameter, exp.Placeholder))  # one walk of the tree
    n = max(max((param_number(p) for p in params), default=0), len(given))
    out: list[PgType | None] = [None] * n
    for i, oid in enumerate(given):
        if oid:
            out[i] = T.by_oid(oid)
    for p in params:
        k = param_number(p) - 1
        if out[k] is not None:
            continue
        parent = p.parent
        while isinstance(parent, exp.Paren):
            parent = parent.parent
        guess: PgType | None = None
        quantified = _quantified(parent)
        if quantified is not None:  # x = ANY($1): $1 is an array of x's type, as in PostgreSQL
            parent, p = quantified.parent, quantified
        if isinstance(parent, exp.Cast):
            guess = pg_type_of_datatype(parent.to)
        elif isinstance(parent, (exp.Binary, exp.In, exp.Between)):
            for other in parent.iter_expressions():
                if other is p:
                    continue
                if isinstance(other, exp.Column):
                    guess = column_type(other)
                elif isinstance(other, exp.Cast):
                    guess = pg_type_of_datatype(other.to)
                elif isinstance(other, exp.Literal) and not other.is_string:
                    guess = T.NUMERIC if "." in other.this else T.INT4
                if guess is not None:
                    break
        elif isinstance(parent, exp.Limit) or isinstance(parent, exp.Offset):
            guess = T.INT8
        if quantified is not None:
            out[k] = T.array_of(guess or T.TEXT)
            continue
        out[k] = jsonb_parameter_type(p, parent, guess)
    return [t or T.TEXT for t in out]


def _quantified(parent: exp.Expression | None) -> exp.Expression | None:
    """The ANY/SOME/ALL call a parameter is the whole argument of, if it is."""
    if isinstance(parent, exp.Any) or (isinstance(parent, exp.Anonymous)
                                       and str(parent.this).upper() in ("ANY", "SOME", "ALL")
                                       and len(parent.expressions) == 1):
        return parent
    return None


def pg_type_of_datatype(dt_: exp.DataType) -> PgType | None:
    try:
        return T.parse_type(dt_.sql(dialect="postgres"))
    except WeirError:
        return None


def to_spark(expr: exp.Expression) -> str:
    """Render for Spark SQL; every function and operator passes weir's gate first."""
    from weir.sql import functions
    from weir.sql.set_returning import lockstep  # several set-returning functions in a select list

    tree = _series_as_subqueries(_spark_types(functions.check(group_comma_joins(expr))))
    sql = lockstep(tree).sql(dialect=WeirSpark)
    return sql


_SERIES = ("CASE WHEN {s} = {s} - {s} THEN raise_error('" + runtime_marker("22023", "step size cannot equal zero")
           + "') WHEN ({s} > {s} - {s} AND {a} > {b}) OR ({s} < {s} - {s} AND {a} < {b}) "
           "THEN slice(sequence({a}, {a}), 1, 0) ELSE sequence({a}, {b}, {s}) END")


def _series(series: exp.Expression) -> exp.Expression:
    """generate_series(a, b[, step]) as a Spark array: empty when b is not reached in the
    step's direction (Spark's sequence(1, 0) counts down, and fails for a step of the other
    sign), an error for a zero step."""
    args = {"a": series.args["start"], "b": series.args["end"],
            "s": series.args.get("step") or exp.Literal.number(1)}
    tree = sqlglot.parse_one(_SERIES.format(**{k: f"__weir_series_{k}" for k in args}), read="spark")

    def put(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not node.table and node.name.startswith("__weir_series_"):
            return args[node.name.removeprefix("__weir_series_")].copy()
        return node

    return tree.transform(put)


_INTEGER_TYPES = {exp.DataType.Type.INT: "INT", exp.DataType.Type.BIGINT: "BIGINT"}


def _integer_constant_type(e: exp.Expression) -> str | None:
    """INT or BIGINT when `e` is an integer constant or a typed parameter slot (both fold
    in Spark), as PostgreSQL types generate_series' arguments; None otherwise."""
    if isinstance(e, exp.Neg):
        e, sign = e.this, -1
    else:
        sign = 1
    if isinstance(e, exp.Literal) and not e.is_string and e.is_int:
        v = sign * int(e.this)
        return "INT" if -2**31 <= v < 2**31 else "BIGINT" if -2**63 <= v < 2**63 else None
    if (sign == 1 and isinstance(e, exp.Cast) and isinstance(e.this, (exp.Literal, exp.Placeholder))
            and e.to.this in _INTEGER_TYPES):
        return _INTEGER_TYPES[e.to.this]
    return None


def _range_series(series: exp.Expression, name: str) -> exp.Select | None:
    """`FROM generate_series(a, b[, step])` over integer constants as Spark's range(): it
    streams instead of building the whole series as one array, and its loop checks for
    cancellation (an explode() of one array runs to its end after a cancel). None when the
    arguments are not integer constants with a constant non-zero step."""
    start, end = series.args["start"], series.args["end"]
    step = series.args.get("step") or exp.Literal.number(1)
    types = [_integer_constant_type(x) for x in (start, end, step)]
    if None in types:
        return None
    step_value = int(step.this.this) * -1 if isinstance(step, exp.Neg) else (
        int(step.this) if isinstance(step, exp.Literal) else None)
    if not step_value or (isinstance(end, exp.Literal) and abs(int(end.this)) >= 2**63 - 1):
        return None  # a parameter step, or zero (explode's form raises PostgreSQL's error)
    bound = exp.Add if step_value > 0 else exp.Sub
    stop = bound(this=exp.Cast(this=end.copy(), to=exp.DataType.build("BIGINT")), expression=exp.Literal.number(1))
    value = exp.Cast(this=exp.column("id"), to=exp.DataType.build("BIGINT" if "BIGINT" in types else "INT"))
    rng = exp.Anonymous(this="range", expressions=[
        exp.Cast(this=start.copy(), to=exp.DataType.build("BIGINT")), stop, exp.Literal.number(step_value)])
    return exp.select(exp.alias_(value, name, quoted=True)).from_(exp.Table(this=rng))


def _series_as_subqueries(expr: exp.Expression) -> exp.Expression:
    """`FROM generate_series(a, b) AS g(x)`: sqlglot renders Spark SQL that does not parse
    (`EXPLODE(SEQUENCE(a, b), _u(x))`); a subquery over explode() of the series means the
    same, its column named as PostgreSQL names it (the column alias, else the table alias,
    else generate_series). Elsewhere (a select list, LATERAL) explode() of the series."""
    if not any(True for _ in expr.find_all(exp.ExplodingGenerateSeries)):
        return expr

    def visit(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.ExplodingGenerateSeries) and not isinstance(node.parent, exp.Table):
            return exp.Explode(this=_series(node))
        if not (isinstance(node, exp.Table) and isinstance(node.this, exp.ExplodingGenerateSeries)):
            return node
        series = node.this
        alias = node.args.get("alias")
        columns = alias.columns if alias is not None else []
        name = columns[0].name if columns else (alias.name if alias is not None and alias.name
                                                  else "generate_series")
        inner = _range_series(series, name) or exp.select(
            exp.alias_(exp.Explode(this=_series(series)), name, quoted=True))
        return exp.Subquery(this=inner, alias=exp.TableAlias(
            this=exp.to_identifier(alias.name if alias is not None and alias.name else name, quoted=True)))

    return expr.copy().transform(visit)


def _spark_types(expr: exp.Expression) -> exp.Expression:
    """PostgreSQL types whose bare Spark rendering means something else: an
    unconstrained `numeric` is Spark's DECIMAL(10,0), which rounds 1.5 to 2; weir's
    numeric is DECIMAL(38,10) everywhere else (columns, parameters). `timestamp` is
    Spark's TIMESTAMP, a timestamp with time zone: PostgreSQL's is TIMESTAMP_NTZ. weir's
    own types (mz_timestamp) are their Spark types."""
    def retyped(d: exp.DataType) -> bool:
        return ((d.this == exp.DataType.Type.DECIMAL and not d.expressions) or d.this == exp.DataType.Type.TIMESTAMP
                or _weir_type(d))

    if not any(retyped(d) for d in expr.find_all(exp.DataType)):
        return expr

    def visit(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.DataType) and node.this == exp.DataType.Type.DECIMAL and not node.expressions:
            return exp.DataType.build(T.NUMERIC.spark_ddl, dialect="spark")
        if isinstance(node, exp.DataType) and node.this == exp.DataType.Type.TIMESTAMP:
            return exp.DataType.build("TIMESTAMP_NTZ", dialect="spark")
        if isinstance(node, exp.DataType) and _weir_type(node):
            t = pg_type_of_datatype(node)  # weir's own types (mz_timestamp), oid, name: their Spark type
            return exp.DataType.build(t.spark_ddl, dialect="spark") if t is not None else node
        return node

    return expr.copy().transform(visit)


def _weir_type(d: exp.DataType) -> bool:
    """A type Spark has no name for: weir's own (mz_timestamp), and PostgreSQL's oid and name
    (sqlglot keeps their names, which Spark refuses)."""
    return d.this in (exp.DataType.Type.USERDEFINED, exp.DataType.Type.NAME) or isinstance(d.this, str)


def unfold_typed_literals(expr: exp.Expression) -> exp.Expression:
    """`expr` with each folded literal as it was written ('1 month'::interval, not the Spark
    calendar call it runs as): what a view's stored definition must say, since it is
    planned again, by PostgreSQL's rules, wherever it is read."""
    def visit(node: exp.Expression) -> exp.Expression:
        source = node.meta.get("weir_source")
        return source.copy() if isinstance(source, exp.Expression) else node

    return expr.transform(visit)


def fold_typed_literals(expr: exp.Expression) -> exp.Expression:
    """'text'::type becomes a literal parsed the PostgreSQL way ('{a,b}'::text[],
    '1 day'::interval, '\\x01'::bytea, dates ...), which Spark's casts do not all accept."""
    from weir import codec

    def fold(node: exp.Cast, target: PgType) -> exp.Expression:
        if target.oid == T.INTERVAL.oid:  # PostgreSQL's interval_in (weir.codec.interval_parse)
            return literal(interval_parse.parse(node.this.this), target)
        return literal(codec.decode_text(node.this.this.encode(), target), target)

    def visit(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
            target = pg_type_of_datatype(node.to)
            if target is None or target.oid in (T.TEXT.oid, T.VARCHAR.oid, T.UNKNOWN.oid):
                return node
            folded = fold(node, target)
            folded.meta["weir_folded"] = True  # a constant still, for the names of casts around it
            folded.meta["weir_source"] = node.copy()  # what a stored definition keeps (unfold)
            if isinstance(node.parent, exp.Select) and node.arg_key == "expressions":
                return exp.alias_(folded, output_name(node))  # a result column keeps its name ('bytea')
            return folded
        return node

    return expr.transform(visit)
