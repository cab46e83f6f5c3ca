"""PostgreSQL's ordered-set and hypothetical-set aggregates: `f(args) WITHIN GROUP (ORDER BY
keys)` for percentile_cont, percentile_disc, mode, and rank, dense_rank, percent_rank,
cume_dist of a hypothetical row.

Spark's exact percentile() interpolates as percentile_cont does, but its percentile_disc
answers in doubles, picks mode's ties the other way round, and has no hypothetical-set aggregates, so
weir writes those out: percentile_disc is the element at ceil(fraction * n) of the sorted
non-NULL values (exact for every sortable type); a hypothetical row's rank counts the rows
that sort before it under the ORDER BY (directions and NULLS FIRST / LAST as written)."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from weir import codec
from weir import types as T
from weir.errors import SqlState, WeirError
from weir.sql import infer, literals
from weir.sql.infer import Types
from weir.sql.translate import raise_sql, refuse, spark_template

_HYPOTHETICAL = (exp.Rank, exp.DenseRank, exp.PercentRank, exp.CumeDist)
_NUMBERS = (T.INT2.oid, T.INT4.oid, T.INT8.oid, T.FLOAT4.oid, T.FLOAT8.oid, T.NUMERIC.oid)


def inside_within_group(node: exp.Expression, types: Types) -> exp.Expression:
    """percentile_cont / percentile_disc / mode are computed by their WITHIN GROUP."""
    if isinstance(node.parent, exp.WithinGroup):
        return node
    name = {exp.PercentileCont: "percentile_cont", exp.PercentileDisc: "percentile_disc"}.get(type(node), "mode")
    raise WeirError(SqlState.WRONG_OBJECT_TYPE, f"WITHIN GROUP is required for ordered-set aggregate {name}")


def within_group(node: exp.Expression, types: Types) -> exp.Expression:
    f, order = node.this, node.expression
    keys: list[exp.Ordered] = list(order.expressions) if isinstance(order, exp.Order) else []
    if isinstance(f, _HYPOTHETICAL):
        return _hypothetical(f, keys, types)
    if len(keys) != 1:
        raise refuse(f"{f.sql_name().lower()} WITHIN GROUP with {len(keys)} sort keys")
    key = keys[0]
    t = types.of(key.this)
    if isinstance(f, exp.Mode):  # of tied values, the first in the sort order: Spark's as PostgreSQL's
        return spark_template("mode() WITHIN GROUP (ORDER BY {k})",
                              k=exp.Ordered(this=key.this, desc=bool(key.args.get("desc"))))
    fraction = f.this
    if isinstance(fraction, exp.Array) or (types.of(fraction) or T.FLOAT8).is_array:
        raise refuse(f"{f.sql_name().lower()} of an array of fractions")
    checked = _fraction(fraction)
    if isinstance(f, exp.PercentileCont):
        if t is None or t.oid not in _NUMBERS:
            raise refuse(f"percentile_cont of {t.name if t else 'unknown'}")
        # Spark's exact percentile interpolates as percentile_cont does (sqlglot would write
        # percentile_cont ... WITHIN GROUP as the approximate percentile_approx)
        p = spark_template("1 - {p}", p=checked) if key.args.get("desc") else checked
        return spark_template("percentile(CAST({x} AS DOUBLE), {p})", x=key.this, p=p)
    if t is None or t.is_array or t.oid == T.RECORD_OID or infer.is_interval(t):
        raise refuse(f"percentile_disc of {t.name if t else 'unknown'}")
    sort = "array_sort(collect_list({x}), (l, r) -> CASE WHEN l < r THEN 1 WHEN l > r THEN -1 ELSE 0 END)" \
        if key.args.get("desc") else "array_sort(collect_list({x}))"
    return spark_template("CASE WHEN count({x}) = 0 THEN NULL ELSE element_at(" + sort
                          + ", CAST(greatest(ceil({p} * count({x})), 1) AS INT)) END", x=key.this, p=checked)


def _fraction(p: exp.Expression) -> exp.Expression:
    """PostgreSQL's 22003 for a fraction outside [0, 1] (NULL gives NULL)."""
    if isinstance(p, exp.Literal) and not p.is_string:
        value = float(p.this)
        if not 0 <= value <= 1:
            raise WeirError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, f"percentile value {p.this} is not between 0 and 1")
        return p
    return spark_template("CASE WHEN CAST({p} AS DOUBLE) NOT BETWEEN 0 AND 1 THEN "
                          + raise_sql("22003", "percentile value is not between 0 and 1") + " ELSE {p} END", p=p)


