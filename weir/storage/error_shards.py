"""The errors collection of a materialized view: its query's runtime errors as data.

As in Materialize, a dataflow carries two collections: its output and its errors.
A view whose query fails on some input (division by zero, a failed cast ...)
records that error at the time it occurs in a second shard next to its output,
and retracts it at the time the input no longer causes it. A read of the view
at time t fails with the errors the collection holds at t.

The errors shard is written by the replicas, like the output, and only when its
contents change: each change of [lower, upper) is appended *before* the output's
append of that interval, so once the output's upper passes t every error at or
before t is durable (the errors shard's own upper may trail the output's; it is
not a read frontier).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa

from weir.errors import WeirError
from weir.types import TEXT

# (name, type, nullable), the shard's columns (plus mz_timestamp, mz_diff).
ERROR_COLUMNS = [("sqlstate", TEXT, False), ("message", TEXT, False), ("detail", TEXT, True),
                 ("hint", TEXT, True)]
ERROR_NAMES = [c[0] for c in ERROR_COLUMNS]
SUFFIX = "_errors"

ErrorRow = tuple[str, str, "str | None", "str | None"]


def errors_shard_id(shard_id: str) -> str:
    """The errors shard of the collection `shard_id` (a materialized view's output)."""
    return shard_id + SUFFIX


def is_errors_shard(shard_id: str) -> bool:
    return shard_id.endswith(SUFFIX)


def error_row(err: WeirError) -> ErrorRow:
    return (err.sqlstate, err.message, err.detail, err.hint)


def row_error(row: tuple[Any, ...]) -> WeirError:
    return WeirError(str(row[0]), str(row[1]), detail=row[2], hint=row[3])


def updates_table(changes: list[tuple[ErrorRow, int, int]]) -> pa.Table:
    """(row, time, diff) -> the updates to append, named like the shard's columns."""
    cols = list(zip(*[r for r, _, _ in changes], strict=True)) if changes else [[] for _ in ERROR_NAMES]
    data = {n: pa.array(list(c), pa.string()) for n, c in zip(ERROR_NAMES, cols, strict=True)}
    data["mz_timestamp"] = pa.array([t for _, t, _ in changes], pa.int64())
    data["mz_diff"] = pa.array([d for _, _, d in changes], pa.int64())
    return pa.table(data)


def updates_of(table: pa.Table) -> list[tuple[ErrorRow, int, int]]:
    """A shard's updates (read_updates) as (row, time, diff)."""
    if table.num_rows == 0:
        return []
    cols = [table.column(n).to_pylist() for n in ERROR_NAMES]
    times = table.column("mz_timestamp").to_pylist()
    diffs = table.column("mz_diff").to_pylist()
    return [(tuple(r), t, d) for r, t, d in zip(zip(*cols, strict=True), times, diffs, strict=True)]  # type: ignore[misc]


def contents(updates: list[tuple[ErrorRow, int, int]], as_of: int | None = None) -> Counter[ErrorRow]:
    """The errors at `as_of` (all of them if None), zero counts dropped."""
    out: Counter[ErrorRow] = Counter()
    for row, t, d in updates:
        if as_of is None or t <= as_of:
            out[row] += d
    return Counter({r: n for r, n in out.items() if n})


def first_error(errors: Counter[ErrorRow]) -> WeirError | None:
    """The error a read reports when the collection holds some (the least, for determinism)."""
    live = sorted((r for r, n in errors.items() if n > 0), key=repr)
    return row_error(live[0]) if live else None
