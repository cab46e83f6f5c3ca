"""PostgreSQL semantics of what weir accepts (issue 10, part 2) and errors without
internals (part 3): constant evaluation, the function gate's translations and refusals.
Expected values are what PostgreSQL 15 answers."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from weir import codec
from weir import types as T
from weir.errors import SqlState, WeirError, client_safe, from_exception
from weir.sql import constant
from weir.sql.parse import parse_statement
from weir.sql.render import fold_typed_literals, to_spark

_COLS = {"x": T.INT4, "f": T.FLOAT8, "n": T.NUMERIC, "j": T.JSONB, "a": T.array_of(T.INT4),
         "ts": T.TIMESTAMP, "d": T.DATE, "s": T.TEXT, "i": T.INTERVAL, "b": T.INT8}


def _const(sql: str) -> tuple[list[str], list[str]]:
    names, types, rows = constant.evaluate(parse_statement(sql).expr)
    return names, [codec.encode_text(v, t).decode() for v, t in zip(rows[0], types, strict=True)]


def _spark(sql: str) -> str:
    e = parse_statement(sql).expr
    for t in e.find_all(exp.Table):
        t.meta["weir_columns"] = _COLS
    return to_spark(fold_typed_literals(e))


def _refused(sql: str) -> WeirError:
    with pytest.raises(WeirError) as info:
        _spark(sql)
    return info.value


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT log(100.0)", "2"),
    ("SELECT log(2, 8)", "3"),
    ("SELECT ln(2.0)", "0.6931471805599453"),
    ("SELECT exp(1.0)", "2.7182818284590452"),
    ("SELECT sqrt(2.0)", "1.414213562373095"),
    ("SELECT 1.0 / 3", "0.33333333333333333333"),
    ("SELECT 10::numeric / 4", "2.5"),
    ("SELECT INTERVAL '.001 second'", "00:00:00.001"),
    ("SELECT INTERVAL '1-2 3:4 5 day'", "1 year 2 mons 5 days 03:04:00"),
    ("SELECT INTERVAL '36 hours'", "36:00:00"),
    ("SELECT INTERVAL '-1 day 2 hours'", "-1 days +02:00:00"),
    ("SELECT INTERVAL '1.5 months'", "1 mon 15 days"),
    ("SELECT INTERVAL '23 hours' + INTERVAL '2 hours'", "25:00:00"),
    ("SELECT pg_typeof(1.5)", "numeric"),
])
def test_constant_values_are_postgres(sql: str, expected: str) -> None:
    """PostgreSQL's values; numeric printed without trailing zeros, as Materialize does."""
    assert _const(sql)[1] == [expected]


def test_constant_errors_are_postgres() -> None:
    for sql, state in (("SELECT 2147483647 + 1", "22003"), ("SELECT ln(0.0)", "2201E"),
                       ("SELECT sqrt(-1.0)", "2201F"), ("SELECT 1.0 / 0", "22012")):
        with pytest.raises(WeirError) as info:
            _const(sql)
        assert info.value.sqlstate == state, sql


def test_log_is_base_10_on_spark() -> None:
    assert "LOG(10, f)" in _spark("SELECT log(f) FROM t") or "LOG10(f)" in _spark("SELECT log(f) FROM t")


def test_to_char_patterns_and_name() -> None:
    assert "DATE_FORMAT(ts, 'hh')" in _spark("SELECT to_char(ts, 'HH') FROM t")
    assert "'yyyy'-'MM" in _spark("SELECT to_char(ts, 'YYYY-MM-DD') FROM t").replace("\\", "")
    e = parse_statement("SELECT to_char(ts, 'HH') FROM t").expr
    from weir.sql.render import name_outputs
    assert name_outputs(e) == ["to_char"]
    assert "weir_datetime" in _spark("SELECT to_char(ts, 'Q') FROM t").lower()  # PostgreSQL's patterns, in the UDF


