"""Intervals with months stored in tables and computed on Spark (struct<months, days,
micros>), compared with PostgreSQL 15: as a SELECT (text and binary wire formats), as a
materialized view's contents and through an index on a view. PostgreSQL compares, groups
and sorts intervals by their span (30-day months, 24-hour days) but keeps and prints
each value's own fields."""

from __future__ import annotations

import datetime as dt
import time

import psycopg
import pytest

from tests.integration.both_servers import (
    indexed_views_as_postgres,
    materialized_views_as_postgres,
    paired,
    select_as_postgres,
)
from tests.integration.server import WeirServer
from tests.pg_server import pg_server  # noqa: F401

SETUP = [
    "CREATE TABLE iv (id int, i interval)",
    "INSERT INTO iv VALUES (1, INTERVAL '1 month'), (2, INTERVAL '30 days'), (3, INTERVAL '720 hours'), "
    "(4, INTERVAL '1 year 2 mons 3 days 04:05:06.789'), (5, INTERVAL '-1 mon +2 days -03:00:00'), "
    "(6, INTERVAL '0'), (7, NULL), (8, INTERVAL '1 day 2 hours'), (9, INTERVAL '-36 hours'), "
    "(10, INTERVAL '2 mons -1 day')",
    "CREATE TABLE iv2 (k interval, name text)",
    "INSERT INTO iv2 VALUES (INTERVAL '30 days', 'thirty'), (INTERVAL '1 day 02:00:00', 'day2'), "
    "(INTERVAL '-1 mon', 'minus')",
    "CREATE TABLE ivts (ts timestamp, i interval)",
    "CREATE TABLE ivs (id int, s text)",
    "INSERT INTO ivs VALUES (1, '1 mon 2 days'), (2, '1-2 3:4 5 day'), (3, NULL), (4, 'P1Y2M3DT4H5M6S'), "
    "(5, '-1.5 hours'), (6, '@ 3 days ago'), (7, '1 week 2.5 days')",
    "INSERT INTO ivts VALUES ('2024-01-31 10:00', INTERVAL '1 month'), ('2024-02-29', INTERVAL '1 year 1 day'), "
    "('2024-03-31 23:00', INTERVAL '-1 mon 25:00:00'), ('2024-01-01', NULL)",
]

