"""SUBSCRIBE, COPY (SUBSCRIBE ...) TO STDOUT, DECLARE ... CURSOR FOR, FETCH, CLOSE."""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from weir.errors import SqlState, WeirError
from weir.sql import statements as st

_SUB = re.compile(r"^SUBSCRIBE\s+(?:TO\s+)?(?P<body>.*)$", re.IGNORECASE | re.DOTALL)
_UP_TO = re.compile(r"\s+UP\s+TO\s+(?P<expr>[^;]+?)\s*$", re.IGNORECASE | re.DOTALL)
_WITH = re.compile(r"\s+WITH\s*\((?P<opts>[^)]*)\)\s*$", re.IGNORECASE | re.DOTALL)
_ENVELOPE = re.compile(r"\s+ENVELOPE\s+(?P<kind>UPSERT|DEBEZIUM)\s*\(\s*KEY\s*\((?P<key>[^)]*)\)\s*\)\s*$",
                       re.IGNORECASE | re.DOTALL)
_WITHIN = re.compile(r"\s+WITHIN\s+TIMESTAMP\s+ORDER\s+BY\s+", re.IGNORECASE)
_AS_OF = re.compile(r"\s+AS\s+OF\s+(?P<least>AT\s+LEAST\s+)?(?P<expr>[^;]+?)\s*$", re.IGNORECASE | re.DOTALL)


def _expr(text: str) -> exp.Expression:
    try:
        return sqlglot.parse_one(f"SELECT {text}", read="postgres").expressions[0]
    except (ParseError, TokenError):
        raise WeirError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{text.split()[0]}"') from None


def _bool(v: str) -> bool:
    v = v.strip().strip("'").lower()
    if v in ("true", "on", "1", "yes", ""):
        return True
    if v in ("false", "off", "0", "no"):
        return False
    raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f"invalid boolean value {v!r}")


def parse_subscribe(text: str) -> st.Subscribe:
    m = _SUB.match(text.strip().rstrip(";").strip())
    if not m:
        raise WeirError(SqlState.SYNTAX_ERROR, "syntax error in SUBSCRIBE")
    body = m.group("body")
    out = st.Subscribe(text)
    # trailing clauses, in any order: UP TO, AS OF, WITH (...)
    changed = True
    while changed:
        changed = False
        if (u := _UP_TO.search(body)) is not None and body[:u.start()].count("'") % 2 == 0:
            out.up_to = _expr(u.group("expr"))
            body, changed = body[:u.start()], True
        if (a := _AS_OF.search(body)) is not None and body[:a.start()].count("'") % 2 == 0:
            out.as_of = st.AsOf(_expr(a.group("expr")), bool(a.group("least")))
            body, changed = body[:a.start()], True
        if (w := _WITH.search(body)) is not None and body[:w.start()].count("'") % 2 == 0:
            for opt in w.group("opts").split(","):
                if not opt.strip():
                    continue
                parts = re.split(r"\s*=\s*|\s+", opt.strip(), maxsplit=1)
                name, value = parts[0].upper(), parts[1] if len(parts) > 1 else ""
                if name == "SNAPSHOT":
                    out.snapshot, out.snapshot_given = _bool(value), True
                elif name == "PROGRESS":
                    out.progress = _bool(value)
                else:
                    raise WeirError(SqlState.SYNTAX_ERROR, f"unknown SUBSCRIBE option {name}")
            body, changed = body[:w.start()], True
    from weir.sql.parse_durable import using

    if (durable := using(body)) is not None:
        if out.as_of is not None or out.up_to is not None:
            raise WeirError(SqlState.SYNTAX_ERROR, "SUBSCRIBE USING DURABLE SUBSCRIPTION resumes at its "
                                                   "acknowledged time: AS OF and UP TO are not allowed")
        out.durable = durable
        out.snapshot = out.snapshot if out.snapshot_given else False
        return out
    body = _output_format(body, out).strip()
    if body.startswith("("):
        if not body.endswith(")"):
            raise WeirError(SqlState.SYNTAX_ERROR, "syntax error in SUBSCRIBE: unbalanced parentheses")
        try:
            q = sqlglot.parse_one(body[1:-1], read="postgres")
        except (ParseError, TokenError) as e:
            raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error: {str(e).splitlines()[0]}") from None
        if not isinstance(q, exp.Query):
            raise WeirError(SqlState.SYNTAX_ERROR, "SUBSCRIBE needs a relation or a (query)")
        out.query = q
    else:
        try:
            table = sqlglot.parse_one(f"SELECT * FROM {body}", read="postgres")
        except (ParseError, TokenError):
            raise WeirError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{body.split()[0] if body else ""}"') from None
        out.query = table  # type: ignore[assignment]
    return out


def _outside(text: str, at: int) -> bool:
    """Whether position `at` is outside parentheses and string literals."""
    prefix = text[:at]
    return prefix.count("'") % 2 == 0 and prefix.count("(") == prefix.count(")")


