"""PostgreSQL's multidimensional arrays on Spark, for the gate in `weir.sql.functions`.

A d-dimensional array is a nested Spark array d deep (ARRAY<ARRAY<INT>> for a 2-D int[],
weir.types), always rectangular as PostgreSQL's are: every sub-array of a level has the
same length, and an empty array is an empty outer array (PostgreSQL's `{}` has no
dimensions). What weir computes as PostgreSQL does: ARRAY[...] of arrays (sub-arrays of
different dimensions are 2202E when the row is computed), subscripts `a[i][j]` (NULL when
their count is not the array's dimensions or one is out of range), array_ndims,
array_dims, array_length, array_lower, array_upper, cardinality, unnest (all elements in
row-major order), array_to_string (of the elements, flattened), `=` / `<>`, casts to text
and to the same array type. Every other function or operator given one is refused (0A000,
`refuse_others`) rather than computing Spark's answer for nested arrays.
"""

from __future__ import annotations

from sqlglot import exp

from weir import types as T
from weir.codec.array import MAXDIM
from weir.errors import SqlState, WeirError
from weir.sql import infer
from weir.sql.dialect import ONE_BASED_INDEX
from weir.sql.infer import Types
from weir.sql.translate import raise_sql, refuse, spark_template

_NUMBERS = frozenset({T.INT2.oid, T.INT4.oid, T.INT8.oid, T.NUMERIC.oid, T.FLOAT4.oid, T.FLOAT8.oid})
_MISMATCH = "multidimensional arrays must have array expressions with matching dimensions"


_VECTORS = (22, 30)  # int2vector, oidvector: one-dimensional arrays as types of their own


def ndims(t: T.PgType | None) -> int:
    """Dimensions of an array type on Spark (0: not an array or not known)."""
    return t.ndims if t is not None and t.is_array else 0


def is_multidim(t: T.PgType | None) -> bool:
    return ndims(t) > 1


# nodes that take a multidimensional operand and compute PostgreSQL's answer (their
# handlers below, in weir.sql.pg_text, or Spark's own meaning for every array)
_ALLOWED: tuple[type, ...] = (
    exp.Array, exp.Bracket, exp.Cast, exp.Paren, exp.EQ, exp.NEQ, exp.Is, exp.Explode, exp.Unnest,
    exp.ArraySize, exp.ArrayToString, exp.Case, exp.If, exp.Coalesce, exp.Count, exp.Concat,
)
_ALLOWED_CALLS = frozenset({"array_ndims", "array_dims", "array_lower", "array_upper", "cardinality",
                            "pg_typeof"})
_OPERATORS = {exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=", exp.ArrayContainsAll: "@>",
              exp.ArrayContainedBy: "<@", exp.ArrayOverlaps: "&&", exp.DPipe: "||",
              exp.NullSafeEQ: "IS NOT DISTINCT FROM", exp.NullSafeNEQ: "IS DISTINCT FROM", exp.In: "IN"}


def refuse_others(node: exp.Expression, types: Types, name: str) -> None:
    """0A000 naming the function or operator when `node` has a multidimensional operand
    and is not one weir computes as PostgreSQL does (Spark would compute something else:
    nested arrays' order, containment of sub-arrays, jsonb of a list of lists ...)."""
    if isinstance(node, exp.Ordered):
        if is_multidim(types.of(node.this)):
            raise refuse("ORDER BY a multidimensional array")
        return
    if not isinstance(node, (exp.Func, exp.Binary, exp.Unary, exp.Predicate)) or isinstance(node, _ALLOWED):
        return
    if isinstance(node, exp.Anonymous) and (node.name.lower() in _ALLOWED_CALLS or node.meta.get("weir_literal")):
        return
    if not any(is_multidim(types.of(a)) for a in node.iter_expressions()):
        return
    if isinstance(node, (exp.Any, exp.All)) or (isinstance(node, exp.Anonymous) and node.name.lower() in ("all", "some")):
        name = f"{'ALL' if isinstance(node, exp.All) or node.name.lower() == 'all' else 'ANY'} (array)"
    what = f"operator {_OPERATORS[type(node)]}" if type(node) in _OPERATORS else name
    raise refuse(f"{what} of a multidimensional array")


