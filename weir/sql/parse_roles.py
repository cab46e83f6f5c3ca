"""Roles and their options, GRANT/REVOKE of role membership, and DROP of the objects
weir parses itself."""

from __future__ import annotations

import re

from weir.errors import SqlState, WeirError
from weir.sql import statements as st
from weir.sql.parse_words import ident, name_parts, split_words, string_literal


def parse_drop(text: str, kind: str, rest: list[str], *, qualified: bool = True) -> st.Statement:
    """DROP <kind> [IF EXISTS] name [, ...] [CASCADE | RESTRICT]."""
    if_exists = len(rest) > 1 and rest[0].upper() == "IF" and rest[1].upper() == "EXISTS"
    if if_exists:
        rest = rest[2:]
    cascade = bool(rest) and rest[-1].upper() == "CASCADE"
    rest = [w for w in rest if w.upper() not in ("CASCADE", "RESTRICT")]
    names = [n.strip() for n in " ".join(rest).split(",") if n.strip()]
    parts = [name_parts(n) if qualified else [ident(n)] for n in names]
    return st.Drop(text, kind, parts, if_exists, cascade)


def role_options(words: list[str]) -> st.RoleOptions:
    opts = st.RoleOptions()
    i = 0
    if words and words[0].upper() == "WITH":
        i = 1
    while i < len(words):
        w = words[i].upper()
        if w == "SUPERUSER":
            opts.superuser = True
        elif w == "NOSUPERUSER":
            opts.superuser = False
        elif w == "LOGIN":
            opts.login = True
        elif w == "NOLOGIN":
            opts.login = False
        elif w == "INHERIT":
            opts.inherit = True
        elif w == "NOINHERIT":
            opts.inherit = False
        elif w == "PASSWORD":
            i += 1
            if i >= len(words):
                raise WeirError(SqlState.SYNTAX_ERROR, "syntax error: PASSWORD needs a value")
            # the password may contain spaces: take the quoted literal
            rest = " ".join(words[i:])
            m = re.match(r"^('(?:[^']|'')*')(.*)$", rest, re.DOTALL)
            if m:
                opts.password = string_literal(m.group(1))
                words = words[:i] + split_words(m.group(2)) if m.group(2).strip() else words[:i]
                i -= 1
            elif words[i].upper() == "NULL":
                opts.password_null = True
            else:
                raise WeirError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{words[i]}"')
        else:
            raise WeirError(SqlState.SYNTAX_ERROR, f'unrecognized role option "{words[i]}"')
        i += 1
    return opts


def parse_grant(text: str, words: list[str], upper: list[str], revoke: bool) -> st.Statement:
    sep = "FROM" if revoke else "TO"
    if " ON " in f" {' '.join(upper)} ":
        from weir.sql.parse_privileges import parse_grant as parse_object_grant

        return parse_object_grant(text)
    if sep not in upper:
        raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error in {'REVOKE' if revoke else 'GRANT'}")
    k = upper.index(sep)
    roles = [ident(r.strip()) for r in " ".join(words[1:k]).split(",") if r.strip()]
    members = [ident(m.strip()) for m in " ".join(words[k + 1:]).split(",") if m.strip()]
    if not roles or not members:
        raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error in {'REVOKE' if revoke else 'GRANT'}")
    return st.GrantRole(text, roles, members, revoke)
