"""SQLAlchemy 2 (psycopg 3) and pandas against weir (issue 14: the tools users already have).

SQLAlchemy's first connection fetches hstore's type through psycopg's TypeInfo.fetch, in a
SAVEPOINT: savepoints are compared with a real PostgreSQL 15 first. Then the inspector's
catalog queries run, in process, and answer as PostgreSQL does for the same table and view;
pandas reads a query's rows with their dtypes.
"""

from __future__ import annotations

import psycopg
import pytest

from tests.integration.server import WeirServer
from tests.pg_server import pg_server  # noqa: F401

sa = pytest.importorskip("sqlalchemy")
pd = pytest.importorskip("pandas")

TABLE = ("CREATE TABLE sqla.t (id int NOT NULL, name text, price numeric(10,2), created timestamp, "
         "flag boolean, d double precision)")
ROWS = "INSERT INTO sqla.t VALUES (1, 'a', 1.50, '2024-01-01 00:00:00', true, 0.5), (2, NULL, NULL, NULL, false, NULL)"
VIEW = "CREATE VIEW sqla.v AS SELECT id, name FROM sqla.t"


def _url(server: WeirServer) -> str:
    return f"postgresql+psycopg://materialize@127.0.0.1:{server.sql_port}/materialize"


@pytest.fixture(scope="module")
def both(server: WeirServer, pg_server):  # noqa: ANN201, F811
    """The same schema, table and view in weir and in PostgreSQL; their SQLAlchemy URLs."""
    pg_url = pg_server.create_database("sqla")
    with server.connect() as w, psycopg.connect(pg_server.dsn("sqla"), autocommit=True) as p:
        for sql in ("CREATE SCHEMA sqla", TABLE, ROWS, VIEW):
            w.execute(sql)
            p.execute(sql)
        w.execute("CREATE MATERIALIZED VIEW sqla.mv AS SELECT count(*) AS n FROM sqla.t")
        p.execute("CREATE MATERIALIZED VIEW sqla.mv AS SELECT count(*) AS n FROM sqla.t")
        for c in (w, p):
            c.execute("CREATE INDEX t_name_idx ON sqla.t (name, id)")
            c.execute("CREATE INDEX t_upper_idx ON sqla.t (upper(name))")
    return _url(server), pg_url


def _outcome(conn: psycopg.Connection, sql: str) -> tuple[str, str | None, str]:
    """(sqlstate or 'ok', the message, the transaction status after it)."""
    try:
        conn.execute(sql)
        code, message = "ok", None
    except psycopg.Error as e:
        code, message = e.sqlstate or "?", e.diag.message_primary
    return code, message, conn.info.transaction_status.name


SCRIPT = [
    "SAVEPOINT a", "RELEASE SAVEPOINT a", "ROLLBACK TO SAVEPOINT a",  # outside a transaction block
    "BEGIN", "SAVEPOINT a", "SET LOCAL application_name = 'inner'", "RELEASE nope", "SAVEPOINT b",
    "ROLLBACK TO a", "RELEASE a", "ROLLBACK TO a", "ROLLBACK",
    "BEGIN", "SET application_name = 'kept'", "SAVEPOINT s", "SET application_name = 'undone'",
    "SELECT 1/0", "SELECT 1", "RELEASE s", "ROLLBACK TO s", "SELECT 1", "COMMIT",
]


def test_savepoints_as_postgres(server: WeirServer, pg_server) -> None:  # noqa: F811
    """Errors (25P01 outside a block, 3B001 for an unknown name, 25P02 while failed), the
    transaction status after each statement, and what ROLLBACK TO undoes (SET and a failure)."""
    pg_server.create_database("sqla_sp")
    with server.connect() as w, psycopg.connect(pg_server.dsn("sqla_sp"), autocommit=True) as p:
        got = [(sql, _outcome(w, sql)) for sql in SCRIPT]
        expected = [(sql, _outcome(p, sql)) for sql in SCRIPT]
        assert got == expected
        names = [c.execute("SHOW application_name").fetchone()[0] for c in (w, p)]
        assert names == ["kept", "kept"]


