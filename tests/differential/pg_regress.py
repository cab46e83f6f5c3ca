"""Run PostgreSQL 15's own regression scripts (../shared/pg-regress/sql) on weir and on a
real PostgreSQL, statement by statement, and count per script how many statements weir
answers identically, refuses cleanly (an ErrorResponse with a SQLSTATE while PostgreSQL
succeeded or failed differently) or answers differently. PostgreSQL's expected outputs are
never used: the live server is the reference. A statement PostgreSQL itself rejects counts
as identical when weir rejects it with the same SQLSTATE.

A differing answer is not counted as a difference, but under its own heading, when:
- allowed: it differs only as Materialize documents (tests.differential.known.ALLOWED);
- follow-on: it reads a relation an earlier statement left different on the two servers
  (weir refused a CREATE/INSERT/UPDATE/... PostgreSQL ran, or the other way round), so
  the two servers no longer hold the same data;
- undetermined: PostgreSQL's own answer changes when the rows of the tables it reads are
  stored in another order (checked by re-running it on PostgreSQL in a transaction that
  rewrites them shuffled, then rolls back), or it is in UNDETERMINED with its reason: the
  statement does not determine one answer, so weir's differing one is not wrong.

    python -m tests.differential.pg_regress [--pg DSN --weir DSN] [script ...]

Without DSNs it starts a PostgreSQL (tests/pg_server.py) and a `weir serve` itself."""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from tests.differential.known import ALLOWED, explain
from tests.differential.runner import Outcome, execute, same_rows

SQL_DIR = Path(__file__).resolve().parents[3] / "shared" / "pg-regress" / "sql"
TIMEOUT = 30.0  # seconds a statement may take on weir before it is cancelled (counts as differs)

# The tables PostgreSQL's test_setup.sql creates that the scripts use (the scripts create
# the rest themselves). Same rows in both servers; tenk1/onek are generated (their data
# files are not part of ../shared), with PostgreSQL's column definitions.
_INTS = ("unique1", "unique2", "two", "four", "ten", "twenty", "hundred", "thousand",
         "twothousand", "fivethous", "tenthous", "odd", "even")
SETUP: dict[str, list[str]] = {
    "int2_tbl": ["CREATE TABLE INT2_TBL(f1 int2)",
                 "INSERT INTO INT2_TBL(f1) VALUES ('0   '), ('  1234 '), ('    -1234'), ('32767'), ('-32767')"],
    "int4_tbl": ["CREATE TABLE INT4_TBL(f1 int4)",
                 "INSERT INTO INT4_TBL(f1) VALUES ('   0  '), ('123456     '), ('    -123456'), ('2147483647'), ('-2147483647')"],
    "int8_tbl": ["CREATE TABLE INT8_TBL(q1 int8, q2 int8)",
                 "INSERT INTO INT8_TBL VALUES ('  123   ','  456'), ('123   ','4567890123456789'), "
                 "('4567890123456789','123'), (+4567890123456789,'4567890123456789'), "
                 "('+4567890123456789','-4567890123456789')"],
    "float8_tbl": ["CREATE TABLE FLOAT8_TBL(f1 float8)",
                   "INSERT INTO FLOAT8_TBL(f1) VALUES ('0.0'), ('-34.84'), ('-1004.30'), "
                   "('-1.2345678901234e+200'), ('-1.2345678901234e-200')"],
    "text_tbl": ["CREATE TABLE TEXT_TBL (f1 text)", "INSERT INTO TEXT_TBL VALUES ('doh!'), ('hi de ho neighbor')"],
    "varchar_tbl": ["CREATE TABLE VARCHAR_TBL(f1 varchar(4))",
                    "INSERT INTO VARCHAR_TBL (f1) VALUES ('a'), ('ab'), ('abcd'), ('abcd    ')"],
    "char_tbl": ["CREATE TABLE CHAR_TBL(f1 char(4))",
                 "INSERT INTO CHAR_TBL (f1) VALUES ('a'), ('ab'), ('abcd'), ('abcd    ')"],
}


