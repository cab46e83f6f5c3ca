"""End to end through psycopg 3 against a real weir server with a real Spark replica."""

from __future__ import annotations

import datetime as dt
import decimal
import threading
import time
import uuid

import psycopg
import pytest
from psycopg import pq

from tests.integration.server import WeirServer


def _sqlstate(fn) -> str:  # noqa: ANN001
    with pytest.raises(psycopg.Error) as e:
        fn()
    return e.value.sqlstate or ""


def test_issue_walkthrough(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE TABLE walk (id int, name text, score double precision, ok boolean)")
        c.execute("INSERT INTO walk VALUES (1, 'a', 1.5, true), (2, 'b', NULL, false)")
        c.execute("UPDATE walk SET score = 2.5 WHERE id = 2")
        c.execute("DELETE FROM walk WHERE id = 1")
        rows = c.execute("SELECT name, score FROM walk WHERE ok = false").fetchall()
        assert rows == [("b", 2.5)]
        (ts,) = c.execute("SELECT mz_now()").fetchone()
        assert int(ts) > 1_700_000_000_000
        tables = [r[0] for r in c.execute("SHOW TABLES").fetchall()]
        assert "walk" in tables
        clusters = c.execute("SHOW CLUSTERS").fetchall()
        assert clusters[0][0] == "quickstart"
        replicas = c.execute("SHOW CLUSTER REPLICAS").fetchall()
        assert replicas[0][:3] == ("quickstart", "r1", "1")


def test_version_and_constants(server: WeirServer) -> None:
    with server.connect() as c:
        assert c.execute("SELECT version()").fetchone()[0].startswith("PostgreSQL")
        assert c.execute("SELECT 1").fetchone() == (1,)
        assert c.execute("SELECT 1 + 2 AS x, 'a' || 'b'").fetchone() == (3, "ab")
        cur = c.execute("SELECT 1")
        assert cur.description[0].name == "?column?"
        assert c.info.parameter_status("server_version").startswith("15")


def test_all_types_round_trip(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("""CREATE TABLE typed (b boolean, s smallint, i integer, l bigint, r real,
            d double precision, n numeric(10,2), t text, v varchar, dd date, ts timestamp,
            tz timestamptz, iv interval, u uuid, by bytea, j jsonb, a text[])""")
        u = uuid.uuid4()
        row = (True, 7, 42, 2**40, 1.5, 2.25, decimal.Decimal("12.34"), "hé", "v",
               dt.date(2024, 2, 29), dt.datetime(2024, 1, 2, 3, 4, 5, 600000),
               dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC), dt.timedelta(days=1, seconds=7),
               u, b"\x00\x01", psycopg.types.json.Jsonb({"a": 1}), ["x", None, "y z"])
        c.execute("INSERT INTO typed VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)", row)
        for binary in (False, True):
            got = c.cursor(binary=binary).execute("SELECT * FROM typed").fetchone()
            assert got[:12] == row[:12]
            assert got[12] == row[12]
            assert str(got[13]) == str(u)
            assert bytes(got[14]) == b"\x00\x01"
            assert got[15] == {"a": 1}
            assert got[16] == ["x", None, "y z"]


def test_errors_have_sqlstates(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE TABLE errs (id int NOT NULL, name text)")
        assert _sqlstate(lambda: c.execute("SELECT * FROM nope")) == "42P01"
        assert _sqlstate(lambda: c.execute("SELECT nope FROM errs")) == "42703"
        assert _sqlstate(lambda: c.execute("SELEC 1")) == "42601"
        assert _sqlstate(lambda: c.execute("SELECT 1/0")) == "22012"
        assert _sqlstate(lambda: c.execute("SELECT id / 0 FROM (SELECT 1 AS id) x")) == "22012"
        assert _sqlstate(lambda: c.execute("INSERT INTO errs VALUES ('abc', 'x')")) == "22P02"
        assert _sqlstate(lambda: c.execute("INSERT INTO errs VALUES (NULL, 'x')")) == "23502"
        assert c.execute("SELECT count(*) FROM errs").fetchone() == (0,)
        assert _sqlstate(lambda: c.execute("CREATE TABLE errs (x int)")) == "42P07"


def test_transaction_status_and_failed_block(server: WeirServer) -> None:
    with psycopg.connect(server.dsn) as c:  # not autocommit: psycopg issues BEGIN
        c.execute("SELECT 1")
        assert c.info.transaction_status == pq.TransactionStatus.INTRANS
        with pytest.raises(psycopg.Error):
            c.execute("SELECT * FROM nope")
        assert c.info.transaction_status == pq.TransactionStatus.INERROR
        assert _sqlstate(lambda: c.execute("SELECT 1")) == "25P02"
        c.rollback()
        assert c.info.transaction_status == pq.TransactionStatus.IDLE
        assert c.execute("SELECT 1").fetchone() == (1,)


def test_transaction_writes_commit_atomically(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE TABLE tx_a (x int)")
        c.execute("CREATE TABLE tx_b (x int)")
        c.execute("BEGIN")
        c.execute("INSERT INTO tx_a VALUES (1)")
        c.execute("INSERT INTO tx_b VALUES (2)")
        c.execute("ROLLBACK")
        assert c.execute("SELECT count(*) FROM tx_a").fetchone() == (0,)
        c.execute("BEGIN")
        c.execute("INSERT INTO tx_a VALUES (1)")
        c.execute("INSERT INTO tx_b VALUES (2)")
        c.execute("COMMIT")
        assert c.execute("SELECT (SELECT count(*) FROM tx_a) + (SELECT count(*) FROM tx_b)").fetchone() == (2,)
        c.execute("BEGIN")
        c.execute("INSERT INTO tx_a VALUES (5)")
        assert _sqlstate(lambda: c.execute("SELECT * FROM tx_a")) == "25000"
        c.execute("ROLLBACK")
        c.execute("BEGIN")
        c.execute("SELECT * FROM tx_a")
        assert _sqlstate(lambda: c.execute("INSERT INTO tx_a VALUES (6)")) == "25000"
        c.execute("ROLLBACK")
        assert c.execute("SELECT count(*) FROM tx_a").fetchone() == (1,)


def test_extended_prepared_and_binary(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE TABLE ext (id int, name text)")
        c.execute("INSERT INTO ext VALUES (%s, %s)", (1, "one"), prepare=True)
        c.execute("INSERT INTO ext VALUES (%s, %s)", (2, "two"), prepare=True)
        for _ in range(3):
            rows = c.execute("SELECT name FROM ext WHERE id = %s", (2,), prepare=True).fetchall()
            assert rows == [("two",)]
        cur = c.cursor(binary=True)
        assert cur.execute("SELECT id, name FROM ext ORDER BY id").fetchall() == [(1, "one"), (2, "two")]


def test_copy_to_stdout(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE TABLE cp (id int, name text)")
        c.execute("INSERT INTO cp VALUES (1, 'a b'), (2, NULL)")
        with c.cursor().copy("COPY (SELECT * FROM cp ORDER BY id) TO STDOUT") as copy:
            data = b"".join(bytes(b) for b in copy)
        assert data == b"1\ta b\n2\t\\N\n"


def test_set_show_and_application_name(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("SET application_name = 'weir-test'")
        assert c.info.parameter_status("application_name") == "weir-test"
        assert c.execute("SHOW application_name").fetchone() == ("weir-test",)
        c.execute("SET extra_float_digits = 3")
        assert c.execute("SHOW extra_float_digits").fetchone() == ("3",)
        assert _sqlstate(lambda: c.execute("SET extra_float_digits = 99")) == "22023"
        # fewer digits than the shortest exact ones are not printed: refused, not ignored
        assert _sqlstate(lambda: c.execute("SET extra_float_digits = 0")) == "22023"
        assert _sqlstate(lambda: c.execute("SHOW nope")) == "42704"


def test_cancel_stops_spark_job(server: WeirServer) -> None:
    with server.connect() as c:
        def cancel_soon() -> None:
            time.sleep(3)
            c.cancel()

        t = threading.Thread(target=cancel_soon)
        t.start()
        started = time.time()
        # 4 * 10^12 rows: hours on the replica's one core, were it not canceled
        state = _sqlstate(lambda: c.execute(
            "SELECT count(*) FROM generate_series(1, 2000000) AS a(x) "
            "CROSS JOIN generate_series(1, 2000000) AS b(y)"))
        t.join()
        assert state == "57014"
        assert time.time() - started < 60
        # the canceled job stopped on the replica: the next query does not wait behind it (a
        # bound for the suite's load, load average up to 12 on two cores: it took 30 s there)
        started = time.time()
        assert c.execute("SELECT count(*) FROM generate_series(1, 1000)").fetchone() == (1000,)
        assert time.time() - started < 90
        assert c.execute("SELECT 1").fetchone() == (1,)


def test_views_and_catalog(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE TABLE vbase (id int, v text)")
        c.execute("INSERT INTO vbase VALUES (1, 'x'), (2, 'y')")
        c.execute("CREATE VIEW vv AS SELECT id FROM vbase WHERE v = 'y'")
        assert c.execute("SELECT * FROM vv").fetchall() == [(2,)]
        names = [r[0] for r in c.execute("SHOW VIEWS").fetchall()]
        assert "vv" in names
        cols = c.execute("SHOW COLUMNS FROM vbase").fetchall()
        assert [(r[0], r[2]) for r in cols] == [("id", "integer"), ("v", "text")]
        assert _sqlstate(lambda: c.execute("DROP TABLE vbase")) == "2BP01"
        c.execute("DROP TABLE vbase CASCADE")
        assert _sqlstate(lambda: c.execute("SELECT * FROM vv")) == "42P01"
        for rel in ("mz_databases", "mz_schemas", "mz_tables", "mz_views", "mz_columns", "mz_clusters",
                    "mz_cluster_replicas", "mz_objects", "mz_roles"):
            c.execute(f"SELECT * FROM mz_catalog.{rel}").fetchall()


def test_roles_and_membership(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE ROLE alice WITH LOGIN PASSWORD 'secret'")
        c.execute("CREATE ROLE analysts")
        c.execute("GRANT analysts TO alice")
        names = [r[0] for r in c.execute("SELECT name FROM mz_catalog.mz_roles").fetchall()]
        assert {"alice", "analysts", "materialize"} <= set(names)
        c.execute("REVOKE analysts FROM alice")
        c.execute("DROP ROLE analysts")
    with psycopg.connect(f"host=127.0.0.1 port={server.sql_port} user=alice dbname=materialize",
                         autocommit=True) as a:
        assert a.execute("SELECT current_user").fetchone() == ("alice",)
        assert _sqlstate(lambda: a.execute("CREATE ROLE mallory")) == "42501"


def test_any_with_a_list_parameter(server: WeirServer) -> None:
    """psycopg's idiom `x = ANY(%s)` with a Python list: the parameter is an array of x's
    type, on user tables and on system relations (was 42804 'invalid query' for text)."""
    with server.connect() as c:
        c.execute("CREATE TABLE any_t (name text, n int)")
        c.execute("INSERT INTO any_t VALUES ('a', 1), ('b', 2), ('c', 3)")
        assert c.execute("SELECT name FROM any_t WHERE name = ANY(%s) ORDER BY 1", (["a", "c", "z"],)).fetchall() \
            == [("a",), ("c",)]
        assert c.execute("SELECT name FROM any_t WHERE name <> ALL(%s)", (["a", "c"],)).fetchall() == [("b",)]
        assert c.execute("SELECT n FROM any_t WHERE n = ANY(%s)", ([2, 9],)).fetchall() == [(2,)]
        assert c.execute("SELECT name FROM mz_catalog.mz_tables WHERE name = ANY(%s)",
                         (["any_t", "nosuch"],)).fetchall() == [("any_t",)]
        c.execute("DROP TABLE any_t")
