"""Faithful Spark translations of PostgreSQL's array constructs, for the gate in
`weir.sql.functions` (as weir.sql.translate's): array_agg and ARRAY(subquery), which keep
NULL elements and the ORDER BY; ARRAY[...]; subscripts, NULL out of bounds and from 0 for
int2vector and oidvector (arrays of several dimensions: weir.sql.multidim)."""

from __future__ import annotations

from sqlglot import exp

from weir import types as T
from weir.errors import SqlState, WeirError
from weir.sql import infer, multidim
from weir.sql.dialect import ONE_BASED_INDEX
from weir.sql.infer import Types
from weir.sql.translate import refuse as _refuse
from weir.sql.translate import spark_template as _spark


def array_agg(node: exp.Expression, types: Types) -> exp.Expression:
    """PostgreSQL keeps NULL elements, returns NULL for no rows and honours ORDER BY."""
    if isinstance(node.parent, (exp.Window, exp.Filter)):
        raise _refuse("array_agg with OVER or FILTER")
    arg = node.this
    keys: list[exp.Ordered] = []
    if isinstance(arg, exp.Order):
        keys = list(arg.expressions)
        arg = arg.this
    if isinstance(arg, exp.Distinct):
        raise _refuse("array_agg(DISTINCT ...)")
    return _collected(arg, keys, types, empty=None)


def _collected(arg: exp.Expression, keys: list[exp.Ordered], types: Types, *,
               empty: str | None) -> exp.Expression:
    """The values of `arg` over a group as an array, NULLs kept, in the order of `keys`;
    `empty` (Spark SQL) for a group of no rows: NULL (array_agg), or an empty array."""
    t = types.of(arg)
    if t is not None and t.is_array:  # PostgreSQL makes a multidimensional array of them
        raise _refuse("array_agg of arrays")
    args = {"x": arg}
    if not keys:
        listed = "collect_list(named_struct('v', {x}))"
        collected = f"transform({listed}, s -> s.v)"
    else:
        descs = {bool(k.args.get("desc")) for k in keys}
        if len(descs) != 1:
            raise _refuse("array_agg with ORDER BY keys in different directions")
        desc = descs.pop()
        fields = []
        for i, k in enumerate(keys):
            nulls_first = bool(k.args.get("nulls_first"))
            # the null flag sorts first when NULLs come first in the key's direction
            flag = "IS NULL" if nulls_first == desc else "IS NOT NULL"
            fields.append(f"'n{i}', {{k{i}}} {flag}, 'k{i}', {{k{i}}}")
            args[f"k{i}"] = k.this
        listed = f"collect_list(named_struct({', '.join(fields)}, 'v', {{x}}))"
        collected = f"transform(sort_array({listed}, {'false' if desc else 'true'}), s -> s.v)"
    if empty is None:
        return _spark(f"IF(size({listed}) = 0, NULL, {collected})", **args)
    return _spark(f"coalesce({collected}, {empty})", **args)


def array_subquery(node: exp.Expression, types: Types) -> exp.Expression:
    """PostgreSQL's ARRAY(SELECT x FROM ... [ORDER BY k]), which Spark does not have: the
    scalar subquery (SELECT <x's values in k's order> FROM ...), an empty array when it has
    no rows. A subquery that groups, is DISTINCT, limits its rows or is a set operation
    is refused."""
    query = node.expressions[0]
    query = query.this if isinstance(query, exp.Subquery) else query
    if not isinstance(query, exp.Select) or len(query.expressions) != 1:
        raise _refuse("ARRAY(subquery) of a query other than a single-column SELECT")
    for arg in ("distinct", "group", "having", "limit", "offset", "qualify", "windows", "with_", "with"):
        if query.args.get(arg):
            raise _refuse(f"ARRAY(subquery) with {arg.rstrip('_').upper()}")
    value = query.expressions[0]
    value = value.this if isinstance(value, exp.Alias) else value
    if any(isinstance(n, exp.AggFunc) for n in value.walk()):
        raise _refuse("ARRAY(subquery) of an aggregate")
    order = query.args.get("order")
    keys = list(order.expressions) if order is not None else []
    keys = [k.copy() for k in keys]
    for k in keys:  # ORDER BY 1: the one column
        if isinstance(k.this, exp.Literal):
            if k.this.is_string or k.this.name != "1":
                raise _refuse("ARRAY(subquery) ordered by a constant")
            k.set("this", value.copy())
    select = query.copy()
    select.set("order", None)
    collected = _collected(value.copy(), keys, types, empty="array()")
    select.set("expressions", [exp.alias_(collected, "array", quoted=True)])
    return exp.Subquery(this=select)


def array_constructor(node: exp.Expression, types: Types) -> exp.Expression:
    """ARRAY[...]: of a subquery, of nothing (typed by its cast), of values, or of arrays
    (one more dimension, weir.sql.multidim)."""
    if len(node.expressions) == 1 and isinstance(node.expressions[0], (exp.Select, exp.Subquery)):
        return array_subquery(node, types)
    if not node.expressions and not isinstance(node.parent, exp.Cast):
        raise WeirError(SqlState.INDETERMINATE_DATATYPE, "cannot determine type of empty array",
                        hint="Explicitly cast to the desired type, for example ARRAY[]::integer[].")
    if not node.expressions and isinstance(node.parent, exp.Cast):
        target = infer.datatype(node.parent.to)
        if target is not None and target.name in ("oidvector", "int2vector"):  # one dimension, from 0
            raise WeirError(SqlState.DATATYPE_MISMATCH, f"array is not a valid {target.name}")
    return multidim.constructor(node, types) or node


def subscript(node: exp.Expression, types: Types) -> exp.Expression:
    """a[i] is NULL out of bounds in PostgreSQL; Spark's ANSI mode raises. Several
    subscripts, or one of a multidimensional array: weir.sql.multidim."""
    translated = multidim.subscript(node, types)  # type: ignore[arg-type]
    if translated is not None:
        return translated
    t = types.of(node.this)
    if t is not None and not t.is_array:
        raise _refuse(f"subscripting a value of type {t.name}")
    if len(node.expressions) != 1 or isinstance(node.expressions[0], exp.Slice):
        raise _refuse("array slices")
    index = node.expressions[0]
    # int2vector and oidvector (pg_index.indkey, pg_proc.proargtypes) count from 0 in
    # PostgreSQL, every other array from 1
    first = 0 if t is not None and t.oid in T.ZERO_BASED_ARRAYS else 1
    if index.meta.get(ONE_BASED_INDEX):  # as written (sqlglot could not type it as an integer)
        return _spark(f"CASE WHEN {{i}} >= {first} THEN try_element_at({{a}}, {{i}} + {1 - first}) END",
                      a=node.this, i=index)
    # sqlglot made the index 0-based already (the written one minus 1)
    return _spark(f"CASE WHEN {{i}} >= {first - 1} THEN try_element_at({{a}}, {{i}} + {2 - first}) END",
                  a=node.this, i=index)


