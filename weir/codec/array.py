"""Array codecs for `weir.codec`: PostgreSQL's array literal and binary array format.

Arrays are (nested) Python lists; lower bounds are always 1. Element
encoders/decoders are passed in by `weir.codec`, which owns the dispatch.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Sequence
from typing import Any

from weir.errors import SqlState, WeirError

_I = struct.Struct(">i")
_HEAD, _DIM = struct.Struct(">iii"), struct.Struct(">ii")
_NULL_LEN = b"\xff\xff\xff\xff"
MAXDIM = 6
_SPECIAL = re.compile(r'[{},"\\ \t\n\r\v\f]')
_WS = " \t\n\r\v\f"
_DIMS_RE = re.compile(r"(?:\[\s*[+-]?\d+\s*(?::\s*[+-]?\d+\s*)?\]\s*)+=\s*")


def _too_many_dims(ndim: int) -> WeirError:
    return WeirError(SqlState.PROGRAM_LIMIT_EXCEEDED,
                     f"number of array dimensions ({ndim}) exceeds the maximum allowed ({MAXDIM})")


def format_array(v: Sequence[Any], out: Callable[[Any], str], quote: bool, nested: bool) -> str:
    """Array output: '{a,"c d",NULL}'; `quote` says element text may need quoting."""
    parts = []
    for x in v:
        if x is None:
            parts.append("NULL")
        elif nested and isinstance(x, list | tuple):
            parts.append(format_array(x, out, quote, nested))
        else:
            s = out(x)
            if quote and (not s or _SPECIAL.search(s) or s.lower() == "null"):
                s = '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
            parts.append(s)
    return "{" + ",".join(parts) + "}"


def shape(v: Any) -> list[int]:
    """Dimensions of a nested list; raises 2202E unless it is rectangular."""
    if not isinstance(v, list | tuple):
        return []
    dims = [len(v)]
    if v and isinstance(v[0], list | tuple):
        dims += shape(v[0])
    for x in v:
        if isinstance(x, list | tuple) != (len(dims) > 1) or (len(dims) > 1 and shape(x) != dims[1:]):
            raise WeirError("2202E", "multidimensional arrays must have array expressions with "
                            "matching dimensions")
    return dims


def _flatten(v: Any, out: list[Any]) -> list[Any]:
    for x in v:
        if isinstance(x, list | tuple):
            _flatten(x, out)
        else:
            out.append(x)
    return out


def send_array(v: Sequence[Any], elem_oid: int, send: Callable[[Any], bytes], nested: bool) -> bytes:
    """Binary array: ndim, has-null flag, element OID, (size, lbound=1) per dimension, elements."""
    dims = shape(v) if nested else [len(v)]
    if 0 in dims:
        return _HEAD.pack(0, 0, elem_oid)
    if len(dims) > MAXDIM:
        raise _too_many_dims(len(dims))
    items = _flatten(v, []) if len(dims) > 1 else v
    parts = [_HEAD.pack(len(dims), None in items, elem_oid)]
    parts += [_DIM.pack(n, 1) for n in dims]
    pack = _I.pack
    for x in items:
        if x is None:
            parts.append(_NULL_LEN)
        else:
            b = send(x)
            parts.append(pack(len(b)))
            parts.append(b)
    return b"".join(parts)


def _bad(message: str) -> WeirError:
    return WeirError(SqlState.INVALID_BINARY_REPRESENTATION, message)


def recv_array(data: bytes, elem_oid: int, elem_name: str, sent_name: str,
               recv: Callable[[bytes], Any]) -> list[Any]:
    """Decode a binary array; recv raises struct.error for a malformed element."""
    ndim, flags, oid = _HEAD.unpack_from(data)
    if ndim < 0:
        raise _bad(f"invalid number of dimensions: {ndim}")
    if ndim > MAXDIM:
        raise _too_many_dims(ndim)
    if flags not in (0, 1):
        raise _bad("invalid array flags")
    if oid != elem_oid:
        raise WeirError(SqlState.DATATYPE_MISMATCH, f"binary data has array element type {oid} "
                        f"({sent_name}) instead of expected {elem_oid} ({elem_name})")
    dims = [_DIM.unpack_from(data, 12 + 8 * i)[0] for i in range(ndim)]
    if any(n < 0 for n in dims):
        raise _bad("invalid array dimensions")
    off, total = 12 + 8 * ndim, 1 if dims else 0
    for n in dims:
        total *= n
    items: list[Any] = []
    for k in range(total):
        (n,) = _I.unpack_from(data, off)
        off += 4
        if n == -1:
            items.append(None)
            continue
        if n < 0 or off + n > len(data):
            raise struct.error("element length")
        try:
            items.append(recv(data[off:off + n]))
        except struct.error:
            raise _bad(f"improper binary format in array element {k + 1}") from None
        off += n
    if off != len(data):
        raise struct.error("trailing data")
    if not total:
        return []
    for n in reversed(dims[1:]):
        items = [items[i:i + n] for i in range(0, len(items), n)]
    return items


def _malformed(s: str, detail: str) -> WeirError:
    return WeirError(SqlState.INVALID_TEXT_REPRESENTATION, f'malformed array literal: "{s}"', detail)


def _element(s: str, i: int) -> tuple[str | None, int]:
    """One quoted or unquoted element starting at s[i]; returns (text or None, next index)."""
    n = len(s)
    quoted = s[i] == '"'
    if quoted:
        i += 1
    buf: list[str] = []
    keep = 0  # length of buf without trailing unescaped whitespace
    escaped = False
    while True:
        if i >= n:
            raise _malformed(s, "Unexpected end of input.")
        c = s[i]
        if c == "\\":
            i += 1
            if i >= n:
                raise _malformed(s, "Unexpected end of input.")
            buf.append(s[i])
            keep = len(buf)
            escaped = True
        elif quoted:
            if c == '"':
                return "".join(buf), i + 1
            buf.append(c)
            keep = len(buf)
        elif c in ",}":
            text = "".join(buf[:keep])
            return (None if not escaped and text.lower() == "null" else text), i
        elif c in '{"':
            raise _malformed(s, "Unexpected array element." if c == '"' else 'Unexpected "{" character.')
        else:
            buf.append(c)
            if c not in _WS:
                keep = len(buf)
        i += 1


def parse_array(s: str) -> list[Any]:
    """Nested lists of element strings (None for NULL) from an array literal."""
    n = len(s)

    def skip(i: int) -> int:
        while i < n and s[i] in _WS:
            i += 1
        return i

    def level(i: int, depth: int) -> tuple[list[Any], int]:
        items: list[Any] = []
        sublists: bool | None = None
        i = skip(i + 1)
        if i < n and s[i] == "}" and depth == 0:
            return items, i + 1
        while True:
            i = skip(i)
            if i >= n:
                raise _malformed(s, "Unexpected end of input.")
            c = s[i]
            if c == "{":
                if sublists is False:
                    raise _malformed(s, 'Unexpected "{" character.')
                sublists = True
                if depth + 1 >= MAXDIM:
                    raise _too_many_dims(depth + 2)
                sub, i = level(i, depth + 1)
                items.append(sub)
            elif c in ",}":
                raise _malformed(s, f'Unexpected "{c}" character.')
            elif sublists:
                raise _malformed(s, "Unexpected array element.")
            else:
                sublists = False
                item, i = _element(s, i)
                items.append(item)
            i = skip(i)
            if i >= n:
                raise _malformed(s, "Unexpected end of input.")
            if s[i] == "}":
                return items, i + 1
            if s[i] != ",":
                raise _malformed(s, "Unexpected array element.")
            i += 1

    i = skip(0)
    if i < n and s[i] == "[":
        m = _DIMS_RE.match(s, i)
        if m is None:
            raise _malformed(s, 'Missing "=" after array dimensions.')
        lowers = re.findall(r"\[\s*([+-]?\d+)\s*:", m.group(0))
        if any(int(lower) != 1 for lower in lowers):  # weir's arrays start at 1 (they would print without it)
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "arrays with a lower bound other than 1 are not supported")
        i = m.end()
    if i >= n or s[i] != "{":
        raise _malformed(s, 'Array value must start with "{" or dimension information.')
    result, i = level(i, 0)
    if skip(i) < n:
        raise _malformed(s, "Junk after closing right brace.")
    try:
        shape(result)
    except WeirError:
        raise _malformed(
            s, "Multidimensional arrays must have sub-arrays with matching dimensions.") from None
    return result
