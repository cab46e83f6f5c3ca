"""jsonb operators and functions, computed as PostgreSQL 15 computes them.

One implementation for every place weir computes jsonb: the replica's Python UDF
(`weir.codec.spark_udfs.weir_jsonb`) calls these, and unit tests check them. jsonb
values are their text (what weir keeps in a Spark STRING); results are jsonb text in
PostgreSQL's canonical form (`weir.codec.json.dumps`), SQL text, or None for SQL NULL.
Numbers are Decimals throughout (jsonb numbers are numeric: 1.0 stays 1.0, big
integers stay exact). Errors are WeirErrors with PostgreSQL's SQLSTATE and message.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from weir.codec import json as cjson
from weir.codec import jsonb_paths
from weir.codec import numeric as cnum
from weir.errors import SqlState, WeirError

Json = Any  # a parsed value: dict, list, str, Decimal, bool or None (JSON null)


def load(doc: str) -> Json:
    """Parse jsonb text (numbers as Decimal)."""
    return cjson.parse(doc)


def dump(value: Json) -> str:
    """PostgreSQL's jsonb text of a parsed value."""
    return cjson.dumps(value)


_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _key_order(key: str) -> tuple[int, bytes]:
    """jsonb's order of object keys: shorter first, then bytewise."""
    b = key.encode("utf-8", "surrogatepass")
    return len(b), b


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _error(message: str) -> WeirError:
    return WeirError(SqlState.INVALID_PARAMETER_VALUE, message)


def _is_container(v: Json) -> bool:
    return isinstance(v, dict | list)


def _as_text(v: Json) -> str | None:
    """`->>`'s text of a value: a string unquoted, JSON null as SQL NULL."""
    if v is None:
        return None
    if isinstance(v, str):
        return v
    return dump(v)


# ---------------------------------------------------------------- -> ->> #> #>>

def _field(v: Json, key: str) -> tuple[bool, Json]:
    if isinstance(v, dict) and key in v:
        return True, v[key]
    return False, None


def _element(v: Json, index: int) -> tuple[bool, Json]:
    """An array element (negative counts from the end); a scalar is an array of one,
    as PostgreSQL's raw scalar is (`'5'::jsonb -> 0` is 5)."""
    if isinstance(v, dict):
        return False, None
    items = v if isinstance(v, list) else [v]
    if index < 0:
        index += len(items)
    if 0 <= index < len(items):
        return True, items[index]
    return False, None


def field(doc: str, key: str) -> str | None:
    """`jsonb -> text`."""
    found, v = _field(load(doc), key)
    return dump(v) if found else None


def field_text(doc: str, key: str) -> str | None:
    """`jsonb ->> text`."""
    found, v = _field(load(doc), key)
    return _as_text(v) if found else None


def element(doc: str, index: int) -> str | None:
    """`jsonb -> integer`."""
    found, v = _element(load(doc), int(index))
    return dump(v) if found else None


def element_text(doc: str, index: int) -> str | None:
    """`jsonb ->> integer`."""
    found, v = _element(load(doc), int(index))
    return _as_text(v) if found else None


# C's strtol as PostgreSQL's path walk reads an array index: leading blanks, a sign, digits
_PATH_INDEX = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)\Z")


def _path(v: Json, path: Sequence[str | None]) -> tuple[bool, Json]:
    if any(p is None for p in path):
        return False, None
    for step in path:
        if isinstance(v, dict):
            found, v = _field(v, step)  # type: ignore[arg-type]
        elif isinstance(v, list):
            m = _PATH_INDEX.match(step)  # type: ignore[arg-type]
            if m is None or not -(2**31) < int(m.group(1)) < 2**31:
                return False, None
            index = int(m.group(1))
            if index < 0:
                index += len(v)
            found = 0 <= index < len(v)
            v = v[index] if found else None
        else:
            return False, None
        if not found:
            return False, None
    return True, v


def extract_path(doc: str, path: Sequence[str | None]) -> str | None:
    """`jsonb #> text[]` (an empty path is the whole value)."""
    found, v = _path(load(doc), path)
    return dump(v) if found else None


