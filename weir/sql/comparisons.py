"""Comparisons as PostgreSQL means them, for the gate in `weir.sql.functions`: mz_timestamp
against dates and timestamps, and the quantified forms (`x op ANY / ALL (subquery or
array)`, `x LIKE ANY (array)`), which Spark either lacks or reads otherwise."""

from __future__ import annotations

from sqlglot import exp

from weir import codec
from weir import types as T
from weir.errors import SqlState, WeirError
from weir.sql import catalog_format_type, infer, interval_sql, literals
from weir.sql.array_functions import unknown_elements
from weir.sql.infer import Types
from weir.sql.translate import epoch_millis as _epoch_millis
from weir.sql.translate import refuse as _refuse
from weir.sql.translate import spark_template as _spark
from weir.sql.translate import undefined_operator


def comparison(node: exp.Expression, types: Types) -> exp.Expression:
    """mz_timestamp compared with a date or timestamp compares milliseconds since the
    epoch (Materialize casts the other side to mz_timestamp); quantified subqueries."""
    a, b = types.of(node.this), types.of(node.expression)
    for side, mine, other in (("this", a, b), ("expression", b, a)):
        if _is_mz_timestamp(other) and (infer.is_timestamp(mine) or infer.is_date(mine)):
            node.set(side, _epoch_millis(node.args[side]))
    if quantifier(node.expression) is None and ((a is not None and a.is_array) or (b is not None and b.is_array)):
        return _array_comparison(node, a, b, types)
    return quantified_subquery(node, types)


def array_order_key(x: exp.Expression) -> exp.Expression:
    """An array as Spark orders it the way PostgreSQL orders arrays: element by element, a
    NULL element after every value (Spark puts it first), then the shorter array first."""
    return _spark("transform({a}, _weir_e -> named_struct('n', _weir_e IS NULL, 'v', _weir_e))", a=x)


def _array_comparison(node: exp.Expression, a: T.PgType | None, b: T.PgType | None, types: Types) -> exp.Expression:
    """Arrays compared as PostgreSQL compares them: `=` / `<>` are Spark's (NULL elements
    equal each other in both); the order comparisons compare array_order_key()s. Arrays
    of records are refused (their fields' NULLs order as Spark orders them)."""
    for t in (a, b):  # an array of unknown type (ARRAY['a', NULL]) is ordered as the other
        if t is not None and (not t.is_array or t.element is None or t.element.oid == T.RECORD_OID):
            raise _refuse("comparison of arrays of these types")
    left, right = unified_arrays([node.this, node.expression], types, _COMPARISON_SQL[type(node)])
    node.set("this", left)
    node.set("expression", right)
    if isinstance(node, (exp.EQ, exp.NEQ)):
        return node
    node.set("this", array_order_key(node.this))
    node.set("expression", array_order_key(node.expression))
    return node


def unified_arrays(operands: list[exp.Expression], types: Types, op: str) -> list[exp.Expression]:
    """The operands of one comparison of arrays (=, <, IS DISTINCT FROM, IN ...), PostgreSQL's
    way: arrays of one element type only (42883 otherwise: PostgreSQL casts no array type to
    another implicitly; an array of string literals takes the other's type); numeric arrays
    cast to one decimal type (Spark compares ARRAY<DECIMAL(2,1)> with ARRAY<DECIMAL(3,2)>
    not at all)."""
    typed = [(o, t) for o in operands if (t := types.of(o)) is not None and t.is_array and not unknown_elements(t)]
    if len(typed) < 2:
        return operands
    first = typed[0][1]
    for _, t in typed[1:]:
        if t.element.oid != first.element.oid:  # type: ignore[union-attr]
            names = [catalog_format_type.TYPE_NAMES.get(x.oid, x.name) for x in (first, t)]
            raise undefined_operator(names[0], op, names[1])
    if first.element.oid != T.NUMERIC.oid:  # type: ignore[union-attr]
        return operands
    digits = [(t.element.precision - (t.element.scale or 0), t.element.scale or 0)  # type: ignore[union-attr]
              if t.element.precision is not None else (28, 10) for _, t in typed]  # type: ignore[union-attr]
    whole, scale = max(d for d, _ in digits), max(f for _, f in digits)
    common = T.numeric(min(38, whole + scale), scale)
    out = []
    for o in operands:
        t = types.of(o)
        if t is not None and t.is_array and not unknown_elements(t):
            cast = exp.Cast(this=o, to=exp.DataType.build(T.with_ndims(T.array_of(common), t.ndims).spark_ddl,
                                                          dialect="spark"))
            types.same_as(cast, o)
            o = cast
        out.append(o)
    return out


