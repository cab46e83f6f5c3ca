"""Parse SQL text into weir statements: sqlglot (Postgres dialect) for standard SQL,
a small token-level parser for the statements sqlglot leaves as commands."""

from __future__ import annotations

import functools
import logging
import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from weir.errors import SqlState, WeirError
from weir.sql import escapes, parse_roles, parse_set
from weir.sql import statements as st
from weir.sql.dialect import Weir
from weir.sql.parse_words import ident, split_commas, split_words

logging.getLogger("sqlglot").setLevel(logging.ERROR)

_DIALECT = Weir()


_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$")


def pad_params(sql: str) -> str:
    """Put spaces around $n parameters outside literals: sqlglot's tokenizer mistakes
    `$1,$2` for the start of a dollar-quoted string."""
    if "$" not in sql:
        return sql
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in ("'", '"'):
            j = i + 1
            while j < n:
                if sql[j] == ch:
                    if j + 1 < n and sql[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            out.append(sql[i:j + 1])
            i = j + 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            j = n if j < 0 else j
            out.append(sql[i:j])
            i = j
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(sql[i:j])
            i = j
        elif ch == "$":
            m = re.match(r"\$(\d+)", sql[i:])
            if m and not (i > 0 and (sql[i - 1].isalnum() or sql[i - 1] == "_")):
                end = i + len(m.group(0))
                before = "" if i == 0 or sql[i - 1].isspace() else " "
                after = "" if end >= n or sql[end].isspace() else " "
                out.append(f"{before}{m.group(0)}{after}")  # idempotent: padded text stays as is
                i = end
                continue
            tag = _DOLLAR_TAG.match(sql, i)
            if tag:
                end = sql.find(tag.group(0), tag.end())
                end = n if end < 0 else end + len(tag.group(0))
                out.append(sql[i:end])
                i = end
            else:
                out.append(ch)
                i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


# One statement of words, numbers and punctuation only (no quotes, comments, parameters or
# inner semicolons): `ALTER HOLD h ADVANCE`, `SELECT a, b FROM t WHERE k = 1`. split() takes
# it as is rather than tokenizing it (a third of a short statement's parse time).
_PLAIN_STATEMENT = re.compile(r"[\w\s.,()=<>*+]*;?\s*")


def split(sql: str) -> list[str]:
    """Split a simple-query string into statements on top-level semicolons."""
    if _PLAIN_STATEMENT.fullmatch(sql):
        text = sql.strip().rstrip(";").strip()
        return [text] if text else []
    return list(_split_tokenized(sql))


@functools.lru_cache(maxsize=512)
def _split_tokenized(sql: str) -> tuple[str, ...]:
    """Cached: tools send the same catalog queries again and again, and tokenizing one of
    psql's takes about as long as answering it in process."""
    sql = pad_params(sql)
    try:
        tokens = _DIALECT.tokenize(sql)
    except TokenError as e:
        raise WeirError(SqlState.SYNTAX_ERROR, _token_error(e)) from None
    escapes.check(sql, tokens)
    parts: list[str] = []
    start = 0
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:
            text = sql[start:tok.start].strip()
            if text:
                parts.append(text)
            start = tok.end + 1
    tail = sql[start:].strip()
    if tail and _has_tokens(tail):
        parts.append(tail)
    return tuple(parts)


def head_word(text: str) -> str:
    stripped = text.lstrip(" \t\r\n")
    if stripped.startswith("("):
        return "("
    return stripped.split(None, 1)[0].upper() if stripped else ""


def _has_tokens(text: str) -> bool:
    try:
        return bool(_DIALECT.tokenize(text))
    except TokenError:
        return True


def _token_error(e: Exception) -> str:
    msg = str(e)
    if "Missing" in msg or "unterminated" in msg.lower():
        return "unterminated quoted string"
    return f"syntax error: {msg.splitlines()[0]}"


def parse_one(sql: str) -> st.Statement:
    """Parse exactly one statement (42601 if the text holds more than one)."""
    parts = split(sql)
    if not parts:
        return st.Empty(sql)
    if len(parts) > 1:
        raise WeirError(SqlState.SYNTAX_ERROR, "cannot insert multiple commands into a prepared statement")
    return parse_statement(parts[0])


_AS_OF = re.compile(r"\s+AS\s+OF\s+(AT\s+LEAST\s+)?(?P<expr>[^;]+?)\s*;?\s*$", re.IGNORECASE | re.DOTALL)


def split_as_of(text: str) -> tuple[str, st.AsOf | None]:
    """Take a trailing AS OF [AT LEAST] expr off a query (outside quotes)."""
    matches = list(_AS_OF.finditer(text))
    m = matches[-1] if matches else None
    if m is None or text[:m.start()].count("'") % 2:
        return text, None
    try:
        select = sqlglot.parse_one(f"SELECT {m.group('expr')}", dialect=_DIALECT)
    except (ParseError, TokenError):
        return text, None
    if len(select.expressions) != 1 or any(v for k, v in select.args.items() if k != "expressions"):
        # `AS OF t ORDER BY a`: the ORDER BY would be dropped with the time's expression
        raise WeirError(SqlState.SYNTAX_ERROR, "syntax error: AS OF comes last in a query, after ORDER BY, "
                        "LIMIT and OFFSET")
    return text[:m.start()], st.AsOf(select.expressions[0], bool(m.group(1)))


def parse_statement(text: str) -> st.Statement:
    text = pad_params(text)
    if head_word(text) == "CREATE" and re.search(r"\bRETAIN\s+HISTORY\b", text, re.I):
        from weir.sql.parse_holds import take_retain_history

        body, retain = take_retain_history(text)
        if retain is not None:
            inner = parse_statement(body)
            inner.sql, inner.retain_history = text, retain
            return inner
    if head_word(text) in ("SELECT", "WITH", "VALUES", "(", "TABLE") and re.search(r"\bAS\s+OF\b", text, re.I):
        body, as_of = split_as_of(text)
        if as_of is not None:
            inner = parse_statement(body)
            if not isinstance(inner, st.Query):
                raise WeirError(SqlState.SYNTAX_ERROR, "AS OF is only allowed on queries")
            inner.as_of = as_of
            inner.sql = text
            return inner
    head = text.lstrip("( \t\r\n").split(None, 1)[0].upper().rstrip(";") if text.strip() else ""
    if head == "CREATE":
        if _ON_COMMIT_DROP.match(text):
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "CREATE TEMPORARY TABLE ... ON COMMIT DROP is not supported")
        if _LOCAL_TEMP.match(text):
            inner = parse_statement(_LOCAL_TEMP.sub(r"\1", text, count=1))
            inner.sql = text
            return inner
    special = _parse_special(text, head)
    if special is not None:
        return special
    try:
        tokens = _DIALECT.tokenize(text)
        escapes.check(text, tokens)
        _no_dangling_comma(tokens)
        exprs = _DIALECT.parser().parse(tokens, text)
    except (ParseError, TokenError) as e:
        raise WeirError(SqlState.SYNTAX_ERROR, _parse_error_message(e, text)) from None
    exprs = [e for e in exprs if e is not None]
    if not exprs:
        return st.Empty(text)
    expr = exprs[0]
    return _classify(text, expr)


