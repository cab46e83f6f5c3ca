"""PostgreSQL text and binary wire encodings for every type in `weir.types`.

Values follow the Python value domain documented in `weir.types`. Formats,
error SQLSTATEs and messages match PostgreSQL 15 with DateStyle 'ISO, MDY',
IntervalStyle 'postgres', TimeZone 'UTC' and extra_float_digits=1.

    encode_text(value, t) -> bytes      # output function (value is not None)
    encode_binary(value, t) -> bytes    # send function
    decode_text(data, t) -> value       # input function, applies typmods
    decode_binary(data, t) -> value     # receive function
    copy_text_row(values, types) -> bytes
    coerce(value, t) -> value           # assignment of a Python/literal value to a column

Per-type work lives in dispatch tables keyed by type OID; arrays (any
`t.element`) are handled generically. Date/time, numeric/float and json
details live in `weir.codec.datetime`, `weir.codec.numeric`, `weir.codec.json`,
arrays in `weir.codec.array` (one module per type family, as psycopg 3's `types/`).
"""

from __future__ import annotations

import datetime as dt
import re
import struct
import uuid
from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from weir.codec import array as carr
from weir.codec import datetime as cdt
from weir.codec import interval as cinterval
from weir.codec import interval_parse
from weir.codec import interval_value as cinterval_value
from weir.codec import json as cjson
from weir.codec import numeric as cnum
from weir.errors import SqlState, WeirError
from weir.types import BY_OID, PgType

__all__ = ["coerce", "copy_text_row", "decode_binary", "decode_text", "encode_binary",
           "encode_text"]

_H, _I, _Q = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
_UI, _UQ = struct.Struct(">I"), struct.Struct(">Q")

_BOOL, _INT2, _INT4, _INT8, _OID, _MZ_TS = 16, 21, 23, 20, 26, 16552
_FLOAT4, _FLOAT8, _NUMERIC = 700, 701, 1700
_TEXT, _VARCHAR, _BPCHAR, _NAME, _UNKNOWN, _JSON, _JSONB = 25, 1043, 1042, 19, 705, 114, 3802
_DATE, _TIMESTAMP, _TIMESTAMPTZ, _INTERVAL, _UUID, _BYTEA = 1082, 1114, 1184, 1186, 2950, 17
_INT2VECTOR, _OIDVECTOR = 22, 30  # arrays whose text form is '1 2' (the system catalogs')


def _invalid(tname: str, s: str) -> WeirError:
    return WeirError(SqlState.INVALID_TEXT_REPRESENTATION, f'invalid input syntax for type {tname}: "{s}"')


def _bad_binary(message: str) -> WeirError:
    return WeirError(SqlState.INVALID_BINARY_REPRESENTATION, message)


# ---------------------------------------------------------------- scalar text input

_INT_RE = re.compile(r"[ \t\n\r\f\v]*[+-]?\d+[ \t\n\r\f\v]*\Z", re.ASCII)
_INT_RANGES = {  # oid: (low, high, assignment overflow message)
    _INT2: (-(2**15), 2**15 - 1, "smallint out of range"),
    _INT4: (-(2**31), 2**31 - 1, "integer out of range"),
    _INT8: (-(2**63), 2**63 - 1, "bigint out of range"),
    _OID: (0, 2**32 - 1, "OID out of range"),
    _MZ_TS: (0, 2**64 - 1, "mz_timestamp out of range"),
}


def _int_in(s: str, t: PgType) -> int:
    if not (s.isascii() and s.isdigit()) and _INT_RE.match(s) is None:
        raise _invalid(t.name, s)
    v = int(s)
    low, high, _ = _INT_RANGES[t.oid]
    if not low <= v <= high:
        if t.oid == _OID and -(2**31) <= v < 0:
            return v + 2**32  # oidin wraps negative input like strtoul
        raise WeirError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE,
                        f'value "{s}" is out of range for type {t.name}')
    return v


def _bool_in(s: str, t: PgType) -> bool:
    v = s.strip(" \t\n\r\f\v").lower()
    n = len(v)
    if n:
        if "true"[:n] == v or "yes"[:n] == v or v == "1" or (n > 1 and v == "on"):
            return True
        if "false"[:n] == v or "no"[:n] == v or v == "0" or (n > 1 and "off"[:n] == v):
            return False
    raise _invalid("boolean", s)


