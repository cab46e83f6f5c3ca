"""jsonb functions beside weir.sql.jsonb's operators: jsonb_set, jsonb_insert and `#-`
(weir.codec.jsonb_paths, PostgreSQL's setPath), jsonb_extract_path(_text), subscripts
(`j['a'][0]`, read as `#>` reads its path), and the functions PostgreSQL names its
operators by (jsonb_contains, jsonb_exists, jsonb_delete ...), each its operator's handler."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from weir import types as T
from weir.errors import SqlState, WeirError
from weir.sql import infer, jsonb
from weir.sql.dialect import ONE_BASED_INDEX
from weir.sql.infer import Types
from weir.sql.translate import refuse, spark_template


def _path_function(node: exp.Expression, types: Types, operation: str, flag_default: bool) -> exp.Expression:
    """jsonb_set(target, path, new [, create_if_missing]) / jsonb_insert(target, path, new
    [, insert_after]) (weir.codec.jsonb_paths)."""
    args = list(node.expressions)
    if len(args) not in (3, 4):
        raise jsonb.no_function(node, types)
    name = f"function {node.name.lower()}"
    target, new = jsonb.operand(args[0], types, name), jsonb.operand(args[2], types, name)
    steps = jsonb.text_array(args[1], types)
    flag = args[3] if len(args) == 4 else exp.Boolean(this=flag_default)
    if target is None or new is None or (steps is None and not isinstance(args[1], exp.Null)) or not (
            isinstance(flag, (exp.Boolean, exp.Null)) or (types.of(flag) or T.TEXT).oid == T.BOOL.oid):
        raise jsonb.no_function(node, types)
    if any(isinstance(a, exp.Null) for a in (target, new, args[1], flag)):
        return jsonb.null()
    return jsonb.checked(operation, target, steps, new, flag)  # type: ignore[arg-type]


def extract_path_function(node: exp.Expression, types: Types) -> exp.Expression:
    """jsonb_extract_path(j, VARIADIC path) / jsonb_extract_path_text: `#>` / `#>>`."""
    args = list(node.expressions)
    scalar = node.name.lower().endswith("_text")
    target = jsonb.operand(args[0], types, f"function {node.name.lower()}") if args else None
    if target is None:
        raise jsonb.no_function(node, types)
    steps = args[1:]
    if len(steps) == 1 and isinstance(steps[0], exp.Variadic):
        array = jsonb.text_array(steps[0].this, types)
        if array is None:
            raise jsonb.no_function(node, types)
        path_array = array
    else:
        for a in steps:
            if not (infer.is_text(types.of(a)) or jsonb.is_unknown_literal(a, types) or isinstance(a, exp.Null)):
                raise jsonb.no_function(node, types)
        path_array = spark_template("CAST({a} AS ARRAY<STRING>)", a=exp.Array(expressions=steps)) \
            if steps else jsonb.string_array([])
    return jsonb.call("extract_path_text" if scalar else "extract_path", target, path_array)


def delete_path(node: exp.Expression, types: Types) -> exp.Expression:
    """`jsonb #- text[]`."""
    left = jsonb.left_operand(node, types, "#-")
    steps = jsonb.text_array(node.expression, types)
    if steps is None:
        if isinstance(node.expression, exp.Null):
            return jsonb.null()
        raise jsonb.no_operator(node, "#-", types)
    return jsonb.checked("delete_path", left, steps)


def subscript(node: exp.Expression, types: Types) -> exp.Expression | None:
    """`j['key']`, `j[0]` (arrays count from 0), nested: read as `#>` reads its path;
    None for a subscript of anything but jsonb."""
    if not jsonb.is_jsonb(types.of(node.this)):
        return None
    if len(node.expressions) != 1 or isinstance(node.expressions[0], exp.Slice):
        raise WeirError(SqlState.DATATYPE_MISMATCH, "jsonb subscript does not support slices")
    index = node.expressions[0]
    t = types.of(index)
    if infer.is_int(t) or (isinstance(index, exp.Literal) and not index.is_string and index.this.lstrip("-").isdigit()):
        written = index if index.meta.get(ONE_BASED_INDEX) else spark_template("({i} + 1)", i=index)
        step = spark_template("CAST({w} AS STRING)", w=written)  # sqlglot counted it from 0
    elif infer.is_text(t) or jsonb.is_unknown_literal(index, types) or isinstance(index, exp.Null):
        step = index
    else:
        raise WeirError(SqlState.DATATYPE_MISMATCH, f"subscript type {jsonb.type_name(t)} is not supported",
                        hint="jsonb subscript must be coercible to either integer or text.")
    return jsonb.call("extract_path", node.this, spark_template("array(CAST({s} AS STRING))", s=step))


# the functions behind jsonb's operators, by name: their operator's node
_OPERATOR_FUNCTIONS: dict[str, Callable[[exp.Expression, exp.Expression], exp.Expression]] = {
    "jsonb_contains": lambda a, b: exp.JSONBContains(this=a, expression=b),
    "jsonb_contained": lambda a, b: exp.ArrayContainedBy(this=a, expression=b),
    "jsonb_exists": lambda a, b: exp.JSONBContainsTopKey(this=a, expression=b),
    "jsonb_exists_any": lambda a, b: exp.JSONBContainsAnyTopKeys(this=a, expression=b),
    "jsonb_exists_all": lambda a, b: exp.JSONBContainsAllTopKeys(this=a, expression=b),
    "jsonb_delete": lambda a, b: exp.Sub(this=a, expression=b),
}


def operator_function(node: exp.Expression, types: Types) -> exp.Expression:
    """jsonb_contains(a, b) is a @> b, jsonb_exists(j, k) j ? k ...: the operator's handler."""
    name = node.name.lower()
    args = list(node.expressions)
    if name == "jsonb_delete" and len(args) == 2 and isinstance(args[1], exp.Variadic):
        args[1] = args[1].this  # jsonb_delete(j, VARIADIC text[]) is j - text[]
    if len(args) != 2:
        raise jsonb.no_function(node, types)
    operator = _OPERATOR_FUNCTIONS[name](*args)
    if isinstance(operator, exp.Sub) and not (jsonb.is_jsonb(types.of(args[0])) or jsonb.is_unknown_literal(args[0], types)):
        raise jsonb.no_function(node, types)
    if isinstance(operator, exp.Sub) and jsonb.is_unknown_literal(args[0], types):
        operator.set("this", jsonb.jsonb_literal(args[0]))  # type: ignore[arg-type]
    handler = {exp.JSONBContains: jsonb.containment, exp.ArrayContainedBy: jsonb.containment,
               exp.Sub: jsonb.sub}.get(type(operator), jsonb.exists)
    out = handler(operator, types)
    if out is None:
        raise jsonb.no_function(node, types)
    return out


