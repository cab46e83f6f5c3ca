"""Arrangements of rows of any (flat) Arrow type by a join key's hash, kept on executors.

An arrangement of one key partition is a short list of runs: Arrow IPC files of a
`key` column (int64 hash of the join key, sorted), the rows' columns, and `__weight`
(identical rows' weights summed, zeros dropped). A tick's changes become one new run and
runs of similar size merge (the geometric LSM of weir.compute.replica.incremental.runs,
whose executor cache and file naming rules apply: a path never changes its contents).
Meeting a delta is a binary search per run (`runs.matches`), never a scan; a hash
collision only costs a comparison of the real key columns, which the join does.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from weir.compute.replica.incremental import runs

WEIGHT = "__weight"


@dataclass(frozen=True)
class RowRun:
    """Rows sorted by `keys` (their key's hash), one per distinct row, with their weights."""

    keys: np.ndarray
    rows: pa.Table  # the row's columns, then WEIGHT

    def __len__(self) -> int:
        return len(self.keys)

    def weights(self) -> np.ndarray:
        return self.rows.column(WEIGHT).to_numpy()


def consolidated(keys: np.ndarray, rows: pa.Table, weights: np.ndarray) -> RowRun:
    """Identical (key, row)s' weights summed, zeros dropped, sorted by key."""
    table = rows.append_column(runs.KEY, pa.array(keys, pa.int64())).append_column(
        WEIGHT, pa.array(weights, pa.int64()))
    if table.num_rows == 0:
        return RowRun(np.empty(0, np.int64), table.drop_columns([runs.KEY]))
    names = [runs.KEY, *rows.column_names]
    grouped = table.group_by(names, use_threads=False).aggregate([(WEIGHT, "sum")])
    grouped = grouped.filter(pc.not_equal(grouped.column(f"{WEIGHT}_sum"), 0))
    grouped = grouped.sort_by(runs.KEY)
    out = grouped.select(rows.column_names).append_column(WEIGHT, grouped.column(f"{WEIGHT}_sum"))
    return RowRun(grouped.column(runs.KEY).to_numpy(), out.combine_chunks())


def merged(parts: Sequence[RowRun]) -> RowRun:
    rows = pa.concat_tables([p.rows for p in parts])
    return consolidated(np.concatenate([p.keys for p in parts]), rows.drop_columns([WEIGHT]),
                        rows.column(WEIGHT).to_numpy())


def write(path: str, run: RowRun) -> str:
    """Atomically, then kept in this worker's cache; the file's name (runs.publish)."""
    return runs.publish(path, run.rows.add_column(0, runs.KEY, pa.array(run.keys, pa.int64())), run)


def read(path: str) -> RowRun:
    run = runs.cached(path)
    if isinstance(run, RowRun):
        return run
    with pa.memory_map(path) as source:
        table = ipc.open_file(source).read_all()
    run = RowRun(table.column(0).to_numpy(), table.drop_columns([runs.KEY]))
    runs.remember(path, run)
    return run


def arrange(current: list[RowRun], files: Sequence[str], delta: RowRun, directory: str,
            name: str) -> tuple[list[RowRun], list[str]]:
    """The arrangement with `delta` applied: its runs and their files (the new one written)."""
    if not len(delta):
        return current, list(files)
    out_runs, out = runs.compacted([*current, delta], [*files, None], merged)
    out[-1] = write(os.path.join(directory, name), out_runs[-1])
    return out_runs, [f for f in out if f is not None]
