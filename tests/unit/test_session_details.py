"""Issue 14 part 5 without a server: the parsing of SHOW's phrases, DISCARD, transaction
modes, and the session functions current_setting / set_config / pg_catalog.version()
as the coordinator evaluates them (tests/integration/test_session_details.py compares
them with PostgreSQL)."""

from __future__ import annotations

import pytest
import sqlglot

from weir.catalog.vars import lookup_var
from weir.errors import WeirError
from weir.sql import constant
from weir.sql import statements as st
from weir.sql.parse import parse_statement
from weir.sql.parse_set import transaction_modes
from weir.sql.render import SessionContext, uses_session


@pytest.mark.parametrize(("sql", "name"), [
    ("SHOW TRANSACTION ISOLATION LEVEL", "transaction_isolation"), ("SHOW time zone", "timezone"),
    ("SHOW SESSION AUTHORIZATION", "session_authorization"), ("SHOW ALL", "all"),
    ("SHOW server_version_num", "server_version_num"),
])
def test_show_phrases(sql: str, name: str) -> None:
    s = parse_statement(sql)
    assert isinstance(s, st.ShowVariable) and s.name == name


@pytest.mark.parametrize(("sql", "what"), [
    ("DISCARD ALL", "ALL"), ("discard plans", "PLANS"), ("DISCARD SEQUENCES", "SEQUENCES"),
    ("DISCARD TEMP", "TEMP"), ("DISCARD TEMPORARY", "TEMP"),
])
def test_discard(sql: str, what: str) -> None:
    s = parse_statement(sql)
    assert isinstance(s, st.Discard) and s.what == what


@pytest.mark.parametrize(("raw", "modes"), [
    ("ISOLATION LEVEL SERIALIZABLE", ("serializable", None)),
    ("ISOLATION LEVEL READ COMMITTED, READ WRITE", ("read committed", "read write")),
    ("ISOLATION LEVEL STRICT SERIALIZABLE NOT DEFERRABLE", ("strict serializable", None)),
    ("READ ONLY, DEFERRABLE", (None, "read only")),
])
def test_transaction_modes(raw: str, modes: tuple[str | None, str | None]) -> None:
    assert transaction_modes(raw) == modes


@pytest.mark.parametrize("sql", [
    "DISCARD", "DISCARD nothing", "DISCARD ALL PLANS",
    "SET SESSION CHARACTERISTICS AS TRANSACTION", "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ",
    "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL nonsense",
    "SET SESSION CHARACTERISTICS TRANSACTION ISOLATION LEVEL SERIALIZABLE",
    "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE,", "BEGIN ISOLATION LEVEL bogus",
])
def test_bad_forms_are_syntax_errors(sql: str) -> None:
    with pytest.raises(WeirError) as e:
        parse_statement(sql)
    assert e.value.sqlstate == "42601"


def test_session_characteristics() -> None:
    s = parse_statement("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ WRITE")
    assert isinstance(s, st.SetVariable) and (s.name, s.value, s.local) == (
        "transaction_isolation", "repeatable read", False)
    s = parse_statement("SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE")  # changes nothing
    assert isinstance(s, st.SetVariable) and s.local
    with pytest.raises(WeirError) as e:
        parse_statement("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    assert e.value.sqlstate == "0A000"


def _ctx(values: dict[str, str], applied: list[tuple[str, str | None, bool]] | None) -> SessionContext:
    def setting(name: str) -> str:
        return values[lookup_var(name).name]

    def set_config(name: str, value: str | None, local: bool) -> str:
        assert applied is not None
        applied.append((name, value, local))
        return lookup_var(name).normalize(value) if value is not None else lookup_var(name).default

    return SessionContext(setting=setting, set_config=set_config if applied is not None else None)


def _eval(sql: str, ctx: SessionContext) -> tuple[list[str], list[tuple[object, ...]]]:
    names, _, rows = constant.evaluate(sqlglot.parse_one(sql, read="postgres"), ctx)
    return names, rows


def test_current_setting() -> None:
    ctx = _ctx({"TimeZone": "UTC", "server_version_num": "150004"}, None)
    assert _eval("SELECT current_setting('timezone'), pg_catalog.current_setting('server_version_num')", ctx) == (
        ["current_setting", "current_setting"], [("UTC", "150004")])
    assert _eval("SELECT current_setting('nope', true), current_setting(NULL), current_setting('TimeZone', NULL)",
                 ctx)[1] == [(None, None, None)]
    for sql in ("SELECT current_setting('nope')", "SELECT current_setting('nope', false)"):
        with pytest.raises(WeirError) as e:
            _eval(sql, ctx)
        assert e.value.sqlstate == "42704"


def test_set_config_applies_only_when_executed() -> None:
    applied: list[tuple[str, str | None, bool]] = []
    sql = "SELECT set_config('DateStyle', 'iso', false), set_config('application_name', NULL, 'true')"
    assert _eval(sql, _ctx({}, applied)) == (["set_config", "set_config"], [("ISO, MDY", "")])
    assert applied == [("DateStyle", "iso", False), ("application_name", None, True)]
    # described (no setter): the value given, nothing applied
    assert _eval("SELECT set_config('application_name', 'x', false)", _ctx({}, None))[1] == [("x",)]
    with pytest.raises(WeirError) as e:
        _eval("SELECT set_config(NULL, 'x', false)", _ctx({}, []))
    assert e.value.sqlstate == "22004"


def test_qualified_session_functions() -> None:
    ctx = SessionContext(database="db1", user="u1")
    names, rows = _eval("SELECT pg_catalog.version(), pg_catalog.current_database(), current_catalog", ctx)
    assert names == ["version", "current_database", "current_catalog"]
    assert rows[0][0].startswith("PostgreSQL 15.4 ") and rows[0][1:] == ("db1", "db1")
    assert uses_session(sqlglot.parse_one("SELECT pg_catalog.version()", read="postgres"))
