"""weir.codec.interval, interval_parse and interval_math: PostgreSQL 15's interval input
(with typmod fields and precision), output and arithmetic. Every expected value here is
PostgreSQL 15's own answer."""

from __future__ import annotations

from decimal import Decimal

import pytest

from weir.codec import interval as ci
from weir.codec import interval_math as ci_math
from weir.codec import interval_parse as ci_parse
from weir.errors import WeirError

PARSE = [
    ('1-2 3:4 5 day', None, None, '1 year 2 mons 5 days 03:04:00'),
    ('10.333', ('year',), None, '10 years'),
    ('10.333', None, None, '00:00:10.333'),
    ('1', ('day', 'hour'), None, '01:00:00'),
    ('1 2', ('day', 'hour'), None, '1 day 02:00:00'),
    ('1:2', ('hour', 'minute'), None, '01:02:00'),
    ('1:2', ('minute', 'second'), None, '00:01:02'),
    ('1.5', ('month',), None, '1 mon'),
    ('1.23456', ('second',), 3, '00:00:01.235'),
    ('1.5 weeks', None, None, '10 days 12:00:00'),
    ('0.5 months', None, None, '15 days'),
    ('0.7 years', None, None, '8 mons'),
    ('-0.5 days', None, None, '-12:00:00'),
    ('@ 1 day ago', None, None, '-1 days'),
    ('ago 1 day', None, None, '-1 days'),
    ('1 day hour', None, None, '1 day'),
    ('01:00 1.5 days', None, None, '1 day 01:00:00'),
    ('1 +02:03', None, None, '1 day 02:03:00'),
    ('-1:30', None, None, '-01:30:00'),
    ('P1Y2M3DT4H5M6.5S', None, None, '1 year 2 mons 3 days 04:05:06.5'),
    ('P0002-06-07T01:30:00', None, None, '2 years 6 mons 7 days 01:30:00'),
    ('1.000001 days', None, None, '1 day 00:00:00.0864'),
    ('2 mseconds', None, None, '00:00:00.002'),
    ('1.5 decades', None, None, '15 years'),
    ('1 day 2 hours 3 min', ('hour',), None, '1 day 02:00:00'),
    ('-1.5', ('day', 'hour'), None, '-01:00:00'),
    ('1:2:3.5', ('day', 'hour', 'minute', 'second'), 0, '01:02:04'),
    ('1 2', None, None, 'ERR 22007'),
    ('1 quarter', None, None, 'ERR 22007'),
    ('13 ago', None, None, 'ERR 22007'),
    ('1:60', None, None, 'ERR 22015'),
    ('p1d', None, None, 'ERR 22007'),
    ('1day2hours', None, None, 'ERR 22007'),
    ('2147483648 days', None, None, 'ERR 22015'),
    ('178956971 years', None, None, 'ERR 22008'),
]


@pytest.mark.parametrize(("text", "fields", "precision", "expected"), PARSE)
def test_parse_as_postgres(text: str, fields: tuple[str, ...] | None, precision: int | None, expected: str) -> None:
    try:
        got = ci.out(ci_parse.parse(text, frozenset(fields) if fields else None, precision))
    except WeirError as e:
        got = f"ERR {e.sqlstate}"
    assert got == expected


@pytest.mark.parametrize("value", ["1 year 2 mons 5 days 03:04:00", "-1 days +02:00:00", "-1 years -2 mons -00:00:00.5",
                                   "1 mon -1 days +2562047788:00:54.775807", "00:00:00"])
def test_output_reads_back(value: str) -> None:
    assert ci.out(ci_parse.parse(value)) == value


MUL = [  # (interval, factor, interval * factor, interval / factor)
    ("1 month", 2.0, "2 mons", "15 days"),
    ("1 year 2 mons 5 days 03:04:00", 0.5, "7 mons 2 days 13:32:00", "2 years 4 mons 10 days 06:08:00"),
    ("-1 days +02:00:00", 1.5, "-1 days -09:00:00", "-14:40:00"),
    ("7 mons 29 days 23:59:59.999999", 3.7, "2 years 1 mon 134 days 95:59:59.999996", "1 mon 34 days 20:45:24.34534"),
    ("1 day", 1e-7, "00:00:00.00864", "10000000 days"),
]


@pytest.mark.parametrize(("value", "factor", "product", "quotient"), MUL)
def test_mul_div_cascade_down(value: str, factor: float, product: str, quotient: str) -> None:
    v = ci_parse.parse(value)
    assert ci.out(ci_math.mul(v, factor)) == product
    assert ci.out(ci_math.div(v, factor)) == quotient


def test_div_by_zero_and_range() -> None:
    with pytest.raises(WeirError) as e:
        ci_math.div(ci_parse.parse("1 day"), 0.0)
    assert e.value.sqlstate == "22012"
    with pytest.raises(WeirError) as e:
        ci_math.mul(ci_parse.parse("1 year"), 1e9)
    assert e.value.sqlstate == "22008"


def test_justify() -> None:
    v = ci_parse.parse("-3 mons 45 days 36:00:00")
    assert ci.out(ci_math.justify_interval(v)) == "-1 mons -13 days -12:00:00"
    assert ci.out(ci_math.justify_days(v)) == "-1 mons -15 days +36:00:00"
    assert ci.out(ci_math.justify_hours(v)) == "-3 mons +46 days 12:00:00"


def test_equal_spans() -> None:
    assert ci_parse.parse("1 month") == ci_parse.parse("30 days") == ci_parse.parse("720 hours")
    assert ci_parse.parse("1 year") > ci_parse.parse("359 days")


@pytest.mark.parametrize(("unit", "numeric", "double"), [
    ("epoch", Decimal("37184640.000000"), 37184640.0), ("second", Decimal("0.000000"), 0.0),
    ("minute", Decimal(4), 4.0), ("hour", Decimal(3), 3.0), ("day", Decimal(5), 5.0),
    ("month", Decimal(2), 2.0), ("quarter", Decimal(1), 1.0), ("year", Decimal(1), 1.0),
    ("milliseconds", Decimal("0.000"), 0.0)])
def test_extract(unit: str, numeric: Decimal, double: float) -> None:
    v = ci_parse.parse("1 year 2 mons 5 days 03:04:00")
    value, scale = ci_math.extract(unit, v)
    assert Decimal(value).scaleb(-scale) == numeric and str(Decimal(value).scaleb(-scale)) == str(numeric)
    assert ci_math.date_part(unit, v) == double


def test_extract_units_refused() -> None:
    with pytest.raises(WeirError) as e:
        ci_math.extract("dow", ci_parse.parse("1 day"))
    assert e.value.sqlstate == "22023"
    with pytest.raises(WeirError) as e:
        ci_math.extract("week", ci_parse.parse("1 day"))
    assert e.value.sqlstate == "0A000"
