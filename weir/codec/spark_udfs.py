"""PostgreSQL output functions that Spark has no faithful equivalent for, run on the
replica as Python UDFs: the SQL renderer (`weir.sql.translate`) calls them by these
names and the replica (`weir.compute.replica.engine`) registers them under the same
names, so both sides take them from here.

Spark prints a double as Java does (`3.0`, `1.0E10`, and on JDK 17 not always the
shortest digits); PostgreSQL prints the shortest exact digits (`3`, `10000000000`,
`1e-05`). weir's codec already prints PostgreSQL's form for results, so `float::text`
and `float || text` on Spark use the same function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.codec import numeric as cnum


def _null_safe(f: Callable[[Any], str]) -> Callable[[Any], str | None]:
    return lambda v: None if v is None else f(v)


# name -> (Python function, Spark return type)
UDFS: dict[str, tuple[Callable[[Any], str | None], str]] = {
    "weir_float8_out": (_null_safe(cnum.float8_out), "string"),
    "weir_float4_out": (_null_safe(cnum.float4_out), "string"),
}
