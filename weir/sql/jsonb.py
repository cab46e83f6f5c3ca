"""jsonb operators and functions for the function gate (`weir.sql.functions`).

Spark has no jsonb: a jsonb value is a STRING holding its text, and every operator
and function is one call of the replica's Python UDF `weir_jsonb(operation, ...)`
over `weir.codec.jsonb_ops`, the one implementation of PostgreSQL's semantics.
Operations that can fail (deleting from a scalar, jsonb_each of an array ...) return
their result behind a `+` or a runtime marker, which the SQL here turns into
raise_error() only where the call's value is used: Spark evaluates Python UDFs in
CASE branches for every row, PostgreSQL only for the rows that take the branch.
What cannot be computed faithfully is refused (0A000) by name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from sqlglot import exp

from weir import codec
from weir import types as T
from weir.codec import json as cjson
from weir.errors import SqlState, WeirError
from weir.sql import infer, translate_arrays, udf_calls
from weir.sql.infer import Types
from weir.sql.translate import refuse, spark_template, undefined_operator

UDF = "weir_jsonb"

# set-returning functions: name -> (columns, Spark type of the rows from_json reads)
SET_RETURNING: dict[str, tuple[tuple[str, ...], str]] = {
    "jsonb_each": (("key", "value"), "array<struct<key:string,value:string>>"),
    "jsonb_each_text": (("key", "value"), "array<struct<key:string,value:string>>"),
    "jsonb_array_elements": (("value",), "array<string>"),
    "jsonb_array_elements_text": (("value",), "array<string>"),
    "jsonb_object_keys": (("jsonb_object_keys",), "array<string>"),
}
_SRF_OPERATION = {"jsonb_each": "each", "jsonb_each_text": "each_text", "jsonb_array_elements": "array_elements",
                  "jsonb_array_elements_text": "array_elements_text", "jsonb_object_keys": "object_keys"}


def call(operation: str, *args: exp.Expression) -> exp.Expression:
    return udf_calls.call(UDF, operation, *args)


def checked(operation: str, *args: exp.Expression) -> exp.Expression:
    """A call of an operation that may fail: its error is raised where its value is used."""
    return udf_calls.checked(UDF, operation + "!", *args)


def null() -> exp.Expression:
    """A NULL jsonb (or text): a typed NULL, so its result column is not Spark's void."""
    return exp.Cast(this=exp.Null(), to=exp.DataType.build("STRING", dialect="spark"))


def type_name(t: T.PgType | None) -> str:
    return "unknown" if t is None else t.name


def no_operator(node: exp.Expression, op: str, types: Types) -> WeirError:
    a, b = types.of(node.this), types.of(node.args.get("expression"))
    return undefined_operator(type_name(a), op, type_name(b))


def is_unknown_literal(node: exp.Expression, types: Types) -> bool:
    t = types.of(node)
    return isinstance(node, exp.Literal) and node.is_string and t is not None and t.oid == T.UNKNOWN.oid


def jsonb_literal(node: exp.Literal) -> exp.Expression:
    """An untyped literal read as jsonb, as PostgreSQL reads it (22P02 when it is not JSON)."""
    lit = exp.Literal.string(cjson.jsonb_in(node.this))
    lit.meta["weir_type"] = "jsonb"
    return lit


def _is_json(t: T.PgType | None) -> bool:
    return t is not None and t.oid == 114 and not t.is_array


def is_jsonb(t: T.PgType | None) -> bool:
    return t is not None and t.oid == T.JSONB.oid and not t.is_array


def operand(node: exp.Expression, types: Types, what: str) -> exp.Expression | None:
    """node as a jsonb operand (an untyped literal is parsed now), or None if it is not one."""
    t = types.of(node)
    if _is_json(t):
        raise refuse(f"{what} on json (use jsonb)")
    if is_jsonb(t) or isinstance(node, exp.Null):
        return node
    if is_unknown_literal(node, types):
        return jsonb_literal(node)  # type: ignore[arg-type]
    return None


def text_array(node: exp.Expression, types: Types) -> exp.Expression | None:
    """node as a text[] operand: an untyped literal ('{a,b}') is read as PostgreSQL reads it."""
    t = types.of(node)
    if is_unknown_literal(node, types):
        items = codec.decode_text(node.this.encode(), T.TEXT_ARRAY)
        return string_array(items)
    if t is not None and t.is_array and t.element is not None and infer.is_text(t.element):
        return node
    if isinstance(node, exp.Array) and all(infer.is_text(types.of(e)) or isinstance(e, exp.Null)
                                           for e in node.expressions):
        return spark_template("CAST({a} AS ARRAY<STRING>)", a=node) if node.expressions else string_array([])
    return None


