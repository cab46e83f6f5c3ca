"""Checkpoints of incremental state (weir.compute.replica.incremental.maintained), without
Spark: a restarted replica resumes only from a checkpoint that is the output's and whole."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from weir.compute.replica.incremental import runs
from weir.compute.replica.incremental.maintained import Incremental, InputUpdates


class _Counts(Incremental):
    """A strategy whose state is one operator's runs."""

    def __init__(self, directory: str) -> None:
        super().__init__(InputUpdates([]), directory)
        self.manifest = runs.Manifest(os.path.join(directory, "counts"), 2, ("groups",))

    def own_manifests(self) -> list[runs.Manifest]:
        return [self.manifest]

    def reset_own(self) -> None:
        self.manifest = runs.Manifest(os.path.join(self.directory, "counts"), 2, ("groups",))

    def tick(self, keys: list[int]) -> None:
        m = self.manifest
        _, _, _, files = runs.apply_changes(m.runs["groups"].get(0, []), os.path.join(m.directory, "groups"), 0,
                                            m.version + 1, ("n",), np.array(keys, np.int64),
                                            (np.ones(len(keys), np.int64),))
        m.record("groups", 0, files)
        m.version += 1
        m.save()


def _state(tmp_path: Path) -> _Counts:
    s = _Counts(str(tmp_path))
    s.tick([1, 2, 2])
    s.tick([3])
    s.checkpoint(100)
    return s


def test_resumes_only_at_the_checkpointed_upper(tmp_path: Path) -> None:
    before = _state(tmp_path).manifest.runs
    again = _Counts(str(tmp_path))
    assert again.stale and again.resume(100) and not again.stale
    assert again.manifest.runs == before and again.manifest.version == 2
    assert not _Counts(str(tmp_path)).resume(101)  # the output moved on without this state
    assert not _Counts(str(tmp_path)).resume(100)  # and the failed resume forgot it


def test_a_missing_or_corrupt_run_is_never_trusted(tmp_path: Path) -> None:
    s = _state(tmp_path)
    path = os.path.join(s.manifest.directory, "groups", s.manifest.runs["groups"][0][0])
    with open(path, "r+b") as f:
        f.write(b"garbage!")
    runs._CACHE.clear()
    fresh = _Counts(str(tmp_path))
    assert not fresh.resume(100) and fresh.stale
    s = _state(tmp_path)
    os.remove(os.path.join(s.manifest.directory, "groups", s.manifest.runs["groups"][0][0]))
    assert not _Counts(str(tmp_path)).resume(100)


def test_a_state_that_moved_past_its_checkpoint_is_not_resumed(tmp_path: Path) -> None:
    s = _state(tmp_path)
    s.tick([4])  # applied, saved, but the output never got it (a crash before the append)
    assert not _Counts(str(tmp_path)).resume(100)