def extract_path_text(doc: str, path: Sequence[str | None]) -> str | None:
    """`jsonb #>> text[]`."""
    found, v = _path(load(doc), path)
    return _as_text(v) if found else None


# ---------------------------------------------------------------- ? ?| ?& @> <@

def _exists(v: Json, key: str) -> bool:
    if isinstance(v, dict):
        return key in v
    if isinstance(v, list):
        return any(isinstance(e, str) and e == key for e in v)
    return isinstance(v, str) and v == key  # a raw scalar is an array of one


def exists(doc: str, key: str) -> bool:
    """`jsonb ? text`: an object's key, or a string element of an array."""
    return _exists(load(doc), key)


def exists_any(doc: str, keys: Sequence[str | None]) -> bool:
    """`jsonb ?| text[]` (NULL keys are skipped)."""
    v = load(doc)
    return any(_exists(v, k) for k in keys if k is not None)


def exists_all(doc: str, keys: Sequence[str | None]) -> bool:
    """`jsonb ?& text[]` (NULL keys are skipped)."""
    v = load(doc)
    return all(_exists(v, k) for k in keys if k is not None)


def _kind(v: Json) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    return "number"


def _scalar_equal(a: Json, b: Json) -> bool:
    return _kind(a) == _kind(b) and a == b  # numbers by value: 1.0 = 1


def _deep_contains(a: Json, b: Json) -> bool:
    """PostgreSQL's JsonbDeepContains for two containers."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key, bv in b.items():
            if key not in a:
                return False
            av = a[key]
            if _kind(av) != _kind(bv):
                return False
            if _is_container(bv):
                if not _deep_contains(av, bv):
                    return False
            elif av != bv:
                return False
        return True
    if isinstance(a, list) and isinstance(b, list):
        for bv in b:
            if _is_container(bv):
                if not any(_is_container(av) and _deep_contains(av, bv) for av in a):
                    return False
            elif not any(not _is_container(av) and _scalar_equal(av, bv) for av in a):
                return False
        return True
    return False


def _contains(a: Json, b: Json) -> bool:
    """At the top, a scalar is a one-element array that only a scalar or an array can
    contain (`'[1, 2]' @> '1'`), and that cannot contain an array (`'1' @> '[1]'` is false)."""
    if not _is_container(b):
        if isinstance(a, dict):
            return False
        return any(not _is_container(av) and _scalar_equal(av, b) for av in (a if isinstance(a, list) else [a]))
    if not _is_container(a):
        return False
    return _deep_contains(a, b)


def contains(doc: str, other: str) -> bool:
    """`jsonb @> jsonb`."""
    return _contains(load(doc), load(other))


def contained(doc: str, other: str) -> bool:
    """`jsonb <@ jsonb`."""
    return _contains(load(other), load(doc))


def _equal(a: Json, b: Json) -> bool:
    if _kind(a) != _kind(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(x, b[k]) for k, x in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b  # type: ignore[no-any-return]


def equal(a: str, b: str) -> bool:
    """`jsonb = jsonb`: equal values, numbers by value (`'1.0' = '1'`), not equal texts."""
    return _equal(load(a), load(b))


# ---------------------------------------------------------------- || -

def concat(a: str, b: str) -> str:
    """`jsonb || jsonb`: objects merge (the right side wins), anything else concatenates
    as arrays (a scalar or an object is an array of one)."""
    x, y = load(a), load(b)
    if isinstance(x, dict) and isinstance(y, dict):
        return dump({**x, **y})
    return dump((x if isinstance(x, list) else [x]) + (y if isinstance(y, list) else [y]))


def delete_key(doc: str, key: str) -> str:
    """`jsonb - text`: an object's key, or an array's string elements equal to it."""
    return delete_keys(doc, [key])


def delete_keys(doc: str, keys: Sequence[str | None]) -> str:
    """`jsonb - text[]` (NULL keys are skipped)."""
    v = load(doc)
    if not _is_container(v):
        raise _error("cannot delete from scalar")
    gone = {k for k in keys if k is not None}
    if isinstance(v, dict):
        return dump({k: x for k, x in v.items() if k not in gone})
    return dump([x for x in v if not (isinstance(x, str) and x in gone)])


def delete_index(doc: str, index: int) -> str:
    """`jsonb - integer`: an array element (negative counts from the end)."""
    v = load(doc)
    if not _is_container(v):
        raise _error("cannot delete from scalar")
    if isinstance(v, dict):
        raise _error("cannot delete from object using integer index")
    i = int(index)
    if i < 0:
        i += len(v)
    if 0 <= i < len(v):
        v = v[:i] + v[i + 1:]
    return dump(v)


# ---------------------------------------------------------------- functions of one value

def typeof(doc: str) -> str:
    """jsonb_typeof."""
    return _kind(load(doc))


def _strip(v: Json) -> Json:
    if isinstance(v, dict):
        return {k: _strip(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_strip(x) for x in v]
    return v


def strip_nulls(doc: str) -> str:
    """jsonb_strip_nulls: object fields whose value is null, at every depth (array
    elements stay)."""
    return dump(_strip(load(doc)))


def _pretty(v: Json, level: int) -> str:
    inner, outer = "\n" + "    " * (level + 1), "\n" + "    " * level
    if isinstance(v, dict):
        items = sorted(v.items(), key=lambda kv: _key_order(kv[0]))
        return "{" + ",".join(f"{inner}{dump(k)}: {_pretty(x, level + 1)}" for k, x in items) + outer + "}"
    if isinstance(v, list):
        return "[" + ",".join(f"{inner}{_pretty(x, level + 1)}" for x in v) + outer + "]"
    return dump(v)


def pretty(doc: str) -> str:
    """jsonb_pretty: PostgreSQL's layout, four spaces a level, an empty container on
    two lines."""
    return _pretty(load(doc), 0)


def array_length(doc: str) -> int:
    """jsonb_array_length."""
    v = load(doc)
    if isinstance(v, list):
        return len(v)
    raise _error("cannot get array length of a non-array" if isinstance(v, dict)
                 else "cannot get array length of a scalar")


# ---------------------------------------------------------------- set-returning functions

def each(doc: str, name: str = "jsonb_each") -> list[tuple[str, str]]:
    """jsonb_each: (key, value) per field, in jsonb's key order."""
    v = load(doc)
    if not isinstance(v, dict):
        raise _error(f"cannot call {name} on a non-object")
    return [(k, dump(x)) for k, x in _ordered(v)]


