"""Authentication (cleartext password, SCRAM-SHA-256) and TLS, with real clients."""

from __future__ import annotations

import asyncio
import base64
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pg8000.native
import psycopg
import pytest
from scramp import ScramMechanism

from tests.unit.test_pgwire_fake import FakeCoordinator, RawClient, ServerThread, error_fields
from weir.pgwire.startup import make_scram_verifier, parse_scram_verifier

needs_psql = pytest.mark.skipif(shutil.which("psql") is None, reason="psql not installed")


def scramp_verifier(password: str) -> str:
    """PostgreSQL/RFC 5803 form of a verifier computed by scramp."""
    salt, stored, server, iterations = ScramMechanism("SCRAM-SHA-256").make_auth_info(
        password, iteration_count=4096
    )
    b64 = base64.b64encode
    return (
        f"SCRAM-SHA-256${iterations}:{b64(salt).decode()}"
        f"${b64(stored).decode()}:{b64(server).decode()}"
    )


def test_verifier_round_trip() -> None:
    v = make_scram_verifier("pw", 4096, b"0123456789abcdef")
    it, salt, stored, server = parse_scram_verifier(v)  # type: ignore[misc]
    assert (it, salt) == (4096, b"0123456789abcdef")
    m = ScramMechanism("SCRAM-SHA-256")
    assert m.make_auth_info("pw", 4096, salt) == (salt, stored, server, 4096)
    assert parse_scram_verifier("md5abc") is None
    assert parse_scram_verifier("SCRAM-SHA-256$x:y$z:w") is None


@pytest.fixture(scope="module")
def scram_srv() -> Iterator[ServerThread]:
    coord = FakeCoordinator(
        auth="scram-sha-256",
        verifiers={"materialize": scramp_verifier("s3cret"), "bob": make_scram_verifier("b0b")},
    )
    s = ServerThread(coord)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def password_srv() -> Iterator[ServerThread]:
    s = ServerThread(FakeCoordinator(auth="password", passwords={"materialize": "pw1"}))
    yield s
    s.stop()


def test_scram_psycopg_ok(scram_srv: ServerThread) -> None:
    with psycopg.connect(scram_srv.dsn(password="s3cret"), autocommit=True) as c:
        assert c.execute("SELECT 1").fetchone() == (1,)
    with psycopg.connect(scram_srv.dsn(user="bob", password="b0b"), autocommit=True) as c:
        assert c.execute("SELECT 1").fetchone() == (1,)


@pytest.mark.parametrize("user", ["materialize", "ghost"])
def test_scram_psycopg_wrong_password(scram_srv: ServerThread, user: str) -> None:
    with pytest.raises(psycopg.OperationalError) as e:
        psycopg.connect(scram_srv.dsn(user=user, password="nope"))
    assert f'password authentication failed for user "{user}"' in str(e.value)


def test_scram_asyncpg(scram_srv: ServerThread) -> None:
    async def main() -> None:
        c = await asyncpg.connect(
            host="127.0.0.1", port=scram_srv.port, user="materialize", password="s3cret",
            database="materialize", ssl=False,
        )
        assert await c.fetchval("SELECT 1") == 1
        await c.close()
        with pytest.raises(asyncpg.exceptions.InvalidPasswordError) as e:
            await asyncpg.connect(
                host="127.0.0.1", port=scram_srv.port, user="materialize", password="x",
                ssl=False,
            )
        assert e.value.sqlstate == "28P01"

    asyncio.run(main())


def test_scram_pg8000(scram_srv: ServerThread) -> None:
    con = pg8000.native.Connection(
        "materialize", host="127.0.0.1", port=scram_srv.port, password="s3cret"
    )
    assert con.run("SELECT 1") == [[1]]
    con.close()
    with pytest.raises(pg8000.native.DatabaseError) as e:
        pg8000.native.Connection(
            "materialize", host="127.0.0.1", port=scram_srv.port, password="bad"
        )
    assert e.value.args[0]["C"] == "28P01"


