"""PostgreSQL's binary format: every type's send and receive function (the wire
protocol's binary parameters and results), bad lengths raising 22P03 as PostgreSQL does.
A type without one is sent and received as its text (weir.codec.text_format)."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from weir.codec import array as carr
from weir.codec import datetime as cdt
from weir.codec import interval as cinterval
from weir.codec import interval_value as cinterval_value
from weir.codec import json as cjson
from weir.codec import numeric as cnum
from weir.codec.text_format import INT_RANGES, JSONISH, jsonb_out, text_in, utf8
from weir.codec.type_oids import (
    BOOL,
    BPCHAR,
    BYTEA,
    DATE,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    INTERVAL,
    JSON,
    JSONB,
    MZ_TS,
    NAME,
    NUMERIC,
    OID,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    UNKNOWN,
    UUID,
    VARCHAR,
)
from weir.errors import SqlState, WeirError
from weir.types import BY_OID, PgType

_H, _I, _Q = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
_UI, _UQ = struct.Struct(">I"), struct.Struct(">Q")


def _bad_binary(message: str) -> WeirError:
    return WeirError(SqlState.INVALID_BINARY_REPRESENTATION, message)


def _text_send(v: Any) -> bytes:
    return v.encode() if isinstance(v, str) else str(v).encode()


_SEND: dict[int, Callable[[Any], bytes]] = {
    BOOL: lambda v: b"\x01" if v else b"\x00",
    INT2: _H.pack, INT4: _I.pack, INT8: _Q.pack, OID: _UI.pack, MZ_TS: _UQ.pack,
    FLOAT4: cnum.float4_send,
    FLOAT8: cnum.float8_send,
    NUMERIC: cnum.numeric_send,
    TEXT: _text_send, VARCHAR: _text_send, BPCHAR: _text_send, NAME: _text_send,
    UNKNOWN: _text_send,
    JSON: lambda v: jsonb_out(v).encode(),
    JSONB: lambda v: b"\x01" + jsonb_out(v).encode(),
    DATE: cdt.date_send,
    TIMESTAMP: cdt.timestamp_send,
    TIMESTAMPTZ: cdt.timestamptz_send,
    INTERVAL: lambda v: cinterval.send(cinterval_value.to_pg(v)),
    UUID: lambda v: (uuid.UUID(v) if isinstance(v, str) else v).bytes,
    BYTEA: bytes,
}


def _jsonb_recv(data: bytes, t: PgType) -> str:
    if not data or data[0] != 1:
        version = data[0] if data else 0
        raise _bad_binary(f"unsupported jsonb version number {version}")
    return cjson.jsonb_in(utf8(data[1:]))


def _numeric_recv(data: bytes, t: PgType) -> Decimal:
    d = cnum.numeric_recv(data)
    if t.precision is not None:
        return cnum.numeric_typmod(d, t.precision, t.scale or 0)
    return d


_RECV: dict[int, Callable[[bytes, PgType], Any]] = {
    BOOL: lambda b, t: b[0] != 0,
    INT2: lambda b, t: _H.unpack(b)[0],
    INT4: lambda b, t: _I.unpack(b)[0],
    INT8: lambda b, t: _Q.unpack(b)[0],
    OID: lambda b, t: _UI.unpack(b)[0],
    MZ_TS: lambda b, t: _UQ.unpack(b)[0],
    FLOAT4: lambda b, t: cnum.float4_recv(b),
    FLOAT8: lambda b, t: cnum.float8_recv(b),
    NUMERIC: _numeric_recv,
    JSON: lambda b, t: cjson.json_in(utf8(b)),
    JSONB: _jsonb_recv,
    DATE: lambda b, t: cdt.date_recv(b),
    TIMESTAMP: lambda b, t: cdt.timestamp_recv(b),
    TIMESTAMPTZ: lambda b, t: cdt.timestamptz_recv(b),
    INTERVAL: lambda b, t: cinterval_value.recv(b),
    UUID: lambda b, t: str(uuid.UUID(bytes=bytes(b))),
    BYTEA: lambda b, t: bytes(b),
}
_FIXED_LEN = {BOOL: 1, INT2: 2, INT4: 4, INT8: 8, OID: 4, MZ_TS: 8, FLOAT4: 4, FLOAT8: 8,
              DATE: 4, TIMESTAMP: 8, TIMESTAMPTZ: 8, INTERVAL: 16, UUID: 16}


def _array_send(v: Sequence[Any], t: PgType) -> bytes:
    et = t.element
    assert et is not None
    return carr.send_array(v, et.oid, _SEND.get(et.oid, _text_send), et.oid not in JSONISH)


def _array_recv(data: bytes, t: PgType) -> list[Any]:
    et = t.element
    assert et is not None
    other = BY_OID.get(int.from_bytes(data[8:12], "big", signed=True))
    return carr.recv_array(data, et.oid, et.name, other.name if other else "???",
                           lambda b: _decode_binary(b, et))


def encode_binary(value: Any, t: PgType) -> bytes:
    """PostgreSQL's binary send format for a non-NULL value of type t."""
    try:
        f = _SEND.get(t.oid)
        if f is not None:
            if t.oid == NUMERIC and t.precision is None:
                return f(cnum.numeric_trimmed(value))  # as its text form (encode_text)
            if t.oid == BPCHAR and t.length is not None:
                return f(str(value).ljust(t.length))
            return f(value)
        if t.element is not None:
            return _array_send(value, t)
        return _text_send(value)
    except (struct.error, OverflowError):
        low_high_msg = INT_RANGES.get(t.oid)
        msg = low_high_msg[2] if low_high_msg else f"{t.name} out of range"
        raise WeirError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, msg) from None


def _decode_binary(data: bytes, t: PgType) -> Any:
    if t.element is not None:
        return _array_recv(data, t)
    fixed = _FIXED_LEN.get(t.oid)
    if fixed is not None and len(data) != fixed:
        raise struct.error("wrong length")
    f = _RECV.get(t.oid)
    if f is None:
        return text_in(utf8(data), t)
    return f(data, t)


def decode_binary(data: bytes, t: PgType, param: int | None = None) -> Any:
    """PostgreSQL's receive function for type t; bad lengths raise 22P03.

    param (1-based bind parameter number) only refines the error message.
    """
    try:
        return _decode_binary(data, t)
    except struct.error:
        fixed = _FIXED_LEN.get(t.oid)
        if fixed is not None and t.element is None and len(data) < fixed:
            raise _bad_binary("insufficient data left in message") from None
        where = f" in bind parameter {param}" if param is not None else ""
        raise _bad_binary(f"incorrect binary data format{where}") from None
