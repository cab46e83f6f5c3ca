"""Scripted wire conversations, byte for byte over raw sockets, sent to BOTH a real
PostgreSQL 15 and a real weir server: the sequence of reply message types, the
SQLSTATEs of errors, command tags and transaction status bytes must match for
protocol corner cases where weir should behave like PostgreSQL."""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from tests.integration.server import WeirServer
from tests.pg_server import PgServer, pg_server  # noqa: F401  (session-scoped fixture)
from tests.unit.test_pgwire_fake import RawClient, data_row_values, error_fields

TABLE_DDL = "CREATE TABLE wc_t (id int, name text)"
TABLE_ROWS = "INSERT INTO wc_t VALUES (0, 'zero'), (1, 'one'), (2, NULL), (3, 'three'), (4, 'four')"

# A transcript entry: (message type, detail) with detail the SQLSTATE of an
# ErrorResponse, the tag of a CommandComplete, the status of ReadyForQuery, the
# values of a DataRow, ... ; ParameterStatus and NoticeResponse are left out
# (the two servers report different settings and notices).
Entry = tuple[str, object]


def _detail(typ: str, body: bytes) -> object:
    if typ == "E":
        return error_fields(body)["C"]
    if typ in "CZ":
        return body.rstrip(b"\0").decode()
    if typ == "D":
        return tuple(data_row_values(body))
    if typ == "t":
        (n,) = struct.unpack_from("!h", body)
        return struct.unpack_from(f"!{n}i", body, 2)
    if typ == "T":
        return _row_description(body)
    if typ == "d":
        return body
    return None


def _row_description(body: bytes) -> tuple[tuple[str, int, int], ...]:
    """(name, type oid, format) per column."""
    (n,) = struct.unpack_from("!h", body)
    pos, cols = 2, []
    for _ in range(n):
        end = body.index(b"\0", pos)
        name = body[pos:end].decode()
        pos = end + 1
        _table, _attnum, oid, _size, _mod, fmt = struct.unpack_from("!ihihih", body, pos)
        pos += 18
        cols.append((name, oid, fmt))
    return tuple(cols)


@dataclass
class Peer:
    name: str
    port: int
    user: str
    database: str

    def connect(self) -> RawClient:
        c = RawClient(self.port, timeout=120)
        msgs = c.startup(user=self.user, database=self.database)
        assert msgs[-1] == ("Z", b"I"), (self.name, msgs)
        return c


def transcript(c: RawClient, until_ready: int = 1) -> list[Entry]:
    """Messages up to the `until_ready`-th ReadyForQuery."""
    out: list[Entry] = []
    for _ in range(until_ready):
        for typ, body in c.until("Z"):
            if typ in "NS":
                continue
            out.append((typ, _detail(typ, body)))
    return out


@pytest.fixture(scope="module")
def peers(server: WeirServer, pg_server: PgServer) -> Iterator[list[Peer]]:  # noqa: F811
    pg_server.create_database("weir_wire_compare")
    pg = Peer("postgres", pg_server.port, pg_server.user, "weir_wire_compare")
    weir = Peer("weir", server.sql_port, "materialize", "materialize")
    for peer in (pg, weir):
        c = peer.connect()
        for sql in (TABLE_DDL, TABLE_ROWS):
            c.send(c.query(sql))
            msgs = c.until("Z")
            assert all(t != "E" for t, _ in msgs), (peer.name, sql, msgs)
        c.close()
    yield [pg, weir]


Script = Callable[[RawClient], list[Entry]]


def _drop_row_description_before_error(entries: list[Entry]) -> list[Entry]:
    """For a query that fails while it runs, PostgreSQL has sent its RowDescription
    already (the portal started); weir reports the error first. Clients do not care:
    compare without such a RowDescription."""
    return [e for i, e in enumerate(entries)
            if not (e[0] == "T" and i + 1 < len(entries) and entries[i + 1][0] == "E")]


