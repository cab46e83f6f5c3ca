"""Runtime errors as data, without Spark: which errors are data, an index's error log,
and a view's errors shard written by two racing replicas (weir.compute.replica.dataflow_errors)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from weir.compute.replica.dataflow_errors import ErrorLog, ErrorStream, state_of
from weir.errors import SqlState, WeirError, is_data_error
from weir.storage import error_shards as es
from weir.storage.persist import ShardStore

DIV0 = WeirError(SqlState.DIVISION_BY_ZERO, "division by zero")
CAST = WeirError(SqlState.INVALID_TEXT_REPRESENTATION, 'invalid input syntax for type integer: "x"')


def test_data_errors_are_classes_22_and_p0() -> None:
    assert is_data_error("22012") and is_data_error("22P02") and is_data_error("22003")
    assert is_data_error("P0001")
    for machinery in ("58030", "XX000", "57014", "53200", "40001", None, ""):
        assert not is_data_error(machinery)


def test_error_log_answers_the_error_at_a_time() -> None:
    log = ErrorLog()
    log.set(10, None)  # clean from the start: nothing to remember
    assert log.at(10) is None and log.count() == 0
    log.set(20, DIV0)
    log.set(30, None)
    assert log.at(19) is None and log.at(20) is DIV0 and log.at(29) is DIV0 and log.at(30) is None
    assert log.count() == 0
    log.set(40, CAST)
    assert log.count() == 1 and log.at(10**9) is CAST
    log.set(40, None)  # recomputed after a retry: the time's answer is replaced
    assert log.at(40) is None
    log.clear()
    assert log.at(25) is None


@pytest.fixture
def store(tmp_path: Path) -> ShardStore:
    return ShardStore(f"sqlite:///{tmp_path}/catalog.db", str(tmp_path / "warehouse"))


def _contents(store: ShardStore, sid: str, ts: int) -> Counter[es.ErrorRow]:
    shard = store.open_shard(sid)
    return es.contents(es.updates_of(shard.read_updates(0, shard.frontiers().upper)), ts)


def test_error_stream_appends_changes_only(store: ShardStore) -> None:
    store.create_shard("u1_errors", list(es.ERROR_COLUMNS), initial_upper=100)
    a = ErrorStream(store.open_shard("u1_errors"))
    a.record([(100, state_of(None))], 100, 110, 1)  # clean: nothing appended, upper stays
    assert store.open_shard("u1_errors").frontiers().upper == 100
    a.record([(115, state_of(DIV0))], 110, 120, 1)
    a.record([(125, state_of(DIV0))], 120, 130, 1)  # unchanged: no append
    assert a.count() == 1 and store.open_shard("u1_errors").frontiers().upper == 120
    a.record([(135, state_of(None))], 130, 140, 1)
    assert a.count() == 0
    assert _contents(store, "u1_errors", 114) == Counter()
    assert es.first_error(_contents(store, "u1_errors", 120)) == DIV0
    assert _contents(store, "u1_errors", 135) == Counter()


def test_racing_writers_agree(store: ShardStore) -> None:
    """Two replicas compute the same errors over differently cut intervals."""
    store.create_shard("u2_errors", list(es.ERROR_COLUMNS), initial_upper=100)
    a = ErrorStream(store.open_shard("u2_errors"))
    b = ErrorStream(store.open_shard("u2_errors"))
    b.current()  # b read the shard before a's append
    a.record([(105, state_of(DIV0)), (115, state_of(None))], 100, 120, 1)
    # b computes [100, 130): its append is refused, it reloads and writes only [120, 130)
    b.record([(105, state_of(DIV0)), (115, state_of(None)), (125, state_of(CAST))], 100, 130, 1)
    assert es.first_error(_contents(store, "u2_errors", 110)) == DIV0
    assert _contents(store, "u2_errors", 118) == Counter()
    assert es.first_error(_contents(store, "u2_errors", 126)) == CAST
    shard = store.open_shard("u2_errors")
    ups = es.updates_of(shard.read_updates(0, shard.frontiers().upper))
    assert sorted((t, d) for _, t, d in ups) == [(105, 1), (115, -1), (125, 1)]
