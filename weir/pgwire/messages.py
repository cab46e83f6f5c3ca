"""PostgreSQL v3 wire framing: backend message builders and a frontend message reader.

Builders append to a caller-owned bytearray rather than returning bytes so a
whole batch of responses (ParseComplete ... DataRow ... ReadyForQuery) is one
buffer and one socket write; that, not parsing, is what makes small round trips
fast.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from weir.adapter.api import Column, Notice
from weir.errors import SqlState, WeirError

# Startup-phase request codes (sent in place of a protocol version).
PROTOCOL_3_0 = 3 << 16
SSL_REQUEST_CODE = 80877103
GSSENC_REQUEST_CODE = 80877104
CANCEL_REQUEST_CODE = 80877102
MAX_STARTUP_PACKET_LENGTH = 10000

# Frontend message types accepted after startup (PostgreSQL's SocketBackend set).
FRONTEND_TYPES = frozenset(b"QPBEDCSHXFdcfp")

_I = struct.Struct("!i")
_H = struct.Struct("!h")
_II = struct.Struct("!II")
_CI = struct.Struct("!ci")
_CIH = struct.Struct("!cih")

AUTH_OK = b"R\x00\x00\x00\x08\x00\x00\x00\x00"
PARSE_COMPLETE = b"1\x00\x00\x00\x04"
BIND_COMPLETE = b"2\x00\x00\x00\x04"
CLOSE_COMPLETE = b"3\x00\x00\x00\x04"
NO_DATA = b"n\x00\x00\x00\x04"
PORTAL_SUSPENDED = b"s\x00\x00\x00\x04"
EMPTY_QUERY = b"I\x00\x00\x00\x04"
COPY_DONE = b"c\x00\x00\x00\x04"
NULL_FIELD = b"\xff\xff\xff\xff"

# Localized and non-localized severities are the same: weir only speaks English.
_SEVERITIES = {"ERROR", "FATAL", "PANIC", "WARNING", "NOTICE", "DEBUG", "INFO", "LOG"}


def protocol_violation(message: str, *, fatal: bool = False) -> WeirError:
    return WeirError(
        SqlState.PROTOCOL_VIOLATION, message, severity="FATAL" if fatal else "ERROR"
    )


def cstr(s: str) -> bytes:
    return s.encode() + b"\x00"


def message(out: bytearray, kind: bytes, payload: bytes) -> None:
    out += _CI.pack(kind, len(payload) + 4)
    out += payload


def auth_request(out: bytearray, code: int, data: bytes = b"") -> None:
    message(out, b"R", _I.pack(code) + data)


def parameter_status(out: bytearray, name: str, value: str) -> None:
    message(out, b"S", cstr(name) + cstr(value))


def backend_key_data(out: bytearray, pid: int, key: int) -> None:
    message(out, b"K", _II.pack(pid & 0xFFFFFFFF, key & 0xFFFFFFFF))


def ready_for_query(out: bytearray, status: str) -> None:
    out += b"Z\x00\x00\x00\x05" + status.encode()


def command_complete(out: bytearray, tag: str) -> None:
    message(out, b"C", cstr(tag))


def negotiate_protocol_version(out: bytearray, minor: int, unrecognized: list[str]) -> None:
    message(
        out, b"v", _I.pack(minor) + _I.pack(len(unrecognized)) + b"".join(map(cstr, unrecognized))
    )


def parameter_description(out: bytearray, oids: Sequence[int]) -> None:
    message(out, b"t", _H.pack(len(oids)) + b"".join(_I.pack(o) for o in oids))


def row_description(out: bytearray, columns: Sequence[Column], formats: Sequence[int]) -> None:
    parts = [_H.pack(len(columns))]
    for col, fmt in zip(columns, formats, strict=True):
        t = col.type
        parts.append(cstr(col.name))
        parts.append(
            struct.pack("!ihihih", col.table_oid, col.column_number, t.oid, t.typlen, t.typmod, fmt)
        )
    message(out, b"T", b"".join(parts))


Encoder = Callable[[Any, Any], bytes]


def data_row(out: bytearray, row: Sequence[Any], encoders: Sequence[tuple[Encoder, Any]]) -> None:
    """One DataRow; `encoders` pairs each column with (codec function, PgType)."""
    parts: list[bytes] = []
    append = parts.append
    for value, (enc, typ) in zip(row, encoders, strict=True):
        if value is None:
            append(NULL_FIELD)
        else:
            b = enc(value, typ)
            append(_I.pack(len(b)))
            append(b)
    payload = b"".join(parts)
    out += _CIH.pack(b"D", len(payload) + 6, len(encoders))
    out += payload


def copy_out_response(out: bytearray, ncols: int) -> None:
    message(out, b"H", b"\x00" + _H.pack(ncols) + b"\x00\x00" * ncols)


def copy_data(out: bytearray, data: bytes) -> None:
    out += _CI.pack(b"d", len(data) + 4)
    out += data


def _fields(pairs: Iterable[tuple[bytes, str | None]]) -> bytes:
    return b"".join(code + cstr(v) for code, v in pairs if v is not None) + b"\x00"


def error_response(out: bytearray, err: WeirError, *, severity: str | None = None) -> None:
    """ErrorResponse with S, V, C, M and D/H/P when set (PostgreSQL's field order)."""
    sev = (severity or err.severity or "ERROR").upper()
    if sev not in _SEVERITIES:
        sev = "ERROR"
    position = str(err.position) if err.position is not None else None
    message(
        out,
        b"E",
        _fields(
            [
                (b"S", sev),
                (b"V", sev),
                (b"C", err.sqlstate),
                (b"M", err.message),
                (b"D", err.detail),
                (b"H", err.hint),
                (b"P", position),
            ]
        ),
    )


def notice_response(out: bytearray, notice: Notice) -> None:
    sev = (notice.severity or "NOTICE").upper()
    message(
        out,
        b"N",
        _fields([(b"S", sev), (b"V", sev), (b"C", notice.sqlstate), (b"M", notice.message)]),
    )


class MessageReader:
    """Reads fields out of one frontend message body; malformed content -> 08P01 ERROR."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _need(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.data):
            raise protocol_violation("insufficient data left in message")

    def int16(self) -> int:
        self._need(2)
        (v,) = _H.unpack_from(self.data, self.pos)
        self.pos += 2
        return v

    def int32(self) -> int:
        self._need(4)
        (v,) = _I.unpack_from(self.data, self.pos)
        self.pos += 4
        return v

    def uint32(self) -> int:
        return self.int32() & 0xFFFFFFFF

    def byte(self) -> int:
        self._need(1)
        v = self.data[self.pos]
        self.pos += 1
        return v

    def bytes(self, n: int) -> bytes:
        self._need(n)
        v = self.data[self.pos : self.pos + n]
        self.pos += n
        return bytes(v)

    def cstr(self) -> str:
        end = self.data.find(b"\x00", self.pos)
        if end < 0:
            raise protocol_violation("invalid string in message")
        raw = self.data[self.pos : end]
        self.pos = end + 1
        try:
            return raw.decode()
        except UnicodeDecodeError:
            raise WeirError(
                "22021", "invalid byte sequence for encoding \"UTF8\""
            ) from None

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def end(self) -> None:
        if self.pos != len(self.data):
            raise protocol_violation("invalid message format")
