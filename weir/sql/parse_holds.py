"""CREATE HOLD, ALTER HOLD ... ADVANCE [TO t] | RENAME TO, DROP HOLD (design 003), and
RETAIN HISTORY (what Materialize shipped): WITH (RETAIN HISTORY FOR 'interval') on CREATE
TABLE / SOURCE / MATERIALIZED VIEW / INDEX, ALTER ... SET / RESET (RETAIN HISTORY)."""

from __future__ import annotations

import re

import sqlglot
from sqlglot.errors import ParseError, TokenError

from weir.errors import SqlState, WeirError
from weir.sql import parse_words
from weir.sql import statements as st

_NAME = parse_words.NAME_PATTERN
_CREATE = re.compile(
    rf"^CREATE\s+HOLD\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?(?P<name>{_NAME})\s+ON\s+(?P<objects>{_NAME}(?:\s*,\s*{_NAME})*)"
    r"(?:\s+AT\s+(?P<at>.+?))?(?:\s+WITH\s*\((?P<opts>.*)\))?\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_ALTER = re.compile(
    rf"^ALTER\s+HOLD\s+(?P<name>{_NAME})\s+(?:(?P<advance>ADVANCE)(?:\s+TO\s+(?P<to>.+?))?"
    rf"|RENAME\s+TO\s+(?P<new>{_NAME}))\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_MAX_LAG = re.compile(r"^MAX\s+LAG\s*(?:=\s*)?(?P<value>.+)$", re.IGNORECASE | re.DOTALL)


def _expr(text: str, what: str) -> sqlglot.exp.Expression:
    try:
        return sqlglot.parse_one(text, read="postgres")
    except (ParseError, TokenError):
        raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error in {what}: {text}") from None


def interval_text(value: str, option: str = "MAX LAG") -> str:
    """An interval option's value: an interval string, optionally cast ('3h'::INTERVAL,
    INTERVAL '3h')."""
    v = value.strip()
    m = re.match(r"^(?:INTERVAL\s+)?'((?:[^']|'')*)'(?:\s*::\s*INTERVAL)?$", v, re.IGNORECASE)
    if m is None:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                        f"invalid {option}: {v} (an interval, e.g. {option} = '3h')")
    return m.group(1).replace("''", "'")


def parse_create_hold(text: str) -> st.Statement:
    m = _CREATE.match(text.strip())
    if m is None:
        raise WeirError(SqlState.SYNTAX_ERROR,
                        "syntax error in CREATE HOLD: CREATE HOLD name ON object [, ...] [AT time] "
                        "[WITH (MAX LAG = interval)]")
    objects = [parse_words.name_parts(o.strip()) for o in parse_words.split_commas(m.group("objects"))]
    max_lag = None
    for opt in parse_words.split_commas(m.group("opts") or ""):
        if not opt.strip():
            continue
        om = _MAX_LAG.match(opt.strip())
        if om is None:
            raise WeirError(SqlState.SYNTAX_ERROR, f"unknown HOLD option: {opt.strip()} (known: MAX LAG)")
        max_lag = interval_text(om.group("value"))
    at = _expr(m.group("at"), "AT") if m.group("at") else None
    return st.CreateHold(text, parse_words.name_parts(m.group("name")), objects, at, max_lag, bool(m.group("ine")))


def parse_alter_hold(text: str) -> st.Statement:
    m = _ALTER.match(text.strip())
    if m is None:
        raise WeirError(SqlState.SYNTAX_ERROR,
                        "syntax error in ALTER HOLD: ALTER HOLD name ADVANCE [TO time] | RENAME TO name")
    if m.group("advance"):
        to = _expr(m.group("to"), "ADVANCE TO") if m.group("to") else None
        return st.AlterHold(text, parse_words.name_parts(m.group("name")), "advance", to)
    return st.AlterHold(text, parse_words.name_parts(m.group("name")), "rename", None, parse_words.ident(m.group("new")))


_RETAIN_OPTION = re.compile(r"\bWITH\s*\(\s*RETAIN\s+HISTORY\s*(?:=\s*)?FOR\s+'(?P<value>(?:[^']|'')*)'\s*\)",
                           re.IGNORECASE)
_RETAINABLE = r"TABLE|SOURCE|MATERIALIZED\s+VIEW|INDEX"
_ALTER_RETAIN = re.compile(
    rf"^ALTER\s+(?P<kind>{_RETAINABLE})\s+(?P<name>{_NAME})\s+(?:SET\s*\(\s*RETAIN\s+HISTORY\s*(?:=\s*)?FOR\s+"
    r"'(?P<value>(?:[^']|'')*)'\s*\)|(?P<reset>RESET\s*\(\s*RETAIN\s+HISTORY\s*\)))\s*;?\s*$",
    re.IGNORECASE | re.DOTALL)


def take_retain_history(text: str) -> tuple[str, str | None]:
    """CREATE ... WITH (RETAIN HISTORY FOR 'x'): the statement without the option, and x."""
    if not re.match(rf"^\s*CREATE\s+(?:DEFAULT\s+)?(?:{_RETAINABLE})\b", text, re.IGNORECASE):
        return text, None
    m = _RETAIN_OPTION.search(text)
    if m is None or text[:m.start()].count("'") % 2:
        return text, None
    return text[:m.start()] + text[m.end():], m.group("value").replace("''", "'")


def parse_alter_retain_history(text: str) -> st.Statement | None:
    m = _ALTER_RETAIN.match(text.strip())
    if m is None:
        return None
    kind = " ".join(m.group("kind").lower().split())
    value = None if m.group("reset") else m.group("value").replace("''", "'")
    return st.AlterRetainHistory(text, kind, parse_words.name_parts(m.group("name")), value)
