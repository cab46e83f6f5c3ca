"""HOLD objects (design 003) through the wire protocol: the rules of CREATE / ALTER /
DROP HOLD one by one, holds surviving a kill -9 of the server, and a SUBSCRIBE that
advances its hold as it consumes losing nothing and seeing nothing twice across crashes."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

from tests.integration.server import WeirServer

WINDOW_S = 1.0  # a user object's default compaction window


def _at(c: psycopg.Connection, name: str) -> int:
    row = c.execute("SELECT at FROM mz_catalog.mz_holds WHERE name = %s", (name,)).fetchone()
    assert row is not None, f"no hold {name}"
    return int(row[0])


def _rows_once_ready(c: psycopg.Connection, sql: str, timeout: float,
                     fatal: tuple[type[psycopg.Error], ...] = ()) -> list[tuple]:
    """The rows of a read of a materialized view that may still be catching up (or
    restarting): retried on errors other than `fatal` until `timeout`."""
    deadline = time.time() + timeout
    while True:
        try:
            return c.execute(sql).fetchall()
        except fatal:
            raise
        except psycopg.Error:
            assert time.time() < deadline
            time.sleep(0.5)


def _error(c: psycopg.Connection, sql: str) -> psycopg.Error:
    with pytest.raises(psycopg.Error) as info:
        c.execute(sql)
    return info.value


def test_hold_rules(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE SCHEMA IF NOT EXISTS hold_other")
        c.execute("CREATE TABLE hr_t (a int)")
        c.execute("CREATE TABLE hold_other.hr_u (a int)")
        c.execute("INSERT INTO hr_t VALUES (1)")
        c.execute("CREATE VIEW hr_v AS SELECT a FROM hr_t")
        c.execute("CREATE MATERIALIZED VIEW hr_mv AS SELECT count(*) AS n FROM hr_t")
        c.execute("CREATE INDEX hr_i ON hr_v (a)")

        # objects in other schemas; without AT: the least time valid for every object
        c.execute("CREATE HOLD hr_h ON hr_t, hold_other.hr_u, hr_mv")
        at = _at(c, "hr_h")
        (hid,) = c.execute("SELECT id FROM mz_catalog.mz_holds WHERE name = 'hr_h'").fetchone()
        on = {r[0] for r in c.execute("SELECT on_id FROM mz_catalog.mz_hold_objects WHERE hold_id = %s",
                                      (hid,)).fetchall()}
        ids = {r[0] for r in c.execute("SELECT id FROM mz_catalog.mz_objects WHERE name IN "
                                       "('hr_t', 'hr_u', 'hr_mv')").fetchall()}
        assert on == ids
        row = c.execute("SELECT max_lag, auto_advances, last_auto_advanced_at, owner_id, created_at "
                        "FROM mz_catalog.mz_holds WHERE name = 'hr_h'").fetchone()
        assert row[0].total_seconds() == 3 * 3600 and row[1] == 0 and row[2] is None and row[4] is not None

        # history at the hold's time stays readable long after the compaction window
        c.execute("INSERT INTO hr_t VALUES (2)")
        time.sleep(3 * WINDOW_S)
        c.execute("INSERT INTO hr_t VALUES (3)")
        assert c.execute(f"SELECT a FROM hr_t AS OF {at}").fetchall() == [(1,)]
        assert _rows_once_ready(c, f"SELECT n FROM hr_mv AS OF {at}", 60) == [(1,)]
        with c.cursor() as cur, cur.copy(
                f"COPY (SUBSCRIBE hr_t AS OF {at} UP TO {at + 1}) TO STDOUT") as cp:
            assert [r[-1] for r in cp.rows()] == ["1"]
        # an object nobody holds is compacted as before: the error names no hold
        (unheld,) = c.execute("SELECT mz_now()::text").fetchone()
        c.execute("CREATE TABLE hr_free (a int)")
        time.sleep(3 * WINDOW_S)
        err = _error(c, f"SELECT * FROM hr_free AS OF {int(unheld)}")
        assert err.sqlstate == "22023" and "hold" not in str(err)

        # a read before the hold's time names the hold
        err = _error(c, f"SELECT * FROM hr_t AS OF {at - 1}")
        assert err.sqlstate == "22023" and 'hold "hr_h"' in str(err) and str(at) in str(err)

        # AT: not before an object's read frontier (unless another hold allows it), not in the future
        err = _error(c, "CREATE HOLD hr_bad ON hr_t AT 1")
        assert err.sqlstate == "22023" and '"hr_t"' in str(err)
        err = _error(c, f"CREATE HOLD hr_bad ON hr_t AT {at + 10**9}")
        assert err.sqlstate == "22023" and "future" in str(err)
        c.execute(f"CREATE HOLD hr_h2 ON hr_t AT {at}")  # another hold on hr_t is at `at`
        assert _at(c, "hr_h2") == at

        # ADVANCE TO: forward; back only where another hold keeps the history
        c.execute(f"ALTER HOLD hr_h2 ADVANCE TO {at + 500}")
        assert _at(c, "hr_h2") == at + 500
        c.execute(f"ALTER HOLD hr_h2 ADVANCE TO {at}")  # back: hr_h still holds hr_t at `at` ...
        c.execute(f"ALTER HOLD hr_h2 ADVANCE TO {at + 500}")
        c.execute(f"ALTER HOLD hr_h ADVANCE TO {at + 500}")
        time.sleep(2)
        err = _error(c, f"ALTER HOLD hr_h2 ADVANCE TO {at}")  # ... and once it moved on, not
        assert err.sqlstate == "22023" and '"hr_t"' in str(err)
        assert _at(c, "hr_h2") == at + 500  # a refused ADVANCE changes nothing
        assert c.execute(f"SELECT a FROM hr_t ORDER BY a AS OF {at + 500}").fetchall() == [(1,)]
        c.execute("DROP HOLD hr_h2")
        # ADVANCE without TO: to the objects' read frontier
        c.execute("ALTER HOLD hr_h ADVANCE")
        assert _at(c, "hr_h") > at + 500

        # what can be held
        err = _error(c, "CREATE HOLD hr_bad ON hr_v")
        assert err.sqlstate == "42809" and "view" in str(err)
        err = _error(c, "CREATE HOLD hr_bad ON hr_nosuch")
        assert err.sqlstate == "42P01"
        err = _error(c, "CREATE HOLD hr_bad ON mz_catalog.mz_tables")
        assert err.sqlstate in ("0A000", "42809")
        # MAX LAG: positive, capped by max_hold_max_lag
        assert _error(c, "CREATE HOLD hr_bad ON hr_t WITH (MAX LAG = '-1h')").sqlstate == "22023"
        assert _error(c, "CREATE HOLD hr_bad ON hr_t WITH (MAX LAG = '2d')").sqlstate == "22023"
        assert _error(c, "CREATE HOLD hr_bad ON hr_t WITH (MAX LAG = 'soon')").sqlstate == "22023"
        assert c.execute("SELECT count(*) FROM mz_catalog.mz_holds WHERE name = 'hr_bad'").fetchone() == (0,)

        # an index: reads of what it serves stay valid from the hold's time
        c.execute("CREATE HOLD hr_ih ON hr_i")
        iat = _at(c, "hr_ih")
        c.execute("INSERT INTO hr_t VALUES (4)")
        time.sleep(3 * WINDOW_S)
        assert c.execute(f"SELECT a FROM hr_v ORDER BY a AS OF {iat}").fetchall() == [(1,), (2,), (3,)]

        # MAX LAG: the hold advances by itself and says so
        c.execute("CREATE HOLD hr_lag ON hold_other.hr_u WITH (MAX LAG = '2s')")
        # the hold's time and its count of advances, read together (it may have advanced already)
        first, advances = (int(x) for x in c.execute(
            "SELECT at, auto_advances FROM mz_catalog.mz_holds WHERE name = 'hr_lag'").fetchone())
        deadline = time.time() + 30
        while c.execute("SELECT auto_advances FROM mz_catalog.mz_holds WHERE name = 'hr_lag'").fetchone()[0] == advances:
            assert time.time() < deadline
            time.sleep(0.5)
        row = c.execute("SELECT at, last_auto_advanced_at FROM mz_catalog.mz_holds WHERE name = 'hr_lag'").fetchone()
        assert int(row[0]) > first and row[1] is not None

        shown = {r[0]: r for r in c.execute("SHOW HOLDS").fetchall()}
        assert shown["hr_h"][4] == "hr_mv, hr_t, hr_u" and int(shown["hr_h"][1]) == _at(c, "hr_h")
        assert shown["hr_ih"][4] == "hr_i"

        # rename; dropping a held object needs CASCADE, which drops its holds
        c.execute("ALTER HOLD hr_h RENAME TO hr_h_renamed")
        assert c.execute("SELECT count(*) FROM mz_catalog.mz_holds WHERE name = 'hr_h_renamed'").fetchone() == (1,)
        err = _error(c, "DROP TABLE hold_other.hr_u")
        assert err.sqlstate == "2BP01" and "hold" in str(err)
        c.execute("DROP TABLE hold_other.hr_u CASCADE")
        names = {r[0] for r in c.execute("SELECT name FROM mz_catalog.mz_holds").fetchall()}
        assert "hr_h_renamed" not in names and "hr_lag" not in names
        assert _error(c, "DROP HOLD hr_h_renamed").sqlstate == "42704"
        c.execute("DROP HOLD IF EXISTS hr_h_renamed")
        c.execute("DROP HOLD hr_ih")
        assert _error(c, "ALTER HOLD hr_ih ADVANCE").sqlstate == "42704"
        c.execute("DROP TABLE hr_t CASCADE")
        c.execute("DROP TABLE hr_free")


def test_concurrent_advances_are_batched(server: WeirServer) -> None:
    """ADVANCEs from many sessions at once commit together (part 4): fewer catalog
    transactions than advances, and every session reads its own advance in mz_holds."""
    clients, rounds = 8, 6  # each round reads mz_holds twice (a Spark job until issue 14)
    with server.connect() as c:
        c.execute("CREATE TABLE hb_t (a int)")
        for k in range(clients):
            c.execute(f"CREATE HOLD hb_h{k} ON hb_t")
    advances0 = server.metric("weir_hold_advances_total")
    batches0 = server.metric("weir_hold_advance_batches_total")
    stale: list[tuple[int, int]] = []
    errors: list[BaseException] = []

    def advance(k: int) -> None:
        try:
            with server.connect() as c:
                for _ in range(rounds):
                    c.execute(f"ALTER HOLD hb_h{k} ADVANCE")
                    (now,) = c.execute("SELECT at FROM mz_catalog.mz_holds WHERE name = %s", (f"hb_h{k}",)).fetchone()
                    target = int(now)  # the next advance moves on from here, never back
                    c.execute(f"ALTER HOLD hb_h{k} ADVANCE TO {target}")
                    if _at(c, f"hb_h{k}") != target:
                        stale.append((k, target))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=advance, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    assert not stale, f"mz_holds did not show a session's own advance: {stale}"
    advances = server.metric("weir_hold_advances_total") - advances0
    batches = server.metric("weir_hold_advance_batches_total") - batches0
    assert advances >= clients * rounds * 2 * 0.5  # concurrent advances of one hold may merge
    assert batches < advances, (batches, advances)
    with server.connect() as c:
        c.execute("DROP TABLE hb_t CASCADE")
        assert c.execute("SELECT count(*) FROM mz_catalog.mz_holds WHERE name LIKE 'hb_h%'").fetchone() == (0,)


def _lag_row(c: psycopg.Connection, hold: str) -> tuple | None:
    return c.execute("SELECT l.write_frontier, l.lag, l.headroom, l.retained_bytes FROM mz_internal.mz_hold_lag l "
                     "JOIN mz_catalog.mz_holds h ON h.id = l.hold_id WHERE h.name = %s", (hold,)).fetchone()


def _until(fn, timeout: float = 60):  # noqa: ANN001, ANN202
    deadline = time.time() + timeout
    while True:
        got = fn()
        if got:
            return got
        assert time.time() < deadline, "timed out"
        time.sleep(0.5)


def test_hold_lag_and_retained_bytes(server: WeirServer) -> None:
    """mz_hold_lag: lag and headroom add up to MAX LAG; the bytes a hold keeps from
    compaction are measured (more than zero while it keeps old inserts, zero once advanced)."""
    with server.connect() as c:
        c.execute("CREATE TABLE hl_t (a int)")
        c.execute("CREATE HOLD hl_h ON hl_t WITH (MAX LAG = '1h')")
        at = _at(c, "hl_h")
        for i in range(3):
            c.execute("INSERT INTO hl_t VALUES (%s)", (i,))
        time.sleep(3 * WINDOW_S)  # the inserts fall behind the compaction window: only the hold keeps them
        frontier, lag, headroom, retained = _until(lambda: (r := _lag_row(c, "hl_h")) and r[3] > 0 and r)
        assert int(frontier) > at and lag.total_seconds() > 0
        assert lag + headroom == timedelta(hours=1)
        c.execute("ALTER HOLD hl_h ADVANCE")
        _until(lambda: (r := _lag_row(c, "hl_h")) and r[3] == 0)
        (hold_id,) = c.execute("SELECT id FROM mz_catalog.mz_holds WHERE name = 'hl_h'").fetchone()
        c.execute("DROP HOLD hl_h")
        _until(lambda: c.execute("SELECT count(*) FROM mz_internal.mz_hold_lag WHERE hold_id = %s",
                                 (hold_id,)).fetchone() == (0,))
        c.execute("DROP TABLE hl_t")


def test_held_index_answers_from_its_arrangement(server: WeirServer) -> None:
    """Part 3: an index held at t keeps its updates from t in replica memory, so reads AS
    OF t are answered from the arrangement (fast path, no Spark job) long after the 10 s an
    unheld index keeps; mz_hold_lag reports the memory; advancing the hold frees it."""
    retain_s = 10.0  # what an unheld arrangement keeps (weir.compute.replica.arrangement)
    with server.connect() as c:
        c.execute("CREATE TABLE hi_t (k int, v text)")
        c.execute("INSERT INTO hi_t VALUES (1, 'a'), (2, 'b')")
        c.execute("CREATE INDEX hi_i ON hi_t (k)")
        fast = server.metric("weir_reads_total", strategy="fast-path")
        _until(lambda: c.execute("SELECT v FROM hi_t WHERE k = 2").fetchall() == [("b",)]
               and server.metric("weir_reads_total", strategy="fast-path") > fast)
        c.execute("CREATE HOLD hi_h ON hi_i WITH (MAX LAG = '1h')")
        at = _at(c, "hi_h")
        c.execute("UPDATE hi_t SET v = 'c' WHERE k = 1")
        c.execute("INSERT INTO hi_t SELECT g, 'x' FROM generate_series(3, 200) g")
        time.sleep(retain_s + 2)
        fast = server.metric("weir_reads_total", strategy="fast-path")
        assert c.execute(f"SELECT v FROM hi_t WHERE k = 1 AS OF {at}").fetchall() == [("a",)]
        assert c.execute(f"SELECT k, v FROM hi_t ORDER BY k AS OF {at}").fetchall() == [(1, "a"), (2, "b")]
        assert c.execute("SELECT v FROM hi_t WHERE k = 1").fetchall() == [("c",)]
        assert server.metric("weir_reads_total", strategy="fast-path") == fast + 3
        # the memory the hold keeps, measured by the replica
        _until(lambda: (r := _lag_row(c, "hi_h")) and r[3] > 0)
        c.execute("ALTER HOLD hi_h ADVANCE")
        moved = _at(c, "hi_h")
        assert c.execute(f"SELECT count(*) FROM hi_t AS OF {moved}").fetchone() == (200,)
        _until(lambda: (r := _lag_row(c, "hi_h")) and r[3] == 0)
        c.execute("DROP HOLD hi_h")
        c.execute("DROP TABLE hi_t CASCADE")


def test_holds_survive_a_crash(tmp_path: Path, java: None) -> None:
    srv = WeirServer(tmp_path / "data").start()
    try:
        with srv.connect() as c:
            c.execute("CREATE TABLE hc_t (a int)")
            c.execute("INSERT INTO hc_t VALUES (1)")
            c.execute("CREATE MATERIALIZED VIEW hc_mv AS SELECT sum(a) AS s FROM hc_t")
            c.execute("CREATE VIEW hc_v AS SELECT a FROM hc_t")
            c.execute("CREATE INDEX hc_i ON hc_v (a)")
            deadline = time.time() + 120
            while c.execute("SELECT s FROM hc_mv").fetchall() != [(1,)]:
                assert time.time() < deadline
                time.sleep(0.5)
            c.execute("CREATE HOLD hc_h ON hc_t, hc_mv, hc_i")
            c.execute("CREATE HOLD hc_moved ON hc_t")
            at = _at(c, "hc_h")
            c.execute("INSERT INTO hc_t VALUES (10)")
            c.execute("ALTER HOLD hc_moved ADVANCE")  # acknowledged: durable even if killed at once
            moved = _at(c, "hc_moved")
            assert moved > at
        srv.kill()
        srv.start()
        with srv.connect() as c:
            assert _at(c, "hc_h") == at
            assert _at(c, "hc_moved") == moved
            time.sleep(3 * WINDOW_S)
            c.execute("INSERT INTO hc_t VALUES (100)")
            assert c.execute(f"SELECT a FROM hc_t AS OF {at}").fetchall() == [(1,)]
            assert c.execute(f"SELECT a FROM hc_v AS OF {at}").fetchall() == [(1,)]
            # ... and once its index has rehydrated, from the history its arrangement keeps again
            fast = srv.metric("weir_reads_total", strategy="fast-path")
            _until(lambda: c.execute(f"SELECT a FROM hc_v AS OF {at}").fetchall() == [(1,)]
                   and srv.metric("weir_reads_total", strategy="fast-path") > fast, timeout=120)
            assert _rows_once_ready(c, f"SELECT s FROM hc_mv AS OF {at}", 120,
                                    (psycopg.errors.QueryCanceled,)) == [(1,)]
            assert c.execute("SELECT sum(a) FROM hc_t").fetchone() == (111,)
    finally:
        srv.stop()


class _Writer(threading.Thread):
    """Inserts 1, 2, 3, ... one per statement, reconnecting after crashes."""

    def __init__(self, srv: WeirServer, table: str = "lossless", pause: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.srv, self.acked, self.stop = srv, [], threading.Event()
        self.table, self.pause = table, pause
        self.next = 1

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                with self.srv.connect(connect_timeout=2) as c:
                    while not self.stop.is_set():
                        c.execute(f"INSERT INTO {self.table} VALUES (%s)", (self.next,))
                        self.acked.append(self.next)
                        self.next += 1
                        time.sleep(self.pause)
            except psycopg.Error:
                self.next += 1  # the INSERT in flight may or may not have landed: never reuse its value
                time.sleep(0.3)


class _Follower(threading.Thread):
    """A client that follows a SUBSCRIBE through crashes: `_follow` until it fails, then
    again, until stopped; an error other than a connection's is kept for the test."""

    def __init__(self, srv: WeirServer) -> None:
        super().__init__(daemon=True)
        self.srv, self.stop = srv, threading.Event()
        self.resubscribes = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                try:
                    self._follow()
                except psycopg.Error:
                    time.sleep(0.3)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e

    def _follow(self) -> None:
        raise NotImplementedError


