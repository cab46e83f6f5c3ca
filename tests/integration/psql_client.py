"""The real psql, scripted: how the tests run it (no psqlrc, no pager, UTC, stop on error)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest


def psql_path() -> str:
    path = shutil.which("psql")
    if path is None:
        pytest.skip("psql is not installed (Debian: postgresql-client)")
    return path


def run_psql(psql_bin: str, dsn: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10", "PAGER": "", "PSQL_PAGER": "", "PGTZ": "UTC"}
    env.pop("PGPASSWORD", None)
    return subprocess.run([psql_bin, "-X", "-v", "ON_ERROR_STOP=1", dsn, *args], capture_output=True, text=True,
                          timeout=timeout, env=env, stdin=subprocess.DEVNULL)
