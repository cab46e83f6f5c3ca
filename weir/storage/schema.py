"""How a collection's PostgreSQL-typed columns are stored in an Iceberg shard.

`weir.types.PgType` is the source of truth: a column is stored as its `arrow`
type unless `stored_as` names a different Iceberg primitive (smallint as int,
interval as struct<months, days, micros>; shards written before that
hold an interval as long microseconds, read as one still). This module derives the Iceberg schema and the
Arrow "storage" schema of a shard from that, and converts Arrow tables between
the types callers use (`PgType.arrow`) and the types on disk.
"""

from __future__ import annotations

import json
import uuid as uuid_mod
from collections.abc import Callable, Iterator
from dataclasses import replace
from itertools import count
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.schema import Schema, make_compatible_name
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)

from weir.codec.interval import out
from weir.codec.interval_value import to_pg, to_struct
from weir.errors import SqlState, WeirError
from weir.types import BY_NAME, INTERVAL, PgType, array_of, is_interval_arrow, parse_type

TIME_COL = "mz_timestamp"
DIFF_COL = "mz_diff"
RESERVED = (TIME_COL, DIFF_COL)

Column = tuple[str, PgType, bool]  # (name, type, nullable)

# `stored_as` names an Iceberg primitive; these are the ones weir.types uses.
_STORED_AS: dict[str, pa.DataType] = {
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
}


def storage_arrow_type(t: PgType) -> pa.DataType:
    """The Arrow type a column of PgType `t` has in a shard's Parquet files."""
    if t.inner is not None:  # of a multidimensional array: its sub-arrays'
        return pa.list_(storage_arrow_type(t.inner))
    if t.stored_as:
        try:
            return _STORED_AS[t.stored_as]
        except KeyError:
            raise WeirError(SqlState.INTERNAL_ERROR, f"unknown storage type {t.stored_as!r}") from None
    return t.arrow


def iceberg_type(arrow_type: pa.DataType, ids: Iterator[int]) -> IcebergType:
    """The Iceberg type of a storage Arrow type; `ids` hands out nested field ids."""
    t = arrow_type
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return ListType(next(ids), iceberg_type(t.value_type, ids), element_required=False)
    if pa.types.is_boolean(t):
        return BooleanType()
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return IntegerType()
    if pa.types.is_integer(t):
        return LongType()
    if pa.types.is_float32(t):
        return FloatType()
    if pa.types.is_floating(t):
        return DoubleType()
    if pa.types.is_decimal(t):
        return DecimalType(t.precision, t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return StringType()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return BinaryType()
    if pa.types.is_date(t):
        return DateType()
    if pa.types.is_timestamp(t):
        return TimestamptzType() if t.tz else TimestampType()
    if pa.types.is_struct(t):  # an interval's (months, days, micros)
        return StructType(*[NestedField(next(ids), f.name, iceberg_type(f.type, ids), required=False) for f in t])
    raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"cannot store arrow type {t} in a shard")


def physical_name(name: str) -> str:
    """The name a column has in the shard's Parquet files: pyiceberg writes names that are
    not Avro-compatible sanitized ('?column?' as '_x3Fcolumn_x3F', 'a b' as 'a_x20b').
    Readers that go by name and not by Iceberg field id must read this one."""
    return make_compatible_name(name)


def check_columns(columns: list[Column]) -> None:
    names = [c[0] for c in columns]
    if len(set(names)) != len(names):
        raise WeirError(SqlState.DUPLICATE_COLUMN, f"duplicate column names in {names}")
    for n in names:
        if n in RESERVED:
            raise WeirError(SqlState.DUPLICATE_COLUMN, f"column name {n!r} is reserved for storage")


def iceberg_schema(columns: list[Column]) -> Schema:
    """Shard schema: the data columns, then mz_timestamp and mz_diff (both required)."""
    check_columns(columns)
    n = len(columns) + 2
    top_ids = count(1)
    nested_ids = count(n + 1)
    fields = [
        NestedField(next(top_ids), name, iceberg_type(storage_arrow_type(t), nested_ids), required=not nullable)
        for name, t, nullable in columns
    ]
    fields.append(NestedField(next(top_ids), TIME_COL, LongType(), required=True))
    fields.append(NestedField(next(top_ids), DIFF_COL, LongType(), required=True))
    return Schema(*fields)


def storage_schema(columns: list[Column]) -> pa.Schema:
    """Arrow schema of the shard's Parquet files (what Spark reads)."""
    fields = [pa.field(n, storage_arrow_type(t), nullable=nl) for n, t, nl in columns]
    fields += [pa.field(TIME_COL, pa.int64(), nullable=False), pa.field(DIFF_COL, pa.int64(), nullable=False)]
    return pa.schema(fields)


def user_schema(columns: list[Column], with_time: bool = True) -> pa.Schema:
    """Arrow schema callers see: PgType.arrow types, plus mz_timestamp/mz_diff."""
    fields = [pa.field(n, t.arrow, nullable=nl) for n, t, nl in columns]
    if with_time:
        fields.append(pa.field(TIME_COL, pa.int64(), nullable=False))
    fields.append(pa.field(DIFF_COL, pa.int64(), nullable=False))
    return pa.schema(fields)


# ---- column (de)serialization for the table property -------------------------------------


def type_sql(t: PgType) -> str:
    """A type name `type_from_sql` reads back exactly (arrays keep numeric precision)."""
    return type_sql(t.element) + "[]" * max(1, t.ndims) if t.element is not None else t.sql()


