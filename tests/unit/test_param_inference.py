"""Parameter types inferred from context, as PostgreSQL infers them for an untyped
parameter (psycopg sends a list of str with no type): `x = ANY($1)` makes $1 an array of
x's type; a cast, a comparison with a column, LIMIT give theirs."""

from __future__ import annotations

import sqlglot

from weir import types as T
from weir.sql.render import infer_param_types


def _types(sql: str, given: list[int] | None = None) -> list[str]:
    cols = {"name": T.TEXT, "n": T.INT4}
    out = infer_param_types(sqlglot.parse_one(sql, read="postgres"), given or [],
                            lambda c: cols.get(c.name))
    return [t.name for t in out]


def test_quantified_comparisons_take_arrays() -> None:
    assert _types("SELECT 1 FROM t WHERE name = ANY($1)") == ["text[]"]
    assert _types("SELECT 1 FROM t WHERE n <> ALL($1) OR n = SOME($2)") == ["integer[]", "integer[]"]
    assert _types("SELECT 1 FROM t WHERE n = ANY($1)", [1016]) == ["bigint[]"]  # the client's type wins


def test_other_contexts() -> None:
    assert _types("SELECT 1 FROM t WHERE n = $1 LIMIT $2") == ["integer", "bigint"]
    assert _types("SELECT $1::date, $2") == ["date", "text"]
