"""weir's Spark SQL for a query over system relations, rendered for DuckDB, which runs it in
the coordinator's process (weir.adapter.system_reads).

The Spark rendering already says what the PostgreSQL query means in Spark's terms, so this
reads it as Spark SQL as weir's replicas run it (ANSI mode: a failed cast, an overflow and
a division by zero are errors, never NULL) and writes it in DuckDB's SQL, with DuckDB
macros where DuckDB would answer otherwise. What DuckDB cannot run the same way raises
`NotInProcess`: the query then takes the normal path, to a replica.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import sqlglot
from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.dialects.spark import Spark
from sqlglot.errors import SqlglotError

from weir.sql import in_process_arrays, in_process_jsonb, in_process_series, set_returning


class NotInProcess(Exception):
    """This query cannot run in process the way it runs on Spark."""


class _AnsiSpark(Spark):
    """Spark SQL as weir's replicas run it (spark.sql.ansi.enabled)."""

    SAFE_DIVISION = False

    class Parser(Spark.Parser):
        STRICT_CAST = True


def _binary(name: str):  # noqa: ANN202 - a sqlglot generator transform
    def render(self: DuckDB.Generator, e: exp.Binary) -> str:
        return self.func(name, e.this, e.expression)
    return render


class InProcessDuckDB(DuckDB):
    """DuckDB as the in-process engine runs weir's Spark SQL: division and modulo by zero
    are errors, as in Spark's ANSI mode (DuckDB answers NULL)."""

    class Generator(DuckDB.Generator):
        TRANSFORMS = {
            **DuckDB.Generator.TRANSFORMS,
            exp.Div: _binary("weir_div"),
            exp.IntDiv: _binary("weir_intdiv"),
            exp.Mod: _binary("weir_mod"),
        }


# Defined in every in-process database: Spark's ANSI answers where DuckDB's differ.
MACROS = (
    "CREATE MACRO weir_div(a, b) AS CASE WHEN b = 0 THEN error('division by zero') ELSE a / b END",
    "CREATE MACRO weir_intdiv(a, b) AS CASE WHEN b = 0 THEN error('division by zero') ELSE a // b END",
    "CREATE MACRO weir_mod(a, b) AS CASE WHEN b = 0 THEN error('division by zero') ELSE a % b END",
)

# Spark functions written as plain calls (sqlglot has no class for them) that DuckDB has
# with the same meaning; any other plain call sends the query to a replica.
_SAME_CALLS = frozenset({"coalesce", "nullif", "lower", "upper", "length", "concat_ws"})
# Spark functions sqlglot knows whose DuckDB rendering answers exactly as Spark does for
# every input, NULLs and errors included; a query using any other runs on a replica (many
# differ at the edges: substring positions below 1, time zone changes, series, explode).
_SAME_FUNCTIONS = frozenset({
    exp.Cast, exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Upper, exp.Lower, exp.Length,
    exp.Concat, exp.Count, exp.Min, exp.Max, exp.RegexpLike, exp.Greatest,
    exp.Least, exp.Abs, exp.Exists, exp.StartsWith, exp.ArrayContains, exp.CountIf,
    exp.LogicalAnd, exp.LogicalOr, exp.RowNumber, exp.Rank, exp.DenseRank, exp.Array, exp.And,
    exp.Or, exp.Replace, exp.GroupConcat, exp.ArrayToString, exp.ConcatWs,
    exp.ArrayAgg, exp.ArraySize, exp.Struct, exp.Transform,  # array_agg (weir.sql.in_process_arrays)
    exp.Trim,  # Spark's trim of spaces or of a set of characters is DuckDB's
    exp.RegexpExtract,  # the pattern as RE2 reads it (below); '' for a group that took no part, in both
})
# ... of which these are Spark ints and DuckDB bigints (sum and avg differ in their types
# too, by their argument's: they are not above)
_INT_RESULT = frozenset({exp.Length, exp.RowNumber, exp.Rank, exp.DenseRank, exp.ArraySize})
# Spark calls DuckDB has under another name: raise_error (weir's runtime errors, which
# send the query to a replica to be raised there as PostgreSQL's); cardinality is len
_RENAMED = {"raise_error": "error"}
_FLAGS = re.compile(r"^\(\?([a-z]+)\)")


