"""The one gate between PostgreSQL functions and operators and Spark's.

Spark has functions of the same name as PostgreSQL's that compute something else
(`log` is natural, `date_format('HH')` is 00-23, `collect_list` drops NULLs, `concat`
of a NULL array is NULL ...). Every function and operator of a query passes here
before Spark sees it: each is known to weir with its faithful Spark translation (here,
in `weir.sql.translate` or in the modules beside it), or refused: 0A000 naming it when
PostgreSQL has it, 42883 as PostgreSQL says when it does not exist there either. weir
never computes something other than what PostgreSQL computes.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from weir.errors import SqlState, WeirError
from weir.sql import (
    array_functions,
    comparisons,
    datetime_sql,
    float_ops,
    format_function,
    infer,
    interval_ops,
    jsonb,
    jsonb_functions,
    multidim,
    numeric_ops,
    ordered_set,
    pg_text,
    regex,
    set_returning,
    shape,
    statistics,
    text_functions,
    to_char,
    translate_arrays,
    translate_datetime,
)
from weir.sql import translate as tr
from weir.sql.infer import COLUMNS_META, Types

__all__ = ["COLUMNS_META", "check"]

_Handler = Callable[[exp.Expression, Types], exp.Expression]

# Spark computes these as PostgreSQL does for every argument type weir has.
_PASS: frozenset[type] = frozenset({
    exp.Count, exp.Min, exp.Max, exp.Abs, exp.Length, exp.Upper, exp.Lower, exp.Replace,
    exp.Repeat, exp.Reverse, exp.StrPosition, exp.Trim, exp.MD5, exp.Ascii, exp.Chr,
    exp.LogicalAnd, exp.LogicalOr, exp.GroupConcat, exp.RowNumber, exp.Rank, exp.DenseRank,
    exp.Lag, exp.Lead, exp.FirstValue, exp.LastValue, exp.NthValue, exp.Ntile, exp.PercentRank,
    exp.CumeDist, exp.Explode, exp.ExplodingGenerateSeries, exp.Unnest,
    exp.CurrentDate, exp.CurrentTimestamp, exp.CurrentUser, exp.SessionUser, exp.CurrentSchema, exp.CurrentSchemas,
    exp.CurrentDatabase, exp.CurrentVersion, exp.Pi, exp.Rand,
    exp.Degrees, exp.Radians, exp.Sin, exp.Cos, exp.Tan, exp.Atan, exp.Atan2, exp.Cbrt,
    exp.StartsWith, exp.RegexpLike, exp.RegexpILike, exp.Sign, exp.Any, exp.All,
})

# sqlglot models these SQL constructs as function nodes (exp.Func), though they are
# syntax, not calls of a function: boolean connectives (And, Or, Xor are exp.Connector),
# subquery predicates (EXISTS; ANY/ALL are exp.SubqueryPredicate), casts (`::`, CAST,
# the typed slots of weir.sql.plan and the literals of render.literal), conditional
# expressions (CASE, COALESCE, NULLIF, GREATEST, LEAST), array constructors. Each is
# computed by Spark as PostgreSQL computes it; what is not (COLLATE, whose collations
# are Spark's) is refused by name in _SYNTAX_REFUSED.
_SYNTAX_KINDS: tuple[type, ...] = (exp.Connector, exp.SubqueryPredicate)
_SYNTAX: frozenset[type] = frozenset({
    exp.Cast, exp.TryCast, exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least,
    exp.Array,
})
_SYNTAX_REFUSED: dict[type, str] = {exp.Collate: "COLLATE"}


def is_syntax(node: exp.Expression) -> bool:
    """Whether a node is SQL syntax rather than a function call (see _SYNTAX)."""
    return not isinstance(node, exp.Func) or isinstance(node, _SYNTAX_KINDS) or type(node) in _SYNTAX


# PostgreSQL functions weir knows but cannot (yet) compute faithfully on Spark.
_KNOWN_PG = frozenset("""
age array_fill array_positions array_replace btrim
date_bin date_part decode encode factorial format gcd gen_random_uuid initcap isfinite
json_agg json_build_array json_build_object json_object_agg
jsonb_extract_path jsonb_extract_path_text jsonb_insert jsonb_set justify_days
justify_hours justify_interval lcm log10 make_interval make_time make_timestamp
make_timestamptz min_scale overlay quote_ident quote_literal quote_nullable regexp_match
regexp_matches regexp_split_to_array regexp_split_to_table row_to_json scale sha224 sha256
sha384 sha512 string_to_array to_date to_hex to_json to_number to_timestamp
translate trim_scale trunc width_bucket split_part left right lpad rpad concat concat_ws
substring substr array_to_string array_remove array_append array_prepend array_position
stddev stddev_samp stddev_pop variance var_samp var_pop timezone similar_to
""".split())

# Names of Spark-side functions PostgreSQL has too, meaning the same.
_ANON_PASS = frozenset({"octet_length", "cardinality", "every", "make_date", "mz_now",
                        "pg_backend_pid", "pg_postmaster_start_time", "mz_statement_log_access",
                        "mz_visible_objects"})

_PG_NAMES: dict[type, str] = {
    exp.StrToTime: "to_timestamp", exp.UnixToTime: "to_timestamp", exp.StrToDate: "to_date",
    exp.ArrayConcat: "array_cat", exp.ArraySize: "array_length", exp.Pow: "power",
    exp.Pad: "lpad", exp.Hex: "to_hex", exp.SHA2Digest: "sha256", exp.Uuid: "gen_random_uuid",
    exp.JSONBObjectAgg: "jsonb_object_agg", exp.VariancePop: "var_pop", exp.Variance: "variance",
    exp.JustifyDays: "justify_days", exp.JustifyHours: "justify_hours",
    exp.JustifyInterval: "justify_interval", exp.DateBin: "date_bin",
    exp.ArrayToString: "array_to_string", exp.StringToArray: "string_to_array",
    exp.ArrayPosition: "array_position", exp.ArrayAppend: "array_append",
    exp.ArrayPrepend: "array_prepend", exp.ExplodingGenerateSeries: "generate_series", exp.ArrayRemove: "array_remove",
    exp.RegexpReplace: "regexp_replace", exp.SplitPart: "split_part",
    exp.TimestampTrunc: "date_trunc", exp.GroupConcat: "string_agg",
}
_PG_NAMES.update({op: "?column?" for op in jsonb.OPERATORS})  # operators, not functions

_OPERATORS: dict[type, str] = {exp.SimilarTo: "SIMILAR TO"}


def pg_name(node: exp.Expression) -> str:
    """The name PostgreSQL knows a function node by."""
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    for cls, name in _PG_NAMES.items():
        if type(node) is cls:
            return name
    return node.sql_name().lower() if isinstance(node, exp.Func) else type(node).__name__.lower()


def not_supported(what: str) -> WeirError:
    return WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"{what} is not supported")


def does_not_exist(name: str, node: exp.Expression, types: Types) -> WeirError:
    args = ", ".join(_type_name(types, a) for a in node.expressions)
    return WeirError(SqlState.UNDEFINED_FUNCTION, f"function {name}({args}) does not exist",
                     hint="No function matches the given name and argument types. "
                          "You might need to add explicit type casts.")


def _type_name(types: Types, e: exp.Expression) -> str:
    t = types.of(e)
    return "unknown" if t is None else t.name


_SET_RETURNING = (exp.Explode, exp.ExplodingGenerateSeries, exp.Unnest)


def _one_set_returning_function(tree: exp.Expression) -> None:
    """Several set-returning functions in one select list run in lockstep in PostgreSQL
    (generate_series(0, 2), generate_series(0, 2) gives 3 rows), as weir.sql.set_returning
    writes them for Spark; refused where PostgreSQL refuses them, and with aggregates."""
    set_returning.check_placement(tree, lambda n: isinstance(n, _SET_RETURNING) or jsonb.is_set_returning(n))


def _plain_joins_to_arrays(tree: exp.Expression) -> None:
    """A join to unnest()/generate_series() becomes Spark's LATERAL VIEW explode(), which
    has no join condition and no outer side: sqlglot drops both. Only a plain join (no ON
    but TRUE, not outer) means the same; the others are refused."""
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, (exp.Unnest, exp.Explode)):
            _name_function_column(table)
    for unnest in tree.find_all(exp.Unnest):
        if isinstance(unnest.parent, exp.From):
            _name_unnest_column(unnest)
    for join in tree.find_all(exp.Join):
        target = join.this
        if isinstance(target, exp.Table) and isinstance(target.this, exp.ExplodingGenerateSeries):
            continue  # FROM generate_series(...) AS g: a subquery (weir.sql.render)
        if not isinstance(target, (exp.Unnest, exp.Explode, exp.ExplodingGenerateSeries)):
            continue
        if isinstance(target, exp.Unnest):
            _name_unnest_column(target)
        on = join.args.get("on")
        side = str(join.args.get("side") or "").upper()
        if side or (on is not None and not (isinstance(on, exp.Boolean) and on.this)):
            raise not_supported(f"{side + ' ' if side else ''}JOIN to a set-returning function with a "
                                "join condition (use CROSS JOIN or LATERAL and WHERE)")


def _name_unnest_column(unnest: exp.Unnest) -> None:
    """`unnest(a) u` has one column, named u (PostgreSQL); sqlglot's LATERAL VIEW needs the
    name spelled out, and without it dropped the unnest from the query."""
    alias = unnest.args.get("alias")
    if alias is None:
        alias = exp.TableAlias(this=exp.to_identifier("unnest"))
        unnest.set("alias", alias)
    if not alias.columns and len(unnest.expressions) == 1:
        alias.set("columns", [exp.to_identifier(alias.name or "unnest")])


def _name_function_column(table: exp.Table) -> None:
    """`FROM [pg_catalog.]unnest(a) x`: PostgreSQL names the one column after the alias
    (psql's \\d+ reads `array(select 'toast.' || x from pg_catalog.unnest(...) x)`)."""
    if table.args.get("db") is not None and table.db.lower() == "pg_catalog":
        table.set("db", None)
    alias = table.args.get("alias")
    if alias is not None and alias.name and not alias.columns and len(table.this.expressions or [table.this.this]) == 1:
        alias.set("columns", [exp.to_identifier(alias.name)])


def _no_with_ties(tree: exp.Expression) -> None:
    """FETCH FIRST n ROWS WITH TIES: Spark has LIMIT only (sqlglot drops WITH TIES)."""
    for fetch in tree.find_all(exp.Fetch):
        options = fetch.args.get("limit_options")
        if options is not None and options.args.get("with_ties"):
            raise not_supported("FETCH FIRST ... WITH TIES")


def check(expr: exp.Expression) -> exp.Expression:
    """A copy of a resolved query whose every function and operator means in Spark what
    it means in PostgreSQL; raises 0A000 / 42883 for the rest."""
    tree = expr.copy()
    shape.check(tree)
    _one_set_returning_function(tree)
    _plain_joins_to_arrays(tree)
    _no_with_ties(tree)
    types = Types()
    order = list(tree.dfs())
    for node in order:
        types.of(node)
    made = {id(n) for new in array_functions.unknown_literals_as_arrays(tree, types) for n in new.dfs()}
    if made:
        order = [n for n in tree.dfs() if id(n) not in made]
    tree = interval_ops.check(tree, types)
    for node in reversed(order):  # children before parents
        new = _visit(node, types)
        if new is not node:
            types.same_as(new, node)
            if node is tree:
                tree = new
            else:
                node.replace(new)
    return interval_ops.regroup(tree)


_QUANTIFIED = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Like, exp.ILike, exp.RegexpLike,
               exp.RegexpILike)


