"""The "reduce" dataflow strategy: GROUP BY with count and sum kept from deltas.

A query `SELECT <group keys and aggregates> FROM <linear query> GROUP BY <keys>` whose
aggregates are count(*), count(x) and sum(x) of integers is maintained without
recomputing it: each interval's input updates go through the linear part (the rewrite
of weir.compute.replica.linear), are hash-partitioned by group key across Spark's
executors, and each partition's task adds them to its groups' accumulators (count(*),
and per argument the count of non-NULL values and their sum), kept as sorted runs
(weir.compute.replica.incremental.runs) with the group keys themselves, so a hash
collision is detected, never summed. The task emits each touched group's accumulators
before and after each time; the driver turns them into the view's -old / +new rows. One
Spark job per interval; its work follows the change and the groups it touches.

SELECT DISTINCT is a GROUP BY of its select list. A global aggregate (no GROUP BY) is
one group of a constant key whose row never vanishes: while its input is empty it is
count 0 and NULL sums, as SQL has it. Select items that compute with aggregates and keys
(`sum(v) * 2`, weir's avg: its sum and count, divided) and HAVING are a map and a filter
after the groups: each touched group's -old / +new rows go through them on Spark (a
filter and a map of updates are updates). Anything else (DISTINCT ON, min / max, float
sums, keys of nested or floating types ...) raises NotReducible and the dataflow
recomputes. A sum that could leave 64 bits raises Overflow: the dataflow falls back to
recomputing.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from weir.compute.replica import dataflow_io as io
from weir.compute.replica.incremental import runs
from weir.compute.replica.incremental.maintained import Incremental, Job, Source, remove
from weir.compute.replica.linear import DIFF, TIME, NotLinear, linear_rewrite

HASH, PART, RUNS = "__weir_h", "__weir_part", "__weir_runs"
LIMIT = 2.0 ** 62  # accumulators past this could overflow 64 bits: recompute instead
_SELECT_ARGS = frozenset({"expressions", "from_", "where", "group", "having", "order", "distinct"})
GROUPS = "__weir_groups"  # the groups' -old / +new rows, as the map and filter after them read them


class NotReducible(Exception):  # noqa: N818 - a reason, not a failure
    """The query is not (recognisably) a GROUP BY of count and sum over a linear query."""


class Overflow(Exception):  # noqa: N818
    """An accumulator could leave 64 bits."""


@dataclass(frozen=True)
class Output:
    """One output column: a group key (`index` into the keys) or an aggregate (`index` into
    the arguments, None for count(*))."""

    kind: str  # "key", "count", "sum"
    index: int | None


@dataclass(frozen=True)
class Shape:
    keys: int
    arguments: int
    outputs: tuple[Output, ...]  # the groups' columns (with post_sql: keys, then aggregates)
    pre_sql: str  # SELECT __k0.., __a0.. FROM ... WHERE ... (Spark SQL)
    is_global: bool = False  # no GROUP BY: one group (key TRUE) with a row even when empty
    # the select list and HAVING over the groups' columns (GROUPS, by position), when they
    # are more than keys and aggregates; `groups_sql` is the query of those columns
    post_sql: str | None = None
    groups_sql: str | None = None


def _group_column(i: int) -> str:
    return f"__g{i}"


def _aggregate(node: exp.Expression) -> tuple[str, exp.Expression | None] | None:
    """(kind, argument) of a count / sum it keeps; None for anything else."""
    if isinstance(node, exp.Count) and not isinstance(node.this, exp.Distinct):
        return ("count", None if node.this is None or isinstance(node.this, exp.Star) else node.this)
    if isinstance(node, exp.Sum) and not isinstance(node.this, exp.Distinct):
        return ("sum", node.this)
    return None


def _when(condition: exp.Expression, value: exp.Expression) -> exp.Expression:
    return exp.Case(ifs=[exp.If(this=condition.copy(), true=value)])


def _as_counts(node: exp.Expression) -> exp.Expression | None:
    """An aggregate kept as counts and sums (None: not one of these): bool_and / bool_or
    (NULL over no non-NULL value, else whether every / some one is true), count_if, and an
    aggregate's FILTER (WHERE c) as its argument's CASE WHEN c."""
    if isinstance(node, exp.Filter) and isinstance(node.this, (exp.Count, exp.Sum, exp.CountIf, exp.LogicalAnd,
                                                               exp.LogicalOr)):
        agg, where = node.this, node.expression.this
        if isinstance(agg.this, exp.Distinct):
            return None
        if isinstance(agg, exp.Count) and (agg.this is None or isinstance(agg.this, exp.Star)):
            return exp.Count(this=_when(where, exp.Literal.number(1)))
        filtered = agg.copy()
        filtered.set("this", _when(where, agg.this))
        return filtered
    if isinstance(node, exp.CountIf):
        return exp.Count(this=_when(node.this, exp.Literal.number(1)))
    if isinstance(node, (exp.LogicalAnd, exp.LogicalOr)):
        values = exp.Count(this=node.this.copy())
        trues = exp.Count(this=_when(node.this, exp.Literal.number(1)))
        holds = (exp.EQ(this=values, expression=trues) if isinstance(node, exp.LogicalAnd)
                 else exp.GT(this=trues, expression=exp.Literal.number(0)))
        return exp.Case(ifs=[exp.If(this=exp.EQ(this=values.copy(), expression=exp.Literal.number(0)),
                                    true=exp.Null())], default=holds)
    return None


def shape(sql: str) -> Shape:
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except SqlglotError as e:
        raise NotReducible(f"cannot parse: {e}") from None
    if not isinstance(tree, exp.Select):
        raise NotReducible(f"{tree.key} is not a GROUP BY")
    for key, value in tree.args.items():
        if key not in _SELECT_ARGS and value not in (None, [], False):
            raise NotReducible(f"SELECT with {key}")
    group = tree.args.get("group")
    if group is not None:
        for key in ("rollup", "cube", "grouping_sets", "totals", "all"):
            if group.args.get(key):
                raise NotReducible(f"GROUP BY {key}")
    items = [item.this if isinstance(item, exp.Alias) else item for item in tree.expressions]
    distinct = tree.args.get("distinct")
    having = tree.args.get("having")
    if distinct is not None:  # SELECT DISTINCT x, y: GROUP BY x, y
        if distinct.args.get("on") is not None or group is not None or having is not None:
            raise NotReducible("DISTINCT ON, or DISTINCT with GROUP BY")
        if any(isinstance(n, (exp.AggFunc, exp.Star)) for e in items for n in e.walk()):
            raise NotReducible("DISTINCT over aggregates or *")
        group = exp.Group(expressions=[e.copy() for e in items])
    is_global = group is None or not group.expressions
    keys: list[exp.Expression] = [exp.true()] if is_global else list(group.expressions)
    arguments: list[exp.Expression] = []
    outputs: list[Output] = []

    def output(kind: str, argument: exp.Expression | None) -> Output:
        if argument is None:
            return Output(kind, None)
        arguments.append(argument)
        return Output(kind, len(arguments) - 1)

    plain = having is None
    for e in items:
        if (agg := _aggregate(e)) is not None:
            outputs.append(output(*agg))
        elif not is_global and any(e == k for k in keys):
            outputs.append(Output("key", next(i for i, k in enumerate(keys) if e == k)))
        else:
            plain = False
            break
    post_sql = groups_sql = None
    if not plain:  # the groups' keys and aggregates, then the select list and HAVING over them
        arguments.clear()
        outputs = [Output("key", i) for i in range(len(keys))]
        found: list[exp.Expression] = []

        def over_groups(node: exp.Expression) -> exp.Expression:
            if not is_global and any(node == k for k in keys):
                return exp.column(_group_column(next(i for i, k in enumerate(keys) if node == k)))
            if (counted := _as_counts(node)) is not None:
                return counted.transform(over_groups)
            if isinstance(node, exp.AggFunc):
                if (agg := _aggregate(node)) is None:
                    raise NotReducible(f"{node.sql(dialect='spark')[:60]} is not count / sum")
                if not any(node == f for f in found):
                    found.append(node)
                    outputs.append(output(*agg))
                return exp.column(_group_column(len(keys) + next(j for j, f in enumerate(found) if node == f)))
            return node

        post = exp.Select(expressions=[
            exp.alias_(e.transform(over_groups), io.pos(i)) for i, e in enumerate(items)])
        post.set("expressions", [*post.expressions, exp.column(TIME), exp.column(io.N)])
        post.set("from_", exp.From(this=exp.to_table(GROUPS)))
        if having is not None:
            post.set("where", exp.Where(this=having.this.transform(over_groups)))
        for n in post.walk():
            if isinstance(n, exp.Column) and n.name not in (*map(_group_column, range(len(outputs))), TIME, io.N):
                raise NotReducible(f"{n.sql(dialect='spark')} is neither a group key nor in an aggregate")
            if isinstance(n, (exp.Window, exp.Subquery, exp.Select)) and n is not post:
                raise NotReducible("a window or subquery over the groups")
        post_sql = post.sql(dialect="spark")
        inner = exp.Select(expressions=[
            *(exp.alias_(k.copy(), _group_column(i)) for i, k in enumerate(keys)),
            *(exp.alias_(f.copy(), _group_column(len(keys) + j)) for j, f in enumerate(found))])
        inner.set("from_", tree.args["from_"].copy())
        if tree.args.get("where") is not None:
            inner.set("where", tree.args["where"].copy())
        if not is_global:
            inner.set("group", exp.Group(expressions=[k.copy() for k in keys]))
        groups_sql = inner.sql(dialect="spark")
    for part in (*keys, *arguments, tree.args.get("where")):
        if part is not None and any(isinstance(n, (exp.AggFunc, exp.Window, exp.Subquery, exp.Select))
                                    for n in part.walk()):
            raise NotReducible("an aggregate, window or subquery inside a key or argument")
    pre = exp.Select(expressions=[*(exp.alias_(k.copy(), f"__k{i}") for i, k in enumerate(keys)),
                                  *(exp.alias_(a.copy(), f"__a{i}") for i, a in enumerate(arguments))])
    pre.set("from_", tree.args["from_"].copy())
    if tree.args.get("where") is not None:
        pre.set("where", tree.args["where"].copy())
    return Shape(len(keys), len(arguments), tuple(outputs), pre.sql(dialect="spark"), is_global,
                 post_sql, groups_sql)


_KEY_TYPES = ("ByteType", "ShortType", "IntegerType", "LongType", "StringType", "BooleanType",
              "DateType", "TimestampType", "TimestampNTZType", "DecimalType", "BinaryType")


def _scale(t: Any) -> int:
    """0 for an integer; a decimal's scale (its sum is kept as the sum of its unscaled
    values, exactly; a value whose unscaled form leaves 64 bits gives up: Overflow); else
    NotReducible (floating sums are not exact)."""
    if _integral(t):
        return 0
    # x * 10^scale is an integer: where Spark's product type keeps fewer fractional digits
    # (spark.sql.decimalOperations.allowPrecisionLoss: at least min(scale, 6)) it rounds
    # only zeros away, and a product past the type is NULL (TRY_MULTIPLY): Overflow
    if type(t).__name__ == "DecimalType":
        return int(t.scale)
    raise NotReducible(f"count / sum of {t.simpleString()}")


def _as_integers(pre_sql: str, scales: list[int], counted: set[int]) -> str:
    """The linear part with each argument as the integer its accumulators add: a decimal
    sum's unscaled value (and `__o<i>`: it left 64 bits), a count's 1 (NULL stays NULL)."""
    tree = sqlglot.parse_one(pre_sql, read="spark")
    flags = []
    for item in list(tree.expressions):
        if not (isinstance(item, exp.Alias) and item.alias.startswith("__a")):
            continue
        i = int(item.alias[3:])
        if i in counted:
            item.set("this", sqlglot.parse_one(
                f"IF(({item.this.sql(dialect='spark')}) IS NULL, CAST(NULL AS BIGINT), CAST(1 AS BIGINT))",
                read="spark"))
        elif scales[i]:
            value = item.this.sql(dialect="spark")
            unscaled = f"TRY_CAST(TRY_MULTIPLY(({value}), {10 ** scales[i]}) AS BIGINT)"
            item.set("this", sqlglot.parse_one(unscaled, read="spark"))
            flags.append(sqlglot.parse_one(f"({value}) IS NOT NULL AND {unscaled} IS NULL AS __o{i}", read="spark"))
    tree.set("expressions", [*tree.expressions, *flags])
    return tree.sql(dialect="spark")


def _groups_relation(groups: Any) -> Any:
    """The groups' -old / +new rows as the map and filter after them read them (GROUPS)."""
    from pyspark.sql.types import LongType, StructField, StructType

    fields = [StructField(_group_column(i), f.dataType, True) for i, f in enumerate(groups.fields)]
    return StructType([*fields, StructField(TIME, LongType(), True), StructField(io.N, LongType(), True)])


