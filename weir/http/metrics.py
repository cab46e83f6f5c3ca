"""Prometheus metrics for the server (served on /metrics)."""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter, Gauge

PGWIRE_EVENTS = Counter("weir_pgwire_events_total",
                        "Wire-protocol events: connections opened/closed, queries, errors, auth failures, "
                        "cancel requests, messages received, bytes sent", ["event"])
SESSIONS = Gauge("weir_sessions", "Open client sessions")
STORAGE_COMMITS = Gauge("weir_storage_group_commits", "Group commits since the server started")
READS = Counter("weir_reads_total", "SELECTs by how they ran: constant (coordinator), fast-path "
                "(an index's arrangement, no Spark job), in-process (system relations only, DuckDB "
                "in the coordinator) or standard (a Spark job)", ["strategy"])
PLANS = Counter("weir_plans_total", "Query plans looked up, by whether the plan cache had one (a miss "
                "parses nothing but resolves and plans the query once)", ["cache"])
READS_THROUGH_INDEXES = Counter("weir_reads_through_indexes_total",
                                "Spark peeks that read views from their indexes' arrangements")
STATEMENT_LOG_RECORDS = Counter(
    "weir_statement_logging_records", "Statement executions seen by the statement log, by whether "
    "the sampling draw selected them", ["sampled"])
STATEMENT_LOG_UNSAMPLED_BYTES = Counter(
    "weir_statement_logging_unsampled_bytes", "Bytes the statement log would write if it logged "
    "every execution (estimate)")
STATEMENT_LOG_ACTUAL_BYTES = Counter(
    "weir_statement_logging_actual_bytes", "Bytes of the executions sampled and not throttled "
    "(written, or in dry_run mode: that would have been written)")
STATEMENT_LOG_THROTTLED = Counter(
    "weir_statement_logging_throttled", "Sampled executions dropped by statement_logging_target_data_rate")
STATEMENT_LOG_DROPPED = Counter(
    "weir_statement_logging_dropped", "Statement log records dropped because the buffer was full")
HOLD_ADVANCES = Counter("weir_hold_advances_total", "Hold advances made durable (ALTER HOLD ... ADVANCE and MAX LAG)")
HOLD_ADVANCE_BATCHES = Counter("weir_hold_advance_batches_total",
                               "Catalog transactions that committed hold advances (advances / batches = batch size)")
INDEX_HISTORY_BYTES = Gauge(
    "weir_index_history_bytes", "Memory of the updates an index's arrangement keeps for reads before its upper "
    "(the most any replica reports): the last 10 s, or from the earliest hold on it", ["index_id"])
REPLICAS_ONLINE = Gauge("weir_replicas_online", "Replica processes connected and heartbeating")


_CHILDREN: dict[tuple[int, str], Any] = {}


def count(metric: Counter, label: str, amount: float = 1) -> None:
    """Add to a one-label counter. Hot paths call this per message, so each labelled child
    is looked up once (prometheus_client's `.labels()` takes a lock and builds a key)."""
    key = (id(metric), label)
    child = _CHILDREN.get(key)
    if child is None:
        child = _CHILDREN[key] = metric.labels(label)
    child.inc(amount)


def pgwire_metric(name: str, amount: float) -> None:
    count(PGWIRE_EVENTS, name, amount)


def bind(coord: Any) -> None:
    """Gauges read the coordinator's state when scraped."""
    SESSIONS.set_function(lambda: len(coord.sessions))
    STORAGE_COMMITS.set_function(lambda: coord.storage.commits)
    REPLICAS_ONLINE.set_function(lambda: len(coord.ready_replica_ids()))