def string_array(items: list[str | None]) -> exp.Expression:
    return exp.Cast(this=exp.Array(expressions=[exp.Literal.string(i) if i is not None else exp.Null()
                                                for i in items]),
                    to=exp.DataType.build("ARRAY<STRING>", dialect="spark"))


# ---------------------------------------------------------------- operators

def left_operand(node: exp.Expression, types: Types, op: str) -> exp.Expression:
    left = operand(node.this, types, f"operator {op}")
    if left is None:
        raise no_operator(node, op, types)
    return left


def arrow(node: exp.Expression, types: Types) -> exp.Expression:
    """`->` / `->>`: a text key of an object, or an integer index of an array."""
    scalar = isinstance(node, exp.JSONExtractScalar)
    op = "->>" if scalar else "->"
    left = left_operand(node, types, op)
    path = node.expression
    if isinstance(path, exp.JSONPath):
        parts = [p for p in path.expressions if not isinstance(p, exp.JSONPathRoot)]
        if len(parts) != 1 or not isinstance(parts[0], (exp.JSONPathKey, exp.JSONPathSubscript)):
            raise refuse(f"operator {op} with this operand")
        part = parts[0]
        if isinstance(part, exp.JSONPathKey):
            return call("field_text" if scalar else "field", left, exp.Literal.string(str(part.this)))
        return call("element_text" if scalar else "element", left, exp.Literal.number(int(part.this)))
    t = types.of(path)
    if isinstance(path, exp.Null):
        return null()
    if infer.is_int(t):
        return call("element_text" if scalar else "element", left, spark_template("CAST({i} AS BIGINT)", i=path))
    if infer.is_text(t):
        return call("field_text" if scalar else "field", left, path)
    raise no_operator(node, op, types)


def path(node: exp.Expression, types: Types) -> exp.Expression:
    """`#>` / `#>>`: a path of keys and array indexes (text[])."""
    scalar = isinstance(node, exp.JSONBExtractScalar)
    op = "#>>" if scalar else "#>"
    left = left_operand(node, types, op)
    steps = text_array(node.expression, types)
    if steps is None:
        if isinstance(node.expression, exp.Null):
            return null()
        raise no_operator(node, op, types)
    return call("extract_path_text" if scalar else "extract_path", left, steps)


def containment(node: exp.Expression, types: Types) -> exp.Expression:
    """`@>` / `<@` of jsonb (arrays' own `@>` stays refused)."""
    op = "<@" if isinstance(node, exp.ArrayContainedBy) else "@>"
    a, b = types.of(node.this), types.of(node.expression)
    if not (is_jsonb(a) or is_jsonb(b) or _is_json(a) or _is_json(b)):
        if (a is not None and a.is_array) or (b is not None and b.is_array):
            raise refuse(f"operator {op}")
    left, right = operand(node.this, types, f"operator {op}"), operand(node.expression, types, f"operator {op}")
    if left is None or right is None:
        raise no_operator(node, op, types)
    return spark_template("CAST({c} AS BOOLEAN)", c=call("contained" if op == "<@" else "contains", left, right))


def exists(node: exp.Expression, types: Types) -> exp.Expression:
    """`?`, `?|`, `?&`: keys of an object, or string elements of an array."""
    if isinstance(node, exp.JSONBContainsTopKey):
        op = "?"
        key = node.expression
        if not (infer.is_text(types.of(key)) or isinstance(key, exp.Null)):
            raise no_operator(node, op, types)
        return spark_template("CAST({c} AS BOOLEAN)", c=call("exists", left_operand(node, types, op), key))
    op = "?|" if isinstance(node, exp.JSONBContainsAnyTopKeys) else "?&"
    left = left_operand(node, types, op)
    keys = text_array(node.expression, types)
    if keys is None:
        if isinstance(node.expression, exp.Null):
            return exp.Cast(this=exp.Null(), to=exp.DataType.build("BOOLEAN"))
        raise no_operator(node, op, types)
    return spark_template("CAST({c} AS BOOLEAN)", c=call("exists_any" if op == "?|" else "exists_all", left, keys))


