"""pgjdbc's DatabaseMetaData (issue 14), what DBeaver and DataGrip call: getTables,
getColumns, getSchemas, getTypeInfo, getPrimaryKeys, getCatalogs, getIndexInfo.

java/WeirJdbcMetadata.java prints every column of every result set those calls return; it
runs against weir and against the real PostgreSQL 15 holding the same schema, table, view,
materialized view and index, and the answers are compared column by column, after
normalising only what must differ (the database's name, an index's access method and
physical statistics, the relation kind of a system catalog). Their catalog queries run in
process, not on a replica.
"""

from __future__ import annotations

import difflib
import subprocess
from dataclasses import dataclass, field

import psycopg
import pytest

from tests.integration.java_client import compile_program
from tests.integration.server import WeirServer
from tests.pg_server import pg_server  # noqa: F401
from weir.catalog.pg_types import typname
from weir.types import BY_OID

SCHEMA, TABLE, PG_DATABASE = "jdm", "jdm_t", "jdbcmd"  # a table name no other test uses

OBJECTS = [
    f"CREATE SCHEMA {SCHEMA}",
    f"CREATE TABLE {SCHEMA}.{TABLE} (id int NOT NULL, big bigint, name text, amount numeric(10,2), "
    "f double precision, ok boolean, ts timestamp, d date, doc jsonb, tags text[], code varchar(12), "
    "at timestamptz, r real, s smallint)",
    f"CREATE TABLE {SCHEMA}.other (k text)",
    f"CREATE VIEW {SCHEMA}.v AS SELECT id, name, amount FROM {SCHEMA}.{TABLE}",
    f"CREATE MATERIALIZED VIEW {SCHEMA}.mv AS SELECT count(*) AS n, max(amount) AS top FROM {SCHEMA}.{TABLE}",
    f"CREATE INDEX {TABLE}_idx ON {SCHEMA}.{TABLE} (id)",
]


@dataclass
class Answer:
    """One DatabaseMetaData call's result set (or its error)."""

    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, str]] = field(default_factory=list)
    error: str | None = None


def parse(out: str) -> dict[str, Answer]:
    """The program's output: the answer of each call, by the call's title."""
    answers: dict[str, Answer] = {}
    current: Answer | None = None
    for line in out.splitlines():
        if line.startswith("== "):
            title = line[3:].replace(f", {SCHEMA},", ", S,").replace(f", {SCHEMA})", ", S)")
            current = answers.setdefault(title, Answer())
        elif current is not None and line.startswith("columns="):
            current.columns = line[len("columns="):].split("|")
        elif current is not None and line.startswith("row="):
            current.rows.append(dict(zip([c.split(":")[0] for c in current.columns], _split(line[4:]), strict=True)))
        elif current is not None and line.startswith("error="):
            current.error = line[len("error="):]
    return answers


def _split(row: str) -> list[str]:
    r"""A row's values: '|' separates, '\' escapes."""
    values, value, escaped = [], "", False
    for ch in row:
        if escaped:
            value += ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "|":
            values.append(value)
            value = ""
        else:
            value += ch
    values.append(value)
    return values


