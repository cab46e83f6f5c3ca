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


def test_durable_subscription_statements() -> None:
    c = parse_statement("CREATE DURABLE SUBSCRIPTION s.ds IN CLUSTER prod WITH (ACKNOWLEDGE WITHIN '1h', "
                        "START AT 1795448004807) AS SELECT k, count(*) FROM t JOIN u USING (k) GROUP BY k")
    assert isinstance(c, st.CreateDurableSubscription)
    assert c.name == ["s", "ds"] and c.cluster == "prod" and c.acknowledge_within == "1h"
    assert c.start_at is not None and c.start_at.sql() == "1795448004807" and "JOIN u" in c.query_text
    a = parse_statement("ACKNOWLEDGE DURABLE SUBSCRIPTION ds UP TO 1795448009000")
    assert isinstance(a, st.AcknowledgeDurableSubscription) and a.up_to.sql() == "1795448009000"
    assert parse_statement("ALTER DURABLE SUBSCRIPTION ds RESET").action == "reset"  # type: ignore[attr-defined]
    r = parse_statement("ALTER DURABLE SUBSCRIPTION ds RENAME TO ds2")
    assert isinstance(r, st.AlterDurableSubscription) and r.new_name == "ds2"
    d = parse_statement("DROP DURABLE SUBSCRIPTION IF EXISTS ds")
    assert isinstance(d, st.Drop) and d.object_kind == "durable subscription" and d.if_exists
    sub = parse_statement("SUBSCRIBE USING DURABLE SUBSCRIPTION ds WITH (PROGRESS)")
    assert isinstance(sub, st.Subscribe) and sub.durable == ["ds"] and sub.progress and not sub.snapshot
    copy = parse_statement("COPY (SUBSCRIBE USING DURABLE SUBSCRIPTION ds WITH (SNAPSHOT true)) TO STDOUT")
    assert isinstance(copy, st.CopyTo) and copy.subscribe is not None and copy.subscribe.snapshot


@pytest.mark.parametrize("sql", [
    "CREATE DURABLE SUBSCRIPTION ds AS SELECT 1",  # ACKNOWLEDGE WITHIN is required
    "CREATE DURABLE SUBSCRIPTION ds WITH (ACKNOWLEDGE WITHIN 5) AS SELECT 1",
    "CREATE DURABLE SUBSCRIPTION ds WITH (RETRIES = 5) AS SELECT 1",
    "ACKNOWLEDGE DURABLE SUBSCRIPTION ds",
    "SUBSCRIBE USING DURABLE SUBSCRIPTION ds AS OF 5",
])
def test_bad_durable_subscription_statements(sql: str) -> None:
    with pytest.raises(WeirError) as info:
        parse_statement(sql)
    assert info.value.sqlstate in ("42601", "22023")


def test_privilege_statements() -> None:
    g = parse_statement("GRANT SELECT, INSERT ON TABLE t, s.u TO alice, PUBLIC")
    assert isinstance(g, st.GrantPrivileges) and not g.revoke
    assert g.privileges == ["SELECT", "INSERT"] and g.names == [["t"], ["s", "u"]] and g.grantees == ["alice", "PUBLIC"]
    r = parse_statement("REVOKE ALL PRIVILEGES ON SCHEMA public FROM bob")
    assert isinstance(r, st.GrantPrivileges) and r.revoke and r.privileges == [] and r.object_type == "schema"
    assert parse_statement("GRANT USAGE ON CLUSTER quickstart TO r").object_type == "cluster"  # type: ignore[attr-defined]
    o = parse_statement("ALTER MATERIALIZED VIEW mv OWNER TO bob")
    assert isinstance(o, st.AlterOwner) and o.object_type == "materialized view" and o.new_owner == "bob"
    s = parse_statement("SHOW PRIVILEGES ON TABLES FOR alice")
    assert isinstance(s, st.ShowPrivileges) and s.on == "tables" and s.role == "alice"
    assert isinstance(parse_statement("GRANT r1 TO r2"), st.GrantRole)
    with pytest.raises(WeirError) as info:
        parse_statement("GRANT FLY ON t TO r")
    assert info.value.sqlstate == "42601"
