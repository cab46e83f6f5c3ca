"""The configuration-parameter registry: lookup, validation, canonical text."""

from __future__ import annotations

import pytest

from weir.catalog.builtins import VARS, lookup_var, normalize_var
from weir.catalog.vars import (
    byte_size,
    duration_ms,
    format_duration,
    is_system_alias,
    parse_var,
    settable_var,
)
from weir.errors import WeirError

REQUIRED = {
    "application_name": "", "client_encoding": "UTF8", "DateStyle": "ISO, MDY",
    "TimeZone": "UTC", "integer_datetimes": "on", "standard_conforming_strings": "on",
    "extra_float_digits": "1", "search_path": "public", "cluster": "quickstart",
    "cluster_replica": "", "database": "materialize",
    "transaction_isolation": "strict serializable", "statement_timeout": "0",
    "server_version": "15.4", "server_version_num": "150004", "is_superuser": "off",
    "session_authorization": "", "max_query_result_size": "1GB",
    "idle_in_transaction_session_timeout": "2min", "real_time_recency": "off",
}


def norm(name: str, value: str) -> str:
    return normalize_var(name, value)[1]


def code(name: str, value: str, scope: str = "session") -> tuple[str, str]:
    with pytest.raises(WeirError) as e:
        normalize_var(name, value, scope)
    return e.value.sqlstate, e.value.message


def test_registry_has_the_required_defaults() -> None:
    by_name = {v.name: v for v in VARS}
    for name, default in REQUIRED.items():
        assert by_name[name].default == default, name
    for v in VARS:  # every default is itself valid and canonical
        assert v.normalize(v.default) == v.default, v.name
        assert v.description


def test_lookup_is_case_insensitive_and_unknown_is_42704() -> None:
    assert lookup_var("datestyle").name == "DateStyle"
    assert lookup_var("TIMEZONE").name == "TimeZone"
    assert lookup_var("time zone").name == "TimeZone"
    with pytest.raises(WeirError) as e:
        lookup_var("bogus")
    assert (e.value.sqlstate, e.value.message) == (
        "42704", 'unrecognized configuration parameter "bogus"')


def test_read_only_parameters() -> None:
    for name in ("integer_datetimes", "server_version", "server_version_num", "is_superuser",
                 "session_authorization", "server_encoding"):
        assert lookup_var(name).read_only
        assert code(name, "x") == ("55P02", f'parameter "{name}" cannot be changed')
    assert code("max_connections", "10")[0] == "55P02"  # system-only
    assert normalize_var("max_connections", "10", "system")[1] == "10"


def test_ints_and_ranges() -> None:
    assert norm("extra_float_digits", " 3 ") == "3"
    assert code("extra_float_digits", "-15")[0] == "22023"  # fewer digits: refused, not ignored
    assert code("extra_float_digits", "4") == (
        "22023", '4 is outside the valid range for parameter "extra_float_digits" (1 .. 3)')
    assert code("extra_float_digits", "abc")[0] == "22023"


def test_enums_and_encodings() -> None:
    assert norm("transaction_isolation", "SERIALIZABLE") == "serializable"
    assert norm("transaction_isolation", "Strict   Serializable") == "strict serializable"
    assert norm("transaction_isolation", "read committed") == "serializable"
    state, msg = code("transaction_isolation", "snapshot")
    assert state == "22023" and "serializable, strict serializable" in msg
    for ok in ("utf8", "UTF-8", "unicode"):
        assert norm("client_encoding", ok) == "UTF8"
    state, msg = code("client_encoding", "LATIN1")
    assert state == "22023" and "UTF8" in msg
    assert norm("DateStyle", "iso,mdy") == "ISO, MDY"
    assert norm("DateStyle", "ISO") == "ISO, MDY"
    assert code("DateStyle", "German")[0] == "22023"
    assert norm("client_min_messages", "WARNING") == "warning"


def test_bools() -> None:
    for text, want in (("on", "on"), ("TRUE", "on"), ("1", "on"), ("off", "off"), ("no", "off")):
        assert norm("real_time_recency", text) == want
    assert code("real_time_recency", "maybe") == (
        "22023", 'parameter "real_time_recency" requires a Boolean value')
    assert norm("standard_conforming_strings", "on") == "on"
    assert code("standard_conforming_strings", "off")[0] == "22023"
    assert lookup_var("real_time_recency").parse("on") is True