def _varchar_typmod(s: str, t: PgType) -> str:
    limit = t.typmod - 4
    if t.oid == _BPCHAR:
        if len(s) > limit and s[limit:].strip(" "):
            raise WeirError(SqlState.STRING_DATA_RIGHT_TRUNCATION,
                            f"value too long for type character({limit})")
        # kept without its padding, so comparisons, length() and casts to text see what
        # PostgreSQL's bpchar operators see; output pads it (encode_text, encode_binary)
        return s[:limit].rstrip(" ")
    if len(s) > limit:
        if s[limit:].strip(" "):
            raise WeirError(SqlState.STRING_DATA_RIGHT_TRUNCATION,
                            f"value too long for type character varying({limit})")
        return s[:limit]
    return s


def _text_in(s: str, t: PgType) -> str:
    if "\x00" in s:
        raise WeirError("22021", 'invalid byte sequence for encoding "UTF8": 0x00')
    if t.typmod >= 4 and t.oid in (_VARCHAR, _BPCHAR):
        return _varchar_typmod(s, t)
    if t.oid == _NAME and len(s.encode()) > 63:  # NAMEDATALEN - 1, cut on a character boundary
        return s.encode()[:63].decode("utf-8", "ignore")
    return s


def _numeric_in(s: str, t: PgType) -> Decimal:
    d = cnum.numeric_in(s)
    if t.precision is not None:
        return cnum.numeric_typmod(d, t.precision, t.scale or 0)
    return d


_UUID_RE = re.compile(r"\{?([0-9a-f]{4}-?){7}[0-9a-f]{4}\}?\Z", re.I | re.ASCII)


def _uuid_in(s: str, t: PgType) -> str:
    if _UUID_RE.match(s) is None or (s[0] == "{") != (s[-1] == "}"):
        raise _invalid("uuid", s)
    h = s.strip("{}").replace("-", "").lower()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_HEX_WS = re.compile(r"[ \t\n\r]+")
_NOT_HEX = re.compile(r"[^0-9a-fA-F]")
_BYTEA_ESC = re.compile(rb"\\(\\|[0-3][0-7][0-7])")


def _bytea_in(s: str, t: PgType) -> bytes:
    if s.startswith("\\x"):
        h = _HEX_WS.sub("", s[2:])
        bad = _NOT_HEX.search(h)
        if bad is not None:
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f'invalid hexadecimal digit: "{bad.group()}"')
        if len(h) % 2:
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                            "invalid hexadecimal data: odd number of digits")
        return bytes.fromhex(h)
    b = s.encode()
    if b"\\" not in b:
        return b
    out, pos = bytearray(), 0
    for m in _BYTEA_ESC.finditer(b):
        chunk = b[pos:m.start()]
        if b"\\" in chunk:
            raise WeirError(SqlState.INVALID_TEXT_REPRESENTATION, "invalid input syntax for type bytea")
        out += chunk
        g = m.group(1)
        out.append(92 if g == b"\\" else int(g, 8))
        pos = m.end()
    if b"\\" in b[pos:]:
        raise WeirError(SqlState.INVALID_TEXT_REPRESENTATION, "invalid input syntax for type bytea")
    out += b[pos:]
    return bytes(out)


def _mz_timestamp_in(s: str, t: PgType) -> int:
    if _INT_RE.match(s) is not None:
        return _int_in(s, t)
    try:
        ts = cdt.parse_timestamp(s, "timestamp with time zone")
    except WeirError:
        raise _invalid("mz_timestamp", s) from None
    return _epoch_millis(ts)


def _epoch_millis(v: dt.datetime) -> int:
    if v.tzinfo is not None:
        v = v.astimezone(cdt.UTC).replace(tzinfo=None)
    return (v - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)