def dpipe(node: exp.Expression, types: Types) -> exp.Expression | None:
    """`jsonb || jsonb` (an untyped literal beside a jsonb is jsonb); None for `||` of
    text and arrays."""
    a, b = types.of(node.this), types.of(node.expression)
    if not (is_jsonb(a) or is_jsonb(b) or _is_json(a) or _is_json(b)):
        return None
    left, right = operand(node.this, types, "operator ||"), operand(node.expression, types, "operator ||")
    if left is None or right is None:  # anynonarray || text: the jsonb's text
        raise refuse("operator || of jsonb and " + type_name(b if left is not None else a))
    return call("concat", left, right)


def sub(node: exp.Expression, types: Types) -> exp.Expression | None:
    """`jsonb - text`, `jsonb - text[]`, `jsonb - integer`; None for arithmetic."""
    a = types.of(node.this)
    if not (is_jsonb(a) or _is_json(a)):
        return None
    left = left_operand(node, types, "-")
    right, t = node.expression, types.of(node.expression)
    if isinstance(right, exp.Null):
        return null()
    if infer.is_int(t):
        return checked("delete_index", left, spark_template("CAST({i} AS BIGINT)", i=right))
    if infer.is_text(t):
        return checked("delete_key", left, right)
    keys = text_array(right, types)
    if keys is None:
        raise no_operator(node, "-", types)
    return checked("delete_keys", left, keys)


def comparison(node: exp.Expression, types: Types) -> exp.Expression | None:
    """`=` / `<>` of jsonb compare values (`'1.0' = '1'` is true; texts differ); jsonb's
    ordering (objects > arrays > booleans > numbers > strings, strings by collation) is
    not Spark's string order: refused. None for other types."""
    a, b = types.of(node.this), types.of(node.expression)
    if not (is_jsonb(a) or is_jsonb(b) or _is_json(a) or _is_json(b)):
        return None
    op = {exp.EQ: "=", exp.NEQ: "<>"}.get(type(node))
    if op is None:
        raise refuse("ordering jsonb values (<, <=, >, >=)")
    left, right = operand(node.this, types, f"operator {op}"), operand(node.expression, types, f"operator {op}")
    if left is None or right is None:
        raise no_operator(node, op, types)
    equal = spark_template("CAST({c} AS BOOLEAN)", c=call("equal", left, right))
    return equal if op == "=" else exp.Not(this=exp.Paren(this=equal))


def ordered(node: exp.Expression, types: Types) -> None:
    """ORDER BY a jsonb value: jsonb's order is not its text's (refused)."""
    t = types.of(node.this)
    if is_jsonb(t) or _is_json(t):
        raise refuse("ORDER BY a jsonb value")


def in_list(node: exp.Expression, types: Types) -> None:
    """`jsonb IN (...)` would compare texts: refused (use =)."""
    if is_jsonb(types.of(node.this)) or _is_json(types.of(node.this)):
        raise refuse("IN with jsonb values")


def cast(node: exp.Expression, types: Types) -> exp.Expression | None:
    """A cast to jsonb of text is validated and normalized (22P02 as PostgreSQL says);
    jsonb to other types than text refused; None for the other casts."""
    target = infer.datatype(node.to)
    if not is_jsonb(target):
        if is_jsonb(types.of(node.this)) and not infer.is_text(target):
            raise refuse(f"cast from jsonb to {type_name(target)}")
        return None
    source = types.of(node.this)
    if is_jsonb(source):
        return node.this
    if isinstance(node.this, exp.Null):
        return exp.Cast(this=node.this, to=exp.DataType.build("STRING", dialect="spark"))
    if is_unknown_literal(node.this, types):
        return jsonb_literal(node.this)  # type: ignore[arg-type]
    if infer.is_text(source):
        return checked("in", node.this)
    raise refuse(f"cast from {type_name(source)} to jsonb")


# ---------------------------------------------------------------- SQL values as jsonb

_SCALAR_TYPES = {T.BOOL.oid, T.INT2.oid, T.INT4.oid, T.INT8.oid, T.FLOAT4.oid, T.FLOAT8.oid, T.NUMERIC.oid,
                 T.TEXT.oid, T.VARCHAR.oid, T.BPCHAR.oid, 19, T.DATE.oid, T.TIMESTAMP.oid, T.TIMESTAMPTZ.oid,
                 T.UUID.oid, T.BYTEA.oid, T.JSONB.oid, 114}


