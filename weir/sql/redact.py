"""Redaction of SQL text for those who may see what ran but not the data in it
(mz_monitor, redacted_create_sql): every literal and parameter becomes '<REDACTED>'."""

from __future__ import annotations

import re

REDACTED = "'<REDACTED>'"

# Scanned left to right so quoted identifiers and comments are skipped whole.
_TOKENS = re.compile(
    r"""(?P<ident>"(?:[^"]|"")*")"""
    r"""|(?P<comment>--[^\n]*|/\*.*?\*/)"""
    r"""|(?P<string>(?<![\w$])[eExXbBnN]?'(?:[^'\\]|''|\\.)*')"""
    r"""|(?P<dollar>\$(?P<tag>[A-Za-z_]\w*)?\$.*?\$(?P=tag)?\$)"""
    r"""|(?P<param>\$\d+)"""
    r"""|(?P<number>(?<![\w$.])(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?![\w$]))""",
    re.DOTALL)


def _sub(m: re.Match[str]) -> str:
    return m.group(0) if m.lastgroup in ("ident", "comment") else REDACTED


def redact(sql: str) -> str:
    """`sql` with string, number and dollar-quoted literals and $n parameters replaced."""
    return _TOKENS.sub(_sub, sql)