def compare(peers: list[Peer], script: Script, *, lenient_row_description: bool = False) -> list[Entry]:
    """Run `script` on a fresh connection to each peer; the transcripts must be equal."""
    got = {}
    for peer in peers:
        c = peer.connect()
        try:
            got[peer.name] = script(c)
        finally:
            c.close()
        if lenient_row_description:
            got[peer.name] = _drop_row_description_before_error(got[peer.name])
    assert got["weir"] == got["postgres"], "\n".join(f"{k}: {v}" for k, v in got.items())
    return got["postgres"]


def types_of(entries: list[Entry]) -> str:
    return "".join(t for t, _ in entries)


# ---- simple query ----------------------------------------------------------------------


def test_simple_query_two_statements(peers: list[Peer]) -> None:
    def script(c: RawClient) -> list[Entry]:
        c.send(c.query("SELECT 1; SELECT name FROM wc_t WHERE id = 1"))
        return transcript(c)

    got = compare(peers, script)
    assert types_of(got) == "TDCTDCZ"


def test_simple_query_tags_and_zero_rows(peers: list[Peer]) -> None:
    def script(c: RawClient) -> list[Entry]:
        c.send(c.query("SELECT id FROM wc_t WHERE id < 0"))
        out = transcript(c)
        c.send(c.query("SELECT id, name FROM wc_t ORDER BY id"))
        return out + transcript(c)

    got = compare(peers, script)
    assert types_of(got) == "TCZ" + "T" + "D" * 5 + "CZ"
    assert got[1] == ("C", "SELECT 0")


def test_empty_query(peers: list[Peer]) -> None:
    def script(c: RawClient) -> list[Entry]:
        c.send(c.query(""))
        out = transcript(c)
        c.send(c.query("  ;  "))
        out += transcript(c)
        c.send(c.parse("", ""), c.bind("", ""), c.describe("P"), c.execute(), c.sync())
        return out + transcript(c)

    got = compare(peers, script)
    assert types_of(got) == "IZIZ12nIZ"


def test_syntax_error_mid_multi_statement(peers: list[Peer]) -> None:
    """PostgreSQL parses the whole string first: a syntax error anywhere runs nothing."""

    def script(c: RawClient) -> list[Entry]:
        c.send(c.query("SELECT 1; SELEC 2; SELECT 3"))
        out = transcript(c)
        c.send(c.query("SELECT 1"))
        return out + transcript(c)

    got = compare(peers, script)
    assert got[:2] == [("E", "42601"), ("Z", "I")]


def test_runtime_error_mid_multi_statement_skips_rest(peers: list[Peer]) -> None:
    def script(c: RawClient) -> list[Entry]:
        c.send(c.query("SELECT 1; SELECT 10 / id FROM wc_t WHERE id = 0; SELECT 3"))
        return transcript(c)

    got = compare(peers, script, lenient_row_description=True)
    assert types_of(got) == "TDCEZ"
    assert got[-2] == ("E", "22012")


def test_ssl_request_answered_n(peers: list[Peer]) -> None:
    for peer in peers:
        s = socket.create_connection(("127.0.0.1", peer.port), timeout=30)
        try:
            s.sendall(struct.pack("!ii", 8, 80877103))
            assert s.recv(1) == b"N", peer.name
        finally:
            s.close()


# ---- extended query --------------------------------------------------------------------


def test_pipeline_three_statements(peers: list[Peer]) -> None:
    def script(c: RawClient) -> list[Entry]:
        batch = b""
        for i in range(3):
            batch += c.parse(f"s{i}", "SELECT $1::int AS v, name FROM wc_t WHERE id = $2", (0, 23))
            batch += c.bind(f"p{i}", f"s{i}", (str(i * 10).encode(), str(i + 1).encode()))
            batch += c.describe("P", f"p{i}")
            batch += c.execute(f"p{i}")
        c.send(batch + c.sync())
        return transcript(c)

    got = compare(peers, script)
    assert types_of(got) == "12TDC" * 3 + "Z"
    assert [d for t, d in got if t == "D"] == [(b"0", b"one"), (b"10", None), (b"20", b"three")]


