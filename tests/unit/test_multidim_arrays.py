"""Multidimensional arrays between weir's layers without Spark: their types (weir.types),
literals, wire formats, and the translation's constructs and refusals (weir.sql.multidim).
The answers are compared with PostgreSQL in tests/integration/test_multidim_arrays.py."""

from __future__ import annotations

import pyarrow as pa
import pytest
from sqlglot import exp

from weir import codec
from weir import types as T
from weir.errors import WeirError
from weir.sql.parse import parse_statement
from weir.sql.render import fold_typed_literals, to_spark
from weir.storage.schema import type_from_sql, type_sql

INTS = T.array_of(T.INT4)
COLUMNS = {"a": INTS, "b": INTS, "x": T.INT4, "y": T.INT4, "f": T.array_of(T.FLOAT8)}


def _spark(sql: str) -> str:
    e = parse_statement(sql).expr
    for table in e.find_all(exp.Table):
        table.meta["weir_columns"] = COLUMNS
    return to_spark(fold_typed_literals(e))


def test_an_array_of_arrays_is_the_same_postgres_type_with_one_more_dimension() -> None:
    two = T.array_of(INTS)
    assert (two.oid, two.name, two.element, two.ndims) == (1007, "integer[]", T.INT4, 2)
    assert two.spark_ddl == "ARRAY<ARRAY<INT>>" and two.arrow == pa.list_(pa.list_(pa.int32()))
    assert T.parse_type("int[][]") == two and T.parse_type("integer[]").ndims == 1
    assert T.from_arrow(pa.list_(pa.list_(pa.string()))) == T.with_ndims(T.TEXT_ARRAY, 2)
    assert type_from_sql(type_sql(two)) == two and type_sql(two) == "integer[][]"
    assert T.parse_type(two.exact_sql()) == two and T.parse_type(INTS.exact_sql()) == INTS
    assert T.BY_OID[1006].oid == 1006  # int2vector[] stays a type of its own
    with pytest.raises(WeirError) as e:
        T.with_ndims(INTS, 7)
    assert e.value.sqlstate == "54000"


def test_wire_formats_of_nested_lists() -> None:
    two = T.array_of(INTS)
    assert codec.encode_text([[1, 2], [3, None]], two) == b"{{1,2},{3,NULL}}"
    text = T.with_ndims(T.TEXT_ARRAY, 2)
    assert codec.encode_text([["a", "b c"], ["d", None]], text) == b'{{a,"b c"},{d,NULL}}'
    binary = codec.encode_binary([[1, 2], [3, 4]], two)
    assert binary[:12] == b"\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x17"  # 2 dims, no NULL, int4


@pytest.mark.parametrize(("sql", "wanted"), [
    ("SELECT ARRAY[[1,2],[3,4]]", "SELECT ARRAY(ARRAY(1, 2), ARRAY(3, 4))"),
    ("SELECT ARRAY[ARRAY[1,2], ARRAY[3,4]]", "SELECT ARRAY(ARRAY(1, 2), ARRAY(3, 4))"),
    ("SELECT '{{1,2},{3,4}}'::int[]", "CAST(ARRAY(ARRAY(CAST(1 AS INT), CAST(2 AS INT)), ARRAY(CAST(3 AS INT), "
                                      "CAST(4 AS INT))) AS ARRAY<ARRAY<INT>>)"),
    ("SELECT ARRAY[[x, y],[y, x]] FROM t", "SELECT ARRAY(ARRAY(x, y), ARRAY(y, x)) FROM t"),
    ("SELECT (ARRAY[[1,2],[3,4]])[1]", "CAST(NULL AS INT)"),  # fewer subscripts than dimensions
    ("SELECT a[1][2] FROM t", "CAST(NULL AS INT)"),  # more
    ("SELECT (ARRAY[[1,2],[3,4]])[2][1]", "TRY_ELEMENT_AT(TRY_ELEMENT_AT("),
    ("SELECT unnest(ARRAY[a, b]) FROM t", "EXPLODE(FLATTEN("),
    ("SELECT cardinality(ARRAY[a, b]) FROM t", "CARDINALITY(FLATTEN("),
    ("SELECT array_to_string(ARRAY[['a','b'],['c',NULL]], ',', '*')", "ARRAY_JOIN(FLATTEN("),
    ("SELECT array_dims(ARRAY[a, b]) FROM t", "CONCAT('[1:'"),
    ("SELECT array_length(ARRAY[a, b], 2) FROM t", "BETWEEN 1 AND 2"),
    ("SELECT ARRAY[[1,2]]::int[][]", "CAST(ARRAY(ARRAY(1, 2)) AS ARRAY<ARRAY<INT>>)"),
])
def test_translation(sql: str, wanted: str) -> None:
    assert wanted in _spark(sql)


