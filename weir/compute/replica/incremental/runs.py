"""Accumulable per-key state of an incremental operator, kept on Spark's executors.

The state of one partition (keys hash-partitioned as Spark's `repartition(P, key)` does)
is a short list of sorted runs: immutable Arrow IPC files of `key` + accumulator columns,
one row per key, written by the task that made them under the dataflow's state
directory. A key's value is the sum of its rows across the runs (count, sum: Materialize's
"accumulable" reductions). A tick appends the run of its own changes and merges runs of
similar size (a geometric LSM), so its cost follows the keys it touches, not the state's
size. Runs are read once per executor's Python worker and kept there (`_CACHE`, by path:
a path never changes its contents), so a worker that sees its partition again reads
nothing; a worker that does not (another executor, a restart) reads the files.

Which runs make up a partition at a version is the driver's business: tasks report the
runs they leave, the driver records them (`Manifest`) after the tick's job succeeded and
passes them to the next tick's tasks, so a failed or retried task changes nothing visible.
"""

from __future__ import annotations

import json
import os
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

KEY = "key"
R = TypeVar("R")
MERGE_RATIO = 2  # a run is merged into the one before it while that one is at most twice its size
CACHE_RUNS = 256


LABEL = "__label"


class HashCollision(Exception):  # noqa: N818 - a condition the caller handles
    """Two different group keys hashed alike: the state cannot tell them apart."""


@dataclass(frozen=True)
class Run:
    """Sorted, unique keys and their accumulators; `labels`, if kept, are the values a key
    hashes (one row per key), checked on every meeting so a collision is never summed."""

    keys: np.ndarray
    values: tuple[np.ndarray, ...]
    labels: pa.Table | None = None

    def __len__(self) -> int:
        return len(self.keys)


def same_labels(a: pa.Table, b: pa.Table) -> bool:
    """Row by row, NULL equal to NULL (GROUP BY's equality)."""
    for x, y in zip(a.columns, b.columns, strict=True):
        both_null = pc.and_(pc.is_null(x), pc.is_null(y))
        if pa.types.is_null(x.type) or pa.types.is_null(y.type):
            if not pc.all(both_null).as_py():
                return False
            continue
        if not pc.all(pc.or_(pc.fill_null(pc.equal(x, y), False), both_null)).as_py():
            return False
    return True


def accumulate(keys: np.ndarray, values: Sequence[np.ndarray], labels: pa.Table | None = None) -> Run:
    """One row per key, its values summed; keys whose values all sum to 0 are dropped."""
    if len(keys) == 0:
        return Run(np.empty(0, np.int64), tuple(np.empty(0, np.int64) for _ in values),
                   labels.slice(0, 0) if labels is not None else None)
    uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    sums = [np.zeros(len(uniq), np.int64) for _ in values]
    for s, v in zip(sums, values, strict=True):
        np.add.at(s, inverse, v)
    live = np.zeros(len(uniq), bool)
    for s in sums:
        live |= s != 0
    kept = None
    if labels is not None:
        if len(uniq) < len(keys) and not same_labels(labels.take(first[inverse]), labels):
            raise HashCollision("two group keys share a hash")
        kept = labels.take(first[live])
    return Run(uniq[live], tuple(s[live] for s in sums), kept)


def lookup(runs: Iterable[Run], keys: np.ndarray, width: int,
           labels: pa.Table | None = None) -> tuple[np.ndarray, ...]:
    """The current accumulators of `keys` (sorted or not): the sum of their rows in every run."""
    out = tuple(np.zeros(len(keys), np.int64) for _ in range(width))
    for run in runs:
        if not len(run):
            continue
        at = np.searchsorted(run.keys, keys)
        at_c = np.minimum(at, len(run) - 1)
        hit = run.keys[at_c] == keys
        if labels is not None and run.labels is not None and hit.any():
            where = np.flatnonzero(hit)
            if not same_labels(run.labels.take(at_c[where]), labels.take(where)):
                raise HashCollision("two group keys share a hash")
        for o, v in zip(out, run.values, strict=True):
            o[hit] += v[at_c[hit]]
    return out


