"""Clusters and replicas: DDL starts and stops real replica processes; statuses are
queryable relations."""

from __future__ import annotations

import time

import psycopg
import pytest

from tests.integration.server import WeirServer


def _sqlstate(fn) -> str:  # noqa: ANN001
    with pytest.raises(psycopg.Error) as e:
        fn()
    return e.value.sqlstate or ""


def _wait_online(c: psycopg.Connection, replica_ids: set[str], timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        rows = c.execute("SELECT replica_id, status FROM mz_internal.mz_cluster_replica_statuses").fetchall()
        online = {r for r, s in rows if s == "online"}
        if replica_ids <= online:
            return
        time.sleep(1)
    raise AssertionError(f"replicas {replica_ids} not online: {rows}")


def test_cluster_lifecycle(server: WeirServer) -> None:
    with server.connect() as c:
        before = len(server.replica_pids())
        c.execute("CREATE CLUSTER cl_a (SIZE '1', REPLICATION FACTOR 2)")
        ids = {r[0] for r in c.execute(
            "SELECT r.id FROM mz_catalog.mz_cluster_replicas r JOIN mz_catalog.mz_clusters c "
            "ON r.cluster_id = c.id WHERE c.name = 'cl_a'").fetchall()}
        assert len(ids) == 2
        assert len(server.replica_pids()) == before + 2
        _wait_online(c, ids)
        c.execute("CREATE TABLE cl_t (x int)")
        c.execute("INSERT INTO cl_t VALUES (1), (2), (3)")
        c.execute("SET cluster = cl_a")
        assert c.execute("SELECT sum(x) FROM cl_t").fetchone() == (6,)
        assert c.execute("SHOW cluster").fetchone() == ("cl_a",)
        c.execute("SET cluster = quickstart")
        c.execute("ALTER CLUSTER cl_a SET (REPLICATION FACTOR 1)")
        rows = c.execute("SHOW CLUSTER REPLICAS").fetchall()
        assert [r[:2] for r in rows if r[0] == "cl_a"] == [("cl_a", "r1")]
        assert len(server.replica_pids()) == before + 1
        c.execute("DROP CLUSTER cl_a")
        assert "cl_a" not in {r[0] for r in c.execute("SHOW CLUSTERS").fetchall()}
        assert len(server.replica_pids()) == before


def test_unmanaged_cluster_and_errors(server: WeirServer) -> None:
    with server.connect() as c:
        state = _sqlstate(lambda: c.execute("CREATE CLUSTER cl_bad (SIZE '7')"))
        assert state == "22023"
        with pytest.raises(psycopg.Error, match="valid sizes are '1', '2', '4'"):
            c.execute("CREATE CLUSTER cl_bad (SIZE 'huge')")
        c.execute("CREATE CLUSTER cl_u REPLICAS (a (SIZE '1'))")
        c.execute("CREATE CLUSTER REPLICA cl_u.b SIZE '1'")
        names = [r[1] for r in c.execute("SHOW CLUSTER REPLICAS").fetchall() if r[0] == "cl_u"]
        assert names == ["a", "b"]
        assert _sqlstate(lambda: c.execute("CREATE CLUSTER cl_u (SIZE '1')")) == "42710"
        c.execute("DROP CLUSTER REPLICA cl_u.b")
        c.execute("DROP CLUSTER cl_u")
        assert _sqlstate(lambda: c.execute("DROP CLUSTER cl_u")) == "42704"
        c.execute("DROP CLUSTER IF EXISTS cl_u")
        c.execute("SET cluster = nope")
        assert _sqlstate(lambda: c.execute("SELECT count(*) FROM mz_catalog.mz_tables")) == "42704"
        c.execute("RESET cluster")
        history = c.execute("SELECT count(*) FROM mz_internal.mz_cluster_replica_status_history").fetchone()
        assert history[0] >= 2
