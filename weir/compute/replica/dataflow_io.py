"""What a dataflow reads and writes: scan plans of shards, Spark DataFrames over
their Parquet files, consolidated differences, and the updates it appends.

Conventions inside a dataflow: a *counted* collection is a DataFrame with the
query's columns renamed by position (`__c0`, `__c1`, ...) plus `__weir_n`, the
row's multiplicity; diffs and contents are both counted collections (a diff
may have negative counts). Every function here blocks (py4j, Iceberg) and runs
on the dataflow's thread.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.conversions import from_bytes
from pyiceberg.types import LongType

from weir.compute.replica.engine import (
    contents_sql,
    empty_dir,
    query_expr,
    stored_ddl,
    stored_forms,
    stored_view,
)
from weir.compute.replica.linear import DIFF, TIME
from weir.compute.replica.small_inputs import small_contents
from weir.storage.frontiers import Frontiers
from weir.storage.maintenance import local_path
from weir.storage.persist import Shard
from weir.storage.schema import DIFF_COL, TIME_COL, Column, from_storage, physical_name, to_storage

N = "__weir_n"


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def pos(i: int) -> str:
    return f"__c{i}"


@dataclass
class Plan:
    """One shard's files holding every update before `upper`, from one snapshot."""

    frontiers: Frontiers
    files: list[str] = field(default_factory=list)
    times: set[int] = field(default_factory=set)  # distinct update times in [lower, upper)
    changed: list[str] = field(default_factory=list)  # the files that may hold times in [lower, upper)
    records: int = 0  # the updates in `files` (their statistics)


@dataclass
class _File:
    path: str
    lo: int | None  # mz_timestamp bounds from the file's statistics
    hi: int | None
    records: int = 0  # rows in the file (its statistics): a scan's exact expected size


def _bound(bounds: dict[int, bytes] | None, field_id: int) -> int | None:
    raw = (bounds or {}).get(field_id)
    return None if raw is None else int(from_bytes(LongType(), raw))


class Planner:
    """Scan plans of one shard, cached per Iceberg snapshot (frontier-only commits keep
    the snapshot, so an idle input costs one catalog read per step)."""

    def __init__(self, shard: Shard) -> None:
        self.shard = shard
        self._snapshot: int | None = None
        self._files: list[_File] = []
        self._times: dict[str, frozenset[int]] = {}  # files hold immutable data
        self._by_manifest: dict[str, list[_File]] = {}  # manifest path -> its live data files

    def plan(self, upper: int, lower: int | None = None) -> Plan:
        """Refresh the shard; its files with updates before `upper` and, if `lower` is
        given, the distinct times in [lower, upper) (from file statistics where a file
        holds a single time, else from its mz_timestamp column)."""
        f = self.shard.frontiers()
        table = self.shard.table
        snap = table.current_snapshot()
        sid = None if snap is None else snap.snapshot_id
        if sid != self._snapshot or snap is None:
            self._files = [] if snap is None else self._live_files(table, snap)
            self._snapshot = sid
            live = {x.path for x in self._files}
            self._times = {k: v for k, v in self._times.items() if k in live}
        plan = Plan(f)
        for x in self._files:
            if x.lo is not None and x.lo >= upper:
                continue
            plan.files.append(x.path)
            plan.records += x.records
            if lower is None or (x.hi is not None and x.hi < lower):
                continue
            plan.changed.append(x.path)
            if x.lo is not None and x.lo == x.hi:
                if lower <= x.lo < upper:
                    plan.times.add(x.lo)
                continue
            times = self._times.get(x.path)
            if times is None:
                col = pq.read_table(x.path, columns=[TIME_COL])[TIME_COL]
                times = self._times[x.path] = frozenset(pc.unique(col).to_pylist())
            plan.times.update(t for t in times if lower <= t < upper)
        return plan

    def _live_files(self, table: Any, snap: Any) -> list[_File]:
        """The snapshot's data files, reading only the manifests not read before: a fast
        append adds one manifest per commit, so planning the whole table at each new
        snapshot would cost the input's commit history, not its change. Manifests are
        immutable files, so their entries are cached by path."""
        from pyiceberg.manifest import ManifestContent

        tid = table.schema().find_field(TIME_COL).field_id
        manifests = snap.manifests(table.io)
        if any(m.content != ManifestContent.DATA for m in manifests):  # deletes: pyiceberg plans
            self._by_manifest = {}
            return [self._file(task.file, tid) for task in table.scan(snapshot_id=snap.snapshot_id).plan_files()]
        cached = self._by_manifest
        self._by_manifest = {}
        for m in manifests:
            files = cached.get(m.manifest_path)
            if files is None:
                files = [self._file(e.data_file, tid) for e in m.fetch_manifest_entry(table.io, discard_deleted=True)]
            self._by_manifest[m.manifest_path] = files
        return [f for files in self._by_manifest.values() for f in files]

    @staticmethod
    def _file(df: Any, tid: int) -> _File:
        return _File(local_path(df.file_path), _bound(df.lower_bounds, tid), _bound(df.upper_bounds, tid),
                     int(df.record_count))

    def record_counts(self) -> dict[str, int]:
        """Rows per data file of the snapshot last planned (Iceberg's file statistics)."""
        return {x.path: x.records for x in self._files}


