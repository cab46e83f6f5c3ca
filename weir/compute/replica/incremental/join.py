"""The delta join: inner and outer equi-joins of any number of inputs kept from deltas on
Spark's executors, stage by stage.

Stage s joins the inputs before it (already joined) with input s. Its output updates at
time t are dL(t) join R(<t) + L(<=t) join dR(t) (DBSP's rule; Materialize's delta join of
two inputs): both sides, after their own filters, are arranged by the stage's key
(weir.compute.replica.incremental.rows: sorted runs of rows per key partition), and an
interval's job sends both sides' updates, hash-partitioned by key, to tasks that look each
delta up in the other side's runs (a binary search, never a scan) and append their own.
An outer stage also keeps a side's rows without a match, padded with NULLs: a new row
whose key has no match comes out padded, and a key the other side's change gives its first
match (or takes its last) retracts (or adds) its padded rows. The rest of the query
(conditions over several inputs, the projection, a GROUP BY) reads the joined updates as
one relation, `__weir_joined` (weir.compute.replica.incremental.join_shape), through the
linear rewrite or the reduce strategy: one Spark job per interval whose work follows the
change and the keys it touches.

NULL keys never match (they are filtered before the join, or padded on a kept side); keys
hashing alike are told apart by comparing the key values. Keys of floating or nested types
and rows of nested types are refused (NotJoinable): the dataflow recomputes.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from weir.compute.replica import dataflow_io as io
from weir.compute.replica.incremental import rows, runs
from weir.compute.replica.incremental.join_shape import JOINED, Input, JoinShape, NotJoinable, Stage
from weir.compute.replica.incremental.maintained import Bound, Incremental, Job, remove
from weir.compute.replica.linear import DIFF, TIME, NotLinear, linear_rewrite

SIDE, HASH = "__weir_side", "__weir_h"
SIDES = ("left", "right")  # of a join stage: the inputs before, the input it joins
_NESTED = ("ArrayType", "MapType", "StructType", "VariantType")
_NO_KEY = (*_NESTED, "FloatType", "DoubleType", "NullType")
_INTEGRAL = ("ByteType", "ShortType", "IntegerType", "LongType")


def _key_types(left: Any, right: Any) -> str | None:
    """The type both sides' key is cast to (None: as is), or NotJoinable."""
    a, b = type(left).__name__, type(right).__name__
    if a in _NO_KEY or b in _NO_KEY:
        raise NotJoinable(f"a join key of type {left.simpleString()} / {right.simpleString()}")
    if left == right:
        return None
    if a in _INTEGRAL and b in _INTEGRAL:
        return "BIGINT"
    raise NotJoinable(f"join keys of different types ({left.simpleString()}, {right.simpleString()})")


