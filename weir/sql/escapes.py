"""Unicode escapes in E'...' and U&'...' string constants, checked as PostgreSQL checks
them. sqlglot's tokenizer drops the backslash of an escape it cannot decode (E'\\u061'
became 'u061'); PostgreSQL rejects it, so weir does too, before the statement runs."""

from __future__ import annotations

import re

from sqlglot.tokens import TokenType

from weir.errors import SqlState, WeirError

_MAY_HAVE = re.compile(r"[eE]'|[uU]&'")
_HEX = frozenset("0123456789abcdefABCDEF")


def _error(sqlstate: str, message: str) -> WeirError:
    return WeirError(sqlstate, message)


def _code_point(value: int, pending_high: int | None) -> int | None:
    """The high surrogate still waiting for its low half, or None; raises for a bad value."""
    if 0xDC00 <= value <= 0xDFFF:
        if pending_high is None:
            raise _error(SqlState.SYNTAX_ERROR, "invalid Unicode surrogate pair")
        return None
    if pending_high is not None:
        raise _error(SqlState.SYNTAX_ERROR, "invalid Unicode surrogate pair")
    if 0xD800 <= value <= 0xDBFF:
        return value
    if value > 0x10FFFF or value == 0:
        raise _error(SqlState.SYNTAX_ERROR, "invalid Unicode escape value")
    return None


def check_escape_string(body: str) -> None:
    """E'...' (body without quotes): \\uXXXX and \\UXXXXXXXX must be whole and valid."""
    i, high = 0, None
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            kind = body[i + 1]
            if kind in "uU":
                width = 4 if kind == "u" else 8
                digits = body[i + 2:i + 2 + width]
                if len(digits) < width or any(d not in _HEX for d in digits):
                    raise WeirError(SqlState.INVALID_ESCAPE_SEQUENCE, "invalid Unicode escape",
                                    hint="Unicode escapes must be \\uXXXX or \\UXXXXXXXX.")
                high = _code_point(int(digits, 16), high)
                i += 2 + width
                continue
            if high is not None:
                raise _error(SqlState.SYNTAX_ERROR, "invalid Unicode surrogate pair")
            i += 2
            continue
        if high is not None:
            raise _error(SqlState.SYNTAX_ERROR, "invalid Unicode surrogate pair")
        i += 1
    if high is not None:
        raise _error(SqlState.SYNTAX_ERROR, "invalid Unicode surrogate pair")


def check_unicode_string(body: str, escape: str = "\\") -> str:
    """U&'...' (body without quotes): escape + 4 hex digits or escape + '+' + 6 hex digits,
    two escapes for the escape character itself. Returns the text it stands for (sqlglot
    reads only decimal digits after an escape, and not the six-digit form)."""
    i, high, out = 0, None, []
    while i < len(body):
        if body[i] != escape:
            if high is not None:
                raise _error(SqlState.SYNTAX_ERROR, "invalid Unicode surrogate pair")
            out.append(body[i])
            i += 1
            continue
        if body[i + 1:i + 2] == escape:
            if high is not None:
                raise _error(SqlState.SYNTAX_ERROR, "invalid Unicode surrogate pair")
            out.append(escape)
            i += 2
            continue
        if body[i + 1:i + 2] == "+":
            digits, width, step = body[i + 2:i + 8], 6, 8
        else:
            digits, width, step = body[i + 1:i + 5], 4, 5
        if len(digits) < width or any(d not in _HEX for d in digits):
            raise _error(SqlState.SYNTAX_ERROR, "invalid Unicode escape")
        value = int(digits, 16)
        pending = _code_point(value, high)
        if pending is None:
            out.append(chr(0x10000 + ((high - 0xD800) << 10) + (value - 0xDC00)) if high is not None else chr(value))
        high = pending
        i += step
    if high is not None:
        raise _error(SqlState.SYNTAX_ERROR, "invalid Unicode surrogate pair")
    return "".join(out)


def unicode_escape_character(given: str | None) -> str:
    """The character UESCAPE names (backslash without one); PostgreSQL's rules for it."""
    if given is None:
        return "\\"
    if len(given) != 1 or given in _HEX or given in "+'\" \t\n\r\f":
        raise _error(SqlState.SYNTAX_ERROR, f"invalid Unicode escape character at or near \"'{given}'\"")
    return given


def check(sql: str, tokens: list) -> None:
    """Raise PostgreSQL's error for the first bad Unicode escape in a string constant."""
    if not _MAY_HAVE.search(sql):
        return
    for k, tok in enumerate(tokens):
        raw = sql[tok.start:tok.end + 1]
        if tok.token_type == TokenType.BYTE_STRING and raw[:2] in ("E'", "e'"):
            check_escape_string(raw[2:-1])
        elif tok.token_type == TokenType.UNICODE_STRING and raw[:3] in ("U&'", "u&'"):
            following = tokens[k + 1] if k + 1 < len(tokens) else None
            given = None
            if following is not None and following.text.upper() == "UESCAPE":
                named = tokens[k + 2] if k + 2 < len(tokens) else None
                given = named.text if named is not None and named.token_type == TokenType.STRING else ""
            check_unicode_string(raw[3:-1], unicode_escape_character(given))