def test_error_in_pipeline_skips_to_sync(peers: list[Peer]) -> None:
    def script(c: RawClient) -> list[Entry]:
        c.send(
            c.parse("", "SELECT 1"), c.bind("", ""), c.execute(),
            c.parse("", "SELECT 10 / id FROM wc_t WHERE id = 0"), c.bind("", ""), c.execute(),
            c.parse("", "SELECT 2"), c.bind("", ""), c.execute(),
            c.query("SELECT 3"),  # skipped too: still before Sync
            c.sync(),
            c.parse("", "SELECT 4"), c.bind("", ""), c.execute(), c.sync(),
        )
        return transcript(c, 2)

    got = compare(peers, script)
    assert types_of(got) == "12DC12EZ12DCZ"
    assert ("E", "22012") in got


def test_parse_error_delivered_on_flush(peers: list[Peer]) -> None:
    """Parse/Describe/Flush with an error: the ErrorResponse comes without a Sync
    (asyncpg prepares this way and waits for it)."""

    def script(c: RawClient) -> list[Entry]:
        c.send(c.parse("bad", "SELECT * FROM wc_nope"), c.describe("S", "bad"), c.msg(b"H"))
        typ, body = c.recv()  # type: ignore[misc]
        out: list[Entry] = [(typ, _detail(typ, body))]
        c.send(c.sync())
        return out + transcript(c)

    got = compare(peers, script)
    assert got == [("E", "42P01"), ("Z", "I")]


def test_execute_row_limit_suspends_and_resumes(peers: list[Peer]) -> None:
    def script(c: RawClient) -> list[Entry]:
        c.send(c.parse("", "SELECT id FROM wc_t ORDER BY id"), c.bind("", ""),
               c.execute("", 2), c.execute("", 2), c.execute("", 0), c.sync())
        out = transcript(c)
        # exactly consumed: PortalSuspended, then an empty CommandComplete
        c.send(c.parse("", "SELECT id FROM wc_t WHERE id < 2 ORDER BY id"), c.bind("", ""),
               c.execute("", 2), c.execute("", 2), c.sync())
        return out + transcript(c)

    got = compare(peers, script)
    assert types_of(got) == "12DDsDDsDCZ" + "12DDsCZ"
    assert [d for t, d in got if t == "C"] == ["SELECT 1", "SELECT 0"]


def test_portal_survives_sync_only_in_transaction(peers: list[Peer]) -> None:
    def script(c: RawClient) -> list[Entry]:
        c.send(c.parse("s", "SELECT id FROM wc_t ORDER BY id"), c.bind("p", "s"),
               c.execute("p", 1), c.sync(), c.execute("p", 1), c.sync())
        out = transcript(c, 2)  # outside a transaction the portal is gone at Sync: 34000
        c.send(c.query("BEGIN"))
        out += transcript(c)
        c.send(c.bind("cur", "s"), c.execute("cur", 3), c.sync(), c.execute("cur", 10), c.sync())
        out += transcript(c, 2)
        c.send(c.query("COMMIT"))
        return out + transcript(c)

    got = compare(peers, script)
    assert types_of(got) == "12DsZEZ" + "CZ" + "2DDDsZDDCZ" + "CZ"
    assert got[5] == ("E", "34000")
    assert [d for t, d in got if t == "Z"] == ["I", "I", "T", "T", "T", "I"]


