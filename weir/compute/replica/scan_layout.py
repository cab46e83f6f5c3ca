"""How many rows each file scan of a running Spark job will produce, per partition: the
exact denominators of hydration progress (issue 13 part 5).

A dataflow reads its inputs' Parquet files. Iceberg's statistics say how many rows each
file holds; Spark's scan splits the files into partitions (`FilePartition`s of whole files
or byte ranges). Once a job that reads a scan has started, the scan's input RDD exists and
its partitions can be asked for without side effects (asking earlier would build it outside
the job's execution, losing the driver metrics Spark posts then). A byte range of a file
holds the row groups whose midpoint falls in it, Parquet's own rule for splits, read from the
file's footer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

log = logging.getLogger(__name__)


@dataclass
class FileScan:
    """A FileSourceScanExec of a job's plan."""

    plan_id: int  # SparkPlan.id: its RDDs carry the scope `spark_plan_<plan_id>`
    rows_accumulator: int  # its "number of output rows" SQL metric
    jvm: Any  # the JVM node

    @property
    def scope(self) -> str:
        return f"spark_plan_{self.plan_id}"


def file_scans(query_execution: Any) -> list[FileScan]:
    """The file scans of a query's executed plan, cached plans included (walking the plan
    builds nothing)."""
    out: list[FileScan] = []
    stack = [query_execution.executedPlan()]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        plan_id = int(node.id())
        if plan_id in seen:
            continue
        seen.add(plan_id)
        kind = str(node.getClass().getSimpleName())
        if kind == "FileSourceScanExec":
            out.append(FileScan(plan_id, int(node.metrics().apply("numOutputRows").id()), node))
        elif kind == "InMemoryTableScanExec":
            stack.append(node.relation().cachedPlan())
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return out


def local_file(path: str) -> str:
    parsed = urlparse(path)
    return unquote(parsed.path) if parsed.scheme in ("file", "") else path


def split_rows(path: str, start: int, length: int) -> int:
    """Rows of the file's row groups whose midpoint lies in [start, start + length)."""
    import pyarrow.parquet as pq

    meta = pq.read_metadata(path)
    rows = 0
    for i in range(meta.num_row_groups):
        rg = meta.row_group(i)
        cols = [rg.column(c) for c in range(rg.num_columns)]
        if not cols:
            continue
        first = min(c.dictionary_page_offset if c.has_dictionary_page and c.dictionary_page_offset
                    else c.data_page_offset for c in cols)
        mid = first + sum(c.total_compressed_size for c in cols) / 2
        if start <= mid < start + length:
            rows += rg.num_rows
    return rows


def partition_rows(scan: FileScan, record_counts: Callable[[], Mapping[str, int]]) -> list[int] | None:
    """Rows the scan will produce in each of its partitions (None if a file is unknown)."""
    counts: Mapping[str, int] | None = None
    out: list[int] = []
    parts = scan.jvm.inputRDD().partitions()
    for i in range(len(parts)):
        files = parts[i].files()
        rows = 0
        for j in range(len(files)):
            f = files[j]
            path = local_file(str(f.filePath().toString()))
            start, length, size = int(f.start()), int(f.length()), int(f.fileSize())
            if start == 0 and length >= size:
                if counts is None:
                    counts = record_counts()
                n = counts.get(path)
                if n is None:
                    return None
                rows += n
            else:
                rows += split_rows(path, start, length)
        out.append(rows)
    return out
