"""Hydration status of compute objects (design 002, issue 13 part 4): per index and
materialized view and per replica, from what the replicas report. Real server, real
replica processes, real Spark."""

from __future__ import annotations

import os
import re
import signal
import time
from typing import Any

import psycopg
import pytest

from tests.integration.server import WeirServer, wait_for_rows

_wait = wait_for_rows


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
            operators = ("SELECT count(DISTINCT o.id) FROM mz_introspection.mz_dataflow_operators_per_worker_{r} o "
                         "JOIN mz_introspection.mz_compute_exports_{r} e ON e.dataflow_id = o.dataflow_id "
                         f"WHERE e.export_id = '{mv}'")
            _wait(c, operators.format(r=victim), lambda rows: rows[0][0] > 3)  # it ran the view's plan
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
            # per plan node too: each replica has its own rows, the restarted one's hydrated anew,
            # under the plan node ids pinned when the view was created
            per_node = ("SELECT replica_id, bool_and(hydrated), count(DISTINCT plan_node_id), min(plan_node_id), "
                        "max(plan_node_id) FROM "
                        "mz_internal.mz_compute_operator_hydration_statuses_per_worker "
                        f"WHERE object_id = '{mv}' GROUP BY replica_id ORDER BY replica_id")
            nodes = _wait(c, per_node, lambda rows: len(rows) == 2 and all(r[1] for r in rows), timeout=60)
            assert sorted(r[0] for r in nodes) == sorted(replicas)
            assert nodes[0][2:] == nodes[1][2:] and nodes[0][2] > 3
            assert dict((r[0], r[3]) for r in rows)[victim] != before  # a new hydration, timed anew
            # the restarted replica rehydrated the view (its peer keeps the output current, and
            # no input changed): the operators of the view's plan are in introspection again
            _wait(c, operators.format(r=victim), lambda rows: rows[0][0] > 3, timeout=60)
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


def test_plan_nodes_hydrate_one_after_another(server: WeirServer) -> None:
    """A join + aggregate view whose hydration takes seconds, on a cluster of its own (reads
    of the statuses run on quickstart's replica meanwhile): its plan nodes' statuses per
    worker change while it runs (some hydrated, others not), all end hydrated, their node
    ids are EXPLAIN's and mz_compute_plan_nodes'; progress grows between polls and every
    scan ends having processed exactly the rows it expected."""
    with server.connect() as c:
        c.execute("CREATE CLUSTER hydp (SIZE '1')")
        c.execute("CREATE TABLE hyd_big (k int, v int)")
        c.execute("INSERT INTO hyd_big SELECT g % 200, g FROM generate_series(1, 100000) AS g")
        c.execute("CREATE TABLE hyd_dim (k int, name text)")
        c.execute("INSERT INTO hyd_dim SELECT g, 'n' || (g % 7) FROM generate_series(0, 199) AS g")
        try:
            c.execute("CREATE MATERIALIZED VIEW hyd_join IN CLUSTER hydp AS SELECT d.name, count(*) AS n, "
                      "sum(b.v) AS s FROM hyd_big b JOIN hyd_big b2 ON b.k = b2.k JOIN hyd_dim d ON b.k = d.k "
                      "GROUP BY d.name")
            oid = c.execute("SELECT id FROM mz_catalog.mz_materialized_views WHERE name = 'hyd_join'").fetchone()[0]
            seen: list[list[tuple[Any, ...]]] = []
            processed: list[int] = []
            deadline = time.time() + 180
            while time.time() < deadline:
                rows = c.execute("SELECT plan_node_id, worker_id, hydrated "
                                 "FROM mz_internal.mz_compute_operator_hydration_statuses_per_worker "
                                 f"WHERE object_id = '{oid}'").fetchall()
                if rows and not all(r[2] for r in rows):
                    processed.append(c.execute("SELECT sum(rows_processed) FROM mz_internal.mz_compute_hydration_progress "
                                               f"WHERE object_id = '{oid}'").fetchone()[0] or 0)
                seen.append(rows)
                if rows and all(r[2] for r in rows):
                    break
                time.sleep(0.2)
            final = seen[-1]
            assert final and all(r[2] for r in final), final
            # while it ran: some nodes hydrated on some worker, others not yet; rows grew
            assert any(any(r[2] for r in rows) and not all(r[2] for r in rows) for rows in seen), \
                [sorted(r[2] for r in rows) for rows in seen]
            assert any(b > a for a, b in zip(processed, processed[1:], strict=False)), processed
            # one row per (node, worker); the aggregated view agrees; ids are EXPLAIN's
            assert len({(n, w) for n, w, _ in final}) == len(final)
            agg = _wait(c, "SELECT plan_node_id, hydrated FROM mz_internal.mz_compute_operator_hydration_statuses "
                        f"WHERE object_id = '{oid}'", lambda rows: bool(rows) and all(h for _, h in rows), timeout=30)
            assert sorted(n for n, _ in agg) == sorted({n for n, _, _ in final}), (agg, final)
            plan = "\n".join(r[0] for r in c.execute(
                "EXPLAIN PHYSICAL PLAN WITH (node_ids) FOR MATERIALIZED VIEW hyd_join").fetchall())
            explained = {int(m) for m in re.findall(r"\((\d+)\)\s*$", plan, re.MULTILINE)}
            assert {n for n, _ in agg} == explained, plan
            nodes = dict(c.execute("SELECT plan_node_id, operator FROM mz_internal.mz_compute_plan_nodes "
                                   f"WHERE object_id = '{oid}'").fetchall())
            assert set(nodes) == explained and all(f"{op} ({n})" in plan for n, op in nodes.items()), (nodes, plan)
            # progress: a row per (node, worker) of the statuses; the scans read what their files hold
            progress = c.execute("SELECT plan_node_id, worker_id, rows_processed, rows_expected, started_at, "
                                 "rate_rows_per_second, estimated_remaining "
                                 f"FROM mz_internal.mz_compute_hydration_progress WHERE object_id = '{oid}'").fetchall()
            assert {(r[0], r[1]) for r in progress} == {(n, w) for n, w, _ in final}
            scans = [r for r in progress if nodes[r[0]].startswith("Scan")]
            assert {sum(r[2] for r in scans if r[0] == n) for n in {r[0] for r in scans}} == {200, 100000}
            for _, _, done, expected, started, rate, remaining in scans:
                assert done == expected and started is not None and rate > 0 and remaining.total_seconds() == 0
            # the object-level status agrees (once the output holds the hydration's interval)
            _wait(c, f"SELECT hydrated FROM mz_internal.mz_compute_hydration_statuses WHERE object_id = '{oid}'",
                  lambda rows: rows == [(True,)], timeout=30)
            c.execute("DROP MATERIALIZED VIEW hyd_join")
            _wait(c, "SELECT * FROM mz_internal.mz_compute_operator_hydration_statuses_per_worker "
                  f"WHERE object_id = '{oid}'", lambda rows: rows == [])
            # the system variable turns it off: what was reported is retracted
            c.execute("CREATE MATERIALIZED VIEW hyd_small AS SELECT count(*) AS n FROM hyd_dim")
            small = c.execute("SELECT id FROM mz_catalog.mz_materialized_views WHERE name = 'hyd_small'").fetchone()[0]
            per_worker = ("SELECT hydrated FROM mz_internal.mz_compute_operator_hydration_statuses_per_worker "
                          f"WHERE object_id = '{small}'")
            _wait(c, per_worker, lambda rows: bool(rows) and all(h for (h,) in rows))
            c.execute("ALTER SYSTEM SET enable_compute_operator_hydration_status_logging = off")
            try:
                _wait(c, per_worker, lambda rows: rows == [])
            finally:
                c.execute("ALTER SYSTEM RESET enable_compute_operator_hydration_status_logging")
        finally:
            c.execute("DROP TABLE hyd_big CASCADE")
            c.execute("DROP TABLE hyd_dim CASCADE")
            c.execute("DROP CLUSTER hydp CASCADE")


