"""CREATE / ALTER / DROP DURABLE SUBSCRIPTION, ACKNOWLEDGE DURABLE SUBSCRIPTION ... UP TO
and SUBSCRIBE USING DURABLE SUBSCRIPTION (issue 11, part 6)."""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from weir.errors import SqlState, WeirError
from weir.sql import parse_words
from weir.sql import statements as st
from weir.sql.parse_holds import interval_text

_NAME = parse_words.NAME_PATTERN
_CREATE = re.compile(
    rf"^CREATE\s+DURABLE\s+SUBSCRIPTION\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?(?P<name>{_NAME})"
    r"(?:\s+IN\s+CLUSTER\s+(?P<cluster>\"(?:[^\"]|\"\")+\"|[\w$]+))?"
    r"\s+WITH\s*\((?P<opts>(?:[^()']|'(?:[^']|'')*')*)\)\s+AS\s+(?P<query>.+?)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL)
_ALTER = re.compile(
    rf"^ALTER\s+DURABLE\s+SUBSCRIPTION\s+(?P<name>{_NAME})\s+(?:(?P<reset>RESET)|RENAME\s+TO\s+(?P<new>{_NAME}))"
    r"\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_ACK = re.compile(
    rf"^ACKNOWLEDGE\s+DURABLE\s+SUBSCRIPTION\s+(?P<name>{_NAME})\s+UP\s+TO\s+(?P<t>.+?)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL)
_USING = re.compile(rf"^USING\s+DURABLE\s+SUBSCRIPTION\s+(?P<name>{_NAME})\s*$", re.IGNORECASE | re.DOTALL)
_OPTION = re.compile(r"^(?P<name>ACKNOWLEDGE\s+WITHIN|START\s+AT)\s*(?:=\s*)?(?P<value>.+)$",
                     re.IGNORECASE | re.DOTALL)
_SYNOPSIS = ("CREATE DURABLE SUBSCRIPTION name [IN CLUSTER cluster] WITH (ACKNOWLEDGE WITHIN 'interval' "
             "[, START AT time]) AS query")


def _expr(text: str, what: str) -> exp.Expression:
    try:
        return sqlglot.parse_one(text, read="postgres")
    except (ParseError, TokenError):
        raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error in {what}: {text}") from None


def parse_create(text: str) -> st.Statement:
    m = _CREATE.match(text.strip())
    if m is None:
        raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error in CREATE DURABLE SUBSCRIPTION: {_SYNOPSIS}")
    within, start_at = None, None
    for opt in parse_words.split_commas(m.group("opts")):
        if not opt.strip():
            continue
        om = _OPTION.match(opt.strip())
        if om is None:
            raise WeirError(SqlState.SYNTAX_ERROR, f"unknown DURABLE SUBSCRIPTION option: {opt.strip()} "
                                                   "(known: ACKNOWLEDGE WITHIN, START AT)")
        if om.group("name").upper().startswith("ACK"):
            within = interval_text(om.group("value"), "ACKNOWLEDGE WITHIN")
        else:
            start_at = _expr(om.group("value"), "START AT")
    if within is None:
        raise WeirError(SqlState.SYNTAX_ERROR, "CREATE DURABLE SUBSCRIPTION needs WITH (ACKNOWLEDGE WITHIN "
                                               "'interval'): how long the subscription waits for an acknowledgement")
    query_text = m.group("query")
    q = _expr(query_text, "the durable subscription's query")
    if not isinstance(q, exp.Query):
        raise WeirError(SqlState.SYNTAX_ERROR, "a durable subscription is AS a query (SELECT ...)")
    cluster = parse_words.ident(m.group("cluster")) if m.group("cluster") else None
    return st.CreateDurableSubscription(text, parse_words.name_parts(m.group("name")), cluster, within,
                                        start_at, q, query_text, bool(m.group("ine")))


def parse_alter(text: str) -> st.Statement:
    m = _ALTER.match(text.strip())
    if m is None:
        raise WeirError(SqlState.SYNTAX_ERROR,
                        "syntax error in ALTER DURABLE SUBSCRIPTION: ALTER DURABLE SUBSCRIPTION name RESET | "
                        "RENAME TO name")
    name = parse_words.name_parts(m.group("name"))
    if m.group("reset"):
        return st.AlterDurableSubscription(text, name, "reset")
    return st.AlterDurableSubscription(text, name, "rename", parse_words.ident(m.group("new")))


def parse_acknowledge(text: str) -> st.Statement:
    m = _ACK.match(text.strip())
    if m is None:
        raise WeirError(SqlState.SYNTAX_ERROR,
                        "syntax error in ACKNOWLEDGE: ACKNOWLEDGE DURABLE SUBSCRIPTION name UP TO time")
    return st.AcknowledgeDurableSubscription(text, parse_words.name_parts(m.group("name")),
                                             _expr(m.group("t"), "UP TO"))


def using(body: str) -> list[str] | None:
    """SUBSCRIBE's body `USING DURABLE SUBSCRIPTION name`: the name, else None."""
    m = _USING.match(body.strip())
    return parse_words.name_parts(m.group("name")) if m is not None else None