# each is compared as a SELECT, a materialized view and an indexed view
QUERIES = [
    "SELECT id, i FROM iv",
    "SELECT id, i::text AS t FROM iv",
    "SELECT id FROM iv WHERE i = INTERVAL '1 month'",
    "SELECT id FROM iv WHERE i < INTERVAL '30 days'",
    "SELECT id FROM iv WHERE i > INTERVAL '720 hours'",
    "SELECT id FROM iv WHERE i <> INTERVAL '30 days 1 second'",
    "SELECT count(*) AS n, min(id) AS lo FROM iv GROUP BY i",
    "SELECT count(*) AS n FROM (SELECT DISTINCT i FROM iv) s",
    "SELECT a.id, b.name FROM iv a JOIN iv2 b ON a.i = b.k",
    "SELECT sum(i) AS s, avg(i) AS a, min(i) AS lo, max(i) AS hi FROM iv",
    "SELECT id, i * 2.5 AS m, i / 3 AS d, 2 * i AS n, -i AS u, i + INTERVAL '1 mon 1 day' AS p FROM iv",
    "SELECT ts, i, ts + i AS plus, ts - i AS minus FROM ivts",
    "SELECT id, justify_hours(i) AS h, justify_days(i) AS d, justify_interval(i) AS j FROM iv",
    "SELECT id, extract(epoch FROM i) AS e, extract(month FROM i) AS m, extract(day FROM i) AS d, "
    "extract(hour FROM i) AS h, extract(year FROM i) AS y FROM iv",
    "SELECT id, (i * 2.5)::text AS m, (i / 3)::text AS d, justify_interval(i)::text AS j FROM iv",
    # by span as well: IN, BETWEEN, IS DISTINCT FROM, NULLIF, GREATEST / LEAST, PARTITION BY,
    # count(DISTINCT), UNION / INTERSECT / EXCEPT; text columns cast with interval_in
    "SELECT id, i IN (INTERVAL '30 days', INTERVAL '26 hours') AS a, i BETWEEN INTERVAL '1 day' AND '1 mon' AS b, "
    "i IS DISTINCT FROM INTERVAL '720 hours' AS c, i IS NOT DISTINCT FROM NULL AS d FROM iv",
    "SELECT id, NULLIF(i, INTERVAL '30 days')::text AS n, greatest(i, INTERVAL '1 mon', NULL)::text AS g, "
    "least(i, INTERVAL '720 hours')::text AS l FROM iv",
    "SELECT id, count(*) OVER (PARTITION BY i) AS n FROM iv",
    "SELECT count(DISTINCT i) AS n FROM iv",
    "SELECT count(*) AS n FROM (SELECT i FROM iv UNION SELECT k FROM iv2) u",
    "SELECT count(*) AS n, sum(extract(epoch FROM i)) AS e FROM (SELECT i FROM iv INTERSECT SELECT k FROM iv2) u",
    "SELECT i::text AS t FROM (SELECT i FROM iv EXCEPT SELECT k FROM iv2) u",
    "SELECT id, s::interval AS i, (s::interval * 2)::text AS t FROM ivs",
    "SELECT id FROM iv WHERE i IN (SELECT k FROM iv2)",
    "SELECT sum(i) FILTER (WHERE id > 2) AS s, avg(i) FILTER (WHERE id < 9) AS a, "
    "max(i) FILTER (WHERE id > 4) AS m FROM iv",
    "SELECT id, sum(i) OVER (ORDER BY id) AS s, avg(i) OVER (PARTITION BY id % 2) AS a, "
    "min(i) OVER (PARTITION BY id % 2) AS m FROM iv",
    # GROUP BY an interval expression, its position or its name: by span
    "SELECT extract(epoch FROM i * 2) AS e, count(*) AS n FROM iv GROUP BY i * 2",
    "SELECT i * 0 AS z, count(*) AS n FROM iv GROUP BY 1",
    "SELECT i - i AS z, count(*) AS n FROM iv GROUP BY z HAVING count(*) > 1",
    # date_trunc of an interval: interval_trunc, each lower field truncated toward zero
    "SELECT id, date_trunc('hour', i)::text AS h, date_trunc('day', i) AS d, date_trunc('quarter', i)::text AS q, "
    "date_trunc('decade', i * 100)::text AS c, date_trunc('ms', i / 7)::text AS ms, "
    "date_trunc('second', -i / 7) AS s, date_trunc('mon', i) AS mo, date_trunc('microseconds', i / 7) AS us FROM iv",
    # DISTINCT inside sum / avg / min / max: distinct spans (no two values of one span differ here)
    "SELECT sum(DISTINCT i)::text AS s, avg(DISTINCT i) AS a, max(DISTINCT i) AS m, "
    "sum(DISTINCT i) FILTER (WHERE i > INTERVAL '0') AS f, count(*) AS n "
    "FROM (SELECT i FROM iv WHERE id > 2 UNION ALL SELECT i FROM iv WHERE id > 3) u",
]

# each fails with PostgreSQL's SQLSTATE
REFUSED_AS_POSTGRES = [
    "SELECT date_trunc('week', i) FROM iv",
    "SELECT date_trunc('foo', i) FROM iv",
    "SELECT date_trunc('timezone', i) FROM iv",
    "SELECT sum(DISTINCT i) OVER (PARTITION BY id) FROM iv",
]

ORDERED = [
    "SELECT id, i FROM iv ORDER BY i, id",
    "SELECT id, i FROM iv ORDER BY i DESC NULLS LAST, id",
]


@pytest.fixture(scope="module")
def both(server: WeirServer, pg_server):  # noqa: ANN201, F811
    yield from paired(server, pg_server, "interval_storage", SETUP)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("sql", QUERIES)
def test_select_same_as_postgres(both, sql: str, binary: bool) -> None:  # noqa: ANN001
    select_as_postgres(both, sql, binary)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("sql", ORDERED)
def test_order_by_span_as_postgres(both, sql: str, binary: bool) -> None:  # noqa: ANN001
    w, p = both
    with w.cursor(binary=binary) as cw, p.cursor(binary=binary) as cp:
        # equal spans ('1 mon', '30 days', '720 hours') sort together; id breaks the tie
        assert [tuple(map(str, r)) for r in cw.execute(sql).fetchall()] == \
            [tuple(map(str, r)) for r in cp.execute(sql).fetchall()]