class DeltaJoin:
    """A dataflow's join of its inputs: each input's Spark SQL, the stages' keys, their
    state, the job."""

    def __init__(self, shape: JoinShape, inputs: Sequence[tuple[str, Sequence[Any]]],
                 new_session: Callable[[], Any], partitions: int, directory: str) -> None:
        """`directory`: the dataflow's state directory (the join's runs go under it)."""
        from pyspark.sql.types import StructField, StructType

        self.shape, self.partitions = shape, partitions
        columns = {name.lower(): [c[0] for c in cols] for name, cols in inputs}
        session = new_session()
        for name, cols in inputs:
            io.contents_view(session, [], cols, 0).createOrReplaceTempView(name)
        fields: dict[str, Any] = {}
        self.input_columns = [[j for _, j in inp.columns] for inp in shape.inputs]
        right_types = []
        for s, inp in enumerate(shape.inputs):
            keys = shape.stages[s - 1].right if s else ()
            schema = session.sql(self._input_sql(inp, keys, [None] * len(keys))).schema
            for f in schema.fields:
                if type(f.dataType).__name__ in _NESTED:
                    raise NotJoinable(f"a joined column of type {f.dataType.simpleString()}")
                fields[f.name] = f.dataType
            right_types.append([f.dataType for f in schema.fields[len(inp.columns):]])
        # per stage: the key columns' casts (None: as is), from both sides' types
        self.casts: list[list[str | None]] = []
        for s, stage in enumerate(shape.stages, 1):
            before = StructType([StructField(c, fields[c], True) for cols in self.input_columns[:s] for c in cols])
            left = session.createDataFrame([], before).selectExpr(*stage.left).schema
            self.casts.append([_key_types(a.dataType, b) for a, b in zip(left.fields, right_types[s], strict=True)])
        self.input_sql: list[str] = []
        for s, inp in enumerate(shape.inputs):
            keys = shape.stages[s - 1].right if s else ()
            sql = self._input_sql(inp, keys, self.casts[s - 1] if s else [], s > 0 and shape.stages[s - 1].keeps(1))
            try:
                self.input_sql.append(linear_rewrite(sql, {inp.name: columns[inp.name.lower()]}))
            except NotLinear as e:
                raise NotJoinable(f"an input's part is not linear: {e}") from None
        joined = [c for cols in self.input_columns for c in cols]
        self.names = {JOINED: joined}
        self.joined_schema = StructType([StructField(n, fields[n], True) for n in joined])
        self.ops = tuple(f"{s}-{side}" for s in range(1, len(shape.inputs)) for side in SIDES)
        self.directory = os.path.join(directory, "join")
        self.manifest = runs.Manifest(self.directory, partitions, self.ops)
        self._pending: str | None = None  # the version the last bind's job writes

    @staticmethod
    def _input_sql(inp: Input, keys: Sequence[str], casts: Sequence[str | None], kept: bool = False) -> str:
        """The input's rows the join reads: its columns (JOINED's names), filtered by its own
        conditions, and its keys of the stage that joins it (NULL keys never match: gone,
        unless the stage keeps the input's unmatched rows)."""
        items = [f"`{inp.alias}`.`{c}` AS {j}" for c, j in inp.columns]
        items += [f"CAST({k} AS {cast}) AS __j{i}" if cast else f"{k} AS __j{i}"
                  for i, (k, cast) in enumerate(zip(keys, casts, strict=True))]
        where = [f"({f})" for f in inp.filters] + ([] if kept else [f"({k}) IS NOT NULL" for k in keys])
        return (f"SELECT {', '.join(items) or '1 AS __one'} FROM {inp.name} AS `{inp.alias}`"
                + (f" WHERE {' AND '.join(where)}" if where else ""))

    # -- Source ----------------------------------------------------------------------------

    def register_empty(self, session: Any) -> None:
        session.createDataFrame([], self.joined_schema).createOrReplaceTempView(JOINED)

    def bind(self, session: Any, inputs: Bound, lower: int | None, upper: int, at: int | None) -> None:
        for name, columns, files in inputs:
            io.counted_updates_view(session, files, columns, lower, upper, at=at).createOrReplaceTempView(name)
        version = f"{self.manifest.version + 1}-{uuid.uuid4().hex[:12]}"
        self.frame(session, version).createOrReplaceTempView(JOINED)
        self._pending = version

    def committed(self) -> None:
        """Record the runs the job's tasks reported (a partition with no updates keeps its own)."""
        version, self._pending = self._pending, None
        if version is None:
            return
        reports = os.path.join(self.directory, "reports", version)
        m = self.manifest
        for name in os.listdir(reports) if os.path.isdir(reports) else []:
            with open(os.path.join(reports, name)) as f:
                doc = json.load(f)
            for op, files in doc["runs"].items():
                m.record(op, int(doc["partition"]), files)
        m.version += 1
        m.save()
        remove(os.path.join(self.directory, "reports"))

    def reset(self) -> None:
        remove(self.directory)
        self.manifest = runs.Manifest(self.directory, self.partitions, self.ops)
        self._pending = None

    def close(self) -> None:
        remove(self.directory)

    def state_bytes(self) -> int:
        return sum(self.manifest.state_bytes().values())

    def manifests(self) -> list[runs.Manifest]:
        return [self.manifest]

    def state(self) -> list[list[tuple[int, int, int, int]]]:
        """One operator per stage (its task) holding both sides' arrangements."""
        sizes = self.manifest.sizes()
        out = []
        for s in range(1, len(self.shape.inputs)):
            both: dict[int, list[int]] = {}
            for side in SIDES:
                for p, records, n, size in sizes.get(f"{s}-{side}", []):
                    acc = both.setdefault(p, [0, 0, 0])
                    acc[0], acc[1], acc[2] = acc[0] + records, acc[1] + n, acc[2] + size
            out.append([(p, *acc) for p, acc in sorted(both.items())])
        return out  # type: ignore[return-value]

    def describe(self) -> str:
        first, *rest = self.shape.inputs
        text = f"{first.name} AS {first.alias}"
        for inp, stage in zip(rest, self.shape.stages, strict=True):
            keys = " AND ".join(f"{a} = {b}" for a, b in zip(stage.left, stage.right, strict=True))
            text += f" JOIN {inp.name} AS {inp.alias} ON {keys}"
        return (f"its input: {text}, kept as a delta join (each interval's updates of one side looked up in "
                f"the other's arrangement, stage by stage); state: both sides of each join arranged by "
                f"its key, as sorted runs of rows per key partition on Spark's executors")

    # -- the job -----------------------------------------------------------------------------

    def frame(self, session: Any, version: str) -> Any:
        """The inputs' updates joined stage by stage: each stage's two sides hashed by its
        key, partitioned, joined by each partition's task."""
        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import to_arrow_type
        from pyspark.sql.types import LongType, StructField, StructType

        m = self.manifest
        joined = session.sql(self.input_sql[0]).select(*self.input_columns[0], TIME, DIFF)
        for s, stage in enumerate(self.shape.stages, 1):
            keys = [f"__j{i}" for i in range(len(stage.left))]
            before = [c for cols in self.input_columns[:s] for c in cols]
            left = joined.selectExpr(*before, *(f"CAST({k} AS {cast}) AS {j}" if cast else f"{k} AS {j}"
                                                for k, cast, j in zip(stage.left, self.casts[s - 1], keys,
                                                                      strict=True)), TIME, DIFF)
            right = session.sql(self.input_sql[s])
            keyed = " AND ".join(f"{j} IS NOT NULL" for j in keys)
            after = [*before, *self.input_columns[s]]
            types = {f.name: f.dataType for f in self.joined_schema.fields}
            unmatched = []  # rows of a kept side with a NULL key: padded, never looked up
            for i, (df, cols) in enumerate(((left, before), (right, self.input_columns[s]))):
                if stage.keeps(i):
                    unmatched.append(df.where(f"NOT ({keyed})").select(
                        *(F.col(c) if c in cols else F.lit(None).cast(types[c]).alias(c) for c in after), TIME, DIFF))
            left, right = left.where(keyed), right.where(keyed)
            sides = [df.select(F.lit(i).alias(SIDE), F.xxhash64(*keys).alias(HASH), *keys, *cols, TIME, DIFF)
                     for i, (df, cols) in enumerate(((left, before), (right, self.input_columns[s])))]
            both = sides[0].unionByName(sides[1], allowMissingColumns=True)
            out = StructType([*(f for f in self.joined_schema.fields if f.name in after),
                              StructField(TIME, LongType(), True), StructField(DIFF, LongType(), True)])
            task = _task(self.directory, {op: dict(m.runs[op]) for op in (f"{s}-{x}" for x in SIDES)}, version, s,
                         keys, [before, self.input_columns[s]], stage.kind,
                         {c: to_arrow_type(types[c]) for c in after})
            joined = both.repartition(self.partitions, HASH).mapInArrow(task, out)
            for u in unmatched:
                joined = joined.unionByName(u)
        return joined


