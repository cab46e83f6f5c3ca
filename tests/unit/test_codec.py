"""weir.codec: PostgreSQL 15 text/binary formats. Expected bytes come from a real PostgreSQL 15."""

from __future__ import annotations

import datetime as dt
import random
import struct
import uuid
from decimal import Decimal
from typing import Any

import pytest

from weir.codec import (
    coerce,
    copy_text_row,
    decode_binary,
    decode_text,
    encode_binary,
    encode_text,
)
from weir.codec.interval import PgInterval
from weir.codec.interval_value import to_pg
from weir.errors import WeirError
from weir.types import (
    BOOL,
    BY_NAME,
    BY_OID,
    BYTEA,
    DATE,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    INTERVAL,
    JSONB,
    MZ_TIMESTAMP,
    NUMERIC,
    TEXT,
    TEXT_ARRAY,
    TIMESTAMP,
    TIMESTAMPTZ,
    UNKNOWN,
    UUID,
    VARCHAR,
    PgType,
    array_of,
    numeric,
    parse_type,
)

UTC = dt.UTC
OID, NAME, JSON, CHAR = BY_NAME["oid"], BY_NAME["name"], BY_NAME["json"], BY_NAME["character"]
INT4_ARRAY, INT8_ARRAY = BY_OID[1007], BY_OID[1016]
U = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"


def _with_typmod(t: PgType, n: int) -> PgType:
    return PgType(t.name, t.oid, t.typlen, t.array_oid, t.spark_ddl, t.arrow, typmod=n + 4)


def _err(fn: Any, *args: Any) -> tuple[str, str, str | None]:
    with pytest.raises(WeirError) as info:
        fn(*args)
    return info.value.sqlstate, info.value.message, info.value.detail


# ---------------------------------------------------------------- exact wire samples (from PostgreSQL 15)