def test_describe_statement_with_params(peers: list[Peer]) -> None:
    def script(c: RawClient) -> list[Entry]:
        c.send(c.parse("st", "SELECT id, name FROM wc_t WHERE id = $1 AND name = $2"),
               c.describe("S", "st"), c.sync())
        out = transcript(c)
        # portal description carries the bound result formats
        c.send(c.bind("", "st", (b"\0\0\0\x01", b"one"), (1, 0), (1, 0)), c.describe("P"),
               c.execute(), c.sync())
        out += transcript(c)
        # no-data statement
        c.send(c.parse("", "INSERT INTO wc_t SELECT * FROM wc_t WHERE false"), c.describe("S"), c.sync())
        return out + transcript(c)

    got = compare(peers, script)
    assert types_of(got) == "1tTZ" + "2TDCZ" + "1tnZ"
    assert got[1] == ("t", (23, 25))
    assert got[2] == ("T", (("id", 23, 0), ("name", 25, 0)))
    assert got[5] == ("T", (("id", 23, 1), ("name", 25, 0)))
    assert got[6] == ("D", (b"\0\0\0\x01", b"one"))


def test_close_statement_and_portal(peers: list[Peer]) -> None:
    def script(c: RawClient) -> list[Entry]:
        c.send(c.parse("c1", "SELECT 1"), c.bind("pc", "c1"), c.close_msg("P", "pc"),
               c.close_msg("S", "c1"), c.close_msg("S", "never-existed"), c.close_msg("P", "nope"),
               c.execute("pc"), c.sync())
        out = transcript(c)
        c.send(c.bind("", "c1"), c.sync())  # the statement is gone too
        return out + transcript(c)

    got = compare(peers, script)
    assert types_of(got) == "123333EZ" + "EZ"
    assert [d for t, d in got if t == "E"] == ["34000", "26000"]


def test_protocol_errors(peers: list[Peer]) -> None:
    def script(c: RawClient) -> list[Entry]:
        c.send(c.parse("", "SELECT $1::int"), c.bind("", "", ()), c.sync())  # too few params
        out = transcript(c)
        c.send(c.parse("", "SELECT $1::int"), c.bind("", "", (b"abc",)), c.sync())  # bad text
        out += transcript(c)
        c.send(c.parse("dup", "SELECT 1"), c.parse("dup", "SELECT 1"), c.sync())
        out += transcript(c)
        c.send(c.execute("nope"), c.sync())
        return out + transcript(c)

    got = compare(peers, script)
    assert [d for t, d in got if t == "E"] == ["08P01", "22P02", "42P05", "34000"]


# ---- transactions ----------------------------------------------------------------------


def test_transaction_status_bytes(peers: list[Peer]) -> None:
    def script(c: RawClient) -> list[Entry]:
        out: list[Entry] = []
        for sql in ("BEGIN", "SELECT 1", "SELECT 10 / id FROM wc_t WHERE id = 0", "SELECT 1", "ROLLBACK",
                    "SELECT 1", "BEGIN", "SELECT 1/0", "COMMIT"):
            c.send(c.query(sql))
            out += transcript(c)
        return out

    got = compare(peers, script, lenient_row_description=True)
    assert [d for t, d in got if t == "Z"] == ["T", "T", "E", "E", "I", "I", "T", "E", "I"]
    assert [d for t, d in got if t == "E"] == ["22012", "25P02", "22012"]
    assert got[-2] == ("C", "ROLLBACK")  # COMMIT of a failed transaction rolls back