def _visit(node: exp.Expression, types: Types) -> exp.Expression:
    # a multidimensional operand: only what weir.sql.multidim lets through
    multidim.refuse_others(node, types, f"function {pg_name(node)}")
    handler = _HANDLERS.get(type(node))
    if handler is not None:
        return handler(node, types)
    return _unhandled(node, types)


def _unhandled(node: exp.Expression, types: Types) -> exp.Expression:
    """A node no handler takes: passed as it is, or refused."""
    if type(node) in _OPERATORS:
        raise not_supported(f"operator {_OPERATORS[type(node)]}")
    if type(node) in _SYNTAX_REFUSED:
        raise not_supported(_SYNTAX_REFUSED[type(node)])
    if is_syntax(node):
        return node
    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
        if name in _DIMENSION_FUNCTIONS and not node.meta.get("weir_literal"):
            return _DIMENSION_FUNCTIONS[name](node, types)
        if name in _ANON_PASS or node.meta.get("weir_literal"):
            return node
        if name in ("all", "some") and isinstance(node.parent, _QUANTIFIED):
            return node  # x op ALL / SOME (array): rewritten with its operator (comparisons.quantifier)
        if name == "pg_typeof":
            return tr.pg_typeof(node, types)
        if name == "to_char":
            return to_char.to_char(node, types)
        if name == "generate_subscripts":
            return set_returning.generate_subscripts(node, types)
        if name in jsonb.FUNCTIONS:
            return jsonb.FUNCTIONS[name](node, types)
        if name in jsonb_functions.FUNCTIONS:
            return jsonb_functions.FUNCTIONS[name](node, types)
        if name in array_functions.FUNCTIONS:
            return array_functions.FUNCTIONS[name](node, types)
        if name in _KNOWN_PG:
            raise not_supported(f"function {name}")
        raise does_not_exist(name, node, types)
    if type(node) not in _PASS:
        raise not_supported(f"function {pg_name(node)}")
    return node


