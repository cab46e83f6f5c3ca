"""System reads in process (issue 14 part 4): a query over system relations only runs in the
coordinator (DuckDB), and answers exactly what the Spark path answers for it: a corpus of
catalog queries run both ways (enable_system_reads_in_process on / off) on a real server:
psql's, SQLAlchemy's, pgjdbc's, DBeaver's and Metabase's, and hand-written ones."""

from __future__ import annotations

import collections
import os
import time
from typing import Any

import psycopg
import pytest

from tests.integration.catalog_corpus import CORPUS
from tests.integration.server import WeirServer, wait_for_rows

SETUP = [
    "CREATE TABLE sr_t (a int NOT NULL, b text, c numeric(10,2), d timestamptz)",
    "CREATE VIEW sr_v AS SELECT a, b FROM sr_t WHERE a > 0",
    "CREATE MATERIALIZED VIEW sr_mv AS SELECT b, count(*) AS n FROM sr_t GROUP BY b",
    "CREATE INDEX sr_idx ON sr_t (a)",
    "CREATE SCHEMA sr_s",
    "CREATE TABLE sr_s.sr_u (x jsonb, y int[])",
    "CREATE ROLE sr_r",
    "GRANT SELECT ON sr_t TO sr_r",
]

# Catalog queries as tools send them (psql, SQLAlchemy, pgjdbc, DBeaver, Metabase) and
# hand-written ones: tests/integration/catalog_corpus.py
assert len(CORPUS) >= 60

# Tools' catalog queries left out of the corpus, and why
DROPPED: dict[str, str] = {
    "DBeaver's pg_get_keywords() (the keyword list it highlights)": "pg_get_keywords() is not in weir",
}

# ... of which these still run on a replica, with the reason (weir.sql.in_process)
ON_A_REPLICA: dict[str, str] = {}


def _rows(conn: psycopg.Connection, sql: str) -> tuple[list[tuple[Any, Any]], collections.Counter]:
    cur = conn.execute(sql)
    desc = [(d.name, d.type_code) for d in cur.description or []]
    return desc, collections.Counter(tuple(_hashable(v) for v in r) for r in cur.fetchall())


def _hashable(v: Any) -> Any:
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v


@pytest.fixture(scope="module")
def both(server: WeirServer):  # noqa: ANN201
    with server.connect() as c:
        for sql in SETUP:
            try:
                c.execute(sql)
            except psycopg.errors.DuplicateObject:
                pass
    with server.connect() as spark, server.connect() as here:
        spark.execute("SET enable_system_reads_in_process = off")
        yield spark, here
    with server.connect() as c:  # a view left on the shared server keeps its replica busy
        for sql in ("DROP MATERIALIZED VIEW IF EXISTS sr_mv", "DROP INDEX IF EXISTS sr_idx"):
            c.execute(sql)


# Each query on the Spark path costs 3-20 s (it binds every system relation it reads), so
# the suite compares every third one, spread over the tools (WEIR_SYSTEM_READS_ALL=1: all
# of them); test_catalog_reads_run_in_process still runs the whole corpus in process.
COMPARED = CORPUS if os.environ.get("WEIR_SYSTEM_READS_ALL") else CORPUS[::3]


@pytest.mark.parametrize("sql", COMPARED)
def test_same_answer_as_the_spark_path(both, sql: str) -> None:  # noqa: ANN001
    spark, here = both
    for _ in range(3):  # runtime relations may change between the two reads: try again
        expected, got = _rows(spark, sql), _rows(here, sql)
        if expected == got:
            break
        time.sleep(0.5)
    assert got == expected


def test_catalog_reads_run_in_process(server: WeirServer, both) -> None:  # noqa: ANN001
    _, here = both
    elsewhere = []
    for sql in CORPUS:
        if sql in ON_A_REPLICA:
            continue
        before = server.metric("weir_reads_total", strategy="in-process")
        here.execute(sql).fetchall()
        if server.metric("weir_reads_total", strategy="in-process") == before:
            elsewhere.append(sql)
    assert not elsewhere, f"{len(elsewhere)} of {len(CORPUS)} catalog queries took a replica"