def merged(runs: Sequence[Run]) -> Run:
    keys = np.concatenate([r.keys for r in runs])
    width = len(runs[0].values)
    labels = None
    if runs[0].labels is not None:  # named by position: a run read back names them so too
        labels = pa.concat_tables([r.labels.rename_columns([f"{LABEL}{i}" for i in range(r.labels.num_columns)])
                                   for r in runs if r.labels is not None])
    return accumulate(keys, [np.concatenate([r.values[i] for r in runs]) for i in range(width)], labels)


def compacted(runs: list[R], files: list[str | None],
              merge: Callable[[Sequence[R]], R]) -> tuple[list[R], list[str | None]]:
    """Merge the newest runs while the one before is not much bigger (a geometric LSM: each
    key is merged O(log n) times over its life); a merged run has no file yet (None)."""
    while len(runs) >= 2 and len(runs[-2]) <= MERGE_RATIO * len(runs[-1]):
        runs, files = [*runs[:-2], merge(runs[-2:])], [*files[:-2], None]
    return runs, files


# ---- files and the executor's cache ------------------------------------------------------

_CACHE: OrderedDict[str, Any] = OrderedDict()  # Run or rows.RowRun, by path


def publish(path: str, table: pa.Table, run: Any) -> str:
    """Write `table` as `<path stem>-<crc32 of the file>.arrow`, atomically; its name. A
    retried task writes the same contents under the same name; a checkpoint's files are
    verified against their names (`Manifest.readable`)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with pa.OSFile(tmp, "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    final = f"{path.removesuffix('.arrow')}-{_crc(tmp):08x}.arrow"
    os.replace(tmp, final)
    remember(final, run)
    return os.path.basename(final)


def _crc(path: str) -> int:
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            crc = zlib.crc32(chunk, crc)
    return crc


def write_run(path: str, run: Run, names: Sequence[str]) -> str:
    """Write atomically; the file's name (`publish`)."""
    table = pa.table({KEY: run.keys, **{n: v for n, v in zip(names, run.values, strict=True)}})
    if run.labels is not None:
        for i, column in enumerate(run.labels.columns):
            table = table.append_column(f"{LABEL}{i}", column)
    return publish(path, table, run)


def task_input(batches: Iterable[pa.RecordBatch]) -> tuple[pa.Table, int] | None:
    """A key partition task's rows and its partition (Spark's partition id), None if it got
    no rows (its partition's state stays as it is)."""
    from pyspark import TaskContext

    got = [b for b in batches if b.num_rows]
    if not got:
        return None
    return pa.Table.from_batches(got), TaskContext.get().partitionId()


def cached(path: str) -> Any:
    """The run this worker read or wrote at `path`, if it still holds it."""
    run = _CACHE.get(path)
    if run is not None:
        _CACHE.move_to_end(path)
    return run


def read_run(path: str) -> Run:
    run = cached(path)
    if isinstance(run, Run):
        return run
    with pa.memory_map(path) as source:
        table = ipc.open_file(source).read_all()
    values = [i for i, n in enumerate(table.column_names[1:], 1) if not n.startswith(LABEL)]
    labelled = [i for i, n in enumerate(table.column_names) if n.startswith(LABEL)]
    run = Run(table.column(0).to_numpy(), tuple(table.column(i).to_numpy() for i in values),
              table.select(labelled) if labelled else None)
    remember(path, run)
    return run


def remember(path: str, run: Any) -> None:
    _CACHE[path] = run
    _CACHE.move_to_end(path)
    while len(_CACHE) > CACHE_RUNS:
        _CACHE.popitem(last=False)