# array_to_string of text-like elements is Spark's array_join: both leave NULL elements
# out unless given a text for them (other elements' text forms differ: floats, timestamps)
_TEXT_ELEMENTS = frozenset({25, 1043, 19, 1033})
# arrays' dimensions (weir.sql.multidim), of one or several
_DIMENSION_FUNCTIONS: dict[str, _Handler] = {
    "array_ndims": multidim.array_ndims, "array_dims": multidim.array_dims, "array_lower": multidim.bounds,
    "array_upper": multidim.bounds, "cardinality": multidim.cardinality}


def _array_to_string(node: exp.Expression, types: Types) -> exp.Expression:
    node = multidim.flattened(node, types)  # of all the elements, in row-major order
    t = types.of(node.this)
    if t is None or t.element is None or t.element.oid not in _TEXT_ELEMENTS:
        raise not_supported("function array_to_string of an array other than text")
    return node


_HANDLERS: dict[type, _Handler] = {
    exp.Log: tr.log, exp.Ln: tr.ln, exp.Exp: tr.exp_, exp.Sqrt: tr.sqrt, exp.Pow: tr.power,
    exp.ArrayAgg: translate_arrays.array_agg, exp.ArrayConcat: tr.array_cat, exp.DPipe: tr.dpipe,
    exp.Sum: tr.sum_, exp.Avg: tr.avg, exp.Sub: tr.sub, exp.Add: tr.interval_output,
    exp.Mul: tr.interval_output, exp.Div: tr.division, exp.Mod: tr.mod,
    exp.Bracket: translate_arrays.subscript, exp.Extract: translate_datetime.extract,
    exp.Substring: tr.substring, exp.Concat: tr.concat,
    exp.ArraySize: multidim.bounds, exp.Cast: tr.cast,
    exp.TimestampTrunc: translate_datetime.timestamp_trunc, exp.AtTimeZone: translate_datetime.at_time_zone,
    exp.WindowSpec: tr.window_spec, exp.Lead: tr.lead_lag, exp.Lag: tr.lead_lag,
    **{op: comparisons.comparison for op in (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)},
    exp.Ordered: comparisons.ordered, exp.Min: comparisons.min_max, exp.Max: comparisons.min_max,
    **{op: comparisons.pattern_match for op in (exp.Like, exp.ILike, exp.RegexpLike, exp.RegexpILike)},
    exp.Length: tr.length, exp.Array: translate_arrays.array_constructor, exp.ArrayToString: lambda n, t: _array_to_string(n, t),
}
_HANDLERS.update(jsonb.handlers(_HANDLERS))  # jsonb (weir.sql.jsonb): its operators; ||, -, =, casts of jsonb
_HANDLERS.update(jsonb_functions.HANDLERS)  # #-, jsonb_exists
_HANDLERS[exp.Bracket] = jsonb_functions.subscript_first(_HANDLERS[exp.Bracket])  # j['a'][0]
_HANDLERS.update(text_functions.HANDLERS)  # left, right, lpad, rpad, concat_ws, split_part, translate, chr
_HANDLERS.update(format_function.HANDLERS)  # format('%s %I %L', ...)
_HANDLERS.update(ordered_set.HANDLERS)  # percentile_cont/disc, mode, hypothetical rank ... WITHIN GROUP
_HANDLERS.update(numeric_ops.HANDLERS)  # numeric division, avg, ln, log, exp, sqrt: exact, on the replica
_HANDLERS[exp.Cast] = numeric_ops.float_cast(_HANDLERS[exp.Cast])  # float -> numeric with PostgreSQL's digits
# arrays, records, bytea and timestamptz as text: PostgreSQL's text output (weir.sql.pg_text)
_HANDLERS[exp.Cast] = pg_text.text_cast(_HANDLERS[exp.Cast])
for _node in (exp.DPipe, exp.Concat):
    _HANDLERS[_node] = pg_text.text_operands(_HANDLERS[_node])