# A comma before these ends a list that has no next element: PostgreSQL's syntax error,
# which sqlglot's parser lets pass (`PARTITION BY a, ORDER BY b`, `SELECT a, FROM t`).
_NOT_AFTER_COMMA = frozenset({TokenType.ORDER_BY, TokenType.FROM, TokenType.WHERE, TokenType.GROUP_BY,
                              TokenType.HAVING, TokenType.LIMIT, TokenType.R_PAREN})


def _no_dangling_comma(tokens: list) -> None:
    for before, tok in zip(tokens, tokens[1:], strict=False):
        if before.token_type == TokenType.COMMA and tok.token_type in _NOT_AFTER_COMMA:
            raise WeirError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{tok.text.split()[0]}"')


def _parse_error_message(e: Exception, text: str) -> str:
    errors = getattr(e, "errors", None)
    if errors:
        first = errors[0]
        near = first.get("highlight") or ""
        desc = first.get("description") or "syntax error"
        if near:
            return f'syntax error at or near "{near}"'
        return f"syntax error: {desc}"
    return f"syntax error: {str(e).splitlines()[0]}"


_PROPERTY_NAMES = {exp.InheritsProperty: "CREATE {kind} ... INHERITS",
                   exp.PartitionedByProperty: "CREATE {kind} ... PARTITION BY",
                   exp.PartitionedOfProperty: "CREATE {kind} ... PARTITION OF",
                   exp.UnloggedProperty: "CREATE UNLOGGED {kind}"}