def _type_tag(t: T.PgType) -> str:
    """The type name jsonb_ops reads a value by (typmods matter: numeric(p,s), char(n))."""
    if t.is_array and t.element is not None:
        return _type_tag(t.element) + "[]"
    if t.oid == T.BPCHAR.oid:
        return f"character({t.length})" if t.length is not None else "text"
    if t.oid == T.NUMERIC.oid and t.precision is not None:
        return f"numeric({t.precision},{t.scale or 0})"
    return t.name


def _value(node: exp.Expression, types: Types, what: str) -> tuple[exp.Expression, str]:
    """A SQL value as the UDF takes it, with its type's name: timestamps as microseconds
    since the epoch (a Python worker's datetime depends on its time zone)."""
    if isinstance(node, exp.Null):
        return node, "text"
    t = types.of(node)
    if t is not None and t.oid == T.UNKNOWN.oid:
        return node, "text"
    element = t.element if t is not None and t.is_array else t
    if t is None or element is None or element.oid not in _SCALAR_TYPES or (t.is_array and element.is_array):
        raise refuse(f"{what} of a value of type {type_name(t)}")
    if element.oid == T.BPCHAR.oid and element.length is not None and not isinstance(node, (exp.Column, exp.Cast)):
        # weir keeps character(n) values unpadded; only a column's or a cast's n is known
        raise refuse(f"{what} of a character({element.length}) expression")
    if element.oid in (T.TIMESTAMP.oid, T.TIMESTAMPTZ.oid):
        micros = "unix_micros(CAST({x} AS TIMESTAMP))" if element.oid == T.TIMESTAMP.oid else "unix_micros({x})"
        if t.is_array:
            return spark_template("transform({a}, x -> " + micros.replace("{x}", "x") + ")", a=node), _type_tag(t)
        return spark_template(micros, x=node), _type_tag(t)
    return node, _type_tag(t)


def _tags(tags: list[str]) -> exp.Expression:
    return exp.Literal.string(json.dumps(tags))


def to_jsonb(node: exp.Expression, types: Types) -> exp.Expression:
    """to_jsonb(x): NULL for NULL; PostgreSQL cannot type an untyped literal here."""
    if len(node.expressions) != 1:
        raise no_function(node, types)
    arg = node.expressions[0]
    if is_unknown_literal(arg, types) or isinstance(arg, exp.Null):
        raise WeirError(SqlState.DATATYPE_MISMATCH,
                        "could not determine polymorphic type because input has type unknown")
    value, tag = _value(arg, types, "to_jsonb")
    return call("to_jsonb", value, exp.Literal.string(tag))


def build_object(node: exp.Expression, types: Types) -> exp.Expression:
    """jsonb_build_object(k1, v1, ...): keys must be non-NULL scalars (22023 at run time,
    as PostgreSQL raises it only for rows it evaluates)."""
    args = node.expressions
    if len(args) % 2:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, "argument list must have even number of elements",
                        hint="The arguments of jsonb_build_object() must consist of alternating keys and values.")
    if not args:
        return _jsonb_constant("{}")
    values, tags = [], []
    for a in args:
        v, tag = _value(a, types, "jsonb_build_object")
        values.append(v)
        tags.append(tag)
    return checked("build_object", _tags(tags), *values)


def build_array(node: exp.Expression, types: Types) -> exp.Expression:
    args = node.expressions
    if not args:
        return _jsonb_constant("[]")
    values, tags = [], []
    for a in args:
        v, tag = _value(a, types, "jsonb_build_array")
        values.append(v)
        tags.append(tag)
    return call("build_array", _tags(tags), *values)


def _jsonb_constant(text: str) -> exp.Expression:
    lit = exp.Literal.string(text)
    lit.meta["weir_type"] = "jsonb"
    return lit


def no_function(node: exp.Expression, types: Types) -> WeirError:
    name = node.name.lower()
    args = ", ".join(type_name(types.of(a)) for a in node.expressions)
    return WeirError(SqlState.UNDEFINED_FUNCTION, f"function {name}({args}) does not exist",
                     hint="No function matches the given name and argument types. "
                          "You might need to add explicit type casts.")


def _one_jsonb(node: exp.Expression, types: Types) -> exp.Expression:
    if len(node.expressions) != 1:
        raise no_function(node, types)
    arg = operand(node.expressions[0], types, f"function {node.name.lower()}")
    if arg is None:
        raise no_function(node, types)
    return arg


def typeof(node: exp.Expression, types: Types) -> exp.Expression:
    return call("typeof", _one_jsonb(node, types))


def strip_nulls(node: exp.Expression, types: Types) -> exp.Expression:
    return call("strip_nulls", _one_jsonb(node, types))