def _task(directory: str, manifest: dict[str, dict[int, list[str]]], version: str, stage: int,
          key_names: list[str], side_columns: list[list[str]], kind: str, types: dict[str, pa.DataType]) -> Any:
    """One key partition's task of one join stage (runs on an executor)."""
    ops = [f"{stage}-{side}" for side in SIDES]
    kept = [Stage((), (), kind).keeps(i) for i in (0, 1)]

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from weir.compute.replica.incremental import rows as rw
        from weir.compute.replica.incremental import runs as r

        given = r.task_input(batches)
        if given is None:
            return
        table, p = given
        side = table.column(SIDE).to_numpy()
        times = table.column(TIME).to_numpy()
        state = [[rw.read(os.path.join(directory, op, f)) for f in manifest[op].get(p, [])] for op in ops]
        files = [list(manifest[op].get(p, [])) for op in ops]
        pending: list[list[rw.RowRun]] = [[], []]
        out: list[pa.Table] = []
        hashes, weights = table.column(HASH).to_numpy(), table.column(DIFF).to_numpy()
        for t in np.unique(times):
            delta = []
            for s in (0, 1):
                at = np.flatnonzero((times == t) & (side == s))
                delta.append(rw.consolidated(hashes[at], table.select([*key_names, *side_columns[s]]).take(at),
                                             weights[at]))
            for s in (0, 1):  # an outer join: the kept side's rows whose matches come or go
                if kept[s]:
                    out += _unmatched(delta[s], [*state[s], *pending[s]], delta[1 - s],
                                      [*state[1 - s], *pending[1 - s]], s == 0, int(t), key_names, side_columns,
                                      types)
            out += _meet(delta[0], [*state[1], *pending[1]], True, int(t), key_names, side_columns)
            pending[0].append(delta[0])
            out += _meet(delta[1], [*state[0], *pending[0]], False, int(t), key_names, side_columns)
            pending[1].append(delta[1])
        for s, op in enumerate(ops):
            live = [d for d in pending[s] if len(d)]
            if live:
                new = live[0] if len(live) == 1 else rw.merged(live)
                state[s], files[s] = rw.arrange(state[s], files[s], new, os.path.join(directory, op),
                                                f"p{p}-v{version}.arrow")
        reports = os.path.join(directory, "reports", version)
        os.makedirs(reports, exist_ok=True)
        path = os.path.join(reports, f"{stage}-p{p}.json")
        with open(f"{path}.{os.getpid()}.tmp", "w") as f:
            json.dump({"partition": p, "runs": dict(zip(ops, files, strict=True))}, f)
        os.replace(f"{path}.{os.getpid()}.tmp", path)
        for part in out:
            yield from part.to_batches()

    return task


