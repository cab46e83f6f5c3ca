"""The in-process engine for system reads (weir.sql.in_process, weir.adapter.system_reads):
weir's Spark SQL rendered for DuckDB answers as Spark's ANSI mode does, or is refused
(NotInProcess) so that the query runs on a replica."""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest

from weir.adapter.system_reads import Engine
from weir.sql.in_process import NotInProcess, to_duckdb

ROWS = pa.table({"name": ["a", "b", None], "n": pa.array([1, 0, 3], pa.int32()),
                 "d": pa.array([1_000_000, 0, None], pa.duration("us")),
                 "f": pa.array([0.1, 1e20, None], pa.float64())})


@pytest.fixture(scope="module")
def engine():  # noqa: ANN201
    e = Engine()
    yield e
    e.close()


def _run(engine: Engine, spark_sql: str) -> pa.Table:
    return engine._run(to_duckdb(spark_sql), {"weir_s1": ROWS})


def test_answers_as_spark_does(engine: Engine) -> None:
    out = _run(engine, "SELECT name, n / 2, n div 2, weir_float8_out(f), d FROM weir_s1 AS `t` "
                       "ORDER BY name NULLS LAST")
    assert out.column(0).to_pylist() == ["a", "b", None]
    assert out.column(1).to_pylist() == [0.5, 0.0, 1.5]  # Spark's / of integers is a double
    assert out.column(2).to_pylist() == [0, 0, 1]
    assert out.column(3).to_pylist() == ["0.1", "1e+20", None]  # PostgreSQL's float8 text
    assert out.schema.field(4).type == pa.duration("us")  # intervals come back as Spark's
    assert out.column(4).to_pylist() == [dt.timedelta(seconds=1), dt.timedelta(0), None]


@pytest.mark.parametrize("sql", [
    "SELECT 10 / n FROM weir_s1", "SELECT 10 div n FROM weir_s1", "SELECT 10 % n FROM weir_s1",
    "SELECT CAST(name AS INT) FROM weir_s1",  # ANSI: a failed cast is an error, not NULL
    # weir's runtime errors: the query then runs on a replica, which raises PostgreSQL's error
    "SELECT CASE WHEN n > 2 THEN raise_error('x') ELSE n END FROM weir_s1",
])
def test_errors_where_spark_errs(engine: Engine, sql: str) -> None:
    with pytest.raises(duckdb.Error):
        _run(engine, sql)


@pytest.mark.parametrize("sql", [
    "SELECT make_dt_interval(1, 0, 0, 0) FROM weir_s1",
    "SELECT weir_numeric('div', '1', '2') FROM weir_s1", "SELECT try_cast(name AS INT) FROM weir_s1",
    "SELECT from_utc_timestamp(CAST(d AS TIMESTAMP), 'UTC') FROM weir_s1",
    "SELECT substring(name, 0, 2) FROM weir_s1",  # DuckDB counts position 0 differently
])
def test_spark_only_calls_run_on_a_replica(sql: str) -> None:
    with pytest.raises(NotInProcess):
        to_duckdb(sql)


def test_numeric_text_of_an_untyped_cast(engine: Engine) -> None:
    """weir's cast to text of an expression whose type only Spark knew (translate.cast):
    typeof() is compared with Spark's lower-case name, and Java's $1 is RE2's \\1."""
    sql = (r"SELECT CASE WHEN typeof(x) = 'decimal(38,10)' THEN regexp_replace(regexp_replace("
           r"CAST(x AS STRING), '(\\.[0-9]*?)0+$', '$1'), '\\.$', '') ELSE CAST(x AS STRING) END FROM weir_s1")
    table = pa.table({"x": pa.array([Decimal("1.5"), Decimal(2), Decimal("10.25")], pa.decimal128(38, 10))})
    out = engine._run(to_duckdb(sql), {"weir_s1": table})
    assert out.column(0).to_pylist() == ["1.5", "2", "10.25"]


def test_any_of_an_array_is_three_valued(engine: Engine) -> None:
    """Spark's exists(array, x -> p), weir's `v = ANY(array)`: true, NULL or false as Spark."""
    table = pa.table({"arr": pa.array([["a", "b"], ["b", None], ["b"], None, []], pa.list_(pa.string())),
                      "v": ["a", "a", "a", "a", "a"]})
    out = engine._run(to_duckdb("SELECT exists(arr, x -> x = v) FROM weir_s1"), {"weir_s1": table})
    assert out.column(0).to_pylist() == [True, None, False, None, False]


def test_arithmetic_is_found() -> None:
    """A query over numeric columns that computes with them runs on a replica (Spark's
    decimal result types are not DuckDB's); weir.adapter.system_reads asks this."""
    from weir.sql.in_process import has_arithmetic

    assert has_arithmetic("SELECT count * 2 FROM weir_s1")
    assert has_arithmetic("SELECT a FROM weir_s1 WHERE b - 1 > 0")
    assert not has_arithmetic("SELECT a, max(b) FROM weir_s1 WHERE a = 'x' GROUP BY a")


def test_an_answer_is_kept_while_its_inputs_are_the_same_objects(engine: Engine) -> None:
    """A repeated query over unchanged contents is answered without running it again; a new
    table object (what a write to a collection makes) is run over, never answered from the
    old contents; describing reads are never kept."""
    sql = to_duckdb("SELECT count(*) FROM weir_s1 AS `t`")
    changed = pa.concat_tables([ROWS, ROWS])

    async def go() -> None:
        first = await engine.run(sql, {"weir_s1": ROWS})
        assert await engine.run(sql, {"weir_s1": ROWS}) is first  # kept
        assert (await engine.run(sql, {"weir_s1": changed})).column(0).to_pylist() == [6]
        again = await engine.run(sql, {"weir_s1": ROWS})
        assert again is not first and again.column(0).to_pylist() == [3]
        other = to_duckdb("SELECT max(n) FROM weir_s1 AS `t`")
        once = await engine.run(other, {"weir_s1": ROWS}, describing=True)
        assert await engine.run(other, {"weir_s1": ROWS}, describing=True) is not once

    asyncio.run(go())


def test_a_failing_query_is_not_kept(engine: Engine) -> None:
    sql = to_duckdb("SELECT 1 / (n - n) FROM weir_s1 AS `t`")

    async def go() -> None:
        for _ in range(2):
            with pytest.raises(duckdb.Error):
                await engine.run(sql, {"weir_s1": ROWS})

    asyncio.run(go())


def test_regexp_extract_answers_as_spark_does(engine: Engine) -> None:
    """substring(s FROM pattern)'s Spark form: '' for a group that took no part or no
    match (the CASE around it gives PostgreSQL's NULL), NULL for NULL."""
    sql = ("SELECT CASE WHEN name RLIKE '(?s)^(a)(b)?' THEN regexp_extract(name, '(?s)^(a)(b)?', 2) END, "
           "regexp_extract(name, 'x(y)', 1) FROM weir_s1 AS `t`")
    out = engine._run(to_duckdb(sql), {"weir_s1": pa.table({"name": ["a", "ab", "c", None]})})
    assert out.column(0).to_pylist() == ["", "b", None, None]
    assert out.column(1).to_pylist() == ["", "", "", None]
