"""SHOW <objects> [FROM schema | ON object] [IN CLUSTER cluster] [LIKE 'pattern' | WHERE expr],
in Materialize's syntax (SHOW <variable> is the fallback)."""

from __future__ import annotations

from weir.errors import SqlState, WeirError
from weir.sql import statements as st
from weir.sql.parse_words import ident, name_parts, string_literal

_SHOW_OBJECTS = {
    ("TABLES",): "tables", ("VIEWS",): "views", ("OBJECTS",): "objects", ("CLUSTERS",): "clusters",
    ("SCHEMAS",): "schemas", ("DATABASES",): "databases", ("ROLES",): "roles", ("SOURCES",): "sources",
    ("INDEXES",): "indexes", ("INDEX",): "indexes", ("KEYS",): "indexes",
    ("MATERIALIZED", "VIEWS"): "materialized views", ("CLUSTER", "REPLICAS"): "cluster replicas",
    ("COLUMNS",): "columns", ("HOLDS",): "holds",
}
# PostgreSQL's SHOW spellings of a variable in several words
_SHOW_PHRASES = {
    ("TRANSACTION", "ISOLATION", "LEVEL"): "transaction_isolation", ("TIME", "ZONE"): "timezone",
    ("SESSION", "AUTHORIZATION"): "session_authorization",
}
# what takes IN CLUSTER (Materialize: the objects that run on a cluster)
_ON_CLUSTER = frozenset({"materialized views", "indexes", "sources"})


def parse_show(text: str, words: list[str], upper: list[str]) -> st.Statement:
    if len(words) < 2:
        raise WeirError(SqlState.SYNTAX_ERROR, "syntax error at end of input")
    what, consumed = None, 0
    for key, name in _SHOW_OBJECTS.items():
        if tuple(upper[1:1 + len(key)]) == key:
            what, consumed = name, len(key)
            break
    if what is None:
        phrase = _SHOW_PHRASES.get(tuple(upper[1:]))
        if phrase is not None:
            return st.ShowVariable(text, phrase)
        if len(words) != 2:
            raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error at or near \"{words[2]}\"")
        return st.ShowVariable(text, ident(words[1]))
    tail_words = words[1 + consumed:]
    tail_upper = [w.upper() for w in tail_words]
    show = st.ShowObjects(text, what)
    i = 0
    while i < len(tail_words):
        word = tail_upper[i]
        if word == "IN" and i + 2 < len(tail_words) and tail_upper[i + 1] == "CLUSTER":
            if what not in _ON_CLUSTER:
                raise WeirError(SqlState.SYNTAX_ERROR, f"SHOW {what.upper()} does not take IN CLUSTER")
            if show.in_cluster is not None:
                raise WeirError(SqlState.SYNTAX_ERROR, "IN CLUSTER given twice")
            show.in_cluster = ident(tail_words[i + 2])
            i += 3
        elif word == "ON" and what == "indexes" and i + 1 < len(tail_words):
            show.on_name = name_parts(tail_words[i + 1])
            i += 2
        elif word in ("FROM", "IN", "ON") and i + 1 < len(tail_words):
            if show.from_name is not None:
                raise WeirError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{tail_words[i]}"')
            show.from_name = name_parts(tail_words[i + 1])
            i += 2
        elif word == "LIKE" and i + 1 < len(tail_words):
            show.like = string_literal(" ".join(tail_words[i + 1:]))
            break
        elif word == "WHERE":
            show.where = " ".join(tail_words[i + 1:])
            break
        else:
            raise WeirError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{tail_words[i]}"')
    if what == "columns" and not show.from_name:
        raise WeirError(SqlState.SYNTAX_ERROR, "SHOW COLUMNS requires FROM <object>")
    if show.on_name is not None and show.from_name is not None:
        raise WeirError(SqlState.SYNTAX_ERROR, "SHOW INDEXES takes FROM <schema> or ON <object>, not both")
    return show
