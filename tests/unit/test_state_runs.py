"""Sorted runs of incremental state (weir.compute.replica.incremental.runs), without Spark:
every tick's answer is checked against the same state kept as a plain dict."""

from __future__ import annotations

import os
import random
from collections import Counter

import numpy as np

from weir.compute.replica.incremental import runs as r


def _arr(xs: list[int]) -> np.ndarray:
    return np.array(xs, np.int64)


def test_accumulate_sums_per_key_and_drops_zeros() -> None:
    run = r.accumulate(_arr([3, 1, 3, 2, 2]), [_arr([1, 1, 1, 1, -1]), _arr([5, 7, 5, 0, 0])])
    assert run.keys.tolist() == [1, 3]
    assert [v.tolist() for v in run.values] == [[1, 2], [7, 10]]


def test_lookup_sums_a_key_over_runs_and_misses_are_zero() -> None:
    runs = [r.accumulate(_arr([1, 5]), [_arr([2, 3])]), r.accumulate(_arr([5, 9]), [_arr([-1, 4])])]
    (got,) = r.lookup(runs, _arr([9, 5, 0, 1, 10]), 1)
    assert got.tolist() == [4, 2, 0, 2, 0]


def test_apply_changes_against_a_dict_over_many_ticks(tmp_path: str) -> None:
    """Counts and sums of random inserts and deletes: the before / after of every touched key
    equal a dict's, the runs stay few (geometric merges) and a fresh worker (no cache) reading
    the files sees the same state."""
    directory = str(tmp_path)
    rng = random.Random(7)
    truth: dict[int, tuple[int, int]] = {}
    files: list[str] = []
    for version in range(1, 120):
        keys = [rng.randrange(300) for _ in range(rng.choice((1, 20, 200)))]
        weights = [rng.choice((1, 1, -1)) for _ in keys]
        values = [rng.randrange(-50, 50) for _ in keys]
        touched, before, after, files = r.apply_changes(
            files, directory, 0, version, ("n", "s"), _arr(keys),
            (_arr(weights), _arr([v * w for v, w in zip(values, weights, strict=True)])))
        delta: dict[int, list[int]] = {}
        for k, w, v in zip(keys, weights, values, strict=True):
            d = delta.setdefault(k, [0, 0])
            d[0] += w
            d[1] += v * w
        expect = sorted(k for k, d in delta.items() if d != [0, 0])
        assert touched.tolist() == expect
        for i, k in enumerate(touched.tolist()):
            old = truth.get(k, (0, 0))
            assert (before[0][i], before[1][i]) == old
            new = (old[0] + delta[k][0], old[1] + delta[k][1])
            assert (after[0][i], after[1][i]) == new
            if new == (0, 0):
                truth.pop(k, None)
            else:
                truth[k] = new
        assert len(files) <= 12, files
        assert all(os.path.exists(os.path.join(directory, f)) for f in files)
    r._CACHE.clear()  # another worker: the files alone
    state = [r.read_run(os.path.join(directory, f)) for f in files]
    keys = np.array(sorted(truth), np.int64)
    n, s = r.lookup(state, keys, 2)
    assert {k: (int(a), int(b)) for k, a, b in zip(keys.tolist(), n, s, strict=True)} == truth


def test_matches_find_every_equal_key_pair() -> None:
    run = r.consolidated_rows(_arr([4, 2, 4, 4, 7]), (_arr([10, 20, 30, 10, 40]), _arr([1, 1, 1, 1, 1])))
    assert run.keys.tolist() == [2, 4, 4, 7]
    assert [v.tolist() for v in run.values] == [[20, 10, 30, 40], [1, 2, 1, 1]]
    found = r.matches([run], _arr([4, 3, 7, 4]))
    ((di, got, ri),) = found
    pairs = sorted(zip(di.tolist(), got.values[0][ri].tolist(), strict=True))
    assert pairs == [(0, 10), (0, 30), (2, 40), (3, 10), (3, 30)]