def pretty(node: exp.Expression, types: Types) -> exp.Expression:
    return call("pretty", _one_jsonb(node, types))


def array_length(node: exp.Expression, types: Types) -> exp.Expression:
    return spark_template("CAST({c} AS INT)", c=checked("array_length", _one_jsonb(node, types)))


# ---------------------------------------------------------------- aggregates

def _plain_aggregate(node: exp.Expression, name: str) -> None:
    if isinstance(node.parent, (exp.Window, exp.Filter)):
        raise refuse(f"{name} with OVER or FILTER")


def agg(node: exp.Expression, types: Types) -> exp.Expression:
    """jsonb_agg(x [ORDER BY ...]): NULLs are JSON nulls, no rows is NULL (collected as
    array_agg collects, `weir.sql.translate_arrays.array_agg`)."""
    _plain_aggregate(node, "jsonb_agg")
    if len(node.expressions) != 1:
        raise no_function(node, types)
    arg = node.expressions[0]
    order: exp.Order | None = None
    if isinstance(arg, exp.Order):
        order, arg = arg, arg.this
    if isinstance(arg, exp.Distinct):
        raise refuse("jsonb_agg(DISTINCT ...)")
    if is_unknown_literal(arg, types):
        value, tag = arg, "text"
    else:
        value, tag = _value(arg, types, "jsonb_agg")
    element = call("value", value, exp.Literal.string(tag))
    collected = exp.ArrayAgg(this=element if order is None else exp.Order(this=element,
                                                                         expressions=order.expressions))
    return call("agg", translate_arrays.array_agg(collected, types))


def object_agg(node: exp.Expression, types: Types) -> exp.Expression:
    """jsonb_object_agg(k, v): a NULL key is 22023 (at run time), a later key wins."""
    _plain_aggregate(node, "jsonb_object_agg")
    value_node = node.expression
    if isinstance(value_node, exp.Order) or isinstance(node.this, exp.Distinct):
        raise refuse("jsonb_object_agg with ORDER BY or DISTINCT")
    key, key_tag = _value(node.this, types, "jsonb_object_agg")
    value, value_tag = _value(value_node, types, "jsonb_object_agg")
    pairs = spark_template("collect_list(named_struct('k', {k}, 'v', {v}))", k=key, v=value)
    return checked("object_agg", pairs, _tags([key_tag, value_tag]))


# ---------------------------------------------------------------- set-returning functions

def _rows(name: str, node: exp.Expression, types: Types) -> exp.Expression:
    """The function's rows as a Spark array (of structs for two columns)."""
    arg = _one_jsonb(node, types)
    _, spark_type = SET_RETURNING[name]
    return spark_template(f"from_json({{c}}, '{spark_type}')", c=checked(_SRF_OPERATION[name], arg))


def set_returning(node: exp.Expression, types: Types) -> exp.Expression:
    """jsonb_each(_text), jsonb_array_elements(_text), jsonb_object_keys: in FROM (a
    plain or LATERAL join, a generator of Spark's) or alone at the top of a select list
    (explode, as generate_series is). Elsewhere refused."""
    name = node.name.lower()
    columns, _ = SET_RETURNING[name]
    rows = _rows(name, node, types)
    parent = node.parent
    if isinstance(parent, (exp.Table, exp.Lateral)) and parent.this is node:
        return _in_from(name, node, parent, rows)
    if len(columns) == 2:
        raise refuse(f"{name} in a select list (its rows are records; use it in FROM)")
    select = parent.parent if isinstance(parent, exp.Alias) else parent
    if not (isinstance(select, exp.Select) and (parent if isinstance(parent, exp.Alias) else node).arg_key
            == "expressions"):
        raise refuse(f"{name} inside an expression (use it in FROM)")
    if select.args.get("group") or select.args.get("having") or any(
            isinstance(n, (exp.AggFunc, exp.Window)) for p in select.expressions for n in p.walk()):
        raise refuse(f"{name} in a select list with aggregates")
    return exp.Explode(this=rows)


