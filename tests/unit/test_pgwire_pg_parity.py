"""pgwire behaviours that match PostgreSQL's (checked against a real PostgreSQL in
tests/integration/test_wire_compare.py), here against the fake adapter so they run
without Spark: errors are flushed at once, a syntax error anywhere in a Query runs
none of it, and a failed transaction block refuses Parse/Bind before analysis."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.unit.test_pgwire_fake import FakeCoordinator, RawClient, ServerThread, error_fields


@pytest.fixture(scope="module")
def srv() -> Iterator[ServerThread]:
    s = ServerThread(FakeCoordinator())
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


def test_error_reaches_client_before_sync(client: RawClient) -> None:
    # asyncpg prepares with Parse/Describe/Flush and waits for the reply before Sync
    client.send(client.parse("s", "SELECT 1/0"), client.bind("", "s"), client.execute(),
                client.msg(b"H"))
    msgs = [client.recv() for _ in range(3)]
    assert types_of(msgs) == "12E"  # type: ignore[arg-type]
    assert error_fields(msgs[2][1])["C"] == "22012"  # type: ignore[index]
    client.send(client.sync())
    assert types_of(client.until()) == "Z"


def test_syntax_error_anywhere_runs_nothing(client: RawClient) -> None:
    client.send(client.query("SELECT 1; SELEC 2; SELECT 1"))
    msgs = client.until()
    assert types_of(msgs) == "EZ"
    assert error_fields(msgs[0][1])["C"] == "42601"
    client.send(client.query("SELECT 1; SELECT 1"))
    assert types_of(client.until()) == "TDCTDCZ"


def test_failed_block_refuses_parse_and_bind(client: RawClient) -> None:
    client.send(client.parse("ok", "SELECT 1"), client.sync())
    assert types_of(client.until()) == "1Z"
    client.send(client.query("BEGIN"))
    client.until()
    client.send(client.query("SELECT 1/0"))
    assert client.until()[-1] == ("Z", b"E")
    client.send(client.parse("", "SELECT 1"), client.sync())
    msgs = client.until()
    assert types_of(msgs) == "EZ" and error_fields(msgs[0][1])["C"] == "25P02"
    client.send(client.bind("", "ok"), client.sync())
    msgs = client.until()
    assert types_of(msgs) == "EZ" and error_fields(msgs[0][1])["C"] == "25P02"
    client.send(client.parse("", ""), client.sync())
    assert types_of(client.until()) == "1Z"
    client.send(client.parse("", "ROLLBACK"), client.bind("", ""), client.execute(), client.sync())
    msgs = client.until()
    assert types_of(msgs) == "12CZ" and msgs[-1] == ("Z", b"I")
    client.send(client.bind("", "ok"), client.execute(), client.sync())
    assert types_of(client.until()) == "2DCZ"