def _refuse_properties(create: exp.Create, kind: str) -> bool:
    """Table and view options weir has no meaning for (inheritance, partitioning, storage
    parameters, ON COMMIT DELETE ROWS) are refused by name: ignoring them created a
    permanent, unrelated object instead. True for TEMP / TEMPORARY (GLOBAL TEMPORARY is
    the same in PostgreSQL; ON COMMIT PRESERVE ROWS is what a temporary table does)."""
    props = create.args.get("properties")
    found = props.expressions if props is not None else []
    temporary = any(isinstance(p, exp.TemporaryProperty) for p in found)
    for prop in found:
        if isinstance(prop, exp.TemporaryProperty) or (temporary and isinstance(prop, exp.GlobalProperty)):
            continue
        if isinstance(prop, exp.OnCommitProperty) and temporary and not prop.args.get("delete"):
            continue
        if isinstance(prop, exp.OnCommitProperty) and not temporary:
            raise WeirError(SqlState.INVALID_TABLE_DEFINITION, "ON COMMIT can only be used on temporary tables")
        if isinstance(prop, exp.OnCommitProperty):
            what = f"CREATE TEMPORARY {kind} ... ON COMMIT DELETE ROWS"
        elif isinstance(prop, exp.MaterializedProperty) and temporary:
            what = "CREATE TEMPORARY MATERIALIZED VIEW"
        else:
            name = _PROPERTY_NAMES.get(type(prop))
            what = name.format(kind=kind) if name else f"CREATE {kind} ... WITH ({prop.sql(dialect='postgres')})"
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"{what} is not supported")
    return temporary


# PostgreSQL's CREATE LOCAL TEMP is CREATE TEMP; ON COMMIT DROP (which sqlglot does not parse)
# is refused by name rather than as an unknown CREATE.
_LOCAL_TEMP = re.compile(r"^(\s*CREATE\s+)LOCAL\s+(?=TEMP(?:ORARY)?\b)", re.IGNORECASE)
_ON_COMMIT_DROP = re.compile(r"^\s*CREATE\s+(?:(?:LOCAL|GLOBAL)\s+)?TEMP(?:ORARY)?\s+TABLE\b.*\bON\s+COMMIT\s+DROP\b",
                             re.IGNORECASE | re.DOTALL)


def _classify(text: str, expr: exp.Expression) -> st.Statement:
    if isinstance(expr, exp.Query) or isinstance(expr, exp.Values):
        return st.Query(text, expr)  # type: ignore[arg-type]
    if isinstance(expr, exp.Insert):
        return st.Insert(text, expr)
    if isinstance(expr, exp.Update):
        return st.Update(text, expr)
    if isinstance(expr, exp.Delete):
        return st.Delete(text, expr)
    if isinstance(expr, exp.Create):
        kind = (expr.args.get("kind") or "").upper()
        temporary = _refuse_properties(expr, kind) if kind in ("TABLE", "VIEW") else False
        if kind == "TABLE":
            if expr.expression is not None:
                raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                                f"CREATE {'TEMPORARY ' if temporary else ''}TABLE ... AS not yet supported")
            return st.CreateTable(text, expr, temporary=temporary)
        if kind == "VIEW" and not expr.args.get("materialized"):
            return st.CreateView(text, expr, temporary=temporary)
        if kind == "SCHEMA":
            return st.CreateSchema(text, [_folded(p) for p in expr.this.parts] if expr.this else [],
                                   bool(expr.args.get("exists")))
        if kind == "DATABASE":
            return st.CreateDatabase(text, expr.this.name, bool(expr.args.get("exists")))
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"CREATE {kind} not yet supported")
    if isinstance(expr, exp.Drop):
        kind = (expr.args.get("kind") or "").lower()
        if kind not in ("table", "view", "schema", "database"):
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"DROP {kind.upper()} not yet supported")
        tables = expr.args.get("tables") or ([expr.this] if expr.this is not None else [])
        names = [[_folded(p) for p in t.parts] for t in tables]
        return st.Drop(text, kind, names, bool(expr.args.get("exists")), bool(expr.args.get("cascade")))
    if isinstance(expr, exp.Copy):
        return _copy(text, expr)
    if isinstance(expr, exp.Transaction):
        return st.Transaction(text, "begin")
    if isinstance(expr, exp.Commit):
        return st.Transaction(text, "commit")
    if isinstance(expr, exp.Rollback):
        return st.Transaction(text, "rollback")
    if isinstance(expr, exp.Set):
        return parse_set.set_from_expr(text, expr)
    raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"statement not yet supported: {text.split()[0].upper()}")


