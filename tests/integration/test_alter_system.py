"""ALTER SYSTEM SET/RESET end to end: superuser only, server-wide defaults that new
sessions (and sessions without their own SET) see, validation, Materialize's aliases."""

from __future__ import annotations

import psycopg
import pytest

from tests.integration.server import WeirServer

CHANGED = ("statement_history_sample_rate", "statement_history_max_sample_rate",
           "statement_log_max_age", "statement_logging_mode", "statement_log_random_seed",
           "statement_logging_target_data_rate", "statement_log_flush_interval")


def _error(fn) -> psycopg.Error:  # noqa: ANN001
    with pytest.raises(psycopg.Error) as e:
        fn()
    return e.value


def _show(c: psycopg.Connection, name: str) -> str:
    return c.execute(f"SHOW {name}").fetchone()[0]


def test_alter_system_set_reset_and_show(server: WeirServer) -> None:
    try:
        with server.connect() as admin, server.connect() as other:
            assert _show(other, "statement_history_sample_rate") == "0.01"
            cur = admin.execute("ALTER SYSTEM SET statement_history_sample_rate = 0.5")
            assert cur.statusmessage == "ALTER SYSTEM"
            # a session without its own value sees the new default at once, new ones too
            assert _show(other, "statement_history_sample_rate") == "0.5"
            with server.connect() as fresh:
                assert _show(fresh, "statement_history_sample_rate") == "0.5"
                assert _show(fresh, "statement_logging_sample_rate") == "0.5"  # alias
                # a session's SET overrides the system default, for that session only
                fresh.execute("SET statement_history_sample_rate = 0.25")
                assert _show(fresh, "statement_history_sample_rate") == "0.25"
                assert _show(fresh, "statement_logging_default_sample_rate") == "0.5"
                assert _show(other, "statement_history_sample_rate") == "0.5"
                fresh.execute("RESET statement_logging_sample_rate")
                assert _show(fresh, "statement_history_sample_rate") == "0.5"
                # the default-rate alias is system-only
                assert _error(lambda: fresh.execute(
                    "SET statement_logging_default_sample_rate = 0.3")).sqlstate == "55P02"

            admin.execute("ALTER SYSTEM SET statement_logging_default_sample_rate TO 0.75")
            assert _show(other, "statement_history_sample_rate") == "0.75"
            admin.execute("ALTER SYSTEM SET statement_logging_max_sample_rate = 0.5")
            assert _show(other, "statement_history_max_sample_rate") == "0.5"
            admin.execute("ALTER SYSTEM SET statement_log_max_age TO '7 days'")
            admin.execute("ALTER SYSTEM SET statement_log_flush_interval = '250ms'")
            admin.execute("ALTER SYSTEM SET statement_logging_mode = dry_run")
            admin.execute("ALTER SYSTEM SET statement_log_random_seed = 42")
            admin.execute("ALTER SYSTEM SET statement_logging_target_data_rate = 1048576")
            with server.connect() as fresh:
                assert [_show(fresh, n) for n in (
                    "statement_log_max_age", "statement_log_flush_interval",
                    "statement_logging_mode", "statement_log_random_seed",
                    "statement_logging_target_data_rate")] == [
                    "7d", "250ms", "dry_run", "42", "1048576"]
                settings = {r[0]: r[1] for r in fresh.execute("SHOW ALL").fetchall()}
                assert settings["statement_history_sample_rate"] == "0.75"
                assert settings["statement_logging_mode"] == "dry_run"
                assert settings["statement_log_max_age"] == "7d"

            # validation: 22023 with the valid range; unknown 42704; not system-settable 55P02
            e = _error(lambda: admin.execute(
                "ALTER SYSTEM SET statement_history_sample_rate = 1.5"))
            assert e.sqlstate == "22023" and "(0 .. 1)" in str(e)
            assert "statement_history_sample_rate" in str(e)
            e = _error(lambda: admin.execute(
                "ALTER SYSTEM SET statement_logging_max_sample_rate = 1"))
            assert e.sqlstate == "22023" and "(0 .. 0.99)" in str(e)
            e = _error(lambda: admin.execute("ALTER SYSTEM SET statement_log_max_age = '-1d'"))
            assert e.sqlstate == "22023" and "statement_log_max_age" in str(e)
            assert "(0 .. 3650d)" in str(e)
            e = _error(lambda: admin.execute("ALTER SYSTEM SET statement_logging_mode = loud"))
            assert e.sqlstate == "22023" and "on, dry_run, off" in str(e)
            e = _error(lambda: admin.execute("ALTER SYSTEM SET no_such_parameter = 1"))
            assert e.sqlstate == "42704"
            assert _error(lambda: admin.execute(
                "ALTER SYSTEM SET server_version = '16'")).sqlstate == "55P02"
            assert _error(lambda: admin.execute(
                "SET statement_log_max_age = '1d'")).sqlstate == "55P02"  # system only
            assert _show(other, "statement_history_sample_rate") == "0.75"  # unchanged

            # RESET, SET ... TO DEFAULT and RESET ALL go back to the defaults
            admin.execute("ALTER SYSTEM RESET statement_logging_mode")
            assert _show(other, "statement_logging_mode") == "on"
            admin.execute("ALTER SYSTEM SET statement_log_random_seed TO DEFAULT")
            assert _show(other, "statement_log_random_seed") == ""
            cur = admin.execute("ALTER SYSTEM RESET ALL")
            assert cur.statusmessage == "ALTER SYSTEM"
            with server.connect() as fresh:
                assert [_show(fresh, n) for n in CHANGED] == [
                    "0.01", "0.99", "30d", "on", "", "", "5s"]
    finally:
        with server.connect() as admin:
            for name in CHANGED:
                admin.execute(f"ALTER SYSTEM RESET {name}")


def test_alter_system_requires_superuser(server: WeirServer) -> None:
    with server.connect() as admin:
        admin.execute("CREATE ROLE alter_system_pleb LOGIN")
    try:
        with psycopg.connect(f"host=127.0.0.1 port={server.sql_port} user=alter_system_pleb "
                             "dbname=materialize", autocommit=True) as c:
            for sql in ("ALTER SYSTEM SET statement_history_sample_rate = 0.5",
                        "ALTER SYSTEM RESET statement_logging_mode", "ALTER SYSTEM RESET ALL"):
                e = _error(lambda sql=sql: c.execute(sql))
                assert e.sqlstate == "42501"
                assert "permission denied to alter system" in str(e)
            # an ordinary session may still SET its own rate and read the system ones
            c.execute("SET statement_logging_sample_rate = 0.2")
            assert _show(c, "statement_history_sample_rate") == "0.2"
            assert _show(c, "statement_logging_mode") == "on"
        with server.connect() as admin:
            assert _show(admin, "statement_history_sample_rate") == "0.01"
    finally:
        with server.connect() as admin:
            admin.execute("DROP ROLE alter_system_pleb")


def test_alter_system_not_in_transaction_block(server: WeirServer) -> None:
    with server.connect() as admin:
        admin.execute("BEGIN")
        e = _error(lambda: admin.execute("ALTER SYSTEM SET statement_logging_mode = off"))
        assert e.sqlstate == "25001"
        admin.execute("ROLLBACK")
        assert _show(admin, "statement_logging_mode") == "on"
