from __future__ import annotations

import shutil

import pytest

from tests.integration.server import WeirServer


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


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
