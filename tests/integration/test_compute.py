"""Compute end to end: a real replica process (local[1] Spark) behind the controller."""

from __future__ import annotations

import asyncio
import datetime as dt
import decimal
import json
import os
import signal
import threading
import time
import urllib.request
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from weir.compute.controller import ComputeController
from weir.errors import WeirError
from weir.orchestrator.process import ProcessOrchestrator
from weir.types import INTERVAL

pytestmark = pytest.mark.integration

D = decimal.Decimal


class LoopThread:
    """An event loop in a thread, so the replica stays supervised between tests."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float = 120) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@dataclass
class Env:
    lt: LoopThread
    orch: ProcessOrchestrator
    ctl: ComputeController
    incarnations: list[int]
    data: Path

    def peek(self, sql: str, inputs: list[dict[str, Any]], timestamp: int = 100) -> pa.Table:
        async def go() -> pa.Table:
            result = await self.ctl.peek("c1", sql, inputs, timestamp)
            return await result.collect()

        return self.lt.run(go())

    def rows(self, sql: str, inputs: list[dict[str, Any]], timestamp: int = 100) -> list[dict[str, Any]]:
        return self.peek(sql, inputs, timestamp).to_pylist()


COLUMNS = [
    {"name": "id", "pg_type": "integer", "nullable": False},
    {"name": "name", "pg_type": "text", "nullable": True},
    {"name": "amount", "pg_type": "numeric(10,2)", "nullable": True},
    {"name": "s", "pg_type": "smallint", "nullable": True},
    {"name": "iv", "pg_type": "interval", "nullable": True},
    {"name": "tags", "pg_type": "text[]", "nullable": True},
    {"name": "ts", "pg_type": "timestamp", "nullable": True},
    {"name": "tz", "pg_type": "timestamp with time zone", "nullable": True},
]

STORED = pa.schema([
    ("id", pa.int32()), ("name", pa.string()), ("amount", pa.decimal128(10, 2)),
    ("s", pa.int32()), ("iv", pa.int64()), ("tags", pa.list_(pa.string())),
    ("ts", pa.timestamp("us")), ("tz", pa.timestamp("us", "UTC")), ("mz_timestamp", pa.int64()), ("mz_diff", pa.int64()),
])


def _write(path: Path, rows: list[tuple[Any, ...]]) -> str:
    cols = list(zip(*rows, strict=True))
    pq.write_table(pa.table([pa.array(c, f.type) for c, f in zip(cols, STORED, strict=True)],
                            schema=STORED), path)
    return str(path)


TS = dt.datetime(2024, 2, 29, 12, 30)
TZ = dt.datetime(2024, 2, 29, 12, 30, tzinfo=dt.UTC)


def _files(data: Path) -> list[str]:
    sec = 1_000_000
    return [
        _write(data / "f1.parquet", [
            (1, "a", D("10.50"), 1, 5 * sec, ["x"], TS, TZ, 1, 1),
            (2, "b", D("20.00"), 2, None, [], None, None, 1, 1),
            (3, "c", None, None, 86400 * sec, None, None, None, 1, 1),
        ]),
        _write(data / "f2.parquet", [
            (2, "b", D("20.00"), 2, None, [], None, None, 5, -1),
            (2, "b", D("25.00"), 2, None, [], None, None, 5, 1),
            (4, "d", D("1.00"), 4, sec, ["y", "z"], None, None, 5, 2),
        ]),
        _write(data / "f3.parquet", [(1, "a", D("10.50"), 1, 5 * sec, ["x"], TS, TZ, 9, -1)]),
    ]


def _input(env: Env, name: str = "weir_u1", as_of: int = 100, **kw: Any) -> dict[str, Any]:
    if "files" not in kw:
        kw["files"] = _files(env.data)
    return {"name": name, "columns": COLUMNS, "as_of": as_of, "consolidate": True, **kw}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    lt = LoopThread()
    orch = ProcessOrchestrator(log_dir=tmp_path_factory.mktemp("logs"), min_backoff=0.2)
    ctl = ComputeController(orch, ready_timeout=150)
    incarnations: list[int] = []

    def next_incarnation() -> int:
        incarnations.append(len(incarnations) + 1)
        return incarnations[-1]

    async def start() -> None:
        await ctl.add_replica("c1", "r1", "1", next_incarnation)
        await ctl.wait_for_replicas("c1", timeout=150)

    lt.run(start(), timeout=200)
    e = Env(lt, orch, ctl, incarnations, tmp_path_factory.mktemp("data"))
    try:
        yield e
    finally:
        pid = orch.pid("r1")
        lt.run(ctl.stop(), timeout=60)
        lt.close()
        if pid is not None:
            assert _group_gone(pid)  # the replica and its JVM are gone


def _group_gone(pgid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_status_reports_the_replica(env: Env) -> None:
    (status,) = env.ctl.replica_statuses()
    assert (status.cluster_id, status.replica_id, status.status) == ("c1", "r1", "online")
    assert status.incarnation == 1 and status.pid == env.orch.pid("r1")
    assert status.ui_url and status.ui_url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(f"{status.ui_url}/api/v1/applications", timeout=10) as resp:
        assert json.load(resp)[0]["name"] == "weir-replica"
    time.sleep(1.2)
    assert time.time() - (env.ctl.replica_statuses()[0].last_heartbeat or 0) < 3


def test_peek_consolidates_at_each_as_of(env: Env) -> None:
    sql = "SELECT id, name, amount, s, iv, tags, ts, tz FROM weir_u1 ORDER BY id"
    assert env.rows(sql, [_input(env, as_of=0)]) == []
    at1 = env.peek(sql, [_input(env, as_of=1)])
    assert at1.schema.field("s").type == pa.int16()
    # a shard written when intervals were long microseconds reads as PostgreSQL's three fields
    assert at1.schema.field("iv").type == INTERVAL.arrow
    assert at1.schema.field("amount").type == pa.decimal128(10, 2)
    assert at1.schema.field("ts").type == pa.timestamp("us")
    assert at1.schema.field("tz").type == pa.timestamp("us", "UTC")
    none = {"ts": None, "tz": None}
    assert at1.to_pylist() == [
        {"id": 1, "name": "a", "amount": D("10.50"), "s": 1, "iv": {"months": 0, "days": 0, "micros": 5_000_000},
         "tags": ["x"], "ts": TS, "tz": TZ},
        {"id": 2, "name": "b", "amount": D("20.00"), "s": 2, "iv": None, "tags": [], **none},
        {"id": 3, "name": "c", "amount": None, "s": None, "iv": {"months": 0, "days": 1, "micros": 0},
         "tags": None, **none},
    ]
    at5 = [(r["id"], r["amount"]) for r in env.rows(sql, [_input(env, as_of=5)])]
    assert at5 == [(1, D("10.50")), (2, D("25.00")), (3, None), (4, D("1.00")), (4, D("1.00"))]
    at9 = [r["id"] for r in env.rows(sql, [_input(env, as_of=9)])]
    assert at9 == [2, 3, 4, 4]
    # as_of defaults to the peek timestamp
    spec = _input(env)
    del spec["as_of"]
    assert [r["id"] for r in env.rows(sql, [spec], timestamp=4)] == [1, 2, 3]


def test_filters_aggregates_and_joins(env: Env) -> None:
    inputs = [_input(env, as_of=5), {**_input(env, as_of=1), "name": "weir_u2"}]
    assert env.rows("SELECT id FROM weir_u1 WHERE amount > 5 ORDER BY id", inputs) == [
        {"id": 1}, {"id": 2}]
    agg = env.rows("SELECT count(*) AS n, sum(amount) AS total, count(DISTINCT id) AS ids "
                   "FROM weir_u1", inputs)
    assert agg == [{"n": 5, "total": D("37.50"), "ids": 4}]
    joined = env.rows("SELECT a.id, a.amount AS now, b.amount AS before FROM weir_u1 a "
                      "JOIN weir_u2 b ON a.id = b.id WHERE a.amount <> b.amount", inputs)
    assert joined == [{"id": 2, "now": D("25.00"), "before": D("20.00")}]


def test_no_consolidation_and_no_files(env: Env) -> None:
    plain = {**_input(env, as_of=1), "files": _files(env.data)[:1], "consolidate": False}
    empty = {**_input(env), "name": "weir_u2", "files": []}
    assert env.rows("SELECT count(*) AS n FROM weir_u1", [plain]) == [{"n": 3}]
    out = env.peek("SELECT * FROM weir_u2", [empty])
    assert out.num_rows == 0 and out.schema.names == [c["name"] for c in COLUMNS]


def test_large_result_streams_in_batches(env: Env) -> None:
    async def go() -> tuple[int, int]:
        result = await env.ctl.peek("c1", "SELECT id FROM range(150000)", [], 1)
        sizes = [b.num_rows async for b in result.batches]
        return len(sizes), sum(sizes)

    assert env.lt.run(go()) == (3, 150000)


def test_concurrent_peeks_see_their_own_inputs(env: Env) -> None:
    files = _files(env.data)  # written once: _input() rewrites them, under a running peek's feet

    async def go() -> list[list[dict[str, Any]]]:
        async def one(as_of: int) -> list[dict[str, Any]]:
            result = await env.ctl.peek("c1", "SELECT count(*) AS n FROM weir_u1",
                                        [_input(env, as_of=as_of, files=files)], 100)
            return (await result.collect()).to_pylist()

        return list(await asyncio.gather(one(1), one(5), one(9)))

    assert env.lt.run(go()) == [[{"n": 3}], [{"n": 5}], [{"n": 4}]]


def test_errors(env: Env) -> None:
    with pytest.raises(WeirError) as e:
        env.peek("SELECT id / (id - id) FROM weir_u1", [_input(env)])
    assert (e.value.sqlstate, e.value.message) == ("22012", "division by zero")
    with pytest.raises(WeirError) as e:
        env.peek("SELECT nosuch FROM weir_u1", [_input(env)])
    assert (e.value.sqlstate, e.value.message) == ("42703", 'column "nosuch" does not exist')
    with pytest.raises(WeirError) as e:
        env.peek("SELECT * FROM weir_u9", [])
    assert e.value.sqlstate == "42P01"
    with pytest.raises(WeirError) as e:
        env.peek("SELEC 1", [])
    assert e.value.sqlstate == "42601"


def test_describe(env: Env) -> None:
    schema = env.lt.run(env.ctl.describe(
        "c1", "SELECT id, amount * 2 AS a2, iv, CAST(s AS INT) AS s FROM weir_u1", [_input(env)]))
    assert schema.names == ["id", "a2", "iv", "s"]
    assert schema.field("id").type == pa.int32()
    assert schema.field("iv").type == INTERVAL.arrow
    with pytest.raises(WeirError) as e:
        env.lt.run(env.ctl.describe("c1", "SELECT nosuch FROM weir_u1", [_input(env)]))
    assert e.value.sqlstate == "42703"


def test_cancel_a_long_peek(env: Env) -> None:
    sql = ("SELECT count(*) FROM range(0, 100000000) a CROSS JOIN range(0, 100000000) b "
           "WHERE a.id + b.id = 7")

    async def go() -> float:
        task = asyncio.create_task(env.ctl.peek("c1", sql, [], 1))
        await asyncio.sleep(3)
        assert not task.done()
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    assert env.lt.run(go()) < 1.0
    # local[1]: if the cross join were still running, this would not finish.
    started = time.monotonic()
    assert env.rows("SELECT 1 AS one", []) == [{"one": 1}]
    assert time.monotonic() - started < 20


def test_unknown_cluster_and_size(env: Env) -> None:
    with pytest.raises(WeirError) as e:
        env.lt.run(env.ctl.peek("nope", "SELECT 1", [], 1))
    assert e.value.sqlstate == "55000"
    with pytest.raises(WeirError) as e:
        env.lt.run(env.ctl.add_replica("c1", "r9", "huge", lambda: 1))
    assert e.value.sqlstate == "22023"


def test_stop_reading_early(env: Env) -> None:
    async def go() -> list[dict[str, Any]]:
        result = await env.ctl.peek("c1", "SELECT id FROM range(300000)", [], 1)
        async with result:
            async for _ in result.batches:
                break
        again = await env.ctl.peek("c1", "SELECT 2 AS two", [], 1)
        return (await again.collect()).to_pylist()

    assert env.lt.run(go()) == [{"two": 2}]


# Sleeps 100 ms per row (2 s); `id * 0` keeps Spark from folding the call away and
# max(z) from pruning it (Thread.sleep returns void, which java_method renders 'null').
SLOW = ("SELECT sum(id) AS s, max(z) AS z FROM (SELECT id, "
        "java_method('java.lang.Thread', 'sleep', id * 0 + 100) AS z FROM range(0, 20, 1, 1))")


def test_kill_9_mid_peek_restarts_with_a_higher_incarnation(env: Env) -> None:
    old_pid = env.orch.pid("r1")
    assert old_pid is not None

    async def go() -> list[dict[str, Any]]:
        task = asyncio.create_task(env.ctl.peek("c1", SLOW, [], 1))
        await asyncio.sleep(1.0)
        os.kill(old_pid, signal.SIGKILL)
        # The only replica died mid-peek: the peek is reissued once it is back.
        result = await task
        return (await result.collect()).to_pylist()

    assert env.lt.run(go()) == [{"s": 190, "z": "null"}]
    assert env.rows("SELECT count(*) AS n FROM weir_u1", [_input(env, as_of=5)]) == [{"n": 5}]
    (status,) = env.ctl.replica_statuses()
    assert status.status == "online" and status.incarnation == 2
    assert status.pid != old_pid and env.incarnations == [1, 2]
    assert status.exit_code == -signal.SIGKILL
    (proc,) = env.orch.processes()
    assert (proc.restarts, proc.last_exit_reason) == (1, "killed by signal SIGKILL")
    assert _group_gone(old_pid)  # its JVM went with it


def test_out_of_memory_restarts_the_replica(env: Env) -> None:
    """The JVM exits on OOM (ExitOnOutOfMemoryError); the replica follows and is restarted."""
    sql = ("SELECT count(*) FROM (SELECT collect_list(repeat('x', 1000000)) AS l "
           "FROM range(3000)) WHERE size(l) > 0")
    before = env.ctl.replica_statuses()[0].incarnation or 0
    env.ctl.peek_attempts = 1
    try:
        with pytest.raises(WeirError) as e:
            env.peek(sql, [])
    finally:
        env.ctl.peek_attempts = 2
    assert (e.value.sqlstate, e.value.detail) == ("53200", "1 attempts. Replica states: r1: oom-killed.")
    (proc,) = env.orch.processes()
    assert proc.last_exit_reason == "oom-killed"
    assert env.rows("SELECT 3 AS three", []) == [{"three": 3}]
    assert env.ctl.replica_statuses()[0].incarnation == before + 1
