"""Shards on Iceberg: types, frontiers, compare-and-append, fencing, reads, compaction."""

from __future__ import annotations

import datetime
import decimal
import glob
import os
import time
import uuid
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.types import (
    DecimalType,
    IntegerType,
    ListType,
    StringType,
    TimestamptzType,
)

from weir import types as T
from weir.errors import SqlState, WeirError
from weir.storage import Fenced, ShardStore, UpperMismatch
from weir.storage.consolidate import consolidate
from weir.storage.frontiers import PROP_UPPER
from weir.storage.schema import from_storage, iceberg_schema, storage_arrow_type

UTC = datetime.UTC


@pytest.fixture
def store(tmp_path: Path) -> ShardStore:
    return ShardStore(f"sqlite:///{tmp_path}/catalog.db", str(tmp_path / "warehouse"))


SIMPLE = [("k", T.INT8, False), ("v", T.TEXT, True)]


def rows(*items: tuple[int, str | None, int, int]) -> pa.Table:
    """Updates (k, v, time, diff) for the SIMPLE schema."""
    return pa.table(
        {
            "k": pa.array([i[0] for i in items], pa.int64()),
            "v": pa.array([i[1] for i in items], pa.string()),
            "mz_timestamp": pa.array([i[2] for i in items], pa.int64()),
            "mz_diff": pa.array([i[3] for i in items], pa.int64()),
        }
    )


def contents(shard, as_of: int) -> Counter:
    snap = shard.snapshot(as_of)
    names = [c[0] for c in shard.columns]
    return Counter(
        {tuple(r[n] for n in names): r["mz_diff"] for r in snap.to_pylist()}
    )


# ---- types ---------------------------------------------------------------------------------

ALL_TYPES = [
    ("b", T.BOOL, [True, None]),
    ("i2", T.INT2, [-7, None]),
    ("i4", T.INT4, [123456, None]),
    ("i8", T.INT8, [2**40, None]),
    ("f4", T.FLOAT4, [1.5, None]),
    ("f8", T.FLOAT8, [2.25, None]),
    ("n", T.numeric(10, 2), [decimal.Decimal("12.34"), None]),
    ("nu", T.NUMERIC, [decimal.Decimal("3.1415926535"), None]),
    ("t", T.TEXT, ["héllo", None]),
    ("vc", T.VARCHAR, ["v", None]),
    ("d", T.DATE, [datetime.date(2024, 2, 29), None]),
    ("ts", T.TIMESTAMP, [datetime.datetime(2024, 1, 2, 3, 4, 5, 6), None]),
    ("tz", T.TIMESTAMPTZ, [datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC), None]),
    ("iv", T.INTERVAL, [{"months": 1, "days": 2, "micros": 3_000_004}, None]),
    ("u", T.UUID, [str(uuid.UUID(int=42)), None]),
    ("by", T.BYTEA, [b"\x00\x01", None]),
    ("j", T.JSONB, ['{"a": 1}', None]),
    ("ta", T.TEXT_ARRAY, [["a", None, "b"], None]),
    ("na", T.array_of(T.numeric(5, 1)), [[decimal.Decimal("1.5")], None]),
]


def test_every_type_round_trips(store: ShardStore) -> None:
    cols = [(n, t, True) for n, t, _ in ALL_TYPES]
    shard = store.create_shard("u1", cols)
    data = {n: pa.array(v, t.arrow) for n, t, v in ALL_TYPES}
    data["mz_timestamp"] = pa.array([5, 5], pa.int64())
    data["mz_diff"] = pa.array([1, 2], pa.int64())
    fr = shard.compare_and_append(pa.table(data), 0, 10, 0)
    assert (fr.upper, fr.since, fr.epoch) == (10, 0, 0)

    reopened = store.open_shard("u1")
    assert [(n, t.sql(), nl) for n, t, nl in reopened.columns] == [(n, t.sql(), nl) for n, t, nl in cols]
    assert reopened.columns[-1][1].element.precision == 5
    snap = reopened.snapshot(9)
    assert snap.schema.names == [n for n, _, _ in ALL_TYPES] + ["mz_diff"]
    for n, t, _ in ALL_TYPES:
        assert snap.schema.field(n).type == t.arrow, n
    got = sorted(snap.to_pylist(), key=lambda r: r["mz_diff"])
    for i, r in enumerate(got):
        for n, _, v in ALL_TYPES:
            assert r[n] == v[i], (n, r[n], v[i])
    assert [r["mz_diff"] for r in got] == [1, 2]
    assert reopened.read(9).num_rows == 3


