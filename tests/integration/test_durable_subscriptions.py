"""Durable subscriptions (issue 11, part 6) through the wire protocol, one rule at a time.
Their lossless recipe under kill -9 runs in tests/integration/test_holds.py beside the
HOLD one."""

from __future__ import annotations

import threading

import psycopg

from tests.integration.server import WeirServer
from tests.integration.test_holds import _error, _until


def _durable_row(c: psycopg.Connection, name: str) -> tuple | None:
    return c.execute("SELECT acknowledged_up_to, state, reader_session_id, lag, time_since_ack "
                     "FROM mz_internal.mz_durable_subscriptions WHERE name = %s", (name,)).fetchone()


class _Copy(threading.Thread):
    """Reads a COPY (SUBSCRIBE ...) TO STDOUT into `rows` until it ends (`error`: how)."""

    def __init__(self, srv: WeirServer, sql: str) -> None:
        super().__init__(daemon=True)
        self.srv, self.sql = srv, sql
        self.rows: list[tuple] = []
        self.error: psycopg.Error | None = None
        self.conn = srv.connect()

    def run(self) -> None:
        try:
            with self.conn.cursor() as cur, cur.copy(self.sql) as cp:
                for row in cp.rows():
                    self.rows.append(row)
        except psycopg.Error as e:
            self.error = e
        finally:
            self.conn.close()

    def data(self) -> list[tuple]:
        return [r[2:] for r in list(self.rows) if r[1] == "f"]

    def progress(self) -> int:
        return max((int(r[0]) for r in list(self.rows) if r[1] == "t"), default=0)


def test_durable_subscription(server: WeirServer) -> None:
    """Part 6, one rule at a time: resume after the acknowledged time, one reader (a new
    one takes over), ACKNOWLEDGE's bounds, expiry and RESET, rename, drop, the relation."""
    with server.connect() as c:
        c.execute("CREATE TABLE ds_t (k int, v int)")
        c.execute("CREATE TABLE ds_u (k int, name text)")
        c.execute("INSERT INTO ds_u VALUES (0, 'zero'), (1, 'one')")
        c.execute("INSERT INTO ds_t VALUES (0, 10), (1, 20), (1, 5)")
        c.execute("CREATE DURABLE SUBSCRIPTION ds WITH (ACKNOWLEDGE WITHIN '1h') AS "
                  "SELECT name, count(*) AS n, sum(v) AS s FROM ds_t JOIN ds_u USING (k) GROUP BY name")
        start, state, reader, _, _ = _durable_row(c, "ds")
        assert state == "active" and reader is None
        sql = "COPY (SUBSCRIBE USING DURABLE SUBSCRIPTION ds WITH (PROGRESS, SNAPSHOT true)) TO STDOUT"
        first = _Copy(server, sql)
        first.start()
        _until(lambda: first.progress() > int(start))
        assert sorted(first.data()) == [("1", "one", "2", "25"), ("1", "zero", "1", "10")]
        assert _durable_row(c, "ds")[2] is not None  # its reader
        c.execute("INSERT INTO ds_t VALUES (0, 1)")
        _until(lambda: len(first.data()) == 4)
        assert sorted(first.data()[2:]) == [("-1", "zero", "1", "10"), ("1", "zero", "2", "11")]
        acked = first.progress() - 1
        c.execute(f"ACKNOWLEDGE DURABLE SUBSCRIPTION ds UP TO {acked}")
        assert int(_durable_row(c, "ds")[0]) == acked
        # ACKNOWLEDGE: not back, not past what is final
        assert _error(c, "ACKNOWLEDGE DURABLE SUBSCRIPTION ds UP TO 5").sqlstate == "22023"
        assert _error(c, f"ACKNOWLEDGE DURABLE SUBSCRIPTION ds UP TO {acked + 3_600_000}").sqlstate == "22023"
        assert _error(c, "ACKNOWLEDGE DURABLE SUBSCRIPTION nosuch UP TO 5").sqlstate == "42704"
        # a second reader resumes after the acknowledged time (no snapshot) and takes over
        c.execute("INSERT INTO ds_t VALUES (1, 100)")
        second = _Copy(server, "COPY (SUBSCRIBE USING DURABLE SUBSCRIPTION ds WITH (PROGRESS)) TO STDOUT")
        second.start()
        _until(lambda: first.error is not None)
        assert first.error.sqlstate == "55006"
        _until(lambda: len(second.data()) == 2)
        assert sorted(second.data()) == [("-1", "one", "2", "25"), ("1", "one", "3", "125")]
        # bad input changes nothing
        assert _error(c, "CREATE DURABLE SUBSCRIPTION ds_bad WITH (ACKNOWLEDGE WITHIN 'soon') AS "
                         "SELECT * FROM ds_t").sqlstate == "22023"
        assert _error(c, "CREATE DURABLE SUBSCRIPTION ds_bad WITH (ACKNOWLEDGE WITHIN '1h') AS "
                         "SELECT * FROM ds_nosuch").sqlstate == "42P01"
        assert _error(c, "CREATE DURABLE SUBSCRIPTION ds_bad AS SELECT * FROM ds_t").sqlstate == "42601"
        assert _error(c, "DROP TABLE ds_t").sqlstate == "2BP01"
        assert c.execute("SELECT count(*) FROM mz_internal.mz_durable_subscriptions "
                         "WHERE name = 'ds_bad'").fetchone() == (0,)
        # not acknowledged in time: expired, its reader ended, resuming refused until RESET
        c.execute("CREATE DURABLE SUBSCRIPTION ds_short WITH (ACKNOWLEDGE WITHIN '2s') AS SELECT * FROM ds_u")
        short = _Copy(server, "COPY (SUBSCRIBE USING DURABLE SUBSCRIPTION ds_short WITH (PROGRESS)) TO STDOUT")
        short.start()
        _until(lambda: short.error is not None, timeout=30)
        assert short.error.sqlstate == "55000" and "expired" in str(short.error)
        assert _durable_row(c, "ds_short")[1] == "expired"
        assert _error(c, "COPY (SUBSCRIBE USING DURABLE SUBSCRIPTION ds_short) TO STDOUT").sqlstate == "55000"
        assert _error(c, "ACKNOWLEDGE DURABLE SUBSCRIPTION ds_short UP TO 5").sqlstate == "55000"
        c.execute("ALTER DURABLE SUBSCRIPTION ds_short RESET")
        assert _durable_row(c, "ds_short")[1] == "active"
        c.execute("ALTER DURABLE SUBSCRIPTION ds_short RENAME TO ds_renamed")
        c.execute("DROP DURABLE SUBSCRIPTION ds_renamed")
        c.execute("DROP DURABLE SUBSCRIPTION IF EXISTS ds_renamed")
        assert _error(c, "DROP DURABLE SUBSCRIPTION ds_renamed").sqlstate == "42704"
        c.execute("DROP TABLE ds_t CASCADE")  # drops ds too, which ends its reader
        _until(lambda: second.error is not None)
        assert c.execute("SELECT count(*) FROM mz_internal.mz_durable_subscriptions").fetchone() == (0,)
        c.execute("DROP TABLE ds_u")