def _tenk(name: str, n: int, seed: int) -> list[str]:
    perm = list(range(n))
    random.Random(seed).shuffle(perm)
    rows = []
    for u2, u1 in enumerate(perm):
        h = u1 % 100
        vals = (u1, u2, u1 % 2, u1 % 4, u1 % 10, u1 % 20, h, u1 % 1000, u1 % 2000, u1 % 5000, u1,
                h * 2 + 1, h * 2)
        s4 = ("AAAAxx", "HHHHxx", "OOOOxx", "VVVVxx")[u2 % 4]
        rows.append(f"({', '.join(map(str, vals))}, '{_letters(u1)}', '{_letters(u2)}', '{s4}')")
    cols = ", ".join(f"{c} int4" for c in _INTS) + ", stringu1 text, stringu2 text, string4 text"
    out = [f"CREATE TABLE {name} ({cols})"]
    out += [f"INSERT INTO {name} VALUES {', '.join(rows[k:k + 2000])}" for k in range(0, n, 2000)]
    return out


def _letters(n: int) -> str:
    s = ""
    for _ in range(6):
        s = chr(ord("A") + n % 26) + s
        n //= 26
    return s + "x"


SETUP["onek"] = _tenk("onek", 1000, 1)
SETUP["tenk1"] = _tenk("tenk1", 10000, 2)
SETUP["tenk2"] = _tenk("tenk2", 10000, 2)


def statements(text: str) -> Iterator[str]:
    """Split a psql script into statements: quotes ('', E'', "", $tag$), comments, and
    psql's backslash lines (skipped, with COPY ... FROM stdin data up to `\\.`)."""
    buf: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        at_line_start = i == 0 or text[i - 1] == "\n"
        if c == "\\" and at_line_start and not "".join(buf).strip():
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        if text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            continue
        if c in "'\"":
            escape = c == "'" and i > 0 and text[i - 1] in "eE" and (i < 2 or not text[i - 2].isalnum())
            j = i + 1
            while j < n:
                if escape and text[j] == "\\":
                    j += 2
                    continue
                if text[j] == c:
                    if j + 1 < n and text[j + 1] == c:
                        j += 2
                        continue
                    break
                j += 1
            buf.append(text[i:j + 1])
            i = j + 1
            continue
        if c == "$" and (m := re.match(r"\$([A-Za-z_]\w*)?\$", text[i:])) and (i == 0 or not text[i - 1].isalnum()):
            tag = m.group(0)
            end = text.find(tag, i + len(tag))
            end = n if end < 0 else end + len(tag)
            buf.append(text[i:end])
            i = end
            continue
        if c == ";":
            stmt = "".join(buf).strip()
            buf = []
            i += 1
            if stmt:
                if re.match(r"(?is)^copy\b.*\bfrom\s+stdin", stmt):
                    end = text.find("\n\\.", i)
                    i = n if end < 0 else end + 3
                    continue
                yield stmt
            continue
        if c == "\\" and not "".join(buf).strip() == "" and text.startswith(("\\g", "\\watch"), i):
            buf = []  # a statement psql runs with \gset / \gexec: not plain SQL
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        buf.append(c)
        i += 1
    if "".join(buf).strip():
        yield "".join(buf).strip()


def _ordered(sql: str) -> bool:
    """ORDER BY outside parentheses: the statement's own rows are ordered."""
    depth = 0
    for m in re.finditer(r"\(|\)|'(?:[^']|'')*'|\border\s+by\b", sql, re.I):
        tok = m.group(0)
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        elif tok[0] != "'" and depth == 0:
            return True
    return False


def classify(pg: Outcome, weir: Outcome, sql: str) -> str:
    if pg.ok and weir.ok:
        assert pg.rows is not None and weir.rows is not None
        return "identical" if same_rows(pg.rows, weir.rows, _ordered(sql)) else "differs"
    if not weir.ok:
        return "identical" if not pg.ok and pg.sqlstate == weir.sqlstate else "refused"
    return "differs"