def test_storage_types_follow_type_map() -> None:
    assert storage_arrow_type(T.INT2) == pa.int32()
    assert storage_arrow_type(T.INTERVAL) == T.INTERVAL.arrow  # struct<months, days, micros>
    assert storage_arrow_type(T.TEXT_ARRAY) == pa.list_(pa.string())
    schema = iceberg_schema([("a", T.INT2, True), ("b", T.INTERVAL, False), ("c", T.NUMERIC, True),
                             ("d", T.TIMESTAMPTZ, True), ("e", T.TEXT_ARRAY, True)])
    f = {x.name: x for x in schema.fields}
    assert isinstance(f["a"].field_type, IntegerType)
    assert [x.name for x in f["b"].field_type.fields] == ["months", "days", "micros"] and f["b"].required
    assert f["c"].field_type == DecimalType(38, 10)
    assert isinstance(f["d"].field_type, TimestamptzType)
    assert isinstance(f["e"].field_type, ListType) and isinstance(f["e"].field_type.element_type, StringType)
    assert f["mz_timestamp"].required and f["mz_diff"].required
    with pytest.raises(WeirError):
        iceberg_schema([("mz_diff", T.INT8, True)])


def test_input_conversion_and_validation(store: ShardStore) -> None:
    shard = store.create_shard("u1", [("k", T.INT8, False), ("iv", T.INTERVAL, True), ("u", T.UUID, True)])
    ok = pa.table({
        "k": pa.array([1], pa.int32()),  # castable
        "iv": pa.array([datetime.timedelta(seconds=1)], pa.duration("ms")),
        "u": pa.array([uuid.UUID(int=7).bytes], pa.binary(16)),
        "mz_timestamp": [0], "mz_diff": [1],
    })
    shard.compare_and_append(ok, 0, 1, 0)
    r = shard.snapshot(0).to_pylist()[0]
    assert r["iv"] == {"months": 0, "days": 0, "micros": 1_000_000} and r["u"] == str(uuid.UUID(int=7))
    null_key = ok.set_column(0, "k", pa.array([None], pa.int64()))
    with pytest.raises(WeirError) as e:
        shard.compare_and_append(null_key, 1, 2, 0)
    assert e.value.sqlstate == SqlState.NOT_NULL_VIOLATION
    with pytest.raises(WeirError):
        shard.compare_and_append(ok.drop_columns(["u"]), 1, 2, 0)
    assert shard.frontiers().upper == 1


def test_interval_stored_with_its_three_fields(store: ShardStore) -> None:
    """An interval is stored as struct<months, days, micros>; timedeltas (weir's builtin
    relations) and microseconds (shards written before) are whole days and the rest."""
    import pyarrow.parquet as pq

    shard = store.create_shard("u1", [("iv", T.INTERVAL, True), ("s", T.INT2, True)])
    shard.compare_and_append(
        pa.table({"iv": pa.array([datetime.timedelta(days=1, seconds=2)], pa.duration("us")),
                  "s": pa.array([3], pa.int16()), "mz_timestamp": [0], "mz_diff": [1]}), 0, 1, 0)
    plan = shard.data_files(0)
    t = pq.read_table(plan.files[0])
    assert t["iv"].to_pylist() == [{"months": 0, "days": 1, "micros": 2_000_000}]
    assert t.schema.field("s").type == pa.int32()
    legacy = from_storage(pa.table({"iv": pa.array([-90_000_000_000], pa.int64()), "mz_diff": [1]}),
                          [("iv", T.INTERVAL, True)])
    assert legacy["iv"].to_pylist() == [{"months": 0, "days": -1, "micros": -3_600_000_000}]


# ---- frontiers, compare-and-append, fencing ------------------------------------------------