def test_scram_wrong_mechanism_raw(scram_srv: ServerThread) -> None:
    c = RawClient(scram_srv.port)
    import struct

    body = struct.pack("!i", 3 << 16) + b"user\0materialize\0\0"
    c.send(struct.pack("!i", len(body) + 4) + body)
    typ, payload = c.recv()
    assert typ == "R" and payload == struct.pack("!i", 10) + b"SCRAM-SHA-256\0\0"
    c.send(c.msg(b"p", b"PLAIN\0" + struct.pack("!i", -1)))
    typ, payload = c.recv()
    assert typ == "E" and error_fields(payload)["C"] == "08P01"
    assert c.recv() is None


@needs_psql
def test_psql_password_auth(password_srv: ServerThread, scram_srv: ServerThread) -> None:
    def psql(srv: ServerThread, password: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["psql", f"host=127.0.0.1 port={srv.port} user=materialize dbname=materialize",
             "-X", "-w", "-A", "-t", "-c", "SELECT 1"],
            capture_output=True, text=True, timeout=30,
            env={"PATH": "/usr/bin:/bin", "PGPASSWORD": password},
        )

    r = psql(password_srv, "pw1")
    assert r.returncode == 0 and r.stdout.strip() == "1", r.stderr
    r = psql(password_srv, "wrong")
    assert r.returncode == 2
    assert 'password authentication failed for user "materialize"' in r.stderr
    r = psql(scram_srv, "s3cret")
    assert r.returncode == 0 and r.stdout.strip() == "1", r.stderr
    r = psql(scram_srv, "wrong")
    assert 'password authentication failed for user "materialize"' in r.stderr
    r = subprocess.run(  # no password at all: libpq hangs up at the auth request
        ["psql", f"host=127.0.0.1 port={scram_srv.port} user=materialize", "-X", "-w",
         "-c", "SELECT 1"], capture_output=True, text=True, timeout=30,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 2 and "no password supplied" in r.stderr


def test_cleartext_password_clients(password_srv: ServerThread) -> None:
    with psycopg.connect(password_srv.dsn(password="pw1"), autocommit=True) as c:
        assert c.execute("SELECT 1").fetchone() == (1,)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(password_srv.dsn(password="pw2"))
    con = pg8000.native.Connection(
        "materialize", host="127.0.0.1", port=password_srv.port, password="pw1"
    )
    assert con.run("SELECT 1") == [[1]]
    con.close()


# ---- TLS ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl not installed")
    d: Path = tmp_path_factory.mktemp("tls")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem"), "-days", "1",
         "-subj", "/CN=localhost"], check=True, capture_output=True,
    )
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(d / "cert.pem", d / "key.pem")
    coord = FakeCoordinator(auth="scram-sha-256", verifiers={"materialize": scramp_verifier("t")})
    s = ServerThread(coord, tls=ctx)
    yield s
    s.stop()


def test_tls_psycopg(tls_srv: ServerThread) -> None:
    with psycopg.connect(tls_srv.dsn(sslmode="require", password="t"), autocommit=True) as c:
        assert c.pgconn.ssl_in_use
        assert c.execute("SELECT generate_series(1, 2000)").fetchall()[-1] == (2000,)
        assert c.execute("SELECT %s::int", (4,)).fetchone() == (4,)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(tls_srv.dsn(sslmode="require", password="x"))
    # a client that does not ask for TLS still gets in
    with psycopg.connect(tls_srv.dsn(sslmode="disable", password="t")) as c:
        assert not c.pgconn.ssl_in_use


def test_tls_asyncpg(tls_srv: ServerThread) -> None:
    async def main() -> Any:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        c = await asyncpg.connect(
            host="127.0.0.1", port=tls_srv.port, user="materialize", password="t", ssl=ctx
        )
        try:
            return await c.fetchval("SELECT $1::int", 9)
        finally:
            await c.close()

    assert asyncio.run(main()) == 9


@needs_psql
def test_tls_psql(tls_srv: ServerThread) -> None:
    r = subprocess.run(
        ["psql", f"host=127.0.0.1 port={tls_srv.port} user=materialize sslmode=require",
         "-X", "-w", "-A", "-t", "-c", "SELECT 1"], capture_output=True, text=True, timeout=30,
        env={"PATH": "/usr/bin:/bin", "PGPASSWORD": "t"},
    )
    assert r.returncode == 0 and r.stdout.strip() == "1", r.stderr