SAMPLES: list[tuple[PgType, Any, bytes, bytes]] = [
    (BOOL, True, b"t", b"\x01"),
    (BOOL, False, b"f", b"\x00"),
    (INT2, -2, b"-2", b"\xff\xfe"),
    (INT4, 1, b"1", b"\x00\x00\x00\x01"),
    (INT8, 2**62, b"4611686018427387904", b"\x40" + b"\x00" * 7),
    (OID, 4294967295, b"4294967295", b"\xff\xff\xff\xff"),
    (MZ_TIMESTAMP, 2**64 - 1, b"18446744073709551615", b"\xff" * 8),
    (FLOAT8, 1.5, b"1.5", b"?\xf8\x00\x00\x00\x00\x00\x00"),
    (FLOAT4, 1.5, b"1.5", b"?\xc0\x00\x00"),
    (NUMERIC, Decimal("1.5"), b"1.5", b"\x00\x02\x00\x00\x00\x00\x00\x01\x00\x01\x13\x88"),
    (NUMERIC, Decimal("0"), b"0", b"\x00\x00\x00\x00\x00\x00\x00\x00"),
    (NUMERIC, Decimal("0"), b"0", b"\x00\x00\x00\x00\x00\x00\x00\x00"),
    (NUMERIC, Decimal("-0.0001"), b"-0.0001", b"\x00\x01\xff\xff\x40\x00\x00\x04\x00\x01"),
    (NUMERIC, Decimal("123456789.123456789"), b"123456789.123456789",
     b"\x00\x06\x00\x02\x00\x00\x00\t\x00\x01\t)\x1a\x85\x04\xd2\x16.#("),
    (NUMERIC, Decimal("NaN"), b"NaN", b"\x00\x00\x00\x00\xc0\x00\x00\x00"),
    (NUMERIC, Decimal("Infinity"), b"Infinity", b"\x00\x00\x00\x00\xd0\x00\x00\x20"),
    (NUMERIC, Decimal("-Infinity"), b"-Infinity", b"\x00\x00\x00\x00\xf0\x00\x00\x20"),
    (NUMERIC, Decimal("1E+20"), b"100000000000000000000", b"\x00\x01\x00\x05\x00\x00\x00\x00\x00\x01"),
    (NUMERIC, Decimal("15"), b"15", b"\x00\x01\x00\x00\x00\x00\x00\x00\x00\x0f"),
    (numeric(10, 3), Decimal("0.000"), b"0.000", b"\x00\x00\x00\x00\x00\x00\x00\x03"),
    (numeric(10, 1), Decimal("15.0"), b"15.0", b"\x00\x01\x00\x00\x00\x00\x00\x01\x00\x0f"),
    (NUMERIC, Decimal("10000"), b"10000", b"\x00\x01\x00\x01\x00\x00\x00\x00\x00\x01"),
    (NUMERIC, Decimal("0.00001"), b"0.00001", b"\x00\x01\xff\xfe\x00\x00\x00\x05\x03\xe8"),
    (TEXT, "é€", "é€".encode(), "é€".encode()),
    (VARCHAR, "x", b"x", b"x"),
    (NAME, "pg_class", b"pg_class", b"pg_class"),
    (UNKNOWN, "?", b"?", b"?"),
    (JSONB, '{"a": 1}', b'{"a": 1}', b'\x01{"a": 1}'),
    (JSON, '{"a" :1}', b'{"a" :1}', b'{"a" :1}'),
    (DATE, dt.date(2020, 1, 2), b"2020-01-02", b"\x00\x00\x1c\x8a"),
    (DATE, dt.date(1999, 12, 31), b"1999-12-31", b"\xff\xff\xff\xff"),
    (DATE, dt.date(1, 1, 1), b"0001-01-01", b"\xff\xf4\xdb\xf9"),
    (TIMESTAMP, dt.datetime(2020, 1, 2, 12, 34, 56, 500000), b"2020-01-02 12:34:56.5",
     b"\x00\x02>&0{} "),
    (TIMESTAMP, dt.datetime(2000, 1, 1, 0, 0, 0, 1), b"2000-01-01 00:00:00.000001",
     b"\x00\x00\x00\x00\x00\x00\x00\x01"),
    (TIMESTAMPTZ, dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC), b"2020-01-02 03:04:05+00",
     b"\x00\x02>\x1e6\xef\x13@"),
    (INTERVAL, PgInterval(0, 1, 7_384_500_000), b"1 day 02:03:04.5",
     b"\x00\x00\x00\x01\xb8&\x87 \x00\x00\x00\x01\x00\x00\x00\x00"),
    (INTERVAL, PgInterval(0, -1, 0), b"-1 days", b"\x00" * 8 + b"\xff\xff\xff\xff\x00\x00\x00\x00"),
    (INTERVAL, PgInterval(0, 0, -3_600_000_000), b"-01:00:00", b"\xff\xff\xff\xff)l\\\x00" + b"\x00" * 8),
    (INTERVAL, PgInterval(0, 0, 0), b"00:00:00", b"\x00" * 16),
    (UUID, U, U.encode(), b"\xa0\xee\xbc\x99\x9c\x0bN\xf8\xbbmk\xb9\xbd8\n\x11"),
    (BYTEA, b"\x01\x02\xff", b"\\x0102ff", b"\x01\x02\xff"),
    (TEXT_ARRAY, ["a", "b", "c d", None, "", "null", 'x"y', "a\\\\b", "{", "a,b", " x"],
     b'{a,b,"c d",NULL,"","null","x\\"y","a\\\\\\\\b","{","a,b"," x"}',
     b"\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x19\x00\x00\x00\x0b\x00\x00\x00\x01"
     b"\x00\x00\x00\x01a\x00\x00\x00\x01b\x00\x00\x00\x03c d\xff\xff\xff\xff\x00\x00\x00\x00"
     b"\x00\x00\x00\x04null\x00\x00\x00\x03x\"y\x00\x00\x00\x04a\\\\b\x00\x00\x00\x01{"
     b"\x00\x00\x00\x03a,b\x00\x00\x00\x02 x"),
    (INT4_ARRAY, [1, 2, None], b"{1,2,NULL}",
     b"\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x17\x00\x00\x00\x03\x00\x00\x00\x01"
     b"\x00\x00\x00\x04\x00\x00\x00\x01\x00\x00\x00\x04\x00\x00\x00\x02\xff\xff\xff\xff"),
    (INT4_ARRAY, [], b"{}", b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x17"),
    (INT4_ARRAY, [[1, 2], [3, 4]], b"{{1,2},{3,4}}",
     b"\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x17\x00\x00\x00\x02\x00\x00\x00\x01"
     b"\x00\x00\x00\x02\x00\x00\x00\x01" + b"".join(b"\x00\x00\x00\x04" + struct.pack(">i", i)
                                                      for i in range(1, 5))),
    (array_of(BYTEA), [b"\x01"], b'{"\\\\x01"}',
     b"\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x11\x00\x00\x00\x01\x00\x00\x00\x01"
     b"\x00\x00\x00\x01\x01"),
    (array_of(FLOAT8), [1.5], b"{1.5}",
     b"\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x02\xbd\x00\x00\x00\x01\x00\x00\x00\x01"
     b"\x00\x00\x00\x08?\xf8\x00\x00\x00\x00\x00\x00"),
]


@pytest.mark.parametrize(("t", "value", "text", "binary"), SAMPLES)
def test_exact_samples(t: PgType, value: Any, text: bytes, binary: bytes) -> None:
    assert encode_text(value, t) == text
    assert encode_binary(value, t) == binary
    assert encode_text(decode_text(text, t), t) == text
    assert encode_text(decode_binary(binary, t), t) == text
    assert encode_binary(decode_binary(memoryview(binary), t), t) == binary
    if value == value:  # NaN aside, decoding gives back the very value
        assert decode_text(text, t) == value and decode_binary(binary, t) == value