def test_rollback_to_undoes_buffered_writes(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE TABLE sp_t (x int)")
        for sql in ("BEGIN", "INSERT INTO sp_t VALUES (1)", "SAVEPOINT s", "INSERT INTO sp_t VALUES (2)",
                    "ROLLBACK TO SAVEPOINT s", "INSERT INTO sp_t VALUES (3)", "COMMIT"):
            c.execute(sql)
        assert sorted(r[0] for r in c.execute("SELECT x FROM sp_t").fetchall()) == [1, 3]


def _index(i: dict) -> dict:
    """An index as reflected, but for how it is kept: weir's are arrangements, PostgreSQL's
    B-trees (dialect_options' postgresql_using), and weir stores a key expression as its
    SQL parser writes it back (UPPER(name))."""
    out = {k: v for k, v in i.items() if k != "dialect_options"}
    if "expressions" in out:
        out["expressions"] = [e.lower() for e in out["expressions"]]
    return out


def test_inspector_as_postgres(server: WeirServer, both) -> None:  # noqa: ANN001
    """The inspector's answers are PostgreSQL's (columns, keys, indexes: their reflection
    queries run unnest() and generate_subscripts() in lockstep), and none of its queries
    reaches a replica."""
    weir_url, pg_url = both
    engines = [sa.create_engine(weir_url), sa.create_engine(pg_url)]
    try:
        with engines[0].connect() as c:  # the first connection: TypeInfo.fetch in a SAVEPOINT
            assert c.execute(sa.text("SELECT 1")).scalar() == 1
        answers = []
        for engine in engines:
            insp = sa.inspect(engine)
            before = server.metric("weir_reads_total", strategy="standard")
            answers.append({
                "tables": insp.get_table_names(schema="sqla"),
                "views": insp.get_view_names(schema="sqla"),
                "mviews": insp.get_materialized_view_names(schema="sqla"),
                "foreign_keys": insp.get_foreign_keys("t", schema="sqla"),
                "has_t": insp.has_table("t", schema="sqla"),
                "has_nope": insp.has_table("nope", schema="sqla"),
                "schemas": "sqla" in insp.get_schema_names(),
                "columns": [{**c, "type": repr(c["type"])} for c in insp.get_columns("t", schema="sqla")],
                "view_columns": [{**c, "type": repr(c["type"])} for c in insp.get_columns("v", schema="sqla")],
                "pk": insp.get_pk_constraint("t", schema="sqla"),
                "unique": insp.get_unique_constraints("t", schema="sqla"),
                "check": insp.get_check_constraints("t", schema="sqla"),
                "indexes": sorted((_index(i) for i in insp.get_indexes("t", schema="sqla")), key=lambda i: i["name"]),
            })
            if engine is engines[0]:
                assert server.metric("weir_reads_total", strategy="standard") == before
        assert answers[0] == answers[1]
        assert [i["name"] for i in answers[0]["indexes"]] == ["t_name_idx", "t_upper_idx"]
    finally:
        for engine in engines:
            engine.dispose()


def test_pandas_read_sql_query(both) -> None:  # noqa: ANN001
    weir_url, pg_url = both
    frames = []
    for url in (weir_url, pg_url):
        engine = sa.create_engine(url)
        try:
            frames.append(pd.read_sql_query("SELECT id, name, price, created, flag, d FROM sqla.t ORDER BY id",
                                            engine))
        finally:
            engine.dispose()
    got, expected = frames
    assert dict(got.dtypes.astype(str)) == dict(expected.dtypes.astype(str))
    pd.testing.assert_frame_equal(got, expected)


def test_pandas_read_sql_table(both) -> None:  # noqa: ANN001
    weir_url, _ = both
    engine = sa.create_engine(weir_url)
    try:
        frame = pd.read_sql_table("t", engine, schema="sqla")
    finally:
        engine.dispose()
    assert sorted(frame["id"]) == [1, 2]
    assert list(frame.columns) == ["id", "name", "price", "created", "flag", "d"]
