"""The one place that maps PostgreSQL types to Spark, Arrow and Iceberg types.

Every column weir stores or returns has a `PgType`. Storage uses
`iceberg_type` for shard schemas, compute uses `spark_ddl` to cast shard
columns into the types queries see, and pgwire uses `oid`/`typlen` plus the
codecs in `weir.codec` to put values on the wire.

Python value domain shared by all layers: bool, int, float, decimal.Decimal,
str, bytes, datetime.date, datetime.datetime (naive for timestamp, aware UTC
for timestamptz), datetime.timedelta or weir.codec.interval.PgInterval or a
{months, days, micros} dict (interval), uuid.UUID or str (uuid),
str (jsonb text), list (arrays), int (mz_timestamp).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import pyarrow as pa

from weir.errors import SqlState, WeirError

INTERVAL_DDL = "STRUCT<months: INT, days: INT, micros: BIGINT>"
INTERVAL_ARROW = pa.struct([("months", pa.int32()), ("days", pa.int32()), ("micros", pa.int64())])


@dataclass(frozen=True)
class PgType:
    name: str  # canonical SQL name, e.g. "integer"
    oid: int
    typlen: int  # -1 for varlena
    array_oid: int
    spark_ddl: str  # what queries see, e.g. "INT", "DECIMAL(10,2)"
    arrow: pa.DataType = field(compare=False)
    stored_as: str = ""  # iceberg primitive name, if it differs from the spark type
    element: PgType | None = None  # for arrays
    typmod: int = -1
    precision: int | None = None
    scale: int | None = None
    fields: tuple[PgType | None, ...] | None = field(default=None, compare=False)  # for records
    # an array's dimensions on Spark (ARRAY<ARRAY<INT>> is a 2-D int[]): PostgreSQL's int[] has
    # no fixed count, so every count is the same PostgreSQL type (oid, name, element)
    ndims: int = 0

    @property
    def is_array(self) -> bool:
        return self.element is not None

    @property
    def inner(self) -> PgType | None:
        """The type of one item of the Spark array: a sub-array of a multidimensional array
        (one dimension less), else the element type. None: not an array."""
        if self.element is None or self.ndims <= 1:
            return self.element
        return with_ndims(self, self.ndims - 1)

    @property
    def is_numeric(self) -> bool:
        """A number type (what a numeric literal compares with without a cast)."""
        return self.name in ("smallint", "integer", "bigint", "real", "double precision", "numeric",
                             "mz_timestamp")

    def sql(self) -> str:
        if self.name == "numeric" and self.precision is not None:
            return f"numeric({self.precision},{self.scale or 0})"
        if self.length is not None:
            return f"{self.name}({self.length})"
        if self.oid == 1042:
            return "bpchar"  # `character` alone is character(1)
        return self.name

    def exact_sql(self) -> str:
        """sql(), with as many `[]` as the array has dimensions on Spark: what a catalog or a
        dataflow's column spec keeps, so that parse_type reads the same Spark type back."""
        if self.ndims <= 1 or self.element is None:
            return self.sql()
        return self.element.sql() + "[]" * self.ndims

    @property
    def length(self) -> int | None:
        """n of character(n) / character varying(n)."""
        return self.typmod - 4 if self.oid in (1042, 1043) and self.typmod >= 4 else None