_IN: dict[int, Callable[[str, PgType], Any]] = {
    _BOOL: _bool_in,
    _INT2: _int_in, _INT4: _int_in, _INT8: _int_in, _OID: _int_in,
    _MZ_TS: _mz_timestamp_in,
    _FLOAT4: lambda s, t: cnum.float4_in(s),
    _FLOAT8: lambda s, t: cnum.float8_in(s),
    _NUMERIC: _numeric_in,
    _TEXT: _text_in, _VARCHAR: _text_in, _BPCHAR: _text_in, _NAME: _text_in, _UNKNOWN: _text_in,
    _JSON: lambda s, t: cjson.json_in(s),
    _JSONB: lambda s, t: cjson.jsonb_in(s),
    _DATE: lambda s, t: cdt.date_in(s),
    _TIMESTAMP: lambda s, t: cdt.timestamp_in(s),
    _TIMESTAMPTZ: lambda s, t: cdt.timestamptz_in(s),
    _INTERVAL: lambda s, t: interval_parse.parse(s),
    _UUID: _uuid_in,
    _BYTEA: _bytea_in,
    _INT2VECTOR: lambda s, t: [_int_in(x, BY_OID[_INT2]) for x in s.split()],
    _OIDVECTOR: lambda s, t: [_int_in(x, BY_OID[_OID]) for x in s.split()],
}


# ---------------------------------------------------------------- scalar text output


def _uuid_out(v: Any) -> str:
    if isinstance(v, str):
        return v if len(v) == 36 and v.islower() else _uuid_in(v, _UUID_T)
    return str(v)


def _jsonb_out(v: Any) -> str:
    return v if isinstance(v, str) else cjson.dumps(v)


_OUT: dict[int, Callable[[Any], str]] = {
    _BOOL: lambda v: "t" if v else "f",
    _INT2: str, _INT4: str, _INT8: str, _OID: str, _MZ_TS: str,
    _FLOAT4: cnum.float4_out,
    _FLOAT8: cnum.float8_out,
    _NUMERIC: cnum.numeric_out_trimmed,  # numeric(p,s): see encode_text
    _TEXT: str, _VARCHAR: str, _BPCHAR: str, _NAME: str, _UNKNOWN: str, _JSON: _jsonb_out,
    _JSONB: _jsonb_out,
    _DATE: cdt.date_out,
    _TIMESTAMP: cdt.timestamp_out,
    _TIMESTAMPTZ: cdt.timestamptz_out,
    _INTERVAL: lambda v: cinterval.out(cinterval_value.to_pg(v)),
    _UUID: _uuid_out,
    _BYTEA: lambda v: "\\x" + v.hex(),
    _INT2VECTOR: lambda v: " ".join(str(x) for x in v),
    _OIDVECTOR: lambda v: " ".join(str(x) for x in v),
}
# Element types whose text output never needs quoting inside an array literal.
_ARRAY_PLAIN = frozenset({_BOOL, _INT2, _INT4, _INT8, _OID, _MZ_TS, _FLOAT4, _FLOAT8, _NUMERIC,
                          _DATE, _UUID})


# ---------------------------------------------------------------- binary


def _text_send(v: Any) -> bytes:
    return v.encode() if isinstance(v, str) else str(v).encode()


_SEND: dict[int, Callable[[Any], bytes]] = {
    _BOOL: lambda v: b"\x01" if v else b"\x00",
    _INT2: _H.pack, _INT4: _I.pack, _INT8: _Q.pack, _OID: _UI.pack, _MZ_TS: _UQ.pack,
    _FLOAT4: cnum.float4_send,
    _FLOAT8: cnum.float8_send,
    _NUMERIC: cnum.numeric_send,
    _TEXT: _text_send, _VARCHAR: _text_send, _BPCHAR: _text_send, _NAME: _text_send,
    _UNKNOWN: _text_send,
    _JSON: lambda v: _jsonb_out(v).encode(),
    _JSONB: lambda v: b"\x01" + _jsonb_out(v).encode(),
    _DATE: cdt.date_send,
    _TIMESTAMP: cdt.timestamp_send,
    _TIMESTAMPTZ: cdt.timestamptz_send,
    _INTERVAL: lambda v: cinterval.send(cinterval_value.to_pg(v)),
    _UUID: lambda v: (uuid.UUID(v) if isinstance(v, str) else v).bytes,
    _BYTEA: bytes,
}


def _utf8(data: bytes) -> str:
    try:
        return str(data, "utf-8")
    except UnicodeDecodeError as e:
        data = bytes(data)
        lead = data[e.start]
        n = 2 if 0xC0 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else 4 if 0xF0 <= lead < 0xF8 else 1
        shown = " ".join(f"0x{b:02x}" for b in data[e.start:e.start + n])
        raise WeirError("22021", f'invalid byte sequence for encoding "UTF8": {shown}') from None


def _jsonb_recv(data: bytes, t: PgType) -> str:
    if not data or data[0] != 1:
        version = data[0] if data else 0
        raise _bad_binary(f"unsupported jsonb version number {version}")
    return cjson.jsonb_in(_utf8(data[1:]))