# ---- DataFrames over shard files -------------------------------------------------------


def _raw(session: Any, files: Sequence[str], columns: Sequence[Column]) -> Any:
    from pyspark.sql.types import StructType

    columns = stored_forms(columns, files)
    ddl = ", ".join([f"{_quote(physical_name(n))} {stored_ddl(t)}" for n, t, _ in columns]
                    + [f"{TIME_COL} BIGINT", f"{DIFF_COL} BIGINT"])
    schema = StructType.fromDDL(ddl)
    df = session.read.schema(schema).parquet(*(files or [empty_dir()]))
    return df.toDF(*[n for n, _, _ in columns], TIME_COL, DIFF_COL)


def _typed(columns: Sequence[Column], files: Sequence[str] = ()) -> list[str]:
    columns = stored_forms(columns, files)
    return [f"{query_expr(_quote(n), t)} AS {_quote(n)}" for n, t, _ in columns]


def contents_view(session: Any, files: Sequence[str], columns: Sequence[Column], as_of: int) -> Any:
    """The collection at `as_of` as plain rows (each repeated by its count), query types."""
    if (small := small_contents(session, files, columns, as_of)) is not None:
        return small
    view, stored = stored_view(session, files, columns)
    return session.sql(contents_sql(view, stored, as_of))


def updates_view(session: Any, files: Sequence[str], columns: Sequence[Column], lower: int,
                 upper: int) -> Any:
    """Updates with lower <= time < upper: query-typed columns + `__weir_t`, `__weir_d`."""
    from pyspark.sql import functions as F

    df = _raw(session, files, columns).where(
        (F.col(TIME_COL) >= F.lit(lower)) & (F.col(TIME_COL) < F.lit(upper)))
    return df.selectExpr(*_typed(columns, files), f"{TIME_COL} AS {TIME}", f"{DIFF_COL} AS {DIFF}")


def counted_updates_view(session: Any, files: Sequence[str], columns: Sequence[Column], lower: int | None,
                         upper: int, at: int | None = None) -> Any:
    """Updates with lower <= time < upper (no lower: all before upper) consolidated per row
    and time, or all at `at` (a snapshot as updates): query-typed columns + `__weir_t`,
    `__weir_d`. Snapshots and intervals run one plan shape (the reduce strategy's jobs)."""
    from pyspark.sql import functions as F

    data = [F.col(_quote(n)) for n, _, _ in columns]
    df = _raw(session, files, columns)
    cond = F.col(TIME_COL) < F.lit(upper)
    if lower is not None:
        cond = (F.col(TIME_COL) >= F.lit(lower)) & cond
    time = F.lit(at).cast("bigint") if at is not None else F.col(TIME_COL)
    df = (df.where(cond).groupBy(*data, time.alias(TIME_COL)).agg(F.sum(DIFF_COL).alias(DIFF_COL))
          .where(F.col(DIFF_COL) != 0))
    return df.selectExpr(*_typed(columns, files), f"{TIME_COL} AS {TIME}", f"{DIFF_COL} AS {DIFF}")


def _cast_positional(df: Any, schema: Any) -> Any:
    """Rename `df`'s leading columns by position and cast them to `schema`'s types."""
    from pyspark.sql import functions as F

    width = len(schema.fields)
    rest = df.columns[width:]
    df = df.toDF(*[pos(i) for i in range(width)], *rest)  # by position: names may repeat
    out = [F.col(pos(i)).cast(_relaxed(f.dataType)).alias(pos(i)) for i, f in enumerate(schema.fields)]
    return df.select(*out, *[F.col(_quote(c)) for c in rest])


