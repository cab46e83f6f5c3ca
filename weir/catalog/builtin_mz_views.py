"""The builtin views over weir's own relations: what each role may see of statement history
and hydration (views over superuser-only `_raw` tables), and the introspection views of
design 004 (`_persist` unions over the replicas of the moment, live logs, log views).
pg_catalog and information_schema have modules of their own."""

from __future__ import annotations

from weir.catalog.builtins import BUILTINS, BuiltinView
from weir.catalog.model import MZ_INTERNAL
from weir.compute import introspection as ci
from weir.types import BOOL, BYTEA, INT8, INTERVAL, NUMERIC, TEXT, TIMESTAMPTZ, UUID, PgType

# A hydration relation's rows are about an object (object_id): a role sees those of the
# objects it may SELECT from (an index: what it indexes), a superuser all of them.
_VISIBLE = "(mz_visible_objects() IS NULL OR object_id = ANY(mz_visible_objects()))"
_HYDRATION_COLUMNS = tuple((t.name[:-len("_raw")], t.columns) for t in BUILTINS if t.name in (
    "mz_compute_hydration_times_raw", "mz_compute_hydration_statuses_raw",
    "mz_compute_operator_hydration_statuses_per_worker_raw", "mz_hydration_statuses_raw",
    "mz_compute_hydration_progress_raw", "mz_compute_plan_nodes_raw"))
_SEES_ALL = "mz_statement_log_access() = 'all'"
_SEES_ROW = "(mz_statement_log_access() <> 'own' OR s.\"user\" = current_user)"
_SEES_TEXT = f"({_SEES_ALL} OR s.\"user\" = current_user)"
_RAW = "mz_internal.mz_{}_raw"
_EXEC_COLS = ("id", "prepared_statement_id", "sample_rate", "params", "began_at", "finished_at",
              "was_successful", "was_canceled", "was_aborted", "error_message", "rows_returned",
              "was_fast_path", "cluster_id", "cluster_name", "application_name", "database_name",
              "search_path", "transaction_isolation", "transaction_id", "execution_timestamp",
              "finished_status", "execution_strategy", "result_size")


def _raw_columns(name: str) -> tuple[tuple[str, PgType], ...]:
    return _BY_NAME_EARLY[(MZ_INTERNAL, name + "_raw")].columns


def _exec_select(prefix: str = "e") -> str:
    return ", ".join(f"CASE WHEN {_SEES_TEXT} THEN {prefix}.params END AS params" if c == "params"
                     else f"{prefix}.{c}" for c in _EXEC_COLS)


_BY_NAME_EARLY = {(b.schema, b.name): b for b in BUILTINS}

