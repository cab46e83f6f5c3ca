"""The delta join: an inner equi-join of two inputs kept from deltas on Spark's executors.

For a query `SELECT ... FROM a JOIN b ON a.k = b.k [AND ...] [WHERE ...] [GROUP BY ...]`
the join's output updates at time t are dA(t) join B(<t) + A(<=t) join dB(t) (DBSP's
rule; Materialize's delta join of two inputs): each input, after its own filters, is
arranged by its join key (weir.compute.replica.incremental.rows: sorted runs of rows per
key partition), and an interval's job sends both inputs' updates, hash-partitioned by
join key, to tasks that look each delta up in the other side's runs (a binary search,
never a scan) and append their own. The rest of the query (conditions over both inputs,
the projection, a GROUP BY) reads the joined updates as one relation, `__weir_joined`,
through the linear rewrite or the reduce strategy: one Spark job per interval whose work
follows the change and the keys it touches.

NULL keys never match (they are filtered before the join); keys hashing alike are told
apart by comparing the key values. Outer joins, more than two inputs, keys of floating
or nested types and rows of nested types are refused (NotJoinable): the dataflow
recomputes.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from weir.compute.replica import dataflow_io as io
from weir.compute.replica.incremental import rows, runs
from weir.compute.replica.incremental.maintained import (
    Bound,
    Incremental,
    Job,
    remove,
    state_directory,
)
from weir.compute.replica.linear import DIFF, TIME, NotLinear, linear_rewrite

JOINED = "__weir_joined"
SIDE, HASH = "__weir_side", "__weir_h"
OPS = ("left", "right")
_NESTED = ("ArrayType", "MapType", "StructType", "VariantType")
_NO_KEY = (*_NESTED, "FloatType", "DoubleType", "NullType")
_INTEGRAL = ("ByteType", "ShortType", "IntegerType", "LongType")


class NotJoinable(Exception):  # noqa: N818 - a reason, not a failure
    """The query is not (recognisably) an inner equi-join of two inputs."""


@dataclass(frozen=True)
class Side:
    input: str  # the input view it reads
    alias: str
    columns: tuple[tuple[str, str], ...]  # (input column, its name in JOINED) the rest reads
    keys: tuple[str, ...]  # the join key expressions over `alias` (Spark SQL)
    filters: tuple[str, ...]  # the conditions on this input alone (Spark SQL)


@dataclass(frozen=True)
class JoinShape:
    sides: tuple[Side, Side]
    post_sql: str  # the rest of the query, over JOINED


def has_join(sql: str) -> bool:
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except SqlglotError:
        return False
    return isinstance(tree, exp.Select) and bool(tree.args.get("joins"))


def split(sql: str, inputs: Mapping[str, Sequence[str]]) -> JoinShape:
    """The two inputs' parts of the query and the rest over JOINED."""
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except SqlglotError as e:
        raise NotJoinable(f"cannot parse: {e}") from None
    if not isinstance(tree, exp.Select):
        raise NotJoinable(f"{tree.key} is not a join")
    for key in ("with", "with_", "laterals", "limit", "offset", "windows", "qualify"):
        if tree.args.get(key):
            raise NotJoinable(f"a join with {key}")
    tree.set("order", None)
    joins = tree.args.get("joins") or []
    if len(joins) != 1:
        raise NotJoinable(f"{len(joins) + 1} inputs (the delta join takes two)")
    join = joins[0]
    if join.args.get("side") or (join.args.get("kind") or "").upper() not in ("", "INNER", "CROSS"):
        raise NotJoinable(f"a {join.args.get('side') or join.args.get('kind')} join")
    if join.args.get("using") or join.args.get("method"):
        raise NotJoinable("JOIN ... USING or NATURAL")
    tables = [tree.args["from_"].this, join.this]
    views = {k.lower(): [c.lower() for c in v] for k, v in inputs.items()}
    aliases: list[str] = []
    for t in tables:
        if not isinstance(t, exp.Table) or t.args.get("db") or t.args.get("catalog") \
                or t.args.get("laterals") or t.args.get("pivots") or t.name.lower() not in views:
            raise NotJoinable(f"{t.sql(dialect='spark')[:60]} is not an input of the dataflow")
        aliases.append(t.alias_or_name.lower())
    if aliases[0] == aliases[1]:
        raise NotJoinable("both inputs have the same name")
    names = [tuple(views[t.name.lower()]) for t in tables]
    for node in tree.walk():
        if node is not tree and isinstance(node, (exp.Select, exp.Subquery, exp.Exists, exp.Window)):
            raise NotJoinable(f"a {node.key} inside the join's query")
    _expand_stars(tree, aliases, names)

    def side_of(col: exp.Column) -> int:
        name = col.name.lower()
        if col.table:
            if col.table.lower() not in aliases:
                raise NotJoinable(f"{col.sql(dialect='spark')} names no input")
            s = aliases.index(col.table.lower())
            if name not in names[s]:
                raise NotJoinable(f"{col.sql(dialect='spark')} is not a column")
            return s
        found = [s for s in (0, 1) if name in names[s]]
        if len(found) != 1:
            raise NotJoinable(f"column {col.name} is {'ambiguous' if found else 'unknown'}")
        return found[0]

    def sides(e: exp.Expression) -> set[int]:
        return {side_of(c) for c in e.find_all(exp.Column)}

    conjuncts = [*_conjuncts(join.args.get("on")), *_conjuncts(tree.args.get("where"))]
    keys: list[tuple[exp.Expression, exp.Expression]] = []
    filters: list[list[exp.Expression]] = [[], []]
    residual: list[exp.Expression] = []
    for c in conjuncts:
        if isinstance(c, exp.EQ) and sides(c.this) in ({0}, {1}) and sides(c.expression) in ({0}, {1}) \
                and sides(c.this) != sides(c.expression):
            pair = (c.this, c.expression) if sides(c.this) == {0} else (c.expression, c.this)
            keys.append(pair)
        elif sides(c) in ({0}, {1}):
            filters[next(iter(sides(c)))].append(c)
        else:
            residual.append(c)
    if not keys:
        raise NotJoinable("no equality between the two inputs (a cross join)")
    used: list[dict[str, str]] = [{}, {}]
    counter = [0]

    def joined_name(col: exp.Column) -> str:
        s, name = side_of(col), col.name.lower()
        if name not in used[s]:
            used[s][name] = f"__c{counter[0]}"
            counter[0] += 1
        return used[s][name]

    post = tree.copy()
    post.set("joins", None)
    post.set("from_", exp.From(this=exp.to_table(JOINED)))
    post.set("where", exp.Where(this=exp.and_(*[r.copy() for r in residual])) if residual else None)

    def rename(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            return exp.column(joined_name(node))
        return node

    post = post.transform(rename)
    return JoinShape(
        tuple(Side(tables[s].name, aliases[s],
                   tuple((n, used[s][n]) for n in names[s] if n in used[s]),
                   tuple(pair[s].sql(dialect="spark") for pair in keys),
                   tuple(f.sql(dialect="spark") for f in filters[s])) for s in (0, 1)),  # type: ignore[arg-type]
        post.sql(dialect="spark"))


def _conjuncts(e: exp.Expression | None) -> list[exp.Expression]:
    if e is None:
        return []
    if isinstance(e, (exp.Paren, exp.Where)):
        return _conjuncts(e.this)
    if isinstance(e, exp.And):
        return [*_conjuncts(e.this), *_conjuncts(e.expression)]
    return [e]


def _expand_stars(tree: exp.Select, aliases: list[str], names: list[tuple[str, ...]]) -> None:
    out: list[exp.Expression] = []
    for p in tree.expressions:
        star = ("" if isinstance(p, exp.Star) else
                p.table.lower() if isinstance(p, exp.Column) and isinstance(p.this, exp.Star) else None)
        if star is None:
            out.append(p)
            continue
        for s in (0, 1):
            if star in ("", aliases[s]):
                out += [exp.column(exp.to_identifier(n, quoted=True), table=exp.to_identifier(aliases[s]))
                        for n in names[s]]
    tree.set("expressions", out)


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
    """A dataflow's join of two inputs: its Spark SQL per side, its state, its job."""

    def __init__(self, shape: JoinShape, inputs: Sequence[tuple[str, Sequence[Any]]],
                 new_session: Callable[[], Any], partitions: int) -> None:
        from pyspark.sql.types import StructField, StructType

        self.shape, self.inputs, self.partitions = shape, list(inputs), partitions
        columns = {name.lower(): [c[0] for c in cols] for name, cols in inputs}
        session = new_session()
        for name, cols in inputs:
            io.contents_view(session, [], cols, 0).createOrReplaceTempView(name)
        key_types = [session.sql(f"SELECT {', '.join(s.keys)} FROM {s.input} AS `{s.alias}`").schema
                     for s in shape.sides]
        casts = [_key_types(a.dataType, b.dataType) for a, b in zip(*(t.fields for t in key_types), strict=True)]
        self.side_sql: list[str] = []
        fields: dict[str, Any] = {}
        for side in shape.sides:
            items = [f"`{side.alias}`.`{c}` AS {j}" for c, j in side.columns]
            items += [f"CAST({k} AS {cast}) AS __j{i}" if cast else f"{k} AS __j{i}"
                      for i, (k, cast) in enumerate(zip(side.keys, casts, strict=True))]
            where = [f"({f})" for f in side.filters] + [f"({k}) IS NOT NULL" for k in side.keys]
            sql = f"SELECT {', '.join(items)} FROM {side.input} AS `{side.alias}` WHERE {' AND '.join(where)}"
            for f in session.sql(sql).schema.fields:
                if type(f.dataType).__name__ in _NESTED:
                    raise NotJoinable(f"a joined column of type {f.dataType.simpleString()}")
                fields[f.name] = f.dataType
            try:
                self.side_sql.append(linear_rewrite(sql, {side.input: columns[side.input.lower()]}))
            except NotLinear as e:
                raise NotJoinable(f"an input's part is not linear: {e}") from None
        self.key_names = [f"__j{i}" for i in range(len(casts))]
        self.side_columns = [[j for _, j in side.columns] for side in shape.sides]
        joined = [n for cols in self.side_columns for n in cols]
        self.names = {JOINED: joined}
        self.joined_schema = StructType([StructField(n, fields[n], True) for n in joined])
        self.directory = state_directory("join")
        self.manifest = runs.Manifest(self.directory, partitions, OPS)
        self._pending: str | None = None  # the version the last bind's job writes

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
            for op in OPS:
                m.record(op, int(doc["partition"]), doc[op])
        m.version += 1
        m.save()
        remove(os.path.join(self.directory, "reports"))

    def reset(self) -> None:
        remove(self.directory)
        self.manifest = runs.Manifest(self.directory, self.partitions, OPS)
        self._pending = None

    def close(self) -> None:
        remove(self.directory)

    def state_bytes(self) -> int:
        return sum(self.manifest.state_bytes().values())

    def describe(self) -> str:
        a, b = self.shape.sides
        keys = ", ".join(f"{x} = {y}" for x, y in zip(a.keys, b.keys, strict=True))
        return (f"its input: {a.input} AS {a.alias} JOIN {b.input} AS {b.alias} ON {keys}, kept as a delta join "
                f"(each interval's updates of one input looked up in the other's arrangement); state: both "
                f"inputs arranged by join key, as sorted runs of rows per key partition on Spark's executors")

    # -- the job -----------------------------------------------------------------------------

    def frame(self, session: Any, version: str) -> Any:
        """Both inputs' updates, hashed by join key, partitioned, joined by each partition's task."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import LongType, StructField, StructType

        parts = []
        for s, sql in enumerate(self.side_sql):
            df = session.sql(sql)
            parts.append(df.select(F.lit(s).alias(SIDE), F.xxhash64(*self.key_names).alias(HASH),
                                   *self.key_names, *self.side_columns[s], TIME, DIFF))
        both = parts[0].unionByName(parts[1], allowMissingColumns=True)
        out = StructType([*self.joined_schema.fields, StructField(TIME, LongType(), True),
                          StructField(DIFF, LongType(), True)])
        m = self.manifest
        task = _task(self.directory, {op: dict(m.runs[op]) for op in OPS}, version, self.key_names,
                     self.side_columns)
        return both.repartition(self.partitions, HASH).mapInArrow(task, out)


def _task(directory: str, manifest: dict[str, dict[int, list[str]]], version: str, key_names: list[str],
          side_columns: list[list[str]]) -> Any:
    """One join-key partition's task (runs on an executor)."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from weir.compute.replica.incremental import rows as rw

        got = [b for b in batches if b.num_rows]
        if not got:
            return
        table = pa.Table.from_batches(got)
        p = TaskContext.get().partitionId()
        side = table.column(SIDE).to_numpy()
        times = table.column(TIME).to_numpy()
        state = [[rw.read(os.path.join(directory, op, f)) for f in manifest[op].get(p, [])] for op in OPS]
        files = [list(manifest[op].get(p, [])) for op in OPS]
        pending: list[list[rw.RowRun]] = [[], []]
        out: list[pa.Table] = []
        hashes, weights = table.column(HASH).to_numpy(), table.column(DIFF).to_numpy()
        for t in np.unique(times):
            delta = []
            for s in (0, 1):
                at = np.flatnonzero((times == t) & (side == s))
                delta.append(rw.consolidated(hashes[at], table.select([*key_names, *side_columns[s]]).take(at),
                                             weights[at]))
            out += _meet(delta[0], [*state[1], *pending[1]], True, int(t), key_names, side_columns)
            pending[0].append(delta[0])
            out += _meet(delta[1], [*state[0], *pending[0]], False, int(t), key_names, side_columns)
            pending[1].append(delta[1])
        for s, op in enumerate(OPS):
            live = [d for d in pending[s] if len(d)]
            if live:
                new = live[0] if len(live) == 1 else rw.merged(live)
                state[s], files[s] = rw.arrange(state[s], files[s], new, os.path.join(directory, op),
                                                f"p{p}-v{version}.arrow")
        reports = os.path.join(directory, "reports", version)
        os.makedirs(reports, exist_ok=True)
        path = os.path.join(reports, f"p{p}.json")
        with open(f"{path}.{os.getpid()}.tmp", "w") as f:
            json.dump({"partition": p, **dict(zip(OPS, files, strict=True))}, f)
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


class JoinedView(Incremental):
    """A join followed by linear operators (filters, projections): the joined updates
    through the linear rewrite of the rest of the query; no state of its own."""

    def __init__(self, post_sql: str, source: DeltaJoin, schema: Any) -> None:
        super().__init__(source)
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