def _relaxed(t: Any) -> Any:
    """`t` with every array's elements nullable: the query's own schema may say a literal
    ARRAY(ARRAY(1, 2))'s cannot be NULL, and Spark casts no nullable array (a stored one) to that."""
    from pyspark.sql.types import ArrayType

    if isinstance(t, ArrayType):
        return ArrayType(_relaxed(t.elementType), True)
    return t


def stored_counted(session: Any, files: Sequence[str], columns: Sequence[Column], schema: Any, *,
                   as_of: int | None = None, lower: int | None = None) -> Any:
    """A shard's contents at `as_of` (or its updates in [lower, as_of]) as a counted
    collection with `schema`'s types, consolidated, zero counts dropped."""
    from pyspark.sql import functions as F

    df = _raw(session, files, columns)
    if as_of is not None:
        df = df.where(F.col(TIME_COL) <= F.lit(as_of))
    if lower is not None:
        df = df.where(F.col(TIME_COL) >= F.lit(lower))
    df = _cast_positional(df.selectExpr(*_typed(columns, files), f"{DIFF_COL} AS {N}"), schema)
    return consolidated(df, len(schema.fields))


def consolidated(df: Any, width: int) -> Any:
    """Sum `__weir_n` per distinct row of a counted collection; drop zeros."""
    from pyspark.sql import functions as F

    keys = [F.col(pos(i)) for i in range(width)]
    return df.groupBy(*keys).agg(F.sum(N).alias(N)).where(F.col(N) != 0)


def counted(result: Any, schema: Any) -> Any:
    """A query result (plain rows) as a counted collection."""
    from pyspark.sql import functions as F

    df = _cast_positional(result, schema)
    return df.groupBy(*[F.col(pos(i)) for i in range(len(schema.fields))]).agg(
        F.count(F.lit(1)).cast("bigint").alias(N))


def difference(old: Any, new: Any, width: int) -> Any:
    """new - old, consolidated."""
    from pyspark.sql import functions as F

    return consolidated(new.unionByName(old.withColumn(N, -F.col(N))), width)


def linear_updates(result: Any, schema: Any) -> Any:
    """The linear query's output (columns + __weir_t, __weir_d) consolidated per (row, time)."""
    from pyspark.sql import functions as F

    df = _cast_positional(result, schema)
    keys = [F.col(pos(i)) for i in range(len(schema.fields))] + [F.col(TIME)]
    return df.groupBy(*keys).agg(F.sum(DIFF).alias(N)).where(F.col(N) != 0)


# ---- what is appended ----------------------------------------------------------------


def output_updates(data: pa.Table, columns: Sequence[Column]) -> pa.Table:
    """Counted rows with `__weir_t` (Arrow from Spark) -> updates named like the output shard."""
    width = len(columns)
    arrays = [data.column(pos(i)) for i in range(width)]
    arrays += [data.column(TIME).cast(pa.int64()), data.column(N).cast(pa.int64())]
    return pa.Table.from_arrays(arrays, names=[c[0] for c in columns] + [TIME_COL, DIFF_COL])


def same_updates(ours: pa.Table | None, theirs: pa.Table, columns: list[Column],
                 limit: int = 100_000) -> bool:
    """Whether two sets of updates are equal as multisets of (row, time) (False if too big to tell)."""
    if ours is None or ours.num_rows == 0:
        return theirs.num_rows == 0
    if ours.num_rows > limit or theirs.num_rows > limit:
        return False
    mine = from_storage(to_storage(ours, columns), columns)
    names = [c[0] for c in columns] + [TIME_COL]

    def bag(t: pa.Table) -> Counter[tuple[Any, ...]]:
        c: Counter[tuple[Any, ...]] = Counter()
        cols = [t.column(n).to_pylist() for n in names]
        for row, d in zip(zip(*cols, strict=True), t.column(DIFF_COL).to_pylist(), strict=True):
            c[tuple(_hashable(v) for v in row)] += d
        return Counter({k: v for k, v in c.items() if v})

    return bag(mine) == bag(theirs)


def _hashable(v: Any) -> Any:
    """Lists and structs (an interval's {months, days, micros}) as tuples."""
    if isinstance(v, dict):
        return tuple(_hashable(x) for x in v.values())
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v
