"""A dataflow's scan planner reads each Iceberg manifest once: a new snapshot costs its new
manifests, not the input's whole commit history, and plans the same files as pyiceberg."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.manifest import ManifestFile

from weir import types as T
from weir.compute.replica.dataflow_io import Planner
from weir.storage import ShardStore
from weir.storage.maintenance import local_path

SIMPLE = [("k", T.INT8, False), ("v", T.TEXT, True)]


def _rows(t: int) -> pa.Table:
    return pa.table({"k": pa.array([t % 3], pa.int64()), "v": pa.array([f"v{t}"], pa.string()),
                     "mz_timestamp": pa.array([t], pa.int64()), "mz_diff": pa.array([1], pa.int64())})


def _pyiceberg_files(shard) -> set[str]:  # noqa: ANN001
    return {local_path(t.file.file_path) for t in shard.table.scan().plan_files()}


def test_planner_reads_only_new_manifests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ShardStore(f"sqlite:///{tmp_path}/catalog.db", str(tmp_path / "warehouse"))
    shard = store.create_shard("u1", SIMPLE)
    reads: list[str] = []
    fetch = ManifestFile.fetch_manifest_entry

    def counting(self: ManifestFile, io, discard_deleted: bool = True):  # noqa: ANN001, ANN202
        reads.append(self.manifest_path)
        return fetch(self, io, discard_deleted)

    monkeypatch.setattr(ManifestFile, "fetch_manifest_entry", counting)
    planner = Planner(shard)
    for t in range(12):
        shard.compare_and_append(_rows(t), t, t + 1, 0)
        before = len(reads)
        plan = planner.plan(t + 1, lower=t)
        assert set(plan.files) == _pyiceberg_files(shard) and len(plan.files) == t + 1
        assert plan.times == {t}
        # a fast append adds one manifest: only it is read (pyiceberg's own scan above read them all)
        assert len(reads) - before == 1 + (t + 1), (t, reads[before:])
        reads.clear()
        assert set(planner.plan(t + 1).files) == set(plan.files) and not reads  # same snapshot: cached

    shard.downgrade_since(10)
    assert shard.compact(grace_seconds=3600).committed  # rewrites files: old manifests leave
    plan = planner.plan(12)
    assert set(plan.files) == _pyiceberg_files(shard) and len(plan.files) < 12
    assert sum(planner.record_counts().values()) == 12