def test_array_agg_keeps_nulls_and_order() -> None:
    sql = _spark("SELECT array_agg(x ORDER BY f DESC) FROM t")
    assert "COLLECT_LIST(STRUCT(" in sql and "SORT_ARRAY" in sql and "NULL" in sql
    assert "CASE WHEN a IS NULL" in _spark("SELECT array_cat(a, a) FROM t")
    assert "CASE WHEN a IS NULL" in _spark("SELECT a || a FROM t")


@pytest.mark.parametrize(("sql", "state"), [
    ("SELECT trunc(n, x) FROM t", "0A000"),  # trunc to a scale that is not a constant
    ("SELECT j < j FROM t", "0A000"),  # jsonb's order is not its text's (weir.sql.jsonb)
    ("SELECT x FROM t ORDER BY j", "0A000"),
    ("SELECT jsonb_each(j) FROM t", "0A000"),
    ("SELECT nosuch(x) FROM t", "42883"),
    ("SELECT f % 2 FROM t", "42883"),
    ("SELECT s SIMILAR TO 'a' FROM t", "0A000"),
])
def test_refused_rather_than_approximated(sql: str, state: str) -> None:
    err = _refused(sql)
    assert err.sqlstate == state, err


def test_unknown_function_message_is_postgres() -> None:
    assert _refused("SELECT nosuch(x, s) FROM t").message == "function nosuch(integer, text) does not exist"


def test_sum_of_bigint_is_numeric_and_date_difference_is_days() -> None:
    assert "SUM(CAST(b AS DECIMAL(38, 0)))" in _spark("SELECT sum(b) FROM t")
    assert "DATEDIFF(d, d)" in _spark("SELECT d - d FROM t")


@pytest.mark.parametrize("message", [
    "'Values' object has no attribute 'subquery'",
    "Error parsing '1-2 3:4' to interval",
    "YearMonthIntervalType(0,1) is not supported in conversion to Arrow",
    "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column named `_weir_c0` cannot be resolved",
])
def test_errors_never_show_internals(message: str) -> None:
    safe = client_safe(WeirError(SqlState.INTERNAL_ERROR, message, hint="Did you mean `_weir_c0`?"))
    assert safe.sqlstate == SqlState.INTERNAL_ERROR
    assert safe.message == "internal error" and safe.hint is None
    assert from_exception(AttributeError(message)).message == "internal error"


def test_postgres_messages_pass_unchanged() -> None:
    err = WeirError(SqlState.UNDEFINED_COLUMN, "column t1.x does not exist")
    assert client_safe(err) is err


def test_parsed_query_unaffected_elsewhere() -> None:
    assert sqlglot.parse_one("SELECT 1").sql() == "SELECT 1"


@pytest.mark.parametrize("sql", [
    "SELECT x FROM t WHERE x > 1 AND f < 2 OR NOT (s = 'a')",
    "SELECT x FROM t WHERE EXISTS (SELECT 1 FROM t AS u WHERE u.x = t.x) AND x IN (SELECT x FROM t)",
    "SELECT x FROM t WHERE x = ANY(ARRAY[1, 2]) AND x <> ALL(SELECT x FROM t)",
    "SELECT CASE WHEN x IS NULL THEN 0 ELSE x END, coalesce(x, 1), nullif(x, 1), greatest(x, 2), "
    "least(x, 2), x::text, CAST(s AS int), x BETWEEN 1 AND 2, s LIKE 'a%', s ILIKE 'a%' FROM t",
    "SELECT x, row_number() OVER (PARTITION BY s ORDER BY x DESC NULLS FIRST "
    "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), count(DISTINCT x), "
    "count(*) FILTER (WHERE x > 1) FROM t GROUP BY x, s HAVING count(*) > 0 ORDER BY 1",
    "SELECT t.*, a[1], ARRAY[x, 2] FROM t JOIN t AS u USING (x) WHERE (x, s) IN ((1, 'a'))",
    "SELECT * FROM (VALUES (1, 'a'), (2, NULL)) AS v(p, q) WHERE p = 1 AND q IS NOT NULL",
])
def test_syntax_is_not_a_function_call(sql: str) -> None:
    """sqlglot models connectives, EXISTS, casts, CASE, COALESCE, ARRAY[] ... as function
    nodes; the gate passes them (only function calls are checked)."""
    assert _spark(sql)