def same_typed_arrays(node: exp.Expression, types: Types) -> exp.Expression | None:
    """IS [NOT] DISTINCT FROM and IN of arrays: of one array type (unified_arrays); None when
    no array is compared (the next handler goes on)."""
    if isinstance(node, exp.In):
        if node.args.get("query") is not None or not node.expressions:
            return None
        operands = [node.this, *node.expressions]
    else:
        operands = [node.this, node.expression]
    if not any((t := types.of(o)) is not None and t.is_array for o in operands):
        return None
    unified = unified_arrays(operands, types, "=")
    node.set("this", unified[0])
    if isinstance(node, exp.In):
        node.set("expressions", unified[1:])
    else:
        node.set("expression", unified[1])
    return node


def extreme(node: exp.Expression, types: Types) -> exp.Expression | None:
    """GREATEST / LEAST of arrays by array_order_key() (Spark's own order puts NULL elements
    first), NULLs left out; None when no operand is an array."""
    args = [node.this, *node.expressions]
    ts = [types.of(a) for a in args]
    if not any(t is not None and t.is_array for t in ts):
        return None
    elements = {t.element.oid for t in ts if t is not None and t.element is not None and not unknown_elements(t)}
    if len(elements) > 1 or any(t is not None and t.is_array and (t.ndims > 1 or t.element.oid == T.RECORD_OID)  # type: ignore[union-attr]
                                for t in ts):  # PostgreSQL would cast int[] to bigint[]: weir does not
        raise _refuse(f"{'greatest' if isinstance(node, exp.Greatest) else 'least'} of arrays of these types")
    args = unified_arrays([a for a in args if not isinstance(a, exp.Null)], types, "=")
    entries = [_spark("CASE WHEN {a} IS NOT NULL THEN named_struct('k', {k}, 'v', {a}) END",
                      a=a, k=array_order_key(a)) for a in args]
    chosen = "array_max" if isinstance(node, exp.Greatest) else "array_min"
    return _spark(f"{chosen}(filter({{e}}, _weir_x -> _weir_x IS NOT NULL)).v", e=exp.Array(expressions=entries))


def _is_mz_timestamp(t: T.PgType | None) -> bool:
    return t is not None and t.oid == T.MZ_TIMESTAMP.oid


def quantified_subquery(node: exp.Expression, types: Types) -> exp.Expression:
    """`x = ANY (subquery)` is `x IN (subquery)` and `x <> ALL (subquery)` is `x NOT IN
    (subquery)` in PostgreSQL, NULLs included; Spark has only the IN forms. Other operators
    with a quantified subquery are refused (Spark would not parse them; an EXISTS rewrite
    loses the NULL answers)."""
    right = quantifier(node.expression)
    if right is None:
        return node
    query = right.this
    if isinstance(query, exp.Paren):
        query = query.this
    if not isinstance(query, (exp.Subquery, exp.Query)):
        if isinstance(query, exp.Literal) and query.is_string:  # `33 = ANY ('{1,2,33}')`
            query = _array_of_left_type(query.this, types.of(node.this))
        return _array_quantifier(node, right, query)
    subquery = query if isinstance(query, exp.Subquery) else exp.Subquery(this=query)
    if not _in_where_conjunct(node):  # Spark's IN (subquery) answers false, not NULL, elsewhere
        raise _refuse(f"{'ANY' if isinstance(right, exp.Any) else 'ALL'} (subquery) outside a WHERE condition")
    if isinstance(node, exp.EQ) and isinstance(right, exp.Any):
        return exp.In(this=node.this, query=subquery)
    if isinstance(node, exp.NEQ) and isinstance(right, exp.All):
        return exp.Not(this=exp.In(this=node.this, query=subquery))
    which = "ANY" if isinstance(right, exp.Any) else "ALL"
    op = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}.get(
        type(node), type(node).__name__)
    raise _refuse(f"operator {op} {which} (subquery)")