def test_compare_and_append_refuses_on_mismatch(store: ShardStore) -> None:
    shard = store.create_shard("u1", SIMPLE, initial_upper=100)
    assert shard.frontiers() == type(shard.frontiers())(since=0, upper=100, epoch=0)
    shard.compare_and_append(rows((1, "a", 100, 1)), 100, 110, 0)
    before = shard.read_updates(0, 1000)
    with pytest.raises(UpperMismatch) as e:
        shard.compare_and_append(rows((2, "b", 105, 1)), 100, 120, 0)
    assert e.value.current == 110
    with pytest.raises(UpperMismatch) as e:
        shard.compare_and_append(rows((2, "b", 125, 1)), 120, 130, 0)  # ahead of upper
    assert e.value.current == 110
    assert shard.read_updates(0, 1000).equals(before)
    assert shard.frontiers().upper == 110
    # Times must lie in [expected_upper, new_upper).
    with pytest.raises(ValueError):
        shard.compare_and_append(rows((3, "c", 120, 1)), 110, 120, 0)
    with pytest.raises(ValueError):
        shard.compare_and_append(rows((3, "c", 109, 1)), 110, 120, 0)
    with pytest.raises(ValueError):
        shard.compare_and_append(None, 110, 110, 0)
    assert len(list(Path(shard.table.location().removeprefix("file://"), "data").iterdir())) == 1


def test_empty_append_advances_upper(store: ShardStore) -> None:
    shard = store.create_shard("u1", SIMPLE)
    snaps = len(shard.table.metadata.snapshots)
    assert shard.compare_and_append(None, 0, 5, 0).upper == 5
    assert shard.compare_and_append(rows()[:0], 5, 9, 0).upper == 9
    assert shard.frontiers().upper == 9
    assert len(shard.table.metadata.snapshots) == snaps  # property-only commits
    assert shard.snapshot(8).num_rows == 0


def test_stale_handle_sees_mismatch(store: ShardStore) -> None:
    a = store.create_shard("u1", SIMPLE)
    b = store.open_shard("u1")
    a.compare_and_append(rows((1, "a", 0, 1)), 0, 1, 0)
    with pytest.raises(UpperMismatch) as e:
        # b's cached upper is 0: it writes its file and is refused by the catalog's CAS.
        b.compare_and_append(rows((2, "b", 0, 1)), 0, 1, 0)
    assert e.value.current == 1
    data_dir = Path(a.table.location().removeprefix("file://"), "data")
    assert len(list(data_dir.iterdir())) == 1  # the refused writer removed its file
    b.compare_and_append(rows((2, "b", 1, 1)), 1, 2, 0)
    assert contents(a, 1) == Counter({(1, "a"): 1, (2, "b"): 1})


def test_fencing(store: ShardStore) -> None:
    shard = store.create_shard("u1", SIMPLE)
    old = store.open_shard("u1")
    shard.compare_and_append(rows((1, "new", 0, 1)), 0, 1, 2)
    assert shard.frontiers().epoch == 2
    with pytest.raises(Fenced) as e:  # the zombie also has a matching upper: still refused
        old.compare_and_append(rows((9, "zombie", 1, 1)), 1, 2, 1)
    assert e.value.current_epoch == 2
    with pytest.raises(Fenced):
        old.compare_and_append(None, 1, 2, 1)
    shard.compare_and_append(None, 1, 2, 2)  # same epoch keeps writing
    assert shard.fence(5).epoch == 5
    with pytest.raises(Fenced):
        shard.compare_and_append(None, 2, 3, 4)
    assert contents(shard, 1) == Counter({(1, "new"): 1})
    assert shard.frontiers().upper == 2


def test_since_is_monotonic_and_guards_reads(store: ShardStore) -> None:
    shard = store.create_shard("u1", SIMPLE)
    shard.compare_and_append(rows((1, "a", 3, 1)), 0, 10, 0)
    shard.downgrade_since(5)
    shard.downgrade_since(2)  # lower: ignored
    assert shard.frontiers().since == 5
    with pytest.raises(WeirError) as e:
        shard.snapshot(4)
    assert e.value.sqlstate == SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE
    with pytest.raises(WeirError):
        shard.data_files(4)
    with pytest.raises(WeirError):
        shard.read_updates(3, 10)
    assert contents(shard, 5) == Counter({(1, "a"): 1})
    assert store.open_shard("u1").frontiers(refresh=False).since == 5