_BASE: list[PgType] = [
    PgType("boolean", 16, 1, 1000, "BOOLEAN", pa.bool_()),
    PgType("smallint", 21, 2, 1005, "SMALLINT", pa.int16(), stored_as="int"),
    PgType("integer", 23, 4, 1007, "INT", pa.int32()),
    PgType("bigint", 20, 8, 1016, "BIGINT", pa.int64()),
    PgType("real", 700, 4, 1021, "FLOAT", pa.float32()),
    PgType("double precision", 701, 8, 1022, "DOUBLE", pa.float64()),
    PgType("numeric", 1700, -1, 1231, "DECIMAL(38,10)", pa.decimal128(38, 10)),
    PgType("text", 25, -1, 1009, "STRING", pa.string()),
    PgType("character varying", 1043, -1, 1015, "STRING", pa.string()),
    PgType("character", 1042, -1, 1014, "STRING", pa.string()),
    PgType("name", 19, 64, 1003, "STRING", pa.string()),
    PgType("date", 1082, 4, 1182, "DATE", pa.date32()),
    PgType("timestamp", 1114, 8, 1115, "TIMESTAMP_NTZ", pa.timestamp("us")),
    PgType("timestamp with time zone", 1184, 8, 1185, "TIMESTAMP", pa.timestamp("us", "UTC")),
    # PostgreSQL's three fields, stored and computed on Spark as they are (weir.sql.interval_ops
    # compares, groups and sorts them by their span, as PostgreSQL does)
    PgType("interval", 1186, 16, 1187, INTERVAL_DDL, INTERVAL_ARROW),
    PgType("uuid", 2950, 16, 2951, "STRING", pa.string()),
    PgType("bytea", 17, -1, 1001, "BINARY", pa.binary()),
    PgType("jsonb", 3802, -1, 3807, "STRING", pa.string()),
    PgType("json", 114, -1, 199, "STRING", pa.string()),
    PgType("oid", 26, 4, 1028, "INT", pa.int32()),
    PgType("mz_timestamp", 16552, 8, 16553, "BIGINT", pa.int64()),
    PgType("unknown", 705, -2, 0, "STRING", pa.string()),
]

# Types only PostgreSQL's system catalogs use (pg_catalog's columns have them): values are
# what their text output shows (a regproc is the function's name, an aclitem its text
# 'grantee=arwd/grantor'), int2vector / oidvector are arrays shown as '1 2'. Named as
# format_type() names them, so "char" keeps its quotes.
_INT2_BASE, _OID_BASE = (next(t for t in _BASE if t.name == n) for n in ("smallint", "oid"))
_CATALOG: list[PgType] = [
    PgType('"char"', 18, 1, 1002, "STRING", pa.string()),
    PgType("regproc", 24, 4, 1008, "STRING", pa.string()),
    PgType("pg_node_tree", 194, -1, 0, "STRING", pa.string()),
    PgType("aclitem", 1033, 12, 1034, "STRING", pa.string()),
    PgType("int2vector", 22, -1, 1006, "ARRAY<SMALLINT>", pa.list_(pa.int16()), element=_INT2_BASE, ndims=1),
    PgType("oidvector", 30, -1, 1013, "ARRAY<INT>", pa.list_(pa.int32()), element=_OID_BASE, ndims=1),
]
_BASE += _CATALOG
# int2vector and oidvector subscripts count from 0 in PostgreSQL, every other array's from 1
ZERO_BASED_ARRAYS = frozenset({22, 30})

BY_NAME: dict[str, PgType] = {t.name: t for t in _BASE}
BY_OID: dict[int, PgType] = {t.oid: t for t in _BASE}

_ALIASES = {
    "bool": "boolean", "int2": "smallint", "int": "integer", "int4": "integer",
    "int8": "bigint", "float4": "real", "float": "double precision",
    "float8": "double precision", "double": "double precision", "decimal": "numeric",
    "varchar": "character varying", "char": "character", "bpchar": "character",
    "string": "text", "timestamptz": "timestamp with time zone",
    "timestamp without time zone": "timestamp", "bytes": "bytea",
    "character varying": "character varying", "double precision": "double precision",
    # PostgreSQL's interval with fields; also how weir's own parameter casts spell it for Spark
    "interval day to second": "interval",
}


MAXDIM = 6  # PostgreSQL's limit on an array's dimensions


def array_of(element: PgType) -> PgType:
    """The array of `element`; of an array, the same PostgreSQL array type with one more
    dimension (a nested list on Spark and in Arrow). int2vector[] and oidvector[] are
    types of their own."""
    if element.is_array and element.oid not in ZERO_BASED_ARRAYS:
        if element.ndims >= MAXDIM:
            raise WeirError(SqlState.PROGRAM_LIMIT_EXCEEDED, f"number of array dimensions ({element.ndims + 1}) "
                            f"exceeds the maximum allowed ({MAXDIM})")
        return replace(element, spark_ddl=f"ARRAY<{element.spark_ddl}>", arrow=pa.list_(element.arrow),
                       ndims=element.ndims + 1)
    return PgType(
        f"{element.name}[]", element.array_oid, -1, 0, f"ARRAY<{element.spark_ddl}>",
        pa.list_(element.arrow), element=element, ndims=1,
    )


