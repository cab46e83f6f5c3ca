"""generate_series in FROM over integer constants renders as Spark's range(): it streams
and its loop notices a cancel (explode() of one array ran a canceled cross join of two
series for a minute on the replica). Everything else keeps the explode() form."""

from __future__ import annotations

import sqlglot

from weir.sql.render import to_spark


def _spark(sql: str) -> str:
    return to_spark(sqlglot.parse_one(sql, read="postgres"))


def test_integer_constants_become_range() -> None:
    out = _spark("SELECT count(*) FROM generate_series(1, 200000) AS a(x) CROSS JOIN generate_series(1, 5) AS b(y)")
    assert out.count("RANGE(") == 2 and "SEQUENCE" not in out
    assert "CAST(id AS INT) AS `x`" in out


def test_bounds_and_types() -> None:
    down = _spark("SELECT * FROM generate_series(10, 1, -3)")
    assert "RANGE(CAST(10 AS BIGINT), CAST(1 AS BIGINT) - 1, -3)" in down  # inclusive end, counting down
    assert "CAST(id AS BIGINT)" in _spark("SELECT * FROM generate_series(1, 5000000000) AS g")
    assert "CAST(id AS INT)" in _spark("SELECT * FROM generate_series(-3, -1) AS g")


def test_other_series_keep_explode() -> None:
    for sql in ("SELECT * FROM generate_series(1.5, 3) AS g",  # numeric
                "SELECT * FROM generate_series(1, 3, 0) AS g",  # zero step: PostgreSQL's error
                "SELECT * FROM generate_series(1, 9223372036854775807) AS g",  # end + 1 overflows
                "SELECT * FROM t, generate_series(1, t.n) AS g",  # not constant
                "SELECT generate_series(1, 3)"):  # select list
        assert "RANGE(" not in _spark(sql), sql
