"""Intervals between weir's layers (weir.codec.interval_value), the replica's reading of
shards written before intervals kept months (weir.compute.replica.engine.stored_forms) and
the translation's refusals of what would compare intervals as Spark structs
(weir.sql.interval_ops), without Spark. The answers are compared with PostgreSQL in
tests/integration/test_interval_storage.py."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlglot import exp

from weir import types as T
from weir.codec.interval import PgInterval
from weir.codec.interval_value import for_arrow, from_micros, to_pg, to_struct
from weir.compute.replica.engine import query_expr, stored_ddl, stored_forms
from weir.errors import WeirError
from weir.sql.parse import parse_statement
from weir.sql.render import fold_typed_literals, to_spark


def _fields(p: PgInterval) -> tuple[int, int, int]:
    return p.months, p.days, p.micros


def test_every_form_means_postgres_fields() -> None:
    assert _fields(to_pg({"months": 1, "days": 2, "micros": 3})) == (1, 2, 3)
    assert _fields(to_pg(dt.timedelta(days=-1, hours=-2))) == (0, -1, -7_200_000_000)
    assert _fields(to_pg(-90_000_000_000)) == (0, -1, -3_600_000_000)
    assert _fields(to_pg((1, 2, 3))) == (1, 2, 3)  # a Spark Row of the struct
    assert _fields(from_micros(86_400_000_001)) == (0, 1, 1)
    assert to_struct(None) is None and to_struct(PgInterval(1, 0, 0)) == {"months": 1, "days": 0, "micros": 0}
    arr = pa.array(for_arrow([dt.timedelta(days=1), None, PgInterval(2, 0, 5)], T.INTERVAL), T.INTERVAL.arrow)
    assert arr.to_pylist() == [{"months": 0, "days": 1, "micros": 0}, None, {"months": 2, "days": 0, "micros": 5}]
    assert T.from_arrow(pa.struct([pa.field("months", pa.int32(), False), ("days", pa.int32()),
                                   ("micros", pa.int64())])).oid == T.INTERVAL.oid


def test_old_shard_files_of_microseconds_read_as_days_and_time(tmp_path) -> None:  # noqa: ANN001
    old, new = tmp_path / "old.parquet", tmp_path / "new.parquet"
    pq.write_table(pa.table({"iv": pa.array([1], pa.int64())}), old)
    pq.write_table(pa.table({"iv": pa.array([None], T.INTERVAL.arrow)}), new)
    cols = [("iv", T.INTERVAL, True)]
    (_, t, _), = stored_forms(cols, [str(old)])
    assert stored_ddl(t) == "BIGINT" and "named_struct" in query_expr("iv", t)
    (_, t, _), = stored_forms(cols, [str(new)])
    assert stored_ddl(t) == T.INTERVAL_DDL and query_expr("iv", t) == "iv"


def _spark(sql: str) -> str:
    return to_spark(fold_typed_literals(parse_statement(sql).expr))


V = "(VALUES (1, INTERVAL '1 mon'), (2, INTERVAL '30 days')) v(id, i)"


@pytest.mark.parametrize("sql", [
    f"SELECT array_agg(DISTINCT i) FROM {V}",
    f"SELECT array_agg(DISTINCT i ORDER BY i) FROM {V}",
])
def test_refused_not_compared_as_structs(sql: str) -> None:
    with pytest.raises(WeirError) as e:
        _spark(sql)
    assert e.value.sqlstate == "0A000"


def test_distinct_sum_by_span() -> None:
    """sum(DISTINCT i) keeps one value per span, not per (months, days, micros)."""
    sql = _spark(f"SELECT sum(DISTINCT i), date_trunc('hour', i) FROM {V} GROUP BY 2")
    assert "ARRAY_DISTINCT" in sql.upper() and "COLLECT_LIST" in sql.upper()


@pytest.mark.parametrize("aggregate", ["sum", "avg", "min", "max"])
def test_distinct_interval_aggregate_over_a_window_is_refused(aggregate: str) -> None:
    """PostgreSQL: "DISTINCT is not implemented for window functions" (0A000)."""
    with pytest.raises(WeirError) as e:
        _spark(f"SELECT {aggregate}(DISTINCT i) OVER (PARTITION BY id) FROM {V}")
    assert e.value.sqlstate == "0A000" and "window functions" in e.value.message


def test_grouped_and_sorted_by_span() -> None:
    sql = _spark(f"SELECT i, count(*) FROM {V} GROUP BY i ORDER BY i")
    assert "GROUP BY ((CAST((i).months AS DECIMAL(38, 0)) * 30" in sql and "FIRST(i)" in sql
    assert "ORDER BY ((CAST((FIRST(i)).months" in sql
    assert "WHERE ((CAST((i).months" in _spark(f"SELECT id FROM {V} WHERE i = INTERVAL '720 hours'")


@pytest.mark.parametrize(("sql", "by_span"), [
    (f"SELECT i FROM {V} UNION SELECT i FROM {V}", "GROUP BY ((CAST((_weir_c0).months"),
    (f"SELECT i FROM {V} EXCEPT SELECT i FROM {V}", "HAVING MAX(_weir_side) = 0"),
    (f"SELECT id FROM {V} WHERE i IN (INTERVAL '1 mon')", "WHERE ((CAST((i).months"),
    (f"SELECT id FROM {V} WHERE i BETWEEN INTERVAL '1 day' AND INTERVAL '1 year'", "BETWEEN ((CAST("),
    (f"SELECT count(DISTINCT i) FROM {V}", "COUNT(DISTINCT ((CAST((i).months"),
    (f"SELECT row_number() OVER (PARTITION BY i) FROM {V}", "PARTITION BY ((CAST((i).months"),
    (f"SELECT i + i, count(*) FROM {V} GROUP BY i + i", "GROUP BY ((CAST((ELEMENT_AT(TRANSFORM("),
    (f"SELECT i + i AS d, count(*) FROM {V} GROUP BY d", "SELECT FIRST(ELEMENT_AT("),
])
def test_compared_by_span_not_as_structs(sql: str, by_span: str) -> None:
    assert by_span in _spark(sql)


def test_unquoted_qualifier_and_string_literal_compare_by_span() -> None:
    e = parse_statement("SELECT count(*) FROM t WHERE T.i <> '@ 10 days' GROUP BY T.i").expr
    for table in e.find_all(exp.Table):
        table.meta["weir_columns"] = {"i": T.INTERVAL}
    sql = to_spark(fold_typed_literals(e))
    assert "GROUP BY ((CAST((T.i).months" in sql and "NAMED_STRUCT('months', CAST(0 AS INT), 'days', CAST(10" in sql


@pytest.mark.parametrize(("sql", "text"), [
    ("SELECT make_interval(years := 1, months := -1, weeks := 5, days := -7, hours := 25, mins := -180)",
     "11 mons 28 days 22:00:00"),
    ("SELECT make_interval(hours := -2, mins := -10, secs := -25.3)", "-02:10:25.3"),
    ("SELECT make_interval(1, 2, 3, 4, 5, 6, 7.5)", "1 year 2 mons 25 days 05:06:07.5"),
    ("SELECT make_interval(secs := 7e12)", "1944444444:26:40"),
])
def test_make_interval_constant(sql: str, text: str) -> None:
    from weir import codec
    from weir.sql import constant

    _, types, rows = constant.evaluate(parse_statement(sql).expr)
    assert codec.encode_text(rows[0][0], types[0]).decode() == text


def test_make_interval_of_infinite_seconds_is_out_of_range() -> None:
    from weir.sql import constant

    with pytest.raises(WeirError) as e:
        constant.evaluate(parse_statement("SELECT make_interval(secs := 'inf')").expr)
    assert e.value.sqlstate == "22008"
