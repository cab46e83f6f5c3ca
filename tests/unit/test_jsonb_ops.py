"""weir.codec.jsonb_ops: PostgreSQL 15's jsonb operators and functions (expected values
taken from a real PostgreSQL 15), and the replica UDF over them (weir.codec.spark_udfs)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

from weir.codec import jsonb_ops as j
from weir.codec.spark_udfs import weir_jsonb
from weir.errors import WeirError

DOC = '{"a": {"b": [1, 2.0, null]}, "n": null, "s": "x", "big": 12345678901234567890}'


def test_field_and_element() -> None:
    assert j.field(DOC, "a") == '{"b": [1, 2.0, null]}'
    assert j.field(DOC, "n") == "null"  # JSON null stays a jsonb null
    assert j.field_text(DOC, "n") is None  # ... and is SQL NULL as text
    assert j.field_text(DOC, "s") == "x"
    assert j.field(DOC, "big") == "12345678901234567890"
    assert j.field(DOC, "nope") is None
    assert j.field("[1]", "0") is None
    assert j.element("[1, 2, 3]", -1) == "3"
    assert j.element("[1, 2]", -3) is None
    assert j.element("[1, 2]", 2) is None
    assert j.element('{"0": 1}', 0) is None
    assert j.element("5", 0) == "5" and j.element("5", -1) == "5" and j.element("5", 1) is None
    assert j.element_text('["x", null]', 0) == "x"
    assert j.element_text('["x", null]', 1) is None


def test_paths() -> None:
    assert j.extract_path(DOC, ["a", "b", "1"]) == "2.0"
    assert j.extract_path(DOC, ["a", "b", "-1"]) == "null"
    assert j.extract_path_text(DOC, ["a", "b", "-1"]) is None
    assert j.extract_path(DOC, []) == j.extract_path(DOC, [])
    assert j.extract_path('{"a": 1}', []) == '{"a": 1}'
    assert j.extract_path_text('"x"', []) == "x"
    assert j.extract_path_text("null", []) is None
    assert j.extract_path("[1, 2]", [" 1"]) == "2" and j.extract_path("[1, 2]", ["+1"]) == "2"
    assert j.extract_path("[1, 2]", ["1 "]) is None and j.extract_path("[1, 2]", ["a"]) is None
    assert j.extract_path('"x"', ["0"]) is None
    assert j.extract_path('{"a": [1]}', ["a", None]) is None


def test_exists() -> None:
    assert j.exists('{"a": 1}', "a") and not j.exists('{"a": 1}', "b")
    assert j.exists('["a", 1]', "a") and not j.exists('[["a"]]', "a")
    assert j.exists('"a"', "a") and not j.exists("1", "1")
    assert not j.exists_any('{"a": 1}', ["b", None]) and j.exists_all('{"a": 1}', ["a", None])
    assert j.exists_all("{}", []) and not j.exists_any("{}", [])


@pytest.mark.parametrize(("a", "b", "want"), [
    ("[1, 2]", "1", True), ("1", "[1]", False), ('{"a": [1, 2]}', '{"a": 1}', False),
    ("[1, [2, 3]]", "[[3]]", True), ("[[1, 2]]", "[1]", False),
    ('{"a": {"b": 1, "c": 2}}', '{"a": {"b": 1}}', True), ("1.0", "1", True), ("[1]", "[1, 1]", True),
    ('{"a": 1}', "{}", True), ("[]", "{}", False), ("{}", "[]", False), ('"a"', '"a"', True),
    ("[true]", "[1]", False), ('{"a": null}', '{"a": null}', True), ('[{"a": 1, "b": 2}]', '[{"a": 1}]', True),
])
def test_containment(a: str, b: str, want: bool) -> None:
    assert j.contains(a, b) is want
    assert j.contained(b, a) is want


def test_concat() -> None:
    assert j.concat("1", "2") == "[1, 2]"
    assert j.concat('{"a": 1}', "2") == '[{"a": 1}, 2]'
    assert j.concat("2", '{"a": 1}') == '[2, {"a": 1}]'
    assert j.concat("[1]", '{"a": 1}') == '[1, {"a": 1}]'
    assert j.concat('"s"', "[1]") == '["s", 1]'
    assert j.concat('{"a": 1, "c": 0}', '{"a": 2, "b": 3}') == '{"a": 2, "b": 3, "c": 0}'


def test_delete() -> None:
    assert j.delete_key('["a", 1, "b", "a"]', "a") == '[1, "b"]'
    assert j.delete_key('{"a": 1, "b": 2}', "a") == '{"b": 2}'
    assert j.delete_keys('{"a": 1, "b": 2}', ["a", None]) == '{"b": 2}'
    assert j.delete_index("[1, 2, 3]", -1) == "[1, 2]"
    assert j.delete_index("[1, 2, 3]", 5) == "[1, 2, 3]"
    for call, message in ((lambda: j.delete_key("1", "a"), "cannot delete from scalar"),
                          (lambda: j.delete_keys("1", []), "cannot delete from scalar"),
                          (lambda: j.delete_index("{}", 0), "cannot delete from object using integer index")):
        with pytest.raises(WeirError) as info:
            call()
        assert (info.value.sqlstate, info.value.message) == ("22023", message)


def test_one_value_functions() -> None:
    assert [j.typeof(v) for v in ('{}', "[]", '"x"', "1.0", "true", "null")] == [
        "object", "array", "string", "number", "boolean", "null"]
    assert j.strip_nulls('[null, {"a": null, "b": [null, {"c": null}]}]') == '[null, {"b": [null, {}]}]'
    assert j.strip_nulls("null") == "null"
    assert j.pretty('{"a": {}, "b": [], "c": [1, {"d": null}]}') == (
        '{\n    "a": {\n    },\n    "b": [\n    ],\n    "c": [\n        1,\n        {\n'
        '            "d": null\n        }\n    ]\n}')
    assert j.pretty("{}") == "{\n}" and j.pretty("[]") == "[\n]" and j.pretty('"x"') == '"x"'
    assert j.array_length("[1, [2, 3]]") == 2
    with pytest.raises(WeirError, match="cannot get array length of a scalar"):
        j.array_length("1")
    with pytest.raises(WeirError, match="cannot get array length of a non-array"):
        j.array_length("{}")


def test_set_returning() -> None:
    assert j.each('{"bb": [1], "a": "x", "c": null}') == [("a", '"x"'), ("c", "null"), ("bb", "[1]")]
    assert j.each_text('{"a": "x", "c": null, "d": 1.50}') == [("a", "x"), ("c", None), ("d", "1.50")]
    assert j.array_elements('[1, "x", null]') == ["1", '"x"', "null"]
    assert j.array_elements_text('[1, "x", null]') == ["1", "x", None]
    assert j.object_keys('{"b": 1, "a": 2, "aa": 3}') == ["a", "b", "aa"]
    for call, message in ((lambda: j.each("[1]"), "cannot call jsonb_each on a non-object"),
                          (lambda: j.each_text("1"), "cannot call jsonb_each_text on a non-object"),
                          (lambda: j.array_elements("1"), "cannot extract elements from a scalar"),
                          (lambda: j.array_elements_text("{}"), "cannot extract elements from an object"),
                          (lambda: j.object_keys("1"), "cannot call jsonb_object_keys on a scalar"),
                          (lambda: j.object_keys("[]"), "cannot call jsonb_object_keys on an array")):
        with pytest.raises(WeirError) as info:
            call()
        assert (info.value.sqlstate, info.value.message) == ("22023", message)


def test_sql_values() -> None:
    assert j.to_jsonb(Decimal("1.10"), "numeric") == "1.10"
    assert j.to_jsonb(Decimal("1.5000000000"), "numeric") == "1.5"  # weir's unconstrained numeric column
    assert j.to_jsonb(Decimal("2.50"), "numeric(10,2)") == "2.50"
    assert j.to_jsonb(1e20, "double precision") == "100000000000000000000"
    assert j.to_jsonb(1.5e-7, "double precision") == "0.00000015"
    assert j.to_jsonb(float("nan"), "double precision") == '"NaN"'
    assert j.to_jsonb(float("inf"), "double precision") == '"Infinity"'
    assert j.to_jsonb(12.5, "real") == "12.5"
    assert j.to_jsonb(1_704_164_645_500_000, "timestamp") == '"2024-01-02T03:04:05.5"'
    assert j.to_jsonb(1_704_164_645_000_000, "timestamp with time zone") == '"2024-01-02T03:04:05+00:00"'
    assert j.to_jsonb(dt.date(2024, 1, 2), "date") == '"2024-01-02"'
    assert j.to_jsonb("ab", "character(4)") == '"ab  "'
    assert j.to_jsonb(b"\x01\x02", "bytea") == '"\\\\x0102"'
    assert j.to_jsonb([1, None], "integer[]") == "[1, null]"
    assert j.to_jsonb('{"b": 1}', "jsonb") == '{"b": 1}'
    assert j.to_jsonb(None, "integer") == "null"
    assert j.to_jsonb(True, "boolean") == "true"
    with pytest.raises(WeirError) as info:
        j.to_jsonb(1, "interval")
    assert info.value.sqlstate == "0A000"


def test_build_and_aggregate() -> None:
    types = json.dumps(["text", "text", "numeric", "numeric", "boolean", "text", "date", "double precision"])
    assert j.build_object(types, "a", None, Decimal("1.0"), Decimal("2.50"), True, "x", dt.date(2026, 11, 24),
                          1e20) == '{"a": null, "1.0": 2.50, "true": "x", "2026-11-24": 100000000000000000000}'
    assert j.build_object(json.dumps(["text", "integer", "text", "integer"]), "a", 1, "a", 2) == '{"a": 2}'
    with pytest.raises(WeirError, match="argument 1: key must not be null"):
        j.build_object(json.dumps(["text", "integer"]), None, 1)
    with pytest.raises(WeirError, match="key value must be scalar, not array, composite, or json"):
        j.build_object(json.dumps(["integer[]", "integer"]), [1], 1)
    assert j.build_array(json.dumps(["integer", "text", "jsonb"]), 1, None, "[2]") == "[1, null, [2]]"
    assert j.agg(["1", "null", '{"a": 1}']) == '[1, null, {"a": 1}]'
    assert j.agg([]) is None
    pairs = [("a", None), ("b", 2), ("a", 3)]
    assert j.object_agg(pairs, json.dumps(["text", "integer"])) == '{"a": 3, "b": 2}'
    assert j.object_agg([], json.dumps(["text", "integer"])) is None
    with pytest.raises(WeirError, match="field name must not be null"):
        j.object_agg([(None, 1)], json.dumps(["text", "integer"]))


def test_udf() -> None:
    """The Spark UDF: strict in its arguments, strings out, errors as runtime markers
    only for the operations the SQL checks (their results behind a '+')."""
    assert weir_jsonb("field", '{"a": 1}', "a") == "1"
    assert weir_jsonb("field", None, "a") is None and weir_jsonb("field", '{"a": 1}', None) is None
    assert weir_jsonb("contains", "[1, 2]", "1") == "true"
    assert weir_jsonb("array_length!", "[1]") == "+1"
    assert weir_jsonb("delete_key!", "1", "a") == "weir-error:22023:cannot delete from scalar"
    assert weir_jsonb("value", None, "integer") == "null"
    assert weir_jsonb("to_jsonb", None, "integer") is None
    rows = json.loads(weir_jsonb("each!", '{"a": "x", "b": null}')[1:])  # type: ignore[index]
    assert rows == [{"key": "a", "value": '"x"'}, {"key": "b", "value": "null"}]
    # a text value that looks like a marker is data, not an error
    assert weir_jsonb("field_text", '{"a": "weir-error:22012:x"}', "a") == "weir-error:22012:x"
    assert weir_jsonb("in!", '{"b":1, "a":[1.0]}') == '+{"a": [1.0], "b": 1}'
    assert weir_jsonb("in!", "x").startswith("weir-error:22P02:")  # type: ignore[union-attr]


def _spark(sql: str) -> str:
    from sqlglot import exp

    from weir import types as T
    from weir.sql.parse import parse_statement
    from weir.sql.render import fold_typed_literals, to_spark

    e = parse_statement(sql).expr
    for t in e.find_all(exp.Table):
        t.meta["weir_columns"] = {"j": T.JSONB, "s": T.TEXT, "i": T.INT4, "a": T.TEXT_ARRAY}
    return to_spark(fold_typed_literals(e))


def test_translations() -> None:
    """The SQL side (weir.sql.jsonb): each operator one call of the UDF; untyped literals
    beside a jsonb are read as jsonb when planned; failing operations are checked."""
    assert "WEIR_JSONB('field', j, 'a')" in _spark("SELECT j -> 'a' FROM t")
    assert "WEIR_JSONB('element_text', j, CAST(i AS BIGINT))" in _spark("SELECT j ->> i FROM t")
    assert "WEIR_JSONB('contains', j, '{\"a\": 1}')" in _spark("SELECT j @> '{\"a\":1}' FROM t")
    assert "WEIR_JSONB('concat', '[1]', '[2]')" in _spark("SELECT '[1]'::jsonb || '[2]'::jsonb FROM t")
    assert "RAISE_ERROR" in _spark("SELECT j - 'a' FROM t")
    assert "WEIR_JSONB('equal'" in _spark("SELECT j = '1.0' FROM t")


@pytest.mark.parametrize(("sql", "state"), [
    ("SELECT j -> 1.5::float8 FROM t", "42883"),
    ("SELECT j @> 'x' FROM t", "22P02"),
    ("SELECT s -> 'a' FROM t", "42883"),
    ("SELECT jsonb_build_object('a') FROM t", "22023"),
    ("SELECT to_jsonb('x') FROM t", "42804"),
    ("SELECT a @> i FROM t", "42883"),  # arrays' @> is not jsonb's: text[] @> integer does not exist
    ("SELECT j > j FROM t", "0A000"),
    ("SELECT jsonb_agg(DISTINCT j) FROM t", "0A000"),
])
def test_translation_errors(sql: str, state: str) -> None:
    with pytest.raises(WeirError) as info:
        _spark(sql)
    assert info.value.sqlstate == state, info.value
