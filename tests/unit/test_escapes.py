"""Syntax PostgreSQL rejects and sqlglot lets pass: Unicode escapes in E'...' and U&'...' constants
(sqlglot dropped the backslash of one it could not decode: E'\\u061' was 'u061')."""

from __future__ import annotations

import pytest

from weir.errors import WeirError
from weir.sql import parse

BAD = [
    (r"SELECT U&'wrong: \061'", "42601", "invalid Unicode escape"),
    (r"SELECT U&'wrong: \+0061'", "42601", "invalid Unicode escape"),
    (r"SELECT U&'wrong: \db99'", "42601", "invalid Unicode surrogate pair"),
    (r"SELECT U&'wrong: \db99xy'", "42601", "invalid Unicode surrogate pair"),
    (r"SELECT U&'wrong: \db99\\'", "42601", "invalid Unicode surrogate pair"),
    (r"SELECT U&'wrong: \db99\0061'", "42601", "invalid Unicode surrogate pair"),
    (r"SELECT U&'wrong: \+2FFFFF'", "42601", "invalid Unicode escape value"),
    (r"SELECT E'wrong: \u061'", "22025", "invalid Unicode escape"),
    (r"SELECT E'wrong: \U0061'", "22025", "invalid Unicode escape"),
    (r"SELECT E'wrong: \udb99'", "42601", "invalid Unicode surrogate pair"),
    (r"SELECT E'wrong: \udb99\u0061'", "42601", "invalid Unicode surrogate pair"),
    (r"SELECT E'wrong: \U002FFFFF'", "42601", "invalid Unicode escape value"),
]

GOOD = [r"SELECT U&'d\0061t\+000061'", r"SELECT E'\u00e9\U0001F600 \\u061 \x41 \''", r"SELECT E'\uD83D\uDE00'",
        r"SELECT U&'\D83D\DE00'", r"SELECT 'not \u061 an escape string'", r"SELECT U&'d!0061' UESCAPE '!'"]


@pytest.mark.parametrize("sql,state,message", BAD)
def test_bad_unicode_escapes_are_postgres_errors(sql: str, state: str, message: str) -> None:
    for check in (parse.parse_statement, parse.split):
        with pytest.raises(WeirError) as info:
            check(sql)
        assert (info.value.sqlstate, info.value.message) == (state, message)


@pytest.mark.parametrize("sql", GOOD)
def test_good_unicode_escapes_pass(sql: str) -> None:
    parse.split(sql)
    parse.parse_statement(sql)


@pytest.mark.parametrize("sql", ["SELECT rank() OVER (PARTITION BY a, ORDER BY b) FROM t", "SELECT a, FROM t",
                                 "SELECT f(a,) FROM t", "SELECT a FROM t WHERE a IN (1, 2,)"])
def test_a_dangling_comma_is_a_syntax_error(sql: str) -> None:
    """sqlglot's parser let a comma with nothing after it pass (PostgreSQL: 42601)."""
    with pytest.raises(WeirError) as info:
        parse.parse_statement(sql)
    assert info.value.sqlstate == "42601"
