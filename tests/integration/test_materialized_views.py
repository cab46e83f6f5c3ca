"""Materialized views maintained by replicas: kept up to date, exactly once across two
replicas, a replica killed, and a server restart."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psycopg
import pytest

from tests.integration.server import WeirServer


def _eventually(c: psycopg.Connection, sql: str, expected: list[tuple], timeout: float = 60) -> None:
    deadline = time.time() + timeout
    got = None
    while time.time() < deadline:
        got = c.execute(sql).fetchall()
        if got == expected:
            return
        time.sleep(0.5)
    raise AssertionError(f"{sql}: expected {expected}, got {got}")


def _eventually_fast(srv: WeirServer, c: psycopg.Connection, sql: str, expected: list[tuple],
                     timeout: float = 90) -> None:
    """`sql` answers `expected` on the fast path (from an index, no Spark job)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        before = srv.metric("weir_reads_total", strategy="fast-path")
        got = c.execute(sql).fetchall()
        if got == expected and srv.metric("weir_reads_total", strategy="fast-path") == before + 1:
            return
        time.sleep(0.5)
    raise AssertionError(f"{sql}: not {expected} on the fast path")


@pytest.mark.timeout(900)
def test_materialized_view_lifecycle(tmp_path: Path, java: None) -> None:
    srv = WeirServer(tmp_path / "data").start()
    try:
        with srv.connect() as c:
            # two replicas of one cluster on this 2-core machine: park quickstart's
            c.execute("CREATE CLUSTER mv_c (SIZE '1', REPLICATION FACTOR 2)")
            c.execute("ALTER CLUSTER quickstart SET (REPLICATION FACTOR 0)")
            c.execute("SET cluster = mv_c")
            c.execute("CREATE TABLE auctions (id int, item text)")
            c.execute("CREATE TABLE bids (auction_id int, amount int)")
            c.execute("INSERT INTO auctions VALUES (1, 'a'), (2, 'b')")
            c.execute("INSERT INTO bids VALUES (1, 10), (1, 20), (2, 5)")
            c.execute("CREATE MATERIALIZED VIEW winning_bids IN CLUSTER mv_c AS SELECT a.id, max(b.amount) AS top "
                      "FROM auctions a JOIN bids b ON a.id = b.auction_id GROUP BY a.id")
            c.execute("CREATE MATERIALIZED VIEW big_bids IN CLUSTER mv_c AS "
                      "SELECT auction_id, amount * 2 AS dbl FROM bids WHERE amount > 10")
            # kept from deltas (strategy reduce), state on the executors, however few its rows
            c.execute("SET incremental_min_updates = 0")
            c.execute("CREATE MATERIALIZED VIEW bid_totals IN CLUSTER mv_c AS SELECT auction_id AS id, "
                      "count(*) AS n, sum(amount) AS s FROM bids GROUP BY auction_id")
            _eventually(c, "SELECT * FROM winning_bids ORDER BY id", [(1, 20), (2, 5)])
            c.execute("CREATE INDEX ON winning_bids (id) IN CLUSTER mv_c")
            _eventually_fast(srv, c, "SELECT * FROM winning_bids WHERE id = 1", [(1, 20)])
            c.execute("INSERT INTO bids VALUES (2, 50)")
            c.execute("DELETE FROM bids WHERE amount = 20")
            _eventually(c, "SELECT * FROM winning_bids ORDER BY id", [(1, 10), (2, 50)])
            _eventually(c, "SELECT * FROM big_bids ORDER BY 1", [(2, 100)])
            # errors: a query Spark cannot run leaves nothing behind
            with pytest.raises(psycopg.Error) as e:
                c.execute("CREATE MATERIALIZED VIEW broken IN CLUSTER mv_c AS SELECT nosuch FROM bids")
            assert e.value.sqlstate == "42703"
            names = {r[0] for r in c.execute("SHOW OBJECTS").fetchall()}
            assert "broken" not in names
            with pytest.raises(psycopg.Error) as e:
                c.execute("DROP TABLE bids")
            assert e.value.sqlstate == "2BP01" and "winning_bids" in str(e.value)
            # kill one replica of the cluster: the view keeps updating
            replicas = srv.replica_pids()
            os.kill(replicas[-1], signal.SIGKILL)
            c.execute("INSERT INTO bids VALUES (1, 99)")
            _eventually(c, "SELECT * FROM winning_bids ORDER BY id", [(1, 99), (2, 50)])
            # the surviving replica's index keeps answering on the fast path
            _eventually_fast(srv, c, "SELECT * FROM winning_bids WHERE id = 1", [(1, 99)])
        srv.stop()
        srv.start(wait_for_replica=False)
        with srv.connect(options="-c cluster=mv_c") as c:
            _eventually(c, "SELECT * FROM winning_bids ORDER BY id", [(1, 99), (2, 50)])
            c.execute("INSERT INTO bids VALUES (2, 60)")
            _eventually(c, "SELECT * FROM winning_bids ORDER BY id", [(1, 99), (2, 60)])
            # the incremental view too: its output is not written again over itself (its
            # inputs were compacted past its upper while the replicas started: it diffs)
            _eventually(c, "SELECT * FROM bid_totals ORDER BY id", [(1, 2, 109), (2, 3, 115)])
            # the index came back with the server and serves the fast path again
            _eventually_fast(srv, c, "SELECT * FROM winning_bids WHERE id = 2", [(2, 60)])
            # no gap and no duplicate in the output: every row's count is exactly one
            counts = c.execute("SELECT id, count(*) FROM winning_bids GROUP BY id ORDER BY id").fetchall()
            assert counts == [(1, 1), (2, 1)]
            assert c.execute("SELECT id, count(*) FROM bid_totals GROUP BY id ORDER BY id").fetchall() == [(1, 1), (2, 1)]
            c.execute("DROP MATERIALIZED VIEW big_bids")
            assert "big_bids" not in {r[0] for r in c.execute("SHOW OBJECTS").fetchall()}
            c.execute("SET cluster = quickstart")
            c.execute("DROP CLUSTER mv_c CASCADE")
            with pytest.raises(psycopg.Error) as e:
                c.execute("DROP MATERIALIZED VIEW winning_bids")
            assert e.value.sqlstate == "42P01"
    finally:
        srv.stop()