def each_text(doc: str) -> list[tuple[str, str | None]]:
    """jsonb_each_text: values as text (strings unquoted, null as SQL NULL)."""
    v = load(doc)
    if not isinstance(v, dict):
        raise _error("cannot call jsonb_each_text on a non-object")
    return [(k, _as_text(x)) for k, x in _ordered(v)]


def _ordered(v: dict[str, Json]) -> list[tuple[str, Json]]:
    return sorted(v.items(), key=lambda kv: _key_order(kv[0]))


def _array(doc: str) -> list[Json]:
    v = load(doc)
    if isinstance(v, list):
        return v
    raise _error("cannot extract elements from an object" if isinstance(v, dict)
                 else "cannot extract elements from a scalar")


def array_elements(doc: str) -> list[str]:
    """jsonb_array_elements."""
    return [dump(x) for x in _array(doc)]


def array_elements_text(doc: str) -> list[str | None]:
    """jsonb_array_elements_text."""
    return [_as_text(x) for x in _array(doc)]


def object_keys(doc: str) -> list[str]:
    """jsonb_object_keys."""
    v = load(doc)
    if isinstance(v, dict):
        return [k for k, _ in _ordered(v)]
    raise _error("cannot call jsonb_object_keys on an array" if isinstance(v, list)
                 else "cannot call jsonb_object_keys on a scalar")


# ---------------------------------------------------------------- SQL values as jsonb

