"""Consolidating updates with pyarrow: sum `mz_diff` per distinct row.

Arrow's hash group-by cannot key on nested types (lists, structs, maps), so
those columns are grouped on a serialized copy; Arrow groups nulls together,
which is the SQL "not distinct" equality consolidation needs.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from weir.storage.schema import DIFF_COL


def _groupable(t: pa.DataType) -> bool:
    return not (pa.types.is_nested(t) or pa.types.is_dictionary(t) or pa.types.is_null(t))


def _key_array(col: pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
    if _groupable(col.type):
        return col
    # repr of the Python value is deterministic for the scalar types weir stores.
    return pa.array([None if v is None else repr(v) for v in col.to_pylist()], type=pa.string())


def consolidate(data: pa.Table, key_cols: list[str], *, keep_negative: bool = True) -> pa.Table:
    """One row per distinct `key_cols` value with its summed diff (zero sums dropped).

    Other columns of `data` are taken from the first occurrence of each key; with
    `keep_negative=False` rows whose sum is negative are dropped too (a snapshot).
    Output keeps the order in which keys first appear.
    """
    n = data.num_rows
    if n == 0:
        return data
    parts: dict[str, pa.ChunkedArray | pa.Array] = {
        f"k{i}": _key_array(data[c]) for i, c in enumerate(key_cols)
    }
    parts["__idx"] = pa.array(np.arange(n, dtype=np.int64))
    parts["__diff"] = data[DIFF_COL]
    tmp = pa.table(parts)
    keys = [f"k{i}" for i in range(len(key_cols))]
    if keys:
        g = tmp.group_by(keys, use_threads=False).aggregate([("__idx", "min"), ("__diff", "sum")])
        idx, sums = g["__idx_min"], g["__diff_sum"]
    else:
        idx = pa.chunked_array([pa.array([0], pa.int64())])
        sums = pa.chunked_array([pa.array([pc.sum(data[DIFF_COL]).as_py() or 0], pa.int64())])
    mask = pc.greater(sums, 0) if not keep_negative else pc.not_equal(sums, 0)
    idx = pc.filter(idx, mask)
    sums = pc.filter(sums, mask)
    order = pc.sort_indices(idx)
    idx = pc.take(idx, order)
    sums = pc.take(sums, order)
    out = data.take(idx)
    pos = out.schema.get_field_index(DIFF_COL)
    return out.set_column(pos, out.schema.field(DIFF_COL), sums.cast(pa.int64()))


def consolidate_retractions(data: pa.Table, key_cols: list[str]) -> pa.Table:
    """Cancel retractions against their insertions, leaving rows nothing retracts as they are.

    Compaction needs no more: a reader sums identical rows anyway, and grouping every
    row on every column is most of a rewrite's cost. Only rows that share the first
    groupable key column's value with some retraction can cancel, so only those go
    through `consolidate`; an insert-only batch (statement history) costs no grouping.
    """
    diffs = data[DIFF_COL]
    if data.num_rows == 0 or pc.min(diffs).as_py() > 0:
        return data
    col = next((c for c in key_cols if _groupable(data.schema.field(c).type)), None)
    if col is None:
        return consolidate(data, key_cols)
    retracted = pc.unique(data[col].filter(pc.less(diffs, 0)))
    candidate = pc.is_in(data[col], value_set=retracted, skip_nulls=False)  # a null matches a null
    rest = data.filter(pc.invert(candidate))
    return pa.concat_tables([rest, consolidate(data.filter(candidate), key_cols)])


def expand(data: pa.Table) -> pa.Table:
    """Repeat each row by its (positive) diff and drop the diff column."""
    if data.num_rows == 0:
        return data.drop_columns([DIFF_COL])
    counts = data[DIFF_COL].to_numpy()
    idx = np.repeat(np.arange(data.num_rows, dtype=np.int64), np.maximum(counts, 0))
    return data.drop_columns([DIFF_COL]).take(pa.array(idx))
