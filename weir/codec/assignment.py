"""Assignment of a Python value (a SQL literal, a parameter's value) to a column of a
type, as PostgreSQL's assignment casts do: strings through the type's input function
(weir.codec.text_format), numbers range-checked and rounded, typmods applied, anything
else 42804."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from weir.codec import array as carr
from weir.codec import datetime as cdt
from weir.codec import interval as cinterval
from weir.codec import interval_value as cinterval_value
from weir.codec import json as cjson
from weir.codec import numeric as cnum
from weir.codec.text_format import INT_RANGES, OUTPUT, decode_str, epoch_millis, text_in
from weir.codec.type_oids import (
    BOOL,
    BPCHAR,
    BYTEA,
    DATE,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    INTERVAL,
    JSON,
    JSONB,
    MZ_TS,
    NAME,
    NUMERIC,
    OID,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    UNKNOWN,
    UUID,
    VARCHAR,
)
from weir.errors import SqlState, WeirError
from weir.types import PgType


def _type_of(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer" if -(2**31) <= v < 2**31 else "bigint"
    if isinstance(v, dt.datetime):
        return "timestamp with time zone" if v.tzinfo else "timestamp without time zone"
    names = {float: "double precision", Decimal: "numeric", str: "text", bytes: "bytea",
             dt.date: "date", dt.timedelta: "interval", cinterval.PgInterval: "interval", uuid.UUID: "uuid", dict: "jsonb",
             list: "array", tuple: "record"}
    return next((n for k, n in names.items() if isinstance(v, k)), type(v).__name__)


def _mismatch(v: Any, t: PgType, column: str | None) -> WeirError:
    target = "timestamp without time zone" if t.name == "timestamp" else t.name
    where = f'column "{column}" is' if column else "target is"
    return WeirError(SqlState.DATATYPE_MISMATCH,
                     f"{where} of type {target} but expression is of type {_type_of(v)}",
                     hint="You will need to rewrite or cast the expression.")


def _co_int(v: Any, t: PgType, column: str | None) -> int:
    low, high, overflow = INT_RANGES[t.oid]
    if isinstance(v, bool) or not isinstance(v, int | float | Decimal | dt.datetime):
        raise _mismatch(v, t, column)
    if isinstance(v, dt.datetime):
        if t.oid != MZ_TS:
            raise _mismatch(v, t, column)
        v = epoch_millis(v)
    elif isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise WeirError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, overflow)
        v = int(Decimal(v).to_integral_value(ROUND_HALF_UP))
    elif isinstance(v, Decimal):
        if not v.is_finite():
            what = "NaN" if v.is_nan() else "infinity"
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"cannot convert {what} to {t.name}")
        v = int(v.to_integral_value(ROUND_HALF_UP))
    if not low <= v <= high:
        raise WeirError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, overflow)
    return int(v)


def _co_float(v: Any, t: PgType, column: str | None) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | Decimal):
        raise _mismatch(v, t, column)
    return cnum.float_from_number(v, t.name)


def _co_numeric(v: Any, t: PgType, column: str | None) -> Decimal:
    if isinstance(v, bool) or not isinstance(v, int | float | Decimal):
        raise _mismatch(v, t, column)
    d = cnum.numeric_from_number(v)
    if t.precision is not None:
        return cnum.numeric_typmod(d, t.precision, t.scale or 0)
    return d


_TEXT_SOURCES: list[tuple[type, int]] = [
    (bool, BOOL), (int, INT8), (float, FLOAT8), (Decimal, NUMERIC),
    (dt.datetime, TIMESTAMP), (dt.date, DATE), (dt.timedelta, INTERVAL), (uuid.UUID, UUID),
    (bytes, BYTEA),
]


def _co_text(v: Any, t: PgType, column: str | None) -> str:
    if isinstance(v, bool):
        s = "true" if v else "false"
    elif isinstance(v, dt.datetime) and v.tzinfo is not None:
        s = cdt.timestamptz_out(v)
    else:
        oid = next((o for k, o in _TEXT_SOURCES if isinstance(v, k)), None)
        if oid is None:
            raise _mismatch(v, t, column)
        s = OUTPUT[oid](v)
    return text_in(s, t)


def _co_json(v: Any, t: PgType, column: str | None) -> str:
    if isinstance(v, dict | list | tuple):
        return cjson.dumps(v)
    raise _mismatch(v, t, column)


def _co_date(v: Any, t: PgType, column: str | None) -> dt.date:
    if isinstance(v, dt.datetime):
        return (v.astimezone(cdt.UTC) if v.tzinfo else v).date()
    if isinstance(v, dt.date):
        return v
    raise _mismatch(v, t, column)


def _co_timestamp(v: Any, t: PgType, column: str | None) -> dt.datetime:
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(cdt.UTC)
            return v if t.oid == TIMESTAMPTZ else v.replace(tzinfo=None)
        return v.replace(tzinfo=cdt.UTC) if t.oid == TIMESTAMPTZ else v
    if isinstance(v, dt.date):
        return dt.datetime(v.year, v.month, v.day, tzinfo=cdt.UTC if t.oid == TIMESTAMPTZ else None)
    raise _mismatch(v, t, column)


def _co_instance(kind: type | tuple[type, ...], conv: Callable[[Any], Any]) -> Callable[..., Any]:
    def co(v: Any, t: PgType, column: str | None) -> Any:
        if isinstance(v, kind):
            return conv(v)
        raise _mismatch(v, t, column)
    return co


_COERCE: dict[int, Callable[[Any, PgType, str | None], Any]] = {
    BOOL: _co_instance(bool, bool),
    INT2: _co_int, INT4: _co_int, INT8: _co_int, OID: _co_int, MZ_TS: _co_int,
    FLOAT4: _co_float, FLOAT8: _co_float,
    NUMERIC: _co_numeric,
    TEXT: _co_text, VARCHAR: _co_text, BPCHAR: _co_text, NAME: _co_text, UNKNOWN: _co_text,
    JSON: _co_json, JSONB: _co_json,
    DATE: _co_date, TIMESTAMP: _co_timestamp, TIMESTAMPTZ: _co_timestamp,
    INTERVAL: _co_instance((dt.timedelta, cinterval.PgInterval, dict), cinterval_value.to_pg),
    UUID: _co_instance(uuid.UUID, str),
    BYTEA: _co_instance((bytes, bytearray, memoryview), bytes),
}


def coerce(value: Any, t: PgType, column: str | None = None) -> Any:
    """Assign a Python value (e.g. a SQL literal) to type t the way PostgreSQL does.

    Strings go through t's input function (so '12' -> 12, 'abc' -> 22P02);
    numbers are range-checked and rounded half away from zero; numeric(p,s)
    and varchar(n)/char(n) typmods apply; lists become arrays element-wise.
    Values of an unassignable Python type raise 42804; `column` names the
    target column in that message.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return decode_str(value, t)
    if t.element is not None:
        if not isinstance(value, list | tuple):
            raise _mismatch(value, t, column)
        et = t.element
        out = [coerce(x, t if isinstance(x, list | tuple) and et.oid not in (JSON, JSONB)
                      else et, column) for x in value]
        carr.shape(out)
        return out
    f = _COERCE.get(t.oid)
    return value if f is None else f(value, t, column)