CATEGORIES = ("identical", "allowed", "refused", "follow-on", "undetermined", "differs")

# Statements whose answer PostgreSQL does not determine and that no shuffle of stored rows
# shows (their rows come from VALUES or generate_series): (script, statement prefix, why).
UNDETERMINED: tuple[tuple[str, str, str], ...] = (
    ("window", "select x, y,\n       first_value(y) over w", "the two rows with x NULL tie in the "
     "window's ORDER BY x, so which of y = 42 and 43 comes first, and is first_value, is not determined"),
    ("limit", "select unique1, unique2, generate_series(1,10)", "the ten rows a set-returning function "
     "makes of one input row tie in the ORDER BY, so their order is not determined"),
    ("window", "SELECT * FROM\n  (SELECT depname,\n          empno,\n          salary,\n          enroll_date,\n"
     "          row_number() OVER (PARTITION BY depname ORDER BY enroll_date) AS first_emp",
     "empsalary's develop rows 7 and 9 tie on enroll_date, so which is row 4 and which row 5 is not "
     "determined (the shuffle notices it one time in four at best: two rows)"),
    ("window", "SELECT last_value(four) OVER (ORDER BY ten), ten, four FROM tenk1 WHERE unique2 < 10",
     "rows of one ten (unique1 = 1 and 11, say) tie in ORDER BY ten but differ in four, and last_value "
     "is the last of the peers in an order the statement does not set (the shuffle notices it at times)"),
    ("window", "SELECT * FROM\n  (SELECT *,\n          count(1) OVER (PARTITION BY depname || '') c1,",
     "row_number() OVER (PARTITION BY depname) has no ORDER BY, so which row of a department is "
     "rn = 1 (and is kept) is not determined"),
)

# catalog relations that list what a CREATE / DROP / ALTER made or removed
_CATALOGS = {"pg_class", "pg_index", "pg_indexes", "pg_attribute", "pg_tables", "pg_views", "pg_matviews",
             "pg_namespace", "pg_type", "pg_proc", "pg_depend"}

_WRITES = re.compile(
    r"(?is)^\s*(?:create\s+(?:or\s+replace\s+)?(?:temp(?:orary)?\s+|unlogged\s+)?(?:materialized\s+)?"
    r"(?:table|view)\s+(?:if\s+not\s+exists\s+)?|insert\s+into\s+|update\s+(?:only\s+)?|"
    r"delete\s+from\s+(?:only\s+)?|alter\s+table\s+(?:if\s+exists\s+)?(?:only\s+)?|"
    r"truncate\s+(?:table\s+)?|drop\s+(?:table|view)\s+(?:if\s+exists\s+)?|select\s+.*?\binto\s+)"
    r"([\w.\"]+)")


def _written(stmt: str) -> str | None:
    """The relation a statement creates or writes, lower-cased without schema."""
    m = _WRITES.match(stmt)
    return m.group(1).strip('"').split(".")[-1].lower() if m else None


def _setting(stmt: str) -> str | None:
    """The session setting a SET / RESET / SET TIME ZONE statement changes, lower-cased."""
    m = re.match(r"(?is)\s*(?:set|reset)\s+(?:session\s+|local\s+)?(time\s+zone|[\w.]+)", stmt)
    if m is None:
        return None
    name = " ".join(m.group(1).lower().split())
    return "timezone" if name == "time zone" else name


def _reads(stmt: str, names: set[str]) -> set[str]:
    words = set(re.findall(r"\w+", re.sub(r"'(?:[^']|'')*'", "", stmt).lower()))
    # a string that is a relation's whole name names it too: pg_get_viewdef('v'), 'v'::regclass
    words |= {m.split(".")[-1].lower() for m in re.findall(r"'([\w.]+)'", stmt)}
    return names & words