def _numeric_recv(data: bytes, t: PgType) -> Decimal:
    d = cnum.numeric_recv(data)
    if t.precision is not None:
        return cnum.numeric_typmod(d, t.precision, t.scale or 0)
    return d


_RECV: dict[int, Callable[[bytes, PgType], Any]] = {
    _BOOL: lambda b, t: b[0] != 0,
    _INT2: lambda b, t: _H.unpack(b)[0],
    _INT4: lambda b, t: _I.unpack(b)[0],
    _INT8: lambda b, t: _Q.unpack(b)[0],
    _OID: lambda b, t: _UI.unpack(b)[0],
    _MZ_TS: lambda b, t: _UQ.unpack(b)[0],
    _FLOAT4: lambda b, t: cnum.float4_recv(b),
    _FLOAT8: lambda b, t: cnum.float8_recv(b),
    _NUMERIC: _numeric_recv,
    _JSON: lambda b, t: cjson.json_in(_utf8(b)),
    _JSONB: _jsonb_recv,
    _DATE: lambda b, t: cdt.date_recv(b),
    _TIMESTAMP: lambda b, t: cdt.timestamp_recv(b),
    _TIMESTAMPTZ: lambda b, t: cdt.timestamptz_recv(b),
    _INTERVAL: lambda b, t: cinterval_value.recv(b),
    _UUID: lambda b, t: str(uuid.UUID(bytes=bytes(b))),
    _BYTEA: lambda b, t: bytes(b),
}
_FIXED_LEN = {_BOOL: 1, _INT2: 2, _INT4: 4, _INT8: 8, _OID: 4, _MZ_TS: 8, _FLOAT4: 4, _FLOAT8: 8,
              _DATE: 4, _TIMESTAMP: 8, _TIMESTAMPTZ: 8, _INTERVAL: 16, _UUID: 16}


# ---------------------------------------------------------------- arrays

_JSONISH = (_JSON, _JSONB, _INT2VECTOR, _OIDVECTOR)  # element types whose values may be lists


def _array_out(v: Sequence[Any], t: PgType) -> str:
    et = t.element
    assert et is not None
    return carr.format_array(v, _OUT.get(et.oid, str), et.oid not in _ARRAY_PLAIN,
                             et.oid not in _JSONISH)


def _array_send(v: Sequence[Any], t: PgType) -> bytes:
    et = t.element
    assert et is not None
    return carr.send_array(v, et.oid, _SEND.get(et.oid, _text_send), et.oid not in _JSONISH)


def _array_recv(data: bytes, t: PgType) -> list[Any]:
    et = t.element
    assert et is not None
    other = BY_OID.get(int.from_bytes(data[8:12], "big", signed=True))
    return carr.recv_array(data, et.oid, et.name, other.name if other else "???",
                           lambda b: _decode_binary(b, et))


def _array_in(s: str, t: PgType) -> list[Any]:
    et = t.element
    assert et is not None

    def conv(items: list[Any]) -> list[Any]:
        return [None if x is None else conv(x) if isinstance(x, list) else _decode_str(x, et)
                for x in items]

    return conv(carr.parse_array(s))


# ---------------------------------------------------------------- public API

_UUID_T = BY_OID[_UUID]


def encode_text(value: Any, t: PgType) -> bytes:
    """PostgreSQL's text output for a non-NULL value of type t, as UTF-8."""
    f = _OUT.get(t.oid)  # array OIDs are never in _OUT
    if f is not None:
        if t.oid == _NUMERIC and t.precision is not None:
            return cnum.numeric_out(value).encode()  # numeric(p,s) keeps its scale, as in PostgreSQL
        if t.oid == _BPCHAR and t.length is not None:
            return str(value).ljust(t.length).encode()  # character(n) shows its padding
        return f(value).encode()
    if t.element is not None:
        return _array_out(value, t).encode()
    return str(value).encode()


def encode_binary(value: Any, t: PgType) -> bytes:
    """PostgreSQL's binary send format for a non-NULL value of type t."""
    try:
        f = _SEND.get(t.oid)
        if f is not None:
            if t.oid == _NUMERIC and t.precision is None:
                return f(cnum.numeric_trimmed(value))  # as its text form (encode_text)
            if t.oid == _BPCHAR and t.length is not None:
                return f(str(value).ljust(t.length))
            return f(value)
        if t.element is not None:
            return _array_send(value, t)
        return _text_send(value)
    except (struct.error, OverflowError):
        low_high_msg = _INT_RANGES.get(t.oid)
        msg = low_high_msg[2] if low_high_msg else f"{t.name} out of range"
        raise WeirError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, msg) from None


