"""Set-returning functions in lockstep (weir.sql.set_returning): the Spark SQL weir writes
for several in one select list, and the same SQL run in process (DuckDB), padded with NULL
as PostgreSQL pads; weir_jsonb's to_jsonb in process (weir.sql.in_process_jsonb)."""

from __future__ import annotations

import pyarrow as pa
import pytest
import sqlglot

from weir.adapter.system_reads import Engine
from weir.errors import WeirError
from weir.sql.dialect import Weir
from weir.sql.in_process import to_duckdb
from weir.sql.render import to_spark

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int32()),
                 "a": pa.array([[1, 2, 3], None, []], pa.list_(pa.int16())),
                 "s": pa.array(['a"b\n', None, "c"])})


@pytest.fixture(scope="module")
def engine():  # noqa: ANN201
    e = Engine()
    yield e
    e.close()


def _run(engine: Engine, spark_sql: str) -> list[tuple]:
    return sorted((tuple(r.values()) for r in engine._run(to_duckdb(spark_sql), {"t": ROWS}).to_pylist()),
                  key=str)


def test_several_in_one_select_list_are_zipped() -> None:
    spark = to_spark(sqlglot.parse_one("SELECT unnest(ARRAY[1, 2]), unnest(ARRAY['a']) + 1", read=Weir))
    assert "LATERAL VIEW INLINE(ARRAYS_ZIP(COALESCE(ARRAY(1, 2), ARRAY())" in spark
    assert "FROM (SELECT 1) AS weir_one" in spark


def test_lockstep_in_process_pads_with_null(engine: Engine) -> None:
    sql = ("SELECT id, z.c0, z.c1 FROM t LATERAL VIEW INLINE(ARRAYS_ZIP(COALESCE(a, ARRAY()), "
           "COALESCE(CASE WHEN 1 = 1 THEN TRANSFORM(a, (weir_v, weir_i) -> CAST(weir_i + 0 AS INT)) END, ARRAY()), "
           "COALESCE(ARRAY(s, s), ARRAY()))) z AS c0, c1, c2")
    assert _run(engine, sql) == sorted([(1, 1, 0), (1, 2, 1), (1, 3, 2), (2, None, None),
                                        (2, None, None), (3, None, None), (3, None, None)], key=str)


def test_arrays_zip_of_a_null_array_is_null(engine: Engine) -> None:
    assert _run(engine, "SELECT id, ARRAYS_ZIP(a) IS NULL FROM t") == [(1, False), (2, True), (3, False)]


@pytest.mark.parametrize("sql", [
    "SELECT CASE WHEN true THEN unnest(ARRAY[1]) END",
    "SELECT coalesce(unnest(ARRAY[1]), 2)",
    "SELECT count(unnest(ARRAY[1]))",
])
def test_placements_postgres_refuses(sql: str) -> None:
    with pytest.raises(WeirError) as e:
        to_spark(sqlglot.parse_one(sql, read=Weir))
    assert e.value.sqlstate == "0A000"


def test_to_jsonb_in_process(engine: Engine) -> None:
    sql = ("SELECT id, CAST(WEIR_JSONB('to_jsonb', s, 'text') AS STRING), "
           "CAST(WEIR_JSONB('to_jsonb', id > 1, 'boolean') AS STRING) FROM t")
    assert _run(engine, sql) == [(1, '"a\\"b\\n"', "false"), (2, None, "true"), (3, '"c"', "true")]
