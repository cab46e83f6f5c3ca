"""Hydration status of compute objects (design 002, issue 13 part 4): per index and
materialized view and per replica, from what the replicas report. Real server, real
replica processes, real Spark."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any

import psycopg

from tests.integration.server import WeirServer


def _wait(c: psycopg.Connection, sql: str, ok: Callable[[list[tuple[Any, ...]]], bool],
          timeout: float = 120) -> list[tuple[Any, ...]]:
    deadline = time.time() + timeout
    rows: list[tuple[Any, ...]] = []
    while time.time() < deadline:
        rows = c.execute(sql).fetchall()
        if ok(rows):
            return rows
        time.sleep(0.3)
    raise AssertionError(f"{sql}: still {rows}")


def _statuses(object_id: str) -> str:
    return ("SELECT s.replica_id, s.hydrated, s.hydration_time, t.time_ns, h.hydrated "
            "FROM mz_internal.mz_compute_hydration_statuses s "
            "JOIN mz_internal.mz_compute_hydration_times t USING (object_id, replica_id) "
            "JOIN mz_internal.mz_hydration_statuses h USING (object_id, replica_id) "
            f"WHERE s.object_id = '{object_id}' ORDER BY s.replica_id")


def test_objects_hydrate_per_replica_and_again_after_a_restart(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE CLUSTER hyd (SIZE '1', REPLICATION FACTOR 2)")
        try:
            c.execute("CREATE TABLE hyd_t (k int, v int)")
            c.execute("INSERT INTO hyd_t SELECT g % 10, g FROM generate_series(1, 1000) AS g")
            c.execute("CREATE MATERIALIZED VIEW hyd_mv IN CLUSTER hyd AS SELECT k, sum(v) AS s FROM hyd_t GROUP BY k")
            c.execute("CREATE INDEX hyd_idx IN CLUSTER hyd ON hyd_mv (k)")
            mv, idx = (c.execute(f"SELECT id FROM mz_catalog.mz_objects WHERE name = '{n}'").fetchone()[0]
                       for n in ("hyd_mv", "hyd_idx"))
            replicas = [r for (r,) in c.execute(
                "SELECT r.id FROM mz_catalog.mz_cluster_replicas r JOIN mz_catalog.mz_clusters c "
                "ON r.cluster_id = c.id WHERE c.name = 'hyd' ORDER BY r.name").fetchall()]  # r1, r2
            for object_id in (mv, idx):
                # one row per replica; all three relations agree; the time it took is positive
                rows = _wait(c, _statuses(object_id), lambda rows: len(rows) == 2 and all(r[1] for r in rows))
                assert sorted(r[0] for r in rows) == sorted(replicas)
                for _, hydrated, took, time_ns, any_hydrated in rows:
                    assert hydrated and any_hydrated and time_ns > 0
                    assert abs(took.total_seconds() * 1e9 - time_ns) < 1e6
            # sources are in mz_hydration_statuses without a replica
            c.execute("CREATE SOURCE hyd_counter FROM LOAD GENERATOR COUNTER (TICK INTERVAL '100ms')")
            src = c.execute("SELECT id FROM mz_catalog.mz_sources WHERE name = 'hyd_counter'").fetchone()[0]
            _wait(c, f"SELECT replica_id, hydrated FROM mz_internal.mz_hydration_statuses WHERE object_id = '{src}'",
                  lambda rows: rows == [(None, True)])

            # kill -9 one replica: its rows go back to not hydrated, then hydrate again;
            # the other replica's stay; never two rows for one (object, replica)
            victim = replicas[1]
            (pid,) = server.replica_pids_of(victim)
            before = c.execute(f"SELECT time_ns FROM mz_internal.mz_compute_hydration_times "
                               f"WHERE object_id = '{mv}' AND replica_id = '{victim}'").fetchone()[0]
            os.kill(pid, signal.SIGKILL)
            _wait(c, f"SELECT hydrated, time_ns FROM mz_internal.mz_compute_hydration_statuses "
                  f"JOIN mz_internal.mz_compute_hydration_times USING (object_id, replica_id) "
                  f"WHERE object_id = '{mv}' AND replica_id = '{victim}'",
                  lambda rows: rows == [(False, None)], timeout=30)
            assert c.execute(f"SELECT hydrated FROM mz_internal.mz_compute_hydration_statuses "
                             f"WHERE object_id = '{mv}' AND replica_id = '{replicas[0]}'").fetchall() == [(True,)]
            rows = _wait(c, _statuses(mv), lambda rows: len(rows) == 2 and all(r[1] for r in rows), timeout=180)
            assert server.replica_pids_of(victim) - {pid}
            assert dict((r[0], r[3]) for r in rows)[victim] != before  # a new hydration, timed anew
            for relation in ("mz_compute_hydration_statuses", "mz_compute_hydration_times", "mz_hydration_statuses"):
                assert c.execute(f"SELECT object_id, replica_id, count(*) FROM mz_internal.{relation} "
                                 "GROUP BY object_id, replica_id HAVING count(*) > 1").fetchall() == []
            # dropping retracts
            c.execute("DROP INDEX hyd_idx")
            _wait(c, f"SELECT * FROM mz_internal.mz_compute_hydration_statuses WHERE object_id = '{idx}'",
                  lambda rows: rows == [])
            c.execute("ALTER CLUSTER hyd SET (REPLICATION FACTOR 1)")  # drops r2
            _wait(c, f"SELECT replica_id FROM mz_internal.mz_hydration_statuses WHERE object_id = '{mv}'",
                  lambda rows: rows == [(replicas[0],)])
        finally:
            c.execute("DROP SOURCE IF EXISTS hyd_counter")
            c.execute("DROP CLUSTER hyd CASCADE")
            c.execute("DROP TABLE IF EXISTS hyd_t CASCADE")