def test_crash_between_write_and_catalog_swap_is_atomic(store: ShardStore, monkeypatch) -> None:
    """Data files and metadata written, catalog row not swapped: nothing happened."""
    shard = store.create_shard("u1", SIMPLE)
    shard.compare_and_append(rows((1, "a", 0, 1)), 0, 1, 0)
    cat = store.catalog

    def crashing_commit(table, requirements, updates):
        staged = cat._update_and_stage_table(cat.load_table(table.name()), table.name(), requirements, updates)
        cat._write_metadata(staged.metadata, staged.io, staged.metadata_location)
        assert staged.metadata.properties[PROP_UPPER] == "2"  # data and upper travel together
        raise OSError("power cut before the catalog row was updated")

    monkeypatch.setattr(cat, "commit_table", crashing_commit)
    with pytest.raises(OSError):
        shard.compare_and_append(rows((2, "b", 1, 1)), 1, 2, 0)
    monkeypatch.undo()
    fresh = ShardStore(str(cat.engine.url), store.warehouse_path).open_shard("u1")
    assert fresh.frontiers().upper == 1
    assert contents(fresh, 0) == Counter({(1, "a"): 1})
    # The orphaned data/manifest/metadata files are swept once past the grace period.
    res = fresh.compact(grace_seconds=0)
    assert res.files_removed >= 3
    fresh.compare_and_append(rows((2, "b", 1, 1)), 1, 2, 0)
    assert contents(fresh, 1) == Counter({(1, "a"): 1, (2, "b"): 1})


# ---- reads -----------------------------------------------------------------------------------


def test_data_files_prunes_on_time(store: ShardStore) -> None:
    shard = store.create_shard("u1", SIMPLE)
    for t in range(5):
        shard.compare_and_append(rows((t, "x", t * 10, 1), (t, "y", t * 10 + 5, 1)), t * 10, t * 10 + 10, 0)
    plan = shard.data_files(19)
    assert len(plan.files) == 2 and not plan.may_have_retractions
    assert all(os.path.exists(f) and not f.startswith("file:") for f in plan.files)
    assert len(shard.data_files(49).files) == 5
    assert len(shard.data_files(0).files) == 1
    shard.compare_and_append(rows((0, "x", 50, -1)), 50, 60, 0)
    assert not shard.data_files(49).may_have_retractions
    assert shard.data_files(50).may_have_retractions
    # a multiplicity above one must be expanded by the reader, like a retraction
    later = store.create_shard("u2", SIMPLE)
    later.compare_and_append(rows((1, "dup", 5, 2)), 0, 10, 0)
    assert later.data_files(9).may_have_retractions
    ups = shard.read_updates(10, 30)
    assert sorted(ups["mz_timestamp"].to_pylist()) == [10, 15, 20, 25]
    assert contents(shard, 50) == Counter({(t, v): 1 for t in range(5) for v in "xy"}) - Counter({(0, "x"): 1})


def test_consolidation_groups_lists_decimals_and_nulls() -> None:
    t = pa.table({
        "l": pa.array([["a", None], ["a", None], None, None, [], ["a"]], pa.list_(pa.string())),
        "d": pa.array([decimal.Decimal("1.5"), decimal.Decimal("1.50"), None, None, None, None],
                      pa.decimal128(38, 10)),
        "s": pa.array([None, None, "x", "x", None, None]),
        "mz_diff": pa.array([1, 2, 1, -1, 3, -2], pa.int64()),
    })
    out = consolidate(t, ["l", "d", "s"])
    assert out.to_pylist() == [
        {"l": ["a", None], "d": decimal.Decimal("1.5"), "s": None, "mz_diff": 3},
        {"l": [], "d": None, "s": None, "mz_diff": 3},
        {"l": ["a"], "d": None, "s": None, "mz_diff": -2},
    ]
    assert consolidate(t, ["l", "d", "s"], keep_negative=False).num_rows == 2


def test_consolidating_retractions_only_groups_rows_that_can_cancel() -> None:
    from weir.storage.consolidate import consolidate_retractions

    def summed(t: pa.Table) -> Counter:
        out: Counter = Counter()
        for r in t.to_pylist():
            out[(r["k"], tuple(r["l"]) if r["l"] is not None else None, r["s"])] += r["mz_diff"]
        return +out

    inserts = pa.table({"k": pa.array([1, 2, 2, None], pa.int64()),
                        "l": pa.array([["a"], None, None, []], pa.list_(pa.string())),
                        "s": pa.array(["x", "y", "y", None]), "mz_diff": pa.array([1, 1, 1, 1], pa.int64())})
    assert consolidate_retractions(inserts, ["k", "l", "s"]) is inserts  # nothing to cancel: no grouping
    t = pa.concat_tables([inserts, pa.table({
        "k": pa.array([1, None, 3], pa.int64()), "l": pa.array([["a"], [], None], pa.list_(pa.string())),
        "s": pa.array(["x", None, "z"]), "mz_diff": pa.array([-1, -1, -1], pa.int64())})])
    out = consolidate_retractions(t, ["k", "l", "s"])
    assert summed(out) == summed(consolidate(t, ["k", "l", "s"]))
    assert sorted(out.to_pylist(), key=repr) == sorted([
        {"k": 2, "l": None, "s": "y", "mz_diff": 1}, {"k": 2, "l": None, "s": "y", "mz_diff": 1},  # untouched
        {"k": 3, "l": None, "s": "z", "mz_diff": -1}], key=repr)  # (1, x) and (null, []) cancelled


