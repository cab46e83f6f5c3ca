"""PostgreSQL output functions that Spark has no faithful equivalent for, run on the
replica as Python UDFs: the SQL renderer (`weir.sql.translate`) calls them by these
names and the replica (`weir.compute.replica.engine`) registers them under the same
names, so both sides take them from here.

Spark prints a double as Java does (`3.0`, `1.0E10`, and on JDK 17 not always the
shortest digits); PostgreSQL prints the shortest exact digits (`3`, `10000000000`,
`1e-05`). weir's codec already prints PostgreSQL's form for results, so `float::text`
and `float || text` on Spark use the same function.

jsonb operators and functions are one UDF, `weir_jsonb(operation, args...)`, over
`weir.codec.jsonb_ops` (one registration per session, not one per function). Its
result is always a string (booleans and integers are cast back by the SQL, rows of
set-returning functions are JSON for from_json); a PostgreSQL error is returned as a
runtime marker that the SQL turns into raise_error(), so that an error is raised only
where PostgreSQL would evaluate the call (Spark evaluates Python UDFs inside CASE
branches for every row).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from weir.codec import datetime_ops, jsonb_ops, numeric_math
from weir.codec import numeric as cnum
from weir.errors import WeirError, runtime_marker


def _null_safe(f: Callable[[Any], str]) -> Callable[[Any], str | None]:
    return lambda v: None if v is None else f(v)


# operations whose NULL arguments do not make their result NULL
_NOT_STRICT = frozenset({"value", "build_object", "build_array", "agg", "object_agg"})


def weir_jsonb(operation: str, *args: Any) -> str | None:
    """One jsonb operation (`jsonb_ops.OPERATIONS`). An operation named with a final
    `!` may fail: its result is prefixed with `+`, or is a runtime marker (a prefix no
    result text can fake, whatever the data holds)."""
    checked = operation.endswith("!")
    name = operation.rstrip("!")
    if name not in _NOT_STRICT and any(a is None for a in args):
        return None
    try:
        out = jsonb_ops.OPERATIONS[name](*args)
    except WeirError as e:
        if not checked:
            raise
        return runtime_marker(e.sqlstate, e.message)
    if out is None:
        return None
    text = out if isinstance(out, str) else ("true" if out else "false") if isinstance(out, bool) else str(out)
    return "+" + text if checked else text


# weir's unconstrained numeric in Spark: DECIMAL(38,10)
_NUMERIC_SCALE = 10
_NUMERIC_INTEGER_DIGITS = 28


def _trimmed(v: Any) -> Decimal:
    """A Spark decimal arrives at its column's scale (1.5000000000): PostgreSQL's result
    scales depend on the value's own display scale, which weir keeps without trailing zeros."""
    d = v if isinstance(v, Decimal) else Decimal(v)
    return d.normalize() if d else Decimal(0)


def weir_numeric(operation: str, *args: Any) -> str | None:
    """One exact numeric operation (`numeric_math.OPERATIONS`), PostgreSQL's result rounded
    to weir's numeric scale: `+digits`, or a runtime marker for its error (raised by the SQL
    only where PostgreSQL would evaluate the call, as for weir_jsonb)."""
    if any(a is None for a in args):
        return None
    try:
        out = numeric_math.OPERATIONS[operation](*(_trimmed(a) for a in args))
    except WeirError as e:
        return runtime_marker(e.sqlstate, e.message)
    out = out.quantize(Decimal(1).scaleb(-_NUMERIC_SCALE), rounding="ROUND_HALF_UP",
                       context=numeric_math.CONTEXT)
    if out and out.adjusted() >= _NUMERIC_INTEGER_DIGITS:
        return runtime_marker("22003", "numeric field overflow")
    return "+" + format(out, "f")


def _texts(out: Callable[[Any], str]) -> Callable[[Any], list[str | None] | None]:
    """The texts of an array's elements (NULLs kept), for an array's text output: Spark
    cannot call a Python UDF in a lambda (transform(a, x -> f(x)))."""
    return lambda v: None if v is None else [None if x is None else out(x) for x in v]


def weir_datetime(operation: str, *args: Any) -> str | None:
    """One date/time operation (`datetime_ops.OPERATIONS`): `+result` (days or
    microseconds since 1970) or a runtime marker for PostgreSQL's error, raised by the SQL
    where the value is used (as for weir_jsonb)."""
    if any(a is None for a in args):
        return None
    try:
        return "+" + datetime_ops.OPERATIONS[operation](*args)
    except WeirError as e:
        return runtime_marker(e.sqlstate, e.message)


# name -> (Python function, Spark return type)
UDFS: dict[str, tuple[Callable[..., Any], str]] = {
    "weir_float8_out": (_null_safe(cnum.float8_out), "string"),
    "weir_float4_out": (_null_safe(cnum.float4_out), "string"),
    "weir_float8_texts": (_texts(cnum.float8_out), "array<string>"),
    "weir_float4_texts": (_texts(cnum.float4_out), "array<string>"),
    "weir_jsonb": (weir_jsonb, "string"),
    "weir_numeric": (weir_numeric, "string"),
    "weir_datetime": (weir_datetime, "string"),
}