def exists_function(node: exp.Expression, types: Types) -> exp.Expression:
    """jsonb_exists(j, key) (sqlglot reads the key as a JSON path): j ? key."""
    key = node.args.get("path")
    if isinstance(key, exp.JSONPath):
        parts = [p for p in key.expressions if not isinstance(p, exp.JSONPathRoot)]
        if len(parts) != 1 or not isinstance(parts[0], exp.JSONPathKey):
            raise refuse("jsonb_exists with this key")
        key = exp.Literal.string(str(parts[0].this))
    if key is None:
        raise refuse("jsonb_exists with this key")
    return jsonb.exists(exp.JSONBContainsTopKey(this=node.this, expression=key), types)


FUNCTIONS: dict[str, Callable[[exp.Expression, Types], exp.Expression]] = {
    "jsonb_set": lambda n, t: _path_function(n, t, "set_path", True),
    "jsonb_insert": lambda n, t: _path_function(n, t, "insert_path", False),
    "jsonb_extract_path": extract_path_function, "jsonb_extract_path_text": extract_path_function,
    **{name: operator_function for name in _OPERATOR_FUNCTIONS},
}
HANDLERS: dict[type, Callable[[exp.Expression, Types], exp.Expression]] = {
    exp.JSONBDeleteAtPath: delete_path, exp.JSONBExists: exists_function,
}


def subscript_first(previous: Callable[[exp.Expression, Types], exp.Expression]
                    ) -> Callable[[exp.Expression, Types], exp.Expression]:
    """The subscript handler: jsonb's, else `previous` (arrays')."""
    return lambda n, t: subscript(n, t) or previous(n, t)