ROUND_TRIPS: list[tuple[PgType, Any]] = [
    (BOOL, True), (INT2, -32768), (INT2, 32767), (INT4, -(2**31)), (INT8, 2**63 - 1),
    (OID, 0), (MZ_TIMESTAMP, 1700000000000), (FLOAT8, -0.0), (FLOAT8, 5e-324),
    (FLOAT8, 1.7976931348623157e308), (FLOAT8, float("inf")), (FLOAT4, 3.4028234663852886e38),
    (NUMERIC, Decimal("-123.4500")), (NUMERIC, Decimal("9999.9999")), (NUMERIC, Decimal("1e-30")),
    (numeric(10, 2), Decimal("12345678.90")), (TEXT, ""), (TEXT, "a\tb\nc\\"), (CHAR, "ab "),
    (JSONB, '[1, "x", {"": null}]'), (JSON, " [1] "), (DATE, dt.date(9999, 12, 31)),
    (TIMESTAMP, dt.datetime(1, 1, 1)), (TIMESTAMP, dt.datetime(9999, 12, 31, 23, 59, 59, 999999)),
    (TIMESTAMPTZ, dt.datetime(1969, 7, 20, 20, 17, 40, 123456, tzinfo=UTC)),
    (INTERVAL, -dt.timedelta(days=3, microseconds=1)), (INTERVAL, dt.timedelta(days=999999)),
    (INTERVAL, dt.timedelta(microseconds=1)), (UUID, str(uuid.UUID(int=0))), (BYTEA, bytes(range(256))),
    (TEXT_ARRAY, [["a", None], ["NULL", "\\"]]), (INT8_ARRAY, [[[1]], [[2]]]),
    (array_of(NUMERIC), [Decimal("1.50"), None, Decimal("NaN")]),
    (array_of(TIMESTAMP), [dt.datetime(2020, 1, 2, 3, 4, 5)]), (array_of(DATE), [dt.date(2020, 1, 2)]),
    (array_of(INTERVAL), [dt.timedelta(days=1)]), (array_of(BOOL), [True, False]),
    (array_of(JSONB), ['{"a": 1}', "[1, 2]"]), (array_of(UUID), [U]), (array_of(VARCHAR), ["y z"]),
]


@pytest.mark.parametrize(("t", "value"), ROUND_TRIPS)
def test_round_trips(t: PgType, value: Any) -> None:
    text, binary = encode_text(value, t), encode_binary(value, t)
    assert encode_text(decode_text(text, t), t) == text
    assert encode_binary(decode_binary(binary, t), t) == binary
    if value == value and "NaN" not in text.decode():
        want = to_pg(value) if t.oid == INTERVAL.oid else [to_pg(x) for x in value] \
            if t.element is not None and t.element.oid == INTERVAL.oid else value  # PostgreSQL's fields
        assert decode_text(text, t) == want
        assert decode_binary(binary, t) == want


def test_numeric_binary_round_trips_many_values() -> None:
    rnd = random.Random(5)
    values = [Decimal(rnd.randint(-(10**40), 10**40)).scaleb(-rnd.randint(0, 45)) for _ in range(500)]
    values += [Decimal(s) for s in ("0", "0.0", "-1", "0.0001", "1000000000000", "99999999.99999999")]
    for d in values:
        d = Decimal(format(d, "f"))  # no positive exponents in weir's numeric domain
        assert decode_binary(encode_binary(d, NUMERIC), NUMERIC) == d
        assert str(decode_binary(encode_binary(d, NUMERIC), NUMERIC)) == encode_text(d, NUMERIC).decode()
        assert decode_text(encode_text(d, NUMERIC), NUMERIC) == d


def test_unconstrained_numeric_prints_without_trailing_zeros() -> None:
    """As Materialize does (its numeric docs, "Output"): weir holds unconstrained numeric
    as DECIMAL(38,10) on Spark, so PostgreSQL's per-value scale is not kept; numeric(p,s)
    keeps its scale as in PostgreSQL."""
    for v, out in (("1.5000000000", b"1.5"), ("-0.0000000000", b"0"), ("100.00", b"100"),
                   ("2.5000000000000000", b"2.5"), ("10", b"10"), ("0.0001000", b"0.0001")):
        assert encode_text(Decimal(v), NUMERIC) == out
        assert str(decode_binary(encode_binary(Decimal(v), NUMERIC), NUMERIC)) == out.decode()
    assert encode_text([Decimal("1.50"), None], array_of(NUMERIC)) == b"{1.5,NULL}"
    assert encode_text(Decimal("12.5"), numeric(10, 2)) == b"12.5"  # the value's own scale
    assert encode_text(Decimal("12.50"), numeric(10, 2)) == b"12.50"


def test_numeric_binary_truncates_digits_beyond_dscale() -> None:
    assert decode_binary(struct.pack(">hhHhHH", 2, 0, 0, 2, 1, 2345), NUMERIC) == Decimal("1.23")


# ---------------------------------------------------------------- floats


