"""Small inputs read with pyarrow and handed to Spark as in-memory rows.

Reading a shard through Spark costs the same few hundred milliseconds whatever its size:
a Parquet scan (file listing, a stage of its own), then consolidation (an aggregate over
every column and its exchange). A query over a dimension table of a hundred rows pays it
for every input it reads, at every peek and every dataflow step. Below
`SMALL_INPUT_RECORDS` stored updates the replica reads the files itself (they are local
and immutable), consolidates them as the storage layer does, and binds the rows as a
DataFrame from Arrow: measured on a batch of 16 generated queries over five small tables,
a SELECT took 1.3 s instead of 2.6 s, and the same as a materialized view was readable
4.1 s after its CREATE began instead of 7.1 s (README, "Small inputs").

Spark makes the rows a local relation (LocalTableScan in plans and introspection), which
its optimizer may fold with what is above it (a filter over them is evaluated while
planning), so a dataflow's plan over small inputs can depend on their contents: its plan
node ids, pinned when it is created (weir.compute.replica.plan_ids), tolerate that (a
pinned node a run does not have is hydrated with the dataflow). Inputs without rows (no
files, as when a query is analysed, or none at the time: the plan must not fold away),
with files elsewhere than the local filesystem (an object store), or of a type Arrow
cannot hand to Spark, are read by Spark as before.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from weir.storage.consolidate import consolidate, expand
from weir.storage.maintenance import local_path
from weir.storage.schema import DIFF_COL, TIME_COL, Column, from_storage, physical_name

log = logging.getLogger(__name__)

SMALL_INPUT_RECORDS = 10_000  # stored updates (rows of the input's data files), not rows
# a replica size's Spark setting that changes it (0: Spark reads every input), for the
# process's one engine (bench/small_inputs.py compares two clusters of one server)
SMALL_INPUTS_CONF = "spark.weir.smallInputRecords"


def configure_small_inputs(value: str | None) -> None:
    global SMALL_INPUT_RECORDS
    if value is not None:
        SMALL_INPUT_RECORDS = int(value)


@functools.lru_cache(maxsize=65536)
def _records(path: str) -> int:
    """Rows of a data file, from its footer (files are immutable: cached by path)."""
    return pq.read_metadata(path).num_rows


def _local(path: str) -> str | None:
    return local_path(path) if "://" not in path or path.startswith("file://") else None


def small_contents(session: Any, files: Sequence[str], columns: Sequence[Column], as_of: int,
                   consolidated: bool = True) -> Any | None:
    """The input at `as_of` as plain rows (each repeated by its count) in the types queries
    see, or None when it is not small (or cannot be read here): Spark reads it then."""
    paths = [_local(str(f)) for f in files]
    if not columns or not paths or any(p is None for p in paths) or SMALL_INPUT_RECORDS <= 0:
        return None
    try:
        if sum(_records(p) for p in paths if p is not None) > SMALL_INPUT_RECORDS:
            return None
        names = [n for n, _, _ in columns]
        read = [*(physical_name(n) for n in names), TIME_COL, DIFF_COL]
        raw = pa.concat_tables([pq.read_table(p, columns=read) for p in paths if p is not None])
        raw = raw.filter(pc.less_equal(raw[TIME_COL], as_of)).drop_columns([TIME_COL])
        raw = raw.rename_columns([*names, DIFF_COL])
        if consolidated:
            raw = consolidate(raw, names, keep_negative=False)
        rows = expand(from_storage(raw, list(columns)))
        if rows.num_rows == 0:
            return None  # Spark scans it: a local relation without rows folds the query away
        # positional names: a column may be named anything, Arrow's field names are Spark's
        df = session.createDataFrame(rows.rename_columns([f"__s{i}" for i in range(len(names))]))
    except (OSError, pa.ArrowException, TypeError, ValueError) as e:
        log.info("input of %d files read by Spark: %s", len(paths), e)
        return None
    return df.selectExpr(*[f"CAST(`__s{i}` AS {t.spark_ddl}) AS `{n.replace('`', '``')}`"
                           for i, (n, t, _) in enumerate(columns)])
