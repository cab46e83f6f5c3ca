"""Hydration expectations that outlive the replica that measured them, and a plan that
Spark changes after it was pinned (issue 13 parts 1 and 5, design 002). A server of its
own: it is restarted, and its clusters use a size whose Spark broadcasts only small inputs
(`spark.sql.autoBroadcastJoinThreshold` through --replica-sizes, the default sizes keep
Spark's 10 MB), so that growing an input turns a broadcast hash join into a sort-merge
join. Real server, real replica processes, real Spark."""

from __future__ import annotations

import functools
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from tests.integration.server import WeirServer, wait_for_rows

pytestmark = pytest.mark.integration

SIZE = "1-small-broadcast"
# a few small Parquet files (a dimension of 50 rows) are under it; 20,000 rows are over it
BROADCAST_BYTES = 16 * 1024
SIZES = {"sizes": {SIZE: {"workers": 1, "spark_conf": {
    "spark.sql.autoBroadcastJoinThreshold": str(BROADCAST_BYTES)}}}}
# max() keeps the materialized view recomputed (the incremental strategies do not keep it):
# its plan is the index's, node for node, and every interval runs that one plan
QUERY = ("SELECT d.name, count(*) AS n, sum(b.v) AS s, max(b.v) AS m FROM {big} b JOIN {dim} d ON b.k = d.k "
         "GROUP BY d.name")

Progress = dict[tuple[int, int], tuple[int, int | None]]  # (node, worker) -> rows processed, expected


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory, java: None) -> Iterator[WeirServer]:
    d = tmp_path_factory.mktemp("weir-expectations")
    sizes = d / "sizes.json"
    sizes.write_text(json.dumps(SIZES))
    server = WeirServer(d / "data", extra_args=["--replica-sizes", str(sizes)]).start()
    try:
        yield server
    finally:
        server.stop()


_wait = functools.partial(wait_for_rows, timeout=180)


def _one(c: psycopg.Connection, sql: str) -> Any:
    return c.execute(sql).fetchone()[0]


def _replica(c: psycopg.Connection, cluster: str) -> str:
    return _one(c, "SELECT r.id FROM mz_catalog.mz_cluster_replicas r JOIN mz_catalog.mz_clusters c "
                   f"ON r.cluster_id = c.id WHERE c.name = '{cluster}'")


def _nodes(c: psycopg.Connection, oid: str) -> dict[int, str]:
    """The object's pinned plan nodes (an index's arrangement is node 0), once known."""
    sql = f"SELECT plan_node_id, operator FROM mz_internal.mz_compute_plan_nodes WHERE object_id = '{oid}'"
    return dict(_wait(c, sql, bool))


def _progress(c: psycopg.Connection, oid: str, replica: str) -> Progress:
    rows = c.execute("SELECT plan_node_id, worker_id, rows_processed, rows_expected "
                     f"FROM mz_internal.mz_compute_hydration_progress WHERE object_id = '{oid}' "
                     f"AND replica_id = '{replica}'").fetchall()
    return {(int(n), int(w)): (rows, expected) for n, w, rows, expected in rows}


def _statuses(c: psycopg.Connection, oid: str, replica: str) -> dict[tuple[int, int], bool]:
    return {(int(n), int(w)): h for n, w, h in c.execute(
        "SELECT plan_node_id, worker_id, hydrated FROM mz_internal.mz_compute_operator_hydration_statuses_per_worker "
        f"WHERE object_id = '{oid}' AND replica_id = '{replica}'").fetchall()}


def _settled(c: psycopg.Connection, oids: list[str], replica: str, nodes: dict[str, dict[int, str]],
             during: Callable[[str, Progress, dict[tuple[int, int], bool]], None] = lambda o, p, s: None,
             timeout: float = 300) -> dict[str, Progress]:
    """Each object's progress on the replica once every pinned node of every object has
    hydrated everywhere (and the objects have); `during` sees every poll before that."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        done = True
        for oid in oids:
            p, s = _progress(c, oid, replica), _statuses(c, oid, replica)
            during(oid, p, s)
            done = done and bool(s) and {n for n, _ in s} == set(nodes[oid]) and all(s.values())
        hydrated = c.execute("SELECT count(*) FROM mz_internal.mz_compute_hydration_statuses WHERE object_id IN ('"
                             + "', '".join(oids) + f"') AND replica_id = '{replica}' AND hydrated").fetchone()[0]
        if done and hydrated == len(oids):
            return {oid: _progress(c, oid, replica) for oid in oids}
        time.sleep(0.3)
    raise AssertionError(f"{oids} on {replica} never settled: {[_statuses(c, o, replica) for o in oids]}")


def _sums(p: Progress, expected: bool = False) -> dict[int, int | None]:
    """Per plan node, over its workers: rows processed (or expected; None if any is)."""
    out: dict[int, int | None] = {}
    for (n, _), (rows, exp) in p.items():
        value, before = (exp if expected else rows), out.get(n, 0)
        out[n] = None if value is None or before is None else before + value
    return out


def _kill(c: psycopg.Connection, srv: WeirServer, replica: str, oid: str) -> int:
    """kill -9 the replica's process; returns once the controller saw it go (its rows are
    gone: whatever comes next is the new incarnation's)."""
    (pid,) = srv.replica_pids_of(replica)
    os.kill(pid, signal.SIGKILL)
    _wait(c, f"SELECT hydrated FROM mz_internal.mz_compute_hydration_statuses WHERE object_id = '{oid}' "
          f"AND replica_id = '{replica}'", lambda rows: rows == [(False,)], timeout=60)
    return pid