def _hypothetical(f: exp.Expression, keys: list[exp.Ordered], types: Types) -> exp.Expression:
    name = f.sql_name().lower()
    args = list(f.expressions)
    if len(args) != len(keys):
        raise WeirError(SqlState.UNDEFINED_FUNCTION, f"function {name}({len(args)} arguments) WITHIN GROUP "
                        f"({len(keys)} sort keys) does not exist",
                        hint="To use the hypothetical-set aggregate, the number of hypothetical direct "
                             "arguments must match the number of ordering columns.")
    pairs = []
    for arg, key in zip(args, keys, strict=True):
        if arg.find(exp.Column, exp.AggFunc, exp.Subquery, exp.Select) is not None:
            raise refuse(f"hypothetical-set aggregate {name} with an argument that is not a constant")
        pairs.append((_typed(arg, types.of(key.this), types, name), key))
    before = _precedes(pairs)
    if isinstance(f, exp.Rank):
        return spark_template("CAST(count_if({b}) + 1 AS BIGINT)", b=before)
    if isinstance(f, exp.PercentRank):
        return spark_template("CASE WHEN count(*) = 0 THEN CAST(0 AS DOUBLE) "
                              "ELSE CAST(count_if({b}) AS DOUBLE) / count(*) END", b=before)
    if isinstance(f, exp.CumeDist):
        peer = exp.and_(*(_same(k.this, a) for a, k in pairs))
        return spark_template("CAST(count_if({b} OR {p}) + 1 AS DOUBLE) / (count(*) + 1)", b=before, p=peer)
    row = exp.Anonymous(this="struct", expressions=[k.this.copy() for _, k in pairs])
    return spark_template("CAST(count(DISTINCT CASE WHEN {b} THEN {r} END) + 1 AS BIGINT)", b=before, r=row)


def _typed(arg: exp.Expression, key_t: T.PgType | None, types: Types, name: str) -> exp.Expression:
    """A direct argument as a value of its sort key's type: an untyped literal is read
    with that type's input function; another type must be comparable with it."""
    t = types.of(arg)
    if key_t is None:  # a column weir does not type (of a set-returning function): the argument's
        if t is None or t.oid == T.UNKNOWN.oid:
            raise refuse(f"{name} WITHIN GROUP over a key of unknown type")
        return arg
    if isinstance(arg, exp.Null):
        return literals.literal(None, key_t)
    if isinstance(arg, exp.Literal) and arg.is_string and (t is None or t.oid == T.UNKNOWN.oid):
        return literals.literal(codec.decode_text(arg.this, key_t), key_t)
    numbers = t is not None and t.oid in _NUMBERS and key_t.oid in _NUMBERS
    if t is None or not (numbers or t.oid == key_t.oid or (infer.is_text(t) and infer.is_text(key_t))):
        raise WeirError(SqlState.DATATYPE_MISMATCH, f"WITHIN GROUP types {key_t.name} and "
                        f"{t.name if t else 'unknown'} cannot be matched")
    return arg


def _same(k: exp.Expression, a: exp.Expression) -> exp.Expression:
    return spark_template("({k} <=> {a})", k=k, a=a)


def _precedes(pairs: list[tuple[exp.Expression, exp.Ordered]]) -> exp.Expression:
    """Whether a row sorts strictly before the hypothetical row: key by key, as ORDER BY."""
    out: exp.Expression | None = None
    for a, key in reversed(pairs):
        k, desc = key.this, bool(key.args.get("desc"))
        nulls_first = key.args.get("nulls_first")
        nulls_first = desc if nulls_first is None else bool(nulls_first)
        op = ">" if desc else "<"
        nulls = "{k} IS NULL AND {a} IS NOT NULL" if nulls_first else "{k} IS NOT NULL AND {a} IS NULL"
        lt = spark_template(f"(({nulls}) OR coalesce({{k}} {op} {{a}}, false))", k=k, a=a)
        out = lt if out is None else spark_template("({lt} OR ({eq} AND {rest}))", lt=lt, eq=_same(k, a), rest=out)
    assert out is not None
    return out


HANDLERS: dict[type, Callable[[exp.Expression, Types], exp.Expression]] = {
    exp.WithinGroup: within_group, exp.PercentileCont: inside_within_group,
    exp.PercentileDisc: inside_within_group, exp.Mode: inside_within_group,
}