def _array_of_left_type(text: str, left: T.PgType | None) -> exp.Expression:
    """An untyped literal after ANY / ALL is an array of the left operand's type, read with
    that type's input function (PostgreSQL resolves the unknown as anyarray so)."""
    element = T.TEXT if left is None or left.oid == T.UNKNOWN.oid else left
    if element.is_array or element.oid == T.RECORD_OID:
        raise _refuse(f"{element.name} = ANY (untyped literal)")
    return literals.literal(codec.decode_text(text, T.array_of(element)), T.array_of(element))


_COMPARISON_SQL = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}


def _array_quantifier(node: exp.Expression, right: exp.Expression, array: exp.Expression) -> exp.Expression:
    """`x op ANY (array)` / `x op ALL (array)`: Spark's exists() / forall(), which answer
    with SQL's three-valued logic as PostgreSQL does (NULL when no element decides it;
    false / true for an empty array; NULL for a NULL array)."""
    op = _COMPARISON_SQL[type(node)]
    fn = "exists" if isinstance(right, exp.Any) else "forall"
    return _spark(f"{fn}({{a}}, _weir_e -> {{x}} {op} _weir_e)", a=array, x=node.this)


def quantifier(right: exp.Expression) -> exp.Any | exp.All | None:
    """ANY / SOME / ALL (...) on the right of an operator (sqlglot reads SOME and ALL of an
    array as function calls), else None."""
    if isinstance(right, exp.Anonymous) and right.name.lower() in ("all", "some") and len(right.expressions) == 1:
        return (exp.All if right.name.lower() == "all" else exp.Any)(this=right.expressions[0])
    return right if isinstance(right, (exp.Any, exp.All)) else None


def pattern_match(node: exp.Expression, types: Types) -> exp.Expression:
    """`x LIKE ANY (array)` and the other pattern operators with ANY / ALL: each element is
    a pattern (Spark would read the array as one pattern and fail); of a subquery, each
    row's value, with the three-valued answer of the array's (Spark has no LIKE ANY
    (subquery), and an EXISTS rewrite would lose the NULL answers)."""
    right = quantifier(node.expression)
    if right is None:
        return node
    array = right.this.this if isinstance(right.this, exp.Paren) else right.this
    element = node.copy()
    element.set("expression", exp.column("_weir_e"))
    if isinstance(array, (exp.Subquery, exp.Query)):
        return _pattern_subquery(node, right, array)
    fn = "exists" if isinstance(right, exp.Any) else "forall"
    return _spark(f"{fn}({{a}}, _weir_e -> {{p}})", a=array, p=element)


