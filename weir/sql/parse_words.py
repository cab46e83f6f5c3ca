"""Word-level helpers for the statements weir parses itself (sqlglot leaves them as
commands): splitting into words, identifiers, dotted names, string literals."""

from __future__ import annotations

import re

from weir.errors import SqlState, WeirError

WS = re.compile(r"\s+")
# a possibly qualified, possibly quoted name, as a regex fragment (the statement parsers' NAME)
NAME_PATTERN = r'(?:"(?:[^"]|"")+"|[\w$]+)(?:\s*\.\s*(?:"(?:[^"]|"")+"|[\w$]+))*'


def split_words(text: str) -> list[str]:
    return WS.split(text.strip().rstrip(";").strip())


def ident(word: str) -> str:
    if len(word) >= 2 and word[0] == '"' and word[-1] == '"':
        return word[1:-1].replace('""', '"')
    return word.lower()


def name_parts(text: str) -> list[str]:
    """Split a possibly-quoted dotted name: a."B".c -> ['a', 'B', 'c']."""
    parts, cur, quoted = [], "", False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            if quoted and i + 1 < len(text) and text[i + 1] == '"':
                cur += '"'
                i += 1
            else:
                quoted = not quoted
        elif ch == "." and not quoted:
            parts.append(cur)
            cur = ""
        else:
            cur += ch if quoted else ch.lower()
        i += 1
    parts.append(cur)
    if any(p == "" for p in parts):
        raise WeirError(SqlState.SYNTAX_ERROR, f"invalid name: {text}")
    return parts


def string_literal(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == "'" and text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if text.upper().startswith("E'") and text.endswith("'"):
        return text[2:-1].replace("''", "'").replace("\\'", "'")
    return text


def split_commas(raw: str) -> list[str]:
    out, cur, q = [], "", False
    for ch in raw:
        if ch == "'":
            q = not q
        if ch == "," and not q:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out