VIEWS: tuple[BuiltinView, ...] = (
    BuiltinView(MZ_INTERNAL, "mz_session_history", "s300", 16600, _raw_columns("mz_session_history"),
                f"SELECT s.id, s.application_name, s.\"user\", s.connected_at "
                f"FROM {_RAW.format('session_history')} s WHERE {_SEES_ROW}"),
    BuiltinView(MZ_INTERNAL, "mz_prepared_statement_history", "s301", 16601,
                _raw_columns("mz_prepared_statement_history"),
                f"SELECT p.id, p.session_id, p.name, CASE WHEN {_SEES_TEXT} THEN p.sql ELSE p.redacted_sql END "
                f"AS sql, p.redacted_sql, p.sql_hash, p.statement_type, p.prepared_at, p.throttled_count "
                f"FROM {_RAW.format('prepared_statement_history')} p "
                f"JOIN {_RAW.format('session_history')} s ON p.session_id = s.id WHERE {_SEES_ROW}"),
    BuiltinView(MZ_INTERNAL, "mz_statement_execution_history", "s302", 16602,
                _raw_columns("mz_statement_execution_history"),
                f"SELECT {_exec_select()} FROM {_RAW.format('statement_execution_history')} e "
                f"JOIN {_RAW.format('prepared_statement_history')} p ON e.prepared_statement_id = p.id "
                f"JOIN {_RAW.format('session_history')} s ON p.session_id = s.id WHERE {_SEES_ROW}"),
    BuiltinView(MZ_INTERNAL, "mz_statement_lifecycle_history", "s303", 16603,
                _raw_columns("mz_statement_lifecycle_history"),
                # execution-began / -finished are the execution's own began_at / finished_at
                # (not stored twice); the events in between are recorded as they happen
                f"SELECT l.statement_id, l.event_type, l.occurred_at FROM ("
                f"SELECT id AS statement_id, 'execution-began' AS event_type, began_at AS occurred_at "
                f"FROM {_RAW.format('statement_execution_history')} "
                f"UNION ALL SELECT id, 'execution-finished', finished_at "
                f"FROM {_RAW.format('statement_execution_history')} WHERE finished_at IS NOT NULL "
                f"UNION ALL SELECT statement_id, event_type, occurred_at "
                f"FROM {_RAW.format('statement_lifecycle_history')}) l "
                f"JOIN {_RAW.format('statement_execution_history')} e ON l.statement_id = e.id "
                f"JOIN {_RAW.format('prepared_statement_history')} p ON e.prepared_statement_id = p.id "
                f"JOIN {_RAW.format('session_history')} s ON p.session_id = s.id WHERE {_SEES_ROW}"),
    BuiltinView(MZ_INTERNAL, "mz_recent_activity_log", "s304", 16604, (
        ("execution_id", UUID), *[(c, t) for c, t in _raw_columns("mz_statement_execution_history")
                                  if c != "id"],
        ("duration", INTERVAL), ("session_id", UUID), ("prepared_statement_name", TEXT),
        ("sql", TEXT), ("redacted_sql", TEXT), ("sql_hash", BYTEA), ("statement_type", TEXT),
        ("prepared_at", TIMESTAMPTZ), ("throttled_count", INT8), ("session_connected_at", TIMESTAMPTZ),
        ("authenticated_user", TEXT)),
                f"SELECT e.id AS execution_id, {_exec_select().split(', ', 1)[1]}, "
                f"e.finished_at - e.began_at AS duration, p.session_id, p.name AS prepared_statement_name, "
                f"CASE WHEN {_SEES_TEXT} THEN p.sql ELSE p.redacted_sql END AS sql, p.redacted_sql, p.sql_hash, "
                f"p.statement_type, p.prepared_at, p.throttled_count, s.connected_at AS session_connected_at, "
                f"s.\"user\" AS authenticated_user "
                f"FROM {_RAW.format('statement_execution_history')} e "
                f"JOIN {_RAW.format('prepared_statement_history')} p ON e.prepared_statement_id = p.id "
                f"JOIN {_RAW.format('session_history')} s ON p.session_id = s.id "
                f"WHERE {_SEES_ROW} AND e.began_at > now() - INTERVAL '1 day'"),
    *(BuiltinView(MZ_INTERNAL, name, f"s{322 + i}", 16622 + i, cols,
                  f"SELECT * FROM mz_internal.{name}_raw WHERE {_VISIBLE}")
      for i, (name, cols) in enumerate(_HYDRATION_COLUMNS)),
    BuiltinView(MZ_INTERNAL, "mz_compute_operator_hydration_statuses", "s321", 16621, (
        ("object_id", TEXT), ("plan_node_id", INT8), ("replica_id", TEXT), ("hydrated", BOOL)),
                "SELECT object_id, plan_node_id, replica_id, bool_and(hydrated) AS hydrated "
                "FROM mz_internal.mz_compute_operator_hydration_statuses_per_worker "
                "GROUP BY object_id, plan_node_id, replica_id"),
    # A replica computes each dataflow on one thread: worker 0 (Materialize: uint8).
    BuiltinView(MZ_INTERNAL, "mz_compute_error_counts_per_worker", "s320", 16620, (
        ("export_id", TEXT), ("replica_id", TEXT), ("worker_id", INT8), ("count", NUMERIC)),
                "SELECT export_id, replica_id, CAST(0 AS bigint) AS worker_id, count "
                "FROM mz_internal.mz_compute_error_counts"),
)

# Design 004's union views: one per replica introspection relation, tagged with the replica.
VIEWS += tuple(
    BuiltinView(ci.SCHEMA, name + ci.PERSIST_SUFFIX, f"s{400 + n}", 16700 + n,
                ci.TAG_COLUMNS + ci.columns_of(name), "", introspection_union=name)
    for n, name in enumerate(ci.relation_names()))
# ... and the unsuffixed names: the live logs of the replica a read targets (SET cluster_replica).
VIEWS += tuple(
    BuiltinView(ci.SCHEMA, v.name, f"s{460 + n}", 16760 + n, v.columns, "", introspection_live=v.name)
    for n, v in enumerate(ci.LOG_VARIANTS))
VIEWS += tuple(
    BuiltinView(ci.SCHEMA, v.name, f"s{480 + n}", 16780 + n, v.columns, v.sql())
    for n, v in enumerate(ci.LOG_VIEWS))
