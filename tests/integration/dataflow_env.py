"""The harness of the dataflow tests (tests/integration/test_compute_dataflow.py): the test
plays the coordinator, writing input shards and announcing their uppers to a real
compute controller whose replicas maintain output shards; the views' expected updates
come from a Python model of each query."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from tests.integration.test_compute import LoopThread
from weir import types as T
from weir.compute.controller import ComputeController
from weir.orchestrator.process import ProcessOrchestrator
from weir.storage.persist import Shard, ShardStore

Row = tuple[Any, ...]
Update = tuple[Row, int, int]  # (row, time, diff)
KV = [("k", T.INT4, False), ("v", T.INT8, False)]


@dataclass
class Input:
    shard: Shard
    updates: list[Update]

    def append(self, rows: list[tuple[Row, int]], time: int, upper: int | None = None) -> None:
        """Append (row, diff) pairs at `time` and advance the upper past it."""
        data = pa.table({**{n: pa.array([r[i] for r, _ in rows], t.arrow)
                            for i, (n, t, _) in enumerate(self.shard.columns)},
                         "mz_timestamp": pa.array([time] * len(rows), pa.int64()),
                         "mz_diff": pa.array([d for _, d in rows], pa.int64())})
        f = self.shard.frontiers()
        self.shard.compare_and_append(data, f.upper, upper or time + 1, 0)
        self.updates += [(r, time, d) for r, d in rows]

    def at(self, t: int) -> Counter[Row]:
        c: Counter[Row] = Counter()
        for r, u, d in self.updates:
            if u <= t:
                c[r] += d
        return +c


class Env:
    def __init__(self, lt: LoopThread, orch: ProcessOrchestrator, ctl: ComputeController,
                 store: ShardStore) -> None:
        self.lt, self.orch, self.ctl, self.store = lt, orch, ctl, store
        self.incarnations: dict[str, int] = {}

    def next_incarnation(self, replica_id: str) -> int:
        self.incarnations[replica_id] = self.incarnations.get(replica_id, 0) + 1
        return self.incarnations[replica_id]

    def input(self, shard_id: str, columns: list[Any] = KV) -> Input:
        return Input(self.store.create_shard(shard_id, columns, initial_upper=0), [])

    def create(self, dataflow_id: str, sql: str, inputs: dict[str, str], out: Shard, as_of: int,
               strategy: str = "recompute", min_updates: int = 0) -> str:
        specs = [{"name": name, "shard_id": sid} for name, sid in inputs.items()]
        return self.lt.run(self.ctl.create_dataflow("c1", dataflow_id, sql, specs, out.shard_id,
                                                    as_of, strategy, min_updates=min_updates))

    def status(self, replica_id: str, dataflow_id: str) -> dict[str, Any]:
        return dict(self.ctl.replicas[replica_id].last_status.get("dataflows", {}).get(dataflow_id, {}))

    def drop(self, dataflow_id: str) -> None:
        self.lt.run(self.ctl.drop_dataflow("c1", dataflow_id))

    def announce(self, uppers: dict[str, int]) -> None:
        async def go() -> None:
            self.ctl.update_input_frontiers(uppers)

        self.lt.run(go())

    def online(self, replica_id: str, incarnation: int, timeout: float = 150) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = {s.replica_id: s for s in self.ctl.replica_statuses()}
            if st[replica_id].status == "online" and st[replica_id].incarnation == incarnation:
                return
            time.sleep(0.2)
        raise AssertionError(f"{replica_id} not online: {self.ctl.replica_statuses()}")


def wait_upper(shard: Shard, upper: int, timeout: float = 90) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        u = shard.frontiers().upper
        if u >= upper:
            return u
        time.sleep(0.2)
    raise AssertionError(f"{shard.shard_id} upper {shard.frontiers().upper} never reached {upper}")


def output_log(shard: Shard, upper: int) -> dict[int, Counter[Row]]:
    """The output's updates before `upper`, consolidated per time."""
    data = shard.read_updates(0, upper).to_pylist()
    per: dict[int, Counter[Row]] = {}
    for r in data:
        t, d = r.pop("mz_timestamp"), r.pop("mz_diff")
        per.setdefault(t, Counter())[tuple(r.values())] += d
    return {t: c for t, c in ((t, Counter({k: v for k, v in c.items() if v})) for t, c in per.items()) if c}


def expected_log(query: Callable[[int], Counter[Row]], times: list[int]) -> dict[int, Counter[Row]]:
    """The updates a view must hold: its changes at each input change time."""
    out: dict[int, Counter[Row]] = {}
    before: Counter[Row] = Counter()
    for t in sorted(set(times)):
        now = query(t)
        diff = Counter(now)
        diff.subtract(before)
        diff = Counter({k: v for k, v in diff.items() if v})
        if diff:
            out[t] = diff
        before = now
    return out


def sums(rows: Counter[Row]) -> Counter[Row]:
    total: dict[Any, int] = {}
    for (k, v), n in rows.items():
        total[k] = total.get(k, 0) + v * n
    return Counter({(k, s): 1 for k, s in total.items()})