@pytest.mark.parametrize(("value", "text"), [
    (1e20, "1e+20"), (1.5e-7, "1.5e-07"), (1e15, "1e+15"), (1e16, "1e+16"), (123456789012345.0, "123456789012345"),
    (1234567890123456.8, "1.2345678901234568e+15"), (123456789012345678.0, "1.2345678901234568e+17"),
    (1.045475733611842e17, "1.0454757336118419e+17"), (0.0001, "0.0001"), (1e-5, "1e-05"), (-0.0, "-0"),
    (0.1, "0.1"), (1e300 * 10, "1e+301"), (float("nan"), "NaN"), (float("-inf"), "-Infinity"), (100.0, "100"),
])
def test_float8_text(value: float, text: str) -> None:
    assert encode_text(value, FLOAT8) == text.encode()


@pytest.mark.parametrize(("value", "text"), [
    (1e6, "1e+06"), (123456.0, "123456"), (1234567.0, "1.234567e+06"), (1e-5, "1e-05"), (0.1, "0.1"),
    (16777217.0, "1.6777216e+07"), (1.2379400392853803e27, "1.2379401e+27"), (3.14159, "3.14159"),
    (1e20, "1e+20"), (float("inf"), "Infinity"),
])
def test_float4_text(value: float, text: str) -> None:
    assert encode_text(value, FLOAT4) == text.encode()


# ---------------------------------------------------------------- text input


@pytest.mark.parametrize(("t", "text", "value"), [
    (BOOL, " TRU ", True), (BOOL, "of", False), (BOOL, "yes", True), (BOOL, "0", False),
    (INT4, " +12 ", 12), (OID, "-1", 4294967295), (FLOAT8, " -inf ", float("-inf")),
    (FLOAT4, "0.1", 0.10000000149011612), (NUMERIC, " .5 ", Decimal("0.5")), (NUMERIC, "5.", Decimal("5")),
    (NUMERIC, "1.50e1", Decimal("15.0")), (NUMERIC, "1e2", Decimal("100")), (NUMERIC, "-0.00", Decimal("0.00")),
    (NUMERIC, "inf", Decimal("Infinity")), (numeric(5, 2), "123.455", Decimal("123.46")),
    (numeric(5, 2), "-123.455", Decimal("-123.46")), (numeric(5, 2), "NaN", Decimal("NaN")),
    (_with_typmod(VARCHAR, 3), "abc  ", "abc"), (_with_typmod(CHAR, 3), "a  ", "a"), (NAME, "x" * 70, "x" * 63),
    (DATE, "20200102", dt.date(2020, 1, 2)), (DATE, "01/02/2020", dt.date(2020, 1, 2)),
    (DATE, "Jan 2, 2020", dt.date(2020, 1, 2)), (DATE, "2020-01-02 10:00", dt.date(2020, 1, 2)),
    (DATE, "2020-1-2", dt.date(2020, 1, 2)), (DATE, "epoch", dt.date(1970, 1, 1)),
    (TIMESTAMP, "2020-01-01 12:00+05", dt.datetime(2020, 1, 1, 12)),
    (TIMESTAMP, "2020-01-01 24:00:00", dt.datetime(2020, 1, 2)),
    (TIMESTAMP, "2020-01-02 03:04:60", dt.datetime(2020, 1, 2, 3, 5)),
    (TIMESTAMP, "2020-01-02 03:04:05.1234567", dt.datetime(2020, 1, 2, 3, 4, 5, 123457)),
    (TIMESTAMP, "2020-01-02T3:4:5", dt.datetime(2020, 1, 2, 3, 4, 5)),
    (TIMESTAMPTZ, "2020-01-02T03:04:05+05:30", dt.datetime(2020, 1, 1, 21, 34, 5, tzinfo=UTC)),
    (TIMESTAMPTZ, "2020-01-02 03:04:05-0830", dt.datetime(2020, 1, 2, 11, 34, 5, tzinfo=UTC)),
    (TIMESTAMPTZ, "2020-01-02 03:04:05 Z", dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC)),
    (TIMESTAMPTZ, "2020-01-02 03:04:05", dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC)),
    (TIMESTAMPTZ, "2020-01-02 03:04:05 America/New_York", dt.datetime(2020, 1, 2, 8, 4, 5, tzinfo=UTC)),
    (UUID, U.upper(), U), (UUID, "{" + U.replace("-", "") + "}", U),
    (UUID, "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11", U),
    (BYTEA, "\\x01 02", b"\x01\x02"), (BYTEA, "ab\\\\c\\001", b"ab\\c\x01"), (BYTEA, "é", "é".encode()),
    (MZ_TIMESTAMP, "42", 42), (MZ_TIMESTAMP, "1970-01-01 00:00:01", 1000),
])
def test_decode_text(t: PgType, text: str, value: Any) -> None:
    for got in (decode_text(text.encode(), t), coerce(text, t)):
        assert got == value or (got != got and value != value)


