"""Racing writers on one shard: compare-and-append lets exactly one win each interval."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa

from weir import types as T
from weir.storage import ShardStore, UpperMismatch

COLS = [("writer", T.TEXT, False), ("interval", T.INT8, False), ("n", T.INT8, False)]
TARGET = 80


def _updates(writer: str, lower: int) -> pa.Table:
    """Each writer proposes different rows (and a retraction) for the interval [lower, lower+2)."""
    return pa.table({
        "writer": [writer, writer, writer],
        "interval": pa.array([lower, lower, lower], pa.int64()),
        "n": pa.array([1, 2, 1], pa.int64()),
        "mz_timestamp": pa.array([lower, lower + 1, lower + 1], pa.int64()),
        "mz_diff": pa.array([1, 1, -1], pa.int64()),
    })


def _writer(
    shard, name: str, wins: list, losses: list, errors: list, barrier: threading.Barrier, pause: float = 0.0,
    more: threading.Event | None = None,
) -> None:
    """Writes intervals up to TARGET, and on while `more` is set (up to 10 times as many)."""
    try:
        barrier.wait()
        upper = shard.frontiers().upper
        while upper < TARGET or (more is not None and more.is_set() and upper < 10 * TARGET):
            try:
                shard.compare_and_append(_updates(name, upper), upper, upper + 2, 0)
                wins.append((name, upper))
                upper += 2
                time.sleep(pause)
            except UpperMismatch as e:
                losses.append((name, upper))
                assert e.current > upper
                upper = e.current
    except BaseException as e:  # surfaced by the main thread
        errors.append(e)


def test_racing_writers_threads_and_processes(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/catalog.db"
    store_a = ShardStore(uri, str(tmp_path / "wh"))
    store_b = ShardStore(uri, str(tmp_path / "wh"))  # like a second process
    store_a.create_shard("s1", COLS)
    handles = [("a1", store_a.open_shard("s1")), ("a2", store_a.open_shard("s1")),
               ("b1", store_b.open_shard("s1")), ("b2", store_b.open_shard("s1"))]
    wins: list = []
    losses: list = []
    errors: list = []
    barrier = threading.Barrier(len(handles))
    threads = [threading.Thread(target=_writer, args=(h, n, wins, losses, errors, barrier)) for n, h in handles]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    intervals = sorted(lower for _, lower in wins)
    assert intervals == list(range(0, TARGET + 1, 2))[: len(intervals)]
    assert intervals[-1] + 2 >= TARGET and len(set(intervals)) == len(intervals)
    assert losses, "the writers never raced"
    assert len({n for n, _ in wins}) > 1, wins

    shard = store_b.open_shard("s1")
    assert shard.frontiers().upper == intervals[-1] + 2
    got = shard.read_updates(0, 1000)
    expected = pa.concat_tables([_updates(n, lower) for n, lower in sorted(wins, key=lambda w: w[1])])
    key = ("writer", "interval", "n", "mz_timestamp", "mz_diff")

    def bag(t: pa.Table) -> Counter:
        return Counter(tuple(r[k] for k in key) for r in t.to_pylist())

    assert bag(got) == bag(expected)
    snap = shard.snapshot(shard.frontiers().upper - 1).to_pylist()
    assert Counter((r["writer"], r["interval"]) for r in snap) == Counter(wins)


def test_writers_race_with_a_compactor(tmp_path: Path) -> None:
    """Compaction running alongside racing writers never loses or duplicates an update."""
    uri = f"sqlite:///{tmp_path}/catalog.db"
    store = ShardStore(uri, str(tmp_path / "wh"), grace_seconds=30)
    other = ShardStore(uri, str(tmp_path / "wh"), grace_seconds=30)
    store.create_shard("s1", COLS)
    handles = [("a", store.open_shard("s1")), ("b", other.open_shard("s1"))]
    wins: list = []
    losses: list = []
    errors: list = []
    done = threading.Event()
    more = threading.Event()  # the writers go on until a compaction has committed amid them
    more.set()
    results: list = []

    def compactor() -> None:
        shard = other.open_shard("s1")
        try:
            while not done.is_set():
                upper = shard.frontiers().upper
                shard.downgrade_since(max(0, upper - 6))
                results.append(shard.compact())
                if results[-1].committed:
                    more.clear()
        except BaseException as e:
            errors.append(e)

    barrier = threading.Barrier(len(handles))
    # Writers pause a little between intervals (like ticks); back-to-back appends can starve
    # compaction, which then gives up and is retried later (correctness is what matters).
    threads = [
        threading.Thread(target=_writer, args=(h, n, wins, losses, errors, barrier, 0.01, more)) for n, h in handles
    ]
    comp = threading.Thread(target=compactor)
    comp.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    done.set()
    comp.join(timeout=60)
    assert not errors, errors
    assert any(r.committed for r in results), results
    intervals = sorted(lower for _, lower in wins)
    assert intervals == list(range(0, intervals[-1] + 1, 2))

    shard = store.open_shard("s1")
    f = shard.frontiers()
    assert f.upper == intervals[-1] + 2 and f.since > 0
    snap = shard.snapshot(f.upper - 1).to_pylist()
    # Each winner's three updates net to one (writer, interval, 2) row, whatever was compacted.
    assert Counter((r["writer"], r["interval"], r["n"], r["mz_diff"]) for r in snap) == Counter(
        (n, lower, 2, 1) for n, lower in wins
    )
    # A last compaction leaves only consolidated, positive updates at since.
    shard.downgrade_since(f.upper - 2)
    assert shard.compact().committed
    ups = shard.read_updates(0, f.upper).to_pylist()
    old = [u for u in ups if u["mz_timestamp"] <= f.upper - 2]
    assert old and all(u["mz_timestamp"] == f.upper - 2 and u["mz_diff"] > 0 for u in old)
    assert Counter(map(str, snap)) == Counter(map(str, shard.snapshot(f.upper - 1).to_pylist()))
