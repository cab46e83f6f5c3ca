"""Replicated compute introspection (designs 001, 004): every replica records its
dataflows in its own introspection shard, read per replica (`<log>_<replica_id>`), across
replicas from any cluster (`<log>_persist`), or live from one targeted replica. Real
server, real replica processes, real Spark, real Iceberg shards."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from tests.integration.server import WeirServer
from weir.compute import introspection as ci
from weir.compute.replica.small_inputs import SMALL_INPUT_RECORDS


def _wait(c: psycopg.Connection, sql: str, ok: Callable[[list[tuple[Any, ...]]], bool],
          timeout: float = 90, params: Any = None) -> list[tuple[Any, ...]]:
    deadline = time.time() + timeout
    rows: list[tuple[Any, ...]] = []
    while time.time() < deadline:
        rows = c.execute(sql, params).fetchall()
        if ok(rows):
            return rows
        time.sleep(0.5)
    raise AssertionError(f"{sql}: still {rows}")


def _replica_id(c: psycopg.Connection, cluster: str, replica: str) -> str:
    return c.execute("SELECT r.id FROM mz_catalog.mz_cluster_replicas r JOIN mz_catalog.mz_clusters c "
                     "ON r.cluster_id = c.id WHERE c.name = %s AND r.name = %s", (cluster, replica)).fetchone()[0]


def _pid(replica_id: str) -> int | None:
    out = subprocess.run(["pgrep", "-f", f"weir.compute.replica .*--replica-id {replica_id}( |$)"],
                         capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else None


def _expect(c: psycopg.Connection, sql: str, sqlstate: str) -> psycopg.Error:
    with pytest.raises(psycopg.Error) as info:
        c.execute(sql)
    assert info.value.sqlstate == sqlstate, (sql, info.value.sqlstate, str(info.value))
    return info.value


def test_a_replica_records_its_dataflows_and_arrangements(server: WeirServer) -> None:
    with server.connect() as c:
        rid = _replica_id(c, "quickstart", "r1")
        sources = {r[0] for r in c.execute(
            "SELECT name FROM mz_catalog.mz_sources WHERE type = 'introspection'").fetchall()}
        assert {v.source_name(rid) for v in ci.LOG_VARIANTS} <= sources
        c.execute("CREATE TABLE intro_t (k int, v int)")
        c.execute("INSERT INTO intro_t VALUES (1, 10), (2, 20), (2, 5), (3, 1)")
        c.execute("CREATE MATERIALIZED VIEW intro_mv AS SELECT k, sum(v) AS s FROM intro_t GROUP BY k")
        mv_id = c.execute("SELECT id FROM mz_catalog.mz_materialized_views WHERE name = 'intro_mv'").fetchone()[0]
        c.execute("CREATE INDEX intro_idx ON intro_mv (k)")
        idx_id = c.execute("SELECT id FROM mz_catalog.mz_indexes WHERE name = 'intro_idx'").fetchone()[0]
        assert c.execute("SELECT count(*) FROM intro_mv").fetchone() == (3,)
        # the dataflows are named after the objects they maintain
        names = {r[0] for r in _wait(c, f"SELECT name FROM mz_introspection.mz_dataflows_{rid}",
                                     lambda rows: len({r[0] for r in rows} & {
                                         "Dataflow: materialize.public.intro_mv",
                                         "Dataflow: materialize.public.intro_idx"}) == 2)}
        assert "Dataflow: materialize.public.intro_mv" in names
        exports = dict(_wait(c, f"SELECT export_id, dataflow_id FROM mz_introspection.mz_compute_exports_{rid}",
                             lambda rows: {mv_id, idx_id} <= {r[0] for r in rows}))
        assert exports[mv_id] != exports[idx_id]
        frontiers = dict(_wait(c, f"SELECT export_id, time FROM mz_introspection.mz_compute_frontiers_{rid}",
                               lambda rows: {mv_id, idx_id} <= {r[0] for r in rows}))
        assert frontiers[mv_id] > 0
        t_id = c.execute("SELECT id FROM mz_catalog.mz_tables WHERE name = 'intro_t'").fetchone()[0]
        _wait(c, f"SELECT export_id, import_id FROM mz_introspection.mz_compute_import_frontiers_{rid}",
              lambda rows: (mv_id, t_id) in rows and (idx_id, mv_id) in rows)
        # the index's arrangement holds the view's rows
        sizes = _wait(c, "SELECT a.records, a.size FROM mz_introspection.mz_arrangement_sizes_" + rid + " a "
                      "JOIN mz_introspection.mz_dataflow_operator_dataflows_" + rid + " o ON a.operator_id = o.id "
                      "WHERE o.dataflow_name = 'Dataflow: materialize.public.intro_idx'",
                      lambda rows: rows and rows[0][0] == 3)
        assert sizes[0][1] > 0
        c.execute("INSERT INTO intro_t VALUES (4, 4)")
        _wait(c, "SELECT a.records FROM mz_introspection.mz_arrangement_sizes_" + rid + " a "
              "JOIN mz_introspection.mz_dataflow_operator_dataflows_" + rid + " o ON a.operator_id = o.id "
              "WHERE o.dataflow_name = 'Dataflow: materialize.public.intro_idx'", lambda rows: rows == [(4,)])
        # peeks are counted in the histogram
        assert _wait(c, f"SELECT sum(count) FROM mz_introspection.mz_peek_durations_histogram_{rid}",
                     lambda rows: rows[0][0] is not None and rows[0][0] > 0)
        c.execute("DROP MATERIALIZED VIEW intro_mv CASCADE")
        _wait(c, f"SELECT export_id FROM mz_introspection.mz_compute_exports_{rid}",
              lambda rows: not {mv_id, idx_id} & {r[0] for r in rows})


def test_replicas_of_a_cluster_from_another_cluster_and_live(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE CLUSTER intro_two (SIZE '1', REPLICATION FACTOR 2)")
        try:
            r1, r2 = _replica_id(c, "intro_two", "r1"), _replica_id(c, "intro_two", "r2")
            c.execute("CREATE TABLE intro_two_t (a int)")
            c.execute("INSERT INTO intro_two_t VALUES (1), (2)")
            c.execute("CREATE MATERIALIZED VIEW intro_two_mv IN CLUSTER intro_two AS SELECT count(*) AS n "
                      "FROM intro_two_t")
            c.execute("CREATE VIEW intro_two_where AS SELECT cluster, replica, replica_id, read_at, name "
                      "FROM mz_introspection.mz_dataflows_persist")
            # from quickstart: both replicas' rows, tagged, each with the time it was read at
            rows = _wait(c, "SELECT cluster, replica, replica_id, read_at FROM intro_two_where "
                         "WHERE name = 'Dataflow: materialize.public.intro_two_mv' ORDER BY replica",
                         lambda rows: len(rows) == 2)
            assert [r[:3] for r in rows] == [("intro_two", "r1", r1), ("intro_two", "r2", r2)]
            assert all(int(r[3]) > 0 for r in rows)
            # the live logs: a cluster of two replicas needs one targeted
            c.execute("SET cluster = intro_two")
            err = _expect(c, "SELECT * FROM mz_introspection.mz_dataflows", "55000")
            assert "must target a replica" in str(err)
            c.execute("SET cluster_replica = r2")
            assert ("Dataflow: materialize.public.intro_two_mv",) in c.execute(
                "SELECT name FROM mz_introspection.mz_dataflows").fetchall()
            c.execute("RESET cluster_replica")
            c.execute("SET cluster = quickstart")
            _expect(c, "CREATE MATERIALIZED VIEW intro_bad AS SELECT * FROM mz_introspection.mz_dataflows",
                    "0A000")
            # a dataflow is planned once: a union over the replicas of the moment is refused
            err = _expect(c, "CREATE MATERIALIZED VIEW intro_bad AS SELECT name FROM intro_two_where", "0A000")
            assert "mz_dataflows_persist" in str(err)
            _expect(c, "CREATE INDEX intro_bad_idx ON intro_two_where (name)", "0A000")

            # kill -9 r2: its last rows stay readable while it is down
            pid = _pid(r2)
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            down = c.execute("SELECT count(*) FROM intro_two_where WHERE replica = 'r2' "
                             "AND name = 'Dataflow: materialize.public.intro_two_mv'").fetchone()
            assert down == (1,)
            deadline = time.time() + 120
            while time.time() < deadline and _pid(r2) in (None, pid):
                time.sleep(0.5)
            assert _pid(r2) not in (None, pid)
            # the new incarnation replaces the old one's rows: exactly one of each, none stale
            before = c.execute(f"SELECT read_at FROM intro_two_where WHERE replica_id = '{r2}'").fetchone()[0]
            _wait(c, f"SELECT read_at FROM intro_two_where WHERE replica_id = '{r2}' AND read_at > {before}",
                  lambda rows: len(rows) > 0, timeout=120)
            time.sleep(3)
            assert c.execute(f"SELECT name, count(*) FROM mz_introspection.mz_dataflows_{r2} GROUP BY name "
                             "HAVING count(*) > 1").fetchall() == []
            exports = c.execute(f"SELECT export_id FROM mz_introspection.mz_compute_exports_{r2}").fetchall()
            assert len(exports) == len(set(exports)) == 1
        finally:
            c.execute("DROP VIEW IF EXISTS intro_two_where")
            c.execute("DROP CLUSTER intro_two CASCADE")


def test_dropping_replicas_and_introspection_options(server: WeirServer) -> None:
    with server.connect() as c:
        _expect(c, "CREATE CLUSTER intro_neg (SIZE '1', INTROSPECTION INTERVAL '-1s')", "22023")
        _expect(c, "CREATE CLUSTER intro_neg (SIZE '1', INTROSPECTION INTERVAL 'soon')", "22023")
        assert c.execute("SELECT count(*) FROM mz_catalog.mz_clusters WHERE name = 'intro_neg'").fetchone() == (0,)
        c.execute("CREATE CLUSTER intro_off (SIZE '1', INTROSPECTION INTERVAL 0)")
        c.execute("CREATE CLUSTER intro_un REPLICAS (a (SIZE '1'))")
        try:
            off = _replica_id(c, "intro_off", "r1")
            assert c.execute("SELECT count(*) FROM mz_catalog.mz_sources WHERE name LIKE %s",
                             (f"%\\_{off}",)).fetchone() == (0,)
            assert c.execute("SELECT introspection_interval FROM mz_catalog.mz_clusters WHERE name = 'intro_off'"
                             ).fetchone()[0].total_seconds() == 0
            # turned on later: the replica gets its sources and starts writing; off again: gone
            c.execute("ALTER CLUSTER intro_off SET (INTROSPECTION INTERVAL '500ms')")
            _wait(c, "SELECT count(*) FROM mz_introspection.mz_dataflows_persist WHERE replica_id = %s "
                  "AND read_at IS NOT NULL", lambda r: True, params=(off,))
            _wait(c, "SELECT write_frontier FROM mz_internal.mz_cluster_replica_introspection WHERE replica_id = %s",
                  lambda r: bool(r) and int(r[0][0]) > 0, params=(off,))
            c.execute("ALTER CLUSTER intro_off SET (INTROSPECTION INTERVAL 0)")
            assert c.execute("SELECT count(*) FROM mz_catalog.mz_sources WHERE name LIKE %s",
                             (f"%\\_{off}",)).fetchone() == (0,)
            a = _replica_id(c, "intro_un", "a")
            c.execute(f"CREATE VIEW intro_dep AS SELECT * FROM mz_introspection.mz_dataflows_{a}")
            err = _expect(c, "DROP CLUSTER REPLICA intro_un.a", "2BP01")
            assert "intro_dep" in str(err)
            c.execute("DROP CLUSTER REPLICA intro_un.a CASCADE")
            assert c.execute("SELECT count(*) FROM mz_catalog.mz_views WHERE name = 'intro_dep'").fetchone() == (0,)
            _expect(c, f"SELECT * FROM mz_introspection.mz_dataflows_{a}", "42P01")
            assert c.execute("SELECT count(*) FROM mz_catalog.mz_sources WHERE name LIKE %s",
                             (f"%\\_{a}",)).fetchone() == (0,)
        finally:
            c.execute("DROP CLUSTER IF EXISTS intro_off CASCADE")
            c.execute("DROP CLUSTER IF EXISTS intro_un CASCADE")


def test_operators_are_the_plan_explain_shows(server: WeirServer) -> None:
    import re

    with server.connect() as c:
        rid = _replica_id(c, "quickstart", "r1")
        # views kept from deltas even on these few rows (by default they recompute below 10^5)
        c.execute("SET incremental_min_updates = 0")
        c.execute("CREATE TABLE intro_ops (k int, v int)")
        c.execute("INSERT INTO intro_ops SELECT g % 7, g FROM generate_series(1, 500) AS g")
        # max: recomputed (a plan of one shape at every interval)
        c.execute("CREATE MATERIALIZED VIEW intro_ops_mv AS SELECT k, sum(v) AS s, count(*) AS n, max(v) AS m "
                  "FROM intro_ops GROUP BY k")
        mv_id = c.execute("SELECT id FROM mz_catalog.mz_materialized_views WHERE name = 'intro_ops_mv'").fetchone()[0]
        c.execute("INSERT INTO intro_ops VALUES (1, 1000)")  # a second tick, with a previous result
        ops_sql = (f"SELECT o.plan_node_id, o.name FROM mz_introspection.mz_dataflow_operators_per_worker_{rid} o "
                   f"JOIN mz_introspection.mz_compute_exports_{rid} e ON e.dataflow_id = o.dataflow_id "
                   f"WHERE e.export_id = '{mv_id}' AND o.plan_node_id > 0")
        _wait(c, "SELECT n FROM intro_ops_mv WHERE k = 1", lambda rows: rows == [(73,)])
        # count / sum alone is kept from deltas: EXPLAIN says so, and what state it keeps
        c.execute("CREATE MATERIALIZED VIEW intro_ops_red AS SELECT k, count(*) AS n FROM intro_ops GROUP BY k")
        _wait(c, "SELECT n FROM intro_ops_red WHERE k = 1", lambda rows: rows == [(73,)])
        red = "\n".join(r[0] for r in c.execute("EXPLAIN PHYSICAL PLAN FOR MATERIALIZED VIEW intro_ops_red"))
        assert red.startswith("Strategy on replica r1: reduce: ") and "sorted runs per key partition" in red, red
        pinned = "\n".join(r[0] for r in c.execute(
            "EXPLAIN PHYSICAL PLAN WITH (node_ids) FOR MATERIALIZED VIEW intro_ops_red"))
        assert pinned.startswith("Strategy on replica r1: reduce: ") and "MapInArrow" in pinned, pinned
        c.execute("DROP MATERIALIZED VIEW intro_ops_red")
        # avg (a sum and a count, divided), arithmetic over aggregates, bool_or, FILTER and
        # HAVING: counts and sums, then a map and a filter after the groups, kept from deltas
        # too; the view equals the query as a SELECT
        avg_sql = ("SELECT k, avg(v) AS a, sum(v) * 2 AS s2, bool_or(v > 499) AS big, count(*) FILTER (WHERE v > 250) AS f "
                   "FROM intro_ops GROUP BY k HAVING count(*) > 71")
        c.execute(f"CREATE MATERIALIZED VIEW intro_ops_avg AS {avg_sql}")
        avg = "\n".join(r[0] for r in c.execute("EXPLAIN PHYSICAL PLAN FOR MATERIALIZED VIEW intro_ops_avg"))
        assert avg.startswith("Strategy on replica r1: reduce: ") and "select list and HAVING" in avg, avg
        for change in ("INSERT INTO intro_ops VALUES (4, 7), (4, NULL)", "DELETE FROM intro_ops WHERE k = 4 AND v = 7"):
            want = sorted(c.execute(avg_sql).fetchall())
            _wait(c, "SELECT * FROM intro_ops_avg", lambda rows, want=want: sorted(rows) == want)
            c.execute(change)
        want = sorted(c.execute(avg_sql).fetchall())
        assert [r[0] for r in want] == [1, 2, 3, 4] and want[0][1] != int(want[0][1]), want
        _wait(c, "SELECT * FROM intro_ops_avg", lambda rows: sorted(rows) == want)
        c.execute("DELETE FROM intro_ops WHERE k = 4 AND v IS NULL")
        c.execute("DROP MATERIALIZED VIEW intro_ops_avg")
        # a global aggregate too, with its row while its input is empty (kept from deltas
        # only when asked: by default such views, mostly small, recompute)
        c.execute("SET enable_incremental_global_aggregates = on")
        c.execute("CREATE MATERIALIZED VIEW intro_ops_total AS SELECT count(*), sum(v) FROM intro_ops WHERE k = 99")
        total = "\n".join(r[0] for r in c.execute("EXPLAIN PHYSICAL PLAN FOR MATERIALIZED VIEW intro_ops_total"))
        assert total.startswith("Strategy on replica r1: reduce: "), total
        assert c.execute("SELECT * FROM intro_ops_total").fetchall() == [(0, None)]
        c.execute("INSERT INTO intro_ops VALUES (99, 5), (99, NULL)")
        assert c.execute("SELECT * FROM intro_ops_total").fetchall() == [(2, 5)]
        c.execute("DELETE FROM intro_ops WHERE k = 99")
        assert c.execute("SELECT * FROM intro_ops_total").fetchall() == [(0, None)]
        c.execute("DROP MATERIALIZED VIEW intro_ops_total")
        c.execute("CREATE MATERIALIZED VIEW intro_ops_keys AS SELECT DISTINCT k FROM intro_ops WHERE v > 495")
        keys = "\n".join(r[0] for r in c.execute("EXPLAIN PHYSICAL PLAN FOR MATERIALIZED VIEW intro_ops_keys"))
        assert keys.startswith("Strategy on replica r1: reduce: "), keys
        assert sorted(c.execute("SELECT * FROM intro_ops_keys").fetchall()) == [(0,), (1,), (2,), (3,), (6,)]
        c.execute("DROP MATERIALIZED VIEW intro_ops_keys")
        # a join + aggregate: kept as a delta join under the reduce; both stateful operators
        # (the join's arrangements of both inputs, the groups) report their state per partition
        c.execute("CREATE TABLE intro_dim (k int, name text)")
        c.execute("INSERT INTO intro_dim SELECT g, 'n' || g FROM generate_series(0, 6) AS g")
        c.execute("CREATE MATERIALIZED VIEW intro_ops_join AS SELECT d.name, count(*) AS n, sum(o.v) AS s "
                  "FROM intro_ops o JOIN intro_dim d ON o.k = d.k GROUP BY d.name")
        _wait(c, "SELECT n FROM intro_ops_join WHERE name = 'n1'", lambda rows: rows == [(73,)])
        joined = "\n".join(r[0] for r in c.execute("EXPLAIN PHYSICAL PLAN FOR MATERIALIZED VIEW intro_ops_join"))
        assert joined.startswith("Strategy on replica r1: reduce: ") and "delta join" in joined, joined
        sizes = (f"SELECT o.plan_node_id, sum(a.records), sum(a.batches) > 0, sum(a.size) > 0 "
                 f"FROM mz_introspection.mz_arrangement_sizes_per_worker_{rid} a "
                 f"JOIN mz_introspection.mz_dataflow_operator_dataflows_{rid} o ON a.operator_id = o.id "
                 f"WHERE o.dataflow_name = 'Dataflow: materialize.public.intro_ops_join' AND o.name = 'MapInArrow' "
                 f"GROUP BY o.plan_node_id ORDER BY o.plan_node_id")
        # the join holds 501 + 7 distinct rows, the groups 7
        _wait(c, sizes, lambda rows: [r[1:] for r in rows] == [(508, True, True), (7, True, True)])
        c.execute("DROP MATERIALIZED VIEW intro_ops_join")
        c.execute("DROP TABLE intro_dim")
        deadline = time.time() + 60
        while True:  # the plan the replica last recorded and EXPLAIN agree (once a steady plan ran)
            ops = set(c.execute(ops_sql).fetchall())
            text = c.execute("EXPLAIN PHYSICAL PLAN WITH (node_ids) FOR MATERIALIZED VIEW intro_ops_mv").fetchone()[0]
            shown = {(int(m.group(2)), m.group(1).strip()) for m in re.finditer(r"^\s*(.+?) \((\d+)\)$", text, re.M)}
            if ops and ops == shown or time.time() > deadline:
                break
            time.sleep(1)
        assert ops and ops == shown, (ops, text)
        assert any(name == "HashAggregate" for _, name in ops)
        assert text.startswith("Strategy on replica r1: recompute: ") and "not reduce: " in text, text
        # every operator that ran has time and the scans have rows; elapsed adds up per worker
        elapsed = dict(_wait(c, f"SELECT o.plan_node_id, e.elapsed_ns FROM mz_introspection.mz_scheduling_elapsed_{rid} e "
                                f"JOIN mz_introspection.mz_dataflow_operator_dataflows_{rid} o ON e.id = o.id "
                                f"WHERE o.dataflow_name = 'Dataflow: materialize.public.intro_ops_mv'",
                             lambda rows: len(rows) > 0))
        assert all(v > 0 for v in elapsed.values()) and sum(elapsed.values()) > 0
        rows = c.execute(f"SELECT o.name, sum(m.rows) FROM mz_introspection.mz_spark_operator_metrics_per_worker_{rid} m "
                         f"JOIN mz_introspection.mz_dataflow_operator_dataflows_{rid} o ON m.id = o.id "
                         f"WHERE o.dataflow_name = 'Dataflow: materialize.public.intro_ops_mv' GROUP BY o.name").fetchall()
        # the input (500 rows, below SMALL_INPUT_RECORDS) is read by the replica as local rows
        assert dict(rows).get("LocalTableScan", 0) >= 500 and "Scan parquet" not in dict(rows), rows
        # channels connect operators of the plan, exchanges named by their partitioning
        kinds = {r[0] for r in c.execute(f"SELECT type FROM mz_introspection.mz_dataflow_channels_{rid}").fetchall()}
        assert "pipeline" in kinds and any("partitioning" in k or k == "SinglePartition" for k in kinds), kinds
        # the time a peek spent, per operator: its Spark job is a dataflow of its own
        c.execute("SELECT k, count(*) FROM intro_ops WHERE v > 3 GROUP BY k").fetchall()
        _wait(c, f"SELECT count(*) FROM mz_introspection.mz_dataflows_{rid} WHERE name LIKE 'Dataflow: peek %'",
              lambda r: r[0][0] > 0)
        c.execute("DROP MATERIALIZED VIEW intro_ops_mv")


STATEMENT_WORK = """
SELECT o.name AS operator, sum(e.elapsed_ns) AS elapsed_ns
FROM mz_internal.mz_statement_execution_history h
JOIN mz_internal.mz_prepared_statement_history p ON h.prepared_statement_id = p.id
JOIN mz_internal.mz_statement_dataflows sd ON sd.statement_id = h.id
JOIN mz_introspection.mz_dataflow_operator_dataflows_persist o
  ON o.replica_id = sd.replica_id AND o.dataflow_name = sd.dataflow_name