def test_arrangement_runs_equal_a_multiset_over_many_ticks(tmp_path: str) -> None:
    """Rows inserted and retracted tick by tick: the runs hold the multiset a Counter holds,
    and a key's lookup returns its rows with their counts."""
    directory = str(tmp_path)
    rng = random.Random(11)
    truth: Counter[tuple[int, int]] = Counter()
    runs: list[r.Run] = []
    files: list[str] = []
    for version in range(1, 80):
        rows = [(rng.randrange(50), rng.randrange(5)) for _ in range(rng.choice((1, 10, 100)))]
        weights = []
        for row in rows:
            w = -1 if truth[row] > 0 and rng.random() < 0.4 else 1
            truth[row] += w
            weights.append(w)
        delta = r.consolidated_rows(_arr([k for k, _ in rows]), (_arr([v for _, v in rows]), _arr(weights)))
        runs, files = r.arrange(runs, files, delta, directory, f"p0-v{version}.arrow", ("v", "w"))
        assert len(runs) == len(files) <= 12
    held: Counter[tuple[int, int]] = Counter()
    for di, run, ri in r.matches(runs, np.arange(50, dtype=np.int64)):
        for k, v, w in zip(di.tolist(), run.values[0][ri].tolist(), run.values[1][ri].tolist(), strict=True):
            held[(k, v)] += w
    assert +held == +truth


def test_manifest_is_the_checkpoint_and_a_missing_run_is_never_trusted(tmp_path: str) -> None:
    directory = str(tmp_path)
    m = r.Manifest(directory, 2, ("left", "groups"))
    _, _, _, files = r.apply_changes([], os.path.join(directory, "groups"), 1, 1, ("n",), _arr([5, 6]),
                                     (_arr([1, 1]),))
    m.record("groups", 1, files)
    stray = os.path.join(directory, "groups", "p0-v9.arrow")  # a failed task's run: listed nowhere
    open(stray, "w").close()
    m.version = 1
    m.save()
    assert not os.path.exists(stray)
    back = r.Manifest.load(directory)
    assert back is not None and back.version == 1 and back.runs == {"left": {}, "groups": {1: files}}
    os.remove(os.path.join(directory, "groups", files[0]))
    assert r.Manifest.load(directory) is None  # rebuilt from the inputs instead
    with open(os.path.join(directory, "manifest.json"), "w") as f:
        f.write("{not json")
    assert r.Manifest.load(directory) is None


def test_group_keys_that_share_a_hash_are_never_summed(tmp_path: str) -> None:
    """Labels (the group keys a hash stands for) are kept: two keys with one hash raise
    HashCollision (the dataflow recomputes), in a tick and against a stored run."""
    import pyarrow as pa
    import pytest

    labels = pa.table({"g": ["a", None, "a"]})
    run = r.accumulate(_arr([7, 9, 7]), [_arr([1, 1, 1])], labels)
    assert run.keys.tolist() == [7, 9] and run.labels is not None and run.labels.column(0).to_pylist() == ["a", None]
    with pytest.raises(r.HashCollision):
        r.accumulate(_arr([7, 7]), [_arr([1, 1])], pa.table({"g": ["a", "b"]}))
    steps, files = r.apply_times([], str(tmp_path), 0, 1, ("n",), _arr([5, 5]), _arr([7, 9]), [_arr([1, 1])],
                                 pa.table({"g": ["a", None]}))
    r._CACHE.clear()
    with pytest.raises(r.HashCollision):  # the stored run's label differs
        r.apply_times(files, str(tmp_path), 0, 2, ("n",), _arr([6]), _arr([9]), [_arr([1])], pa.table({"g": ["z"]}))
    steps, _ = r.apply_times(files, str(tmp_path), 0, 2, ("n",), _arr([6, 8]), _arr([9, 9]), [_arr([1, -2])],
                             pa.table({"g": pa.array([None, None], pa.string())}))
    assert [(s.time, s.before[0].tolist(), s.after[0].tolist()) for s in steps] == [(6, [1], [2]), (8, [2], [0])]