def _check_after_groups(analyse: Callable[..., Any], post_sql: str, groups: Any, schema: Any) -> None:
    """The map and filter after the groups must be one (no aggregate or window a function
    sqlglot does not know might make of them) and give the view's very types."""
    df = analyse(post_sql, {GROUPS: _groups_relation(groups)})
    plan = df._jdf.queryExecution().analyzed().toString()
    if re.search(r"^[\s:+\-|]*(Aggregate|Window|Generate)\b", plan, re.M):
        raise NotReducible("an aggregate, window or generator over the groups")
    got = [f.dataType for f in df.schema.fields][:len(schema.fields)]
    if got != [f.dataType for f in schema.fields]:
        raise NotReducible("the select list over the groups is not of the view's types")


def _integral(t: Any) -> bool:
    name = type(t).__name__
    return name in ("ByteType", "ShortType", "IntegerType", "LongType") or (
        name == "DecimalType" and t.scale == 0)


class Reduce(Incremental):
    """A dataflow's reduction: its shape, the Spark SQL of its linear part, its state."""

    def __init__(self, sql: str, source: Source, schema: Any, analyse: Callable[[str], Any],
                 partitions: int, directory: str) -> None:
        """`analyse`: a query over the source's views and the named others, planned (raises
        if Spark cannot run it); `directory`: the dataflow's state directory."""
        super().__init__(source, directory)
        self.shape = shape(sql)
        pre_schema = analyse(self.shape.pre_sql).schema
        fields = list(pre_schema.fields)
        for f in fields[:self.shape.keys]:
            if type(f.dataType).__name__ not in _KEY_TYPES:
                raise NotReducible(f"a group key of type {f.dataType.simpleString()}")
        # per argument: the decimal scale its sum is kept at as an integer (0: an integer;
        # a count's argument counts as 1 when not NULL, whatever its type)
        counted = {o.index for o in self.shape.outputs if o.kind == "count" and o.index is not None}
        self.scales = [0 if i in counted else _scale(f.dataType) for i, f in enumerate(fields[self.shape.keys:])]
        # the groups' columns: the view's own, or (with a map / filter after) their query's
        groups = schema if self.shape.groups_sql is None else analyse(self.shape.groups_sql).schema
        if self.shape.post_sql is not None:
            _check_after_groups(analyse, self.shape.post_sql, groups, schema)
        for out, f in zip(self.shape.outputs, groups.fields, strict=True):
            if out.kind == "sum" and self.scales[out.index or 0] and _scale(f.dataType) == self.scales[out.index or 0]:
                continue  # a decimal's sum: the unscaled sum, scaled back (`_changes`)
            if out.kind != "key" and not _integral(f.dataType):
                raise NotReducible(f"an aggregate of type {f.dataType.simpleString()}")
        try:
            self.linear_sql = linear_rewrite(_as_integers(self.shape.pre_sql, self.scales, counted),
                                             source.names)
        except NotLinear as e:
            raise NotReducible(f"its input is not linear: {e}") from None
        self.schema, self.groups, self.pre_schema, self.partitions = schema, groups, pre_schema, partitions
        self.width = 1 + 2 * self.shape.arguments  # count(*), then per argument non-NULL count and sum
        self.own = os.path.join(directory, "reduce")
        self.manifest = runs.Manifest(self.own, partitions, ("groups",))

    def reset_own(self) -> None:
        remove(self.own)
        self.manifest = runs.Manifest(self.own, self.partitions, ("groups",))

    def own_manifests(self) -> list[runs.Manifest]:
        return [self.manifest]

    def own_bytes(self) -> int:
        return sum(self.manifest.state_bytes().values())

    def own_state(self) -> list[list[tuple[int, int, int, int]]]:
        return [self.manifest.sizes()["groups"]]

    def describe_own(self) -> str:
        if self.shape.post_sql is None:
            return ""
        return ("then the select list and HAVING over the groups' count(*), counts and sums, as a map and "
                "filter of each touched group's old and new row (a second, small Spark job; no state)")

    def apply(self, updates: Any, job: Job) -> pa.Table:
        """Apply `updates` (the linear part's output: __k*, __a*, __weir_t, __weir_d)."""
        m = self.manifest
        # a name no earlier attempt used: a path's contents never change (executors cache by path)
        df = self._frame(updates, f"{m.version + 1}-{uuid.uuid4().hex[:12]}")
        job(df)
        out = df.toArrow()
        reports = out.filter(pc.is_valid(out.column(PART)))
        for p, files in zip(reports.column(PART).to_pylist(), reports.column(RUNS).to_pylist(), strict=True):
            m.record("groups", p, json.loads(files))
        m.version += 1
        m.save()
        return self._changes(out.filter(pc.is_null(out.column(PART))))

    def frame(self, updates: Any) -> Any:
        return self._frame(updates, "explain")

    def _frame(self, updates: Any, version: str) -> Any:
        """The job: updates hashed by group key, partitioned, applied by each partition's task."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

        keys = [f"__k{i}" for i in range(self.shape.keys)]
        hashed = updates.withColumn(HASH, F.xxhash64(*[F.col(k) for k in keys]))
        key_fields = [StructField(f"__k{i}", f.dataType, True)
                      for i, f in enumerate(self.pre_schema.fields[:self.shape.keys])]
        out_schema = StructType([*key_fields, StructField(TIME, LongType(), True),
                                 *(StructField(f"__b{i}", LongType(), True) for i in range(self.width)),
                                 *(StructField(f"__e{i}", LongType(), True) for i in range(self.width)),
                                 StructField(PART, IntegerType(), True), StructField(RUNS, StringType(), True)])
        m = self.manifest
        task = _task(os.path.join(m.directory, "groups"), dict(m.runs["groups"]), version,
                     self.shape.keys, self.shape.arguments, self.width)
        return hashed.repartition(self.partitions, HASH).mapInArrow(task, out_schema)

    def hydrate(self, new_session: Callable[[], Any], inputs: Any, floor: int, upper: int,
                job: Job) -> pa.Table:
        """A global aggregate's row exists before any input does: its empty row at `floor`,
        or, when the snapshot touched the group, its step's retraction of that row dropped."""
        out = super().hydrate(new_session, inputs, floor, upper, job)
        if not self.shape.is_global:
            return out
        retracts = pc.and_(pc.equal(out.column(io.TIME), floor), pc.equal(out.column(io.N), -1)).to_pylist()
        if True in retracts:
            first = retracts.index(True)
            return out.filter(pa.array([i != first for i in range(out.num_rows)]))
        zeros = {f"{p}{i}": pa.array([0], pa.int64()) for p in ("__b", "__e") for i in range(self.width)}
        empty = self._changes(pa.table({"__k0": pa.array([True]), TIME: pa.array([floor], pa.int64()), **zeros}))
        return pa.concat_tables([empty.filter(pc.equal(empty.column(io.N), 1)).cast(out.schema), out])

    def interval(self, new_session: Callable[[], Any], inputs: Any, changed: Any, lower: int, upper: int,
                 floor: int, hydrating: bool, job: Job) -> pa.Table:
        out = super().interval(new_session, inputs, changed, lower, upper, floor, hydrating, job)
        return out if self.shape.post_sql is None else self._after_groups(new_session, out)

    def _after_groups(self, new_session: Callable[[], Any], changes: pa.Table) -> pa.Table:
        """The select list and HAVING over the groups' -old / +new rows (a map and a filter
        of updates), on Spark: the same functions, types and errors as the query's."""
        from pyspark.sql.pandas.types import to_arrow_type

        types = [*(to_arrow_type(f.dataType) for f in self.schema.fields), pa.int64(), pa.int64()]
        names = [*(io.pos(i) for i in range(len(self.schema.fields))), io.TIME, io.N]
        if not changes.num_rows:
            return pa.table([pa.array([], t) for t in types], names=names)
        relation = _groups_relation(self.groups)
        session = new_session()
        session.createDataFrame(changes.rename_columns(relation.names), relation).createOrReplaceTempView(GROUPS)
        assert self.shape.post_sql is not None
        out = session.sql(self.shape.post_sql).toArrow()
        return pa.table([out.column(i).cast(t) for i, t in enumerate(types)], names=names)

    def _changes(self, steps: pa.Table) -> pa.Table:
        """Each touched group's -old (if it had rows, or is a global aggregate's) and +new
        (likewise)."""
        from pyspark.sql.pandas.types import to_arrow_type

        parts = []
        for prefix, sign in (("__b", -1), ("__e", 1)):
            live = steps if self.shape.is_global else steps.filter(pc.greater(steps.column(f"{prefix}0"), 0))
            cols = []
            for out, f in zip(self.shape.outputs, self.groups.fields, strict=True):
                target = to_arrow_type(f.dataType)
                if out.kind == "key":
                    cols.append(live.column(f"__k{out.index}").cast(target))
                elif out.index is None:
                    cols.append(live.column(f"{prefix}0").cast(target))
                else:
                    nonnull = live.column(f"{prefix}{1 + 2 * out.index}")
                    if out.kind == "count":
                        cols.append(nonnull.cast(target))
                    else:
                        total = pc.if_else(pc.greater(nonnull, 0), live.column(f"{prefix}{2 + 2 * out.index}"), None)
                        scale = self.scales[out.index]
                        cols.append(pa.array([None if v is None else Decimal(v).scaleb(-scale)
                                              for v in total.to_pylist()], target)
                                    if scale else total.cast(target))
            parts.append(pa.table([*cols, live.column(TIME), pa.array(np.full(live.num_rows, sign, np.int64))],
                                  names=[*(io.pos(i) for i in range(len(cols))), io.TIME, io.N]))
        return pa.concat_tables(parts)


