"""Connection startup: SSL/GSS negotiation, CancelRequest, the startup packet,
authentication (trust, cleartext password, SCRAM-SHA-256) and the handshake
that ends in the first ReadyForQuery.

SCRAM is done here with hashlib/hmac against the stored RFC 5803 verifier
rather than through scramp's ScramServer: libpq (psql, psycopg) sends an empty
SCRAM user name ("n=,") because PostgreSQL takes the user from the startup
packet, and scramp's server rejects that message.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import secrets
import struct
from typing import TYPE_CHECKING

from weir.adapter.api import Session
from weir.errors import SqlState, WeirError
from weir.pgwire import messages as m

if TYPE_CHECKING:
    from weir.pgwire.connection import PgConnection

log = logging.getLogger("weir.pgwire")

AUTH_CLEARTEXT = 3
AUTH_SASL = 10
AUTH_SASL_CONTINUE = 11
AUTH_SASL_FINAL = 12
SCRAM = "SCRAM-SHA-256"

# Per-process secret so mock SCRAM salts for unknown users are stable but unguessable.
_MOCK_NONCE = secrets.token_bytes(32)


def _fatal(sqlstate: str, message: str, detail: str | None = None) -> WeirError:
    return WeirError(sqlstate, message, detail=detail, severity="FATAL")


def _auth_failed(user: str) -> WeirError:
    return _fatal(SqlState.INVALID_PASSWORD, f'password authentication failed for user "{user}"')


def _malformed(detail: str) -> WeirError:
    return _fatal(SqlState.PROTOCOL_VIOLATION, "malformed SCRAM message", detail)


async def startup(conn: PgConnection) -> Session | None:
    """Run the startup phase; returns the session, or None when the connection is done
    (CancelRequest). Failures raise a FATAL WeirError."""
    ssl_done = gss_done = False
    while True:
        body = await conn.read_startup_packet()
        (code,) = struct.unpack_from("!i", body)
        if code == m.CANCEL_REQUEST_CODE and len(body) == 12:
            pid, key = struct.unpack_from("!II", body, 4)
            conn.server.metric("cancel_requests", 1)
            try:
                conn.coordinator.cancel(pid, key)
            except Exception:
                log.exception("pgwire: coordinator.cancel failed")
            return None
        if code == m.SSL_REQUEST_CODE and not ssl_done and len(body) == 4:
            ssl_done = True
            tls = conn.server.tls
            if tls is None:
                conn.write_now(b"N")
            else:
                conn.write_now(b"S")
                await conn.start_tls(tls)
            continue
        if code == m.GSSENC_REQUEST_CODE and not gss_done and len(body) == 4:
            gss_done = True
            conn.write_now(b"N")
            continue
        break
    major, minor = code >> 16 & 0xFFFF, code & 0xFFFF
    if major != 3:
        raise _fatal(
            SqlState.FEATURE_NOT_SUPPORTED,
            f"unsupported frontend protocol {major}.{minor}: server supports 3.0 to 3.0",
        )
    params = _parse_startup_params(body)
    protocol_options = [k for k in params if k.startswith("_pq_.")]
    if minor > 0 or protocol_options:
        m.negotiate_protocol_version(conn.out, 0, protocol_options)
        for k in protocol_options:
            del params[k]
    user = params.pop("user", "")
    if not user:
        raise _fatal(
            SqlState.INVALID_AUTHORIZATION_SPECIFICATION,
            "no PostgreSQL user name specified in startup packet",
        )
    database = params.pop("database", "") or user
    try:
        await _authenticate(conn, user)
    except WeirError:
        conn.server.metric("auth_failures", 1)
        raise
    conn.out += m.AUTH_OK
    try:
        session = await conn.coordinator.open_session(user, database, params)
    except WeirError as e:
        raise _fatal(e.sqlstate, e.message, e.detail) from None
    conn.session = session
    out = conn.out
    for name, value in session.parameter_statuses().items():
        m.parameter_status(out, name, value)
    m.backend_key_data(out, session.connection_id, session.secret_key)
    for notice in session.take_notices():  # e.g. WARNING: database does not exist
        m.notice_response(out, notice)
    m.ready_for_query(out, session.transaction_status)
    await conn.flush_and_drain()
    return session


def _parse_startup_params(body: bytes) -> dict[str, str]:
    layout = _fatal(
        SqlState.PROTOCOL_VIOLATION,
        "invalid startup packet layout: expected terminator as last byte",
    )
    if not body.endswith(b"\x00"):
        raise layout
    r = m.MessageReader(body)
    r.pos = 4
    params: dict[str, str] = {}
    try:
        while True:
            name = r.cstr()
            if not name:
                break
            params[name] = r.cstr()
    except WeirError:
        raise layout from None
    if r.remaining():
        raise layout
    return params


async def _authenticate(conn: PgConnection, user: str) -> None:
    method = conn.coordinator.auth_method(user, conn.peer_host)
    if method == "trust":
        return
    if method == "password":
        m.auth_request(conn.out, AUTH_CLEARTEXT)
        await conn.flush_and_drain()
        body = await _read_auth_response(conn, "password")
        r = m.MessageReader(body)
        password = r.cstr()
        if not password or not conn.coordinator.check_password(user, password):
            raise _auth_failed(user)
        return
    if method == "scram-sha-256":
        await _scram(conn, user)
        return
    if method == "reject":
        raise _fatal(
            SqlState.INVALID_AUTHORIZATION_SPECIFICATION,
            f'pg_hba.conf rejects connection for host "{conn.peer_host}", user "{user}"',
        )
    raise _fatal(
        SqlState.INVALID_AUTHORIZATION_SPECIFICATION,
        f'authentication method "{method}" not supported for user "{user}"',
    )


async def _read_auth_response(conn: PgConnection, what: str) -> bytes:
    typ, body = await conn.read_message(check_type=False)
    if typ != ord("p"):
        raise _fatal(
            SqlState.PROTOCOL_VIOLATION, f"expected {what} response, got message type {typ}"
        )
    return body


def parse_scram_verifier(verifier: str) -> tuple[int, bytes, bytes, bytes] | None:
    """'SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>' -> (iter, salt, stored, server)."""
    try:
        mech, rest = verifier.split("$", 1)
        iter_salt, keys = rest.split("$")
        iterations, salt = iter_salt.split(":")
        stored, server = keys.split(":")
        if mech != SCRAM:
            return None
        result = (
            int(iterations),
            base64.b64decode(salt, validate=True),
            base64.b64decode(stored, validate=True),
            base64.b64decode(server, validate=True),
        )
    except (ValueError, binascii.Error):
        return None
    if result[0] < 1 or len(result[2]) != 32 or len(result[3]) != 32:
        return None
    return result


def make_scram_verifier(password: str, iterations: int = 4096, salt: bytes | None = None) -> str:
    """A verifier in PostgreSQL's format (handy for tests and for the adapter)."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.digest(salted, b"Client Key", "sha256")
    stored = hashlib.sha256(client_key).digest()
    server = hmac.digest(salted, b"Server Key", "sha256")
    b64 = base64.b64encode
    return f"{SCRAM}${iterations}:{b64(salt).decode()}${b64(stored).decode()}:{b64(server).decode()}"