def _first(a: exp.Expression, k: int) -> exp.Expression:
    """The first sub-array k levels down (NULL for an empty array)."""
    for _ in range(k):
        a = spark_template("try_element_at({a}, 1)", a=a)
    return a


def _dims(a: exp.Expression, d: int) -> exp.Expression:
    """The lengths of a non-empty d-dimensional array's dimensions, as a Spark array."""
    return exp.Array(expressions=[spark_template("size({x})", x=_first(a, k)) for k in range(d)])


def _flat(a: exp.Expression, d: int) -> exp.Expression:
    """The elements of a d-dimensional array in row-major order (PostgreSQL's storage order)."""
    for _ in range(d - 1):
        a = spark_template("flatten({a})", a=a)
    return a


def constructor(node: exp.Expression, types: Types) -> exp.Expression | None:
    """ARRAY[...] of arrays: one more dimension. Sub-arrays are checked when the row is
    computed, as PostgreSQL checks them: all NULL or empty make an empty array, otherwise
    every one must have the first one's dimensions (2202E). None: not of arrays."""
    kinds = [types.of(e) for e in node.expressions if not isinstance(e, exp.Null)]
    if not kinds or not any(t is not None and t.is_array for t in kinds):
        return None
    if any(t is None or not t.is_array for t in kinds):
        raise refuse("ARRAY[...] of arrays and other values")
    if any(t is not None and t.oid in _VECTORS for t in kinds):  # int2vector[]: one dimension of vectors
        raise refuse("ARRAY[...] of int2vector or oidvector")
    d = {t.ndims for t in kinds if t is not None}
    result = types.of(node)
    if len(d) != 1 or result is None or result.element is None:
        raise refuse("ARRAY[...] of arrays of different dimensions or element types")
    for e in node.expressions:  # of the common element type (ARRAY[[1], [2.5]]: numeric)
        t = types.of(e)
        if t is not None and t.element is not None and t.element.oid != result.element.oid:
            if not (infer.promote(t.element, result.element) is result.element and t.element.oid in _NUMBERS):
                raise refuse("ARRAY[...] of arrays of different element types")
            cast = exp.Cast(this=e.copy(), to=exp.DataType.build(T.with_ndims(result, t.ndims).spark_ddl, dialect="spark"))
            types.assign(cast, T.with_ndims(result, t.ndims))
            e.replace(cast)
    if _static_dims(node, types) is not None:
        return node  # constants of matching lengths: nothing to check when the row is computed
    (sub,) = d
    # the sub-arrays bound once to a lambda's variable (a nested constructor's check would
    # otherwise be written out once per use, exponentially)
    whole, each = "_weir_ms", "_weir_m"
    empty = f"{each} IS NULL OR size({each}) = 0"
    same = spark_template("{d} = {first}", d=_dims(exp.column(each), sub),
                          first=_dims(_first(exp.column(whole), 1), sub))
    return spark_template(
        f"element_at(transform(array({{s}}), {whole} -> "
        f"CASE WHEN forall({whole}, {each} -> {empty}) THEN CAST(array() AS {result.spark_ddl}) "
        f"WHEN exists({whole}, {each} -> {empty} OR NOT ({{same}})) "
        f"THEN {raise_sql(SqlState.ARRAY_SUBSCRIPT_ERROR, _MISMATCH)} ELSE {whole} END), 1)", s=node, same=same)


def _static_dims(node: exp.Expression, types: Types) -> list[int] | None:
    """The dimensions of ARRAY[...] (nested, or a folded '{{...}}' literal) whose shape
    does not depend on the row, when they match at every level; else None."""
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Array):  # a folded literal
        node = node.this
    if not isinstance(node, exp.Array) or not node.expressions:
        return None
    subs = node.expressions
    if not any(isinstance(e, exp.Array) or ndims(types.of(e)) for e in subs):
        return [len(subs)]  # of elements
    inner = [_static_dims(e, types) for e in subs]
    if any(i is None for i in inner) or any(i != inner[0] for i in inner):
        return None
    return [len(subs), *inner[0]]  # type: ignore[misc]


