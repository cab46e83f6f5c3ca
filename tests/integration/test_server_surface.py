"""What the server shows besides SQL: /health, /metrics, password authentication."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import psycopg
import pytest

from tests.integration.server import WeirServer


def test_health_and_metrics(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("SELECT 1")
    with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/health", timeout=10) as r:
        assert json.loads(r.read())["status"] == "ok"
    with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    assert 'weir_pgwire_events_total{event="queries"}' in text
    assert "weir_sessions" in text


def test_scram_authentication_end_to_end(tmp_path: Path, java: None) -> None:
    data = tmp_path / "data"
    boot = WeirServer(data).start(wait_for_replica=False)
    with boot.connect() as c:  # trusted start: give the superuser a password, add a user
        c.execute("ALTER ROLE materialize PASSWORD 'root-pw'")
        c.execute("CREATE ROLE bob LOGIN PASSWORD 'b0b pass'")
        c.execute("ALTER SYSTEM SET statement_log_max_age = '7d'")  # survives the restart
    boot.stop()
    srv = WeirServer(data, extra_args=["--auth", "scram-sha-256", "--no-loopback-trust"])
    srv.password = "root-pw"
    srv.start(wait_for_replica=False)
    try:
        base = f"host=127.0.0.1 port={srv.sql_port} dbname=materialize"
        with psycopg.connect(f"{base} user=bob password='b0b pass'") as c:
            assert c.execute("SELECT current_user").fetchone() == ("bob",)
            assert c.execute("SHOW statement_log_max_age").fetchone() == ("7d",)
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(f"{base} user=bob password=wrong", connect_timeout=5)
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(f"{base} user=bob", connect_timeout=5)
    finally:
        srv.stop()
