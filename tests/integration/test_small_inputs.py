"""Small inputs (weir.compute.replica.small_inputs) read with pyarrow must be exactly what
Spark reads from the same Parquet files: every stored type, retractions, multiplicities,
NULLs, rows past the as_of, on a real local[1] SparkSession over a real Iceberg shard."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.integration.test_spark_plan import start_session
from weir.compute.replica import dataflow_io as io
from weir.compute.replica import small_inputs
from weir.storage.persist import ShardStore
from weir.types import parse_type

TYPES = ["integer", "bigint", "smallint", "numeric(10,2)", "numeric", "text", "boolean", "date", "timestamp",
         "timestamp with time zone", "interval", "integer[]", "text[]", "jsonb", "bytea", "uuid",
         "double precision", "real", "integer[][]"]
COLUMNS = [(f"c {i}" if i % 5 == 0 else f"c{i}", parse_type(t), True) for i, t in enumerate(TYPES)]


def _row(i: int) -> list[Any]:
    iv = {"months": i, "days": -i, "micros": 1_500_000 * i}
    return [i, 2**40 + i, i % 100, decimal.Decimal(f"{i}.25"), decimal.Decimal(f"-{i}.0000000001"),
            f"text, \"{i}\" \\ ", i % 2 == 0, dt.date(2024, 1, 1) + dt.timedelta(days=i),
            dt.datetime(2024, 1, 1, 12) + dt.timedelta(seconds=i), dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
            iv, [i, None, -i], ["", None, "a,b"], '{"k": [1, null]}', bytes([0, i % 256, 255]),
            f"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a{i:02d}", i / 3, float(i) / 7, [[i, i + 1], [None, 0]]]


def _updates(rows: list[tuple[list[Any] | None, int, int]]) -> pa.Table:
    """(values or None for all NULL, time, diff) -> the shard's updates in caller types."""
    cols = {}
    for k, (name, t, _) in enumerate(COLUMNS):
        cols[name] = pa.array([None if v is None else v[k] for v, _, _ in rows], type=t.arrow)
    cols["mz_timestamp"] = pa.array([t for _, t, _ in rows], pa.int64())
    cols["mz_diff"] = pa.array([d for _, _, d in rows], pa.int64())
    return pa.table(cols)


@pytest.fixture(scope="module")
def spark(java: None) -> Iterator[Any]:
    yield start_session()


def _rows(df: Any) -> list[str]:
    return sorted(repr(r) for r in df.collect())


def test_small_inputs_read_as_spark_reads_them(spark: Any, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    shard = ShardStore(f"sqlite:///{tmp_path}/catalog.db", str(tmp_path / "warehouse")).create_shard(
        "u1", COLUMNS)
    shard.compare_and_append(_updates([(_row(1), 1, 1), (_row(2), 1, 3), (None, 1, 2), (_row(3), 1, 1)]), 0, 2, 0)
    shard.compare_and_append(_updates([(_row(2), 2, -1), (_row(3), 3, -1), (_row(4), 3, 1), (None, 3, -1)]), 2, 4, 0)
    shard.compare_and_append(_updates([(_row(5), 5, 1)]), 4, 6, 0)
    files = io.Planner(shard).plan(6).files
    assert len(files) == 3
    for as_of in (1, 2, 3, 5):
        small = small_inputs.small_contents(spark, files, COLUMNS, as_of)
        assert small is not None
        monkeypatch.setattr(small_inputs, "SMALL_INPUT_RECORDS", 0)  # the same read, by Spark
        scanned = io.contents_view(spark, files, COLUMNS, as_of)
        monkeypatch.undo()
        assert small.schema == scanned.schema
        got, want = _rows(small), _rows(scanned)
        assert got == want, (as_of, got, want)
    # as of 3: row 1 once, row 2 twice, NULLs once, row 4 once (row 3 retracted, 5 not yet)
    assert len(_rows(small_inputs.small_contents(spark, files, COLUMNS, 3))) == 5
    # nothing at the time: Spark scans it (local rows of none would let the plan fold away)
    assert small_inputs.small_contents(spark, files, COLUMNS, 0) is None


def test_large_or_remote_inputs_are_left_to_spark(spark: Any, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    shard = ShardStore(f"sqlite:///{tmp_path}/catalog.db", str(tmp_path / "warehouse")).create_shard(
        "u2", COLUMNS[:1])
    shard.compare_and_append(pa.table({"c 0": pa.array(range(20), pa.int32()),
                                       "mz_timestamp": pa.array([1] * 20, pa.int64()),
                                       "mz_diff": pa.array([1] * 20, pa.int64())}), 0, 2, 0)
    files = io.Planner(shard).plan(2).files
    assert small_inputs.small_contents(spark, files, COLUMNS[:1], 1).count() == 20
    # unconsolidated (an insert-only input, every update +1): every stored row as of the time
    assert small_inputs.small_contents(spark, files, COLUMNS[:1], 1, consolidated=False).count() == 20
    monkeypatch.setattr(small_inputs, "SMALL_INPUT_RECORDS", 19)
    assert small_inputs.small_contents(spark, files, COLUMNS[:1], 1) is None
    monkeypatch.undo()
    assert small_inputs.small_contents(spark, ["s3://bucket/x.parquet"], COLUMNS[:1], 1) is None
    assert small_inputs.small_contents(spark, [], COLUMNS[:1], 1) is None