class _Subscriber(_Follower):
    """The client recipe of the README: apply updates at each progress message P, advance
    the hold to P - 1, and after any failure resubscribe AS OF P - 1 WITHOUT a snapshot."""

    def __init__(self, srv: WeirServer, at: int) -> None:
        super().__init__(srv)
        self.at = at
        self.seen: dict[int, int] = {}

    def _follow(self) -> None:
        with self.srv.connect(connect_timeout=2) as c, self.srv.connect(connect_timeout=2) as ctl:
            self.resubscribes += 1
            sql = f"COPY (SUBSCRIBE lossless WITH (PROGRESS, SNAPSHOT false) AS OF {self.at}) TO STDOUT"
            pending: list[tuple[int, int]] = []
            with c.cursor() as cur, cur.copy(sql) as cp:
                for ts, progressed, diff, value in cp.rows():
                    if progressed == "t":
                        for v, d in pending:
                            self.seen[v] = self.seen.get(v, 0) + d
                        pending.clear()
                        self.at = int(ts) - 1
                        ctl.execute(f"ALTER HOLD lossless_h ADVANCE TO {self.at}")
                        if self.stop.is_set():
                            return
                    else:
                        pending.append((int(value), int(diff)))


class _DurableSubscriber(_Follower):
    """The same recipe through a durable subscription over a join and an aggregate: apply
    the updates at each progress message P, ACKNOWLEDGE UP TO P - 1, and after any failure
    SUBSCRIBE USING it again (which resumes after the acknowledged time). Its input is
    written about once a second: SUBSCRIBE computes a join and aggregate with a Spark job
    per input time (~0.7 s each on this machine)."""

    def __init__(self, srv: WeirServer) -> None:
        super().__init__(srv)
        self.state: dict[tuple[str, int, int], int] = {}  # (name, n, s) -> multiplicity
        self.acked = 0

    def _follow(self) -> None:
        with self.srv.connect(connect_timeout=2) as c, self.srv.connect(connect_timeout=2) as ctl:
            self.resubscribes += 1
            snapshot = "true" if self.resubscribes == 1 else "false"
            sql = f"COPY (SUBSCRIBE USING DURABLE SUBSCRIPTION lossless_ds WITH (PROGRESS, SNAPSHOT {snapshot})) TO STDOUT"
            pending: list[tuple[tuple[str, int, int], int]] = []
            with c.cursor() as cur, cur.copy(sql) as cp:
                for ts, progressed, diff, name, n, total in cp.rows():
                    if progressed == "t":
                        for row, d in pending:
                            self.state[row] = self.state.get(row, 0) + d
                        pending.clear()
                        ctl.execute(f"ACKNOWLEDGE DURABLE SUBSCRIPTION lossless_ds UP TO {int(ts) - 1}")
                        self.acked = int(ts) - 1
                        if self.stop.is_set():
                            return
                    else:
                        pending.append(((name, int(n), int(total)), int(diff)))