def test_durations_and_sizes() -> None:
    assert norm("statement_timeout", "10s") == "10s"
    assert norm("statement_timeout", "10000") == "10s"  # bare number: milliseconds
    assert norm("statement_timeout", "1500 ms") == "1500ms"
    assert norm("statement_timeout", "2 min") == "2min"
    assert norm("statement_timeout", "0") == "0"
    assert norm("idle_in_transaction_session_timeout", "1h") == "1h"
    assert code("statement_timeout", "-1")[0] == "22023"
    assert code("statement_timeout", "10 parsecs")[0] == "22023"
    assert lookup_var("statement_timeout").parse("10s") == 10_000
    assert duration_ms("1.5s") == 1500 and format_duration(90_000) == "90s"
    assert norm("max_query_result_size", "1024 MB") == "1GB"
    assert norm("max_query_result_size", "1000") == "1000B"
    assert byte_size("2kB") == 2048
    assert code("max_query_result_size", "0")[0] == "22023"
    assert code("max_query_result_size", "lots")[0] == "22023"


def test_text_lists_and_timezones() -> None:
    assert norm("application_name", "psql") == "psql"
    assert norm("search_path", 'public, "My Schema",mz_catalog') == "public, My Schema, mz_catalog"
    assert lookup_var("search_path").parse("a, b") == ["a", "b"]
    assert norm("TimeZone", "utc") == "UTC"
    assert norm("TimeZone", "Etc/UTC") == norm("TimeZone", "+00:00") == "UTC"
    # only UTC (as in Materialize): another zone would be accepted and silently ignored
    for zone in ("America/New_York", "+05:30", "Mars/Olympus"):
        assert code("TimeZone", zone)[0] == "22023"


def test_reported_parameters() -> None:
    reported = {v.name for v in VARS if v.report}
    assert {"application_name", "client_encoding", "DateStyle", "integer_datetimes",
            "server_version", "standard_conforming_strings", "TimeZone", "is_superuser",
            "session_authorization", "IntervalStyle", "server_encoding"} <= reported


# -- statement history parameters ---------------------------------------------------------

STATEMENT_HISTORY = {  # name: (default, session-settable)
    "statement_history_sample_rate": ("0.01", True),
    "statement_history_max_sample_rate": ("0.99", False),
    "statement_log_random_seed": ("", False),
    "statement_log_flush_interval": ("5s", False),
    "statement_log_max_age": ("30d", False),
    "statement_logging_target_data_rate": ("", False),
    "statement_logging_mode": ("on", False),
}


def test_statement_history_defaults_and_typed_values() -> None:
    for name, (default, session) in STATEMENT_HISTORY.items():
        v = lookup_var(name)
        assert (v.default, v.session, v.system) == (default, session, True), name
    assert parse_var("statement_history_sample_rate") == 0.01
    assert parse_var("statement_history_max_sample_rate") == 0.99
    assert parse_var("statement_log_random_seed") is None  # unset: a random seed
    assert parse_var("statement_log_random_seed", "42") == 42
    assert parse_var("statement_log_flush_interval") == 5000
    assert parse_var("statement_log_max_age") == 30 * 86_400_000
    assert parse_var("statement_logging_target_data_rate") is None  # no limit
    assert parse_var("statement_logging_target_data_rate", "1024") == 1024
    assert parse_var("statement_logging_mode") == "on"