def _shuffled_answers(pg: psycopg.Connection, stmt: str, tries: int = 2) -> list[Outcome]:
    """PostgreSQL's answers to `stmt` with the rows of each table it reads rewritten in a
    random order (in a transaction rolled back afterwards)."""
    tables = {r[0] for r in pg.execute(  # the session's temporary tables too (window's empsalary)
        "SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE relkind = 'r' AND (nspname = ANY (current_schemas(false)) OR n.oid = pg_my_temp_schema())").fetchall()}
    read = sorted(_reads(stmt, tables))
    out = []
    for _ in range(tries if read else 0):
        try:
            with pg.transaction(force_rollback=True):
                for t in read:
                    pg.execute(f'CREATE TEMP TABLE "_shuffle_{t}" AS SELECT * FROM "{t}"')
                    pg.execute(f'DELETE FROM "{t}"')
                    pg.execute(f'INSERT INTO "{t}" SELECT * FROM "_shuffle_{t}" ORDER BY random()')
                out.append(execute(pg, stmt))
        except psycopg.Error:
            pass
    return out


@dataclass(frozen=True)
class _Stmt:
    sql: str
    ordered: bool


def refine(stmt: str, pg: Outcome, weir: Outcome, tainted: set[str], script: str,
           pg_conn: psycopg.Connection) -> str:
    """The heading of a differing statement: allowed, follow-on, undetermined or differs."""
    if explain(_Stmt(stmt, _ordered(stmt)), pg, weir, ALLOWED, ()):  # type: ignore[arg-type]
        return "allowed"
    if _reads(stmt, tainted):
        return "follow-on"
    if any(s == script and stmt.startswith(prefix) for s, prefix, _ in UNDETERMINED):
        return "undetermined"
    if pg.ok and weir.ok and re.match(r"(?is)\s*(select|values|with|table)\b", stmt):
        assert pg.rows is not None
        for other in _shuffled_answers(pg_conn, stmt):
            if other.rows is not None and not same_rows(pg.rows, other.rows, _ordered(stmt)):
                return "undetermined"
    return "differs"