def _copy(text: str, expr: exp.Copy) -> st.Statement:
    files = expr.args.get("files") or []
    target = files[0].name.upper() if files else ""
    if expr.args.get("kind"):  # COPY ... FROM
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "COPY FROM not yet supported")
    if target != "STDOUT":
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "COPY TO a file is not supported; use COPY ... TO STDOUT")
    src = expr.this
    if isinstance(src, exp.Subquery):
        query = src.this
    elif isinstance(src, exp.Schema):
        query = exp.select(*[exp.column(c.name) for c in src.expressions]).from_(src.this)
    else:
        query = exp.select("*").from_(src)
    for opt in expr.args.get("params") or []:
        name = opt.this.name.upper() if opt.this is not None else ""
        value = opt.args.get("value") or opt.expression
        if name == "FORMAT" and value is not None and value.name.upper() not in ("TEXT",):
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"COPY format {value.name} not yet supported")
    return st.CopyTo(text, query)


_SAVEPOINT = re.compile(r'''\s*(?P<head>SAVEPOINT|RELEASE(?:\s+SAVEPOINT(?=\s))?
    |ROLLBACK(?:\s+(?:WORK|TRANSACTION))?\s+TO(?:\s+SAVEPOINT(?=\s))?)
    \s+(?P<name>"(?:[^"]|"")+"|[A-Za-z_][\w$]*)\s*;?\s*''', re.I | re.X)


def _savepoint(text: str, words: list[str]) -> st.Savepoint:
    """SAVEPOINT name, RELEASE [SAVEPOINT] name, ROLLBACK [WORK | TRANSACTION] TO [SAVEPOINT] name."""
    m = _SAVEPOINT.fullmatch(text)
    if m is None:
        known = {"SAVEPOINT", "RELEASE", "ROLLBACK", "WORK", "TRANSACTION", "TO"}
        extra = [w for w in words if w.upper() not in known]
        raise WeirError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{extra[-1] if len(extra) > 1 else extra[0]}"'
                        if extra else "syntax error at end of input")
    head = m.group("head").split()[0].upper()
    action = {"SAVEPOINT": "savepoint", "RELEASE": "release"}.get(head, "rollback_to")
    return st.Savepoint(text, action, ident(m.group("name")))