def _lossless(tmp_path: Path, cycles: int) -> None:
    rng = random.Random(20261124)
    srv = WeirServer(tmp_path / "data").start()
    writer: _Writer | None = None
    sub: _Subscriber | None = None
    durable: _DurableSubscriber | None = None
    slow_writer: _Writer | None = None
    try:
        with srv.connect() as c:
            c.execute("CREATE TABLE lossless (v int)")
            c.execute("CREATE HOLD lossless_h ON lossless")
            at = _at(c, "lossless_h")
            c.execute("CREATE TABLE lossless_d (v int)")
            c.execute("CREATE TABLE lossless_k (k int, name text)")
            c.execute("INSERT INTO lossless_k VALUES (0, 'even'), (1, 'odd')")
            c.execute("CREATE DURABLE SUBSCRIPTION lossless_ds WITH (ACKNOWLEDGE WITHIN '1h') AS "
                      "SELECT name, count(*) AS n, sum(v) AS s FROM lossless_d JOIN lossless_k ON v % 2 = k GROUP BY name")
        writer, sub, durable = _Writer(srv), _Subscriber(srv, at), _DurableSubscriber(srv)
        slow_writer = _Writer(srv, "lossless_d", pause=1.0)
        writer.start()
        slow_writer.start()
        sub.start()
        durable.start()
        for cycle in range(cycles):
            time.sleep(rng.uniform(1.0, 4.0))
            if cycle % 4 == 3 and srv.replica_pids():  # now and then the replica instead
                os.kill(srv.replica_pids()[0], signal.SIGKILL)
                continue
            srv.kill()
            time.sleep(rng.uniform(0.0, 2.0))  # clients fail and retry while it is down
            srv.start(wait_for_replica=False)
        time.sleep(8)  # writes after the last crash too (an INSERT waits for its commit, ~1 s)
        writer.stop.set()
        slow_writer.stop.set()
        writer.join(30)
        slow_writer.join(30)
        with srv.connect() as c:
            stored = sorted(r[0] for r in c.execute("SELECT v FROM lossless").fetchall())
            stored_d = sorted(r[0] for r in c.execute("SELECT v FROM lossless_d").fetchall())
        deadline = time.time() + 60
        while sorted(v for v, n in sub.seen.items() if n) != stored and time.time() < deadline:
            assert sub.error is None, sub.error
            time.sleep(0.5)
        sub.stop.set()
        assert sub.error is None, sub.error
        # the durable subscription: its state is the query's answer, every row exactly once
        assert set(slow_writer.acked) <= set(stored_d) and len(stored_d) > 5
        expected = {("even", sum(1 for v in stored_d if v % 2 == 0), sum(v for v in stored_d if v % 2 == 0)): 1,
                    ("odd", sum(1 for v in stored_d if v % 2), sum(v for v in stored_d if v % 2)): 1}
        while {r: n for r, n in durable.state.items() if n} != expected and time.time() < deadline + 60:
            assert durable.error is None, durable.error
            time.sleep(0.5)
        durable.stop.set()
        assert durable.error is None, durable.error
        assert {r: n for r, n in durable.state.items() if n} == expected, (durable.state, expected)
        assert durable.resubscribes > cycles // 2, "the durable subscriber did not see the crashes"
        assert len(stored) == len(set(stored)), "a row was stored twice"
        assert set(writer.acked) <= set(stored), "an acknowledged INSERT was lost"
        duplicated = {v: n for v, n in sub.seen.items() if n > 1}
        negative = {v: n for v, n in sub.seen.items() if n < 0}
        assert not duplicated and not negative, (duplicated, negative)
        missing = set(stored) - {v for v, n in sub.seen.items() if n == 1}
        assert not missing, f"the subscriber lost {len(missing)} rows: {sorted(missing)[:10]}"
        assert sub.resubscribes > cycles // 2, "the subscriber did not see the crashes"
        assert len(stored) > 10
    finally:
        if writer is not None:
            writer.stop.set()
        if sub is not None:
            sub.stop.set()
        if durable is not None:
            durable.stop.set()
        if slow_writer is not None:
            slow_writer.stop.set()
        srv.stop()


