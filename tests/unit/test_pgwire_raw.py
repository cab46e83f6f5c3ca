"""Scripted raw-socket conversations with PgServer: framing errors, pipelining,
portal row limits, skip-until-Sync, SSLRequest, disconnects."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest

from tests.unit.test_pgwire_fake import (
    FakeCoordinator,
    RawClient,
    ServerThread,
    data_row_values,
    error_fields,
)


@pytest.fixture(scope="module")
def srv() -> Iterator[ServerThread]:
    s = ServerThread(FakeCoordinator(), max_message_size=1 << 20)
    yield s
    s.stop()


@pytest.fixture
def client(srv: ServerThread) -> Iterator[RawClient]:
    c = RawClient(srv.port)
    c.startup()
    yield c
    c.close()


def types_of(msgs: list[tuple[str, bytes]]) -> str:
    return "".join(t for t, _ in msgs)


def test_startup_handshake(srv: ServerThread) -> None:
    c = RawClient(srv.port)
    msgs = c.startup(application_name="raw", options="-c x=y")
    kinds = types_of(msgs)
    assert kinds[0] == "R" and kinds.endswith("KZ")
    assert msgs[0][1] == b"\0\0\0\0"  # AuthenticationOk
    statuses = dict(
        tuple(b.rstrip(b"\0").decode().split("\0")) for t, b in msgs if t == "S"
    )
    assert statuses["application_name"] == "raw"
    assert msgs[-1][1] == b"I"
    user, db, params = srv.coordinator.opened[-1]
    assert (user, db) == ("materialize", "materialize")
    assert params == {"application_name": "raw", "options": "-c x=y"}
    c.close()


def test_database_defaults_to_user(srv: ServerThread) -> None:
    c = RawClient(srv.port)
    body = struct.pack("!i", 3 << 16) + b"user\0alice\0\0"
    c.send(struct.pack("!i", len(body) + 4) + body)
    c.until("Z")
    assert srv.coordinator.opened[-1][:2] == ("alice", "alice")
    c.close()


def test_ssl_and_gssenc_request_answered_n(srv: ServerThread) -> None:
    c = RawClient(srv.port)
    c.send(struct.pack("!ii", 8, 80877104))
    assert c.recv_byte() == b"N"
    c.send(struct.pack("!ii", 8, 80877103))
    assert c.recv_byte() == b"N"
    c.startup()
    c.send(c.query("SELECT 1"))
    assert types_of(c.until()) == "TDCZ"
    c.close()


def test_unsupported_protocol_version(srv: ServerThread) -> None:
    c = RawClient(srv.port)
    c.send(struct.pack("!ii", 8, 2 << 16))
    typ, body = c.recv()
    f = error_fields(body)
    assert typ == "E" and f["S"] == "FATAL" and f["C"] == "0A000"
    assert c.recv() is None


def test_minor_version_negotiated(srv: ServerThread) -> None:
    c = RawClient(srv.port)
    body = struct.pack("!i", (3 << 16) | 2) + b"user\0u\0_pq_.foo\0bar\0\0"
    c.send(struct.pack("!i", len(body) + 4) + body)
    msgs = c.until("Z")
    assert msgs[0][0] == "v"
    assert msgs[0][1] == struct.pack("!ii", 0, 1) + b"_pq_.foo\0"
    assert "_pq_.foo" not in srv.coordinator.opened[-1][2]


def test_missing_user_is_fatal(srv: ServerThread) -> None:
    c = RawClient(srv.port)
    body = struct.pack("!i", 3 << 16) + b"database\0x\0\0"
    c.send(struct.pack("!i", len(body) + 4) + body)
    typ, body = c.recv()
    assert typ == "E" and error_fields(body)["C"] == "28000"
    assert c.recv() is None


def test_open_session_error_is_fatal(srv: ServerThread) -> None:
    c = RawClient(srv.port)
    body = struct.pack("!i", 3 << 16) + b"user\0nobody\0\0"
    c.send(struct.pack("!i", len(body) + 4) + body)
    msgs = [c.recv(), c.recv()]
    assert msgs[0][0] == "R"
    f = error_fields(msgs[1][1])
    assert f["S"] == "FATAL" and f["C"] == "28000" and "nobody" in f["M"]
    assert c.recv() is None


@pytest.mark.parametrize(
    "packet",
    [
        struct.pack("!i", 4),  # shorter than a protocol version
        struct.pack("!i", 100000) + b"x" * 8,  # longer than any startup packet
        struct.pack("!ii", 12, 3 << 16) + b"user",  # no terminator
    ],
)
def test_malformed_startup_packet(srv: ServerThread, packet: bytes) -> None:
    c = RawClient(srv.port)
    c.send(packet)
    typ, body = c.recv()
    assert typ == "E" and error_fields(body)["C"] == "08P01"
    assert error_fields(body)["S"] == "FATAL"
    assert c.recv() is None


def test_truncated_startup_then_eof_is_quiet(srv: ServerThread) -> None:
    c = RawClient(srv.port)
    c.send(struct.pack("!ii", 40, 3 << 16))
    c.sock.shutdown(socket.SHUT_WR)
    assert c.recv() is None
    c.close()
    _still_serving(srv)


def _still_serving(srv: ServerThread) -> None:
    c = RawClient(srv.port)
    c.startup()
    c.send(c.query("SELECT 1"))
    assert types_of(c.until()) == "TDCZ"
    c.close()


def test_unknown_message_type_is_fatal(client: RawClient, srv: ServerThread) -> None:
    client.send(client.msg(b"z", b"junk"))
    typ, body = client.recv()
    f = error_fields(body)
    assert typ == "E" and f["C"] == "08P01" and f["S"] == "FATAL"
    assert "invalid frontend message type 122" == f["M"]
    assert client.recv() is None
    _still_serving(srv)


def test_bad_message_length_is_fatal(client: RawClient) -> None:
    client.send(b"Q" + struct.pack("!i", 2))
    typ, body = client.recv()
    assert typ == "E" and error_fields(body)["C"] == "08P01"
    assert client.recv() is None


def test_oversize_message_is_fatal(client: RawClient, srv: ServerThread) -> None:
    client.send(b"Q" + struct.pack("!i", (1 << 20) + 100))
    typ, body = client.recv()
    f = error_fields(body)
    assert typ == "E" and f["C"] == "08P01" and f["S"] == "FATAL"
    assert client.recv() is None
    _still_serving(srv)


def test_malformed_message_body_is_an_error_not_fatal(client: RawClient) -> None:
    # Execute without the max-rows field: ERROR, skip to Sync, connection lives.
    client.send(client.msg(b"E", b"\0"), client.sync())
    msgs = client.until()
    assert types_of(msgs) == "EZ"
    assert error_fields(msgs[0][1])["C"] == "08P01"
    client.send(client.query("SELECT 1"))
    assert types_of(client.until()) == "TDCZ"


def test_simple_query_multi_statement(client: RawClient) -> None:
    client.send(client.query("SELECT 1; SELECT generate_series(1, 3); SET application_name = 'x'"))
    msgs = client.until()
    assert types_of(msgs) == "TDCTDDDCCSZ"
    tags = [b.rstrip(b"\0").decode() for t, b in msgs if t == "C"]
    assert tags == ["SELECT 1", "SELECT 3", "SET"]
    assert msgs[-2][1] == b"application_name\0x\0"


def test_simple_query_error_skips_rest(client: RawClient, srv: ServerThread) -> None:
    client.send(client.query("SELECT 1; SELECT 1/0; SELECT 1"))
    msgs = client.until()
    assert types_of(msgs) == "TDCEZ"
    f = error_fields(msgs[3][1])
    assert f["C"] == "22012" and f["S"] == "ERROR" and f["V"] == "ERROR"
    assert f["M"] == "division by zero"


def test_syntax_error_position(client: RawClient) -> None:
    client.send(client.query("SELEC 1"))
    msgs = client.until()
    f = error_fields(msgs[0][1])
    assert f["C"] == "42601" and f["P"] == "1"


def test_empty_query(client: RawClient) -> None:
    client.send(client.query("  ;  "))
    assert types_of(client.until()) == "IZ"
    client.send(client.parse("", ""), client.bind("", ""), client.describe("P"),
                client.execute(), client.sync())
    assert types_of(client.until()) == "12nIZ"


def test_internal_error_keeps_connection(client: RawClient) -> None:
    client.send(client.query("SELECT boom"))
    msgs = client.until()
    f = error_fields(msgs[0][1])
    # issue 10 part 3: XX000 without the exception's text (the original is in the server log)
    assert f["C"] == "XX000" and "boom" not in f["M"] and "RuntimeError" not in f["M"]
    assert "boom" not in f.get("D", "") and "boom" not in f.get("H", "")
    client.send(client.query("SELECT 1"))
    assert types_of(client.until()) == "TDCZ"


def test_notice(client: RawClient) -> None:
    client.send(client.query("SELECT notice"))
    msgs = client.until()
    assert types_of(msgs) == "NTDCZ"
    f = error_fields(msgs[0][1])
    assert f["S"] == "WARNING" and f["M"] == "this is a notice"


def test_pipelined_extended_x3(client: RawClient) -> None:
    batch = b""
    for i in range(3):
        batch += client.parse(f"s{i}", "SELECT $1::int")
        batch += client.bind(f"p{i}", f"s{i}", (str(i * 10).encode(),))
        batch += client.describe("P", f"p{i}")
        batch += client.execute(f"p{i}")
    client.send(batch + client.sync())
    msgs = client.until()
    assert types_of(msgs) == "12TDC" * 3 + "Z"
    rows = [data_row_values(b)[0] for t, b in msgs if t == "D"]
    assert rows == [b"0", b"10", b"20"]


def test_error_mid_pipeline_skips_to_sync(client: RawClient) -> None:
    client.send(
        client.parse("", "SELECT 1"), client.bind("", ""), client.execute(),
        client.parse("", "SELECT 1/0"), client.bind("", ""), client.execute(),
        client.parse("", "SELECT 1"), client.bind("", ""), client.execute(),
        client.query("SELECT 1"),  # skipped too: still before Sync
        client.sync(),
        client.parse("", "SELECT 1"), client.bind("", ""), client.execute(), client.sync(),
    )
    msgs = client.until()
    assert types_of(msgs) == "12DC12EZ"
    assert error_fields(msgs[6][1])["C"] == "22012"
    assert types_of(client.until()) == "12DCZ"


def test_execute_with_row_limit_suspends(client: RawClient) -> None:
    client.send(
        client.parse("", "SELECT generate_series(1, 5)"), client.bind("", ""),
        client.execute("", 2), client.execute("", 2), client.execute("", 2),
        client.execute("", 2), client.sync(),
    )
    msgs = client.until()
    assert types_of(msgs) == "12DDsDDsDCCZ"
    tags = [b.rstrip(b"\0").decode() for t, b in msgs if t == "C"]
    assert tags == ["SELECT 1", "SELECT 0"]
    rows = [data_row_values(b)[0] for t, b in msgs if t == "D"]
    assert rows == [b"1", b"2", b"3", b"4", b"5"]


def test_row_limit_exactly_consumed_suspends_like_pg(client: RawClient) -> None:
    client.send(
        client.parse("", "SELECT generate_series(1, 2)"), client.bind("", ""),
        client.execute("", 2), client.execute("", 2), client.sync(),
    )
    msgs = client.until()
    assert types_of(msgs) == "12DDsCZ"
    assert msgs[-2][1] == b"SELECT 0\0"


def test_portal_gone_after_sync_outside_transaction(client: RawClient) -> None:
    client.send(
        client.parse("s", "SELECT generate_series(1, 3)"), client.bind("p", "s"),
        client.execute("p", 1), client.sync(), client.execute("p", 1), client.sync(),
    )
    msgs = client.until() + client.until()
    assert types_of(msgs) == "12DsZEZ"
    assert error_fields(msgs[5][1])["C"] == "34000"


def test_portal_survives_sync_inside_transaction(client: RawClient) -> None:
    client.send(client.query("BEGIN"))
    assert client.until()[-1][1] == b"T"
    client.send(
        client.parse("", "SELECT generate_series(1, 3)"), client.bind("cur", ""),
        client.execute("cur", 2), client.sync(), client.execute("cur", 5), client.sync(),
    )
    msgs = client.until() + client.until()
    assert types_of(msgs) == "12DDsZDCZ"
    client.send(client.query("COMMIT"))
    assert client.until()[-1][1] == b"I"


def test_describe_statement_and_portal_formats(client: RawClient) -> None:
    client.send(
        client.parse("st", "SELECT $1::int, $2", (0, 25)), client.describe("S", "st"),
        client.bind("", "st", (b"\0\0\0\x07", b"x"), (1, 0), (1, 0)), client.describe("P"),
        client.execute(), client.sync(),
    )
    msgs = client.until()
    assert types_of(msgs) == "1tT2TDCZ"
    assert msgs[1][1] == struct.pack("!hii", 2, 23, 25)
    # statement RowDescription: text formats; portal RowDescription: bound formats
    assert msgs[2][1].endswith(struct.pack("!h", 0))
    assert msgs[4][1].endswith(struct.pack("!h", 0))
    assert data_row_values(msgs[5][1]) == [b"\0\0\0\x07", b"x"]
    col1_fmt = msgs[4][1][2 + 3 + 18 - 2 : 2 + 3 + 18]
    assert col1_fmt == struct.pack("!h", 1)


def test_describe_no_data(client: RawClient) -> None:
    client.send(client.parse("", "SET application_name = 'y'"), client.describe("S"),
                client.bind("", ""), client.describe("P"), client.execute(), client.sync())
    msgs = client.until()
    assert types_of(msgs) == "1tn2nCSZ"


def test_bind_errors(client: RawClient) -> None:
    client.send(client.bind("", "nope"), client.sync())
    msgs = client.until()
    assert error_fields(msgs[0][1])["C"] == "26000"
    assert error_fields(msgs[0][1])["M"] == 'prepared statement "nope" does not exist'
    client.send(client.parse("", "SELECT $1::int"), client.bind("", "", ()), client.sync())
    msgs = client.until()
    assert types_of(msgs) == "1EZ"
    assert error_fields(msgs[1][1])["C"] == "08P01"
    client.send(client.parse("", "SELECT $1::int"), client.bind("", "", (b"abc",)), client.sync())
    msgs = client.until()
    assert error_fields(msgs[1][1])["C"] == "22P02"
    client.send(client.parse("", "SELECT $1::int"),
                client.bind("", "", (b"ab",), (1,)), client.sync())
    msgs = client.until()
    assert error_fields(msgs[1][1])["C"] == "22P03"
    client.send(client.parse("", "SELECT 1"), client.bind("", "", (), (), (1, 1)), client.sync())
    msgs = client.until()
    assert error_fields(msgs[1][1])["C"] == "08P01"


def test_duplicate_names(client: RawClient) -> None:
    client.send(client.parse("dup", "SELECT 1"), client.parse("dup", "SELECT 1"), client.sync())
    msgs = client.until()
    assert types_of(msgs) == "1EZ"
    assert error_fields(msgs[1][1])["C"] == "42P05"
    client.send(client.bind("cur", "dup"), client.bind("cur", "dup"), client.sync())
    msgs = client.until()
    # outside a transaction block the first portal is gone at Sync; both Binds in one batch
    assert types_of(msgs) == "2EZ"
    assert error_fields(msgs[1][1])["C"] == "42P03"
    # unnamed ones are silently replaced
    client.send(client.parse("", "SELECT 1"), client.parse("", "SELECT generate_series(1, 2)"),
                client.bind("", ""), client.bind("", ""), client.execute(), client.sync())
    assert types_of(client.until()) == "1122DDCZ"


def test_close_statement_and_portal(client: RawClient) -> None:
    client.send(client.parse("c1", "SELECT 1"), client.bind("pc", "c1"),
                client.close_msg("P", "pc"), client.close_msg("S", "c1"),
                client.close_msg("S", "never-existed"), client.execute("pc"), client.sync())
    msgs = client.until()
    assert types_of(msgs) == "12333EZ"
    assert error_fields(msgs[5][1])["C"] == "34000"


def test_command_portal_cannot_run_twice(client: RawClient) -> None:
    client.send(client.parse("", "INSERT INTO t VALUES (1)"), client.bind("", ""),
                client.execute(), client.execute(), client.sync())
    msgs = client.until()
    assert types_of(msgs) == "12CEZ"
    assert msgs[2][1] == b"INSERT 0 1\0"
    assert error_fields(msgs[3][1])["C"] == "55000"


def test_transaction_status_bytes(client: RawClient) -> None:
    client.send(client.query("BEGIN"))
    assert client.until()[-1][1] == b"T"
    client.send(client.query("SELECT 1/0"))
    assert client.until()[-1][1] == b"E"
    client.send(client.query("SELECT 1"))
    msgs = client.until()
    assert error_fields(msgs[0][1])["C"] == "25P02" and msgs[-1][1] == b"E"
    client.send(client.query("COMMIT"))
    msgs = client.until()
    assert msgs[0][1] == b"ROLLBACK\0" and msgs[-1][1] == b"I"


def test_copy_out_simple_and_extended(client: RawClient) -> None:
    client.send(client.query("COPY t TO STDOUT"))
    msgs = client.until()
    assert types_of(msgs) == "HdddcCZ"
    assert msgs[0][1] == b"\0" + struct.pack("!hhh", 2, 0, 0)
    assert [b for t, b in msgs if t == "d"] == [b"1\trow\\t1\n", b"2\t\\N\n", b"3\trow\\t3\n"]
    assert msgs[-2][1] == b"COPY 3\0"
    client.send(client.parse("", "COPY t TO STDOUT"), client.bind("", ""), client.execute(),
                client.sync())
    assert types_of(client.until()) == "12HdddcCZ"


def test_copy_in_rejected_and_stray_copy_messages_ignored(client: RawClient) -> None:
    client.send(client.query("COPY t FROM STDIN"))
    msgs = client.until()
    assert error_fields(msgs[0][1])["C"] == "0A000"
    client.send(client.msg(b"d", b"1\n"), client.msg(b"c"), client.msg(b"f", b"oops\0"),
                client.query("SELECT 1"))
    assert types_of(client.until()) == "TDCZ"


def test_error_mid_stream(client: RawClient, srv: ServerThread) -> None:
    client.send(client.query("SELECT fail_after(3)"))
    msgs = client.until()
    assert types_of(msgs) == "TDDDEZ"
    client.send(client.parse("", "SELECT fail_after(2)"), client.bind("", ""),
                client.execute("", 1), client.execute("", 5), client.execute("", 5),
                client.sync())
    msgs = client.until()
    assert types_of(msgs) == "12DsDEZ"


def test_function_call_rejected(client: RawClient) -> None:
    client.send(client.msg(b"F", struct.pack("!i", 1234) + b"\0\0\0\0\0\0\0\0"))
    msgs = client.until()
    assert types_of(msgs) == "EZ"


def test_flush_delivers_without_sync(client: RawClient) -> None:
    client.send(client.parse("", "SELECT 1"), client.bind("", ""), client.execute(),
                client.msg(b"H"))
    assert types_of(client.until("C")) == "12DC"
    client.send(client.sync())
    assert types_of(client.until()) == "Z"


def test_terminate(client: RawClient) -> None:
    client.send(client.msg(b"X"))
    assert client.recv() is None


def test_cancel_request_raw(srv: ServerThread) -> None:
    c = RawClient(srv.port)
    msgs = c.startup()
    pid, key = struct.unpack("!II", [b for t, b in msgs if t == "K"][0])
    c.send(c.query("SELECT pg_sleep(30)"))
    time.sleep(0.2)
    k = RawClient(srv.port)
    k.send(struct.pack("!iiII", 16, 80877102, pid, key))
    assert k.recv() is None  # closed without a reply
    msgs = c.until()
    f = error_fields(msgs[0][1])
    assert f["C"] == "57014" and f["M"] == "canceling statement due to user request"
    c.send(c.query("SELECT 1"))
    assert types_of(c.until()) == "TDCZ"
    c.close()


def test_cancel_during_row_iteration(srv: ServerThread) -> None:
    c = RawClient(srv.port)
    msgs = c.startup()
    pid, key = struct.unpack("!II", [b for t, b in msgs if t == "K"][0])
    c.send(c.query("SELECT slow_rows(100)"))
    assert types_of([c.recv(), c.recv()]) == "TD"
    time.sleep(0.2)
    k = RawClient(srv.port)
    k.send(struct.pack("!iiII", 16, 80877102, pid, key))
    msgs = c.until()
    errors = [error_fields(b) for t, b in msgs if t == "E"]
    assert errors and errors[0]["C"] == "57014"
    c.send(c.query("SELECT 1"))
    assert types_of(c.until()) == "TDCZ"
    c.close()


def test_client_vanishes_mid_stream(srv: ServerThread) -> None:
    other = RawClient(srv.port)
    other.startup()
    c = RawClient(srv.port)
    c.startup()
    c.send(c.query("SELECT generate_series(1, 500000)"))
    assert c.recv()[0] == "T"
    n_sessions = len(srv.coordinator.sessions)
    sess = list(srv.coordinator.sessions.values())[n_sessions - 1]
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()  # RST mid-stream
    deadline = time.time() + 5
    while not sess.closed and time.time() < deadline:
        time.sleep(0.02)
    assert sess.closed
    other.send(other.query("SELECT generate_series(1, 10)"))
    assert types_of(other.until()) == "T" + "D" * 10 + "CZ"
    other.close()


def test_client_vanishes_mid_query(srv: ServerThread) -> None:
    c = RawClient(srv.port)
    c.startup()
    sess = srv.coordinator.sessions[max(srv.coordinator.sessions)]
    c.send(c.query("SELECT pg_sleep(30)"))
    time.sleep(0.1)
    c.close()
    deadline = time.time() + 5
    while not sess.closed and time.time() < deadline:
        time.sleep(0.02)
    assert sess.closed
    _still_serving(srv)


def test_describe_copy_portal_after_execute_is_no_data(client: RawClient) -> None:
    client.send(client.query("BEGIN"))
    client.until()
    client.send(client.parse("", "COPY t TO STDOUT"), client.bind("cp", ""),
                client.execute("cp"), client.describe("P", "cp"), client.sync())
    assert types_of(client.until()) == "12HdddcCnZ"
    client.send(client.query("COMMIT"))
    client.until()


def test_startup_notice_before_ready(srv: ServerThread) -> None:
    c = RawClient(srv.port)
    msgs = c.startup(database="nodb")
    assert types_of(msgs)[-3:] == "KNZ"
    assert error_fields(msgs[-2][1])["M"] == 'session database "nodb" does not exist'
    c.close()
