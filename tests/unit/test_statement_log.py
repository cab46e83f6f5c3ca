"""The statement log's buffer, sampling, flush and failure handling (no server, no Spark):
a stand-in coordinator records what would be appended to storage."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest

from weir.adapter import statement_log as sl
from weir.catalog.vars import lookup_var
from weir.http import metrics


class FakeStorage:
    def __init__(self) -> None:
        self.appends: list[dict[str, pa.Table]] = []
        self.fail = False

    async def append(self, updates: dict[str, pa.Table]) -> int:
        if self.fail:
            raise OSError("storage unavailable")
        self.appends.append(updates)
        return 1


class FakeCoord:
    def __init__(self, **system: str) -> None:
        self.system = {"statement_log_random_seed": "1", **system}  # a rate of 0.99 misses 1 in 100
        self.storage = FakeStorage()
        self.sessions: dict[int, Any] = {}
        self.system_var_version = 0
        self.catalog = type("Catalog", (), {"generation": 0})()

    def set_system(self, name: str, value: str) -> None:
        self.system[name] = value
        self.system_var_version += 1

    def system_var(self, name: str) -> str:
        v = lookup_var(name)
        return self.system.get(v.name, v.default)

    def cluster_id_by_name(self, name: str) -> str:
        return "u1"


class FakeRole:
    id = "u1"
    name = "materialize"
    superuser = True


class FakeSession:
    def __init__(self, log: sl.StatementLog, rate: str = "1") -> None:
        self.vars = {"statement_history_sample_rate": rate, "cluster": "quickstart", "application_name": "t",
                     "transaction_isolation": "strict serializable"}
        self.log_rng = log.rng_for_session()
        self.log_id = str(uuid.uuid4())
        self.connected_at = datetime.now(UTC)
        self.log_throttled = 0
        self.transaction_id = 1
        self.role = FakeRole()
        self.user = "materialize"
        self.database = "materialize"
        self.search_path = ["public"]
        self.var_version = 0
        self.log_context = None

    def get_var(self, name: str) -> str:
        return self.vars[name]


def _rows(append: dict[str, pa.Table], builtin: Any) -> list[dict[str, Any]]:
    t = append.get(builtin.id)
    return [] if t is None else t.to_pylist()


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_statement_that_ends_before_the_flush_is_written_once() -> None:
    coord = FakeCoord()
    log = sl.StatementLog(coord)  # type: ignore[arg-type]
    s = FakeSession(log)
    info = sl.PreparedInfo("SELECT 'x', 1", "", "select")
    ex = log.begin(s, info, ["a"])  # type: ignore[arg-type]
    assert ex is not None
    log.end(ex, "success", rows=1, result_size=10, strategy="constant", timestamp=5)
    assert _run(log.flush()) > 0
    [append] = coord.storage.appends
    [execution] = _rows(append, sl.EXECUTIONS)
    assert execution["finished_status"] == "success" and execution["mz_diff"] == 1
    assert execution["rows_returned"] == 1 and execution["params"] == ["a"] and execution["sample_rate"] == 0.99
    [prepared] = _rows(append, sl.PREPARED)
    assert prepared["redacted_sql"] == "SELECT '<REDACTED>', '<REDACTED>'" and len(prepared["sql_hash"]) == 32
    assert len(_rows(append, sl.SESSIONS)) == 1
    assert not _rows(append, sl.LIFECYCLE)  # began/finished are the execution row's own times
    # a second execution of the same prepared statement does not log it again
    log.end(log.begin(s, info, None), "error", error="boom")  # type: ignore[arg-type]
    _run(log.flush())
    assert not _rows(coord.storage.appends[-1], sl.PREPARED)
    [err] = _rows(coord.storage.appends[-1], sl.EXECUTIONS)
    assert err["error_message"] == "boom" and err["rows_returned"] is None and err["was_successful"] is False


def test_a_running_statement_is_written_then_retracted_and_replaced() -> None:
    coord = FakeCoord()
    log = sl.StatementLog(coord)  # type: ignore[arg-type]
    s = FakeSession(log)
    ex = log.begin(s, sl.PreparedInfo("SUBSCRIBE t", "", "subscribe"), None)  # type: ignore[arg-type]
    _run(log.flush())
    [running] = _rows(coord.storage.appends[-1], sl.EXECUTIONS)
    assert running["finished_status"] == "running" and running["finished_at"] is None
    assert running["was_successful"] is None and running["rows_returned"] is None
    log.end(ex, "canceled")
    _run(log.flush())
    rows = _rows(coord.storage.appends[-1], sl.EXECUTIONS)
    assert sorted((r["finished_status"], r["mz_diff"]) for r in rows) == [("canceled", 1), ("running", -1)]


def test_sampling_follows_the_rate_and_the_seed() -> None:
    coord = FakeCoord(statement_log_random_seed="7")
    log = sl.StatementLog(coord)  # type: ignore[arg-type]

    def sampled(rate: str) -> list[bool]:
        s = FakeSession(log, rate)
        return [log.begin(s, sl.PreparedInfo(f"SELECT {i}", "", "select"), None) is not None  # type: ignore[arg-type]
                for i in range(2000)]

    first, second = sampled("0.5"), sampled("0.5")
    assert first == second and 900 <= sum(first) <= 1100
    assert not any(sampled("0"))
    coord.set_system("statement_history_max_sample_rate", "0.1")  # the system maximum caps the session's
    assert 120 <= sum(sampled("1")) <= 280


def test_failed_flushes_keep_the_buffer_bounded_and_count_drops(monkeypatch: pytest.MonkeyPatch) -> None:
    coord = FakeCoord()
    log = sl.StatementLog(coord)  # type: ignore[arg-type]
    s = FakeSession(log)
    coord.storage.fail = True
    for i in range(5):
        log.end(log.begin(s, sl.PreparedInfo(f"SELECT {i}", "", "select"), None), "success")  # type: ignore[arg-type]
    with pytest.raises(OSError):
        _run(log.flush())
    assert log.updates  # kept for the next attempt
    monkeypatch.setattr(sl, "MAX_BUFFER_BYTES", log.buffered_bytes + 200)
    dropped = log.dropped
    for i in range(50):  # statements carry on; what does not fit is dropped and counted
        log.end(log.begin(s, sl.PreparedInfo(f"SELECT {i} AS more", "", "select"), None), "success")  # type: ignore[arg-type]
    assert log.dropped > dropped and log.buffered_bytes <= sl.MAX_BUFFER_BYTES + 2000
    coord.storage.fail = False
    assert _run(log.flush()) > 0
    executions = _rows(coord.storage.appends[-1], sl.EXECUTIONS)
    assert {r["finished_status"] for r in executions} == {"success"} and len(executions) >= 5


def test_dry_run_counts_but_writes_nothing() -> None:
    coord = FakeCoord(statement_logging_mode="dry_run")
    log = sl.StatementLog(coord)  # type: ignore[arg-type]
    s = FakeSession(log)
    before = metrics.STATEMENT_LOG_ACTUAL_BYTES._value.get()
    assert log.begin(s, sl.PreparedInfo("SELECT 1", "", "select"), None) is None  # type: ignore[arg-type]
    assert metrics.STATEMENT_LOG_ACTUAL_BYTES._value.get() > before
    assert _run(log.flush()) == 0 and not coord.storage.appends


def test_throttling_counts_on_the_next_logged_statement() -> None:
    coord = FakeCoord(statement_logging_target_data_rate="1")
    log = sl.StatementLog(coord)  # type: ignore[arg-type]
    s = FakeSession(log)
    for i in range(3):
        assert log.begin(s, sl.PreparedInfo(f"SELECT {i}", "", "select"), None) is None  # type: ignore[arg-type]
    assert s.log_throttled == 3
    coord.set_system("statement_logging_target_data_rate", "")
    log.end(log.begin(s, sl.PreparedInfo("SELECT 9", "", "select"), None), "success")  # type: ignore[arg-type]
    _run(log.flush())
    [prepared] = _rows(coord.storage.appends[-1], sl.PREPARED)
    assert prepared["throttled_count"] == 3 and s.log_throttled == 0
