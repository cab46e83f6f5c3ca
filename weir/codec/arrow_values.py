"""Arrow result columns as Python values, with PostgreSQL's errors for dates and times that
have no Python value.

Spark computes dates and timestamps on a proleptic calendar without limits (year 0, year
-4800, year 300000), Python's datetime holds only years 1 to 9999, and PostgreSQL's range
is 4714 BC to 5874897 AD (dates) or 294276 AD (timestamps). A value beyond PostgreSQL's
range is its error (22008, as PostgreSQL raises while computing it); a value PostgreSQL
holds that weir cannot show (before year 1, after 9999) is refused by name, never an
internal error."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from weir.errors import SqlState, WeirError

_UNIX_EPOCH_JULIAN = 2440588  # PostgreSQL's POSTGRES_EPOCH_JDATE - 10957: 1970-01-01
_MIN_DAY = -_UNIX_EPOCH_JULIAN  # 4714-11-24 BC, Julian day 0 (DATETIME_MIN_JULIAN)
_TIMESTAMP_END_DAY = 109203528 - _UNIX_EPOCH_JULIAN  # 294277-01-01 (TIMESTAMP_END_JULIAN)
_DATE_END_DAY = 2147483494 - _UNIX_EPOCH_JULIAN  # 5874898-01-01 (DATE_END_JULIAN)
_US_PER_DAY = 86_400_000_000


def column_values(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """`column.to_pylist()`, or the error PostgreSQL (or weir's limit) gives for its values."""
    try:
        return column.to_pylist()
    except (OverflowError, ValueError):
        raise _range_error(column) from None


def _range_error(column: pa.Array | pa.ChunkedArray) -> WeirError:
    t = column.type
    if pa.types.is_date(t):
        days = pc.cast(column, pa.int32() if t == pa.date32() else pa.int64())
        divisor, end, what = 1 if t == pa.date32() else 86_400_000, _DATE_END_DAY, "date"
    elif pa.types.is_timestamp(t):
        days = pc.cast(pc.cast(column, pa.timestamp("us", t.tz)), pa.int64())
        divisor, end, what = _US_PER_DAY, _TIMESTAMP_END_DAY, "timestamp"
    else:
        return WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"a value of type {t} cannot be sent to the client")
    lo, hi = pc.min_max(days).values()
    lo_day = lo.as_py() // divisor if lo.is_valid else 0
    hi_day = hi.as_py() // divisor if hi.is_valid else 0
    if lo_day < _MIN_DAY or hi_day >= end:
        return WeirError(SqlState.DATETIME_FIELD_OVERFLOW, f"{what} out of range")
    return WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                     f"{what}s before year 1 or after year 9999 are not supported",
                     hint="PostgreSQL's range is wider; weir shows years 1 to 9999 only.")