_HANDLERS.update(statistics.HANDLERS)  # var_pop, var_samp, stddev*: exact sums for integral doubles
_HANDLERS.update(regex.HANDLERS)  # ~, ~*, regexp_like, substring(s FROM pattern): Java patterns
# array_position(s), array_remove, array_replace, date_bin; @>, <@ and && of arrays (jsonb's are jsonb's)
_HANDLERS.update(array_functions.HANDLERS)
for _node in (exp.ArrayContainsAll, exp.ArrayContainedBy):
    _HANDLERS[_node] = (lambda jsonb_handler: lambda n, t: array_functions.containment(n, t)
                        if array_functions.is_array_operand(n, t) else jsonb_handler(n, t))(_HANDLERS[_node])
_HANDLERS[exp.ArrayOverlaps] = array_functions.containment
# text to date/time casts of columns, AT TIME ZONE, to_timestamp(double): weir.sql.datetime_sql
_HANDLERS.update(datetime_sql.handlers(_HANDLERS))


def _interval_first(previous: _Handler, handler: Callable[[exp.Expression, Types], exp.Expression | None]) -> _Handler:
    """`handler` (weir.sql.interval_ops) where an interval is involved, else `previous`."""
    return lambda n, t: handler(n, t) or previous(n, t)


# intervals (struct<months, days, micros> on Spark): by span, field by field (weir.sql.interval_ops)
for _node in (exp.Add, exp.Sub, exp.Mul, exp.Div):
    _HANDLERS[_node] = _interval_first(_HANDLERS[_node], interval_ops.arith)
