"""Spark's array functions as the in-process engine (weir.sql.in_process) writes them for
DuckDB, where DuckDB's answer would otherwise differ: weir renders PostgreSQL's
`array_agg(x ORDER BY k)` as Spark's
`transform(sort_array(collect_list(named_struct('n0', k IS NULL, 'k0', k, 'v', x))), s -> s.v)`.

Spark orders a NULL struct field before any value; DuckDB after it. A sort of structs
therefore gets, before each field, a flag `field IS NOT NULL` that orders NULLs the way
Spark does; the fields then compare alike (NULL only against NULL). Any other sort
(a comparator lambda, elements that are not struct literals) is left to a replica."""

from __future__ import annotations

from sqlglot import exp

_FLAG = "__weir_nn_"


def unsupported(node: exp.Expression) -> str | None:
    """Why DuckDB cannot run this array function as Spark does (None: it can)."""
    if isinstance(node, exp.Struct):
        return None if _named(node) else "struct() without field names"
    if not isinstance(node, exp.ArraySort):
        return None
    if node.args.get("expression") is not None:
        return "array_sort with a comparator"
    arr = node.this
    if not (isinstance(arr, exp.ArrayAgg) and isinstance(arr.this, exp.Struct) and _named(arr.this)):
        return "a sort of an array that is not of struct literals"
    return None


def _named(node: exp.Struct) -> bool:
    return all(isinstance(f, exp.PropertyEQ) for f in node.expressions)


def array_sort(node: exp.Expression) -> exp.Expression:
    """DuckDB's list_sort for Spark's sort_array / array_sort (checked by `unsupported`),
    with Spark's NULL orders."""
    arr = node.this
    fields: list[exp.Expression] = []
    for f in arr.this.expressions:
        value = f.expression
        flag = exp.Not(this=exp.Paren(this=exp.Is(this=exp.Paren(this=value.copy()), expression=exp.Null())))
        fields.append(exp.PropertyEQ(this=exp.to_identifier(_FLAG + f.name), expression=flag))
        fields.append(f.copy())
    agg = arr.copy()
    agg.set("this", exp.Struct(expressions=fields))
    asc = node.args.get("asc")
    descending = isinstance(asc, exp.Boolean) and not asc.this
    nulls_first = node.args.get("nulls_first")
    first = bool(nulls_first.this) if isinstance(nulls_first, exp.Boolean) else not descending
    return exp.Anonymous(this="list_sort", expressions=[
        agg, exp.Literal.string("DESC" if descending else "ASC"),
        exp.Literal.string("NULLS FIRST" if first else "NULLS LAST")])

