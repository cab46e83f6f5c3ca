"""The forms an interval value takes between weir's layers, and their one meaning.

Stored and Spark-computed intervals are `struct<months, days, micros>` (Arrow gives them
to Python as dicts); the constant evaluator keeps `PgInterval`s; weir's own builtin
relations and older shards say `datetime.timedelta` or a count of microseconds, which mean
PostgreSQL's interval with the whole days in days and the rest (of the same sign) in the
time, as weir has always printed them.
"""

from __future__ import annotations

import datetime as dt
import struct
from typing import Any

from weir.codec.interval import USEC_PER_DAY, PgInterval
from weir.types import INTERVAL, PgType


def from_micros(micros: int) -> PgInterval:
    """A day-time interval's microseconds: whole days in days, the rest in the time."""
    sign = -1 if micros < 0 else 1
    days, rest = divmod(abs(micros), USEC_PER_DAY)
    return PgInterval(0, sign * days, sign * rest)


def to_pg(v: Any) -> PgInterval:
    """Any form of an interval value as a PgInterval."""
    if isinstance(v, PgInterval):
        return v
    if isinstance(v, dict):
        return PgInterval(int(v["months"]), int(v["days"]), int(v["micros"]))
    if isinstance(v, dt.timedelta):
        return from_micros((v.days * 86_400 + v.seconds) * 1_000_000 + v.microseconds)
    if isinstance(v, tuple) and hasattr(v, "nanoseconds"):  # Arrow's MonthDayNano
        months, days, nanos = v
        return PgInterval(int(months), int(days), int(nanos) // 1000)
    if isinstance(v, tuple) and len(v) == 3:  # a Spark Row of the struct
        months, days, micros = v
        return PgInterval(int(months), int(days), int(micros))
    if isinstance(v, int) and not isinstance(v, bool):
        return from_micros(v)
    raise TypeError(f"not an interval: {v!r}")


def to_struct(v: Any) -> dict[str, int] | None:
    """The stored form (None stays None)."""
    if v is None:
        return None
    p = to_pg(v)
    return {"months": p.months, "days": p.days, "micros": p.micros}


_WIRE = struct.Struct(">qii")


def recv(data: bytes) -> PgInterval:
    """interval_recv: microseconds, days, months."""
    micros, days, months = _WIRE.unpack(bytes(data))
    return PgInterval(months, days, micros)


def for_arrow(values: list[Any], t: PgType) -> list[Any]:
    """Python values of type `t` as `pa.array(values, t.arrow)` takes them: intervals (also
    as array elements) as their struct's dicts; other types unchanged."""
    if t.oid == INTERVAL.oid:
        return [to_struct(v) for v in values]
    if t.inner is not None and t.element is not None and t.element.oid == INTERVAL.oid:
        return [None if v is None else for_arrow(v, t.inner) for v in values]
    return values