def _parse_special(text: str, head: str) -> st.Statement | None:
    words = split_words(text)
    upper = [w.upper() for w in words]
    if head == "SHOW":
        from weir.sql.parse_show import parse_show

        if upper[1:2] == ["PRIVILEGES"]:
            from weir.sql.parse_privileges import parse_show_privileges

            return parse_show_privileges(text)
        return parse_show(text, words, upper)
    if head == "ALTER" and "OWNER" in upper:
        from weir.sql.parse_privileges import parse_alter_owner

        found = parse_alter_owner(text)
        if found is not None:
            return found
    if head == "SET":
        if len(upper) > 1 and upper[1] == "TRANSACTION":
            level, _ = parse_set.transaction_modes(" ".join(words[2:]))
            return st.SetVariable(text, "transaction_isolation", level, True)  # local: this transaction's
        if len(upper) > 1 and upper[1] == "SESSION" and len(upper) > 2 and upper[2] == "CHARACTERISTICS":
            if upper[3:5] != ["AS", "TRANSACTION"]:
                at = words[3] if len(words) > 3 and upper[3] != "AS" else (words[4] if len(words) > 4 else "")
                raise WeirError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{at}"' if at
                                else "syntax error at end of input")
            level, access = parse_set.transaction_modes(" ".join(words[5:]))
            if access == "read only":
                raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "SET SESSION CHARACTERISTICS AS TRANSACTION "
                                "READ ONLY is not supported (weir has no read-only transactions)")
            # READ WRITE and [NOT] DEFERRABLE alone change nothing: a local SET of the level is a no-op
            return st.SetVariable(text, "transaction_isolation", level, level is None)
        return parse_set.parse_set_words(text)
    if head == "RESET":
        if len(words) != 2:
            raise WeirError(SqlState.SYNTAX_ERROR, "syntax error in RESET")
        return st.ResetVariable(text, ident(words[1]))
    if head in ("BEGIN", "START"):
        iso = None
        if "ISOLATION" in upper:
            iso = parse_set.isolation(" ".join(words))
        return st.Transaction(text, "begin", iso)
    if head in ("COMMIT", "END"):
        return st.Transaction(text, "commit")
    if head in ("SAVEPOINT", "RELEASE") or (head == "ROLLBACK" and "TO" in upper):
        return _savepoint(text, words)
    if head in ("ROLLBACK", "ABORT"):
        return st.Transaction(text, "rollback")
    if head == "EXPLAIN":
        from weir.sql.parse_objects import parse_explain

        return parse_explain(text)
    if head == "SUBSCRIBE":
        from weir.sql.parse_subscribe import parse_subscribe

        return parse_subscribe(text)
    if head == "COPY" and re.match(r"^COPY\s*\(\s*SUBSCRIBE\b", text, re.I):
        from weir.sql.parse_subscribe import parse_subscribe

        m = re.match(r"^COPY\s*\((?P<inner>.*)\)\s*TO\s+STDOUT(?P<rest>.*)$", text.strip().rstrip(";"),
                     re.I | re.DOTALL)
        if not m:
            raise WeirError(SqlState.SYNTAX_ERROR, "COPY (SUBSCRIBE ...) needs TO STDOUT")
        return st.CopyTo(text, None, subscribe=parse_subscribe(m.group("inner")))  # type: ignore[arg-type]
    if head == "DECLARE":
        from weir.sql.parse_subscribe import parse_declare

        return parse_declare(text, parse_statement)
    if head in ("FETCH", "MOVE"):
        from weir.sql.parse_subscribe import parse_fetch

        return parse_fetch(text)
    if head == "CLOSE":
        from weir.sql.parse_subscribe import parse_close

        return parse_close(text)
    if head == "PREPARE":
        m = re.match(r"^PREPARE\s+(\w+|\"[^\"]+\")\s*(?:\(([^)]*)\))?\s+AS\s+(.+?);?\s*$", text.strip(),
                     re.I | re.DOTALL)
        if not m:
            raise WeirError(SqlState.SYNTAX_ERROR, "syntax error in PREPARE: PREPARE name [(type, ...)] AS statement")
        types = [t.strip() for t in split_commas(m.group(2))] if m.group(2) else []
        return st.Prepare(text, ident(m.group(1)), types, m.group(3))
    if head == "EXECUTE":
        m = re.match(r"^EXECUTE\s+(\w+|\"[^\"]+\")\s*(?:\((.*)\))?\s*;?\s*$", text.strip(), re.I | re.DOTALL)
        if not m:
            raise WeirError(SqlState.SYNTAX_ERROR, "syntax error in EXECUTE: EXECUTE name [(arg, ...)]")
        try:
            args = [sqlglot.parse_one(a, read="postgres") for a in split_commas(m.group(2) or "") if a.strip()]
        except (ParseError, TokenError) as e:
            raise WeirError(SqlState.SYNTAX_ERROR, _parse_error_message(e, text)) from None
        return st.ExecutePrepared(text, ident(m.group(1)), args)
    if head == "DEALLOCATE":
        rest = [w for w in words[1:] if w.upper() != "PREPARE"]
        if len(rest) != 1:
            raise WeirError(SqlState.SYNTAX_ERROR, "syntax error in DEALLOCATE")
        return st.Deallocate(text, None if rest[0].upper() == "ALL" else ident(rest[0]))
    if head == "DISCARD":
        what = {"ALL": "ALL", "PLANS": "PLANS", "SEQUENCES": "SEQUENCES", "TEMP": "TEMP",
                "TEMPORARY": "TEMP"}.get(upper[1] if len(upper) == 2 else "")
        if what is None:
            raise WeirError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{words[min(len(words) - 1, 2)]}"'
                            if len(words) > 1 else "syntax error at end of input")
        return st.Discard(text, what)
    if head == "CREATE" and len(upper) > 2 and upper[1] in ("ROLE", "USER"):
        return st.CreateRole(text, ident(words[2]), parse_roles.role_options(words[3:]))
    if head == "ALTER" and len(upper) > 1 and upper[1] == "SYSTEM":
        return parse_set.parse_alter_system(text, words, upper)
    if head == "ALTER" and len(upper) > 2 and upper[1] in ("ROLE", "USER"):
        return st.AlterRole(text, ident(words[2]), parse_roles.role_options(words[3:]))
    if head == "DROP" and len(upper) > 2 and upper[1] in ("ROLE", "USER"):
        return parse_roles.parse_drop(text, "role", words[2:], qualified=False)
    if head in ("CREATE", "ALTER", "DROP") and len(upper) > 1 and upper[1] == "CLUSTER":
        from weir.sql.parse_cluster import parse_cluster_statement

        return parse_cluster_statement(text)
    if head == "CREATE" and re.match(r"^CREATE\s+(OR\s+REPLACE\s+)?MATERIALIZED\s+VIEW\b", text, re.I):
        from weir.sql.parse_objects import parse_create_mv

        return parse_create_mv(text)
    if head == "DROP" and len(upper) > 2 and upper[1] == "MATERIALIZED" and upper[2] == "VIEW":
        return parse_roles.parse_drop(text, "materialized view", words[3:])
    if head == "CREATE" and re.match(r"^CREATE\s+(DEFAULT\s+)?INDEX\b", text, re.I):
        from weir.sql.parse_objects import parse_create_index

        return parse_create_index(text)
    if head == "DROP" and len(upper) > 1 and upper[1] == "INDEX":
        return parse_roles.parse_drop(text, "index", words[2:])
    if head == "CREATE" and len(upper) > 1 and upper[1] == "SOURCE":
        from weir.sql.parse_objects import parse_create_source

        return parse_create_source(text)
    if head == "DROP" and len(upper) > 2 and upper[1] == "SOURCE":
        return parse_roles.parse_drop(text, "source", words[2:])
    if head in ("GRANT", "REVOKE"):
        return parse_roles.parse_grant(text, words, upper, head == "REVOKE")
    if head == "ALTER" and re.search(r"\bRETAIN\s+HISTORY\b", text, re.I):
        from weir.sql.parse_holds import parse_alter_retain_history

        found = parse_alter_retain_history(text)
        if found is not None:
            return found
    if head in ("CREATE", "ALTER") and len(upper) > 1 and upper[1] == "HOLD":
        from weir.sql import parse_holds

        return (parse_holds.parse_create_hold if head == "CREATE" else parse_holds.parse_alter_hold)(text)
    if head == "DROP" and len(upper) > 1 and upper[1] == "HOLD":
        return parse_roles.parse_drop(text, "hold", words[2:])
    if head in ("CREATE", "ALTER", "DROP", "ACKNOWLEDGE") and upper[1:3] == ["DURABLE", "SUBSCRIPTION"]:
        from weir.sql import parse_durable

        if head == "DROP":
            return parse_roles.parse_drop(text, "durable subscription", words[3:])
        return {"CREATE": parse_durable.parse_create, "ALTER": parse_durable.parse_alter,
                "ACKNOWLEDGE": parse_durable.parse_acknowledge}[head](text)
    return None


def _folded(part: exp.Expression) -> str:
    """A name part as PostgreSQL reads it: unquoted names fold to lower case
    (DROP TABLE BOOLTBL1 drops booltbl1)."""
    quoted = isinstance(part, exp.Identifier) and part.quoted
    return part.name if quoted else part.name.lower()