@pytest.mark.parametrize(("text", "out"), [
    ("1 day 02:03:04.5", "1 day 02:03:04.5"), ("-1 hour", "-01:00:00"), ("1 day -1 hour", "1 day -01:00:00"),
    ("25 hours", "25:00:00"), ("1:2.5", "00:01:02.5"),
    ("1 2:03:04", "1 day 02:03:04"), ("@ 1 day ago", "-1 days"), ("P3DT4H5M6.5S", "3 days 04:05:06.5"),
    ("5", "00:00:05"), ("1:2", "01:02:00"), ("2 weeks", "14 days"), ("10 ms", "00:00:00.01"),
    ("-1.5 days", "-1 days -12:00:00"), ("1 h 2 m 3 s", "01:02:03"),
    ("3 mins 2 secs 1 microsecond 2 milliseconds", "00:03:02.002001"), ("PT1.5S", "00:00:01.5"),
    ("00:00:00.0000015", "00:00:00.000002"), ("-1:30", "-01:30:00"), ("+1 day", "1 day"),
    # fractions cascade as PostgreSQL's do (weeks to days, days to time)
    ("1.5 weeks", "10 days 12:00:00"), (".001 second", "00:00:00.001"), ("0.5 day 1 hour", "13:00:00"),
])
def test_interval_text(text: str, out: str) -> None:
    assert encode_text(decode_text(text.encode(), INTERVAL), INTERVAL) == out.encode()


def test_character_n_is_kept_unpadded_and_shown_padded() -> None:
    """character(n) keeps values without their padding (comparisons, length() and casts to
    text see what PostgreSQL's bpchar operators see) and shows them padded to n."""
    char3 = _with_typmod(CHAR, 3)
    assert coerce("ab ", char3) == "ab" and decode_text(b"ab", char3) == "ab"
    assert encode_text("ab", char3) == b"ab " and encode_binary("ab", char3) == b"ab "
    with pytest.raises(WeirError) as e:
        coerce("abcd", char3)
    assert e.value.sqlstate == "22001"
    assert parse_type("char(3)").length == 3 and parse_type("char").length == 1
    assert parse_type("bpchar").length is None and parse_type("varchar(2)").sql() == "character varying(2)"


@pytest.mark.parametrize("text", ["1.5 months", "1-2", "0.1 year", "P1Y2M3DT4H5M6.5S", "1-2 3:4 5 day",
                                  "0.5 decade"])
def test_interval_with_months_keeps_them(text: str) -> None:
    """Intervals keep PostgreSQL's three fields (stored as struct<months, days, micros>)."""
    v = decode_text(text.encode(), INTERVAL)
    assert isinstance(v, PgInterval) and v.months != 0
    assert decode_text(encode_text(v, INTERVAL), INTERVAL).months == v.months
    got = decode_binary(struct.pack(">qii", 1, 2, 3), INTERVAL)
    assert (got.months, got.days, got.micros) == (3, 2, 1)


def test_array_literals() -> None:
    text = '{a, b ,  c d  ,"e\\"f", \\x, "", NULL, "NULL", nULl }'
    assert decode_text(text, TEXT_ARRAY) == ["a", "b", "c d", 'e"f', "x", "", None, "NULL", None]
    assert decode_text("{{1,2},{3,4}}", INT4_ARRAY) == [[1, 2], [3, 4]]
    assert decode_text("{ }", INT4_ARRAY) == []
    assert decode_text("[1:2]={1,2}", INT4_ARRAY) == [1, 2]
    assert decode_text("{NULL\\ ,\\NULL}", TEXT_ARRAY) == ["NULL ", "NULL"]
    assert encode_text(["x y", "q\\r", "tab\there", "NULLx"], TEXT_ARRAY) == b'{"x y","q\\\\r","tab\there",NULLx}'
    assert encode_text([dt.datetime(2020, 1, 2)], array_of(TIMESTAMP)) == b'{"2020-01-02 00:00:00"}'