def with_ndims(t: PgType, ndims: int) -> PgType:
    """Array type `t` with `ndims` dimensions (of its element type)."""
    assert t.element is not None
    out = array_of(t.element)
    for _ in range(ndims - 1):
        out = array_of(out)
    return out


for _t in list(_BASE):
    if _t.array_oid:
        BY_OID[_t.array_oid] = array_of(_t)
# a catalog type's name is not SQL a user writes ("char"): parse_type finds them by name
CATALOG_TYPES: dict[str, PgType] = {t.name: t for t in _CATALOG}
CATALOG_TYPES.update({f"{t.name}[]": BY_OID[t.array_oid] for t in _CATALOG if t.array_oid})

BOOL = BY_NAME["boolean"]
INT2 = BY_NAME["smallint"]
INT4 = BY_NAME["integer"]
INT8 = BY_NAME["bigint"]
FLOAT4 = BY_NAME["real"]
FLOAT8 = BY_NAME["double precision"]
NUMERIC = BY_NAME["numeric"]
TEXT = BY_NAME["text"]
VARCHAR = BY_NAME["character varying"]
BPCHAR = BY_NAME["character"]
DATE = BY_NAME["date"]
TIMESTAMP = BY_NAME["timestamp"]
TIMESTAMPTZ = BY_NAME["timestamp with time zone"]
INTERVAL = BY_NAME["interval"]
UUID = BY_NAME["uuid"]
BYTEA = BY_NAME["bytea"]
JSONB = BY_NAME["jsonb"]
MZ_TIMESTAMP = BY_NAME["mz_timestamp"]
UNKNOWN = BY_NAME["unknown"]
TEXT_ARRAY = BY_OID[1009]


RECORD_OID, RECORD_ARRAY_OID = 2249, 2287


def record_of(fields: tuple[PgType | None, ...]) -> PgType:
    """An anonymous record `(a, b)` (a Spark struct) whose fields have these types (None:
    not known). Not a column type: weir's type inference uses it for text output."""
    known = all(f is not None for f in fields)
    ddl = ("STRUCT<" + ", ".join(f"f{i + 1}: {f.spark_ddl}" for i, f in enumerate(fields) if f is not None) + ">"
           if known else "STRUCT<>")
    arrow = pa.struct([(f"f{i + 1}", f.arrow) for i, f in enumerate(fields) if f is not None]) if known else pa.null()
    return PgType("record", RECORD_OID, -1, RECORD_ARRAY_OID, ddl, arrow, fields=fields)


def numeric(precision: int | None, scale: int | None) -> PgType:
    """numeric(p,s); unconstrained numeric keeps scale 10 in Spark (DECIMAL(38,10))."""
    if precision is None:
        return NUMERIC
    scale = scale or 0
    if not (1 <= precision <= 38) or not (0 <= scale <= precision):
        raise WeirError(
            SqlState.INVALID_PARAMETER_VALUE,
            f"NUMERIC precision {precision} must be between 1 and 38 and scale {scale} "
            "between 0 and the precision",
        )
    return PgType(
        "numeric", 1700, -1, 1231, f"DECIMAL({precision},{scale})",
        pa.decimal128(precision, scale), typmod=((precision << 16) | scale) + 4,
        precision=precision, scale=scale,
    )


MAX_LENGTH = 10_485_760  # PostgreSQL's limit for character(n) / character varying(n)


def character(base: PgType, length: int | None) -> PgType:
    """character(n) or character varying(n) (None: no limit)."""
    if length is None:
        return base
    short = "varchar" if base.oid == 1043 else "char"
    if length < 1:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f"length for type {short} must be at least 1")
    if length > MAX_LENGTH:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f"length for type {short} cannot exceed {MAX_LENGTH}")
    return replace(base, typmod=length + 4)


_TYPE_RE = re.compile(r"^\s*([a-z_ ]+?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*((?:\[\s*\d*\s*\])+|\s+list)?\s*$")


