"""PostgreSQL's text output of arrays and records on Spark (weir.sql.pg_text), array
comparisons (weir.sql.comparisons) and the constant path's array text, without Spark: what
the translation refuses, the order keys it sorts by, the replica UDFs' element texts. The
answers themselves are compared with PostgreSQL in
tests/integration/test_correctness_examples.py."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from weir import types as T
from weir.codec.spark_udfs import UDFS
from weir.errors import WeirError
from weir.sql import constant
from weir.sql.infer import Types
from weir.sql.render import to_spark


def _spark(sql: str) -> str:
    return to_spark(sqlglot.parse_one(sql, read="postgres"))


def test_float_array_element_texts_are_postgres_digits() -> None:
    f8, returns = UDFS["weir_float8_texts"]
    assert returns == "array<string>"
    assert f8([1e20, None, 0.1, float("nan"), float("-inf"), -0.0, 1e-7]) == [
        "1e+20", None, "0.1", "NaN", "-Infinity", "-0", "1e-07"]
    assert f8(None) is None
    f4, _ = UDFS["weir_float4_texts"]
    assert f4([1.5, 0.10000000149011612, None]) == ["1.5", "0.1", None]


def test_row_constructor_is_a_record_of_its_fields_types() -> None:
    row = sqlglot.parse_one("SELECT (1, 'a', NULL, 1.5::float8)", read="postgres").expressions[0]
    t = Types().of(row)
    assert t is not None and t.oid == T.RECORD_OID
    assert [f.name if f else None for f in t.fields or ()] == ["integer", "text", "text", "double precision"]


def test_array_and_record_text_is_not_sparks_cast() -> None:
    sql = _spark("SELECT array_agg((a, b) ORDER BY b)::text FROM (VALUES (1, 'x')) v(a, b)")
    assert sql.startswith("SELECT CONCAT('{', ARRAY_JOIN(") and "_weir_t1 RLIKE '[()," in sql
    assert "WEIR_FLOAT8_TEXTS(" in _spark("SELECT ARRAY[x]::text FROM (VALUES (1.5::float8)) v(x)")


@pytest.mark.parametrize("sql", [
    "SELECT array_agg((x, 1))::text FROM (VALUES (1.5::float8)) v(x)",  # a float UDF in a lambda
    "SELECT ARRAY[(x, 1)] < ARRAY[(x, 2)] FROM (VALUES (1)) v(x)",  # records' NULL fields order
])
def test_refused_where_not_postgres_text_or_order(sql: str) -> None:
    with pytest.raises(WeirError) as e:
        _spark(sql)
    assert e.value.sqlstate == "0A000"


@pytest.mark.parametrize("sql", [
    "SELECT ARRAY[x] < ARRAY[NULL]::int[] FROM (VALUES (1)) v(x)",
    "SELECT a FROM (VALUES (ARRAY[1])) v(a) ORDER BY a",
    "SELECT a AS b FROM (VALUES (ARRAY[1])) v(a) ORDER BY 1",
    "SELECT max(a) FROM (VALUES (ARRAY[1])) v(a)",
])
def test_arrays_ordered_with_null_elements_last(sql: str) -> None:
    assert "_weir_e IS NULL AS n" in _spark(sql)


def test_array_equality_is_sparks() -> None:
    # NULL elements equal each other in both: no order key
    assert "_weir_e" not in _spark("SELECT ARRAY[x, NULL] = ARRAY[x, NULL] FROM (VALUES (1)) v(x)")


def test_constant_array_to_text() -> None:
    expr = sqlglot.parse_one("SELECT CAST(ARRAY['a b', 'c', ''] AS TEXT[])::text", read="postgres")
    _, types, rows = constant.evaluate(expr)
    assert rows == [('{"a b",c,""}',)] and types[0].oid == T.TEXT.oid


def test_constant_array_concatenation_is_not_text() -> None:
    expr = sqlglot.parse_one("SELECT CAST(ARRAY['a'] AS TEXT[]) || 'b'", read="postgres")
    with pytest.raises(constant.NotConstant):
        constant.evaluate(expr)
    assert isinstance(expr, exp.Select)