@dataclass
class ScriptResult:
    script: str
    counts: Counter[str] = field(default_factory=Counter)
    skipped: int = 0  # psql variables (:'x') or statements that need psql
    differs: list[tuple[str, str, str]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (statement, weir's error)
    seconds: float = 0.0


def run_script(path: Path, pg_dsn: str, weir_dsn: str) -> ScriptResult:
    """One script in a fresh schema of its own on both servers."""
    start = time.monotonic()
    schema = "pgr_" + path.stem
    text = path.read_text()
    res = ScriptResult(path.stem)
    opts = f" options='-c search_path={schema}'"
    for dsn in (pg_dsn, weir_dsn):
        with psycopg.connect(dsn, autocommit=True) as c:
            execute(c, f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            out = execute(c, f"CREATE SCHEMA {schema}")
            assert out.ok, out.show()
    with psycopg.connect(pg_dsn + opts, autocommit=True) as pg, \
            psycopg.connect(weir_dsn + opts, autocommit=True) as w:
        for table, stmts in SETUP.items():
            if re.search(rf"\b{table}\b", text, re.I):
                for s in stmts:
                    execute(pg, s)
                    execute(w, s)
        tainted: set[str] = set()
        settings: set[str] = set()  # session settings PostgreSQL took and weir refused
        for stmt in statements(text):
            if re.search(r":'\w+'|:\"\w+\"|(?<=\s):[A-Za-z_]\w*", re.sub(r"'(?:[^']|'')*'|::", "", stmt)):
                res.skipped += 1
                continue
            p = execute(pg, stmt)
            got = execute(w, stmt, TIMEOUT)
            cat = classify(p, got, stmt)
            target = _written(stmt)
            if target is not None and (p.ok != got.ok or _reads(stmt, tainted - {target})):
                tainted.add(target)  # the servers now hold different things under this name
            elif target is not None and p.ok and got.ok and stmt.lstrip()[:6].lower() in ("create", "drop t", "drop v"):
                tainted.discard(target)  # created (or dropped) alike on both again
            if p.ok != got.ok and re.match(r"(?is)\s*(?:create|drop|alter)\b", stmt):
                tainted |= _CATALOGS  # one server lists an object (an index ...) the other does not
            for parent in re.findall(r"(?is)\binherits\s*\(\s*([\w.\"]+)", stmt):
                if p.ok != got.ok:  # PostgreSQL's parent now reads its children's rows too
                    tainted.add(parent.strip('"').split(".")[-1].lower())
            setting = _setting(stmt)
            if setting is not None:
                if p.ok and not got.ok:
                    settings.add(setting)
                elif p.ok and got.ok:
                    settings.discard(setting)
            if cat == "differs" and settings:
                cat = "follow-on"  # PostgreSQL runs with a setting weir refused (DateStyle, IntervalStyle ...)
            if cat == "differs":
                cat = refine(stmt, p, got, tainted, path.stem, pg)
            res.counts[cat] += 1
            if cat == "differs":
                res.differs.append((stmt, p.show(4), got.show(4)))
            elif cat == "refused":
                res.refused.append((stmt, got.show(1)))
    res.seconds = time.monotonic() - start
    return res


def table(results: list[ScriptResult]) -> str:
    lines = ["| script | statements | " + " | ".join(CATEGORIES) + " |",
             "| --- | ---: |" + " ---: |" * len(CATEGORIES)]
    total: Counter[str] = Counter()
    for r in sorted(results, key=lambda r: r.script):
        total.update(r.counts)
        lines.append(f"| {r.script} | {sum(r.counts.values())} | " + " | ".join(str(r.counts[c]) for c in CATEGORIES) + " |")
    lines.append(f"| **total** | {sum(total.values())} | " + " | ".join(str(total[c]) for c in CATEGORIES) + " |")
    return "\n".join(lines)


def run(scripts: list[Path], pg_dsn: str, weir_dsn: str, parallel: int = 2) -> list[ScriptResult]:
    with ThreadPoolExecutor(parallel) as ex:
        return list(ex.map(lambda p: run_script(p, pg_dsn, weir_dsn), scripts))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scripts", nargs="*", help="script names (default: all in ../shared/pg-regress/sql)")
    ap.add_argument("--pg", help="PostgreSQL 15 conninfo (default: start one)")
    ap.add_argument("--weir", help="weir conninfo (default: start `weir serve`)")
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--details", help="write every differing statement to this file")
    ap.add_argument("--refusals", help="write weir's error for every refused statement to this file")
    args = ap.parse_args(argv)
    paths = [SQL_DIR / (s if s.endswith(".sql") else s + ".sql") for s in args.scripts] or sorted(SQL_DIR.glob("*.sql"))
    stop = []
    pg_dsn, weir_dsn = args.pg, args.weir
    if pg_dsn is None:
        from tests.pg_server import start_pg_server

        pg_server = start_pg_server()
        stop.append(pg_server.stop)
        pg_dsn = pg_server.dsn()
    if weir_dsn is None:
        from tests.integration.server import WeirServer

        weir = WeirServer(Path(tempfile.mkdtemp(prefix="weir-pgr-")) / "data").start()
        stop.append(weir.stop)
        weir_dsn = weir.dsn
    try:
        results = run(paths, pg_dsn, weir_dsn, args.parallel)
    finally:
        for f in stop:
            f()
    for r in results:
        print(f"{r.script:20} {dict(r.counts)} skipped={r.skipped} {r.seconds:.0f}s", file=sys.stderr)
    print(table(results))
    if args.details:
        with open(args.details, "w") as f:
            for r in results:
                for stmt, p, w in r.differs:
                    f.write(f"-- {r.script}\n{stmt};\n--   PostgreSQL: {p}\n--   weir:       {w}\n\n")
    if args.refusals:
        with open(args.refusals, "w") as f:
            for r in results:
                for stmt, err in r.refused:
                    f.write(f"-- {r.script}: {err}\n{stmt};\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
