"""json/jsonb codecs for `weir.codec`.

json values keep their input text (validated). jsonb values are normalized
the way PostgreSQL prints jsonb: object keys ordered by byte length then
bytes, duplicate keys keep the last value, ', ' and ': ' separators, numbers
printed as numeric ('1e2' -> 100, '-0' -> 0) and strings re-escaped.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from weir.codec.numeric import float8_out, numeric_out
from weir.errors import SqlState, WeirError

_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"',
            "\\": "\\\\"}
_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f"\\]')
_SURROGATE = re.compile("[\ud800-\udfff]")
_HIGH_HIGH = re.compile("[\ud800-\udbff][\ud800-\udbff]")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_WORD = re.compile(r"[A-Za-z0-9_\u0080-\U0010ffff]+")
_GLUED = re.compile(r"[-+.A-Za-z0-9_\u0080-\U0010ffff]+\Z")
_DECODER = json.JSONDecoder(parse_float=Decimal, parse_int=Decimal,
                            parse_constant=lambda c: _bad_constant(c))


class _Constant(ValueError):
    def __init__(self, token: str) -> None:
        self.token = token


def _bad_constant(c: str) -> Any:
    raise _Constant(c)


def _syntax(detail: str) -> WeirError:
    return WeirError(SqlState.INVALID_TEXT_REPRESENTATION, "invalid input syntax for type json", detail)


def _lex(rest: str) -> tuple[str, bool]:
    """The JSON token at the start of rest, as PostgreSQL's lexer cuts it, and its validity."""
    if rest[0] == '"':
        m = _STRING.match(rest)
        return (m.group() if m else rest), m is not None
    m = _NUMBER.match(rest)
    if m is not None:
        word = _WORD.match(rest, m.end())
        return (rest[: word.end()], False) if word else (m.group(), True)
    word = _WORD.match(rest)
    if word is None:
        return rest[0], rest[0] in "{}[],:"
    return word.group(), word.group() in ("true", "false", "null")


def _open_bracket(doc: str) -> str:
    stack, in_string, escaped = [], False, False
    for c in doc:
        if in_string:
            escaped, in_string = (not escaped and c == "\\"), in_string and (escaped or c != '"')
        elif c == '"':
            in_string = True
        elif c in "[{":
            stack.append(c)
        elif c in "]}" and stack:
            stack.pop()
    return stack[-1] if stack else ""


def _detail(e: json.JSONDecodeError) -> str:
    """PostgreSQL's json parser error detail for a Python JSONDecodeError."""
    doc, pos, msg = e.doc, e.pos, e.msg
    if msg.startswith("Invalid control character"):
        return f"Character with value 0x{ord(doc[pos]):02x} must be escaped."
    if msg.startswith("Invalid \\uXXXX"):
        return '"\\u" must be followed by four hexadecimal digits.'
    if msg.startswith("Invalid \\escape"):
        return f'Escape sequence "{doc[pos:pos + 2]}" is invalid.'
    if msg.startswith("Unterminated string"):
        return f'Token "{doc[pos:]}" is invalid.'
    rest = doc[pos:].lstrip(" \t\n\r")
    if not rest:
        return "The input string ended unexpectedly."
    tok, valid = _lex(rest)
    glued = _GLUED.search(doc, 0, pos) if rest == doc[pos:] else None
    if glued is not None and _WORD.match(rest):  # e.g. '01' or '1x': one bad token
        tok, valid = glued.group() + _WORD.match(rest).group(), False  # type: ignore[union-attr]
    if not valid:
        return f'Token "{tok}" is invalid.'
    before = doc[:pos].rstrip(" \t\n\r")[-1:]
    if msg.startswith("Expecting property name"):
        expected = 'string or "}"' if before == "{" else "string"
    elif msg.startswith("Expecting ':'"):
        expected = '":"'
    elif msg.startswith("Expecting ','"):
        expected = '"," or "]"' if _open_bracket(doc[:pos]) == "[" else '"," or "}"'
    elif msg.startswith("Extra data"):
        expected = "end of input"
    else:
        expected = 'array element or "]"' if before == "[" else "JSON value"
    return f'Expected {expected}, but found "{tok}".'


def parse(s: str) -> Any:
    """Parse JSON text (numbers as Decimal), raising PostgreSQL's json errors."""
    try:
        return _DECODER.decode(s)
    except _Constant as e:
        raise _syntax(f'Token "{e.token}" is invalid.') from None
    except json.JSONDecodeError as e:
        raise _syntax(_detail(e)) from None
    except RecursionError:
        raise WeirError("54001", "stack depth limit exceeded") from None


def _check_surrogates(s: str) -> None:
    if _SURROGATE.search(s):
        if _HIGH_HIGH.search(s):
            raise _syntax("Unicode high surrogate must not follow a high surrogate.")
        raise _syntax("Unicode low surrogate must follow a high surrogate.")


def json_in(s: str) -> str:
    """json input: validated, kept as written."""
    parse(s)
    return s


def _quote(s: str) -> str:
    if _NEEDS_ESCAPE.search(s) is None:
        return f'"{s}"'
    if "\x00" in s:
        raise WeirError("22P05", "unsupported Unicode escape sequence",
                        "\\u0000 cannot be converted to text.")
    return '"' + _NEEDS_ESCAPE.sub(
        lambda m: _ESCAPES.get(m.group(), f"\\u{ord(m.group()):04x}"), s
    ) + '"'


def _key(k: str) -> tuple[int, bytes]:
    b = k.encode("utf-8", "surrogatepass")
    return len(b), b


def dumps(o: Any) -> str:
    """PostgreSQL's jsonb text output for a parsed JSON value."""
    if isinstance(o, str):
        return _quote(o)
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if isinstance(o, Decimal | int):
        return numeric_out(o)
    if isinstance(o, float):
        return numeric_out(Decimal(float8_out(o)))
    if isinstance(o, dict):
        items = sorted(((str(k), v) for k, v in o.items()), key=lambda kv: _key(kv[0]))
        return "{" + ", ".join(f"{_quote(k)}: {dumps(v)}" for k, v in items) + "}"
    if hasattr(o, "asDict"):  # pyspark Row (struct columns)
        return dumps(o.asDict(recursive=True))
    if isinstance(o, list | tuple):
        return "[" + ", ".join(dumps(x) for x in o) + "]"
    return _quote(str(o))


def jsonb_in(s: str) -> str:
    """jsonb input: parsed and printed in PostgreSQL's normalized jsonb form."""
    out = dumps(parse(s))
    if "\\u" in s:
        _check_surrogates(out)
    return out
