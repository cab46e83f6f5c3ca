"""The statements weir reads word by word (SET forms, transactions, roles, GRANT, DROP,
PREPARE/EXECUTE): each form parses into the statement it names, bad forms are 42601."""

from __future__ import annotations

import pytest

from weir.errors import WeirError
from weir.sql import statements as st
from weir.sql.parse import parse_statement


@pytest.mark.parametrize(("sql", "name", "value", "local"), [
    ("SET application_name = 'weir-test'", "application_name", "weir-test", False),
    ("SET extra_float_digits = 3", "extra_float_digits", "3", False),
    ("SET LOCAL search_path TO a, \"B\"", "search_path", 'a, "B"', True),
    ("SET search_path = DEFAULT", "search_path", None, False),
    ("SET TIME ZONE 'UTC'", "timezone", "UTC", False),
    ("SET NAMES 'UTF8'", "client_encoding", "UTF8", False),
    ("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "transaction_isolation", "serializable", True),
    ("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL  STRICT SERIALIZABLE",
     "transaction_isolation", "strict serializable", False),
])
def test_set_forms(sql: str, name: str, value: str | None, local: bool) -> None:
    s = parse_statement(sql)
    assert isinstance(s, st.SetVariable)
    assert (s.name, s.value, s.local) == (name, value, local)


def test_alter_system_reset_begin() -> None:
    s = parse_statement("ALTER SYSTEM SET max_tables = 10")
    assert isinstance(s, st.AlterSystem) and (s.name, s.value) == ("max_tables", "10")
    s = parse_statement("ALTER SYSTEM RESET max_tables")
    assert isinstance(s, st.AlterSystem) and s.name == "max_tables" and s.value is None
    s = parse_statement("RESET application_name")
    assert isinstance(s, st.ResetVariable) and s.name == "application_name"
    s = parse_statement("BEGIN ISOLATION LEVEL SERIALIZABLE")
    assert isinstance(s, st.Transaction) and s.kind == "begin"


def test_roles_grant_and_drop() -> None:
    s = parse_statement("CREATE ROLE alice WITH LOGIN PASSWORD 'it''s a secret' NOSUPERUSER")
    assert isinstance(s, st.CreateRole) and s.name == "alice"
    assert s.options.login is True and s.options.superuser is False
    assert s.options.password == "it's a secret"
    s = parse_statement("GRANT analysts TO alice, bob")
    assert isinstance(s, st.GrantRole) and s.roles == ["analysts"] and s.members == ["alice", "bob"]
    s = parse_statement("DROP INDEX IF EXISTS s.\"I\", j CASCADE")
    assert isinstance(s, st.Drop) and s.object_kind == "index" and s.if_exists and s.cascade
    assert s.names == [["s", "I"], ["j"]]


def test_prepare_execute() -> None:
    s = parse_statement("PREPARE q (int, text) AS SELECT $1, $2")
    assert isinstance(s, st.Prepare) and s.name == "q" and s.param_types == ["int", "text"]
    s = parse_statement("EXECUTE q (1, 'a')")
    assert isinstance(s, st.ExecutePrepared) and s.name == "q" and len(s.args) == 2


@pytest.mark.parametrize("sql", ["ALTER SYSTEM SET LOCAL x = 1", "SET TRANSACTION READ", "RESET a b"])
def test_bad_forms_are_syntax_errors(sql: str) -> None:
    with pytest.raises(WeirError) as e:
        parse_statement(sql)
    assert e.value.sqlstate == "42601"


def test_explain_refuses_unknown_options_naming_the_valid_ones() -> None:
    from weir.errors import SqlState

    stmt = parse_statement("EXPLAIN PHYSICAL PLAN WITH (NODE  IDENTIFIERS) FOR SELECT 1")
    assert stmt.options == ["node identifiers"]  # type: ignore[attr-defined]
    with pytest.raises(WeirError) as e:
        parse_statement("EXPLAIN PHYSICAL PLAN WITH (node_ids, arity) FOR SELECT 1")
    assert e.value.sqlstate == SqlState.INVALID_PARAMETER_VALUE and "arity" in e.value.message
    assert e.value.hint is not None and "node_ids" in e.value.hint


def test_drop_and_create_schema_fold_unquoted_names() -> None:
    """DROP TABLE BOOLTBL1 drops booltbl1, as PostgreSQL folds unquoted names (it said
    unknown catalog item 'BOOLTBL1'); quoted names keep their case."""
    from weir.sql.parse import parse_one

    drop = parse_one('DROP TABLE BOOLTBL1, "Ab".X')
    assert drop.names == [["booltbl1"], ["Ab", "x"]]  # type: ignore[attr-defined]
    assert parse_one("CREATE SCHEMA Foo").name == ["foo"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("sql", "sqlstate", "names"), [
    ("CREATE MATERIALIZED VIEW v WITH (REFRESH EVERY '1 day') AS SELECT 1", "0A000", "REFRESH"),
    ("CREATE MATERIALIZED VIEW v (x) WITH (REFRESH AT CREATION) AS SELECT 1", "0A000", "REFRESH"),
    ("CREATE MATERIALIZED VIEW v WITH (ASSERT NOT NULL a, RETAIN HISTORY FOR '1h') AS SELECT 1 AS a",
     "0A000", "RETAIN HISTORY"),
    ("CREATE MATERIALIZED VIEW v WITH (NO SUCH OPTION) AS SELECT 1", "42601", "NO SUCH OPTION"),
])
def test_materialized_view_options(sql: str, sqlstate: str, names: str) -> None:
    """Materialize's materialized-view options weir does not have (REFRESH, PARTITION BY,
    RETAIN HISTORY beside another) are refused naming the option (0A000), not as a syntax
    error; an option Materialize does not have is 42601."""
    with pytest.raises(WeirError) as e:
        parse_statement(sql)
    assert e.value.sqlstate == sqlstate and names in e.value.message, e.value


def test_materialized_view_assert_not_null() -> None:
    s = parse_statement('CREATE MATERIALIZED VIEW v IN CLUSTER c WITH (ASSERT NOT NULL a, ASSERT NOT NULL "B c") '
                        "AS SELECT 1 AS a, 2 AS \"B c\"")
    assert isinstance(s, st.CreateMaterializedView) and s.not_null == ["a", "B c"] and s.cluster == "c"


def test_materialized_view_retain_history_option_still_parses() -> None:
    s = parse_statement("CREATE MATERIALIZED VIEW v IN CLUSTER c WITH (RETAIN HISTORY FOR '1h') AS SELECT 1")
    assert isinstance(s, st.CreateMaterializedView) and s.cluster == "c"