def _output_format(body: str, out: st.Subscribe) -> str:
    """ENVELOPE UPSERT | DEBEZIUM (KEY (...)) or WITHIN TIMESTAMP ORDER BY ..., off the end."""
    within = [m for m in _WITHIN.finditer(body) if _outside(body, m.start())]
    if within:
        m = within[-1]
        try:
            q = sqlglot.parse_one(f"SELECT 1 ORDER BY {body[m.end():]}", read="postgres")
        except (ParseError, TokenError):
            raise WeirError(SqlState.SYNTAX_ERROR, "syntax error in WITHIN TIMESTAMP ORDER BY") from None
        order = q.args.get("order")
        if order is None or not isinstance(q, exp.Select) or any(
                q.args.get(k) for k in ("limit", "offset", "where")):
            raise WeirError(SqlState.SYNTAX_ERROR, "syntax error in WITHIN TIMESTAMP ORDER BY")
        out.within_order = list(order.expressions)
        body = body[:m.start()]
    if (e := _ENVELOPE.search(body)) is not None and _outside(body, e.start()):
        if out.within_order:
            raise WeirError(SqlState.SYNTAX_ERROR,
                            "SUBSCRIBE takes ENVELOPE or WITHIN TIMESTAMP ORDER BY, not both")
        out.envelope = e.group("kind").lower()
        out.envelope_key = [_column_name(k) for k in e.group("key").split(",")]
        body = body[:e.start()]
    return body


def _column_name(text: str) -> str:
    text = text.strip()
    if not text:
        raise WeirError(SqlState.SYNTAX_ERROR, "syntax error in ENVELOPE ... (KEY (...)): empty column name")
    if text.startswith('"') and text.endswith('"') and len(text) >= 2:
        return text[1:-1].replace('""', '"')
    if not re.fullmatch(r"[A-Za-z_][\w$]*", text):
        raise WeirError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{text}" in ENVELOPE KEY')
    return text.lower()


_DECLARE = re.compile(r"^DECLARE\s+(?P<name>\"[^\"]+\"|\w+)\s+(?:BINARY\s+)?(?:(?:ASENSITIVE|INSENSITIVE)\s+)?"
                      r"(?P<scroll>(?:NO\s+)?SCROLL\s+)?CURSOR\s+"
                      r"(?:WITH(?:OUT)?\s+HOLD\s+)?FOR\s+(?P<body>.+)$", re.IGNORECASE | re.DOTALL)
_FETCH = re.compile(r"^(?P<verb>FETCH|MOVE)\s+(?P<direction>NEXT|PRIOR|FIRST|LAST|ABSOLUTE|RELATIVE|FORWARD|BACKWARD)?"
                    r"\s*(?P<count>ALL|[+-]?\d+)?\s*(?:FROM\s+|IN\s+)?"
                    r"(?P<name>\"[^\"]+\"|\w+)\s*(?:WITH\s*\(\s*TIMEOUT\s*=?\s*(?P<timeout>'[^']*'|\S+?)\s*\))?\s*;?$",
                    re.IGNORECASE | re.DOTALL)


def _name(text: str) -> str:
    return text[1:-1] if text.startswith('"') else text.lower()


def parse_declare(text: str, parse_inner) -> st.DeclareCursor:  # noqa: ANN001
    m = _DECLARE.match(text.strip().rstrip(";"))
    if not m:
        raise WeirError(SqlState.SYNTAX_ERROR, "syntax error in DECLARE")
    scroll = not (m.group("scroll") or "").upper().startswith("NO")
    return st.DeclareCursor(text, _name(m.group("name")), parse_inner(m.group("body")), scroll=scroll)


def parse_fetch(text: str) -> st.Fetch:
    """FETCH / MOVE [NEXT | PRIOR | FIRST | LAST | ABSOLUTE n | RELATIVE n | n | ALL | FORWARD
    [n | ALL] | BACKWARD [n | ALL]] [FROM | IN] cursor, as PostgreSQL reads it (a negative
    count goes the other way)."""
    m = _FETCH.match(text.strip())
    if not m:
        raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error in {text.split()[0].upper()}")
    word = (m.group("direction") or "").upper()
    count_text = (m.group("count") or "").upper()
    count: int | None = None if count_text == "ALL" else int(count_text) if count_text else None
    if word in ("NEXT", "PRIOR", "FIRST", "LAST") and count_text:
        raise WeirError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{m.group("count")}"')
    if word in ("ABSOLUTE", "RELATIVE") and (count is None):
        raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error in {m.group('verb').upper()}")
    direction, n = {"PRIOR": ("backward", 1), "FIRST": ("absolute", 1), "LAST": ("absolute", -1),
                    "ABSOLUTE": ("absolute", count), "RELATIVE": ("relative", count),
                    "BACKWARD": ("backward", count if count_text else 1)}.get(
        word, ("forward", count if count_text else 1))
    if direction in ("forward", "backward") and n is not None and n < 0:
        direction, n = ("backward" if direction == "forward" else "forward"), -n
    timeout = m.group("timeout")
    return st.Fetch(text, _name(m.group("name")), n, timeout.strip("'") if timeout else None,
                    direction=direction, move=m.group("verb").upper() == "MOVE")


def parse_close(text: str) -> st.CloseCursor:
    words = text.strip().rstrip(";").split()
    if len(words) != 2:
        raise WeirError(SqlState.SYNTAX_ERROR, "syntax error in CLOSE")
    return st.CloseCursor(text, None if words[1].upper() == "ALL" else _name(words[1]))