@dataclass
class Manifest:
    """Which run files make up each partition of each of a dataflow's stateful operators
    (`op`: its runs live in `directory/op`), at `version`: the dataflow's checkpoint."""

    directory: str
    partitions: int
    ops: tuple[str, ...]
    version: int = 0
    runs: dict[str, dict[int, list[str]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for op in self.ops:
            self.runs.setdefault(op, {})
            os.makedirs(os.path.join(self.directory, op), exist_ok=True)

    def record(self, op: str, partition: int, files: Sequence[str]) -> None:
        """A task's report of the runs it left (applied once its job succeeded)."""
        self.runs[op][partition] = list(files)

    def save(self) -> None:
        """The checkpoint, atomically, then the run files no partition lists any more."""
        path = os.path.join(self.directory, "manifest.json")
        with open(path + ".tmp", "w") as f:
            json.dump({"version": self.version, "partitions": self.partitions,
                       "runs": {op: {str(p): r for p, r in parts.items()} for op, parts in self.runs.items()}}, f)
        os.replace(path + ".tmp", path)
        for op, parts in self.runs.items():
            keep = {n for files in parts.values() for n in files}
            for name in os.listdir(os.path.join(self.directory, op)):
                if name not in keep:
                    try:
                        os.remove(os.path.join(self.directory, op, name))
                    except OSError:
                        pass

    @classmethod
    def load(cls, directory: str) -> Manifest | None:
        """The last checkpoint, or None if there is none or a run it names is missing (then
        the state is rebuilt from the inputs, never trusted)."""
        try:
            with open(os.path.join(directory, "manifest.json")) as f:
                doc = json.load(f)
            runs = {op: {int(p): list(files) for p, files in parts.items()} for op, parts in doc["runs"].items()}
        except (OSError, ValueError, KeyError, AttributeError):
            return None
        if not all(os.path.exists(os.path.join(directory, op, n))
                   for op, parts in runs.items() for files in parts.values() for n in files):
            return None
        return cls(directory, int(doc["partitions"]), tuple(runs), int(doc["version"]), runs)

    def readable(self) -> bool:
        """Every run file has the checksum its name says (a checkpoint is never trusted blindly)."""
        for op, parts in self.runs.items():
            for files in parts.values():
                for n in files:
                    try:
                        if f"{_crc(os.path.join(self.directory, op, n)):08x}" != n.removesuffix(".arrow")[-8:]:
                            return False
                    except OSError:
                        return False
        return True

    def sizes(self) -> dict[str, list[tuple[int, int, int, int]]]:
        """Per op, per partition: (partition, records, runs, bytes), read from the run files'
        footers (memory-mapped) once per version; a file removed meanwhile counts nothing."""
        memo = getattr(self, "_sizes", None)
        if memo is not None and memo[0] == self.version:
            return memo[1]
        version, out = self.version, {}
        for op, parts in list(self.runs.items()):
            rows = []
            for p, files in sorted(dict(parts).items()):
                records = size = 0
                for n in files:
                    path = os.path.join(self.directory, op, n)
                    try:
                        with pa.memory_map(path) as source:
                            reader = ipc.open_file(source)
                            records += sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
                        size += os.path.getsize(path)
                    except OSError:
                        continue
                rows.append((p, records, len(files), size))
            out[op] = rows
        self._sizes = (version, out)
        return out

    def state_bytes(self) -> dict[str, int]:
        return {op: sum(os.path.getsize(os.path.join(self.directory, op, n))
                        for files in parts.values() for n in files) for op, parts in self.runs.items()}


def apply_changes(manifest_runs: Sequence[str], directory: str, partition: int, version: int | str,
                  names: Sequence[str], keys: np.ndarray,
                  deltas: Sequence[np.ndarray]) -> tuple[np.ndarray, tuple[np.ndarray, ...],
                                                         tuple[np.ndarray, ...], list[str]]:
    """One partition's tick: the touched keys, their accumulators before and after, and the
    run files the partition is made of afterwards (the new ones written)."""
    (step,), files = apply_times(manifest_runs, directory, partition, version, names,
                                 np.zeros(len(keys), np.int64), keys, deltas)
    return step.delta.keys, step.before, step.after, files


@dataclass(frozen=True)
class Step:
    """What one time did to the touched keys of a partition."""

    time: int
    delta: Run
    before: tuple[np.ndarray, ...]
    after: tuple[np.ndarray, ...]


def apply_times(manifest_runs: Sequence[str], directory: str, partition: int, version: int | str,
                names: Sequence[str], times: np.ndarray, keys: np.ndarray, deltas: Sequence[np.ndarray],
                labels: pa.Table | None = None) -> tuple[list[Step], list[str]]:
    """Updates at several times applied in time order (each time sees the ones before it);
    one run is written for them all, named by `version`, which no other contents may ever
    have had (executors cache runs by path)."""
    runs = [read_run(os.path.join(directory, n)) for n in manifest_runs]
    steps: list[Step] = []
    pending: Run | None = None
    for t in np.unique(times):
        at = times == t
        delta = accumulate(keys[at], [d[at] for d in deltas], labels.filter(at) if labels is not None else None)
        before = lookup([*runs, *([pending] if pending is not None else [])], delta.keys, len(names),
                        delta.labels)
        steps.append(Step(int(t), delta, before, tuple(b + d for b, d in zip(before, delta.values, strict=True))))
        pending = delta if pending is None else merged([pending, delta])
    if pending is None or not len(pending):
        return steps, list(manifest_runs)
    runs, files = compacted([*runs, pending], [*manifest_runs, None], merged)
    files[-1] = write_run(os.path.join(directory, f"p{partition}-v{version}.arrow"), runs[-1], names)
    return steps, [f for f in files if f is not None]


# ---- arrangements: rows by key, several per key, each with its weight ----------------------
# A run of an arrangement is a Run whose keys repeat and whose last value column is the
# rows' weights; the other value columns are the rows.


def consolidated_rows(keys: np.ndarray, values: Sequence[np.ndarray]) -> Run:
    """Rows sorted by key then columns, identical rows' weights summed, zero weights dropped."""
    *columns, weights = values
    if len(keys) == 0:
        return Run(np.empty(0, np.int64), tuple(np.empty(0, np.int64) for _ in values))
    order = np.lexsort((*reversed(columns), keys))
    keys, columns, weights = keys[order], [c[order] for c in columns], weights[order]
    first = np.empty(len(keys), bool)
    first[0] = True
    first[1:] = keys[1:] != keys[:-1]
    for c in columns:
        first[1:] |= c[1:] != c[:-1]
    starts = np.flatnonzero(first)
    sums = np.add.reduceat(weights, starts)
    live = sums != 0
    return Run(keys[starts][live], (*(c[starts][live] for c in columns), sums[live]))


def matches(runs: Iterable[Run], keys: np.ndarray) -> list[tuple[np.ndarray, Run, np.ndarray]]:
    """Every (index into `keys`, run, index into the run) whose keys are equal: the rows of
    an arrangement an equi-join's delta meets, found by binary search (never a scan)."""
    out = []
    for run in runs:
        if not len(run):
            continue
        lo = np.searchsorted(run.keys, keys, "left")
        count = np.searchsorted(run.keys, keys, "right") - lo
        total = int(count.sum())
        if not total:
            continue
        ends = np.cumsum(count)
        at = np.repeat(lo - (ends - count), count) + np.arange(total)
        out.append((np.repeat(np.arange(len(keys)), count), run, at))
    return out


def merged_rows(runs: Sequence[Run]) -> Run:
    width = len(runs[0].values)
    return consolidated_rows(np.concatenate([r.keys for r in runs]),
                             [np.concatenate([r.values[i] for r in runs]) for i in range(width)])


def arrange(runs: list[Run], files: Sequence[str], delta: Run, directory: str, name: str,
            names: Sequence[str]) -> tuple[list[Run], list[str]]:
    """The arrangement with `delta` applied: its runs and their files (the new one written)."""
    if not len(delta):
        return runs, list(files)
    runs, out = compacted([*runs, delta], [*files, None], merged_rows)
    out[-1] = write_run(os.path.join(directory, name), runs[-1], names)
    return runs, [f for f in out if f is not None]