def test_snapshot_with_list_and_decimal_columns(store: ShardStore) -> None:
    cols = [("l", T.TEXT_ARRAY, True), ("d", T.NUMERIC, True)]
    shard = store.create_shard("u1", cols)
    t = pa.table({"l": pa.array([["a"], ["a"], None, None], pa.list_(pa.string())),
                  "d": pa.array([decimal.Decimal(1), decimal.Decimal(1), None, None], pa.decimal128(38, 10)),
                  "mz_timestamp": [0, 1, 0, 1], "mz_diff": [1, 1, 1, -1]})
    shard.compare_and_append(t, 0, 2, 0)
    assert shard.snapshot(0).num_rows == 2
    assert shard.snapshot(1).to_pylist() == [{"l": ["a"], "d": decimal.Decimal(1), "mz_diff": 2}]


# ---- compaction and maintenance ---------------------------------------------------------------


def _churn(shard, n: int) -> int:
    """n intervals of inserts and retractions on a few keys; returns the upper."""
    for t in range(n):
        ups = [(t % 4, f"v{t % 3}", t, 1), (t % 4, f"v{t % 3}", t, 1)]
        if t >= 2:
            ups.append(((t - 2) % 4, f"v{(t - 2) % 3}", t, -1))
        shard.compare_and_append(rows(*ups), t, t + 1, 0)
    return n


def test_compaction_consolidates_and_removes_files(store: ShardStore) -> None:
    shard = store.create_shard("u1", SIMPLE)
    upper = _churn(shard, 30)
    since = 20
    expected = {t: contents(shard, t) for t in range(since, upper)}
    old_files = set(glob.glob(shard.table.location().removeprefix("file://") + "/data/*.parquet"))
    rows_before = sum(f.record_count for f in (t.file for t in shard.table.scan().plan_files()))

    shard.downgrade_since(since)
    res = shard.compact(grace_seconds=3600)  # readers may still hold the old files
    assert res.committed and not res.gave_up
    assert res.rows_before == rows_before and res.rows_after < rows_before
    assert res.files_after < res.files_before
    assert res.files_removed == 0 and all(os.path.exists(f) for f in old_files)
    for t in range(since, upper):
        assert contents(shard, t) == expected[t], t
    ups = shard.read_updates(0, upper)
    assert min(ups["mz_timestamp"].to_pylist()) == since
    assert len(shard.data_files(since).files) == 1
    # Appends drop superseded snapshots as they go, but not the one compaction replaced:
    # readers may still hold its files until the grace period is over.
    replaced = shard.table.metadata.snapshots[-1].parent_snapshot_id
    for t in range(upper, upper + 5):
        shard.compare_and_append(None if t % 2 else rows((5, "q", t, 1), (5, "q", t, -1)), t, t + 1, 0)
    upper += 5
    assert replaced in {s.snapshot_id for s in shard.table.metadata.snapshots}
    assert len(shard.table.metadata.snapshots) <= 3
    assert all(os.path.exists(f) for f in old_files)

    time.sleep(0.01)
    res2 = shard.compact(grace_seconds=0)  # grace over: old snapshots and files go
    assert not res2.committed  # nothing left to rewrite
    assert res2.snapshots_expired >= 1 and res2.files_removed > 0
    live = set(glob.glob(shard.table.location().removeprefix("file://") + "/data/*.parquet"))
    assert set(shard.data_files(upper - 1).files) == live  # every other data file is gone
    assert len(old_files - live) > 20 and not any(os.path.exists(f) for f in old_files - live)
    assert len(shard.table.metadata.snapshots) == 1
    for t in range(since, upper):
        assert contents(shard, t) == expected[min(t, 29)], t
    # Appends continue after compaction and a further compaction keeps the contents.
    shard.compare_and_append(rows((7, "z", upper, 1)), upper, upper + 1, 0)
    shard.downgrade_since(upper)
    shard.compact(grace_seconds=0)
    exp = expected[29] + Counter({(7, "z"): 1})
    assert contents(shard, upper) == exp


