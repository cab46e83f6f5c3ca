"""End to end through pg8000 (pure Python; text-format parameters with server-inferred
types; simple protocol for parameterless run(), unnamed/named extended otherwise)
against a real weir server with a real Spark replica."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Callable
from typing import Any

import pg8000.dbapi
import pg8000.native
import pytest

from tests.integration.server import WeirServer

D = decimal.Decimal


def native(server: WeirServer) -> pg8000.native.Connection:
    return pg8000.native.Connection("materialize", host="127.0.0.1", port=server.sql_port,
                                    database="materialize", timeout=120)


def dbapi(server: WeirServer) -> pg8000.dbapi.Connection:
    return pg8000.dbapi.connect(user="materialize", host="127.0.0.1", port=server.sql_port,
                                database="materialize", timeout=120)


def _sqlstate(fn: Callable[[], Any]) -> str:
    with pytest.raises(pg8000.native.DatabaseError) as e:
        fn()
    return e.value.args[0]["C"]


def test_simple_and_extended(server: WeirServer) -> None:
    con = native(server)
    try:
        # no parameters: the simple query protocol
        assert con.run("SELECT 1") == [[1]]
        assert con.columns[0]["name"] == "?column?"
        con.run("CREATE TABLE p8_t (id int, name text, score double precision, ok boolean)")
        con.run("INSERT INTO p8_t VALUES (1, 'a', 1.5, true), (2, 'b', NULL, false)")
        assert con.row_count == 2
        # parameters: Parse (types left to the server), Describe, Bind (text), Execute
        con.run("INSERT INTO p8_t VALUES (:id, :name, :score, :ok)", id=3, name="c", score=-0.5, ok=True)
        con.run("UPDATE p8_t SET score = :s WHERE id = :id", s=2.5, id=2)
        assert con.row_count == 1
        rows = con.run("SELECT id, name, score, ok FROM p8_t WHERE ok = :ok ORDER BY id", ok=True)
        assert rows == [[1, "a", 1.5, True], [3, "c", -0.5, True]]
        assert [c["name"] for c in con.columns] == ["id", "name", "score", "ok"]
        assert con.run("SELECT name FROM p8_t WHERE id = :id", id=2) == [["b"]]
        assert con.run("SELECT name FROM p8_t WHERE id = :id", id=99) == []
        # named prepared statement, executed several times
        ps = con.prepare("SELECT name, score FROM p8_t WHERE id = :id")
        try:
            assert ps.run(id=1) == [["a", 1.5]]
            assert ps.run(id=2) == [["b", 2.5]]
            assert ps.run(id=3) == [["c", -0.5]]
        finally:
            ps.close()
        con.run("DELETE FROM p8_t WHERE id = :id", id=1)
        assert con.run("SELECT count(*) FROM p8_t") == [[2]]
        # multi-statement simple query: pg8000 collects the rows of every result
        assert con.run("SELECT 1; SELECT 2") == [[1], [2]]
    finally:
        con.close()


def test_types_round_trip(server: WeirServer) -> None:
    con = native(server)
    try:
        con.run("""CREATE TABLE p8_typed (b boolean, s smallint, i integer, l bigint, r real,
            d double precision, n numeric(10,2), t text, v varchar, dd date, ts timestamp,
            tz timestamptz, iv interval, u uuid, by bytea, j jsonb, a text[])""")
        u = uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
        row = [True, 7, 42, 2**40, 1.5, 2.25, D("12.34"), "hé 'quoted'", "v", dt.date(2024, 2, 29),
               dt.datetime(2024, 1, 2, 3, 4, 5, 600000), dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
               dt.timedelta(days=1, seconds=7), u, b"\x00\x01\xff", {"a": [1, None]}, ["x", None, "y z"]]
        names = ["b", "s", "i", "l", "r", "d", "n", "t", "v", "dd", "ts", "tz", "iv", "u", "by", "j", "a"]
        con.run("INSERT INTO p8_typed VALUES (" + ", ".join(f":{k}" for k in names) + ")",
                **dict(zip(names, row, strict=True)))
        con.run("INSERT INTO p8_typed (b) VALUES (NULL)")
        for sql in ("SELECT * FROM p8_typed WHERE b ORDER BY s",  # simple protocol
                    "SELECT * FROM p8_typed WHERE b = :b ORDER BY s"):  # extended
            got = con.run(sql, b=True) if ":b" in sql else con.run(sql)
            assert len(got) == 1
            assert got[0] == row, sql
        assert con.run("SELECT count(*) FROM p8_typed WHERE b IS NULL") == [[1]]
        # literals typed on the server, decoded by pg8000 from text
        assert con.run("SELECT 1::smallint, 2::bigint, 1.5::real, 'x'::varchar, "
                       "DATE '2024-01-31', '1 day 2 hours'::interval, '{1,2}'::int[]") == [
            [1, 2, 1.5, "x", dt.date(2024, 1, 31), dt.timedelta(days=1, hours=2), [1, 2]]]
    finally:
        con.close()


def test_errors(server: WeirServer) -> None:
    con = native(server)
    try:
        con.run("CREATE TABLE p8_err (id int NOT NULL)")
        assert _sqlstate(lambda: con.run("SELECT * FROM p8_nope")) == "42P01"
        assert _sqlstate(lambda: con.run("SELECT * FROM p8_nope WHERE id = :x", x=1)) == "42P01"
        assert _sqlstate(lambda: con.run("SELEC 1")) == "42601"
        assert _sqlstate(lambda: con.run("SELECT 1/0")) == "22012"
        assert _sqlstate(lambda: con.run("SELECT 1/:z", z=0)) == "22012"
        assert _sqlstate(lambda: con.run("INSERT INTO p8_err VALUES (:v)", v="abc")) == "22P02"
        assert _sqlstate(lambda: con.run("INSERT INTO p8_err VALUES (NULL)")) == "23502"
        with pytest.raises(pg8000.native.DatabaseError) as e:
            con.run("SELECT 1/0")
        fields = e.value.args[0]
        assert fields["S"] == "ERROR" and fields["M"] == "division by zero"
        # the connection is fine afterwards, in both protocols
        assert con.run("SELECT 1") == [[1]]
        assert con.run("SELECT :x::int + 1", x=1) == [[2]]
        assert con.run("SELECT count(*) FROM p8_err") == [[0]]
    finally:
        con.close()


def test_transactions(server: WeirServer) -> None:
    setup = native(server)
    setup.run("CREATE TABLE p8_tx (x int)")
    setup.close()
    # the DB-API connection starts a transaction ("begin transaction") before each statement
    con = dbapi(server)
    try:
        cur = con.cursor()
        cur.execute("INSERT INTO p8_tx VALUES (%s)", (1,))
        cur.execute("INSERT INTO p8_tx VALUES (%s), (%s)", (2, 3))
        con.rollback()
        cur.execute("SELECT count(*) FROM p8_tx")
        assert cur.fetchone() == [0]
        con.commit()
        cur.execute("INSERT INTO p8_tx VALUES (%s)", (4,))
        cur.executemany("INSERT INTO p8_tx VALUES (%s)", [(5,), (6,)])
        con.commit()
        cur.execute("SELECT x FROM p8_tx ORDER BY x")
        assert [r[0] for r in cur.fetchall()] == [4, 5, 6]
        assert [d[0] for d in cur.description] == ["x"]
        con.commit()
        # an error fails the transaction block until rollback
        with pytest.raises(pg8000.dbapi.DatabaseError) as e:
            cur.execute("SELECT 1/0")
        assert e.value.args[0]["C"] == "22012"
        with pytest.raises(pg8000.dbapi.DatabaseError) as e:
            cur.execute("SELECT 1")
        assert e.value.args[0]["C"] == "25P02"
        con.rollback()
        cur.execute("SELECT count(*) FROM p8_tx")
        assert cur.fetchone() == [3]
        con.commit()
        # autocommit: each statement on its own
        con.autocommit = True
        cur.execute("INSERT INTO p8_tx VALUES (7)")
        cur.execute("SELECT count(*) FROM p8_tx")
        assert cur.fetchone() == [4]
    finally:
        con.close()