def _pattern_subquery(node: exp.Expression, right: exp.Expression, query: exp.Expression) -> exp.Expression:
    """`x LIKE ANY (subquery)`: true if some row's pattern matches, else NULL if some
    match is NULL (x or a pattern NULL), else false (no rows: false); ALL: false if some
    row's does not match, else NULL if some match is NULL, else true. Two EXISTS over the
    subquery's rows (Spark has no LIKE ANY (subquery), nor a subquery inside exists())."""
    inner = query.this if isinstance(query, exp.Subquery) else query
    first = inner
    while isinstance(first, exp.SetOperation):
        first = first.this
    if isinstance(first, exp.Select) and len(first.selects) > 1:
        raise WeirError(SqlState.SYNTAX_ERROR, "subquery has too many columns")

    def rows_where(condition: exp.Expression) -> exp.Expression:
        rows = exp.Subquery(this=inner.copy(), alias=exp.TableAlias(this=exp.to_identifier("_weir_q"),
                                                                     columns=[exp.to_identifier("_weir_p")]))
        return exp.Exists(this=exp.select("1").from_(rows).where(condition))

    match = node.copy()
    match.set("expression", exp.column("_weir_p", table="_weir_q"))
    unknown = rows_where(exp.Is(this=exp.Paren(this=match.copy()), expression=exp.Null()))
    if isinstance(right, exp.Any):
        return _spark("CASE WHEN {hit} THEN true WHEN {unknown} THEN NULL ELSE false END",
                      hit=rows_where(match), unknown=unknown)
    return _spark("CASE WHEN {miss} THEN false WHEN {unknown} THEN NULL ELSE true END",
                  miss=rows_where(exp.Not(this=exp.Paren(this=match.copy()))), unknown=unknown)


def _in_where_conjunct(node: exp.Expression) -> bool:
    """Whether node is a top-level AND-ed condition of a WHERE (where false and NULL filter alike)."""
    parent = node.parent
    while isinstance(parent, (exp.And, exp.Paren)):
        parent = parent.parent
    return isinstance(parent, exp.Where)


def ordered(node: exp.Expression, types: Types) -> exp.Expression:
    """ORDER BY an array (a query's, a window's, an aggregate's): by array_order_key()."""
    key = node.this
    t = types.of(key)
    if isinstance(key, exp.Literal) or (t is None and isinstance(key, exp.Column)):
        t, key = _output_column(node, key, types)
    if t is not None and t.is_array and key is not None:
        if t.ndims > 1:  # PostgreSQL's order: all elements first, then the dimensions
            raise _refuse("ORDER BY a multidimensional array")
        if t.element is None or t.element.oid == T.RECORD_OID:
            raise _refuse("ORDER BY an array of records")
        node.set("this", array_order_key(key))
    if infer.is_interval(t) and key is not None:  # by its span, as PostgreSQL sorts intervals
        node.set("this", interval_sql.span(key))
    return node


def _output_column(node: exp.Expression, key: exp.Expression, types: Types
                   ) -> tuple[T.PgType | None, exp.Expression | None]:
    """A query's ORDER BY 1 or ORDER BY name of a result column: its type, and the result
    column by its name (None when it has none)."""
    order = node.parent
    select = order.parent if isinstance(order, exp.Order) else None
    if not isinstance(select, exp.Select):
        return None, key
    projections = select.expressions
    if isinstance(key, exp.Literal):
        if key.is_string or not key.this.isdigit() or not 1 <= int(key.this) <= len(projections):
            return None, key
        p = projections[int(key.this) - 1]
    else:
        found = [p for p in projections if isinstance(p, exp.Alias) and p.alias == key.name and not key.table]
        if not found:
            return None, key
        p = found[0]
    t = types.of(p)
    if t is None or not (t.is_array or infer.is_interval(t)):
        return t, key
    if not isinstance(p, exp.Alias) and not isinstance(p, exp.Column):
        raise _refuse(f"ORDER BY the position of an {'array' if t.is_array else 'interval'} result column without a name")
    return t, exp.column(p.alias_or_name, quoted=True)


def min_max(node: exp.Expression, types: Types) -> exp.Expression:
    """min / max of arrays: the array with the least / greatest array_order_key() (Spark's
    own min and max order NULL elements first)."""
    t = types.of(node.this)
    if t is None or not t.is_array:
        return node
    if t.element is None or t.element.oid == T.RECORD_OID:
        raise _refuse(f"{'min' if isinstance(node, exp.Min) else 'max'} of arrays of records")
    fn = "min_by" if isinstance(node, exp.Min) else "max_by"
    return _spark(f"{fn}({{a}}, {{k}})", a=node.this, k=array_order_key(node.this))