def _written_index(index: exp.Expression) -> exp.Expression:
    """A subscript as written (1 for the first element): sqlglot made a typed one 0-based."""
    if index.meta.get(ONE_BASED_INDEX):
        return index
    if isinstance(index, exp.Literal) and index.is_int:
        return exp.Literal.number(int(index.this) + 1)
    return spark_template("({i} + 1)", i=index)


def subscript(node: exp.Bracket, types: Types) -> exp.Expression | None:
    """a[i][j]...: sqlglot nests one Bracket per subscript; the outermost translates the
    chain (the inner ones pass). PostgreSQL answers NULL unless there are as many
    subscripts as the array has dimensions, each within its bounds. None: a subscript
    of a one-dimensional array or of a value that is not an array (weir.sql.translate_arrays)."""
    parent = node.parent
    chain = [node]
    base = node.this
    while isinstance(base, exp.Bracket):
        chain.append(base)
        base = base.this
    if len(chain) > MAXDIM:  # PostgreSQL refuses this many subscripts when it parses them
        raise WeirError(SqlState.PROGRAM_LIMIT_EXCEEDED,
                        f"number of array dimensions ({len(chain)}) exceeds the maximum allowed ({MAXDIM})")
    t = types.of(base)
    if t is None or not t.is_array or t.element is None:
        return None
    if isinstance(parent, exp.Bracket) and parent.this is node:
        return node  # the outer subscript translates the chain
    if len(chain) == 1 and t.ndims <= 1:
        return None
    indices: list[exp.Expression] = []
    for b in reversed(chain):
        if len(b.expressions) != 1 or isinstance(b.expressions[0], exp.Slice):
            raise refuse("array slices")
        indices.append(_written_index(b.expressions[0]))
    null = exp.Cast(this=exp.Null(), to=exp.DataType.build(t.element.spark_ddl, dialect="spark"))
    if len(indices) != t.ndims:
        return null
    value = base
    for i in indices:
        value = spark_template("try_element_at({a}, {i})", a=value, i=i)
    checks = " AND ".join(f"{{i{k}}} >= 1" for k in range(len(indices)))
    return spark_template(f"CASE WHEN {checks} THEN {{v}} END", v=value,
                          **{f"i{k}": i for k, i in enumerate(indices)})


def _array_arg(node: exp.Expression, types: Types, name: str) -> tuple[exp.Expression, T.PgType]:
    a = node.expressions[0] if isinstance(node, exp.Anonymous) else node.this
    t = types.of(a)
    if t is None or not t.is_array:
        raise refuse(f"function {name} of a value that is not an array of a known type")
    return a, t


def _dimension(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Anonymous):
        if len(node.expressions) != 2:
            raise refuse(f"function {node.name.lower()} with {len(node.expressions)} arguments")
        return node.expressions[1]
    dim = node.args.get("expression")
    if dim is None:
        raise refuse("function array_length without a dimension")
    return dim


def bounds(node: exp.Expression, types: Types) -> exp.Expression:
    """array_length / array_lower / array_upper (a, n): NULL for an empty or NULL array or
    a dimension it does not have; int2vector and oidvector count from 0."""
    name = "array_length" if isinstance(node, exp.ArraySize) else node.name.lower()
    dim = _dimension(node)
    if name == "array_length" and types.of(node.this) is None and isinstance(dim, exp.Literal) and dim.this == "1":
        # an array inference lost the type of (weir's own catalog arrays): its first dimension
        return spark_template("CASE WHEN size({a}) > 0 THEN size({a}) END", a=node.this)
    a, t = _array_arg(node, types, name)
    d = max(1, t.ndims)
    lower = 0 if t.oid in T.ZERO_BASED_ARRAYS else 1
    value = {"array_length": "element_at({dims}, {n})", "array_lower": str(lower),
             "array_upper": f"element_at({{dims}}, {{n}}) + {lower - 1}"}[name]
    return spark_template(f"CASE WHEN size({{a}}) > 0 AND {{n}} BETWEEN 1 AND {d} THEN {value} END",
                          a=a, n=dim, dims=_dims(a, d))