def type_from_sql(name: str) -> PgType:
    if name.endswith("[]"):
        return array_of(type_from_sql(name[:-2]))
    if name in BY_NAME:
        return BY_NAME[name]
    return parse_type(name)


def columns_to_json(columns: list[Column]) -> str:
    return json.dumps([[n, type_sql(t), nl] for n, t, nl in columns])


def columns_from_json(text: str) -> list[Column]:
    return [(n, type_from_sql(t), bool(nl)) for n, t, nl in json.loads(text)]


# ---- value conversion ---------------------------------------------------------------------


def _map_values(arr: pa.Array, fn: Callable[[Any], Any], target: pa.DataType) -> pa.Array:
    """Python fallback for conversions Arrow cannot cast (e.g. uuid objects, timedelta)."""

    def conv(v: Any, t: pa.DataType) -> Any:
        if v is None:
            return None
        if pa.types.is_list(t):
            return [conv(x, t.value_type) for x in v]
        return fn(v)

    return pa.array([conv(v, target) for v in arr.to_pylist()], type=target)


def _uuid_str(v: Any) -> str:
    if isinstance(v, bytes):
        return str(uuid_mod.UUID(bytes=v))
    return str(v)


def _leaf(t: PgType) -> PgType:
    while t.element is not None:
        t = t.element
    return t


def _to_storage_col(name: str, arr: pa.ChunkedArray, t: PgType, nullable: bool) -> pa.ChunkedArray:
    target = storage_arrow_type(t)
    leaf = _leaf(t)
    src = arr.type
    try:
        if src.equals(target):
            out = arr
        elif leaf.oid == INTERVAL.oid:  # timedeltas, PgIntervals, microseconds, dicts
            fn = to_struct if leaf.stored_as != "long" else _legacy_micros
            out = pa.chunked_array([_map_values(arr.combine_chunks(), fn, target)], target)
        elif leaf.name == "uuid" and not _leaf_is(src, lambda x: pa.types.is_string(x) or pa.types.is_large_string(x)):
            out = pa.chunked_array([_map_values(arr.combine_chunks(), _uuid_str, target)], target)
        else:
            out = arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, ValueError) as e:
        raise WeirError(
            SqlState.DATATYPE_MISMATCH, f"column {name!r} of type {src} cannot be stored as {t.sql()}: {e}"
        ) from e
    if not nullable and out.null_count:
        raise WeirError(SqlState.NOT_NULL_VIOLATION, f'null value in column "{name}" violates not-null constraint')
    return out


def _leaf_is(t: pa.DataType, pred: Callable[[pa.DataType], bool]) -> bool:
    while pa.types.is_list(t) or pa.types.is_large_list(t):
        t = t.value_type
    return bool(pred(t))


def to_storage(updates: pa.Table, columns: list[Column]) -> pa.Table:
    """Updates in caller types -> the shard's storage schema (checks names and not-null)."""
    names = [c[0] for c in columns] + list(RESERVED)
    missing = [n for n in names if n not in updates.column_names]
    extra = [n for n in updates.column_names if n not in names]
    if missing or extra:
        raise WeirError(
            SqlState.DATATYPE_MISMATCH,
            f"updates do not match the shard's columns: missing {missing}, unexpected {extra}",
        )
    arrays = [_to_storage_col(n, updates[n], t, nl) for n, t, nl in columns]
    for n in RESERVED:
        col = updates[n].cast(pa.int64())
        if col.null_count:
            raise WeirError(SqlState.NOT_NULL_VIOLATION, f"{n} must not be null")
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=storage_schema(columns))


def from_storage(data: pa.Table, columns: list[Column]) -> pa.Table:
    """Storage-typed rows (as read from Parquet) -> caller types (PgType.arrow)."""
    schema = user_schema(columns, with_time=TIME_COL in data.column_names)
    arrays = [
        data[f.name] if data[f.name].type.equals(f.type)
        else _legacy_interval(data[f.name], f.type) if is_interval_arrow(f.type) and not pa.types.is_struct(data[f.name].type)
        else data[f.name].cast(f.type) for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)



def legacy_forms(columns: list[Column], schema: Schema) -> list[Column]:
    """A shard written before intervals had months holds them as long microseconds: its
    interval columns are typed so (stored_as long), to be read and written as such."""
    out = []
    for n, t, nl in columns:
        if t.oid == INTERVAL.oid and isinstance(schema.find_field(n).field_type, LongType):
            t = replace(t, stored_as="long")
        out.append((n, t, nl))
    return out


def _legacy_micros(v: Any) -> int | None:
    """An interval for a shard of long microseconds: one without months, as whole days and time."""
    p = None if v is None else to_pg(v)
    if p is None:
        return None
    if p.as_timedelta() is None:  # months, or time past a day: not what such a shard can hold
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        f'interval "{out(p)}" is not supported in a table created before weir stored months',
                        hint="create a new table and copy the rows into it")
    return p.days * 86_400_000_000 + p.micros


def _legacy_interval(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    """An interval column of a shard written before intervals had months (microseconds)."""
    return pa.chunked_array([_map_values(col.combine_chunks(), to_struct, target)], target)


def time_bounds(data: pa.Table) -> tuple[int, int]:
    mm = pc.min_max(data[TIME_COL])
    return int(mm["min"].as_py()), int(mm["max"].as_py())
