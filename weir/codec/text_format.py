"""PostgreSQL's text format: every type's input function (typmods applied, PostgreSQL's
errors) and output function, arrays' and COPY's text included. Shared with the binary
format (weir.codec.binary_format) and assignment (weir.codec.assignment), which fall back
on them."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from weir.codec import array as carr
from weir.codec import datetime as cdt
from weir.codec import interval as cinterval
from weir.codec import interval_parse
from weir.codec import interval_value as cinterval_value
from weir.codec import json as cjson
from weir.codec import numeric as cnum
from weir.codec.type_oids import (
    BOOL,
    BPCHAR,
    BYTEA,
    DATE,
    FLOAT4,
    FLOAT8,
    INT2,
    INT2VECTOR,
    INT4,
    INT8,
    INTERVAL,
    JSON,
    JSONB,
    MZ_TS,
    NAME,
    NUMERIC,
    OID,
    OIDVECTOR,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    UNKNOWN,
    UUID,
    VARCHAR,
)
from weir.errors import SqlState, WeirError
from weir.types import BY_OID, PgType


def _invalid(tname: str, s: str) -> WeirError:
    return WeirError(SqlState.INVALID_TEXT_REPRESENTATION, f'invalid input syntax for type {tname}: "{s}"')


# ---------------------------------------------------------------- scalar text input

_INT_RE = re.compile(r"[ \t\n\r\f\v]*[+-]?\d+[ \t\n\r\f\v]*\Z", re.ASCII)
INT_RANGES = {  # oid: (low, high, assignment overflow message)
    INT2: (-(2**15), 2**15 - 1, "smallint out of range"),
    INT4: (-(2**31), 2**31 - 1, "integer out of range"),
    INT8: (-(2**63), 2**63 - 1, "bigint out of range"),
    OID: (0, 2**32 - 1, "OID out of range"),
    MZ_TS: (0, 2**64 - 1, "mz_timestamp out of range"),
}


def _int_in(s: str, t: PgType) -> int:
    if not (s.isascii() and s.isdigit()) and _INT_RE.match(s) is None:
        raise _invalid(t.name, s)
    v = int(s)
    low, high, _ = INT_RANGES[t.oid]
    if not low <= v <= high:
        if t.oid == OID and -(2**31) <= v < 0:
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
    if t.oid == BPCHAR:
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


def text_in(s: str, t: PgType) -> str:
    """text's, character varying's, character's and name's input (their typmods applied)."""
    if "\x00" in s:
        raise WeirError("22021", 'invalid byte sequence for encoding "UTF8": 0x00')
    if t.typmod >= 4 and t.oid in (VARCHAR, BPCHAR):
        return _varchar_typmod(s, t)
    if t.oid == NAME and len(s.encode()) > 63:  # NAMEDATALEN - 1, cut on a character boundary
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
    return epoch_millis(ts)


def epoch_millis(v: dt.datetime) -> int:
    """A timestamp as mz_timestamp: milliseconds since the Unix epoch."""
    if v.tzinfo is not None:
        v = v.astimezone(cdt.UTC).replace(tzinfo=None)
    return (v - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)


_IN: dict[int, Callable[[str, PgType], Any]] = {
    BOOL: _bool_in,
    INT2: _int_in, INT4: _int_in, INT8: _int_in, OID: _int_in,
    MZ_TS: _mz_timestamp_in,
    FLOAT4: lambda s, t: cnum.float4_in(s),
    FLOAT8: lambda s, t: cnum.float8_in(s),
    NUMERIC: _numeric_in,
    TEXT: text_in, VARCHAR: text_in, BPCHAR: text_in, NAME: text_in, UNKNOWN: text_in,
    JSON: lambda s, t: cjson.json_in(s),
    JSONB: lambda s, t: cjson.jsonb_in(s),
    DATE: lambda s, t: cdt.date_in(s),
    TIMESTAMP: lambda s, t: cdt.timestamp_in(s),
    TIMESTAMPTZ: lambda s, t: cdt.timestamptz_in(s),
    INTERVAL: lambda s, t: interval_parse.parse(s),
    UUID: _uuid_in,
    BYTEA: _bytea_in,
    INT2VECTOR: lambda s, t: [_int_in(x, BY_OID[INT2]) for x in s.split()],
    OIDVECTOR: lambda s, t: [_int_in(x, BY_OID[OID]) for x in s.split()],
}


# ---------------------------------------------------------------- scalar text output


def _uuid_out(v: Any) -> str:
    if isinstance(v, str):
        return v if len(v) == 36 and v.islower() else _uuid_in(v, _UUID_T)
    return str(v)


def jsonb_out(v: Any) -> str:
    """json's and jsonb's text (a value weir keeps as text is that text)."""
    return v if isinstance(v, str) else cjson.dumps(v)


OUTPUT: dict[int, Callable[[Any], str]] = {
    BOOL: lambda v: "t" if v else "f",
    INT2: str, INT4: str, INT8: str, OID: str, MZ_TS: str,
    FLOAT4: cnum.float4_out,
    FLOAT8: cnum.float8_out,
    NUMERIC: cnum.numeric_out_trimmed,  # numeric(p,s): see encode_text
    TEXT: str, VARCHAR: str, BPCHAR: str, NAME: str, UNKNOWN: str, JSON: jsonb_out,
    JSONB: jsonb_out,
    DATE: cdt.date_out,
    TIMESTAMP: cdt.timestamp_out,
    TIMESTAMPTZ: cdt.timestamptz_out,
    INTERVAL: lambda v: cinterval.out(cinterval_value.to_pg(v)),
    UUID: _uuid_out,
    BYTEA: lambda v: "\\x" + v.hex(),
    INT2VECTOR: lambda v: " ".join(str(x) for x in v),
    OIDVECTOR: lambda v: " ".join(str(x) for x in v),
}
# Element types whose text output never needs quoting inside an array literal.
_ARRAY_PLAIN = frozenset({BOOL, INT2, INT4, INT8, OID, MZ_TS, FLOAT4, FLOAT8, NUMERIC,
                          DATE, UUID})

_UUID_T = BY_OID[UUID]


def utf8(data: bytes) -> str:
    """Client bytes as UTF-8 text, failing as PostgreSQL fails on an invalid sequence."""
    try:
        return str(data, "utf-8")
    except UnicodeDecodeError as e:
        data = bytes(data)
        lead = data[e.start]
        n = 2 if 0xC0 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else 4 if 0xF0 <= lead < 0xF8 else 1
        shown = " ".join(f"0x{b:02x}" for b in data[e.start:e.start + n])
        raise WeirError("22021", f'invalid byte sequence for encoding "UTF8": {shown}') from None


# ---------------------------------------------------------------- arrays

JSONISH = (JSON, JSONB, INT2VECTOR, OIDVECTOR)  # element types whose values may be lists


def _array_out(v: Sequence[Any], t: PgType) -> str:
    et = t.element
    assert et is not None
    return carr.format_array(v, OUTPUT.get(et.oid, str), et.oid not in _ARRAY_PLAIN,
                             et.oid not in JSONISH)


def _array_in(s: str, t: PgType) -> list[Any]:
    et = t.element
    assert et is not None

    def conv(items: list[Any]) -> list[Any]:
        return [None if x is None else conv(x) if isinstance(x, list) else decode_str(x, et)
                for x in items]

    return conv(carr.parse_array(s))


def encode_text(value: Any, t: PgType) -> bytes:
    """PostgreSQL's text output for a non-NULL value of type t, as UTF-8."""
    f = OUTPUT.get(t.oid)  # array OIDs are never in OUTPUT
    if f is not None:
        if t.oid == NUMERIC and t.precision is not None:
            return cnum.numeric_out(value).encode()  # numeric(p,s) keeps its scale, as in PostgreSQL
        if t.oid == BPCHAR and t.length is not None:
            return str(value).ljust(t.length).encode()  # character(n) shows its padding
        return f(value).encode()
    if t.element is not None:
        return _array_out(value, t).encode()
    return str(value).encode()


def decode_str(s: str, t: PgType) -> Any:
    """Type t's input function of text already decoded."""
    if t.element is not None and t.oid not in _IN:
        return _array_in(s, t)
    f = _IN.get(t.oid)
    return s if f is None else f(s, t)


def decode_text(data: bytes | str, t: PgType) -> Any:
    """PostgreSQL's input function for type t (typmods applied), raising PG's errors."""
    return decode_str(data if isinstance(data, str) else utf8(data), t)


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