def test_gate_passes_plan_slots_and_parameter_literals() -> None:
    import datetime as dt
    import decimal

    from weir.sql.render import literal
    slotted = sqlglot.parse_one(
        "SELECT CAST(:weir_p1 AS INT) AS a FROM t WHERE x > CAST(:weir_p2 AS INT) AND "
        "ts < CAST(:weir_s1 AS TIMESTAMP) OR s = CAST(:weir_p3 AS STRING) LIMIT :weir_p4 OFFSET :weir_p5",
        read="spark")
    out = to_spark(slotted)
    for slot in (":weir_p1", ":weir_p2", ":weir_s1", ":weir_p3", ":weir_p4", ":weir_p5"):
        assert slot in out
    for value, t in [(None, T.INT4), (True, T.BOOL), (7, T.INT8), (float("nan"), T.FLOAT8),
                     (decimal.Decimal("1.25"), T.NUMERIC), (dt.date(2020, 1, 2), T.DATE),
                     (dt.datetime(2020, 1, 2, 3), T.TIMESTAMP),
                     (dt.datetime(2020, 1, 2, tzinfo=dt.UTC), T.TIMESTAMPTZ),
                     (dt.timedelta(days=1, seconds=5), T.INTERVAL), (b"ab", T.BYTEA), ("hi", T.TEXT),
                     ([1, None], T.array_of(T.INT4)), ([], T.array_of(T.TEXT)), ('{"a": 1}', T.JSONB)]:
        assert to_spark(literal(value, t))


def test_collate_refused_by_name() -> None:
    err = _refused('SELECT s COLLATE "C" FROM t')
    assert (err.sqlstate, err.message) == (SqlState.FEATURE_NOT_SUPPORTED, "COLLATE is not supported")


def test_quantified_subqueries() -> None:
    """`= ANY (subquery)` is IN and `<> ALL (subquery)` NOT IN (the same NULL answers);
    other quantified subqueries are refused by name, not left for Spark to reject."""
    assert _spark("SELECT x FROM t WHERE x = ANY (SELECT b FROM u)").endswith("WHERE x IN (SELECT b FROM u)")
    assert _spark("SELECT x FROM t WHERE x <> ALL (SELECT b FROM u) AND x > 1").startswith(
        "SELECT x FROM t WHERE NOT x IN (SELECT b FROM u)")
    assert _refused("SELECT x <> ALL (SELECT b FROM u) FROM t").sqlstate == SqlState.FEATURE_NOT_SUPPORTED
    assert "EXISTS(" in _spark("SELECT x FROM t WHERE x = ANY (a)")  # an array, not a subquery
    for sql, op in (("SELECT x FROM t WHERE x < ALL (SELECT b FROM u)", "< ALL"),
                    ("SELECT x FROM t WHERE x >= ANY (SELECT b FROM u)", ">= ANY")):
        err = _refused(sql)
        assert err.sqlstate == SqlState.FEATURE_NOT_SUPPORTED and f"operator {op} (subquery)" in err.message


def test_casts_and_date_trunc_as_postgres() -> None:
    """numeric -> int rounds half away from zero, float -> int half to even (rint), Spark
    truncates; date_trunc of a timestamp is a timestamp; float/numeric text as weir prints."""
    sql = _spark("SELECT n::int, f::bigint, date_trunc('day', ts), f::text, n::text, f || 'x' FROM t")
    assert "CAST(ROUND(n, 0) AS INT)" in sql and "CAST(BROUND(f, 0) AS BIGINT)" in sql
    assert "CAST(DATE_TRUNC('DAY', ts) AS TIMESTAMP_NTZ)" in sql
    assert "WEIR_FLOAT8_OUT(f)" in sql and "REGEXP_REPLACE(" in sql
    assert "TIMESTAMP_NTZ" not in _spark("SELECT date_trunc('day', now())")  # timestamptz stays