def _scram_attrs(text: str) -> list[tuple[str, str]]:
    attrs = []
    for part in text.split(","):
        if len(part) < 2 or part[1] != "=" or not part[0].isalpha():
            raise _malformed(f'Malformed SCRAM attribute "{part}".')
        attrs.append((part[0], part[2:]))
    return attrs


async def _scram(conn: PgConnection, user: str) -> None:
    """SCRAM-SHA-256 exchange (RFC 5802/7677) as PostgreSQL does it: the SCRAM user
    name is ignored, no channel binding offered, unknown users get a mock exchange."""
    m.auth_request(conn.out, AUTH_SASL, m.cstr(SCRAM) + b"\x00")
    await conn.flush_and_drain()
    r = m.MessageReader(await _read_auth_response(conn, "SASL"))
    mechanism = r.cstr()
    length = r.int32()
    client_first = r.bytes(length) if length >= 0 else b""
    if mechanism != SCRAM:
        raise _fatal(
            SqlState.PROTOCOL_VIOLATION,
            "client selected an invalid SASL authentication mechanism",
        )
    verifier = conn.coordinator.scram_verifier(user)
    parsed = parse_scram_verifier(verifier) if verifier else None
    doomed = parsed is None
    if parsed is None:
        salt = hashlib.sha256(_MOCK_NONCE + user.encode()).digest()[:16]
        parsed = (4096, salt, secrets.token_bytes(32), secrets.token_bytes(32))
    iterations, salt, stored_key, server_key = parsed

    try:
        cf = client_first.decode()
    except UnicodeDecodeError:
        raise _malformed("Invalid encoding.") from None
    if not cf or cf[0] not in "nyp":
        raise _malformed("Unexpected channel-binding flag.")
    if cf[0] == "p":
        raise _malformed(
            "The client selected SCRAM-SHA-256 without channel binding, but the SCRAM "
            "message includes channel binding data."
        )
    if len(cf) < 2 or cf[1] != ",":
        raise _malformed("Comma expected.")
    authzid_end = cf.find(",", 2)
    if authzid_end < 0:
        raise _malformed("Comma expected.")
    if authzid_end != 2:
        raise _fatal(
            SqlState.FEATURE_NOT_SUPPORTED,
            "client uses authorization identity, but it is not supported",
        )
    gs2_header = cf[: authzid_end + 1]
    bare = cf[authzid_end + 1 :]
    if bare.startswith("m="):
        raise _fatal(
            SqlState.FEATURE_NOT_SUPPORTED, "client requires an unsupported SCRAM extension"
        )
    # libpq sends "n=," (empty user); split by hand since an empty value is legal here.
    parts = bare.split(",")
    if len(parts) < 2 or not parts[0].startswith("n=") or not parts[1].startswith("r="):
        raise _malformed("Expected attributes n and r.")
    client_nonce = parts[1][2:]
    if not client_nonce or any(not (0x21 <= ord(c) <= 0x7E) for c in client_nonce):
        raise _malformed("Invalid nonce.")

    nonce = client_nonce + base64.b64encode(secrets.token_bytes(18)).decode()
    server_first = f"r={nonce},s={base64.b64encode(salt).decode()},i={iterations}"
    m.auth_request(conn.out, AUTH_SASL_CONTINUE, server_first.encode())
    await conn.flush_and_drain()

    try:
        client_final = (await _read_auth_response(conn, "SASL")).decode()
    except UnicodeDecodeError:
        raise _malformed("Invalid encoding.") from None
    proof_at = client_final.rfind(",p=")
    if proof_at < 0:
        raise _malformed("Proof expected.")
    without_proof = client_final[:proof_at]
    attrs = dict(_scram_attrs(without_proof))
    if attrs.get("c") != base64.b64encode(gs2_header.encode()).decode():
        raise _fatal(SqlState.PROTOCOL_VIOLATION, "SCRAM channel binding check failed")
    if attrs.get("r") != nonce:
        raise _malformed("Nonce does not match.")
    try:
        proof = base64.b64decode(client_final[proof_at + 3 :], validate=True)
    except binascii.Error:
        raise _malformed("Malformed proof in client-final-message.") from None
    if len(proof) != 32:
        raise _malformed("Malformed proof in client-final-message.")

    auth_message = f"{bare},{server_first},{without_proof}".encode()
    client_signature = hmac.digest(stored_key, auth_message, "sha256")
    client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
    if doomed or not hmac.compare_digest(hashlib.sha256(client_key).digest(), stored_key):
        raise _auth_failed(user)
    server_signature = hmac.digest(server_key, auth_message, "sha256")
    m.auth_request(conn.out, AUTH_SASL_FINAL, b"v=" + base64.b64encode(server_signature))
