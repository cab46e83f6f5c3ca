from __future__ import annotations

import shutil

import pytest

from tests.integration.psql_client import psql_path
from tests.integration.server import WeirServer


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
    """One real weir server (with its quickstart replica) shared by the client tests."""
    srv = WeirServer(tmp_path_factory.mktemp("weir") / "data").start()
    yield srv
    srv.stop()