def test_compaction_rebases_over_a_concurrent_append(store: ShardStore, monkeypatch) -> None:
    shard = store.create_shard("u1", SIMPLE)
    writer = store.open_shard("u1")
    upper = _churn(shard, 6)
    shard.downgrade_since(4)
    expected = contents(shard, 5) + Counter({(9, "late"): 1})
    real_write = shard._write_files

    def write_then_race(data):
        files = real_write(data)
        writer.compare_and_append(rows((9, "late", upper, 1)), upper, upper + 1, 0)
        return files

    monkeypatch.setattr(shard, "_write_files", write_then_race)
    res = shard.compact(grace_seconds=3600)
    monkeypatch.undo()
    assert res.committed and not res.gave_up  # appends only add files: deleting ours is still exact
    assert contents(shard, upper) == expected
    # ...and an append from a handle that has not seen the compaction retries safely.
    writer.compare_and_append(rows((10, "after", upper + 1, 1)), upper + 1, upper + 2, 0)
    assert contents(shard, upper + 1) == expected + Counter({(10, "after"): 1})


def test_compaction_gives_up_when_another_compaction_wins(store: ShardStore, monkeypatch) -> None:
    shard = store.create_shard("u1", SIMPLE)
    other = store.open_shard("u1")
    upper = _churn(shard, 8)
    shard.downgrade_since(6)
    expected = contents(shard, upper - 1)
    real_write = shard._write_files
    won: list = []

    def write_then_race(data):
        files = real_write(data)
        won.append(other.compact(grace_seconds=3600))
        return files

    monkeypatch.setattr(shard, "_write_files", write_then_race)
    res = shard.compact(grace_seconds=3600)
    monkeypatch.undo()
    assert won[0].committed
    assert res.gave_up and not res.committed
    assert contents(shard, upper - 1) == expected
    data_dir = Path(shard.table.location().removeprefix("file://"), "data")
    live = set(shard.data_files(upper - 1).files)
    stray = {str(p) for p in data_dir.iterdir()} - live
    assert len(stray) == 7  # the replaced files (times 0..6), kept for the grace period; ours were deleted


def test_metadata_files_do_not_pile_up(tmp_path: Path) -> None:
    store = ShardStore(f"sqlite:///{tmp_path}/catalog.db", str(tmp_path / "wh"), metadata_versions_kept=5)
    shard = store.create_shard("u1", SIMPLE)
    start = time.perf_counter()
    for t in range(200):
        shard.compare_and_append(None, t, t + 1, 0)
    per_commit_ms = (time.perf_counter() - start) * 1000 / 200
    meta = glob.glob(shard.table.location().removeprefix("file://") + "/metadata/*.metadata.json")
    assert len(meta) <= 6, len(meta)
    assert shard.frontiers().upper == 200
    assert per_commit_ms < 100, per_commit_ms


def test_store_lifecycle(store: ShardStore, tmp_path: Path) -> None:
    assert store.list_shards() == []
    store.create_shard("u1", SIMPLE)
    s3 = store.create_shard("s3", SIMPLE)
    s3.compare_and_append(rows((1, "a", 0, 1)), 0, 1, 0)
    assert store.list_shards() == ["s3", "u1"]
    assert store.shard_exists("s3") and not store.shard_exists("nope")
    with pytest.raises(WeirError) as e:
        store.create_shard("u1", SIMPLE)
    assert e.value.sqlstate == SqlState.DUPLICATE_TABLE
    with pytest.raises(WeirError) as e:
        store.open_shard("nope")
    assert e.value.sqlstate == SqlState.UNDEFINED_TABLE
    loc = s3.table.location().removeprefix("file://")
    assert os.path.isdir(loc)
    store.drop_shard("s3")
    assert not os.path.exists(loc)
    assert store.list_shards() == ["u1"]
    # A second store over the same catalog (another process) sees the same shards.
    other = ShardStore(f"sqlite:///{tmp_path}/catalog.db", str(tmp_path / "warehouse"))
    assert other.list_shards() == ["u1"]


# ---- compaction tiers --------------------------------------------------------------------


