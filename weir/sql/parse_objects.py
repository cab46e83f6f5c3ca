"""CREATE SOURCE ... FROM LOAD GENERATOR, CREATE MATERIALIZED VIEW and EXPLAIN: the
statements sqlglot does not model, parsed from their Materialize syntax."""

from __future__ import annotations

import re

from weir.errors import SqlState, WeirError
from weir.sql import parse, parse_words
from weir.sql import statements as st

_CREATE_SOURCE = re.compile(
    r"^CREATE\s+SOURCE\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?(?P<name>[\w.\"]+)"
    r"(?:\s+IN\s+CLUSTER\s+(?P<cluster>[\w\"]+))?"
    r"\s+FROM\s+LOAD\s+GENERATOR\s+(?P<gen>\w+)"
    r"(?:\s*\((?P<opts>.*?)\))?"
    r"(?:\s+FOR\s+(?:(?P<all>ALL\s+TABLES)|TABLES\s*\((?P<tables>[^)]*)\)))?\s*;?\s*$",
    re.IGNORECASE | re.DOTALL)


def parse_create_source(text: str) -> st.Statement:
    m = _CREATE_SOURCE.match(text.strip())
    if not m:
        if re.search(r"FROM\s+LOAD\s+GENERATOR", text, re.I) is None:
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                            "only LOAD GENERATOR sources are supported (COUNTER, AUCTION, TPCH)")
        raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error in CREATE SOURCE: {text}")
    opts: dict[str, str] = {}
    for part in parse_words.split_commas(m.group("opts") or ""):
        part = part.strip()
        if not part:
            continue
        om = re.match(r"^([A-Za-z_ ]+?)\s*(?:=\s*|\s+)('(?:[^']|'')*'|\S+)$", part, re.DOTALL)
        if not om:
            raise WeirError(SqlState.SYNTAX_ERROR, f"invalid load generator option: {part}")
        opts[om.group(1).upper()] = om.group(2)
    tables = None
    if m.group("tables") is not None:
        tables = [parse_words.ident(t.strip()) for t in m.group("tables").split(",") if t.strip()]
    cluster = parse_words.ident(m.group("cluster")) if m.group("cluster") else None
    return st.CreateSource(text, parse_words.name_parts(m.group("name")), m.group("gen").lower(), opts, tables,
                           cluster, bool(m.group("ine")))


_EXPLAIN = re.compile(
    r"^EXPLAIN\s+(?:(?P<ts>TIMESTAMP)|(?:(?P<stage>RAW|DECORRELATED|OPTIMIZED|PHYSICAL)\s+)?PLAN)"
    r"(?:\s+WITH\s*\((?P<opts>[^)]*)\))?(?:\s+AS\s+\w+)?\s+FOR\s+(?P<body>.+)$", re.IGNORECASE | re.DOTALL)


# node_ids: plan node ids on every line (design 002; `node identifiers` is Materialize's
# spelling); spark: a RAW PLAN as Spark analysed it rather than the query as written
EXPLAIN_OPTIONS = frozenset({"node_ids", "node identifiers", "spark"})


def parse_explain(text: str) -> st.Statement:
    m = _EXPLAIN.match(text.strip().rstrip(";"))
    if m is None:
        body = text.strip()[len("EXPLAIN"):].strip()
        if re.match(r"^(SELECT|WITH|VALUES)\b", body, re.I):  # EXPLAIN <query> = physical plan
            inner = parse.parse_statement(body)
            if isinstance(inner, st.Query):
                return st.Explain(text, "physical", [], inner.expr)
        raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error in EXPLAIN: {text}")
    stage = "timestamp" if m.group("ts") else (m.group("stage") or "optimized").lower()
    if stage == "decorrelated":
        stage = "raw"
    opts = [" ".join(o.lower().split()) for o in (m.group("opts") or "").split(",") if o.strip()]
    for o in opts:
        if o not in EXPLAIN_OPTIONS:
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f'unrecognized EXPLAIN option "{o}"',
                            hint="Valid options: " + ", ".join(sorted(EXPLAIN_OPTIONS)) + ".")
    body = m.group("body").strip()
    om = re.match(r"^(MATERIALIZED\s+VIEW|INDEX)\s+(\S+)$", body, re.I)
    if om:
        kind = "index" if om.group(1).upper() == "INDEX" else "materialized view"
        return st.Explain(text, stage, opts, None, kind, parse_words.name_parts(om.group(2)))
    inner = parse.parse_statement(body)
    if not isinstance(inner, st.Query):
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "EXPLAIN needs a query, MATERIALIZED VIEW or INDEX")
    return st.Explain(text, stage, opts, inner.expr)


_CREATE_MV = re.compile(
    r"^CREATE\s+(?P<replace>OR\s+REPLACE\s+)?MATERIALIZED\s+VIEW\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?"
    r"(?P<name>[\w.\"]+)\s*(?:\((?P<cols>[^)]*)\))?"
    r"(?:\s+IN\s+CLUSTER\s+(?P<cluster>[\w\"]+))?"
    r"(?:\s+WITH\s*\((?P<opts>(?:[^()']|'(?:[^']|'')*'|\([^()]*\))*)\))?\s+AS\s+(?P<body>.+)$",
    re.IGNORECASE | re.DOTALL)