def test_transaction_status_extended(peers: list[Peer]) -> None:
    def script(c: RawClient) -> list[Entry]:
        c.send(c.parse("s1", "SELECT id FROM wc_t WHERE id = 1"), c.sync())
        out = transcript(c)
        c.send(c.parse("", "BEGIN"), c.bind("", ""), c.execute(), c.sync())
        out += transcript(c)
        c.send(c.parse("", "SELECT 10 / id FROM wc_t WHERE id = 0"), c.bind("", ""), c.execute(), c.sync())
        out += transcript(c)
        # in a failed block, Parse and Bind of anything but COMMIT/ROLLBACK fail at once
        c.send(c.parse("", "SELECT * FROM wc_nope"), c.sync())
        out += transcript(c)
        c.send(c.bind("", "s1"), c.execute(), c.sync())
        out += transcript(c)
        c.send(c.parse("", ""), c.sync())  # an empty query parses ...
        out += transcript(c)
        c.send(c.bind("", ""), c.sync())  # ... but does not bind
        out += transcript(c)
        c.send(c.parse("", "ROLLBACK"), c.bind("", ""), c.execute(), c.sync())
        out += transcript(c)
        c.send(c.bind("", "s1"), c.execute(), c.sync())
        return out + transcript(c)

    got = compare(peers, script)
    assert [d for t, d in got if t == "Z"] == ["I", "T", "E", "E", "E", "E", "E", "I", "I"]
    assert [d for t, d in got if t == "E"] == ["22012", "25P02", "25P02", "25P02"]
    assert got[-3:] == [("D", (b"1",)), ("C", "SELECT 1"), ("Z", "I")]


# ---- COPY ------------------------------------------------------------------------------


def test_copy_to_stdout(peers: list[Peer]) -> None:
    def script(c: RawClient) -> list[Entry]:
        c.send(c.query("COPY (SELECT id, name FROM wc_t ORDER BY id) TO STDOUT"))
        out = transcript(c)
        c.send(c.parse("", "COPY (SELECT id, name FROM wc_t WHERE id > 2 ORDER BY id) TO STDOUT"),
               c.bind("", ""), c.execute(), c.sync())
        return out + transcript(c)

    got = compare(peers, script)
    assert types_of(got) == "H" + "d" * 5 + "cCZ" + "12H" + "dd" + "cCZ"
    assert [d for t, d in got if t == "d"][:3] == [b"0\tzero\n", b"1\tone\n", b"2\t\\N\n"]


# ---- value encodings -------------------------------------------------------------------

# Run on a replica (the array and the typed literals take the query to Spark) ...
SPARK_SELECT = (
    "SELECT 1::int2 AS a, -2::int4 AS b, 3000000000::int8 AS c, 1.5::float8 AS d, 0.1::float4 AS e, "
    "'x y'::text AS f, true AS g, 12.5::numeric(10,2) AS h, DATE '2024-02-29' AS j, "
    "TIMESTAMP '1999-01-02 03:04:05.6' AS k, '\\x00ff'::bytea AS l, '1 day 02:00:03'::interval AS m, "
    "ARRAY['a', NULL, 'b c'] AS p, NULL::text AS q, name AS r, id AS s FROM wc_t WHERE id = 1"
)
# ... and on the coordinator (a constant query).
CONSTANT_SELECT = (
    "SELECT -0.000123::numeric AS i, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS n, "
    "'{\"a\": [1, null]}'::jsonb AS o, 2::int2 * 3 AS t, 7 / 2 AS u, 'é' || 1 AS v"
)


@pytest.mark.parametrize("fmt", [0, 1], ids=["text", "binary"])
@pytest.mark.parametrize("sql", [SPARK_SELECT, CONSTANT_SELECT], ids=["spark", "constant"])
def test_typed_values_encode_alike(peers: list[Peer], sql: str, fmt: int) -> None:
    def script(c: RawClient) -> list[Entry]:
        c.send(c.parse("", sql), c.bind("", "", (), (), (fmt,)), c.describe("P"), c.execute(), c.sync())
        return transcript(c)

    got = compare(peers, script)
    assert types_of(got) == "12TDCZ"
    assert all(f == fmt for _, _, f in got[2][1])  # type: ignore[misc]


def test_uuid_and_jsonb_types_from_spark(peers: list[Peer]) -> None:
    def script(c: RawClient) -> list[Entry]:
        c.send(c.parse("", "SELECT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS n, "
                           "'{}'::jsonb AS o FROM wc_t WHERE id = 1"), c.describe("S"), c.sync())
        return transcript(c)

    compare(peers, script)