def _array_exists(node: exp.Exists) -> exp.Expression:
    """Spark's exists(array, x -> p) (weir's `= ANY(array)`), three-valued as Spark's: true
    if p holds for an element, else NULL if p is NULL for one, else false; NULL for a NULL
    array. DuckDB's list_filter with the same lambda counts them."""
    arr, fn = node.this, node.args["expression"]
    var = fn.expressions[0].name
    holds = exp.Lambda(this=fn.this.copy(), expressions=[exp.to_identifier(var)])
    unknown = exp.Lambda(this=exp.Is(this=exp.Paren(this=fn.this.copy()), expression=exp.Null()),
                         expressions=[exp.to_identifier(var)])

    def count(f: exp.Lambda) -> exp.Expression:
        return exp.Anonymous(this="len", expressions=[
            exp.Anonymous(this="list_filter", expressions=[arr.copy(), f])])

    return exp.Case(ifs=[
        exp.If(this=exp.Is(this=arr.copy(), expression=exp.Null()), true=exp.Null()),
        exp.If(this=exp.GT(this=count(holds), expression=exp.Literal.number(0)), true=exp.true()),
        exp.If(this=exp.GT(this=count(unknown), expression=exp.Literal.number(0)), true=exp.Null()),
    ], default=exp.false())


def _from_one(start: exp.Expression | None) -> bool:
    if isinstance(start, exp.Greatest):
        return any(isinstance(a, exp.Literal) and a.this == "1" for a in start.expressions)
    return isinstance(start, exp.Literal) and not start.is_string and int(start.this) >= 1


def _re2_flags(pattern: str) -> str:
    """weir's Java pattern for RE2: without Java's UNIX_LINES flag `d` (RE2 ends lines only
    at \\n anyway); any other Java-only syntax fails in DuckDB and sends the query to a replica."""
    m = _FLAGS.match(pattern)
    if m is None or "d" not in m.group(1):
        return pattern
    flags = m.group(1).replace("d", "")
    return (f"(?{flags})" if flags else "") + pattern[m.end():]


# weir's own Spark UDFs (weir.codec.spark_udfs) the in-process engine registers too, the
# same Python functions, by their argument's DuckDB type
IN_PROCESS_UDFS = {"weir_float8_out": "DOUBLE", "weir_float4_out": "FLOAT"}


_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod)


@functools.lru_cache(maxsize=512)
def has_arithmetic(spark_sql: str) -> bool:
    """Whether the query computes with + - * / %: on decimals Spark's result types (and so
    roundings) differ from DuckDB's, so a query over numeric columns that does runs on a
    replica (weir.adapter.system_reads)."""
    try:
        return any(True for _ in sqlglot.parse_one(spark_sql, read=_AnsiSpark).find_all(*_ARITHMETIC))
    except SqlglotError:
        return True


def _untyped_nulls(tree: exp.Expression) -> None:
    """A bare NULL projection (pgjdbc's `NULL AS TABLE_CAT`) is Spark's void column, which
    weir describes as text; DuckDB's would be an INTEGER. Not in a set operation, whose
    other branches type it."""
    for select in tree.find_all(exp.Select):
        if isinstance(select.parent, exp.SetOperation):
            continue
        for p in select.expressions:
            value = p.this if isinstance(p, exp.Alias) else p
            if isinstance(value, exp.Null):
                typed = exp.Cast(this=exp.Null(), to=exp.DataType.build("VARCHAR"))
                value.replace(typed if value is not p else exp.alias_(typed, "NULL", quoted=True))