def _meet(delta: rows.RowRun, others: Sequence[rows.RowRun], delta_is_left: bool, t: int,
          key_names: list[str], side_columns: list[list[str]]) -> list[pa.Table]:
    """`delta` joined with the rows of `others` whose keys equal its own."""
    out = []
    if not len(delta):
        return out
    for di, run, ri in runs.matches(others, delta.keys):
        mine, theirs = delta.rows.take(pa.array(di)), run.rows.take(pa.array(ri))
        same = None
        for k in key_names:
            eq = pc.equal(mine.column(k), theirs.column(k))
            same = eq if same is None else pc.and_(same, eq)
        keep = pc.fill_null(same, False)
        mine, theirs = mine.filter(keep), theirs.filter(keep)
        if not mine.num_rows:
            continue
        left, right = (mine, theirs) if delta_is_left else (theirs, mine)
        weight = pc.multiply(left.column(rows.WEIGHT), right.column(rows.WEIGHT))
        cols = {c: left.column(c) for c in side_columns[0]}
        cols.update({c: right.column(c) for c in side_columns[1]})
        cols[TIME] = pa.array(np.full(mine.num_rows, t, np.int64))
        cols[DIFF] = weight
        out.append(pa.table(cols))
    return out


def _same_keys(a: pa.Table, b: pa.Table, key_names: list[str]) -> np.ndarray:
    same = None
    for k in key_names:
        eq = pc.equal(a.column(k), b.column(k))
        same = eq if same is None else pc.and_(same, eq)
    return pc.fill_null(same, False).to_numpy(zero_copy_only=False) if same is not None \
        else np.ones(a.num_rows, bool)


