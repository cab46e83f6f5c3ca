"""A replica that runs out of memory: status `offline`, reason `oom-killed`; the other
replica of its cluster carries on.

A real `weir serve` with a size map (`--replica-sizes`) that adds a size with a tiny Spark
driver heap. An unmanaged cluster has one replica of that size and one of size '1' (1 GB
heap, both local[1]), and a materialized view whose query builds one string of `n` bytes
per row (`repeat('x', n)`). A row with n = 200 MB cannot fit in the tiny heap at all
(the allocation fails at once: deterministic, no slow GC death), while the 1 GB replica
computes it in a fraction of a second. The tiny replica's JVM dies
(-XX:+ExitOnOutOfMemoryError), the orchestrator sees the OOM in its log and restarts it;
the size '1' replica keeps the view up to date and keeps answering queries.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest

from tests.integration.server import WeirServer

pytestmark = pytest.mark.integration

T = TypeVar("T")

TINY = "oom-tiny"
HEAP_MB = 192
BIG_N = 200_000_000  # bytes in one string: more than the tiny heap, a fifth of size '1'

MV = "SELECT count(*), sum(len) FROM oom_mv"

SIZES = {"sizes": {TINY: {
    "workers": 1,  # local[1]
    "driver_memory": f"{HEAP_MB}m",
    # Spark refuses a heap under 450 MB unless its reserved memory is lowered (bytes)
    "spark_conf": {"spark.testing.reservedMemory": str(16 * 1024 * 1024)},
}}}


@pytest.fixture
def oom_server(tmp_path: Path, java: None) -> Iterator[WeirServer]:
    sizes = tmp_path / "sizes.json"
    sizes.write_text(json.dumps(SIZES))
    srv = WeirServer(tmp_path / "data", extra_args=["--replica-sizes", str(sizes)])
    srv.start(wait_for_replica=False)  # the test parks quickstart's replica at once
    try:
        yield srv
    finally:
        srv.stop()


def _poll(fn: Callable[[], T | None], timeout: float, what: str, *, every: float = 0.5,
          starting: bool = False) -> T:
    """fn() until it returns something truthy (generous timeouts: a loaded 2-core box).
    `starting`: the cluster may have no ready replica yet (57P03 after a while): retry."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except psycopg.Error as e:
            if not starting:
                raise
            last = e
        else:
            if last:
                return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}")


def _statuses(c: psycopg.Connection) -> dict[str, tuple[str, str | None]]:
    rows = c.execute("SELECT replica_id, status, reason "
                     "FROM mz_internal.mz_cluster_replica_statuses").fetchall()
    return {r: (s, reason) for r, s, reason in rows}


def _history(c: psycopg.Connection, replica_id: str) -> list[tuple[str, str | None]]:
    return [(s, reason) for s, reason in c.execute(
        "SELECT status, reason FROM mz_internal.mz_cluster_replica_status_history "
        "WHERE replica_id = %s ORDER BY occurred_at", (replica_id,)).fetchall()]


def test_oom_killed_replica_is_offline_and_the_other_carries_on(oom_server: WeirServer) -> None:
    srv = oom_server
    with srv.connect() as c:
        # Two replicas on a 2-core machine: park quickstart's. Every query of this test
        # (status relations too) runs on the cluster whose small replica runs out of memory.
        c.execute("ALTER CLUSTER quickstart SET (REPLICATION FACTOR 0)")
        c.execute(f"CREATE CLUSTER oom_c REPLICAS (small (SIZE '{TINY}'), big (SIZE '1'))")
        c.execute("SET cluster = oom_c")
        c.execute("CREATE TABLE oom_t (id int, n int)")
        c.execute("INSERT INTO oom_t VALUES (1, 10)")
        ids = dict(_poll(lambda: c.execute(
            "SELECT r.name, r.id FROM mz_catalog.mz_cluster_replicas r "
            "JOIN mz_catalog.mz_clusters cl ON r.cluster_id = cl.id "
            "WHERE cl.name = 'oom_c'").fetchall(), 180, "a replica of oom_c", starting=True))
        small, big = ids["small"], ids["big"]
        # both start fine: the tiny heap is enough for Spark itself
        _poll(lambda: all(_statuses(c).get(r, ("",))[0] == "online" for r in (small, big)),
              180, "both replicas online", starting=True)

        # a projection: maintained from the table's updates (each row computed once)
        c.execute("CREATE MATERIALIZED VIEW oom_mv IN CLUSTER oom_c AS "
                  "SELECT id, length(repeat('x', n)) AS len FROM oom_t")
        assert c.execute(MV).fetchone() == (1, 10)

        # A row neither replica can skip computing makes the small one run out of memory.
        # (A replica that lags behind the other one may follow the view's output instead
        # of computing an interval itself: another big row is a fresh interval to compute.)
        rows, total = 1, 10
        oom_seen_at: list[str] = []

        def small_oom_killed() -> bool:
            if _statuses(c).get(small) == ("offline", "oom-killed"):
                oom_seen_at.append("mz_cluster_replica_statuses")
            elif ("offline", "oom-killed") in _history(c, small):
                oom_seen_at.append("mz_cluster_replica_status_history")
            return bool(oom_seen_at)

        for attempt in range(3):
            rows, total = rows + 1, total + BIG_N
            c.execute("INSERT INTO oom_t VALUES (%s, %s)", (rows, BIG_N))
            # the big replica computes it: the view is up to date
            assert c.execute(MV).fetchone() == (rows, total)
            try:
                _poll(small_oom_killed, 40, "the small replica to be oom-killed")
                break
            except AssertionError:
                if attempt == 2:
                    raise
        assert oom_seen_at, "the small replica was never seen oom-killed"
        _poll(lambda: ("offline", "oom-killed") in _history(c, small), 30,
              "oom-killed in the status history")
        log = (srv.data_dir / "logs" / f"replica-{small}.log").read_text(errors="replace")
        assert "java.lang.OutOfMemoryError" in log

        # The other replica carries on: the view keeps updating, SELECTs on the cluster answer.
        for _ in range(2):
            rows, total = rows + 1, total + 7
            c.execute("INSERT INTO oom_t VALUES (%s, 7)", (rows,))
            assert c.execute(MV).fetchone() == (rows, total)
            assert c.execute("SELECT count(*), max(id) FROM oom_t").fetchone() == (rows, rows)

        # ... in its first life: never restarted, never out of memory
        _poll(lambda: _statuses(c).get(big) == ("online", None), 30, "the big replica online")
        assert ("offline", "oom-killed") not in _history(c, big)
        big_log = (srv.data_dir / "logs" / f"replica-{big}.log").read_text(errors="replace")
        assert big_log.count("=== weir: starting replica") == 1
        assert "OutOfMemoryError" not in big_log

        # The orchestrator restarted the small replica; its view only sees the small rows
        # since (updates), so it stays up.
        _poll(lambda: _statuses(c).get(small) == ("online", None), 90, "the small replica back online")
