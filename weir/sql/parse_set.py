"""SET, RESET-adjacent forms, SET TRANSACTION and ALTER SYSTEM: what sqlglot leaves as
commands or parses loosely, read word by word."""

from __future__ import annotations

import re

from sqlglot import exp

from weir.errors import SqlState, WeirError
from weir.sql import statements as st
from weir.sql.dialect import Weir
from weir.sql.parse_words import WS, ident, split_commas, string_literal

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
    m = re.search(r"ISOLATION\s+LEVEL\s+(.+)$", raw, re.IGNORECASE)
    if not m:
        raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error at or near \"{raw.split()[0] if raw else ''}\"")
    return WS.sub(" ", m.group(1).strip()).lower()