def test_spine_merges_small_files_at_two_and_wider_tiers_at_fanout() -> None:
    from weir.storage import spine

    mib = 1 << 20
    assert [spine.tier(s) for s in (0, 4 * mib - 1, 4 * mib, 16 * mib - 1, 16 * mib, 64 * mib)] == [0, 0, 1, 1, 2, 3]
    assert spine.merge_groups([10], int) == []  # one small file: nothing to do
    assert spine.merge_groups([10, 20], int) == [[10, 20]]
    big = [5 * mib, 6 * mib, 7 * mib]
    assert spine.merge_groups(big + [10], int) == []  # a wider tier waits for FANOUT files
    assert spine.merge_groups(big + [8 * mib, 10, 20], int) == [[10, 20], big + [8 * mib]]


def test_compaction_leaves_a_wide_file_alone_while_new_small_ones_merge(store: ShardStore, monkeypatch) -> None:
    """An append-only shard's compaction costs its new files, not its whole size."""
    from weir.storage import spine

    shard = store.create_shard("u1", SIMPLE)
    for t in range(4):
        shard.compare_and_append(rows(*[(k, f"row{k}-{t}", t, 1) for k in range(2000)]), t, t + 1, 0)
    shard.downgrade_since(3)
    assert shard.compact(grace_seconds=3600).files_rewritten == 4
    [wide] = shard.data_files(3).files
    monkeypatch.setattr(spine, "BASE_BYTES", os.path.getsize(wide) // spine.FANOUT)  # now a tier-1 file
    for t in range(4, 8):
        shard.compare_and_append(rows((t, "new", t, 1), (t - 4, f"row{t - 4}-0", t, -1)), t, t + 1, 0)
    shard.downgrade_since(7)
    res = shard.compact(grace_seconds=3600)
    assert res.committed and res.files_rewritten == 4  # the four small files, not the wide one
    assert wide in shard.data_files(7).files and len(shard.data_files(7).files) == 2
    expected = Counter({(k, f"row{k}-{t}"): 1 for k in range(2000) for t in range(4)})
    expected -= Counter({(k, f"row{k}-0"): 1 for k in range(4)})
    expected += Counter({(t, "new"): 1 for t in range(4, 8)})
    assert contents(shard, 7) == expected


def test_columns_with_names_parquet_sanitizes(store: ShardStore) -> None:
    """'?column?' (an unnamed view column) and 'a b' are written to Parquet sanitized by
    pyiceberg; reads by name (compaction's, the replica's) must find them, not NULLs."""
    cols = [("?column?", T.INT8, True), ("a b", T.TEXT, True)]
    shard = store.create_shard("u9", cols)
    for t in range(3):
        shard.compare_and_append(pa.table({"?column?": pa.array([t], pa.int64()), "a b": pa.array([f"x{t}"]),
                                           "mz_timestamp": pa.array([t], pa.int64()),
                                           "mz_diff": pa.array([1], pa.int64())}), t, t + 1, 0)
    shard.downgrade_since(2)
    assert shard.compact(grace_seconds=3600).committed
    assert contents(shard, 2) == Counter({(0, "x0"): 1, (1, "x1"): 1, (2, "x2"): 1})


def test_shard_of_long_interval_micros_still_reads_and_writes(store: ShardStore) -> None:
    """A shard created when intervals were long microseconds (its Iceberg column a long):
    read as whole days and time; appended to in that form; an interval it cannot hold
    (months, time past a day) is refused (0A000), never changed."""
    from dataclasses import replace

    legacy = replace(T.INTERVAL, stored_as="long")
    shard = store.create_shard("old", [("iv", legacy, True)])
    reopened = store.open_shard("old")
    assert reopened.columns[0][1].stored_as == "long"
    reopened.compare_and_append(pa.table({"iv": pa.array([datetime.timedelta(days=-1, hours=23)], pa.duration("us")),
                                          "mz_timestamp": [0], "mz_diff": [1]}), 0, 1, 0)
    assert reopened.snapshot(0)["iv"].to_pylist() == [{"months": 0, "days": 0, "micros": -3_600_000_000}]
    with pytest.raises(WeirError) as e:
        reopened.compare_and_append(pa.table({"iv": pa.array([{"months": 1, "days": 0, "micros": 0}], T.INTERVAL.arrow),
                                              "mz_timestamp": [1], "mz_diff": [1]}), 1, 2, 0)
    assert e.value.sqlstate == "0A000"
    assert shard.shard_id == "old"
