"""Parsing HOLD statements and where AS OF may stand (no Spark)."""

from __future__ import annotations

import pytest

from weir.errors import WeirError
from weir.sql import statements as st
from weir.sql.parse import parse_statement


def test_create_hold() -> None:
    s = parse_statement("CREATE HOLD h ON t, other.mv AT 1795448004807 WITH (MAX LAG = '3h')")
    assert isinstance(s, st.CreateHold)
    assert s.name == ["h"] and s.objects == [["t"], ["other", "mv"]] and s.max_lag == "3h"
    assert s.at is not None and s.at.sql() == "1795448004807"
    s = parse_statement("create hold if not exists \"H\" on t with (max lag = INTERVAL '1h')")
    assert isinstance(s, st.CreateHold) and s.name == ["H"] and s.if_not_exists and s.max_lag == "1h"
    assert parse_statement("CREATE HOLD h ON t").max_lag is None  # type: ignore[attr-defined]


@pytest.mark.parametrize("sql", ["CREATE HOLD h", "CREATE HOLD h ON t WITH (SIZE = 1)",
                                 "CREATE HOLD h ON t WITH (MAX LAG = 3)", "ALTER HOLD h MOVE",
                                 "SELECT a FROM t AS OF 5 ORDER BY a"])
def test_bad_hold_statements(sql: str) -> None:
    with pytest.raises(WeirError) as info:
        parse_statement(sql)
    assert info.value.sqlstate in ("42601", "22023")


def test_alter_and_drop_hold() -> None:
    a = parse_statement("ALTER HOLD s.h ADVANCE TO 17 + 1")
    assert isinstance(a, st.AlterHold) and a.action == "advance" and a.name == ["s", "h"] and a.to is not None
    a = parse_statement("ALTER HOLD h ADVANCE")
    assert isinstance(a, st.AlterHold) and a.to is None
    a = parse_statement("ALTER HOLD h RENAME TO h2")
    assert isinstance(a, st.AlterHold) and a.action == "rename" and a.new_name == "h2"
    d = parse_statement("DROP HOLD IF EXISTS h")
    assert isinstance(d, st.Drop) and d.object_kind == "hold" and d.if_exists


def test_as_of_comes_last() -> None:
    q = parse_statement("SELECT a FROM t ORDER BY a LIMIT 2 AS OF 5")
    assert isinstance(q, st.Query) and q.as_of is not None and q.expr.args.get("order") is not None