@pytest.mark.timeout(600)  # a kill -9, a server restart and three hydrations: 137 s idle, >300 s in CI
def test_expectations_survive_a_replica_kill_and_a_server_restart(srv: WeirServer) -> None:
    """The rows each plan node produced in a completed hydration are what its later
    hydrations expect, through a restarted replica (kill -9) and a server restart: a
    materialized view (its replica resumes from its output: each node, on worker 0, expects
    its total) and an index on a view (it hydrates anew: each worker expects its rows, and
    ends having produced exactly them). Never NULL for joins and aggregates, as a first
    hydration is."""
    with srv.connect() as c:
        c.execute("CREATE CLUSTER hx (SIZE '1')")
        c.execute("CREATE TABLE hx_big (k int, v int)")
        c.execute("INSERT INTO hx_big SELECT g % 100, g FROM generate_series(1, 20000) AS g")
        c.execute("CREATE TABLE hx_dim (k int, name text)")
        c.execute("INSERT INTO hx_dim SELECT g, 'n' || (g % 7) FROM generate_series(0, 99) AS g")
        query = QUERY.format(big="hx_big", dim="hx_dim")
        c.execute(f"CREATE MATERIALIZED VIEW hx_mv IN CLUSTER hx AS {query}")
        c.execute(f"CREATE VIEW hx_v AS {query}")
        c.execute("CREATE INDEX hx_idx IN CLUSTER hx ON hx_v (name)")
        mv, idx = (_one(c, f"SELECT id FROM mz_catalog.mz_objects WHERE name = '{n}'") for n in ("hx_mv", "hx_idx"))
        oids, replica = [mv, idx], _replica(c, "hx")
        nodes = {oid: _nodes(c, oid) for oid in oids}
        first = _settled(c, oids, replica, nodes)
        # nodes whose expectation is history: not scans (their files say), not an index's arrangement
        history = {oid: {n for n, op in nodes[oid].items() if n != 0 and not op.startswith("Scan")} for oid in oids}
        assert len(history[mv]) > 3 and history[idx] == history[mv], nodes
        assert any(first[mv][k][1] is None for k in first[mv] if k[0] in history[mv]), first[mv]
        totals = {oid: _sums(first[oid]) for oid in oids}
        per_worker = {k: rows for k, (rows, _) in first[idx].items() if k[0] in history[idx]}

        def expects_the_last_run(oid: str, p: Progress, _: object = None) -> None:
            got = _sums({k: v for k, v in p.items() if k[0] in history[oid]}, expected=True)
            assert all(got[n] == totals[oid][n] for n in got), (oid, got, totals[oid])

        def check(after: dict[str, Progress]) -> None:
            for oid in oids:
                got = _sums(after[oid], expected=True)
                assert {n: got[n] for n in history[oid]} == {n: totals[oid][n] for n in history[oid]}, after[oid]
            assert {k: e for k, (_, e) in after[idx].items() if k[0] in history[idx]} == per_worker, after[idx]
            assert all(rows == exp for (n, _), (rows, exp) in after[idx].items() if n != 0), after[idx]

        pid = _kill(c, srv, replica, mv)
        check(_settled(c, oids, replica, nodes, expects_the_last_run))
        assert srv.replica_pids_of(replica) - {pid}

    srv.stop()  # the catalog kept them: after a server restart they are expected again
    srv.start()
    with srv.connect() as c:
        check(_settled(c, oids, replica, nodes, expects_the_last_run))
        c.execute("DROP CLUSTER hx CASCADE")
        c.execute("DROP TABLE hx_big CASCADE")
        c.execute("DROP TABLE hx_dim CASCADE")


