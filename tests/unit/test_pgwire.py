"""pgwire: message encoding units, server lifecycle (stop, metrics, timeouts), and
large/pipelined traffic. Client-driven tests are in test_pgwire_clients.py,
scripted protocol conversations in test_pgwire_raw.py, auth/TLS in test_pgwire_auth.py."""

from __future__ import annotations

import struct
import threading
import time
from collections import Counter

import psycopg
import pytest

from tests.unit.test_pgwire_fake import (
    FakeCoordinator,
    RawClient,
    ServerThread,
    data_row_values,
    error_fields,
)
from weir import types as T
from weir.adapter.api import Column, Notice
from weir.errors import WeirError
from weir.pgwire import messages as m
from weir.pgwire.portals import resolve_formats


def test_error_response_fields_in_pg_order() -> None:
    out = bytearray()
    m.error_response(out, WeirError("42P01", "no such thing", "d", "h", position=7))
    assert out[:1] == b"E"
    assert struct.unpack("!i", out[1:5])[0] == len(out) - 1
    assert bytes(out[5:]) == b"SERROR\0VERROR\0C42P01\0Mno such thing\0Dd\0Hh\0P7\0\0"
    out.clear()
    m.notice_response(out, Notice("01000", "careful", "WARNING"))
    assert bytes(out[5:]) == b"SWARNING\0VWARNING\0C01000\0Mcareful\0\0"


def test_row_description_and_data_row_layout() -> None:
    out = bytearray()
    m.row_description(out, [Column("a", T.INT4, 16384, 1), Column("b", T.TEXT)], [1, 0])
    assert bytes(out) == (
        b"T" + struct.pack("!i", 4 + 2 + 2 * (2 + 18))
        + struct.pack("!h", 2)
        + b"a\0" + struct.pack("!ihihih", 16384, 1, 23, 4, -1, 1)
        + b"b\0" + struct.pack("!ihihih", 0, 0, 25, -1, -1, 0)
    )
    out.clear()
    m.data_row(out, (5, None), [(lambda v, t: str(v).encode(), T.INT4)] * 2)
    assert bytes(out) == b"D" + struct.pack("!ihi", 4 + 2 + 4 + 1 + 4, 2, 1) + b"5" + b"\xff" * 4


def test_resolve_formats_pg_rules() -> None:
    assert resolve_formats([], 3) == [0, 0, 0]
    assert resolve_formats([1], 3) == [1, 1, 1]
    assert resolve_formats([1, 0, 1], 3) == [1, 0, 1]
    with pytest.raises(WeirError) as e:
        resolve_formats([1, 0], 3)
    assert e.value.sqlstate == "08P01"


def test_message_reader_errors() -> None:
    r = m.MessageReader(b"abc")
    with pytest.raises(WeirError, match="invalid string"):
        r.cstr()
    r = m.MessageReader(b"\0\1")
    with pytest.raises(WeirError, match="insufficient data"):
        r.int32()


def test_stop_sends_admin_shutdown_and_closes_sessions() -> None:
    s = ServerThread()
    idle = RawClient(s.port)
    idle.startup()
    busy = RawClient(s.port)
    busy.startup()
    busy.send(busy.query("SELECT pg_sleep(30)"))
    time.sleep(0.2)
    t0 = time.monotonic()
    s.stop()
    assert time.monotonic() - t0 < 3
    for c in (idle, busy):
        msgs = []
        while (msg := c.recv()) is not None:
            msgs.append(msg)
        fatal = [error_fields(b) for t, b in msgs if t == "E" and error_fields(b)["S"] == "FATAL"]
        assert fatal and fatal[0]["C"] == "57P01"
        assert fatal[0]["M"] == "terminating connection due to administrator command"
    assert all(sess.closed for sess in s.coordinator.sessions.values())


def test_metrics_callback_and_terminate_closes_session() -> None:
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def metrics(name: str, amount: float) -> None:
        with lock:
            seen[name] += amount

    s = ServerThread(metrics=metrics)
    try:
        c = RawClient(s.port)
        c.startup()
        c.send(c.query("SELECT 1"), c.query("SELECT 1/0"))
        c.until()
        c.until()
        c.send(c.msg(b"X"))
        assert c.recv() is None
        sess = next(iter(s.coordinator.sessions.values()))
        deadline = time.time() + 5
        while not sess.closed and time.time() < deadline:
            time.sleep(0.01)
        assert sess.closed
        time.sleep(0.05)
        with lock:
            assert seen["connections_opened"] == 1 and seen["connections_closed"] == 1
            assert seen["queries"] == 2 and seen["errors"] == 1 and seen["bytes_sent"] > 0
    finally:
        s.stop()


def test_startup_timeout() -> None:
    s = ServerThread(auth_timeout=0.3)
    try:
        c = RawClient(s.port)
        c.send(struct.pack("!i", 40))  # never completes the startup packet
        t0 = time.monotonic()
        assert c.recv() is None
        assert time.monotonic() - t0 < 3
    finally:
        s.stop()


@pytest.fixture(scope="module")
def srv() -> ServerThread:
    s = ServerThread(FakeCoordinator())
    yield s  # type: ignore[misc]
    s.stop()


def test_large_parameter_and_query(srv: ServerThread) -> None:
    big = "x" * (3 << 20)
    with psycopg.connect(srv.dsn(), autocommit=True) as c:
        assert c.execute("SELECT %s", (big,)).fetchone() == (big,)
        assert c.cursor(binary=True).execute("SELECT %s", (big,)).fetchone() == (big,)


def test_deep_pipeline_with_concurrent_reader(srv: ServerThread) -> None:
    c = RawClient(srv.port, timeout=30)
    c.startup()
    n = 20000
    unit = c.parse("", "SELECT $1::int") + c.bind("", "", (b"7",)) + c.execute()
    payload = unit * n + c.sync()
    sender = threading.Thread(target=c.send, args=(payload,))
    sender.start()
    msgs = c.until()
    sender.join()
    kinds = Counter(t for t, _ in msgs)
    assert kinds["D"] == n and kinds["C"] == n and kinds["Z"] == 1
    assert data_row_values(msgs[2][1]) == [b"7"]
    c.close()


def test_many_concurrent_connections(srv: ServerThread) -> None:
    clients = [RawClient(srv.port) for _ in range(50)]
    for c in clients:
        c.startup()
    for c in clients:
        c.send(c.query("SELECT generate_series(1, 100)"))
    for c in clients:
        assert sum(1 for t, _ in c.until() if t == "D") == 100
        c.close()
