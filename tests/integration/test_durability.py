"""Crash safety: kill -9 the server during a stream of INSERTs; after a restart every
acknowledged INSERT is there exactly once. Also a clean SIGTERM restart."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import psycopg

from tests.integration.server import WeirServer


def _insert_stream(srv: WeirServer, acked: list[int], stop: threading.Event, start: int) -> None:
    try:
        with srv.connect() as c:
            i = start
            while not stop.is_set():
                c.execute("INSERT INTO dur VALUES (%s, 'row')", (i,))
                acked.append(i)
                i += 1
    except psycopg.Error:
        pass  # the server died under us: the INSERT in flight was never acknowledged


def test_kill_dash_nine_keeps_every_acknowledged_insert(tmp_path: Path, java: None) -> None:
    srv = WeirServer(tmp_path / "data").start()
    try:
        with srv.connect() as c:
            c.execute("CREATE TABLE dur (id int, note text)")
            c.execute("CREATE TABLE dur_two (id int)")
        acked: list[int] = []
        stop = threading.Event()
        writers = [threading.Thread(target=_insert_stream, args=(srv, acked, stop, k * 1_000_000))
                   for k in range(3)]
        for w in writers:
            w.start()
        deadline = time.time() + 30
        while len(acked) < 60 and time.time() < deadline:
            time.sleep(0.1)
        srv.stop(signal.SIGKILL)
        stop.set()
        for w in writers:
            w.join(30)
        assert len(acked) >= 20, "too few INSERTs were acknowledged before the crash"
        srv.start()
        with srv.connect() as c:
            ids = [r[0] for r in c.execute("SELECT id FROM dur").fetchall()]
            assert len(ids) == len(set(ids)), "a row was written twice"
            missing = set(acked) - set(ids)
            assert not missing, f"acknowledged INSERTs lost: {sorted(missing)[:10]}"
            # at most one unacknowledged INSERT in flight per writer may have landed
            assert len(set(ids) - set(acked)) <= len(writers)
            # the server works normally after recovery
            c.execute("INSERT INTO dur_two VALUES (1), (2)")
            assert c.execute("SELECT count(*) FROM dur_two").fetchone() == (2,)
            before = c.execute("SELECT count(*) FROM dur").fetchone()[0]
        srv.stop(signal.SIGTERM)
        srv.start()
        with srv.connect() as c:
            assert c.execute("SELECT count(*) FROM dur").fetchone()[0] == before
            assert c.execute("SELECT count(*) FROM dur_two").fetchone() == (2,)
            tables = {r[0] for r in c.execute("SHOW TABLES").fetchall()}
            assert {"dur", "dur_two"} <= tables
            # the timestamp oracle never goes back in time across restarts
            (ts,) = c.execute("SELECT mz_now()").fetchone()
            assert int(ts) > 0
    finally:
        srv.stop()


def test_concurrent_writers_are_group_committed(tmp_path: Path, java: None) -> None:
    """Many sessions inserting at once share commits: fewer Iceberg commits than INSERTs."""
    srv = WeirServer(tmp_path / "data").start()
    try:
        with srv.connect() as c:
            c.execute("CREATE TABLE gc (id int)")
        n_sessions, per_session = 8, 10
        barrier = threading.Barrier(n_sessions)

        def work(k: int) -> None:
            with srv.connect() as c:
                barrier.wait()
                for i in range(per_session):
                    c.execute("INSERT INTO gc VALUES (%s)", (k * 100 + i,))

        threads = [threading.Thread(target=work, args=(k,)) for k in range(n_sessions)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        with srv.connect() as c:
            assert c.execute("SELECT count(*) FROM gc").fetchone() == (n_sessions * per_session,)
        snapshots = _snapshot_count(srv, "gc")
        assert snapshots < n_sessions * per_session, f"{snapshots} commits for {n_sessions * per_session} INSERTs"
    finally:
        srv.stop()


def _snapshot_count(srv: WeirServer, table: str) -> int:
    """Data commits of a table's shard, read from its Iceberg metadata log."""
    import json

    with srv.connect() as c:
        (item_id,) = c.execute("SELECT id FROM mz_catalog.mz_tables WHERE name = %s", (table,)).fetchone()
    meta_dir = srv.data_dir / "warehouse" / "weir" / item_id / "metadata"
    files = sorted(meta_dir.glob("*.metadata.json"), key=lambda p: p.stat().st_mtime)
    assert files, "no Iceberg metadata found"
    md = json.loads(files[-1].read_text())
    return int(md.get("last-sequence-number", 0))