def _degrees(others: Sequence[rows.RowRun], probe: rows.RowRun, key_names: list[str]) -> np.ndarray:
    """Per row of `probe`: the summed weight of the rows of `others` with its key."""
    out = np.zeros(len(probe), np.int64)
    for pi, run, ri in runs.matches(others, probe.keys):
        same = _same_keys(probe.rows.take(pa.array(pi)), run.rows.take(pa.array(ri)), key_names)
        np.add.at(out, pi[same], run.weights()[ri[same]])
    return out


def _with_keys(others: Sequence[rows.RowRun], probe: rows.RowRun, key_names: list[str]) -> pa.Table | None:
    """The rows of `others` whose key is one of `probe`'s (probe's keys are distinct)."""
    found = []
    for pi, run, ri in runs.matches(others, probe.keys):
        same = _same_keys(probe.rows.take(pa.array(pi)), run.rows.take(pa.array(ri)), key_names)
        if same.any():
            found.append(run.rows.take(pa.array(ri[same])))
    return pa.concat_tables(found) if found else None


def _padded(kept: pa.Table, weights: Any, kept_is_left: bool, t: int, side_columns: list[list[str]],
            types: dict[str, pa.DataType]) -> pa.Table:
    """The kept side's rows with NULLs for the other side's columns."""
    mine = side_columns[0 if kept_is_left else 1]
    cols = {c: kept.column(c) if c in mine else pa.nulls(kept.num_rows, types[c])
            for c in [*side_columns[0], *side_columns[1]]}
    cols[TIME] = pa.array(np.full(kept.num_rows, t, np.int64))
    cols[DIFF] = pa.array(np.asarray(weights, np.int64))
    return pa.table(cols)


def _unmatched(delta: rows.RowRun, before: Sequence[rows.RowRun], other_delta: rows.RowRun,
               other_before: Sequence[rows.RowRun], kept_is_left: bool, t: int, key_names: list[str],
               side_columns: list[list[str]], types: dict[str, pa.DataType]) -> list[pa.Table]:
    """What an outer join adds at `t` for a kept side: its rows with no match, padded with
    NULLs. A new row whose key has no match before or after `t` comes out padded; a key the
    other side's change gives its first match retracts its padded rows, one whose last match
    goes adds them (with the side's rows of `t`)."""
    out = []
    other_keys = rows.consolidated(other_delta.keys, other_delta.rows.select(key_names), other_delta.weights())
    if len(delta):
        before_deg = _degrees(other_before, delta, key_names)
        after_deg = before_deg + _degrees([other_keys], delta, key_names)
        alone = (before_deg == 0) & (after_deg == 0)
        if alone.any():
            rows_ = delta.rows.filter(pa.array(alone))
            out.append(_padded(rows_, rows_.column(rows.WEIGHT).to_numpy(), kept_is_left, t, side_columns, types))
    if len(other_keys):
        was = _degrees(other_before, other_keys, key_names)
        now = was + other_keys.weights()
        for flips, sign, with_delta in (((was == 0) & (now != 0), -1, False), ((was != 0) & (now == 0), 1, True)):
            if not flips.any():
                continue
            keys = rows.RowRun(other_keys.keys[flips], other_keys.rows.filter(pa.array(flips)))
            found = _with_keys([*before, *([delta] if with_delta else [])], keys, key_names)
            if found is not None:
                out.append(_padded(found, sign * found.column(rows.WEIGHT).to_numpy(), kept_is_left, t,
                                   side_columns, types))
    return out


class JoinedView(Incremental):
    """A join followed by linear operators (filters, projections): the joined updates
    through the linear rewrite of the rest of the query; no state of its own."""

    def __init__(self, post_sql: str, source: DeltaJoin, schema: Any, directory: str) -> None:
        super().__init__(source, directory)
        try:
            self.linear_sql = linear_rewrite(post_sql, source.names)
        except NotLinear as e:
            raise NotJoinable(f"what follows the join is not linear: {e}") from None
        self.schema = schema

    def frame(self, updates: Any) -> Any:
        return io.linear_updates(updates, self.schema)

    def apply(self, updates: Any, job: Job) -> pa.Table:
        df = self.frame(updates)
        job(df)
        return df.toArrow()
