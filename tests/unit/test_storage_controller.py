"""The storage controller's group commit, frontiers and write-ahead recovery, on real
shards (Iceberg over SQLite in a temporary warehouse), without Spark."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pyarrow as pa
import pytest

from weir import types as T
from weir.adapter.oracle import TimestampOracle
from weir.storage.controller import StorageController
from weir.storage.persist import ShardStore

COLS = [("id", T.INT4, True), ("name", T.TEXT, True)]


class _Durable:
    def __init__(self) -> None:
        self.mark = 0

    def load(self) -> int:
        return self.mark

    def persist(self, ts: int) -> None:
        self.mark = max(self.mark, ts)


def _rows(ids: list[int], diff: int = 1) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int32()), "name": pa.array([f"n{i}" for i in ids]),
                     "mz_diff": pa.array([diff] * len(ids), pa.int64())})


def _store(tmp: Path) -> ShardStore:
    return ShardStore(f"sqlite:///{tmp / 'cat.db'}", str(tmp / "wh"))


async def _controller(tmp: Path, durable: _Durable, tick_ms: int = 50) -> StorageController:
    oracle = TimestampOracle(durable.load, durable.persist)
    ctl = StorageController(_store(tmp), oracle, tmp / "wal", tick_ms=tick_ms, persist_every_ticks=2)
    for sid in ("a", "b"):
        await ctl.ensure_collection(sid, COLS)
    await ctl.replay_wal()
    ctl.start()
    return ctl


def test_group_commit_and_reads(tmp_path: Path) -> None:
    async def run() -> None:
        durable = _Durable()
        ctl = await _controller(tmp_path, durable)
        results = await asyncio.gather(*[ctl.append({"a": _rows([i])}) for i in range(20)])
        assert len(set(results)) < 20, "concurrent appends should share commits"
        ts = await ctl.append({"a": _rows([0], -1), "b": _rows([7])})
        since, upper = ctl.frontiers("a")
        assert upper > ts and since <= ts
        snap = await ctl.snapshot("a", ts)
        assert sorted(snap.column("id").to_pylist()) == list(range(1, 20))
        # uppers advance every tick even without writes
        await asyncio.sleep(0.3)
        assert ctl.frontiers("b")[1] > upper
        await ctl.stop()
        # a restart sees every acknowledged write; the oracle never goes back
        ctl2 = await _controller(tmp_path, durable)
        assert ctl2.oracle.write_ts() > ts
        snap_b = await ctl2.snapshot("b", ctl2.oracle.read_ts())
        assert snap_b.column("id").to_pylist() == [7]
        await ctl2.stop()

    asyncio.run(run())


def test_crash_mid_group_commit_lands_whole(tmp_path: Path) -> None:
    """A multi-shard group commit interrupted after its first shard commit is finished by
    write-ahead replay at the next start: all of it lands, once."""

    async def run() -> None:
        durable = _Durable()
        ctl = await _controller(tmp_path, durable, tick_ms=10_000)
        ts = ctl.oracle.write_ts()
        tables = {sid: ctl._with_time(_rows([1, 2] if sid == "a" else [3]), ts) for sid in ("a", "b")}
        # what _commit does, stopped by a "crash" after the first shard's commit
        ctl._write_wal(ctl.wal_dir / f"{ts:020d}.arrow", tables)
        c = ctl.collections["a"]
        c.shard.compare_and_append(tables["a"], c.durable_upper, ts + 1, ctl.epoch)
        ctl._task.cancel()  # crash: no clean shutdown
        ctl2 = await _controller(tmp_path, durable)
        read_ts = ctl2.oracle.read_ts()
        assert read_ts >= ts
        a = await ctl2.snapshot("a", ts)
        b = await ctl2.snapshot("b", ts)
        assert sorted(a.column("id").to_pylist()) == [1, 2]
        assert b.column("id").to_pylist() == [3]
        assert not list((tmp_path / "wal").glob("*.arrow"))
        await ctl2.stop()

    asyncio.run(run())


def test_read_hold_pins_since(tmp_path: Path) -> None:
    async def run() -> None:
        ctl = await _controller(tmp_path, _Durable(), tick_ms=20)
        ts = await ctl.append({"a": _rows([1])})
        hold = ctl.acquire_read_hold(["a"], ts)
        await asyncio.sleep(1.5)  # more than the 1 s compaction window
        assert ctl.frontiers("a")[0] <= ts
        hold.release()
        await asyncio.sleep(0.2)
        assert ctl.frontiers("a")[0] > ts - 1000
        with pytest.raises(Exception, match="not valid"):
            ctl.acquire_read_hold(["a"], 0)
        await ctl.stop()

    asyncio.run(run())