def _decode_str(s: str, t: PgType) -> Any:
    if t.element is not None and t.oid not in _IN:
        return _array_in(s, t)
    f = _IN.get(t.oid)
    return s if f is None else f(s, t)


def decode_text(data: bytes | str, t: PgType) -> Any:
    """PostgreSQL's input function for type t (typmods applied), raising PG's errors."""
    return _decode_str(data if isinstance(data, str) else _utf8(data), t)


def _decode_binary(data: bytes, t: PgType) -> Any:
    if t.element is not None:
        return _array_recv(data, t)
    fixed = _FIXED_LEN.get(t.oid)
    if fixed is not None and len(data) != fixed:
        raise struct.error("wrong length")
    f = _RECV.get(t.oid)
    if f is None:
        return _text_in(_utf8(data), t)
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


_COPY_SPECIAL = re.compile(rb"[\\\x08\x0c\n\r\t\x0b]")
_COPY_ESCAPES = {b"\\": b"\\\\", b"\x08": b"\\b", b"\x0c": b"\\f", b"\n": b"\\n", b"\r": b"\\r",
                 b"\t": b"\\t", b"\x0b": b"\\v"}


def _copy_escape(m: re.Match[bytes]) -> bytes:
    return _COPY_ESCAPES[m.group()]


def copy_text_row(values: Sequence[Any], types: Sequence[PgType]) -> bytes:
    """One COPY ... TO STDOUT text-format line: tab separated, \\N for NULL, ending in \\n."""
    parts = []
    for v, t in zip(values, types, strict=True):
        if v is None:
            parts.append(b"\\N")
            continue
        b = encode_text(v, t)
        if t.oid not in _ARRAY_PLAIN and _COPY_SPECIAL.search(b) is not None:
            b = _COPY_SPECIAL.sub(_copy_escape, b)
        parts.append(b)
    return b"\t".join(parts) + b"\n"


# ---------------------------------------------------------------- coerce


def _type_of(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer" if -(2**31) <= v < 2**31 else "bigint"
    if isinstance(v, dt.datetime):
        return "timestamp with time zone" if v.tzinfo else "timestamp without time zone"
    names = {float: "double precision", Decimal: "numeric", str: "text", bytes: "bytea",
             dt.date: "date", dt.timedelta: "interval", cinterval.PgInterval: "interval", uuid.UUID: "uuid", dict: "jsonb",
             list: "array", tuple: "record"}
    return next((n for k, n in names.items() if isinstance(v, k)), type(v).__name__)


def _mismatch(v: Any, t: PgType, column: str | None) -> WeirError:
    target = "timestamp without time zone" if t.name == "timestamp" else t.name
    where = f'column "{column}" is' if column else "target is"
    return WeirError(SqlState.DATATYPE_MISMATCH,
                     f"{where} of type {target} but expression is of type {_type_of(v)}",
                     hint="You will need to rewrite or cast the expression.")


def _co_int(v: Any, t: PgType, column: str | None) -> int:
    low, high, overflow = _INT_RANGES[t.oid]
    if isinstance(v, bool) or not isinstance(v, int | float | Decimal | dt.datetime):
        raise _mismatch(v, t, column)
    if isinstance(v, dt.datetime):
        if t.oid != _MZ_TS:
            raise _mismatch(v, t, column)
        v = _epoch_millis(v)
    elif isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise WeirError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, overflow)
        v = int(Decimal(v).to_integral_value(ROUND_HALF_UP))
    elif isinstance(v, Decimal):
        if not v.is_finite():
            what = "NaN" if v.is_nan() else "infinity"
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"cannot convert {what} to {t.name}")
        v = int(v.to_integral_value(ROUND_HALF_UP))
    if not low <= v <= high:
        raise WeirError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, overflow)
    return int(v)


def _co_float(v: Any, t: PgType, column: str | None) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | Decimal):
        raise _mismatch(v, t, column)
    return cnum.float_from_number(v, t.name)


