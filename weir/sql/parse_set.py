"""SET, RESET-adjacent forms, SET TRANSACTION and ALTER SYSTEM: what sqlglot leaves as
commands or parses loosely, read word by word."""

from __future__ import annotations

import re

from sqlglot import exp

from weir.errors import SqlState, WeirError
from weir.sql import statements as st
from weir.sql.dialect import Weir
from weir.sql.parse_words import ident, split_commas, string_literal

_DIALECT = Weir()


def set_from_expr(text: str, expr: exp.Set) -> st.Statement:
    items = expr.expressions
    if len(items) != 1:
        raise WeirError(SqlState.SYNTAX_ERROR, "syntax error in SET")
    item = items[0]
    local = (item.args.get("kind") or "").upper() == "LOCAL"
    eq = item.this
    if isinstance(eq, exp.EQ):
        name = eq.this.name.lower()
        value = set_value(eq.expression)
        return st.SetVariable(text, name, value, local)
    return parse_set_words(text)


def set_value(e: exp.Expression) -> str | None:
    if isinstance(e, exp.Literal):
        return e.this
    if isinstance(e, exp.Tuple):
        return ", ".join(set_value(x) or "" for x in e.expressions)
    if isinstance(e, (exp.Column, exp.Identifier, exp.Var)):
        if e.name.upper() == "DEFAULT":
            return None
        return e.name
    if isinstance(e, exp.Boolean):
        return "on" if e.this else "off"
    if isinstance(e, exp.Neg):
        return "-" + (set_value(e.this) or "")
    return e.sql(dialect=_DIALECT)


_SET_RE = re.compile(r"^SET\s+(SESSION\s+|LOCAL\s+)?([A-Za-z_][\w.]*|\"[^\"]+\")\s*(?:=|\s+TO\s+|\s+)\s*(.*)$",
                     re.IGNORECASE | re.DOTALL)


def parse_set_words(text: str) -> st.Statement:
    m = _SET_RE.match(text.strip().rstrip(";"))
    if not m:
        raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error in SET: {text}")
    local = (m.group(1) or "").strip().upper() == "LOCAL"
    name = ident(m.group(2))
    raw = m.group(3).strip()
    if name in ("transaction", "session"):
        return st.SetVariable(text, "transaction_isolation", isolation(raw), local)
    if name == "names":
        return st.SetVariable(text, "client_encoding", string_literal(raw), local)
    if name == "time" and raw.upper().startswith("ZONE"):
        return st.SetVariable(text, "timezone", string_literal(raw[4:].strip()), local)
    if raw.upper() == "DEFAULT":
        return st.SetVariable(text, name, None, local)
    values = [string_literal(v.strip()) for v in split_commas(raw)]
    return st.SetVariable(text, name, ", ".join(values), local)


def parse_alter_system(text: str, words: list[str], upper: list[str]) -> st.Statement:
    if len(upper) == 4 and upper[2] == "RESET":
        return st.AlterSystem(text, ident(words[3]))
    if len(upper) > 3 and upper[2] == "SET":
        inner = parse_set_words(re.sub(r"^\s*ALTER\s+SYSTEM\s+", "", text, flags=re.I))
        assert isinstance(inner, st.SetVariable)
        if inner.local or inner.name == "all":
            raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error in ALTER SYSTEM: {text}")
        return st.AlterSystem(text, inner.name, inner.value)
    raise WeirError(SqlState.SYNTAX_ERROR, "expected SET or RESET after ALTER SYSTEM")


def isolation(raw: str) -> str:
    """The isolation level of `ISOLATION LEVEL <level> [, <other modes>]` (42601 without one)."""
    m = re.search(r"\bISOLATION\b(.*)$", raw, re.IGNORECASE | re.DOTALL)
    if not m:
        raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error at or near \"{raw.split()[0] if raw else ''}\"")
    level, _ = transaction_modes("ISOLATION" + m.group(1))
    assert level is not None
    return level


# PostgreSQL's levels and Materialize's strict serializable
_LEVELS = (("READ", "UNCOMMITTED"), ("READ", "COMMITTED"), ("REPEATABLE", "READ"), ("SERIALIZABLE",),
           ("STRICT", "SERIALIZABLE"))


def transaction_modes(raw: str) -> tuple[str | None, str | None]:
    """The transaction modes of SET [SESSION CHARACTERISTICS AS] TRANSACTION and BEGIN:
    `ISOLATION LEVEL <level>`, `READ WRITE | READ ONLY`, `[NOT] DEFERRABLE`, separated by
    commas or spaces. Returns (isolation level, 'read only' | 'read write'), each None when
    not given; PostgreSQL's 42601 for anything else (at least one mode is required)."""
    words = [w for w in re.split(r"\s+|(,)", raw.strip().rstrip(";")) if w]
    upper = [w.upper() for w in words]
    level = access = None
    i, seen = 0, 0

    def error(at: int) -> WeirError:
        where = f'at or near "{words[at]}"' if at < len(words) else "at end of input"
        return WeirError(SqlState.SYNTAX_ERROR, f"syntax error {where}")

    while i < len(upper) or not seen:
        if seen and upper[i] == ",":
            i += 1
        if i >= len(upper):
            raise error(i)
        if upper[i:i + 2] == ["ISOLATION", "LEVEL"]:
            for lv in _LEVELS:
                if tuple(upper[i + 2:i + 2 + len(lv)]) == lv:
                    level = " ".join(lv).lower()
                    i += 2 + len(lv)
                    break
            else:
                raise error(i + 2 + (1 if upper[i + 2:i + 3] in (["READ"], ["REPEATABLE"], ["STRICT"]) else 0))
        elif upper[i:i + 2] in (["READ", "WRITE"], ["READ", "ONLY"]):
            access = " ".join(upper[i:i + 2]).lower()
            i += 2
        elif upper[i] == "DEFERRABLE":
            i += 1
        elif upper[i:i + 2] == ["NOT", "DEFERRABLE"]:
            i += 2
        else:
            raise error(i)
        seen += 1
    return level, access