@pytest.mark.covered_by("test_lossless_subscribe_6_kill_cycles")
def test_lossless_subscribe_across_crashes(tmp_path: Path, java: None) -> None:
    _lossless(tmp_path, cycles=4)  # three of the server, one of the replica


@pytest.mark.slow
@pytest.mark.timeout(900)  # 6 kills (5 of the server, 1 of its replica): ~120 s, more on a loaded machine
def test_lossless_subscribe_6_kill_cycles(tmp_path: Path, java: None) -> None:
    _lossless(tmp_path, cycles=6)


def test_retain_history(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE TABLE rh_t (a int) WITH (RETAIN HISTORY FOR '1h')")
        c.execute("CREATE TABLE rh_plain (a int)")
        c.execute("INSERT INTO rh_t VALUES (1)")
        c.execute("INSERT INTO rh_plain VALUES (1)")
        (ts,) = c.execute("SELECT mz_now()::text").fetchone()
        c.execute("INSERT INTO rh_t VALUES (2)")
        c.execute("INSERT INTO rh_plain VALUES (2)")
        time.sleep(3 * WINDOW_S)
        assert c.execute(f"SELECT a FROM rh_t AS OF {ts}").fetchall() == [(1,)]
        assert _error(c, f"SELECT a FROM rh_plain AS OF {ts}").sqlstate == "22023"

        c.execute("CREATE MATERIALIZED VIEW rh_mv WITH (RETAIN HISTORY FOR '30min') AS SELECT count(*) FROM rh_t")
        c.execute("ALTER MATERIALIZED VIEW rh_mv SET (RETAIN HISTORY FOR '2h')")
        rows = dict(c.execute("SELECT o.name, h.value::text FROM mz_internal.mz_history_retention_strategies h "
                              "JOIN mz_catalog.mz_objects o USING (id) WHERE o.name LIKE 'rh_%'").fetchall())
        assert rows == {"rh_t": "3600000", "rh_plain": "1000", "rh_mv": "7200000"}

        # RESET: the default window again, and history older than it goes
        c.execute("ALTER TABLE rh_t RESET (RETAIN HISTORY)")
        time.sleep(3 * WINDOW_S)
        assert _error(c, f"SELECT a FROM rh_t AS OF {ts}").sqlstate == "22023"

        # bad values change nothing
        assert _error(c, "ALTER TABLE rh_plain SET (RETAIN HISTORY FOR '10ms')").sqlstate == "22023"
        assert _error(c, "CREATE TABLE rh_bad (a int) WITH (RETAIN HISTORY FOR 'later')").sqlstate == "22023"
        assert c.execute("SELECT count(*) FROM mz_catalog.mz_tables WHERE name = 'rh_bad'").fetchone() == (0,)
        assert _error(c, "ALTER MATERIALIZED VIEW rh_t SET (RETAIN HISTORY FOR '1h')").sqlstate == "42809"
        c.execute("DROP TABLE rh_t CASCADE")
        c.execute("DROP TABLE rh_plain")


def test_hold_created_with_its_object(server: WeirServer) -> None:
    """BEGIN; CREATE INDEX | MATERIALIZED VIEW; CREATE HOLD on it; COMMIT: the hold keeps the
    new object's history from its first time; anything else in the transaction is an
    error and leaves nothing behind."""
    with server.connect() as c:
        c.execute("CREATE TABLE hx_t (a int)")
        c.execute("INSERT INTO hx_t VALUES (1)")
        c.execute("BEGIN")
        c.execute("CREATE MATERIALIZED VIEW hx_mv AS SELECT count(*) AS n FROM hx_t")
        c.execute("CREATE HOLD hx_h ON hx_mv")
        c.execute("COMMIT")
        at = _at(c, "hx_h")
        c.execute("INSERT INTO hx_t VALUES (2)")
        time.sleep(3 * WINDOW_S)
        assert _rows_once_ready(c, f"SELECT n FROM hx_mv AS OF {at}", 60,
                                (psycopg.errors.InvalidParameterValue,)) == [(1,)]

        def nothing_left(*names: str) -> None:
            listed = ", ".join(f"'{n}'" for n in names)
            found = c.execute(f"SELECT name FROM mz_catalog.mz_objects WHERE name IN ({listed})").fetchall()
            assert found == []

        c.execute("BEGIN")
        c.execute("CREATE INDEX hx_i ON hx_t (a)")
        assert _error(c, "CREATE HOLD hx_bad ON hx_t").sqlstate == "25001"  # not the created object
        assert c.execute("COMMIT").statusmessage == "ROLLBACK"
        nothing_left("hx_i", "hx_bad")

        c.execute("BEGIN")
        c.execute("CREATE INDEX hx_i2 ON hx_t (a)")
        c.execute("CREATE HOLD hx_h2 ON hx_i2")
        assert _error(c, "CREATE HOLD hx_h3 ON hx_i2").sqlstate == "25001"  # only one
        c.execute("COMMIT")
        nothing_left("hx_i2", "hx_h2", "hx_h3")

        c.execute("BEGIN")
        c.execute("CREATE INDEX hx_i3 ON hx_t (a)")
        assert _error(c, "SELECT 1").sqlstate == "25001"
        c.execute("ROLLBACK")
        nothing_left("hx_i3")

        c.execute("BEGIN")
        c.execute("CREATE INDEX hx_i4 ON hx_t (a)")
        c.execute("CREATE HOLD hx_h4 ON hx_i4")
        c.execute("COMMIT")
        assert _at(c, "hx_h4") > 0
        c.execute("DROP TABLE hx_t CASCADE")