@pytest.fixture(scope="module")
def jdbc_program(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return compile_program(tmp_path_factory, "WeirJdbcMetadata")


def run(program: list[str], url: str, user: str) -> dict[str, Answer]:
    p = subprocess.run([*program, url, user, SCHEMA, TABLE], capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    assert p.stdout.splitlines()[-1] == "done", p.stdout
    return parse(p.stdout)


@pytest.fixture(scope="module")
def answers(jdbc_program: list[str], server: WeirServer, pg_server) -> tuple[dict[str, Answer], dict[str, Answer]]:  # noqa: ANN001, F811
    """(weir's answers, PostgreSQL's answers) for the same objects."""
    pg_server.create_database(PG_DATABASE)
    with server.connect() as w, psycopg.connect(pg_server.dsn(PG_DATABASE), autocommit=True) as p:
        for sql in OBJECTS:
            w.execute(sql)
            p.execute(sql)
    weir = run(jdbc_program, f"jdbc:postgresql://127.0.0.1:{server.sql_port}/materialize", "materialize")
    pg = run(jdbc_program, f"jdbc:postgresql://{pg_server.host}:{pg_server.port}/{PG_DATABASE}", pg_server.user)
    return weir, pg


def _rows(a: Answer) -> list[str]:
    return ["|".join(f"{k}={v}" for k, v in r.items()) for r in a.rows]


def assert_same(got: Answer, expected: Answer, call: str) -> None:
    assert expected.error is None, (call, expected.error)
    assert got.error is None, (call, got.error)
    assert got.columns == expected.columns, call
    assert got.rows == expected.rows, f"{call}\n" + "\n".join(
        difflib.unified_diff(_rows(expected), _rows(got), "postgres", "weir", lineterm=""))


SAME = ["getSchemas(null, S)", "getTables(null, S, %, null)", "getTables(null, S, %, [TABLE, VIEW, MATERIALIZED VIEW])",
        f"getTables(null, null, {TABLE}, [TABLE])", "getColumns(null, S, %, %)", f"getColumns(null, S, {TABLE}, n%)",
        f"getPrimaryKeys(null, S, {TABLE})", "getTableTypes()"]


@pytest.mark.parametrize("call", SAME)
def test_same_as_postgres(answers, call: str) -> None:  # noqa: ANN001
    weir, pg = answers
    assert_same(weir[call], pg[call], call)


def test_product(answers) -> None:  # noqa: ANN001
    weir, _ = answers
    assert weir["getCatalogs()"].rows == [{"TABLE_CAT": "materialize"}]


def test_schemas(answers) -> None:  # noqa: ANN001
    """Every schema PostgreSQL lists (but pg_toast's kind) weir lists too, and its own."""
    weir, pg = answers
    got = {r["table_schem"] for r in weir["getSchemas()"].rows}  # pgjdbc keeps the server's labels
    assert {r["table_schem"] for r in pg["getSchemas()"].rows} <= got
    assert {"mz_catalog", "mz_internal", SCHEMA} <= got
    assert weir["getSchemas()"].columns == pg["getSchemas()"].columns


def test_system_table(answers) -> None:  # noqa: ANN001
    """pg_catalog.pg_class is listed (a view of weir's catalog, as in Materialize)."""
    weir, pg = answers
    call = "getTables(null, pg_catalog, pg_class, null)"
    assert weir[call].error is None, weir[call].error
    assert weir[call].columns == pg[call].columns
    assert [(r["TABLE_SCHEM"], r["TABLE_NAME"], r["TABLE_TYPE"]) for r in weir[call].rows] in (
        [("pg_catalog", "pg_class", "SYSTEM TABLE")], [("pg_catalog", "pg_class", "SYSTEM VIEW")])


@pytest.mark.parametrize("unique", ["false", "true"])
def test_index_info(answers, unique: str) -> None:  # noqa: ANN001
    """An index is an arrangement in weir: its access method is not btree (no ASC_OR_DESC),
    and its size statistics are weir's own."""
    weir, pg = answers
    call = f"getIndexInfo(null, S, {TABLE}, {unique}, false)"
    got, expected = weir[call], pg[call]
    for a in (got, expected):
        for r in a.rows:
            assert int(r.pop("PAGES")) >= 0 and float(r.pop("CARDINALITY")) >= -1
            assert r.pop("ASC_OR_DESC") in ("A", "NULL")
    assert_same(got, expected, call)


def test_type_info(answers) -> None:  # noqa: ANN001
    """Every type weir has is listed, with the properties PostgreSQL gives it."""
    weir, pg = answers
    got, expected = weir["getTypeInfo()"], pg["getTypeInfo()"]
    assert got.error is None, got.error
    assert got.columns == expected.columns
    by_name = {r["TYPE_NAME"]: r for r in got.rows}
    pg_by_name = {r["TYPE_NAME"]: r for r in expected.rows}
    assert len(by_name) == len(got.rows)
    assert {typname(t) for t in BY_OID.values()} | {"serial", "bigserial", "smallserial"} <= set(by_name)
    differ = {n: (r, pg_by_name[n]) for n, r in by_name.items() if n in pg_by_name and r != pg_by_name[n]}
    assert not differ, differ
    assert set(by_name) - set(pg_by_name) == {"mz_timestamp", "_mz_timestamp"}
    assert by_name["mz_timestamp"]["DATA_TYPE"] == "1111" and by_name["_mz_timestamp"]["DATA_TYPE"] == "2003"
    # sorted by DATA_TYPE, as pgjdbc sorts
    codes = [int(r["DATA_TYPE"]) for r in got.rows]
    assert codes == sorted(codes)


def test_metadata_runs_in_process(jdbc_program: list[str], server: WeirServer, answers) -> None:  # noqa: ANN001
    """pgjdbc's catalog queries run in the coordinator, not on a replica."""
    url = f"jdbc:postgresql://127.0.0.1:{server.sql_port}/materialize"
    before = {s: server.metric("weir_reads_total", strategy=s) for s in ("in-process", "standard")}
    run(jdbc_program, url, "materialize")
    ran = {s: server.metric("weir_reads_total", strategy=s) - before[s] for s in before}
    assert ran["standard"] == 0, f"{ran['standard']} catalog queries of pgjdbc ran on a replica"
    assert ran["in-process"] >= 8


# ---------------------------------------------------------------- the rewrites, without a server

TYPE_QUERY = (  # pgjdbc's TypeInfoCache query (getColumns, getTypeInfo)
    "SELECT typinput='pg_catalog.array_in'::regproc as is_array, typtype, typname, pg_type.oid "
    "FROM pg_catalog.pg_type LEFT JOIN (select ns.oid as nspoid, ns.nspname, r.r from pg_namespace as ns "
    "join ( select s.r, (current_schemas(false))[s.r] as nspname from generate_series(1, "
    "array_upper(current_schemas(false), 1)) as s(r) ) as r using ( nspname ) ) as sp "
    "ON sp.nspoid = typnamespace ORDER BY sp.r, pg_type.oid DESC")
KEYS_QUERY = (  # pgjdbc's getPrimaryKeys
    "SELECT result.TABLE_CAT, result.KEY_SEQ FROM (SELECT NULL AS TABLE_CAT, "
    "(information_schema._pg_expandarray(i.indkey)).n AS KEY_SEQ, information_schema._pg_expandarray(i.indkey) "
    "AS KEYS, a.attnum AS A_ATTNUM FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_index i "
    "ON (a.attrelid = i.indrelid) WHERE i.indisprimary) result WHERE result.A_ATTNUM = (result.KEYS).x")


def _duckdb_of(sql: str) -> str:
    import sqlglot

    from weir.sql import catalog_functions
    from weir.sql.dialect import Weir
    from weir.sql.in_process import to_duckdb
    from weir.sql.render import to_spark

    spark = to_spark(catalog_functions.rewrite(sqlglot.parse_one(sql, read=Weir)))
    return to_duckdb(spark.replace("CURRENT_SCHEMAS(FALSE)", "ARRAY('pg_catalog', 'public')"))


@pytest.mark.parametrize("sql", [TYPE_QUERY, KEYS_QUERY])
def test_pgjdbc_queries_run_in_process(sql: str) -> None:
    """What the in-process engine needs of them: series, lateral unnest, regproc literals."""
    out = _duckdb_of(sql)
    assert "'array_in'" in out or "weir_e" in out


def test_ordinality_and_subscripts_count_from_one() -> None:
    import duckdb

    sql = _duckdb_of("SELECT k.x, k.n, (current_schemas(false))[k.n] AS s FROM (SELECT 1 AS a) t, "
                     "unnest(ARRAY[5, 6]) WITH ORDINALITY AS k(x, n)")
    assert duckdb.sql(sql.replace("(SELECT 1 AS a) AS t", "(SELECT 1 AS a) t")).fetchall() == [
        (5, 1, "pg_catalog"), (6, 2, "public")]