def array_ndims(node: exp.Expression, types: Types) -> exp.Expression:
    a, t = _array_arg(node, types, "array_ndims")
    return spark_template(f"CASE WHEN size({{a}}) > 0 THEN {max(1, t.ndims)} END", a=a)


def array_dims(node: exp.Expression, types: Types) -> exp.Expression:
    """'[1:2][1:3]' (int2vector and oidvector from 0: '[0:1]')."""
    a, t = _array_arg(node, types, "array_dims")
    lower = 0 if t.oid in T.ZERO_BASED_ARRAYS else 1
    parts = ", ".join(f"'[{lower}:', CAST(size({{x{k}}}) + {lower - 1} AS STRING), ']'" for k in range(max(1, t.ndims)))
    return spark_template(f"CASE WHEN size({{a}}) > 0 THEN concat({parts}) END", a=a,
                          **{f"x{k}": _first(a, k) for k in range(max(1, t.ndims))})


def cardinality(node: exp.Expression, types: Types) -> exp.Expression:
    """The number of elements of all dimensions (0 for an empty array)."""
    a = node.expressions[0] if len(node.expressions) == 1 else node
    t = types.of(a)
    if not is_multidim(t):
        return node  # Spark's cardinality of a one-dimensional array (or of one inference lost)
    assert t is not None
    return exp.Anonymous(this="cardinality", expressions=[_flat(a, t.ndims)])


def flattened(node: exp.Expression, types: Types) -> exp.Expression:
    """unnest() and array_to_string() see a multidimensional array's elements in row-major
    order, as PostgreSQL iterates them."""
    key = "expressions" if isinstance(node, exp.Unnest) else "this"
    args = node.expressions if key == "expressions" else [node.this]
    if isinstance(node, exp.Unnest) and len(args) != 1 and any(is_multidim(types.of(a)) for a in args):
        raise refuse("unnest of several arrays with a multidimensional one")
    a = args[0]
    t = types.of(a)
    if is_multidim(t):
        assert t is not None
        flat = _flat(a, t.ndims)
        if key == "expressions":
            node.set("expressions", [flat])
        else:
            node.set("this", flat)
        types.assign(flat, T.with_ndims(t, 1))
    return node


def equality(node: exp.Expression, types: Types) -> exp.Expression | None:
    """`=` / `<>` of arrays of different dimensions on Spark: equal only when both are empty
    (PostgreSQL's `{}`); of the same dimensions Spark's `=` compares as PostgreSQL's does
    (dimensions, then elements, NULL elements equal). None: not of such arrays."""
    a, b = types.of(node.this), types.of(node.expression)
    if not (a is not None and b is not None and a.is_array and b.is_array) or ndims(a) == ndims(b):
        return None
    if not (is_multidim(a) or is_multidim(b)):
        return None
    op = "" if isinstance(node, exp.EQ) else "NOT "
    return spark_template(f"CASE WHEN {{a}} IS NOT NULL AND {{b}} IS NOT NULL THEN {op}(size({{a}}) = 0 AND size({{b}}) = 0) END",
                          a=node.this, b=node.expression)


def cast(node: exp.Cast, types: Types, target: T.PgType | None) -> exp.Expression | None:
    """A cast of a multidimensional array to its own array type keeps its dimensions (int[]
    is int[] whatever their count); to another array type it is refused (Spark's element
    casts are not PostgreSQL's). None: not such a cast."""
    source = types.of(node.this)
    if not is_multidim(source) or target is None or not target.is_array:
        return None
    assert source is not None and source.element is not None and target.element is not None
    same = target.element.oid == source.element.oid and target.element.typmod == source.element.typmod
    textual = {target.element.oid, source.element.oid} <= {T.TEXT.oid, T.VARCHAR.oid} and target.element.typmod == -1
    if not (same or textual):  # text[] to varchar[] (no length) keeps every string as it is
        raise refuse(f"cast of a multidimensional array to {target.name}")
    return exp.Cast(this=node.this, to=exp.DataType.build(T.with_ndims(target, source.ndims).spark_ddl,
                                                         dialect="spark"))
