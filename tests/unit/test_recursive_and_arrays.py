"""SQL that asyncpg's type introspection needs (issue 14): `oid[]` casts, WITH RECURSIVE
and CTEs nested in correlated subqueries kept in place for Spark, array_agg(... ORDER BY)
run in process on DuckDB with Spark's order, regtype output of 0 and of unknown oids, and
result types Spark cannot express (oid[], "char") from inference."""

from __future__ import annotations

import pyarrow as pa
import pytest
import sqlglot
from sqlglot import exp

from weir.adapter.system_reads import Engine
from weir.sql import infer
from weir.sql.catalog_format_type import format_type_sql
from weir.sql.dialect import Weir
from weir.sql.in_process import NotInProcess, to_duckdb
from weir.sql.spark_dialect import WeirSpark

ROWS = pa.table({"g": pa.array([1, 1, 1, 2], pa.int32()), "k": pa.array([2, None, 1, 5], pa.int32()),
                 "v": pa.array(["b", "n", None, "x"])})
TYPES = pa.table({"oid": pa.array([1, 2, 3, 4], pa.int32()), "base": pa.array([0, 1, 2, 0], pa.int32())})


@pytest.fixture(scope="module")
def engine():  # noqa: ANN201
    e = Engine()
    yield e
    e.close()


def test_oid_array_casts_parse() -> None:
    for sql in ("SELECT $1::oid[]", "SELECT CAST(x AS oid[])", "SELECT x::regtype[]"):
        cast = sqlglot.parse_one(sql, read=Weir).find(exp.Cast)
        assert cast is not None and cast.to.this == exp.DataType.Type.ARRAY, sql
        assert isinstance(cast.to.expressions[0], exp.ObjectIdentifier)
    assert sqlglot.parse_one("SELECT x::oid", read=Weir).find(exp.ObjectIdentifier) is not None


def test_nested_ctes_stay_in_place_for_spark() -> None:
    sql = ("SELECT t.oid, (WITH RECURSIVE b(o, d) AS (SELECT t2.base, 0 FROM ty t2 WHERE t2.oid = t.oid "
           "UNION ALL SELECT t2.base, b.d + 1 FROM ty t2, b WHERE b.o = t2.oid AND t2.base <> 0) "
           "SELECT o FROM b ORDER BY d DESC LIMIT 1) FROM ty t")
    out = sqlglot.parse_one(sql, read="postgres").sql(dialect=WeirSpark)
    assert out.startswith("SELECT t.oid, (WITH RECURSIVE b(o, d) AS")


def _run(engine: Engine, spark_sql: str, **tables: pa.Table) -> list[tuple]:
    return [tuple(r.values()) for r in engine._run(to_duckdb(spark_sql), tables).to_pylist()]


def test_correlated_recursive_cte_in_process(engine: Engine) -> None:
    sql = ("SELECT t.oid, (WITH RECURSIVE b(o, d) AS (SELECT t2.base AS o, 0 AS d FROM weir_t AS t2 "
           "WHERE t2.oid = t.oid UNION ALL SELECT t2.base AS o, b.d + 1 AS d FROM weir_t AS t2, b "
           "WHERE b.o = t2.oid AND t2.base <> 0) SELECT o FROM b ORDER BY d DESC NULLS FIRST LIMIT 1) AS r "
           "FROM weir_t AS t ORDER BY t.oid")
    assert _run(engine, sql, weir_t=TYPES) == [(1, 0), (2, 1), (3, 1), (4, 0)]
    top = ("SELECT t.oid, (WITH RECURSIVE b(o, d) AS (SELECT t2.oid AS o, 0 AS d FROM weir_t AS t2 "
           "WHERE t2.oid = t.oid UNION ALL SELECT t2.base AS o, b.d + 1 AS d FROM weir_t AS t2, b "
           "WHERE b.o = t2.oid AND t2.base <> 0) SELECT o FROM b ORDER BY d DESC NULLS FIRST LIMIT 1) AS r "
           "FROM weir_t AS t ORDER BY t.oid")
    assert _run(engine, top, weir_t=TYPES) == [(1, 1), (2, 1), (3, 1), (4, 4)]


@pytest.mark.parametrize(("direction", "nulls", "want"), [
    ("ASC", "", [["x"], [None, "b", "n"]]),  # PostgreSQL's default: NULL keys last
    ("ASC", "NULLS FIRST", [["x"], ["n", None, "b"]]),
    ("DESC", "", [["x"], ["n", "b", None]]),  # DESC: NULL keys first
    ("DESC", "NULLS LAST", [["x"], ["b", None, "n"]]),
])
def test_array_agg_order_by_in_process(engine: Engine, direction: str, nulls: str, want: list) -> None:
    """weir's Spark rendering of array_agg(v ORDER BY k) answers in DuckDB as on Spark."""
    from weir.sql import render

    pg = f"SELECT g, array_agg(v ORDER BY k {direction} {nulls}) AS a FROM weir_r GROUP BY g ORDER BY g DESC"
    spark_sql = render.to_spark(sqlglot.parse_one(pg, read="postgres"))
    assert [r[1] for r in _run(engine, spark_sql, weir_r=ROWS)] == want


def test_sorts_duckdb_cannot_run_alike_go_to_spark() -> None:
    with pytest.raises(NotInProcess):
        to_duckdb("SELECT array_sort(a, (x, y) -> 0) FROM weir_r")
    with pytest.raises(NotInProcess):
        to_duckdb("SELECT sort_array(a) FROM weir_r")  # elements of any type: nested NULLs differ


def test_regtype_output_of_zero_and_unknown_oids(engine: Engine) -> None:
    fmt = format_type_sql("x", None)
    reg = format_type_sql("x", None, "CAST(x AS text)")
    sql = f"SELECT x, {fmt}, {reg} FROM (SELECT CAST(x AS INT) AS x FROM VALUES (0), (25), (99999) AS v(x)) AS q"
    spark_sql = sqlglot.parse_one(sql, read="postgres").sql(dialect="spark")
    assert sorted(_run(engine, spark_sql)) == [(0, "-", "-"), (25, "text", "text"), (99999, "???", "99999")]


def test_result_types_spark_cannot_express() -> None:
    from weir.sql.infer import COLUMNS_META
    from weir.types import BY_NAME, CATALOG_TYPES

    q = sqlglot.parse_one("SELECT t.typtype AS kind, (SELECT array_agg(a.atttypid ORDER BY a.attnum) FROM pa AS a) "
                          "AS ids, t.typlen AS n FROM pt AS t", read="postgres")
    for table, cols in (("pt", {"typtype": CATALOG_TYPES['"char"'], "typlen": BY_NAME["smallint"]}),
                        ("pa", {"atttypid": BY_NAME["oid"], "attnum": BY_NAME["smallint"]})):
        node = next(t for t in q.find_all(exp.Table) if t.name == table)
        node.meta[COLUMNS_META] = cols
    assert [t and t.name for t in infer.jsonb_result_types(q)] == ['"char"', "oid[]", None]