# Materialize's options weir does not keep (RETAIN HISTORY alone is taken off before: parse_holds)
_MV_OPTIONS = {
    "REFRESH": "A materialized view is kept up to date as its inputs change",
    "RETAIN HISTORY": "Give RETAIN HISTORY as the only option",
    "PARTITION BY": "A materialized view's shard is not partitioned",
}
_ASSERT_NOT_NULL = re.compile(r"^\s*ASSERT\s+NOT\s+NULL\s*(?:=\s*)?(?P<col>\S.*?)\s*$", re.IGNORECASE | re.DOTALL)


def _mv_options(opts: str) -> list[str]:
    """The columns of ASSERT NOT NULL options; Materialize's other options are refused."""
    not_null: list[str] = []
    refused: list[str] = []
    for part in parse_words.split_commas(opts):
        if (m := _ASSERT_NOT_NULL.match(part)) is not None:
            not_null.append(parse_words.ident(m.group("col")))
            continue
        words = " ".join(part.split()).upper()
        known = next((o for o in _MV_OPTIONS if words == o or words.startswith(o + " ")), None)
        if known is None:
            raise WeirError(SqlState.SYNTAX_ERROR, f"unrecognized materialized view option: {part.strip()}",
                            hint="Materialize's options are ASSERT NOT NULL, PARTITION BY, REFRESH and "
                                 "RETAIN HISTORY.")
        refused.append(known)
    if refused:
        known = next((o for o in refused if o != "RETAIN HISTORY"), "RETAIN HISTORY")
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        f"CREATE MATERIALIZED VIEW ... WITH ({known} ...) is not supported",
                        detail=_MV_OPTIONS[known] + ".")
    return not_null


def parse_create_mv(text: str) -> st.Statement:
    m = _CREATE_MV.match(text.strip().rstrip(";"))
    if not m:
        raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error in CREATE MATERIALIZED VIEW: {text}")
    not_null = _mv_options(m.group("opts")) if m.group("opts") is not None else []
    inner = parse.parse_statement(m.group("body"))
    if not isinstance(inner, st.Query) or inner.as_of is not None:
        raise WeirError(SqlState.SYNTAX_ERROR, "CREATE MATERIALIZED VIEW needs AS <query>")
    cols = [parse_words.ident(c.strip()) for c in m.group("cols").split(",")] if m.group("cols") else None
    return st.CreateMaterializedView(text, parse_words.name_parts(m.group("name")), inner.expr,
                                     parse_words.ident(m.group("cluster")) if m.group("cluster") else None,
                                     bool(m.group("ine")), bool(m.group("replace")), cols, not_null)


_CREATE_INDEX = re.compile(
    r"^CREATE\s+(?P<default>DEFAULT\s+)?INDEX\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?"
    r"(?:(?!(?:IN|ON)\s)(?P<name>[\w\"]+)\s+)?"
    r"(?:IN\s+CLUSTER\s+(?P<c1>[\w\"]+)\s+)?"
    r"ON\s+(?P<on>[\w.\"]+)\s*(?:USING\s+ARRANGEMENT\s*)?"
    r"(?:\((?P<keys>.*)\))?\s*(?:IN\s+CLUSTER\s+(?P<c2>[\w\"]+))?\s*$", re.IGNORECASE | re.DOTALL)


def parse_create_index(text: str) -> st.Statement:
    import sqlglot
    from sqlglot.errors import ParseError

    m = _CREATE_INDEX.match(text.strip().rstrip(";").strip())
    if not m:
        raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error in CREATE INDEX: {text}")
    default = bool(m.group("default"))
    keys = None
    if m.group("keys") is not None:
        if default:
            raise WeirError(SqlState.SYNTAX_ERROR, "CREATE DEFAULT INDEX takes no key list")
        try:
            keys = [sqlglot.parse_one(k, read="postgres") for k in parse_words.split_commas(m.group("keys"))
                    if k.strip()]
        except ParseError as e:
            raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error in index key: {e}") from None
        if not keys:
            raise WeirError(SqlState.SYNTAX_ERROR, "CREATE INDEX needs at least one key")
    elif not default:
        raise WeirError(SqlState.SYNTAX_ERROR, "CREATE INDEX needs a key list: ON obj (col, ...)",
                        hint="CREATE DEFAULT INDEX ON obj indexes every column.")
    if m.group("c1") and m.group("c2"):
        raise WeirError(SqlState.SYNTAX_ERROR, "IN CLUSTER given twice")
    cluster = m.group("c1") or m.group("c2")
    return st.CreateIndex(text, parse_words.ident(m.group("name")) if m.group("name") else None,
                          parse_words.name_parts(m.group("on")), keys,
                          parse_words.ident(cluster) if cluster else None, bool(m.group("ine")))
