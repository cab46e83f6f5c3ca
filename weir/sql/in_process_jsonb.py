"""weir's jsonb UDF (`weir_jsonb(operation, ...)`, weir.codec.spark_udfs) in process.

Replicas register it once with Spark, which passes each argument as its Python value
whatever its type. DuckDB's Python functions have fixed argument types, so the in-process
engine registers the same function once per scalar type of `to_jsonb(value, type)` (the
form json_build_object's rewrite and to_jsonb of a scalar take: SQLAlchemy's column
reflection builds its identity and collation details with them), under a name per type:
a call of another form, or of another type, runs on a replica.
"""

from __future__ import annotations

from sqlglot import exp

UDF = "weir_jsonb"
# PostgreSQL type name (jsonb_ops' tag) -> the DuckDB type whose Python values are the ones
# Spark passes for it (bool, int, str, float)
SIGNATURES: dict[str, str] = {
    "boolean": "BOOLEAN", "smallint": "SMALLINT", "integer": "INTEGER", "bigint": "BIGINT",
    "real": "FLOAT", "double precision": "DOUBLE",
    "text": "VARCHAR", "character varying": "VARCHAR", "name": "VARCHAR",
}
_OPERATIONS = frozenset({"to_jsonb", "value"})


def udf_name(tag: str) -> str:
    """The in-process UDF for values of this PostgreSQL type."""
    return f"{UDF}__{tag.replace(' ', '_')}"


def rename(call: exp.Anonymous) -> bool:
    """Point a `weir_jsonb('to_jsonb', value, 'type')` call at the UDF of its type (in
    place); False when the in-process engine has none for it."""
    args = call.expressions
    if len(args) != 3 or not all(isinstance(a, exp.Literal) and a.is_string for a in (args[0], args[2])):
        return False
    if args[0].this not in _OPERATIONS or args[2].this not in SIGNATURES:
        return False
    call.set("this", udf_name(args[2].this))
    return True
