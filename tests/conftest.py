"""What a CI log must say even when the run is cut off at its time limit: each test file's
start with the minutes elapsed, and each failure as it happens (pytest's own summary comes
only at the end, which a timed-out run never reaches)."""

from __future__ import annotations

import time

import pytest

_START = time.monotonic()
_FILES_SEEN: set[str] = set()
_CONFIG: dict[str, pytest.Config] = {}


def pytest_configure(config: pytest.Config) -> None:
    _CONFIG["config"] = config


def _write(config: pytest.Config, line: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write("\n" + line + "\n")  # its own line after -q's dots (an empty one at worst)


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    config = _CONFIG.get("config")
    if config is None:
        return
    path = report.nodeid.split("::", 1)[0]
    minutes = (time.monotonic() - _START) / 60
    if report.when == "setup" and path not in _FILES_SEEN:
        _FILES_SEEN.add(path)
        _write(config, f"[{minutes:5.1f} min] {path}")
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        why = crash.message.splitlines()[0] if crash is not None and crash.message else ""
        _write(config, f"[{minutes:5.1f} min] FAILED {report.nodeid} ({report.when}): {why[:300]}")