for _node in (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE):
    _HANDLERS[_node] = _interval_first(_HANDLERS[_node], interval_ops.comparison)
for _node in (exp.Min, exp.Max):
    _HANDLERS[_node] = _interval_first(_HANDLERS[_node], interval_ops.min_max)
for _node in (exp.Sum, exp.Avg):
    _HANDLERS[_node] = _interval_first(_HANDLERS[_node], interval_ops.sum_avg)
_HANDLERS[exp.Extract] = _interval_first(_HANDLERS[exp.Extract], interval_ops.extract)
_HANDLERS[exp.TimestampTrunc] = _interval_first(_HANDLERS[exp.TimestampTrunc], interval_ops.date_trunc)
_HANDLERS[exp.Cast] = _interval_first(_HANDLERS[exp.Cast], interval_ops.cast)
_HANDLERS[exp.Neg] = interval_ops.neg
# multidimensional arrays (weir.sql.multidim): casts keep their dimensions; = / <> of arrays of
# different dimensions; unnest() of all the elements
_HANDLERS[exp.Cast] = _interval_first(_HANDLERS[exp.Cast], lambda n, t: multidim.cast(n, t, infer.datatype(n.to)))
for _node in (exp.EQ, exp.NEQ):
    _HANDLERS[_node] = _interval_first(_HANDLERS[_node], multidim.equality)
for _node in (exp.Explode, exp.Unnest):
    _HANDLERS[_node] = (lambda previous: lambda n, t: previous(multidim.flattened(n, t), t))(
        _HANDLERS.get(_node, _unhandled))
_INTERVAL_HANDLERS: dict[type, Callable[[exp.Expression, Types], exp.Expression | None]] = {
    exp.In: interval_ops.membership, exp.Between: interval_ops.between, exp.NullSafeEQ: interval_ops.distinct_from,
    exp.NullSafeNEQ: interval_ops.distinct_from, exp.Nullif: interval_ops.nullif, exp.Greatest: interval_ops.extreme,
    exp.Least: interval_ops.extreme, exp.Window: interval_ops.partition_by, exp.Count: interval_ops.count_distinct}
for _node, _handler in _INTERVAL_HANDLERS.items():
    _HANDLERS[_node] = _interval_first(_HANDLERS.get(_node, _unhandled), _handler)
# arrays compared by IS DISTINCT FROM / IN, GREATEST / LEAST of arrays (weir.sql.comparisons)
for _node in (exp.NullSafeEQ, exp.NullSafeNEQ, exp.In):
    _HANDLERS[_node] = _interval_first(_HANDLERS[_node], comparisons.same_typed_arrays)
for _node in (exp.Greatest, exp.Least):
    _HANDLERS[_node] = _interval_first(_HANDLERS[_node], comparisons.extreme)
for _node in (exp.Filter, exp.Window):  # an interval sum / avg whose fields took its FILTER / window
    _HANDLERS[_node] = _interval_first(_HANDLERS.get(_node, _unhandled), interval_ops.unwrapped)
for _node in (exp.Add, exp.Sub, exp.Mul, exp.Div):  # float overflow / underflow: 22003 (weir.sql.float_ops)
    _HANDLERS[_node] = float_ops.checked(_HANDLERS[_node])
for _node in (exp.JustifyDays, exp.JustifyHours, exp.JustifyInterval):
    _HANDLERS[_node] = interval_ops.justify