def test_sub_arrays_of_a_row_are_checked_when_it_is_computed() -> None:
    """ARRAY[a, b]: PostgreSQL's 2202E when a and b differ in length, an empty array when
    both are NULL or empty; constants of matching lengths need no check."""
    sql = _spark("SELECT ARRAY[a, b] FROM t")
    assert "RAISE_ERROR('weir-error:2202E:multidimensional arrays must have array expressions with matching" in sql
    assert "CAST(ARRAY() AS ARRAY<ARRAY<INT>>)" in sql
    assert "RAISE_ERROR('weir-error:2202E" in _spark("SELECT ARRAY[[1,2],[3]]")
    nested = _spark("SELECT ARRAY[ARRAY[a], ARRAY[b]] FROM t")
    assert nested.count("RAISE_ERROR") == 3 and len(nested) < 3000  # each check once


def test_text_output() -> None:
    sql = _spark("SELECT ARRAY[a, b]::text FROM t")
    assert sql.count("ARRAY_JOIN(TRANSFORM(") == 2 and "_weir_t1" in sql


@pytest.mark.parametrize(("sql", "what"), [
    ("SELECT array_position(ARRAY[a, b], 1) FROM t", "function array_position of a multidimensional array"),
    ("SELECT array_remove(ARRAY[a, b], 1) FROM t", "function array_remove of a multidimensional array"),
    ("SELECT ARRAY[a, b] @> ARRAY[1] FROM t", "operator @> of a multidimensional array"),
    ("SELECT ARRAY[a, b] <@ ARRAY[[1]] FROM t", "operator <@ of a multidimensional array"),
    ("SELECT ARRAY[a, b] && ARRAY[[1]] FROM t", "operator && of a multidimensional array"),
    ("SELECT array_append(ARRAY[a, b], 1) FROM t", "multidimensional array"),
    ("SELECT array_cat(ARRAY[a, b], ARRAY[a]) FROM t", "multidimensional array"),
    ("SELECT ARRAY[a, b] || ARRAY[a] FROM t", "operator || of a multidimensional array"),
    ("SELECT x = ANY(ARRAY[a, b]) FROM t", "ANY (array) of a multidimensional array"),
    ("SELECT ARRAY[a, b] < ARRAY[b, a] FROM t", "operator < of a multidimensional array"),
    ("SELECT max(ARRAY[a, b]) FROM t", "function max of a multidimensional array"),
    ("SELECT array_agg(a) FROM t", "array_agg of arrays"),
    ("SELECT to_jsonb(ARRAY[a, b]) FROM t", "function to_jsonb of a multidimensional array"),
    ("SELECT ARRAY[a, b] AS m FROM t ORDER BY m", "ORDER BY a multidimensional array"),
    ("SELECT x FROM t ORDER BY ARRAY[a, b]", "ORDER BY a multidimensional array"),
    ("SELECT ARRAY[a, b]::bigint[] FROM t", "cast of a multidimensional array to bigint[]"),
    ("SELECT ARRAY[f, f]::text FROM t", "text output of a multidimensional array of floats"),
    ("SELECT ARRAY[a, ARRAY[[1]]] FROM t", "ARRAY[...] of arrays of different dimensions"),
])
def test_refused(sql: str, what: str) -> None:
    with pytest.raises(WeirError) as e:
        _spark(sql)
    assert e.value.sqlstate == "0A000" and what in str(e.value)


def test_shards_and_replicas_read_nested_arrays() -> None:
    """A materialized view's 2-D column: a list of lists in its shard, read back as it is
    (smallint stored as int, cast element by element)."""
    from weir.compute.replica.engine import query_expr, stored_ddl
    from weir.storage.schema import storage_arrow_type

    small = T.parse_type("smallint[][]")
    assert stored_ddl(small) == "ARRAY<ARRAY<INT>>" and storage_arrow_type(small) == pa.list_(pa.list_(pa.int32()))
    assert query_expr("c", small) == "transform(c, __x0 -> transform(__x0, __x1 -> CAST(__x1 AS SMALLINT)))"
    assert small.inner == T.array_of(T.INT2) and T.array_of(T.INT2).inner == T.INT2
    assert T.parse_type(small.exact_sql()) == small


@pytest.mark.parametrize(("sql", "sqlstate"), [
    ("SELECT ('{}'::int[])[1][2][3][4][5][6][7]", "54000"),  # PostgreSQL: more subscripts than dimensions allowed
    ("SELECT array['11 22 33'::int2vector]", "0A000"),  # int2vector[]: one dimension of vectors, not 2-D
    ("SELECT unnest(array['11 22 33'::oidvector])", "0A000"),
])
def test_refused_as_pg_regress_found(sql: str, sqlstate: str) -> None:
    """pg_regress's arrays script: each was answered differently from PostgreSQL."""
    with pytest.raises(WeirError) as e:
        _spark(sql)
    assert e.value.sqlstate == sqlstate


def test_cast_of_a_multidimensional_text_array_to_varchar_keeps_its_dimensions() -> None:
    sql = _spark("SELECT ARRAY[['a','bc'],['def','hijk']]::text[]::varchar[]")
    assert "AS ARRAY<STRING>)" not in sql and "ARRAY<ARRAY<STRING>>" in sql