def _in_from(name: str, node: exp.Expression, holder: exp.Expression, rows: exp.Expression) -> exp.Expression:
    columns, _ = SET_RETURNING[name]
    alias = holder.args.get("alias")
    given = [c.name for c in alias.columns] if alias is not None else []
    table = alias.name if alias is not None and alias.name else name
    if len(given) > len(columns):
        raise WeirError("42P10",
                        f'table "{table}" has {len(columns)} columns available but {len(given)} columns specified')
    if len(columns) == 1 and alias is not None and alias.name and not given and name == "jsonb_object_keys":
        given = [alias.name]  # a scalar function's column takes the table alias
    names = given + list(columns[len(given):])
    join = holder.parent
    if isinstance(join, exp.Join):
        side = str(join.args.get("side") or "").upper()
        on = join.args.get("on")
        if side or (on is not None and not (isinstance(on, exp.Boolean) and on.this)) or join.args.get("using"):
            raise refuse(f"{side + ' ' if side else ''}JOIN to {name} with a join condition "
                          "(use CROSS JOIN or LATERAL and WHERE)")
        join.set("on", None)
        join.set("kind", "CROSS")
    generator = "inline" if len(columns) == 2 else "explode"
    lateral = exp.Lateral(this=exp.Anonymous(this=generator, expressions=[rows]),
                          alias=exp.TableAlias(this=exp.to_identifier(table),
                                               columns=[exp.to_identifier(n) for n in names]))
    if isinstance(join, exp.Join) or isinstance(holder, exp.Lateral):
        holder.replace(lateral)
    else:  # the first FROM item: Spark's generator in FROM, no LATERAL
        holder.replace(exp.Table(this=lateral.this, alias=lateral.args["alias"]))
    return node  # replaced above, with its parent


# PostgreSQL's jsonb functions by name (sqlglot reads them as anonymous calls)
FUNCTIONS = {
    "to_jsonb": to_jsonb, "jsonb_build_object": build_object, "jsonb_build_array": build_array,
    "jsonb_typeof": typeof, "jsonb_strip_nulls": strip_nulls, "jsonb_pretty": pretty,
    "jsonb_array_length": array_length, "jsonb_agg": agg,
    **{name: set_returning for name in SET_RETURNING},
}


def is_set_returning(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and node.name.lower() in SET_RETURNING

Handler = Callable[[exp.Expression, Types], "exp.Expression | None"]

# jsonb's own operators, by sqlglot node type
_OWN: dict[type, Handler] = {
    exp.JSONExtract: arrow, exp.JSONExtractScalar: arrow, exp.JSONBExtract: path,
    exp.JSONBExtractScalar: path, exp.ArrayContainsAll: containment, exp.ArrayContainedBy: containment,
    exp.JSONBContains: containment, exp.JSONBContainsTopKey: exists, exp.JSONBContainsAnyTopKeys: exists,
    exp.JSONBContainsAllTopKeys: exists, exp.JSONBObjectAgg: object_agg,
}
# nodes jsonb shares with other types: None hands the node on to the handler before
_SHARED: dict[type, Handler] = {
    exp.DPipe: dpipe, exp.Sub: sub, exp.Cast: cast, exp.EQ: comparison, exp.NEQ: comparison,
    exp.LT: comparison, exp.LTE: comparison, exp.GT: comparison, exp.GTE: comparison, exp.Ordered: ordered,
    exp.In: in_list,
}


def handlers(previous: Mapping[type, Callable[[exp.Expression, Types], exp.Expression]]
             ) -> dict[type, Callable[[exp.Expression, Types], exp.Expression]]:
    """The gate's handlers for jsonb (weir.sql.functions registers them over its own):
    for nodes shared with other types, jsonb's first, then the one registered before."""
    out: dict[type, Callable[[exp.Expression, Types], exp.Expression]] = dict(_OWN)  # type: ignore[arg-type]
    for node_type, mine in _SHARED.items():
        out[node_type] = _chain(mine, previous.get(node_type))
    return out


def _chain(mine: Handler, before: Callable[[exp.Expression, Types], exp.Expression] | None
           ) -> Callable[[exp.Expression, Types], exp.Expression]:
    def handler(node: exp.Expression, types: Types) -> exp.Expression:
        out = mine(node, types)
        if out is not None:
            return out
        return before(node, types) if before is not None else node

    return handler


# operators PostgreSQL names a result column `?column?` after (sqlglot models them as functions)
OPERATORS = (exp.JSONExtract, exp.JSONExtractScalar, exp.JSONBExtract, exp.JSONBExtractScalar,
             exp.ArrayContainsAll, exp.ArrayContainedBy, exp.JSONBContains, exp.JSONBContainsTopKey,
             exp.JSONBContainsAnyTopKeys, exp.JSONBContainsAllTopKeys, exp.JSONBDeleteAtPath)