def test_jsonb_normalization() -> None:
    text = ('{"b": [1, 2,{"x":1.0}], "a":1, "aa": "é\\u00e9\\n\\u001f/", "a": 2, "c": -0, "d": 1e2,'
            ' "e": 1E-2, "f": 0.10, "g":true,"h":null, "": {}, "i": []}')
    assert decode_text(text, JSONB) == (
        '{"": {}, "a": 2, "b": [1, 2, {"x": 1.0}], "c": 0, "d": 100, "e": 0.01, "f": 0.10, "g": true,'
        ' "h": null, "i": [], "aa": "éé\\n\\u001f/"}')
    assert decode_text('{"b":1, "a":2, "ab":3, "B":4}', JSONB) == '{"B": 4, "a": 2, "b": 1, "ab": 3}'
    assert decode_text("  5 ", JSONB) == "5"
    assert decode_text('{"a" :1,  "a":2}', JSON) == '{"a" :1,  "a":2}'
    assert encode_text({"b": [1, 2.5], "a": None}, JSONB) == b'{"a": null, "b": [1, 2.5]}'


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(("t", "text", "state", "message", "detail"), [
    (INT4, "abc", "22P02", 'invalid input syntax for type integer: "abc"', None),
    (INT4, "", "22P02", 'invalid input syntax for type integer: ""', None),
    (INT4, "1_000", "22P02", 'invalid input syntax for type integer: "1_000"', None),
    (INT4, "99999999999", "22003", 'value "99999999999" is out of range for type integer', None),
    (INT2, "40000", "22003", 'value "40000" is out of range for type smallint', None),
    (INT8, "99999999999999999999", "22003",
     'value "99999999999999999999" is out of range for type bigint', None),
    (OID, "4294967296", "22003", 'value "4294967296" is out of range for type oid', None),
    (BOOL, "maybe", "22P02", 'invalid input syntax for type boolean: "maybe"', None),
    (BOOL, "o", "22P02", 'invalid input syntax for type boolean: "o"', None),
    (FLOAT8, "abc", "22P02", 'invalid input syntax for type double precision: "abc"', None),
    (FLOAT8, "1e-400", "22003", '"1e-400" is out of range for type double precision', None),
    (FLOAT4, "1e39", "22003", '"1e39" is out of range for type real', None),
    (FLOAT4, "1e-46", "22003", '"1e-46" is out of range for type real', None),
    (NUMERIC, "abc", "22P02", 'invalid input syntax for type numeric: "abc"', None),
    (numeric(5, 2), "1234.5", "22003", "numeric field overflow",
     "A field with precision 5, scale 2 must round to an absolute value less than 10^3."),
    (numeric(2, 2), "1", "22003", "numeric field overflow",
     "A field with precision 2, scale 2 must round to an absolute value less than 1."),
    (numeric(5, 2), "Infinity", "22003", "numeric field overflow",
     "A field with precision 5, scale 2 cannot hold an infinite value."),
    (_with_typmod(VARCHAR, 3), "abcd", "22001", "value too long for type character varying(3)", None),
    (UUID, "xyz", "22P02", 'invalid input syntax for type uuid: "xyz"', None),
    (BYTEA, "\\x0g", "22023", 'invalid hexadecimal digit: "g"', None),
    (BYTEA, "\\x012", "22023", "invalid hexadecimal data: odd number of digits", None),
    (BYTEA, "a\\9", "22P02", "invalid input syntax for type bytea", None),
    (DATE, "abc", "22007", 'invalid input syntax for type date: "abc"', None),
    (DATE, "2020-02-30", "22008", 'date/time field value out of range: "2020-02-30"', None),
    (TIMESTAMP, "2020-13-01", "22008", 'date/time field value out of range: "2020-13-01"', None),
    (TIMESTAMPTZ, "abc", "22007", 'invalid input syntax for type timestamp with time zone: "abc"', None),
    (TIMESTAMPTZ, "2020-01-02 03:04:05+16", "22009",
     'time zone displacement out of range: "2020-01-02 03:04:05+16"', None),
    (INTERVAL, "1 days 1 days", "22007", 'invalid input syntax for type interval: "1 days 1 days"', None),
    (INTERVAL, "abc", "22007", 'invalid input syntax for type interval: "abc"', None),
    (INT4_ARRAY, "abc", "22P02", 'malformed array literal: "abc"',
     'Array value must start with "{" or dimension information.'),
    (INT4_ARRAY, "{1,2", "22P02", 'malformed array literal: "{1,2"', "Unexpected end of input."),
    (INT4_ARRAY, "{{1,2},{3}}", "22P02", 'malformed array literal: "{{1,2},{3}}"',
     "Multidimensional arrays must have sub-arrays with matching dimensions."),
    (INT4_ARRAY, "{{},{}}", "22P02", 'malformed array literal: "{{},{}}"', 'Unexpected "}" character.'),
    (INT4_ARRAY, "{1,{2}}", "22P02", 'malformed array literal: "{1,{2}}"', 'Unexpected "{" character.'),
    (INT4_ARRAY, "{1,2}x", "22P02", 'malformed array literal: "{1,2}x"', "Junk after closing right brace."),
    (INT4_ARRAY, "{,}", "22P02", 'malformed array literal: "{,}"', 'Unexpected "," character.'),
    (TEXT_ARRAY, '{"a"b}', "22P02", 'malformed array literal: "{"a"b}"', "Unexpected array element."),
    (INT4_ARRAY, "{1,abc}", "22P02", 'invalid input syntax for type integer: "abc"', None),
    (JSONB, '{"a":1,}', "22P02", "invalid input syntax for type json", 'Expected string, but found "}".'),
    (JSONB, "NaN", "22P02", "invalid input syntax for type json", 'Token "NaN" is invalid.'),
    (JSONB, "[1,2", "22P02", "invalid input syntax for type json", "The input string ended unexpectedly."),
    (JSONB, "{1:2}", "22P02", "invalid input syntax for type json", 'Expected string or "}", but found "1".'),
    (JSONB, "[1 2]", "22P02", "invalid input syntax for type json", 'Expected "," or "]", but found "2".'),
    (JSONB, "[01]", "22P02", "invalid input syntax for type json", 'Token "01" is invalid.'),
    (JSON, '{"a":}', "22P02", "invalid input syntax for type json", 'Expected JSON value, but found "}".'),
    (JSONB, '"\\ud800"', "22P02", "invalid input syntax for type json",
     "Unicode low surrogate must follow a high surrogate."),
    (JSONB, '"\\u0000"', "22P05", "unsupported Unicode escape sequence", "\\u0000 cannot be converted to text."),
])
def test_decode_text_errors(t: PgType, text: str, state: str, message: str, detail: str | None) -> None:
    assert _err(decode_text, text.encode(), t) == (state, message, detail)


