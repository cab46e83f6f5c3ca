"""Load generator sources through the server: subsources, ticking, restart without gaps
or duplicates."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest

from tests.integration.server import WeirServer


def _wait(c: psycopg.Connection, sql: str, pred, timeout: float = 60):  # noqa: ANN001, ANN202
    deadline = time.time() + timeout
    while True:
        value = c.execute(sql).fetchone()
        if pred(value) or time.time() > deadline:
            return value
        time.sleep(0.5)


def test_auction_and_counter_sources(tmp_path: Path, java: None) -> None:
    srv = WeirServer(tmp_path / "data").start()
    try:
        with srv.connect() as c:
            c.execute("CREATE SOURCE auction FROM LOAD GENERATOR AUCTION (TICK INTERVAL '200ms') FOR ALL TABLES")
            c.execute("CREATE SOURCE cnt FROM LOAD GENERATOR COUNTER (TICK INTERVAL '100ms')")
            with pytest.raises(psycopg.Error) as e:
                c.execute("CREATE SOURCE bad FROM LOAD GENERATOR AUCTION")
            assert e.value.sqlstate == "0A000"
            with pytest.raises(psycopg.Error) as e:
                c.execute("CREATE SOURCE bad FROM LOAD GENERATOR COUNTER (SCALE FACTOR 1)")
            assert e.value.sqlstate in ("0A000", "22023")
            names = {r[0] for r in c.execute("SHOW SOURCES").fetchall()}
            assert {"auction", "accounts", "auctions", "bids", "organizations", "users", "cnt"} <= names
            assert c.execute("SELECT count(*) FROM users").fetchone()[0] > 0
            first = c.execute("SELECT count(*) FROM bids").fetchone()[0]
            later = _wait(c, "SELECT count(*) FROM bids", lambda v: v[0] > first)
            assert later[0] > first, "the AUCTION source is not ticking"
            rows = c.execute(
                "SELECT a.id, max(b.amount) AS top FROM auctions a JOIN bids b ON a.id = b.auction_id "
                "GROUP BY a.id").fetchall()
            assert rows
            with pytest.raises(psycopg.Error) as e:
                c.execute("INSERT INTO bids VALUES (1)")
            assert e.value.sqlstate == "42809"
            _wait(c, "SELECT count(*) FROM cnt", lambda v: v[0] >= 10)
        srv.stop()
        srv.start()
        with srv.connect() as c:
            _wait(c, "SELECT count(*) FROM cnt", lambda v: v[0] >= 30)
            values = [r[0] for r in c.execute("SELECT counter FROM cnt").fetchall()]
            assert len(values) == len(set(values)), "a tick was written twice across the restart"
            assert sorted(values) == list(range(1, len(values) + 1)), "a tick was lost across the restart"
            c.execute("DROP SOURCE cnt")
            assert "cnt" not in {r[0] for r in c.execute("SHOW SOURCES").fetchall()}
            c.execute("DROP SOURCE auction")
            assert "bids" not in {r[0] for r in c.execute("SHOW SOURCES").fetchall()}
    finally:
        srv.stop()