def _timestamp(v: dt.datetime, with_zone: bool) -> str:
    """PostgreSQL's JSON form of a timestamp: ISO 8601 with a T, fractional seconds
    without trailing zeros, `+00:00` for timestamptz (sessions run in UTC)."""
    if with_zone and v.tzinfo is not None:
        v = v.astimezone(dt.UTC)
    text = v.strftime("%Y-%m-%dT%H:%M:%S")
    if v.year < 1 or v.year > 9999:  # pragma: no cover - Python datetimes cannot hold these
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "timestamps out of range in jsonb are not supported")
    if v.microsecond:
        text += f".{v.microsecond:06d}".rstrip("0")
    return text + ("+00:00" if with_zone else "")


def _number(text: str) -> Json:
    """A float's text is a JSON number when it is one (`NaN`, `Infinity` are strings)."""
    return Decimal(text) if _JSON_NUMBER.fullmatch(text) else text


def _scalar(value: Any, type_name: str) -> Json:
    """A SQL value of the given PostgreSQL type as a parsed jsonb value."""
    if value is None:
        return None
    if type_name.endswith("[]"):
        element = type_name[:-2]
        return [_scalar(v, element) for v in value]
    if type_name == "jsonb" or type_name == "json":
        return load(value)
    if type_name == "boolean":
        return bool(value)
    if type_name in ("timestamp", "timestamp with time zone") and isinstance(value, int):
        value = _EPOCH + dt.timedelta(microseconds=value)  # what the SQL passes: unix_micros
        if type_name == "timestamp":
            value = value.replace(tzinfo=None)
    if type_name in ("smallint", "integer", "bigint"):
        return Decimal(int(value))
    if type_name == "numeric":  # unconstrained: Spark's scale 10 is not the value's own
        # (a float: Spark's reading of a literal like 1e3, which PostgreSQL reads as numeric)
        d = value if isinstance(value, Decimal) else Decimal(cnum.float8_out(value)) if isinstance(
            value, float) else Decimal(str(value))
        return cnum.numeric_trimmed(d) if d.as_tuple().exponent == -10 else d
    if type_name.startswith("numeric("):
        return value if isinstance(value, Decimal) else Decimal(str(value))
    if type_name == "double precision":
        return _number(cnum.float8_out(float(value)))
    if type_name == "real":
        return _number(cnum.float4_out(float(value)))
    if type_name == "date":
        return value.isoformat()
    if type_name == "timestamp":
        return _timestamp(value, False)
    if type_name == "timestamp with time zone":
        return _timestamp(value, True)
    if type_name == "bytea":
        return "\\x" + bytes(value).hex()
    m = re.fullmatch(r"character\((\d+)\)", type_name)
    if m is not None:  # weir keeps char(n) values unpadded: PostgreSQL's value has the padding
        return str(value).ljust(int(m.group(1)))
    if type_name in ("text", "character varying", "uuid", "character", "unknown", "name") \
            or type_name.startswith("character varying("):
        return str(value)
    raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"jsonb of a value of type {type_name} is not supported")


def to_jsonb(value: Any, type_name: str) -> str:
    """to_jsonb (and an argument of jsonb_build_*): SQL NULL is the JSON null here."""
    return dump(_scalar(value, type_name))


def to_key(value: Any, type_name: str, argument: int) -> str:
    """A jsonb_build_object / jsonb_object_agg key: the text of a scalar (argument 0:
    the aggregate's)."""
    if value is None:
        raise _error(f"argument {argument}: key must not be null" if argument else "field name must not be null")
    if type_name.endswith("[]") or type_name in ("jsonb", "json"):
        raise _error("key value must be scalar, not array, composite, or json")
    v = _scalar(value, type_name)
    return v if isinstance(v, str) else dump(v)


def _typed(types: str, values: Sequence[Any]) -> list[str]:
    names = json.loads(types)
    if len(names) != len(values):
        raise ValueError("one type name per value")
    return names


def build_object(types: str, *args: Any) -> str:
    """jsonb_build_object(k1, v1, ...) of SQL values, `types` their type names (a JSON
    list): keys as to_key (argument numbers count from 1), a later key wins."""
    names = _typed(types, args)
    out: dict[str, Json] = {}
    for i in range(0, len(args), 2):
        key = to_key(args[i], names[i], i + 1)
        out[key] = _scalar(args[i + 1], names[i + 1])
    return dump(out)