def test_decode_text_encoding_errors() -> None:
    assert _err(decode_text, b"a\xc3\x28", TEXT)[:2] == (
        "22021", 'invalid byte sequence for encoding "UTF8": 0xc3 0x28')
    assert _err(decode_text, "a\x00b", TEXT)[:2] == ("22021", 'invalid byte sequence for encoding "UTF8": 0x00')


@pytest.mark.parametrize(("t", "data", "state", "message"), [
    (INT4, b"\x00\x00\x00", "22P03", "insufficient data left in message"),
    (INT4, b"\x00\x00\x00\x00\x00", "22P03", "incorrect binary data format"),
    (NUMERIC, struct.pack(">hhHhH", 1, 0, 0x1234, 0, 1), "22P03", 'invalid sign in external "numeric" value'),
    (NUMERIC, struct.pack(">hhHhH", 1, 0, 0, 0, 10000), "22P03", 'invalid digit in external "numeric" value'),
    (NUMERIC, struct.pack(">hhHhH", 1, 0, 0, 0x4000, 1), "22P03", 'invalid scale in external "numeric" value'),
    (INT4_ARRAY, struct.pack(">iiiiii", 1, 0, 25, 1, 1, 1) + b"a", "42804",
     "binary data has array element type 25 (text) instead of expected 23 (integer)"),
    (INT4_ARRAY, struct.pack(">iii", 7, 0, 23), "54000", "number of array dimensions (7) exceeds the maximum allowed (6)"),
    (INT4_ARRAY, struct.pack(">iii", 1, 2, 23), "22P03", "invalid array flags"),
    (INT4_ARRAY, struct.pack(">iiiiii", 1, 0, 23, 1, 1, 5) + b"\x00" * 5, "22P03",
     "improper binary format in array element 1"),
    (JSONB, b"\x02{}", "22P03", "unsupported jsonb version number 2"),
    (TEXT, b"a\xffb", "22021", 'invalid byte sequence for encoding "UTF8": 0xff'),
    (DATE, b"\x7f\xff\xff\xfe", "22008", "date out of range"),
    (DATE, b"\x7f\xff\xff\xff", "0A000", "infinite date values are not supported"),
])
def test_decode_binary_errors(t: PgType, data: bytes, state: str, message: str) -> None:
    assert _err(decode_binary, data, t)[:2] == (state, message)


def test_decode_binary_error_names_bind_parameter() -> None:
    assert _err(decode_binary, b"\x00" * 5, INT4, 2)[1] == "incorrect binary data format in bind parameter 2"


def test_encode_binary_out_of_range() -> None:
    assert _err(encode_binary, 40000, INT2)[:2] == ("22003", "smallint out of range")
    assert _err(encode_binary, 2**31, INT4)[:2] == ("22003", "integer out of range")


# ---------------------------------------------------------------- COPY


def test_copy_text_row_matches_postgres() -> None:
    values = ["a\\b\tc\nd\re\bf\fg\x0bh\x01i", None, ["x y", "q\\r", "tab\there"], b"\x00\xff", 1.5,
              '{"a": "b\\tc"}', dt.datetime(2020, 1, 2, 3, 4, 5), 12, Decimal("1.50"), True, dt.timedelta(days=1)]
    types = [TEXT, TEXT, TEXT_ARRAY, BYTEA, FLOAT8, JSONB, TIMESTAMP, INT4, NUMERIC, BOOL, INTERVAL]
    assert copy_text_row(values, types) == (
        b'a\\\\b\\tc\\nd\\re\\bf\\fg\\vh\x01i\t\\N\t{"x y","q\\\\\\\\r","tab\\there"}\t\\\\x00ff\t1.5\t'
        b'{"a": "b\\\\tc"}\t2020-01-02 03:04:05\t12\t1.5\tt\t1 day\n')


# ---------------------------------------------------------------- coerce


