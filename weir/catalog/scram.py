"""SCRAM-SHA-256 password verifiers in PostgreSQL's stored form (RFC 5803).

The catalog never stores a password, only
`SCRAM-SHA-256$<iterations>:<salt b64>$<StoredKey b64>:<ServerKey b64>`,
which is exactly what pgwire needs to run a SCRAM exchange and what
PostgreSQL itself keeps in pg_authid.rolpassword.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

ITERATIONS = 4096  # PostgreSQL's default scram_iterations
SALT_LEN = 16


@dataclass(frozen=True)
class ScramVerifier:
    iterations: int
    salt: bytes
    stored_key: bytes
    server_key: bytes

    def text(self) -> str:
        b64 = base64.b64encode
        return (f"SCRAM-SHA-256${self.iterations}:{b64(self.salt).decode()}"
                f"${b64(self.stored_key).decode()}:{b64(self.server_key).decode()}")


def _prep(password: str) -> bytes:
    """SASLprep like PostgreSQL: fall back to the raw bytes if it is not valid."""
    try:
        from scramp.core import saslprep  # type: ignore[attr-defined]

        return saslprep(password).encode("utf-8")
    except Exception:  # noqa: BLE001 - PostgreSQL also falls back silently
        return password.encode("utf-8")


def _keys(password: str, salt: bytes, iterations: int) -> tuple[bytes, bytes]:
    salted = hashlib.pbkdf2_hmac("sha256", _prep(password), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()
    return stored_key, server_key


def make_verifier(password: str, salt: bytes | None = None,
                  iterations: int = ITERATIONS) -> str:
    """The RFC 5803 text for `password` (random 16-byte salt unless given)."""
    salt = salt if salt is not None else secrets.token_bytes(SALT_LEN)
    stored_key, server_key = _keys(password, salt, iterations)
    return ScramVerifier(iterations, salt, stored_key, server_key).text()


def parse_verifier(text: str) -> ScramVerifier:
    """Split an RFC 5803 verifier; raises ValueError if it is not one."""
    try:
        mech, rest = text.split("$", 1)
        iter_salt, keys = rest.split("$", 1)
        iterations, salt = iter_salt.split(":", 1)
        stored, server = keys.split(":", 1)
        if mech != "SCRAM-SHA-256":
            raise ValueError(mech)
        b64d = base64.b64decode
        return ScramVerifier(int(iterations), b64d(salt, validate=True),
                             b64d(stored, validate=True), b64d(server, validate=True))
    except (ValueError, TypeError) as e:
        raise ValueError("not a SCRAM-SHA-256 verifier") from e


def is_verifier(text: str) -> bool:
    try:
        parse_verifier(text)
    except ValueError:
        return False
    return True


def check_password(verifier: str | None, password: str) -> bool:
    """Cleartext password against a stored verifier (constant-time compare)."""
    if not verifier:
        return False
    try:
        v = parse_verifier(verifier)
    except ValueError:
        return False
    stored_key, server_key = _keys(password, v.salt, v.iterations)
    return hmac.compare_digest(stored_key, v.stored_key) and hmac.compare_digest(
        server_key, v.server_key)