def test_statuses_of_objects_a_role_may_not_read_are_hidden(server: WeirServer) -> None:
    """A role sees the hydration rows of the objects it may SELECT from (an index: through
    what it indexes), a superuser all of them; the raw relations are superuser-only."""
    with server.connect() as c:
        c.execute("CREATE TABLE hv_t (a int)")
        c.execute("INSERT INTO hv_t VALUES (1), (2)")
        c.execute("CREATE MATERIALIZED VIEW hv_ok AS SELECT a FROM hv_t")
        c.execute("CREATE MATERIALIZED VIEW hv_no AS SELECT count(*) AS n FROM hv_t")
        c.execute("CREATE INDEX hv_ok_idx ON hv_ok (a)")
        c.execute("CREATE ROLE hv_alice LOGIN")
        c.execute("GRANT SELECT ON hv_ok TO hv_alice")
        ids = dict(c.execute("SELECT name, id FROM mz_catalog.mz_objects WHERE name LIKE 'hv\\_%'").fetchall())
        every = sorted([ids["hv_ok"], ids["hv_no"], ids["hv_ok_idx"]])
        # only this test's objects: the server is shared with other tests' views and indexes
        objects = ("SELECT DISTINCT object_id FROM mz_internal.{} WHERE object_id IN ('"
                   + "', '".join(every) + "') ORDER BY 1")
        _wait(c, objects.format("mz_compute_hydration_statuses"), lambda rows: sorted(r[0] for r in rows) == every)
        try:
            with psycopg.connect(f"{server.dsn} user=hv_alice", autocommit=True) as alice:
                mine = sorted([ids["hv_ok"], ids["hv_ok_idx"]])
                for relation in ("mz_compute_hydration_statuses", "mz_compute_hydration_times", "mz_hydration_statuses",
                                 "mz_compute_operator_hydration_statuses_per_worker",
                                 "mz_compute_operator_hydration_statuses", "mz_compute_hydration_progress",
                                 "mz_compute_plan_nodes"):
                    seen = [r[0] for r in alice.execute(objects.format(relation)).fetchall()]
                    assert seen and set(seen) <= set(mine) and ids["hv_no"] not in seen, (relation, seen)
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    alice.execute("SELECT * FROM mz_internal.mz_compute_hydration_progress_raw")
        finally:
            c.execute("DROP TABLE hv_t CASCADE")
            c.execute("DROP ROLE hv_alice")
