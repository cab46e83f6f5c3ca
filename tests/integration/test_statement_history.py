"""Statement history end to end: a real server, real clients, the mz_internal relations
after a flush; sampling, retention, crash recovery, visibility, dry run, throttling."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import psycopg
import pytest

from tests.integration.server import WeirServer

FLUSH = 0.3  # statement_log_flush_interval in these tests, seconds
# The sample rate is capped at 0.99: with this seed every session's first 300 draws are
# below 0.99, so the statements these tests look for are always logged.
SEED = 23


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory, java: None):  # noqa: ANN201
    s = WeirServer(tmp_path_factory.mktemp("history") / "data").start()
    with s.connect() as c:
        c.execute(f"ALTER SYSTEM SET statement_log_flush_interval = '{int(FLUSH * 1000)}ms'")
        c.execute(f"ALTER SYSTEM SET statement_log_random_seed = {SEED}")
    yield s
    s.stop()


def _logged(c: psycopg.Connection, where: str, timeout: float = 30, finished: bool = False) -> list[tuple]:
    """Executions (with their statement's sql and type) matching `where`, once they appear
    (and, with `finished`, once none is running: a flush can write an execution's running
    row and leave its end to the next flush).
    This query is logged too, and its own text matches `where`: a flush while it runs could
    make it see itself, running, so it leaves itself out."""
    sql = ("SELECT p.sql, p.statement_type, e.finished_status, e.was_successful, e.was_canceled, "
           "e.was_aborted, e.error_message, e.rows_returned, e.was_fast_path, e.execution_strategy, "
           "e.params, e.result_size, e.cluster_name, e.application_name, e.sample_rate, e.finished_at, "
           "e.execution_timestamp, p.name, e.id "
           "FROM mz_internal.mz_statement_execution_history e "
           "JOIN mz_internal.mz_prepared_statement_history p ON e.prepared_statement_id = p.id "
           f"WHERE ({where}) AND p.sql NOT LIKE '%mz_statement_execution_history e%' ORDER BY e.began_at")
    deadline = time.time() + timeout
    rows: list[tuple] = []
    while time.time() < deadline:
        rows = c.execute(sql).fetchall()
        if rows and not (finished and any(r[2] == "running" for r in rows)):
            return rows
        time.sleep(FLUSH)
    return rows


def _one(c: psycopg.Connection, where: str, finished: bool = True) -> dict:
    rows = _logged(c, where, finished=finished)
    assert len(rows) == 1, (where, rows)
    keys = ["sql", "type", "status", "ok", "canceled", "aborted", "error", "rows", "fast", "strategy",
            "params", "size", "cluster", "app", "rate", "finished_at", "ts", "name", "id"]
    return dict(zip(keys, rows[0], strict=True))


def test_scripted_session_is_logged(srv: WeirServer) -> None:
    tag = "hist1"
    with srv.connect(application_name="histapp") as c:
        c.execute("SET statement_history_sample_rate = 1")
        c.execute(f"SELECT 1 AS {tag}_constant")
        c.execute(f"CREATE TABLE {tag}_t (id int, v text)")
        c.execute(f"INSERT INTO {tag}_t VALUES (1, 'a'), (2, 'b')")
        c.execute(f"CREATE INDEX {tag}_i ON {tag}_t (id)")
        deadline = time.time() + 60
        while "fast path" not in c.execute(f"EXPLAIN SELECT v FROM {tag}_t WHERE id = 1").fetchone()[0] \
                or srv.metric("weir_reads_total", strategy="fast-path") == 0:
            c.execute(f"SELECT v FROM {tag}_t WHERE id = 2").fetchall()
            assert time.time() < deadline
            time.sleep(0.2)
        assert c.execute(f"SELECT v AS {tag}_fast FROM {tag}_t WHERE id = 1").fetchall() == [("a",)]
        assert c.execute(f"SELECT count(*) AS {tag}_standard FROM {tag}_t").fetchall() == [(2,)]
        with pytest.raises(psycopg.errors.DivisionByZero):
            c.execute(f"SELECT 1 / 0 AS {tag}_error")
        cur = c.cursor()
        cur.execute(f"SELECT v AS {tag}_param FROM {tag}_t WHERE id = %s AND v <> %s", (2, "zz"), prepare=True)
        assert cur.fetchall() == [("b",)]
        # a cancelled query (statement_timeout cancels it, as a CancelRequest would)
        c.execute("SET statement_timeout = '300ms'")
        with pytest.raises(psycopg.errors.QueryCanceled):
            c.execute(f"SELECT count(*) AS {tag}_cancel "
                      "FROM generate_series(1, 100000) a CROSS JOIN generate_series(1, 100000) b")
        c.execute("SET statement_timeout = 0")
        c.execute(f"PREPARE {tag}_p (int) AS SELECT v FROM {tag}_t WHERE id = $1")
        assert c.execute(f"EXECUTE {tag}_p (2)").fetchall() == [("b",)]
        c.execute("BEGIN")
        c.execute(f"DECLARE {tag}_cur CURSOR FOR SELECT id FROM {tag}_t ORDER BY id")
        assert c.execute(f"FETCH 1 {tag}_cur").fetchall() == [(1,)]
        c.execute("COMMIT")
        app_rows = c.execute("SELECT application_name FROM mz_internal.mz_session_history").fetchall()
    assert ("histapp",) in app_rows or True  # (flushed later; checked below)

    with srv.connect() as c:
        constant = _one(c, f"p.sql = 'SELECT 1 AS {tag}_constant'")
        assert constant["status"] == "success" and constant["ok"] is True and constant["rows"] == 1
        assert constant["strategy"] == "constant" and constant["fast"] is False
        assert constant["canceled"] is False and constant["aborted"] is False and constant["error"] is None
        assert constant["type"] == "select" and constant["app"] == "histapp"
        assert constant["cluster"] == "quickstart" and constant["rate"] == pytest.approx(0.99)
        assert constant["size"] > 0 and constant["finished_at"] is not None and constant["ts"] is not None

        fast = _one(c, f"p.sql LIKE '%{tag}_fast%'")
        assert fast["strategy"] == "fast-path" and fast["fast"] is True and fast["rows"] == 1
        standard = _one(c, f"p.sql LIKE '%{tag}_standard%'")
        assert standard["strategy"] == "standard" and standard["fast"] is False and standard["rows"] == 1, standard

        err = _one(c, f"p.sql LIKE '%{tag}_error%'")
        assert err["status"] == "error" and err["ok"] is False and err["canceled"] is False
        assert err["error"] == "division by zero" and err["rows"] is None and err["size"] is None

        param = _one(c, f"p.sql LIKE '%{tag}_param%'")
        assert param["params"] == ["2", "zz"] and param["rows"] == 1 and param["status"] == "success"
        assert "$1" in param["sql"] and param["name"] != ""  # psycopg prepared it under a name

        executed = _one(c, f"p.name = '{tag}_p'")  # EXECUTE runs the statement PREPARE named
        assert executed["params"] == ["2"] and executed["rows"] == 1 and executed["sql"].startswith("SELECT v")

        cancel = _one(c, f"p.sql LIKE '%{tag}_cancel%'")
        assert cancel["status"] == "canceled" and cancel["canceled"] is True and cancel["ok"] is False
        assert cancel["error"] is None and cancel["rows"] is None

        for kind in ("declare", "fetch", "create_table", "create_index", "insert", "begin", "commit", "set_variable"):
            rows = _logged(c, f"p.statement_type = '{kind}'", finished=True)
            assert rows and all(r[2] == "success" for r in rows), kind
        fetch = _logged(c, f"p.sql = 'FETCH 1 {tag}_cur'")
        assert fetch[0][7] == 1  # rows_returned
        ddl = _one(c, f"p.sql LIKE 'CREATE TABLE {tag}_t%'")
        assert ddl["rows"] is None and ddl["strategy"] is None  # no rows, not a read

        sessions = c.execute("SELECT application_name, \"user\" FROM mz_internal.mz_session_history "
                             "WHERE application_name = 'histapp'").fetchall()
        assert sessions == [("histapp", "materialize")]
        events = {r[0] for r in c.execute(
            "SELECT l.event_type FROM mz_internal.mz_statement_lifecycle_history l WHERE l.statement_id = "
            f"'{standard['id']}'").fetchall()}
        assert events == {"execution-began", "optimization-finished", "storage-dependencies-finished",
                          "compute-dependencies-finished", "execution-finished"}
        recent = c.execute("SELECT sql, duration >= INTERVAL '0 s', finished_status FROM "
                           f"mz_internal.mz_recent_activity_log WHERE sql LIKE '%{tag}_error%'").fetchall()
        assert recent == [(f"SELECT 1 / 0 AS {tag}_error", True, "error")]


def test_running_subscribe_is_visible_then_canceled(srv: WeirServer) -> None:
    tag = "hist2"
    with srv.connect() as c:
        c.execute(f"CREATE TABLE {tag}_t (x int)")
    conn = srv.connect()
    conn.execute("SET statement_history_sample_rate = 1")
    done = threading.Event()

    def run() -> None:
        try:
            with conn.cursor().copy(f"COPY (SUBSCRIBE {tag}_t) TO STDOUT") as copy:
                for _ in copy:
                    pass
        except psycopg.Error:
            pass
        finally:
            done.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    with srv.connect() as c:
        running = _one(c, f"p.sql LIKE '%SUBSCRIBE {tag}_t%'", finished=False)
        assert running["status"] == "running" and running["finished_at"] is None
        assert running["ok"] is None and running["canceled"] is None and running["rows"] is None
        conn.cancel()
        assert done.wait(30)
        deadline = time.time() + 30
        while True:
            row = _one(c, f"p.sql LIKE '%SUBSCRIBE {tag}_t%'", finished=False)
            if row["status"] != "running" or time.time() > deadline:
                break
            time.sleep(FLUSH)
        # the running row was retracted and replaced by the finished one
        assert row["status"] == "canceled" and row["canceled"] is True and row["finished_at"] is not None
    conn.close()


def _sampled_set(srv: WeirServer, tag: str, n: int) -> set[int]:
    with srv.connect() as c:
        c.execute("SET statement_history_sample_rate = 0.5")
        for i in range(n):
            c.execute(f"SELECT {i} AS {tag}")
    with srv.connect() as c:
        # a marker logged after the batch: flushes are written in order, so once it is
        # visible every sampled execution of the batch is (a fixed sleep was not enough
        # on a loaded machine)
        c.execute("SET statement_history_sample_rate = 1")
        c.execute(f"SELECT 'done' AS {tag}_done")
        marker = ("SELECT 1 FROM mz_internal.mz_statement_execution_history e "
                  "JOIN mz_internal.mz_prepared_statement_history p ON e.prepared_statement_id = p.id "
                  f"WHERE p.sql LIKE '% AS {tag}_done'")
        assert _wait_rows(c, marker, 1, timeout=60), "the marker execution was never logged"
        rows = c.execute("SELECT p.sql, e.sample_rate FROM mz_internal.mz_statement_execution_history e "
                         "JOIN mz_internal.mz_prepared_statement_history p ON e.prepared_statement_id = p.id "
                         f"WHERE p.sql LIKE '% AS {tag}'").fetchall()
    assert all(rate == 0.5 for _, rate in rows)
    return {int(sql.split()[1]) for sql, _ in rows}


def test_sampling_is_reproducible_and_unbiased(srv: WeirServer) -> None:
    with srv.connect() as c:
        c.execute("ALTER SYSTEM SET statement_log_random_seed = 42")
    try:
        first = _sampled_set(srv, "hist3a", 200)
        second = _sampled_set(srv, "hist3b", 200)
        assert first == second  # same seed, same script: the same executions
        many = _sampled_set(srv, "hist3c", 2000)
        assert 0.45 * 2000 <= len(many) <= 0.55 * 2000, len(many)
    finally:
        with srv.connect() as c:
            c.execute(f"ALTER SYSTEM SET statement_log_random_seed = {SEED}")


def test_visibility(srv: WeirServer) -> None:
    tag = "hist4"
    with srv.connect() as c:
        c.execute(f"CREATE ROLE {tag}_alice LOGIN")
        c.execute(f"CREATE ROLE {tag}_bob LOGIN")
        c.execute(f"CREATE ROLE {tag}_mon LOGIN")
        c.execute(f"GRANT mz_monitor TO {tag}_mon")
    base = f"host=127.0.0.1 port={srv.sql_port} dbname=materialize"
    for who in ("alice", "bob"):
        with psycopg.connect(f"{base} user={tag}_{who}", autocommit=True) as c:
            c.execute("SET statement_history_sample_rate = 1")
            c.execute(f"SELECT 'secret-{who}' AS {tag}_{who}", prepare=False)
            c.execute(f"SELECT %s::text AS {tag}_{who}_p", (f"param-{who}",))
    time.sleep(FLUSH * 4)
    q = ("SELECT p.sql, p.redacted_sql, e.params FROM mz_internal.mz_statement_execution_history e "
         "JOIN mz_internal.mz_prepared_statement_history p ON e.prepared_statement_id = p.id "
         f"WHERE p.redacted_sql LIKE '%{tag}_%' ORDER BY p.redacted_sql")
    with psycopg.connect(f"{base} user={tag}_alice", autocommit=True) as c:
        rows = _wait_rows(c, q, 2)
        assert {r[0] for r in rows} == {f"SELECT 'secret-alice' AS {tag}_alice", f"SELECT $1::text AS {tag}_alice_p"}
        assert ["param-alice"] in [r[2] for r in rows]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("SELECT * FROM mz_internal.mz_statement_execution_history_raw")
        sessions = {r[0] for r in c.execute('SELECT "user" FROM mz_internal.mz_session_history').fetchall()}
        assert sessions == {f"{tag}_alice"}
    with psycopg.connect(f"{base} user={tag}_mon", autocommit=True) as c:
        rows = _wait_rows(c, q, 4)
        assert all("secret" not in r[0] and "'<REDACTED>'" in r[0] for r in rows)
        assert all(r[2] is None for r in rows)  # no params
    with srv.connect() as c:
        rows = _wait_rows(c, q, 4)
        assert {f"SELECT 'secret-bob' AS {tag}_bob"} <= {r[0] for r in rows}
        assert ["param-bob"] in [r[2] for r in rows]
        assert c.execute("SELECT count(*) FROM mz_internal.mz_statement_execution_history_raw").fetchone()[0] > 0


def _wait_rows(c: psycopg.Connection, q: str, n: int, timeout: float = 30) -> list[tuple]:
    deadline = time.time() + timeout
    rows: list[tuple] = []
    while time.time() < deadline:
        rows = c.execute(q).fetchall()
        if len(rows) >= n:
            return rows
        time.sleep(FLUSH)
    return rows


def test_dry_run_and_throttle_are_counted(srv: WeirServer) -> None:
    tag = "hist5"
    with srv.connect() as c:
        c.execute("ALTER SYSTEM SET statement_logging_mode = dry_run")
    try:
        before = srv.metric("weir_statement_logging_records_total", sampled="true")
        actual = srv.metric("weir_statement_logging_actual_bytes_total")
        with srv.connect() as c:
            c.execute("SET statement_history_sample_rate = 1")
            for i in range(20):
                c.execute(f"SELECT {i} AS {tag}")
        assert srv.metric("weir_statement_logging_records_total", sampled="true") >= before + 15  # of 20 at 0.99
        assert srv.metric("weir_statement_logging_actual_bytes_total") > actual
        assert srv.metric("weir_statement_logging_unsampled_bytes_total") > 0
        time.sleep(FLUSH * 4)
        with srv.connect() as c:
            assert c.execute("SELECT count(*) FROM mz_internal.mz_prepared_statement_history "
                             f"WHERE sql LIKE '% AS {tag}'").fetchone()[0] == 0  # nothing written
            c.execute("ALTER SYSTEM SET statement_logging_mode = on")
            c.execute("ALTER SYSTEM SET statement_logging_target_data_rate = 1")
        throttled = srv.metric("weir_statement_logging_throttled_total")
        with srv.connect() as c:
            c.execute("SET statement_history_sample_rate = 1")
            for i in range(20):
                c.execute(f"SELECT {i} AS {tag}_t")
        assert srv.metric("weir_statement_logging_throttled_total") >= throttled + 15  # of 20 at 0.99
        with srv.connect() as c:
            c.execute("ALTER SYSTEM RESET statement_logging_target_data_rate")
        with srv.connect() as c:
            c.execute("SET statement_history_sample_rate = 1")
            for i in range(3):
                c.execute(f"SELECT {i} AS {tag}_u")  # a new session: its own throttled count
    finally:
        with srv.connect() as c:
            c.execute("ALTER SYSTEM RESET statement_logging_mode")
            c.execute("ALTER SYSTEM RESET statement_logging_target_data_rate")


def test_retention_deletes_and_collects(srv: WeirServer) -> None:
    tag = "hist6"
    with srv.connect() as c:
        c.execute("SET statement_history_sample_rate = 1")
        c.execute(f"SELECT 1 AS {tag}")
    with srv.connect() as c:
        assert _logged(c, f"p.sql = 'SELECT 1 AS {tag}'")
        sessions_before = c.execute("SELECT count(*) FROM mz_internal.mz_session_history").fetchone()[0]
        time.sleep(1.5)
        c.execute("ALTER SYSTEM SET statement_log_max_age = '1s'")
        try:
            deadline = time.time() + 30
            while c.execute("SELECT count(*) FROM mz_internal.mz_prepared_statement_history "
                            f"WHERE sql = 'SELECT 1 AS {tag}'").fetchone()[0]:
                assert time.time() < deadline, "retention did not collect the prepared statement"
                time.sleep(FLUSH)
            old = c.execute("SELECT count(*) FROM mz_internal.mz_statement_execution_history "
                            "WHERE began_at < now() - INTERVAL '3 seconds'").fetchone()[0]
            assert old == 0
            sessions_after = c.execute("SELECT count(*) FROM mz_internal.mz_session_history").fetchone()[0]
            assert sessions_after < sessions_before  # closed sessions nobody references are gone
        finally:
            c.execute("ALTER SYSTEM RESET statement_log_max_age")


@pytest.mark.timeout(600)
def test_crash_marks_running_statements_aborted(tmp_path: Path, java: None) -> None:
    s = WeirServer(tmp_path / "data").start()
    try:
        with s.connect() as c:
            c.execute("ALTER SYSTEM SET statement_log_flush_interval = '200ms'")
            c.execute(f"ALTER SYSTEM SET statement_log_random_seed = {SEED}")
            c.execute("CREATE TABLE crash_t (x int)")
            c.execute("INSERT INTO crash_t VALUES (1)")
        conn = s.connect()
        conn.execute("SET statement_history_sample_rate = 1")
        t = threading.Thread(target=lambda: _drain(conn, "COPY (SUBSCRIBE crash_t) TO STDOUT"), daemon=True)
        t.start()
        with s.connect() as c:
            assert _one(c, "p.sql LIKE 'COPY (SUBSCRIBE crash_t%'", finished=False)["status"] == "running"
            c.execute("SET statement_history_sample_rate = 1")
            c.execute("SELECT 2 AS crash_done")
            assert _logged(c, "p.sql = 'SELECT 2 AS crash_done'", finished=True)
        s.stop(signal.SIGKILL)
        s.start(wait_for_replica=False)
        with s.connect() as c:
            row = _one(c, "p.sql LIKE 'COPY (SUBSCRIBE crash_t%'")
            assert row["status"] == "aborted" and row["aborted"] is True and row["error"]
            assert _one(c, "p.sql = 'SELECT 2 AS crash_done'")["status"] == "success"  # flushed: kept
            assert c.execute("SELECT count(*) FROM mz_internal.mz_sessions").fetchone()[0] == 1  # only us
    finally:
        s.stop()


def _drain(conn: psycopg.Connection, sql: str) -> None:
    try:
        with conn.cursor().copy(sql) as copy:
            for _ in copy:
                pass
    except Exception:  # noqa: BLE001 - the server is killed under it
        pass
