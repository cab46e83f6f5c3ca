"""GRANT / REVOKE of object privileges, ALTER ... OWNER TO, SHOW PRIVILEGES (issue 11,
part 8); role grants (GRANT role TO role) stay in weir.sql.parse_roles."""

from __future__ import annotations

import re

from weir.errors import SqlState, WeirError
from weir.sql import parse_words
from weir.sql import statements as st

_NAME = parse_words.NAME_PATTERN
_TYPES = r"TABLE|VIEW|MATERIALIZED\s+VIEW|SOURCE|DATABASE|SCHEMA|CLUSTER"
_GRANT = re.compile(
    rf"^(?P<verb>GRANT|REVOKE)\s+(?P<privs>.+?)\s+ON\s+(?:(?P<type>{_TYPES})\s+)?(?P<names>{_NAME}(?:\s*,\s*{_NAME})*)"
    rf"\s+(?:TO|FROM)\s+(?P<grantees>{_NAME}(?:\s*,\s*{_NAME})*)\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_OWNER = re.compile(
    rf"^ALTER\s+(?P<type>{_TYPES}|INDEX|HOLD|DURABLE\s+SUBSCRIPTION)\s+(?P<name>{_NAME})\s+OWNER\s+TO\s+"
    rf"(?P<role>{_NAME})\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_SHOW = re.compile(r"^SHOW\s+PRIVILEGES(?:\s+ON\s+(?P<on>TABLES|DATABASES|SCHEMAS|CLUSTERS))?"
                   rf"(?:\s+FOR\s+(?P<role>{_NAME}))?\s*;?\s*$", re.IGNORECASE | re.DOTALL)
PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "USAGE", "CREATE")


def _kind(text: str | None) -> str:
    return " ".join(text.lower().split()) if text else "table"


def parse_grant(text: str) -> st.Statement:
    m = _GRANT.match(text.strip())
    if m is None:
        raise WeirError(SqlState.SYNTAX_ERROR,
                        "syntax error in GRANT: GRANT privilege [, ...] ON [TABLE | VIEW | MATERIALIZED VIEW | "
                        "SOURCE | DATABASE | SCHEMA | CLUSTER] name [, ...] TO role [, ...]")
    words = [w.strip().upper() for w in m.group("privs").split(",")]
    if words in (["ALL"], ["ALL PRIVILEGES"]):
        privs: list[str] = []
    else:
        for w in words:
            if w not in PRIVILEGES:
                raise WeirError(SqlState.SYNTAX_ERROR, f'unrecognized privilege type "{w.lower()}"')
        privs = words
    names = [parse_words.name_parts(n.strip()) for n in parse_words.split_commas(m.group("names"))]
    grantees = [g.strip() for g in parse_words.split_commas(m.group("grantees"))]
    grantees = ["PUBLIC" if g.upper() == "PUBLIC" else parse_words.ident(g) for g in grantees]
    return st.GrantPrivileges(text, privs, _kind(m.group("type")), names, grantees, m.group("verb").upper() == "REVOKE")


def parse_alter_owner(text: str) -> st.Statement | None:
    m = _OWNER.match(text.strip())
    if m is None:
        return None
    return st.AlterOwner(text, _kind(m.group("type")), parse_words.name_parts(m.group("name")),
                         parse_words.ident(m.group("role")))


def parse_show_privileges(text: str) -> st.Statement:
    m = _SHOW.match(text.strip())
    if m is None:
        raise WeirError(SqlState.SYNTAX_ERROR,
                        "syntax error in SHOW PRIVILEGES: SHOW PRIVILEGES [ON TABLES | DATABASES | SCHEMAS | "
                        "CLUSTERS] [FOR role]")
    return st.ShowPrivileges(text, m.group("on").lower() if m.group("on") else None,
                             parse_words.ident(m.group("role")) if m.group("role") else None)
