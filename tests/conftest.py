"""What a CI log must say even when the run is cut off at its time limit: each test file's
start with the minutes elapsed, and each failure as it happens (pytest's own summary comes
only at the end, which a timed-out run never reaches)."""

from __future__ import annotations

import time

import pytest

_START = time.monotonic()
_FILES_SEEN: set[str] = set()
_CONFIG: dict[str, pytest.Config] = {}
_DIFFERENTIAL: list[str] = []  # test_differential's summaries (pytest_terminal_summary)


def pytest_configure(config: pytest.Config) -> None:
    _CONFIG["config"] = config


def _write(config: pytest.Config, line: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write("\n" + line + "\n")  # its own line after -q's dots (an empty one at worst)


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "teardown":  # a property is on every later phase's report: count it once
        _DIFFERENTIAL.extend(str(v) for k, v in report.user_properties if k == "differential")
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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """How many generated queries the differential runs checked (every CI log shows it;
    the tests record it as a property, which reaches this process from xdist's workers:
    this conftest, not the integration one, is loaded where xdist reports)."""
    for line in _DIFFERENTIAL:
        terminalreporter.write_line(f"differential: {line}")


# Files whose tests take minutes, with seconds measured in serial runs (2026-11-29): xdist
# gives the next file to a free worker; taking these first keeps the run from ending with
# one worker on a long file while the other idles (xdist's own order is by test count).
# Any other file counts a second per integration test and a tenth of one per unit test.
HEAVY_FILES = {
    "test_differential.py": 528, "test_introspection.py": 425, "test_interval_storage.py": 393,
    "test_holds.py": 332, "test_compute_dataflow.py": 260, "test_multidim_arrays.py": 197,
    "test_materialized_views.py": 184, "test_statement_history.py": 172, "test_pg_catalog.py": 166,
    "test_system_reads.py": 150, "test_hydration_expectations.py": 137, "test_mv_correctness.py": 120,
    "test_hydration.py": 107, "test_correctness_examples.py": 106, "test_durability.py": 106,
    "test_sources.py": 104, "test_replica_oom.py": 100, "test_temporary_objects.py": 99,
    "test_sql_gaps.py": 96, "test_jsonb.py": 91, "test_dataflow_errors.py": 90,
    "test_postgres_catalog.py": 76,
}


def _cost(scope: str, tests: int) -> float:
    name = scope.rsplit("/", 1)[-1]
    return HEAVY_FILES.get(name, tests * (1.0 if "integration" in scope else 0.1))


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    from xdist.scheduler import LoadFileScheduling

    class HeaviestFirst(LoadFileScheduling):
        def _assign_work_unit(self, node: object) -> None:
            if self.workqueue:
                heaviest = max(self.workqueue, key=lambda s: _cost(s, len(self.workqueue[s])))
                self.workqueue.move_to_end(heaviest, last=False)
            super()._assign_work_unit(node)  # type: ignore[arg-type]

    return HeaviestFirst(config, log)  # type: ignore[arg-type]