JOIN mz_introspection.mz_scheduling_elapsed_persist e ON e.replica_id = o.replica_id AND e.id = o.id
WHERE p.sql LIKE '%{marker}%' AND p.sql NOT LIKE '%mz_statement_dataflows%'
GROUP BY o.name ORDER BY elapsed_ns DESC
"""


def test_what_a_statement_spent_its_time_on(server: WeirServer) -> None:
    """Part 9: a statement execution joins to the Spark job it ran and its operators (the
    README's query)."""
    with server.connect() as c:
        c.execute("SET statement_history_sample_rate = 1")
        c.execute("CREATE TABLE intro_stmt (a int, b text)")
        c.execute("INSERT INTO intro_stmt SELECT g, 'x' || g FROM generate_series(1, 300) AS g")
        c.execute("SELECT b, count(*) AS intro_marker_7 FROM intro_stmt WHERE a % 3 = 0 GROUP BY b").fetchall()
        rows = _wait(c, STATEMENT_WORK.format(marker="intro_marker_7"), lambda rows: len(rows) > 0, timeout=60)
        names = {r[0] for r in rows}
        # 300 rows: read by the replica itself and handed to Spark as local rows
        assert {"HashAggregate", "LocalTableScan"} <= names and "Scan parquet" not in names, rows
        assert all(r[1] > 0 for r in rows)
        # past SMALL_INPUT_RECORDS stored updates, Spark scans the input's Parquet files
        c.execute(f"INSERT INTO intro_stmt SELECT g, 'y' FROM generate_series(1, {SMALL_INPUT_RECORDS}) AS g")
        c.execute("SELECT b, count(*) AS intro_marker_8 FROM intro_stmt WHERE a % 3 = 0 GROUP BY b").fetchall()
        rows = _wait(c, STATEMENT_WORK.format(marker="intro_marker_8"), lambda rows: len(rows) > 0, timeout=60)
        assert {"HashAggregate", "Scan parquet"} <= {r[0] for r in rows}, rows


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def liveness_server(tmp_path_factory: pytest.TempPathFactory, java: None):  # noqa: ANN201
    """A server that replaces a replica after 5 s without heartbeats and, standing in for an
    orchestrator cut off from the replica's machine, leaves the old process alive."""
    srv = WeirServer(tmp_path_factory.mktemp("liveness") / "data",
                     extra_args=["--replica-heartbeat-timeout", "5", "--replica-kill-grace", "600"]).start()
    yield srv
    srv.stop()


def test_a_stopped_replica_is_replaced_and_its_zombie_fenced(liveness_server: WeirServer) -> None:
    """SIGSTOP a replica: its heartbeats stop, the orchestrator starts a new incarnation;
    SIGCONT the old one: its next introspection write is refused (the new incarnation's
    epoch fenced the shard), it stops, and readers never see two incarnations' rows."""
    server = liveness_server
    with server.connect() as c:
        rid = _replica_id(c, "quickstart", "r1")
        c.execute("CREATE TABLE zt (a int)")
        c.execute("INSERT INTO zt VALUES (1), (2)")
        c.execute("CREATE MATERIALIZED VIEW zmv AS SELECT count(*) AS n FROM zt")
        _wait(c, f"SELECT name FROM mz_introspection.mz_dataflows_{rid}",
              lambda rows: ("Dataflow: materialize.public.zmv",) in rows)
        (old,) = server.replica_pids_of(rid)
        os.killpg(old, signal.SIGSTOP)  # the whole group: the replica and its JVM
        try:
            deadline = time.time() + 150
            while time.time() < deadline and not (server.replica_pids_of(rid) - {old}):
                time.sleep(0.5)
            assert server.replica_pids_of(rid) - {old}, "no new incarnation was started"
            assert _running(old)  # left alive: a zombie once it wakes up
            before = c.execute(f"SELECT read_at FROM mz_introspection.mz_dataflows_persist "
                               f"WHERE replica_id = '{rid}' LIMIT 1").fetchone()[0]
            # the new incarnation is online and has written its own introspection
            _wait(c, f"SELECT read_at FROM mz_introspection.mz_dataflows_persist WHERE replica_id = '{rid}' "
                  f"AND read_at > {before} AND name = 'Dataflow: materialize.public.zmv'",
                  lambda rows: len(rows) == 1, timeout=150)
        finally:
            os.killpg(old, signal.SIGCONT)
        deadline = time.time() + 90
        while time.time() < deadline and _running(old):
            time.sleep(0.5)
        assert not _running(old), "the zombie incarnation kept running"
        log = (server.data_dir / "logs" / f"replica-{rid}.log").read_text(errors="replace")
        assert "fenced by a newer incarnation" in log
        # one incarnation's rows only, and the view stays right
        c.execute("INSERT INTO zt VALUES (3)")
        assert _wait(c, "SELECT n FROM zmv", lambda rows: rows == [(3,)]) == [(3,)]
        assert c.execute(f"SELECT name, count(*) FROM mz_introspection.mz_dataflows_{rid} GROUP BY name "
                         "HAVING count(*) > 1").fetchall() == []
        exports = c.execute(f"SELECT export_id FROM mz_introspection.mz_compute_exports_{rid}").fetchall()
        assert len(exports) == len(set(exports)) == 1
        status = c.execute("SELECT status FROM mz_internal.mz_cluster_replica_statuses "
                           f"WHERE replica_id = '{rid}'").fetchall()
        assert status == [("online",)]


def test_replica_health(server: WeirServer) -> None:
    import urllib.request

    with server.connect() as c:
        rid = _replica_id(c, "quickstart", "r1")
        c.execute("CREATE TABLE intro_h (a int)")
        c.execute("INSERT INTO intro_h VALUES (1)")
        c.execute("CREATE MATERIALIZED VIEW intro_h_mv AS SELECT count(*) FROM intro_h")
        mv = c.execute("SELECT id FROM mz_catalog.mz_materialized_views WHERE name = 'intro_h_mv'").fetchone()[0]
        m = _wait(c, "SELECT memory_bytes, heap_bytes, heap_limit, cpu_nano_cores FROM "
                     "mz_internal.mz_cluster_replica_metrics WHERE replica_id = %s",
                  lambda r: bool(r) and r[0][1] is not None and r[0][3] is not None, params=(rid,))[0]
        assert m[0] > 0 and 0 < m[1] <= m[2]
        u = c.execute("SELECT cpu_percent, memory_percent, heap_percent FROM mz_internal.mz_cluster_replica_utilization "
                      "WHERE replica_id = %s", (rid,)).fetchone()
        assert u is not None and u[1] > 0 and 0 < u[2] <= 100
        lag = _wait(c, "SELECT lag_ms FROM mz_internal.mz_dataflow_lag WHERE object_id = %s AND replica_id = %s",
                    lambda r: bool(r), params=(mv, rid))
        assert 0 <= lag[0][0] < 60_000
        w = c.execute("SELECT commits, skipped, fenced FROM mz_internal.mz_cluster_replica_introspection "
                      "WHERE replica_id = %s", (rid,)).fetchone()
        assert w is not None and w[0] > 0 and w[2] is False
        text = urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/metrics", timeout=10).read().decode()
        assert f'weir_replica_memory_bytes{{replica_id="{rid}"}}' in text
        assert "weir_replica_dataflow_lag_ms" in text
        c.execute("DROP MATERIALIZED VIEW intro_h_mv")


@pytest.mark.slow
def test_a_saturated_replica_keeps_logging(server: WeirServer) -> None:
    """A replica whose one Spark core is busy with a CPU-heavy dataflow still writes its
    introspection every interval or so (its writer has a thread of its own)."""
    with server.connect() as c:
        c.execute("CREATE CLUSTER intro_busy (SIZE '1')")
        try:
            rid = _replica_id(c, "intro_busy", "r1")
            _wait(c, "SELECT write_frontier FROM mz_internal.mz_cluster_replica_introspection WHERE replica_id = %s",
                  lambda r: bool(r) and int(r[0][0]) > 0, params=(rid,), timeout=120)
            c.execute("CREATE TABLE intro_busy_t (x int)")
            c.execute("INSERT INTO intro_busy_t SELECT g FROM generate_series(1, 400) AS g")
            c.execute("CREATE MATERIALIZED VIEW intro_busy_mv IN CLUSTER intro_busy AS SELECT count(*) AS n "
                      "FROM intro_busy_t a, intro_busy_t b, intro_busy_t d WHERE (a.x * b.x + d.x) % 7 = 3")
            lags = []
            for i in range(20):
                c.execute("INSERT INTO intro_busy_t VALUES (%s)", (1000 + i,))  # more work, every tick
                row = c.execute("SELECT write_frontier FROM mz_internal.mz_cluster_replica_introspection "
                                "WHERE replica_id = %s", (rid,)).fetchone()
                lags.append(time.time() * 1000 - int(row[0]))
                time.sleep(1)
            busy = c.execute("SELECT cpu_percent FROM mz_internal.mz_cluster_replica_utilization "
                             "WHERE replica_id = %s", (rid,)).fetchone()
            # the writer advances at least every IDLE_ADVANCE_S (10 s) and commits changes each second
            assert max(lags) < 15_000, (lags, busy)
            assert sorted(lags)[len(lags) // 2] < 5_000, (lags, busy)
        finally:
            c.execute("DROP CLUSTER intro_busy CASCADE")
            c.execute("DROP TABLE IF EXISTS intro_busy_t CASCADE")