def test_a_plan_spark_changes_after_pinning_keeps_its_pinned_nodes(srv: WeirServer) -> None:
    """Pinned with a broadcast hash join; the dimension grows past the broadcast threshold,
    so Spark now plans a sort-merge join; a restarted replica rehydrates: the pinned nodes
    that still match (the aggregates above the join) report the run's workers, the ones it
    no longer has (the join and below) a single worker-0 row that hydrates with the
    dataflow; all end hydrated, none stale, and EXPLAIN still shows the pinned plan."""
    with srv.connect() as c:
        c.execute(f"CREATE CLUSTER hp (SIZE '{SIZE}')")
        c.execute("CREATE TABLE hp_big (k int, v int)")
        c.execute("INSERT INTO hp_big SELECT g % 100, g FROM generate_series(1, 20000) AS g")
        c.execute("CREATE TABLE hp_dim (k int, name text)")
        c.execute("INSERT INTO hp_dim SELECT g, 'n' || (g % 7) FROM generate_series(0, 49) AS g")
        query = QUERY.format(big="hp_big", dim="hp_dim")
        try:
            c.execute(f"CREATE MATERIALIZED VIEW hp_mv IN CLUSTER hp AS {query}")
            c.execute(f"CREATE VIEW hp_v AS {query}")
            c.execute("CREATE INDEX hp_idx IN CLUSTER hp ON hp_v (name)")
            mv, idx = (_one(c, f"SELECT id FROM mz_catalog.mz_objects WHERE name = '{n}'")
                       for n in ("hp_mv", "hp_idx"))
            oids, replica = [mv, idx], _replica(c, "hp")
            nodes = {oid: _nodes(c, oid) for oid in oids}
            explain = {mv: "EXPLAIN PHYSICAL PLAN WITH (node_ids) FOR MATERIALIZED VIEW hp_mv",
                       idx: "EXPLAIN PHYSICAL PLAN WITH (node_ids) FOR INDEX hp_idx"}
            pinned = {oid: "\n".join(r[0] for r in c.execute(explain[oid]).fetchall()) for oid in oids}
            for oid in oids:
                assert "BroadcastHashJoin" in pinned[oid] and "SortMergeJoin" not in pinned[oid], pinned[oid]
            _settled(c, oids, replica, nodes)
            groups = _one(c, "SELECT count(*) FROM hp_mv")

            # the dimension grows past the threshold: Spark plans the query otherwise now
            c.execute("INSERT INTO hp_dim SELECT g, 'm' || g FROM generate_series(1000, 20999) AS g")
            with srv.connect() as on_hp:  # explained by hp's replica (its threshold)
                on_hp.execute("SET cluster = hp")
                now = "\n".join(r[0] for r in on_hp.execute(f"EXPLAIN PHYSICAL PLAN FOR {query}").fetchall())
            assert "SortMergeJoin" in now and "BroadcastHashJoin" not in now, now
            # the view's output is past the insert (a read waits for it): the restarted replica
            # rehydrates there, with the plan Spark makes now
            assert _one(c, "SELECT count(*) FROM hp_mv") == groups

            pid = _kill(c, srv, replica, mv)
            join = {oid: next(n for n, op in nodes[oid].items() if op.startswith("BroadcastHashJoin")) for oid in oids}
            root = _one(c, "SELECT plan_node_id FROM mz_internal.mz_compute_plan_nodes "
                           f"WHERE object_id = '{idx}' AND parent_plan_node_id = 0")

            def join_hydrates_with_the_dataflow(oid: str, _: Progress, s: dict[tuple[int, int], bool]) -> None:
                assert {w for n, w in s if n == join[oid]} <= {0}, s
                if s.get((join[oid], 0)):
                    assert all(s.values()), s

            settled = _settled(c, oids, replica, nodes, join_hydrates_with_the_dataflow)
            assert srv.replica_pids_of(replica) - {pid}
            for oid in oids:
                # one row per pinned node, hydrated: none of another node or incarnation
                agg = c.execute("SELECT plan_node_id, hydrated FROM mz_internal.mz_compute_operator_hydration_statuses "
                                f"WHERE object_id = '{oid}' AND replica_id = '{replica}'").fetchall()
                assert sorted(agg) == [(n, True) for n in sorted(nodes[oid])], agg
                assert settled[oid][(join[oid], 0)][0] == 0, settled[oid]  # the join this run has not: did nothing
                assert "\n".join(r[0] for r in c.execute(explain[oid]).fetchall()) == pinned[oid]
            # the index ran the new plan, its aggregates found in it: the root on every worker
            workers = [w for n, w in settled[idx] if n == root]
            assert len(workers) > 1 and sum(settled[idx][(root, w)][0] for w in workers) == groups, settled[idx]
            assert _one(c, "SELECT count(*) FROM hp_v") == groups
        finally:
            c.execute("DROP CLUSTER hp CASCADE")
            c.execute("DROP TABLE hp_big CASCADE")
            c.execute("DROP TABLE hp_dim CASCADE")