def build_array(types: str, *args: Any) -> str:
    """jsonb_build_array of SQL values (NULL is the JSON null)."""
    names = _typed(types, args)
    return dump([_scalar(v, t) for v, t in zip(args, names, strict=True)])


def agg(values: Sequence[str]) -> str | None:
    """jsonb_agg of jsonb values (NULLs already JSON null); no rows: SQL NULL."""
    return dump([load(v) for v in values]) if values else None


def object_agg(pairs: Sequence[Sequence[Any]], types: str) -> str | None:
    """jsonb_object_agg of (key, value) SQL values, `types` their two type names (a
    JSON list); no rows: SQL NULL."""
    if not pairs:
        return None
    key_type, value_type = json.loads(types)
    out: dict[str, Json] = {}
    for key, value in pairs:
        out[to_key(key, key_type, 0)] = _scalar(value, value_type)
    return dump(out)


def rows_json(rows: Sequence[tuple[str | None, str | None]] | Sequence[str | None]) -> str:
    """A set-returning function's rows as JSON text for Spark's from_json: an array of
    {key, value} objects for two columns, of strings for one (one string-valued UDF
    serves every function)."""
    out = [{"key": r[0], "value": r[1]} if isinstance(r, tuple) else r for r in rows]
    return json.dumps(out, ensure_ascii=False)


def set_path(doc: str, path: Sequence[str | None], new: str, create: bool) -> str:
    """jsonb_set(target, path, new_value, create_if_missing) (weir.codec.jsonb_paths)."""
    v = load(doc)
    if not _is_container(v):
        raise _error("cannot set path in scalar")
    if not path:
        return doc
    return dump(jsonb_paths.set_path(v, path, load(new), jsonb_paths.CREATE if create else jsonb_paths.REPLACE))


def insert_path(doc: str, path: Sequence[str | None], new: str, after: bool) -> str:
    """jsonb_insert(target, path, new_value, insert_after)."""
    v = load(doc)
    if not _is_container(v):
        raise _error("cannot set path in scalar")
    if not path:
        return doc
    return dump(jsonb_paths.set_path(v, path, load(new), jsonb_paths.INSERT_AFTER if after
                                     else jsonb_paths.INSERT_BEFORE))


def delete_path(doc: str, path: Sequence[str | None]) -> str:
    """`jsonb #- text[]` (jsonb_delete_path)."""
    v = load(doc)
    if not _is_container(v):
        raise _error("cannot delete path in scalar")
    if not v or not path:
        return doc
    return dump(jsonb_paths.set_path(v, path, None, jsonb_paths.DELETE))


# name -> function of the Spark UDF `weir_jsonb(name, args...)`
OPERATIONS: dict[str, Callable[..., Any]] = {
    "field": field, "field_text": field_text, "element": element, "element_text": element_text,
    "extract_path": extract_path, "extract_path_text": extract_path_text,
    "exists": exists, "exists_any": exists_any, "exists_all": exists_all,
    "contains": contains, "contained": contained, "equal": equal, "concat": concat,
    "delete_key": delete_key, "delete_keys": delete_keys, "delete_index": delete_index,
    "typeof": typeof, "strip_nulls": strip_nulls, "pretty": pretty, "array_length": array_length,
    "in": cjson.jsonb_in, "to_jsonb": to_jsonb, "value": to_jsonb, "to_key": to_key, "build_object": build_object, "build_array": build_array,
    "agg": agg, "object_agg": object_agg,
    "set_path": set_path, "insert_path": insert_path, "delete_path": delete_path,
    "each": lambda d: rows_json(each(d)), "each_text": lambda d: rows_json(each_text(d)),
    "array_elements": lambda d: rows_json(array_elements(d)),
    "array_elements_text": lambda d: rows_json(array_elements_text(d)),
    "object_keys": lambda d: rows_json(object_keys(d)),
}