def test_statement_history_validation() -> None:
    assert norm("statement_history_sample_rate", "0.5") == "0.5"
    assert norm("statement_history_sample_rate", "1") == "1"  # PostgreSQL shows reals with %g
    assert norm("statement_history_sample_rate", "0") == "0"
    assert code("statement_history_sample_rate", "1.5") == (
        "22023", '1.5 is outside the valid range for parameter '
        '"statement_history_sample_rate" (0 .. 1)')
    assert code("statement_history_sample_rate", "-0.1")[0] == "22023"
    assert code("statement_history_sample_rate", "nan")[0] == "22023"
    assert code("statement_history_sample_rate", "lots")[0] == "22023"
    assert normalize_var("statement_history_max_sample_rate", "0.5", "system")[1] == "0.5"
    state, msg = code("statement_history_max_sample_rate", "1", "system")
    assert state == "22023" and "(0 .. 0.99)" in msg
    assert code("statement_history_max_sample_rate", "0.5") == (  # system only
        "55P02", 'parameter "statement_history_max_sample_rate" cannot be changed')
    assert normalize_var("statement_log_random_seed", "7", "system")[1] == "7"
    assert normalize_var("statement_log_random_seed", " ", "system")[1] == ""
    assert code("statement_log_random_seed", "-1", "system")[0] == "22023"
    assert code("statement_log_random_seed", "x", "system")[0] == "22023"
    assert normalize_var("statement_log_flush_interval", "1500", "system")[1] == "1500ms"
    assert normalize_var("statement_log_flush_interval", "100ms", "system")[1] == "100ms"
    assert code("statement_log_flush_interval", "0", "system")[0] == "22023"
    assert code("statement_log_flush_interval", "50ms", "system")[0] == "22023"
    assert normalize_var("statement_log_max_age", "7 days", "system")[1] == "7d"
    assert normalize_var("statement_log_max_age", "0", "system")[1] == "0"
    state, msg = code("statement_log_max_age", "-1d", "system")
    assert state == "22023" and "statement_log_max_age" in msg and "(0 .. 3650d)" in msg
    assert normalize_var("statement_logging_target_data_rate", "0", "system")[1] == "0"
    assert normalize_var("statement_logging_target_data_rate", "", "system")[1] == ""
    state, msg = code("statement_logging_target_data_rate", "-5", "system")
    assert state == "22023" and "(at least 0)" in msg
    assert normalize_var("statement_logging_mode", "DRY_RUN", "system")[1] == "dry_run"
    assert normalize_var("statement_logging_mode", "false", "system")[1] == "off"
    state, msg = code("statement_logging_mode", "sometimes", "system")
    assert state == "22023" and "on, dry_run, off" in msg


def test_statement_history_aliases() -> None:
    assert lookup_var("statement_logging_sample_rate").name == "statement_history_sample_rate"
    assert lookup_var("STATEMENT_LOGGING_MAX_SAMPLE_RATE").name == (
        "statement_history_max_sample_rate")
    assert norm("statement_logging_sample_rate", "0.2") == "0.2"
    # the default-rate alias names the server-wide value only
    v, text = normalize_var("statement_logging_default_sample_rate", "0.5", "system")
    assert (v.name, text) == ("statement_history_sample_rate", "0.5")
    assert is_system_alias("statement_logging_default_sample_rate")
    assert not is_system_alias("statement_logging_sample_rate")
    assert code("statement_logging_default_sample_rate", "0.5")[0] == "55P02"
    with pytest.raises(WeirError) as e:
        settable_var("statement_logging_default_sample_rate", "session")
    assert e.value.sqlstate == "55P02"
    assert settable_var("statement_logging_default_sample_rate", "system").name == (
        "statement_history_sample_rate")
    state, msg = code("statement_logging_default_sample_rate", "2", "system")
    assert state == "22023" and "(0 .. 1)" in msg


def test_alter_system_parses() -> None:
    from weir.sql import statements as st
    from weir.sql.parse import parse_one

    def p(sql: str) -> tuple[str, str | None]:
        stmt = parse_one(sql)
        assert isinstance(stmt, st.AlterSystem) and stmt.kind == "alter_system"
        return stmt.name, stmt.value

    assert p("ALTER SYSTEM SET statement_log_max_age = '7 days'") == (
        "statement_log_max_age", "7 days")
    assert p("alter system set statement_history_sample_rate to 0.5;") == (
        "statement_history_sample_rate", "0.5")
    assert p("ALTER SYSTEM SET statement_log_max_age = -1") == ("statement_log_max_age", "-1")
    assert p("ALTER SYSTEM SET statement_logging_mode TO DEFAULT") == (
        "statement_logging_mode", None)
    assert p("ALTER SYSTEM SET statement_log_random_seed = ''") == (
        "statement_log_random_seed", "")
    assert p("ALTER SYSTEM RESET statement_logging_mode") == ("statement_logging_mode", None)
    assert p("ALTER SYSTEM RESET ALL") == ("all", None)
    for bad in ("ALTER SYSTEM", "ALTER SYSTEM RESET", "ALTER SYSTEM SET x",
                "ALTER SYSTEM FROB x"):
        with pytest.raises(WeirError) as e:
            parse_one(bad)
        assert e.value.sqlstate == "42601", bad
