"""Prometheus metrics for the server (served on /metrics)."""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter, Gauge

PGWIRE_EVENTS = Counter("weir_pgwire_events_total",
                        "Wire-protocol events: connections opened/closed, queries, errors, auth failures, "
                        "cancel requests, messages received, bytes sent", ["event"])
SESSIONS = Gauge("weir_sessions", "Open client sessions")
STORAGE_COMMITS = Gauge("weir_storage_group_commits", "Group commits since the server started")
REPLICAS_ONLINE = Gauge("weir_replicas_online", "Replica processes connected and heartbeating")


def pgwire_metric(name: str, amount: float) -> None:
    PGWIRE_EVENTS.labels(event=name).inc(amount)


def bind(coord: Any) -> None:
    """Gauges read the coordinator's state when scraped."""
    SESSIONS.set_function(lambda: len(coord.sessions))
    STORAGE_COMMITS.set_function(lambda: coord.storage.commits)
    REPLICAS_ONLINE.set_function(lambda: len(coord.ready_replica_ids()))
