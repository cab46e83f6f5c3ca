"""Arrangements of rows (weir.compute.replica.incremental.rows) and the delta join's
meeting of a delta with them (weir.compute.replica.incremental.join_shape), without Spark:
ticks of random changes to two inputs, joined from deltas, equal the join recomputed."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from weir.compute.replica.incremental import rows, runs
from weir.compute.replica.incremental.join import _meet, _unmatched
from weir.compute.replica.incremental.join_shape import Stage
from weir.compute.replica.linear import DIFF

KEYS = ["__j0"]
SIDES = [["__c0", "__c1"], ["__c2"]]


def _delta(changes: list[tuple[tuple, int]], columns: list[str]) -> rows.RowRun:
    keys = [c[0][0] for c in changes]
    types = {"__c0": pa.int64(), "__c1": pa.string(), "__c2": pa.int64()}
    table = pa.table({"__j0": pa.array(keys, pa.string()),
                      **{n: pa.array([c[0][1 + i] for c in changes], types[n]) for i, n in enumerate(columns)}})
    hashes = np.array([hash(k) % 7 for k in keys], np.int64)  # few hashes: collisions on purpose
    return rows.consolidated(hashes, table, np.array([w for _, w in changes], np.int64))


def test_consolidated_sums_identical_rows_and_sorts_by_key() -> None:
    run = _delta([(("a", 1, "x"), 1), (("b", 2, None), 1), (("a", 1, "x"), 2), (("b", 2, None), -1)],
                 SIDES[0])
    assert list(run.keys) == sorted(run.keys)
    assert run.rows.to_pylist() == [{"__j0": "a", "__c0": 1, "__c1": "x", rows.WEIGHT: 3}]


def test_runs_round_trip_and_merge(tmp_path: Path) -> None:
    a = _delta([(("a", 1, "x"), 1), (("b", 2, "y"), 1)], SIDES[0])
    b = _delta([(("a", 1, "x"), -1), (("c", 3, None), 1)], SIDES[0])
    name = rows.write(str(tmp_path / "a.arrow"), a)
    runs._CACHE.clear()
    back = rows.read(str(tmp_path / name))
    assert back.rows.equals(a.rows) and list(back.keys) == list(a.keys)
    m = rows.merged([back, b])
    assert sorted(r["__j0"] for r in m.rows.to_pylist()) == ["b", "c"]


@pytest.mark.parametrize("kind", ["INNER", "LEFT", "RIGHT", "FULL"])
def test_delta_join_over_ticks_equals_the_join(tmp_path: Path, kind: str) -> None:
    """The task's steps (weir.compute.replica.incremental.join._task) by hand: per tick the
    unmatched rows of a kept side, then dA join B + A' join dB, then both arranged."""
    rng = random.Random(28)
    live: list[list[tuple]] = [[], []]
    state: list[list[rows.RowRun]] = [[], []]
    files: list[list[str]] = [[], []]
    total: Counter[tuple] = Counter()
    kept = [Stage((), (), kind).keeps(i) for i in (0, 1)]
    types = {"__c0": pa.int64(), "__c1": pa.string(), "__c2": pa.int64()}
    for tick in range(15):
        changes: list[list[tuple[tuple, int]]] = [[], []]
        for s in (0, 1):
            for _ in range(rng.randrange(0, 8)):
                if live[s] and rng.random() < 0.45:
                    changes[s].append((live[s].pop(rng.randrange(len(live[s]))), -1))
                else:
                    key = rng.choice("abcdefg")
                    row = (key, rng.randrange(3), rng.choice([None, "x"])) if s == 0 else (key, rng.randrange(5))
                    live[s].append(row)
                    changes[s].append((row, 1))
        d = [_delta(changes[0], SIDES[0]), _delta(changes[1], SIDES[1])]
        out = []
        for s in (0, 1):
            if kept[s]:
                out += _unmatched(d[s], state[s], d[1 - s], state[1 - s], s == 0, tick, KEYS, SIDES, types)
        out += _meet(d[0], state[1], True, tick, KEYS, SIDES)
        out += _meet(d[1], [*state[0], d[0]], False, tick, KEYS, SIDES)
        for s in (0, 1):
            state[s], files[s] = rows.arrange(state[s], files[s], d[s], str(tmp_path), f"s{s}-{tick}.arrow")
        for part in out:
            for r in part.to_pylist():
                total[(r["__c0"], r["__c1"], r["__c2"])] += r[DIFF]
        expected = Counter((a[1], a[2], b[1]) for a in live[0] for b in live[1] if a[0] == b[0])
        if kept[0]:
            expected += Counter((a[1], a[2], None) for a in live[0] if not any(b[0] == a[0] for b in live[1]))
        if kept[1]:
            expected += Counter((None, None, b[1]) for b in live[1] if not any(a[0] == b[0] for a in live[0]))
        assert +total == expected and not -total, f"tick {tick}"