@pytest.mark.parametrize("sql", [
    "SELECT 'sr_missing'::regclass",
    "SELECT ('sr_s.' || 'missing')::regclass",
    "SELECT has_table_privilege(current_user, 'sr_s.' || 'missing', 'SELECT')",
    "SELECT count(*) FROM pg_catalog.pg_attribute WHERE attrelid = 'sr_missing'::regclass",
])
def test_a_name_naming_nothing_fails_in_process(server: WeirServer, both, sql: str) -> None:  # noqa: ANN001
    """The query's own error (class 42) comes from the in-process engine, as Spark raises it,
    without a Spark job (they took 3-12 s each on a replica)."""
    spark, here = both
    failures = []
    for conn in (spark, here):
        before = server.metric("weir_reads_total", strategy="in-process")
        with pytest.raises(psycopg.Error) as caught:
            conn.execute(sql)
        failures.append((caught.value.sqlstate, caught.value.diag.message_primary))
    assert failures[0] == failures[1] and failures[0][0] == "42P01"
    assert server.metric("weir_reads_total", strategy="in-process") > before  # `here`'s read


def test_in_process_is_off_for_user_data(server: WeirServer, both) -> None:  # noqa: ANN001
    _, here = both
    before = server.metric("weir_reads_total", strategy="in-process")
    here.execute("SELECT * FROM sr_t, mz_catalog.mz_tables").fetchall()
    assert server.metric("weir_reads_total", strategy="in-process") == before


def test_repeated_reads_see_each_change(server: WeirServer, both) -> None:  # noqa: ANN001
    """The engine keeps its inputs registered, its statements prepared and its answers
    between reads: the same query after each CREATE and DROP answers from the new contents
    (each read twice: the second is a kept answer)."""
    _, here = both

    def read(sql: str) -> list[tuple[Any, ...]]:
        first = here.execute(sql).fetchall()
        assert here.execute(sql).fetchall() == first
        return first

    sql = "SELECT name FROM mz_catalog.mz_tables WHERE name LIKE 'sr_rep%' ORDER BY name"
    here.execute("DROP TABLE IF EXISTS sr_rep1")
    here.execute("DROP TABLE IF EXISTS sr_rep2")
    assert read(sql) == []
    here.execute("CREATE TABLE sr_rep1 (a int)")
    assert read(sql) == [("sr_rep1",)]
    here.execute("CREATE TABLE sr_rep2 (a int)")
    here.execute("DROP TABLE sr_rep1")
    assert read(sql) == [("sr_rep2",)]
    shown = "SHOW TABLES LIKE 'sr_rep%'"
    assert read(shown) == [("sr_rep2", "")]
    here.execute("DROP TABLE sr_rep2")
    assert read(sql) == []
    assert read(shown) == []


def test_kept_answers_follow_sessions_and_settings(server: WeirServer, both) -> None:  # noqa: ANN001
    """A kept answer is never one of another time's: live sessions come and go, and a
    session's own values (search_path, now()) are the statement's."""
    _, here = both
    sessions = "SELECT count(*) FROM pg_catalog.pg_stat_activity"
    before = here.execute(sessions).fetchone()[0]
    assert here.execute(sessions).fetchone()[0] == before
    with server.connect() as other:
        wait_for_rows(here, sessions, lambda rows: rows == [(before + 1,)], timeout=10)
        mine = "SELECT current_setting('search_path'), count(*) > 0 FROM mz_catalog.mz_tables"
        assert here.execute(mine).fetchall() == other.execute(mine).fetchall()
        other.execute("SET search_path = sr_s")
        assert other.execute(mine).fetchall() == [("sr_s", True)]
        assert here.execute(mine).fetchall()[0][0] != "sr_s"
    wait_for_rows(here, sessions, lambda rows: rows == [(before,)], timeout=10)
    clock = "SELECT now()::text, count(*) FROM mz_catalog.mz_tables"
    first = here.execute(clock).fetchone()[0]
    time.sleep(0.01)
    assert here.execute(clock).fetchone()[0] != first
