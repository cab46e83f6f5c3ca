"""Query shapes PostgreSQL rejects or Spark would compute differently (weir.sql.shape),
and write clauses weir would otherwise drop (weir.adapter.dml)."""

from __future__ import annotations

import pytest
import sqlglot

from weir.adapter.dml import refuse_unknown_clauses
from weir.errors import WeirError
from weir.sql.parse import parse_statement
from weir.sql.render import to_spark


def _spark(sql: str) -> str:
    return to_spark(sqlglot.parse_one(sql, read="postgres"))


@pytest.mark.parametrize(("sql", "state", "message"), [
    ("SELECT 1::money", "0A000", 'type "money" is not supported'),
    ("SELECT '12:00'::time", "0A000", 'type "time" is not supported'),
    ("SELECT a::foo FROM t", "42704", 'type "foo" does not exist'),
    ("SELECT a FROM t FOR UPDATE", "0A000", "FOR UPDATE"),
    ("SELECT a FROM t FOR NO KEY UPDATE", "0A000", "FOR UPDATE"),
    ("SELECT rank() OVER (ORDER BY rank() OVER (ORDER BY a)) FROM t", "42P20", "window definitions"),
    ("SELECT string_agg(DISTINCT a::text, ',' ORDER BY a) FROM t", "42P10", "argument list"),
    ("SELECT array_agg(DISTINCT a ORDER BY b) FROM t", "42P10", "argument list"),
    ("SELECT array_agg(a) FILTER (WHERE a > 1) OVER () FROM t", "0A000", "FILTER"),
    ("SELECT DISTINCT ON (a) * FROM t ORDER BY a", "0A000", "DISTINCT ON with *"),
    ("SELECT DISTINCT ON (3) a, b FROM t", "42P10", "DISTINCT ON position 3"),
])
def test_refused_shapes(sql: str, state: str, message: str) -> None:
    with pytest.raises(WeirError) as e:
        _spark(sql)
    assert e.value.sqlstate == state and message in e.value.message


def test_window_filter_is_a_conditional_argument() -> None:
    out = _spark("SELECT sum(a) FILTER (WHERE b > 1) OVER (), count(*) FILTER (WHERE b > 1) OVER () FROM t")
    assert "FILTER" not in out.upper()
    assert "SUM(CASE WHEN b > 1 THEN a END) OVER ()" in out
    assert "COUNT(CASE WHEN b > 1 THEN 1 END) OVER ()" in out


def test_distinct_on_orders_its_result_and_spells_out_positions() -> None:
    out = _spark("SELECT DISTINCT ON (1) a AS x, b FROM t ORDER BY 1, b DESC LIMIT 3")
    assert "PARTITION BY a ORDER BY a" in out  # not the constant 1
    assert out.endswith("ORDER BY _weir_o0 NULLS LAST, _weir_o1 DESC NULLS FIRST LIMIT 3")
    assert "WHERE _weir_rn = 1" in out


@pytest.mark.parametrize(("sql", "message"), [
    ("INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING", "INSERT ... ON CONFLICT"),
    ("INSERT INTO t VALUES (1) RETURNING *", "INSERT ... RETURNING"),
    ("UPDATE t SET a = 1 FROM u WHERE t.a = u.a", "UPDATE ... FROM"),
    ("DELETE FROM t WHERE a = 1 RETURNING a", "DELETE ... RETURNING"),
    ("WITH x AS (SELECT 1) DELETE FROM t WHERE a IN (SELECT * FROM x)", "WITH ... DELETE"),
])
def test_write_clauses_refused_by_name(sql: str, message: str) -> None:
    with pytest.raises(WeirError) as e:
        refuse_unknown_clauses(sqlglot.parse_one(sql, read="postgres"))
    assert e.value.sqlstate == "0A000" and message in e.value.message


def test_delete_using_is_understood() -> None:
    refuse_unknown_clauses(sqlglot.parse_one("DELETE FROM t USING u WHERE t.a = u.a", read="postgres"))


@pytest.mark.parametrize(("sql", "message"), [
    ("CREATE TEMP TABLE t (a int) ON COMMIT DELETE ROWS", "CREATE TEMPORARY TABLE ... ON COMMIT DELETE ROWS"),
    ("CREATE TEMP TABLE t (a int) ON COMMIT DROP", "CREATE TEMPORARY TABLE ... ON COMMIT DROP"),
    ("CREATE TEMP TABLE t AS SELECT 1", "CREATE TEMPORARY TABLE ... AS"),
    ("CREATE TEMPORARY MATERIALIZED VIEW v AS SELECT 1", "CREATE TEMPORARY MATERIALIZED VIEW"),
    ("CREATE UNLOGGED TABLE t (a int)", "CREATE UNLOGGED TABLE"),
    ("CREATE TABLE c (b int) INHERITS (p)", "INHERITS"),
    ("CREATE TABLE p (a int) PARTITION BY RANGE (a)", "PARTITION BY"),
    ("CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (0) TO (10)", "PARTITION OF"),
    ("CREATE TABLE t (a int) WITH (fillfactor=10)", "WITH (fillfactor=10)"),
])
def test_table_options_refused_by_name(sql: str, message: str) -> None:
    with pytest.raises(WeirError) as e:
        parse_statement(sql)
    assert e.value.sqlstate == "0A000" and message in e.value.message
