"""array_position(s), array_remove, array_replace, @> / <@ / &&, date_bin, numeric power
and LIKE ANY / ALL (subquery) as the function gate writes them for Spark: which calls it
accepts, refuses (0A000) or rejects as PostgreSQL does, and numeric power's digits
(PostgreSQL 15's power_var / power_var_int, checked against the real server)."""

from __future__ import annotations

from decimal import Decimal

import pytest
import sqlglot
from sqlglot import exp

from weir.codec.numeric_math import power
from weir.errors import WeirError
from weir.sql import render
from weir.sql.parse import parse_one


def _spark(sql: str) -> str:
    return render.to_spark(parse_one(sql).expr)


def _error(sql: str) -> tuple[str, str]:
    with pytest.raises(WeirError) as info:
        _spark(sql)
    return info.value.sqlstate, info.value.message


# (base, exponent, PostgreSQL 15's answer)
@pytest.mark.parametrize(("base", "e", "want"), [
    ("2", "10", "1024.0000000000000000"),
    ("2.5", "40", "8271806125530276.7487140869206996"),
    ("2", "0.5", "1.4142135623730950"),
    ("0", "0", "1.0000000000000000"),
    ("0", "1.5", "0.0000000000000000"),
    ("-2", "3", "-8.0000000000000000"),
    ("10", "-3", "0.0010000000000000"),
    ("1.0001", "10000.5", "2.7182818307240536"),
    ("3", "-1", "0.3333333333333333"),
    ("1.12345678901234567890", "2", "1.26215515677793019455"),
    ("2", "3.00000000000000000000", "8.0000000000000000"),
    ("2.0", "3.00000000000000000000001", "8.00000000000000000000006"),
    ("0.5", "100", "0.0000000000000000"),
    ("1.5", "2.5", "2.7556759606310754"),
    ("-1", "10000000001", "-1.0000000000000000"),
    ("1.000000001", "10000000000", "22026.465684674388"),
    ("0", "10000000000.5", "0.0000000000000000"),
])
def test_numeric_power_is_postgres(base: str, e: str, want: str) -> None:
    got = power(Decimal(base), Decimal(e))
    assert got == Decimal(want) and str(got) == str(Decimal(want))


@pytest.mark.parametrize(("base", "e", "state"), [
    ("0", "-1", "2201F"), ("-2", "0.5", "2201F"), ("10", "200000", "22003"),
])
def test_numeric_power_errors(base: str, e: str, state: str) -> None:
    with pytest.raises(WeirError) as info:
        power(Decimal(base), Decimal(e))
    assert info.value.sqlstate == state


def test_array_search_finds_nulls_with_is_not_distinct_from() -> None:
    sql = _spark("SELECT array_position(ARRAY[1, NULL], NULL), array_remove(ARRAY[1, NULL], NULL), "
                 "array_replace(ARRAY[1, NULL], NULL, 2), array_positions(ARRAY[1, NULL], NULL)")
    assert sql.count("IS NOT DISTINCT FROM") == 4


def test_array_containment_ignores_null_elements() -> None:
    sql = _spark("SELECT ARRAY[1, NULL] @> ARRAY[NULL::int], ARRAY[1] && ARRAY[2], ARRAY[1] <@ ARRAY[1, 2]")
    assert sql.count("NOT _weir_ax IS NULL") == 3


@pytest.mark.parametrize(("sql", "state"), [
    ("SELECT array_position(ARRAY[1, 2], 'x'::text)", "42883"),
    ("SELECT ARRAY[1] @> ARRAY[1::bigint]", "42883"),
    ("SELECT array_remove(ARRAY['{}'::jsonb], '{}'::jsonb)", "0A000"),
    ("SELECT ARRAY[1] @> '{x}'", "22P02"),
    ("SELECT ARRAY[1] @> '{1'", "22P02"),
    ("SELECT ARRAY[1] @> ARRAY['1']", "42883"),  # ARRAY['1'] is text[], as in PostgreSQL
    ("SELECT date_bin('1 hour', TIMESTAMP '2020-01-01')", "42883"),
    ("SELECT date_bin('1 hour', TIMESTAMPTZ '2020-01-01 00:00+00', TIMESTAMP '2020-01-01')", "0A000"),
    ("SELECT 'a' LIKE ANY (SELECT 'a', 'b')", "42601"),
])
def test_refused_or_rejected_as_postgres(sql: str, state: str) -> None:
    assert _error(sql)[0] == state


def test_date_bin_origin_is_a_column_not_a_unit() -> None:
    """sqlglot read date_bin's third argument as a unit (an upper-cased Var)."""
    sql = _spark("SELECT date_bin('15 minutes', ts, o) FROM (VALUES (TIMESTAMP '2020-01-01', "
                 "TIMESTAMP '2001-01-01')) v(ts, o)")
    assert "PMOD" in sql.upper() and "900000000" in sql and " O)" not in sql


@pytest.mark.parametrize("stride", ["1 month", "0 minutes", "-1 minute"])
def test_date_bin_stride_errors_are_raised_where_postgres_raises_them(stride: str) -> None:
    """At run time, for a non-NULL source and origin: an empty table answers no rows."""
    sql = _spark(f"SELECT date_bin('{stride}', ts, ts) FROM (VALUES (TIMESTAMP '2020-01-01')) v(ts)")
    assert "RAISE_ERROR" in sql.upper() and "IS NULL" in sql.upper()


def test_like_any_subquery_is_two_exists() -> None:
    sql = _spark("SELECT 'a' LIKE ANY (SELECT 'b'), 'a' NOT ILIKE ALL (SELECT 'b')")
    assert sql.count("EXISTS(") == 4


def test_date_bin_origin_survives_a_stored_view_definition() -> None:
    """A view's definition is stored as PostgreSQL text and read back with sqlglot's own
    PostgreSQL dialect, which would read a bare origin as a unit: it is stored in parentheses."""
    stored = parse_one("SELECT date_bin('15 minutes', ts, o) FROM t").expr.sql(dialect="postgres")
    assert "(o)" in stored
    origin = sqlglot.parse_one(stored, read="postgres").expressions[0].args["unit"]
    assert isinstance(origin, exp.Paren) and isinstance(origin.this, exp.Column) and origin.this.name == "o"
