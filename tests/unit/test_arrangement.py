"""Arrangements and fast-path evaluation (pure pyarrow, no Spark)."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest

from weir.compute.replica.arrangement import RETAIN_MS, Arrangement, FastPath, NotFastPath

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string()), ("amount", pa.decimal128(10, 2))])


def _updates(rows: list[tuple], times: list[int], diffs: list[int]) -> pa.Table:
    cols = list(zip(*rows, strict=True))
    arrays = [pa.array(c, type=f.type) for c, f in zip(cols, SCHEMA, strict=True)]
    return pa.Table.from_arrays(arrays + [pa.array(times, pa.int64()), pa.array(diffs, pa.int64())],
                                names=[*SCHEMA.names, "mz_timestamp", "mz_diff"])


def _snapshot(rows: list[tuple], counts: list[int]) -> pa.Table:
    return _updates(rows, [0] * len(rows), counts).drop_columns(["mz_timestamp"])


D = decimal.Decimal


@pytest.fixture
def arr() -> Arrangement:
    a = Arrangement(SCHEMA, [0])
    a.load(_snapshot([(1, "a", D("1.50")), (2, "b", D("2.50")), (3, None, None)], [1, 2, 1]), 100)
    return a


def test_load_and_lookup(arr: Arrangement) -> None:
    assert arr.hydrated and arr.upper == 101 and arr.records == 3
    assert arr.rows_at(100, [(2,)]) == [(2, "b", D("2.50"))] * 2
    assert arr.rows_at(100, [(9,)]) == []
    assert sorted(arr.rows_at(100, None), key=str) == sorted(
        [(1, "a", D("1.50")), (2, "b", D("2.50")), (2, "b", D("2.50")), (3, None, None)], key=str)


def test_updates_and_rewind(arr: Arrangement) -> None:
    arr.apply(_updates([(2, "b", D("2.50")), (4, "d", D("4.00"))], [105, 107], [-1, 1]), 110)
    assert arr.upper == 110
    assert arr.rows_at(109, [(2,)]) == [(2, "b", D("2.50"))]
    assert arr.rows_at(109, [(4,)]) == [(4, "d", D("4.00"))]
    # reading an earlier retained time rewinds the later updates
    assert arr.rows_at(106, [(4,)]) == []
    assert arr.rows_at(104, [(2,)]) == [(2, "b", D("2.50"))] * 2
    with pytest.raises(NotFastPath):
        arr.rows_at(110, None)  # not complete yet
    arr.apply(_updates([(4, "d", D("4.00"))], [108], [-1]), 111)
    assert arr.rows_at(110, [(4,)]) == [] and arr.records == 3


def test_history_is_bounded(arr: Arrangement) -> None:
    arr.apply(_updates([(5, "e", D("5.00"))], [200], [1]), 201)
    arr.advance(200 + RETAIN_MS + 10)
    assert not arr.history
    with pytest.raises(NotFastPath):
        arr.rows_at(150, None)  # compacted away
    assert arr.wait_for(200 + RETAIN_MS, 0.01)
    assert not arr.wait_for(10**15, 0.01)


def test_history_is_kept_from_the_since(arr: Arrangement) -> None:
    """A held index (AllowCompaction at the hold's time) answers reads from there on, however
    far behind its upper, and reports what that costs; advancing the since frees it."""
    arr.allow_compaction(100)
    arr.apply(_updates([(5, "e", D("5.00"))], [200], [1]), 201)
    arr.apply(_updates([(5, "e", D("5.00")), (1, "a", D("1.50"))], [300, 300], [-1, -1]), 301)
    arr.advance(300 + 5 * RETAIN_MS)
    assert len(arr.history) == 3 and arr.history_bytes > 0 and arr.held_bytes() == arr.history_bytes
    assert arr.rows_at(100, [(1,)]) == [(1, "a", D("1.50"))]
    assert arr.rows_at(250, [(5,)]) == [(5, "e", D("5.00"))]
    assert arr.rows_at(300, [(5,), (1,)]) == []
    arr.allow_compaction(250)  # the hold advanced: what only it kept goes
    assert len(arr.history) == 2
    with pytest.raises(NotFastPath):
        arr.rows_at(150, None)
    assert arr.rows_at(250, [(5,)]) == [(5, "e", D("5.00"))]
    arr.allow_compaction(10**15)  # released: back to the last RETAIN_MS
    assert not arr.history and arr.history_bytes == 0 and arr.held_bytes() == 0
    arr.apply(_updates([(6, "f", D("6.00"))], [arr.upper], [1]), arr.upper + 1)
    assert arr.held_bytes() == 0 < arr.history_bytes  # recent history is not held


def _run(arr: Arrangement, body: dict, ts: int = 100) -> list[dict]:
    fp = FastPath({"timestamp": ts, **body}, arr.schema)
    return fp.run(arr.rows_at(ts, fp.keys(arr))).to_pylist()


def test_fast_path_filters_follow_sql(arr: Arrangement) -> None:
    # amount > 2 OR name LIKE 'a%': the NULL row is excluded, as in SQL
    flt = {"op": "or", "args": [{"op": "gt", "args": [{"col": 2}, {"lit": 2, "number": True}]},
                                {"op": "like", "args": [{"col": 1}], "pattern": "a%"}]}
    got = _run(arr, {"filter": flt, "order": [[0, False, False]]})
    assert [r["id"] for r in got] == [1, 2, 2]
    # NOT (amount > 2): NULL stays excluded (three-valued logic)
    got = _run(arr, {"filter": {"op": "not", "args": [{"op": "gt", "args": [{"col": 2}, {"lit": 2}]}]}})
    assert [r["id"] for r in got] == [1]
    got = _run(arr, {"filter": {"op": "is_null", "args": [{"col": 1}]}})
    assert [r["id"] for r in got] == [3]


def test_fast_path_projection_order_limit(arr: Arrangement) -> None:
    got = _run(arr, {"project": [1, 0], "names": ["n", "k"], "order": [[0, True, True]], "limit": 2,
                     "offset": 1})
    assert got == [{"n": "b", "k": 2}, {"n": "b", "k": 2}]
    # DESC puts NULLs first, ASC last (PostgreSQL's defaults)
    got = _run(arr, {"project": [1], "order": [[1, True, True]]})
    assert got[0]["name"] is None
    got = _run(arr, {"project": [1], "order": [[1, False, False]]})
    assert got[-1]["name"] is None


def test_fast_path_lookup_literals(arr: Arrangement) -> None:
    assert _run(arr, {"lookup": [["2"]]}) == [{"id": 2, "name": "b", "amount": D("2.50")}] * 2
    assert [r["id"] for r in _run(arr, {"lookup": [[1], [3]]})] in ([1, 3], [3, 1])


@pytest.mark.parametrize("flt", [
    {"op": "eq", "args": [{"col": 0}, {"lit": "1.5", "number": True}]},  # int = 1.5
    {"op": "eq", "args": [{"col": 1}, {"lit": 42, "number": True}]},     # text = 42
    {"op": "eq", "args": [{"col": 2}, {"lit": "1.555", "number": True}]},  # scale lost
    {"op": "eq", "args": [{"col": 0}, {"col": 1}]},                      # int = text
    {"op": "regexp", "args": [{"col": 1}]},
])
def test_inexact_filters_leave_the_fast_path(arr: Arrangement, flt: dict) -> None:
    with pytest.raises(NotFastPath):
        _run(arr, {"filter": flt})