def _co_numeric(v: Any, t: PgType, column: str | None) -> Decimal:
    if isinstance(v, bool) or not isinstance(v, int | float | Decimal):
        raise _mismatch(v, t, column)
    d = cnum.numeric_from_number(v)
    if t.precision is not None:
        return cnum.numeric_typmod(d, t.precision, t.scale or 0)
    return d


_TEXT_SOURCES: list[tuple[type, int]] = [
    (bool, _BOOL), (int, _INT8), (float, _FLOAT8), (Decimal, _NUMERIC),
    (dt.datetime, _TIMESTAMP), (dt.date, _DATE), (dt.timedelta, _INTERVAL), (uuid.UUID, _UUID),
    (bytes, _BYTEA),
]


def _co_text(v: Any, t: PgType, column: str | None) -> str:
    if isinstance(v, bool):
        s = "true" if v else "false"
    elif isinstance(v, dt.datetime) and v.tzinfo is not None:
        s = cdt.timestamptz_out(v)
    else:
        oid = next((o for k, o in _TEXT_SOURCES if isinstance(v, k)), None)
        if oid is None:
            raise _mismatch(v, t, column)
        s = _OUT[oid](v)
    return _text_in(s, t)


def _co_json(v: Any, t: PgType, column: str | None) -> str:
    if isinstance(v, dict | list | tuple):
        return cjson.dumps(v)
    raise _mismatch(v, t, column)


def _co_date(v: Any, t: PgType, column: str | None) -> dt.date:
    if isinstance(v, dt.datetime):
        return (v.astimezone(cdt.UTC) if v.tzinfo else v).date()
    if isinstance(v, dt.date):
        return v
    raise _mismatch(v, t, column)


def _co_timestamp(v: Any, t: PgType, column: str | None) -> dt.datetime:
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(cdt.UTC)
            return v if t.oid == _TIMESTAMPTZ else v.replace(tzinfo=None)
        return v.replace(tzinfo=cdt.UTC) if t.oid == _TIMESTAMPTZ else v
    if isinstance(v, dt.date):
        return dt.datetime(v.year, v.month, v.day, tzinfo=cdt.UTC if t.oid == _TIMESTAMPTZ else None)
    raise _mismatch(v, t, column)


def _co_instance(kind: type | tuple[type, ...], conv: Callable[[Any], Any]) -> Callable[..., Any]:
    def co(v: Any, t: PgType, column: str | None) -> Any:
        if isinstance(v, kind):
            return conv(v)
        raise _mismatch(v, t, column)
    return co


_COERCE: dict[int, Callable[[Any, PgType, str | None], Any]] = {
    _BOOL: _co_instance(bool, bool),
    _INT2: _co_int, _INT4: _co_int, _INT8: _co_int, _OID: _co_int, _MZ_TS: _co_int,
    _FLOAT4: _co_float, _FLOAT8: _co_float,
    _NUMERIC: _co_numeric,
    _TEXT: _co_text, _VARCHAR: _co_text, _BPCHAR: _co_text, _NAME: _co_text, _UNKNOWN: _co_text,
    _JSON: _co_json, _JSONB: _co_json,
    _DATE: _co_date, _TIMESTAMP: _co_timestamp, _TIMESTAMPTZ: _co_timestamp,
    _INTERVAL: _co_instance((dt.timedelta, cinterval.PgInterval, dict), cinterval_value.to_pg),
    _UUID: _co_instance(uuid.UUID, str),
    _BYTEA: _co_instance((bytes, bytearray, memoryview), bytes),
}


def coerce(value: Any, t: PgType, column: str | None = None) -> Any:
    """Assign a Python value (e.g. a SQL literal) to type t the way PostgreSQL does.

    Strings go through t's input function (so '12' -> 12, 'abc' -> 22P02);
    numbers are range-checked and rounded half away from zero; numeric(p,s)
    and varchar(n)/char(n) typmods apply; lists become arrays element-wise.
    Values of an unassignable Python type raise 42804; `column` names the
    target column in that message.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return _decode_str(value, t)
    if t.element is not None:
        if not isinstance(value, list | tuple):
            raise _mismatch(value, t, column)
        et = t.element
        out = [coerce(x, t if isinstance(x, list | tuple) and et.oid not in (_JSON, _JSONB)
                      else et, column) for x in value]
        carr.shape(out)
        return out
    f = _COERCE.get(t.oid)
    return value if f is None else f(value, t, column)
