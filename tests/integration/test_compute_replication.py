"""Active replication: a cluster with two replica processes (local[1] each)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.test_compute import SLOW, LoopThread
from weir.compute.controller import ComputeController
from weir.orchestrator.process import ProcessOrchestrator

pytestmark = pytest.mark.integration


class Cluster:
    def __init__(self, lt: LoopThread, orch: ProcessOrchestrator, ctl: ComputeController) -> None:
        self.lt, self.orch, self.ctl = lt, orch, ctl
        self.incarnations: dict[str, int] = {}

    def next_incarnation(self, replica_id: str) -> int:
        self.incarnations[replica_id] = self.incarnations.get(replica_id, 0) + 1
        return self.incarnations[replica_id]

    def statuses(self) -> dict[str, Any]:
        return {s.replica_id: s for s in self.ctl.replica_statuses()}

    def wait_online(self, replica_ids: list[str], incarnation: int, timeout: float = 150) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = self.statuses()
            if all(st[r].status == "online" and st[r].incarnation == incarnation
                   for r in replica_ids):
                return
            time.sleep(0.2)
        raise AssertionError(f"replicas not online: {self.statuses()}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    lt = LoopThread()
    orch = ProcessOrchestrator(log_dir=tmp_path_factory.mktemp("logs"), min_backoff=0.2)
    c = Cluster(lt, orch, ComputeController(orch, ready_timeout=150))

    async def start() -> None:
        for r in ("r1", "r2"):
            await c.ctl.add_replica("c2", r, "1", lambda r=r: c.next_incarnation(r))

    lt.run(start())
    c.wait_online(["r1", "r2"], 1)
    try:
        yield c
    finally:
        lt.run(c.ctl.stop(), timeout=60)
        lt.close()


def test_first_answer_wins_and_the_loser_is_canceled(cluster: Cluster) -> None:
    async def go() -> tuple[str, list[dict[str, Any]]]:
        result = await cluster.ctl.peek("c2", SLOW, [], 1)
        return result.replica_id, (await result.collect()).to_pylist()

    replica_id, rows = cluster.lt.run(go())
    assert replica_id in ("r1", "r2") and rows == [{"s": 190, "z": "null"}]
    time.sleep(1.5)  # a heartbeat later, neither replica is still running it
    assert all(s.status == "online" for s in cluster.statuses().values())
    assert all(cluster.ctl.replicas[r].last_status.get("active_peeks") == 0 for r in ("r1", "r2"))


def test_describe_on_a_replicated_cluster(cluster: Cluster) -> None:
    schema = cluster.lt.run(cluster.ctl.describe("c2", "SELECT 1 AS a, 'x' AS b", []))
    assert schema.names == ["a", "b"]


def test_a_replica_dies_mid_peek_and_the_other_answers(cluster: Cluster) -> None:
    pid = cluster.orch.pid("r1")
    assert pid is not None

    async def go() -> tuple[str, list[dict[str, Any]], float]:
        started = time.monotonic()
        task = asyncio.create_task(cluster.ctl.peek("c2", SLOW, [], 1))
        await asyncio.sleep(1.0)
        os.kill(pid, signal.SIGKILL)
        result = await task
        rows = (await result.collect()).to_pylist()
        return result.replica_id, rows, time.monotonic() - started

    replica_id, rows, elapsed = cluster.lt.run(go())
    assert (replica_id, rows) == ("r2", [{"s": 190, "z": "null"}])
    assert elapsed < 10  # r2 answered; nobody waited for r1's restart
    cluster.wait_online(["r1"], 2)
    assert cluster.statuses()["r2"].incarnation == 1
    assert cluster.lt.run(go_simple(cluster)) == [{"one": 1}]


async def go_simple(cluster: Cluster) -> list[dict[str, Any]]:
    result = await cluster.ctl.peek("c2", "SELECT 1 AS one", [], 1)
    return (await result.collect()).to_pylist()
