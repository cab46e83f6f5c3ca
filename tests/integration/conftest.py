from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Iterator

import pytest

from tests.integration.psql_client import psql_path
from tests.integration.server import WeirServer

# Every JVM the suite starts (replicas, spark-submit's launcher, pgjdbc clients) compiles
# with C1 only and collects with one thread: the suite's JVMs live seconds to minutes on
# two cores, where C2's compiler threads and G1's collector threads cost more CPU than their
# code saves. Measured side by side (test_hydration + test_indexes): 202 s with these
# flags, 279 s without. Behaviour is the same; only the JIT tier and the collector differ.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


@pytest.hookimpl(trylast=True)  # after -k / -m deselection: only what will run counts
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    selected = {item.name for item in items}
    for item in items:
        if "integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)
        covered = item.get_closest_marker("covered_by")
        if covered is not None and covered.args[0] in selected:
            # the slow test asserts the same, over more cycles: running both only costs time
            item.add_marker(pytest.mark.skip(reason=f"{covered.args[0]} runs too and covers it"))


@pytest.fixture(scope="session")
def psql_bin() -> str:
    """The psql binary (Debian's PostgreSQL 15 client); skips without it."""
    return psql_path()


@pytest.fixture(scope="session")
def java() -> None:
    if shutil.which("java") is None:
        pytest.skip("Java 17+ is required for Spark replicas")


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory, java: None):  # noqa: ANN201
    """One real weir server (with its quickstart replica) shared by the client tests.

    Its size '1' replicas stay `local[1]` with a 3 GB heap, not 1 GB: the views, indexes and
    cached results of every earlier test stay on this replica, and with 1 GB, then 2 GB,
    its JVM ran out of heap under the differential suite's concurrent 50-query batches,
    each a plan of hundreds of nodes (oom-killed; the test that was running failed)."""
    d = tmp_path_factory.mktemp("weir")
    sizes = d / "sizes.json"
    sizes.write_text(json.dumps({"sizes": {"1": {"workers": 1, "driver_memory": "3g"}}}))
    srv = WeirServer(d / "data", extra_args=["--replica-sizes", str(sizes)]).start()
    _SHARED.append(srv)
    yield srv
    _SHARED.clear()
    srv.stop()


_SHARED: list[WeirServer] = []


@pytest.fixture(autouse=True, scope="module")
def _dataflows_left_behind(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each file, the shared server's materialized views and indexes still there: each
    keeps its replica computing (an idle one commits its upper every second), and on two
    cores a few dozen left behind slow every later test."""
    yield
    if not _SHARED:
        return
    try:
        with _SHARED[0].connect() as c:
            left = [r[0] for r in c.execute(
                "SELECT name FROM mz_catalog.mz_materialized_views UNION ALL "
                "SELECT name FROM mz_catalog.mz_indexes WHERE id LIKE 'u%'").fetchall()]
    except Exception as e:  # noqa: BLE001 - a report, never a failure
        left = [f"(could not list: {e})"]
    if left:  # a warning: pytest's summary lists it, from xdist's workers too
        warnings.warn(f"left on the shared server after {request.node.name}: {', '.join(sorted(left))}",
                      stacklevel=1)