@pytest.mark.parametrize(("value", "t", "expected"), [
    ("12", INT4, 12), (3.7, INT4, 4), (2.5, INT4, 3), (-2.5, INT4, -3), (Decimal("3.5"), INT2, 4),
    (7, INT8, 7), (12, TEXT, "12"), (True, TEXT, "true"), (Decimal("1.50"), TEXT, "1.5"), (1.5, TEXT, "1.5"),
    (dt.datetime(2020, 1, 1, 10, tzinfo=UTC), TEXT, "2020-01-01 10:00:00+00"), (dt.timedelta(days=1), TEXT, "1 day"),
    ("abc   ", _with_typmod(VARCHAR, 3), "abc"), ("ab ", _with_typmod(CHAR, 3), "ab"),
    (Decimal("123.455"), numeric(5, 2), Decimal("123.46")), (1e-10, numeric(5, 2), Decimal("0.00")),
    (0.1, NUMERIC, Decimal("0.1")), (3, NUMERIC, Decimal(3)), (Decimal("1E+2"), NUMERIC, Decimal("100")),
    (16777217, FLOAT4, 16777216.0), (Decimal("0.1"), FLOAT8, 0.1), (1, FLOAT8, 1.0),
    ("{a,b,\"c d\",NULL}", TEXT_ARRAY, ["a", "b", "c d", None]), (["1", 2.4, None], INT4_ARRAY, [1, 2, None]),
    ("t", BOOL, True), ("ON", BOOL, True), (False, BOOL, False),
    ("2020-01-02", DATE, dt.date(2020, 1, 2)), (dt.datetime(2020, 1, 1, 10), DATE, dt.date(2020, 1, 1)),
    (dt.date(2020, 1, 1), TIMESTAMP, dt.datetime(2020, 1, 1)),
    (dt.datetime(2020, 1, 1), TIMESTAMPTZ, dt.datetime(2020, 1, 1, tzinfo=UTC)),
    (dt.datetime(2020, 1, 1, 5, tzinfo=dt.timezone(dt.timedelta(hours=5))), TIMESTAMP, dt.datetime(2020, 1, 1)),
    ("1 day", INTERVAL, PgInterval(0, 1, 0)), (uuid.UUID(U), UUID, U), ("\\x0102", BYTEA, b"\x01\x02"),
    (bytearray(b"x"), BYTEA, b"x"), ('{"b":1,"a":[1,2]}', JSONB, '{"a": [1, 2], "b": 1}'),
    ({"k": [1, "v"]}, JSONB, '{"k": [1, "v"]}'), (None, INT4, None),
    (dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC), MZ_TIMESTAMP, 1000),
])
def test_coerce(value: Any, t: PgType, expected: Any) -> None:
    got = coerce(value, t)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(("value", "t", "state", "message"), [
    ("abc", INT4, "22P02", 'invalid input syntax for type integer: "abc"'),
    (2**31, INT4, "22003", "integer out of range"), (40000, INT2, "22003", "smallint out of range"),
    (1e10, INT4, "22003", "integer out of range"), (32767.5, INT2, "22003", "smallint out of range"),
    (Decimal("9223372036854775807.5"), INT8, "22003", "bigint out of range"),
    (Decimal("NaN"), INT4, "0A000", "cannot convert NaN to integer"),
    (True, INT4, "42804", "target is of type integer but expression is of type boolean"),
    (1, BOOL, "42804", "target is of type boolean but expression is of type integer"),
    (1, JSONB, "42804", "target is of type jsonb but expression is of type integer"),
    (12345, _with_typmod(VARCHAR, 3), "22001", "value too long for type character varying(3)"),
    (Decimal("1234.5"), numeric(5, 2), "22003", "numeric field overflow"),
    (Decimal("1e39"), FLOAT4, "22003", '"1000000000000000000000000000000000000000" is out of range for type real'),
    ([[1], [2, 3]], INT4_ARRAY, "2202E",
     "multidimensional arrays must have array expressions with matching dimensions"),
    (-1, MZ_TIMESTAMP, "22003", "mz_timestamp out of range"),
])
def test_coerce_errors(value: Any, t: PgType, state: str, message: str) -> None:
    assert _err(coerce, value, t)[:2] == (state, message)


def test_coerce_mismatch_names_column() -> None:
    with pytest.raises(WeirError) as info:
        coerce(True, INT4, column="i")
    assert info.value.message == 'column "i" is of type integer but expression is of type boolean'
    assert info.value.hint == "You will need to rewrite or cast the expression."


def test_unconstrained_numeric_storage_is_exact_or_refused() -> None:
    from weir.codec.numeric import numeric_stored

    assert numeric_stored(Decimal("1.2345678901")) == Decimal("1.2345678901")
    assert numeric_stored(Decimal("-0.00000000050000")) == Decimal("-0.0000000005")
    assert numeric_stored(Decimal("9" * 28 + ".5")) == Decimal("9" * 28 + ".5")
    assert numeric_stored(Decimal("1E+5")) == Decimal("100000")
    for bad, state in ((Decimal("1.23456789012345"), "22003"), (Decimal("1e28"), "22003"),
                       (Decimal("NaN"), "0A000"), (Decimal("-Infinity"), "0A000")):
        with pytest.raises(WeirError) as e:
            numeric_stored(bad)
        assert e.value.sqlstate == state