def parse_type(sql_name: str) -> PgType:
    """A type as written in SQL (`int`, `numeric(10,2)`, `text[]`, `varchar(20)`). `int[][]`
    is PostgreSQL's int[] too; weir reads it as two dimensions (the Spark type of a
    two-dimensional value, ARRAY<ARRAY<INT>>)."""
    catalog = CATALOG_TYPES.get(sql_name.strip())
    if catalog is not None:
        return catalog
    m = _TYPE_RE.match(sql_name.lower())
    if not m:
        raise WeirError(SqlState.UNDEFINED_OBJECT, f'type "{sql_name}" does not exist')
    written, p, s, arr = m.group(1).strip(), m.group(2), m.group(3), m.group(4)
    base = _ALIASES.get(written, written)
    if base == "numeric":
        t = numeric(int(p) if p else None, int(s) if s else None)
    elif base in ("character", "character varying"):
        # `char` / `character` without a length is character(1); bpchar has no limit
        length = int(p) if p else (1 if written in ("char", "character") else None)
        t = character(BY_NAME[base], length)
    elif base in BY_NAME and base != "unknown":
        t = BY_NAME[base]
    else:
        raise WeirError(SqlState.UNDEFINED_OBJECT, f'type "{sql_name}" does not exist')
    if not arr:
        return t
    return with_ndims(array_of(t), max(1, arr.count("[")))


def from_spark(spark_type: object) -> PgType:
    """The PgType for a pyspark.sql.types DataType (result columns of a Spark query)."""
    from pyspark.sql import types as st

    if isinstance(spark_type, st.BooleanType):
        return BOOL
    if isinstance(spark_type, (st.ByteType, st.ShortType)):
        return INT2
    if isinstance(spark_type, st.IntegerType):
        return INT4
    if isinstance(spark_type, st.LongType):
        return INT8
    if isinstance(spark_type, st.FloatType):
        return FLOAT4
    if isinstance(spark_type, st.DoubleType):
        return FLOAT8
    if isinstance(spark_type, st.DecimalType):
        return numeric(spark_type.precision, spark_type.scale)
    if isinstance(spark_type, st.DateType):
        return DATE
    if isinstance(spark_type, st.TimestampNTZType):
        return TIMESTAMP
    if isinstance(spark_type, st.TimestampType):
        return TIMESTAMPTZ
    if isinstance(spark_type, (st.DayTimeIntervalType, st.YearMonthIntervalType)):
        return INTERVAL
    if isinstance(spark_type, st.BinaryType):
        return BYTEA
    if isinstance(spark_type, st.ArrayType):
        return array_of(from_spark(spark_type.elementType))
    if isinstance(spark_type, (st.MapType, st.StructType)):
        return JSONB
    return TEXT


def is_interval_arrow(t: pa.DataType) -> bool:
    """An interval's struct<months, days, micros> (whatever its fields' nullability)."""
    return (pa.types.is_struct(t) and [f.name for f in t] == ["months", "days", "micros"]
            and [f.type for f in t] == [pa.int32(), pa.int32(), pa.int64()])


def from_arrow(arrow_type: pa.DataType) -> PgType:
    """The PgType for an Arrow type (results streamed back from a replica)."""
    t = arrow_type
    if pa.types.is_boolean(t):
        return BOOL
    if pa.types.is_int8(t) or pa.types.is_int16(t):
        return INT2
    if pa.types.is_int32(t):
        return INT4
    if pa.types.is_integer(t):
        return INT8
    if pa.types.is_float32(t):
        return FLOAT4
    if pa.types.is_floating(t):
        return FLOAT8
    if pa.types.is_decimal(t):
        return numeric(t.precision, t.scale)
    if pa.types.is_date(t):
        return DATE
    if pa.types.is_timestamp(t):
        return TIMESTAMPTZ if t.tz else TIMESTAMP
    if pa.types.is_duration(t) or pa.types.is_interval(t):
        return INTERVAL
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return BYTEA
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return array_of(from_arrow(t.value_type))
    if is_interval_arrow(t):
        return INTERVAL
    if pa.types.is_struct(t) or pa.types.is_map(t):
        return JSONB
    return TEXT


def by_oid(oid: int) -> PgType:
    try:
        return BY_OID[oid]
    except KeyError:
        raise WeirError(SqlState.UNDEFINED_OBJECT, f"type with OID {oid} does not exist") from None