def _task(directory: str, manifest: dict[int, list[str]], version: str, n_keys: int, n_args: int,
          width: int) -> Any:
    """One key partition's task (runs on an executor)."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from weir.compute.replica.incremental import runs as r

        given = r.task_input(batches)
        if given is None:
            return
        table, p = given
        w = table.column(DIFF).to_numpy().astype(np.int64)
        deltas = [w]
        for i in range(n_args):
            if f"__o{i}" in table.column_names and pc.any(table.column(f"__o{i}")).as_py():
                raise Overflow("a decimal's unscaled value does not fit 64 bits")
            a = table.column(f"__a{i}")
            present = pc.is_valid(a).to_numpy(zero_copy_only=False)
            values = pc.fill_null(a, 0)
            try:
                values = values.cast(pa.int64()).to_numpy()
            except (pa.ArrowInvalid, OverflowError):
                raise Overflow("a sum's argument does not fit 64 bits") from None
            if np.abs(values.astype(np.float64)).sum() * max(1, int(np.abs(w).max())) > LIMIT:
                raise Overflow("a sum could leave 64 bits")
            deltas += [w * present, w * values * present]
        labels = table.select([f"__k{i}" for i in range(n_keys)])
        steps, files = r.apply_times(manifest.get(p, []), directory, p, version,
                                     [f"v{i}" for i in range(width)], table.column(TIME).to_numpy(),
                                     table.column(HASH).to_numpy(), deltas, labels)
        for s in steps:
            for b, d in zip(s.before, s.delta.values, strict=True):
                if np.abs(b.astype(np.float64) + d.astype(np.float64)).max(initial=0) > LIMIT:
                    raise Overflow("a sum could leave 64 bits")
            n = len(s.delta)
            cols: dict[str, Any] = {f"__k{i}": s.delta.labels.column(i) for i in range(n_keys)}  # type: ignore[union-attr]
            cols[TIME] = np.full(n, s.time, np.int64)
            cols.update({f"__b{i}": v for i, v in enumerate(s.before)})
            cols.update({f"__e{i}": v for i, v in enumerate(s.after)})
            cols[PART] = pa.nulls(n, pa.int32())
            cols[RUNS] = pa.nulls(n, pa.string())
            yield from pa.table(cols).combine_chunks().to_batches()
        meta: dict[str, Any] = {f"__k{i}": pa.nulls(1, labels.column(i).type) for i in range(n_keys)}
        meta[TIME] = pa.nulls(1, pa.int64())
        meta.update({f"__b{i}": pa.nulls(1, pa.int64()) for i in range(width)})
        meta.update({f"__e{i}": pa.nulls(1, pa.int64()) for i in range(width)})
        meta[PART] = pa.array([p], pa.int32())
        meta[RUNS] = pa.array([json.dumps(files)])
        yield pa.RecordBatch.from_pydict(meta)

    return task


def gave_up(e: BaseException) -> bool:
    """A task's Overflow or HashCollision (they reach the driver as Spark's Python error)."""
    text = str(e)
    return isinstance(e, (Overflow, runs.HashCollision)) or "Overflow: " in text or "HashCollision: " in text