@pytest.mark.parametrize("sql", REFUSED_AS_POSTGRES)
def test_errors_as_postgres(both, sql: str) -> None:  # noqa: ANN001
    w, p = both
    states = []
    for conn in (w, p):
        with pytest.raises(psycopg.Error) as caught:
            conn.execute(sql)
        states.append((caught.value.sqlstate, str(caught.value).splitlines()[0]))
    assert states[0] == states[1]


def test_group_keeps_one_of_equal_spans(both) -> None:  # noqa: ANN001
    """GROUP BY i puts '1 mon', '30 days' and '720 hours' in one group; the key shown is one
    of them (PostgreSQL does not say which)."""
    w, _ = both
    rows = w.execute("SELECT i::text, count(*) FROM iv WHERE id IN (1, 2, 3) GROUP BY i").fetchall()
    assert len(rows) == 1 and rows[0][1] == 3 and rows[0][0] in ("1 mon", "30 days", "720:00:00")


@pytest.mark.timeout(900)  # 31 views, each planned and hydrated: over 300 s beside another worker
def test_materialized_views_as_postgres(both) -> None:  # noqa: ANN001
    materialized_views_as_postgres(both, "iv_mv", QUERIES, change=(
        "INSERT INTO iv VALUES (11, INTERVAL '3 mons 00:00:01')", "DELETE FROM iv WHERE id = 11"))


@pytest.mark.timeout(900)
def test_indexed_views_as_postgres(both) -> None:  # noqa: ANN001
    indexed_views_as_postgres(both, "iv_v", QUERIES)


@pytest.mark.parametrize("where", ["i = INTERVAL '1 mon'", "i = '720 hours'", "i > INTERVAL '1 mon' OR i IS NULL"])
def test_index_lookup_by_span(both, where: str) -> None:  # noqa: ANN001
    """A filter or ORDER BY on an indexed interval column is answered by span ('1 mon' finds
    '30 days' and '720 hours'), not by the fields an arrangement holds."""
    w, p = both
    w.execute("CREATE VIEW iv_idx AS SELECT id, i FROM iv")
    w.execute("CREATE INDEX iv_idx_i ON iv_idx (i)")
    try:
        sql = f"SELECT id, i FROM {{}} WHERE {where} ORDER BY i, id"
        want = [tuple(map(str, r)) for r in p.execute(sql.format("iv")).fetchall()]
        assert [tuple(map(str, r)) for r in w.execute(sql.format("iv_idx")).fetchall()] == want
        time.sleep(3)  # hydrated by now: read from the index's arrangement
        assert [tuple(map(str, r)) for r in w.execute(sql.format("iv_idx")).fetchall()] == want
        rows = w.execute("SELECT id, i::text FROM iv_idx").fetchall()  # the fast path's projection
        assert sorted(map(str, rows)) == sorted(map(str, p.execute("SELECT id, i::text FROM iv").fetchall()))
    finally:
        w.execute("DROP VIEW IF EXISTS iv_idx CASCADE")


def test_parameters_and_text_of_stored_intervals(both) -> None:  # noqa: ANN001
    """An interval parameter (psycopg sends timedelta) compares by span; ::text, || and
    the wire text of stored values are PostgreSQL's."""
    w, p = both
    for conn in both:
        conn.execute("SELECT 1")
    sql = "SELECT id, i::text, 'x' || i FROM iv WHERE i = %s ORDER BY id"
    assert w.execute(sql, [dt.timedelta(days=30)]).fetchall() == p.execute(sql, [dt.timedelta(days=30)]).fetchall()


def test_subscribe_sends_each_interval_with_its_fields(server: WeirServer) -> None:
    """SUBSCRIBE's snapshot of a table of intervals: '1 mon' and '30 days' are two rows."""
    with server.connect() as c:
        c.execute("CREATE TABLE iv_sub (i interval)")
        c.execute("INSERT INTO iv_sub VALUES (INTERVAL '1 mon'), (INTERVAL '30 days'), (INTERVAL '30 days')")
        c.execute("BEGIN")
        c.execute("DECLARE cur CURSOR FOR SUBSCRIBE (SELECT i::text AS t, i FROM iv_sub)")
        rows = c.execute("FETCH ALL cur WITH (timeout = '5s')").fetchall()
        c.execute("COMMIT")
        counts: dict[str, int] = {}
        for r in rows:
            counts[r[2]] = counts.get(r[2], 0) + r[1]
        assert counts == {"1 mon": 1, "30 days": 2}
