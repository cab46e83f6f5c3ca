"""Shared plumbing for the load generators: relation schemas, deterministic random
streams and building Arrow update batches.

Every generator derives each random choice from `(seed, stream, keys...)` instead of
carrying one long-lived RNG, so its progress is a handful of integers (JSON-friendly,
cheap to persist) and any tick can be regenerated exactly, e.g. to retract an old
row version or to resume after a restart.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyarrow as pa

from weir.types import PgType

Column = tuple[str, PgType, bool]  # (name, type, nullable), as the storage controller takes them
Relation = tuple[str, list[Column]]
Row = tuple[Any, ...]
# Rows and their diffs for one relation. Values are in "wire-cheap" form: decimals as
# unscaled ints (cents for numeric(_, 2)), dates as days and timestamps as microseconds
# since the Unix epoch; `to_table` turns them into the relation's Arrow types.
Batch = tuple[list[Row], list[int]]

DIFF_COL = "mz_diff"
_MASK = (1 << 64) - 1


def _splitmix(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def mix(*parts: int) -> int:
    """A 64-bit hash of integers, stable across processes (unlike `hash`)."""
    h = 0x5EED
    for p in parts:
        h = _splitmix(h ^ (p & _MASK))
    return h


def rng(*parts: int) -> random.Random:
    """An independent random stream named by integers (seed, stream id, keys...)."""
    return random.Random(mix(*parts))


def empty_batch() -> Batch:
    return [], []


def _decimal_array(values: list[Any], t: pa.Decimal128Type) -> pa.Array:
    """A decimal128 array from unscaled ints, without a Python Decimal per value."""
    unscaled = np.asarray(values, dtype=np.int64)
    words = np.empty(len(unscaled) * 2, dtype=np.int64)
    words[0::2] = unscaled
    words[1::2] = unscaled >> 63  # sign-extend to 128 bits (little-endian)
    return pa.Array.from_buffers(t, len(unscaled), [None, pa.py_buffer(words.tobytes())])


def to_table(columns: list[Column], batch: Batch) -> pa.Table:
    """The relation's data columns (in order, typed per `PgType.arrow`) plus mz_diff."""
    rows, diffs = batch
    arrays: list[pa.Array] = []
    by_column = list(zip(*rows, strict=True)) if rows else [() for _ in columns]
    for (_, t, _), values in zip(columns, by_column, strict=True):
        if pa.types.is_decimal(t.arrow):
            arrays.append(_decimal_array(list(values), t.arrow))
        else:
            arrays.append(pa.array(list(values), type=t.arrow))
    arrays.append(pa.array(diffs, type=pa.int64()))
    return pa.Table.from_arrays(arrays, names=[c[0] for c in columns] + [DIFF_COL])