@functools.lru_cache(maxsize=512)
def to_duckdb(spark_sql: str) -> str:
    """The DuckDB SQL of a rendered Spark query; raises NotInProcess."""
    try:
        tree = sqlglot.parse_one(spark_sql, read=_AnsiSpark)
    except SqlglotError as e:
        raise NotInProcess(f"not parsed as Spark SQL: {e}") from None
    replaced: list[tuple[exp.Expression, Callable[[exp.Expression], exp.Expression]]] = []
    for node in list(tree.find_all(exp.Func, exp.AtTimeZone, exp.FromTimeZone)):
        if isinstance(node, exp.Anonymous):
            name = node.name.lower()
            if name == "cardinality":  # Spark's is an int
                replaced.append((node, lambda n: exp.Cast(
                    this=exp.Anonymous(this="len", expressions=n.expressions), to=exp.DataType.build("INT"))))
            elif name in _RENAMED:
                node.set("this", _RENAMED[name])
            elif name == in_process_jsonb.UDF and in_process_jsonb.rename(node):
                continue  # to_jsonb of a scalar: the UDF of its type
            elif name not in IN_PROCESS_UDFS and name not in _SAME_CALLS:
                raise NotInProcess(f"{name} runs on Spark only")
        elif isinstance(node, exp.Exists) and isinstance(node.args.get("expression"), exp.Lambda):
            replaced.append((node, _array_exists))
        elif isinstance(node, exp.Exists) and not isinstance(node.this, (exp.Select, exp.Subquery)):
            raise NotInProcess("exists of this kind runs on Spark only")
        elif isinstance(node, (exp.ArraySort, exp.Struct)) and (why := in_process_arrays.unsupported(node)):
            raise NotInProcess(f"{why} runs on Spark only")
        elif isinstance(node, exp.ArraysZip):  # set-returning functions in lockstep
            replaced.append((node, set_returning.arrays_zip_duckdb))
        elif isinstance(node, exp.ArraySort):
            replaced.append((node, in_process_arrays.array_sort))
        elif isinstance(node, in_process_series.NODES):
            if why := in_process_series.unsupported(node, _AnsiSpark):
                raise NotInProcess(f"{why} runs on Spark only")
            replaced.append((node, lambda n: in_process_series.rewrite(n, _AnsiSpark)))
        elif isinstance(node, exp.Typeof):  # weir's own test for decimal(38,10): Spark's lower-case names
            replaced.append((node, lambda n: exp.Lower(this=n.copy())))
        elif isinstance(node, exp.RegexpReplace) and isinstance(node.args.get("replacement"), exp.Literal):
            node.set("replacement", exp.Literal.string(re.sub(r"\$(\d)", r"\\\1", node.args["replacement"].this)))
        elif isinstance(node, exp.Substring) and _from_one(node.args.get("start")):
            continue  # positions from 1 on count alike (weir's substring() starts at greatest(p, 1))
        elif type(node) not in _SAME_FUNCTIONS:
            raise NotInProcess(f"{node.key} runs on Spark only")
    for node, make in reversed(replaced):  # innermost first: an outer copy keeps inner changes
        node.replace(make(node))
    for node in reversed(list(tree.find_all(*_INT_RESULT))):  # innermost first
        value = node.parent if isinstance(node.parent, exp.Window) else node
        value.replace(exp.Cast(this=value.copy(), to=exp.DataType.build("INT")))
    for node in tree.find_all(exp.RegexpLike, exp.RegexpExtract, exp.RegexpReplace, exp.RegexpSplit):
        pattern = node.expression
        if isinstance(pattern, exp.Literal) and pattern.is_string:
            node.set("expression", exp.Literal.string(_re2_flags(pattern.this)))
    _untyped_nulls(tree)
    in_process_series.zero_based_indexes(tree)
    for like in list(tree.find_all(exp.Like, exp.ILike)):
        if not isinstance(like.parent, exp.Escape):  # Spark's default escape (DuckDB has none)
            like.replace(exp.Escape(this=like.copy(), expression=exp.Literal.string("\\")))
    try:
        return tree.sql(dialect=InProcessDuckDB)
    except SqlglotError as e:
        raise NotInProcess(f"not rendered for DuckDB: {e}") from None
