"""The one enumeration of compute introspection: log variants (what a replica records,
per worker) and log views (their human-readable forms), as Materialize's `LogVariant` and
`LogView`. Shared by the coordinator (which creates each replica's sources and views and
expands the `_persist` unions) and the replica (which produces the rows).

Storage: a replica's logs live in ONE shard (`shard_id(replica_id)`), so a replica commits
all its introspection in one append per interval. Its columns are `log` (the variant's
name), `worker_id`, and typed slots (`i1`..`i9` bigint, `t1`..`t4` text); each variant's
columns are mapped onto the slots in order (`LogVariant.slots`), and its source reads its
part of the shard (`WHERE log = ...`).

What a *worker* is: the partition index of the Spark task that ran the work (a task is one
partition of one stage). Logs about operators carry the partition of the operator's stage;
logs of things a replica does once (dataflow and operator structure, frontiers, exports,
peeks, arrangements, errors) are reported by worker 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from weir.types import INT8, MZ_TIMESTAMP, NUMERIC, TEXT, PgType

SCHEMA = "mz_introspection"
PERSIST_SUFFIX = "_persist"
INT_SLOTS = tuple(f"i{n}" for n in range(1, 10))
TEXT_SLOTS = tuple(f"t{n}" for n in range(1, 5))
# The shard's columns (besides mz_timestamp / mz_diff): the log's name, the worker, slots.
SHARD_COLUMNS: tuple[tuple[str, PgType], ...] = (
    ("log", TEXT), ("worker_id", INT8), *((s, INT8) for s in INT_SLOTS), *((s, TEXT) for s in TEXT_SLOTS))
# Columns `_persist` unions put before each relation's own.
TAG_COLUMNS: tuple[tuple[str, PgType], ...] = (
    ("cluster", TEXT), ("replica", TEXT), ("replica_id", TEXT), ("read_at", MZ_TIMESTAMP))

# Bucket upper bounds of the duration histograms (ns): powers of two from 2^10 (~1 µs).
HISTOGRAM_BUCKETS_NS = tuple(1 << k for k in range(10, 41))


# The input name of a replica's in-memory logs (a targeted read's input; not a shard).
LIVE_LOGS = "introspection_live"


def shard_id(replica_id: str) -> str:
    """The shard a replica's introspection lives in."""
    return f"introspection_{replica_id}"


def bucket_ns(duration_ns: int) -> int:
    """The histogram bucket (its upper bound) a duration falls in."""
    for b in HISTOGRAM_BUCKETS_NS:
        if duration_ns <= b:
            return b
    return HISTOGRAM_BUCKETS_NS[-1]


@dataclass(frozen=True)
class LogVariant:
    """One log a replica records: a per-replica source `<name>_<replica_id>`."""

    name: str
    columns: tuple[tuple[str, PgType], ...]  # worker_id included where it sits
    doc: str

    @property
    def slots(self) -> tuple[tuple[str, str], ...]:
        """(column, shard column) for each column."""
        ints, texts, out = iter(INT_SLOTS), iter(TEXT_SLOTS), []
        for col, ty in self.columns:
            if col == "worker_id":
                out.append((col, "worker_id"))
            else:
                out.append((col, next(texts) if ty.oid == TEXT.oid else next(ints)))
        return tuple(out)

    def source_name(self, replica_id: str) -> str:
        return f"{self.name}_{replica_id}"

    def encode(self, row: Sequence[Any]) -> dict[str, Any]:
        """One row of this log as a shard row."""
        out: dict[str, Any] = {"log": self.name}
        for (_, slot), value in zip(self.slots, row, strict=True):
            out[slot] = value
        return out

    def select_sql(self, relation: str) -> str:
        """Spark SQL reading this log's part of the shard (as `relation`) in its own columns."""
        cols = ", ".join(f"CAST({slot} AS {ty.spark_ddl}) AS `{col}`" for (col, slot), (_, ty)
                         in zip(self.slots, self.columns, strict=True))
        return f"SELECT {cols} FROM {relation} WHERE log = '{self.name}'"


@dataclass(frozen=True)
class LogView:
    """A human-readable view over log variants: `<name>_<replica_id>` per replica.
    `query` is PostgreSQL SQL naming its logs as `{log_name}` placeholders."""

    name: str
    columns: tuple[tuple[str, PgType], ...]
    query: str

    def view_name(self, replica_id: str) -> str:
        return f"{self.name}_{replica_id}"

    def sql(self, replica_id: str | None = None) -> str:
        """Over one replica's sources, or (None) over the live logs of the replica a read
        targets (the unsuffixed names)."""
        return self.query.format(**{v.name: f"{SCHEMA}.{v.source_name(replica_id) if replica_id else v.name}"
                                    for v in LOG_VARIANTS})


def _c(*cols: tuple[str, PgType]) -> tuple[tuple[str, PgType], ...]:
    return cols


_W = ("worker_id", INT8)
LOG_VARIANTS: tuple[LogVariant, ...] = (
    LogVariant("mz_dataflows_per_worker", _c(("id", INT8), _W, ("name", TEXT)),
               "Dataflows: one per maintained object (materialized view, index) and per peek's Spark job."),
    LogVariant("mz_dataflow_operators_per_worker", _c(
        ("id", INT8), _W, ("name", TEXT), ("dataflow_id", INT8), ("plan_node_id", INT8), ("description", TEXT)),
               "Operators: the nodes of the Spark physical plan a dataflow runs, with the plan node id "
               "EXPLAIN PHYSICAL PLAN WITH (node_ids) prints."),
    LogVariant("mz_dataflow_operator_parents_per_worker", _c(("id", INT8), ("parent_id", INT8), _W),
               "Each operator's parent operator in the plan (its consumer)."),
    LogVariant("mz_dataflow_channels_per_worker", _c(
        ("id", INT8), _W, ("from_index", INT8), ("to_index", INT8), ("type", TEXT)),
               "Channels: the plan's edges, from a child operator to its parent; type is the exchange "
               "kind (hashpartitioning, SinglePartition, broadcast ...) or 'pipeline'."),
    LogVariant("mz_scheduling_elapsed_per_worker", _c(("id", INT8), _W, ("elapsed_ns", INT8)),
               "Time each operator spent on each worker."),
    LogVariant("mz_compute_operator_durations_histogram_per_worker", _c(
        ("id", INT8), _W, ("duration_ns", INT8), ("count", INT8)),
               "Per-invocation (per task) durations of each operator, as a histogram."),
    LogVariant("mz_message_counts_per_worker", _c(
        ("channel_id", INT8), ("from_worker_id", INT8), ("to_worker_id", INT8), ("sent", INT8),
        ("received", INT8), ("batch_sent", INT8), ("batch_received", INT8), ("bytes", INT8)),
               "Rows (and bytes where Spark reports them) that moved along each channel, per worker."),
    LogVariant("mz_arrangement_sizes_per_worker", _c(
        ("operator_id", INT8), _W, ("records", INT8), ("batches", INT8), ("size", INT8),
        ("capacity", INT8), ("allocations", INT8)),
               "Arrangements: an index's state in replica memory, and the state an incremental "
               "dataflow keeps on Spark's executors per stateful operator and key partition "
               "(records, runs, bytes of its run files)."),
    LogVariant("mz_compute_exports_per_worker", _c(("export_id", TEXT), _W, ("dataflow_id", INT8)),
               "The objects each dataflow maintains."),
    LogVariant("mz_compute_frontiers_per_worker", _c(("export_id", TEXT), _W, ("time", MZ_TIMESTAMP)),
               "Each export's write frontier."),
    LogVariant("mz_compute_import_frontiers_per_worker", _c(
        ("export_id", TEXT), ("import_id", TEXT), _W, ("time", MZ_TIMESTAMP)),
               "The frontier of each input of each export."),
    LogVariant("mz_peek_durations_histogram_per_worker", _c(
        _W, ("type", TEXT), ("duration_ns", INT8), ("count", INT8)),
               "Durations of finished peeks (type 'index' for fast-path peeks, 'persist' otherwise)."),
    LogVariant("mz_active_peeks_per_worker", _c(
        ("id", TEXT), _W, ("object_id", TEXT), ("type", TEXT), ("time", MZ_TIMESTAMP)),
               "Peeks running now."),
    LogVariant("mz_compute_error_counts_per_worker", _c(("export_id", TEXT), _W, ("count", INT8)),
               "Errors each export holds (exports without errors are omitted)."),
    LogVariant("mz_spark_operator_metrics_per_worker", _c(
        ("id", INT8), _W, ("rows", INT8), ("spill_bytes", INT8), ("shuffle_read_bytes", INT8),
        ("shuffle_write_bytes", INT8), ("gc_ns", INT8), ("cpu_ns", INT8)),
               "Spark's extras per operator and worker: rows out, and the spill, shuffle, GC and CPU of "
               "the tasks that ran it (task metrics divided among the stage's operators)."),
)
BY_NAME = {v.name: v for v in LOG_VARIANTS}

_N = NUMERIC
LOG_VIEWS: tuple[LogView, ...] = (
    LogView("mz_dataflows", _c(("id", INT8), ("name", TEXT)),
            "SELECT id, name FROM {mz_dataflows_per_worker} WHERE worker_id = 0"),
    LogView("mz_dataflow_operators", _c(("id", INT8), ("name", TEXT)),
            "SELECT id, name FROM {mz_dataflow_operators_per_worker} WHERE worker_id = 0"),
    LogView("mz_dataflow_operator_dataflows", _c(
        ("id", INT8), ("name", TEXT), ("dataflow_id", INT8), ("dataflow_name", TEXT), ("plan_node_id", INT8)),
            "SELECT o.id, o.name, o.dataflow_id, d.name AS dataflow_name, o.plan_node_id "
            "FROM {mz_dataflow_operators_per_worker} o JOIN {mz_dataflows_per_worker} d "
            "ON o.dataflow_id = d.id AND d.worker_id = o.worker_id WHERE o.worker_id = 0"),
    LogView("mz_dataflow_operator_parents", _c(("id", INT8), ("parent_id", INT8)),
            "SELECT id, parent_id FROM {mz_dataflow_operator_parents_per_worker} WHERE worker_id = 0"),
    LogView("mz_dataflow_channels", _c(
        ("id", INT8), ("from_index", INT8), ("from_port", INT8), ("to_index", INT8), ("to_port", INT8),
        ("type", TEXT)),
            "SELECT id, from_index, CAST(0 AS bigint) AS from_port, to_index, CAST(0 AS bigint) AS to_port, type "
            "FROM {mz_dataflow_channels_per_worker} WHERE worker_id = 0"),
    LogView("mz_scheduling_elapsed", _c(("id", INT8), ("elapsed_ns", _N)),
            "SELECT id, CAST(sum(elapsed_ns) AS numeric) AS elapsed_ns FROM {mz_scheduling_elapsed_per_worker} "
            "GROUP BY id"),
    LogView("mz_compute_operator_durations_histogram", _c(("id", INT8), ("duration_ns", INT8), ("count", _N)),
            "SELECT id, duration_ns, CAST(sum(count) AS numeric) AS count "
            "FROM {mz_compute_operator_durations_histogram_per_worker} GROUP BY id, duration_ns"),
    LogView("mz_message_counts", _c(
        ("channel_id", INT8), ("sent", _N), ("received", _N), ("batch_sent", _N), ("batch_received", _N),
        ("bytes", _N)),
            "SELECT channel_id, CAST(sum(sent) AS numeric) AS sent, CAST(sum(received) AS numeric) AS received, "
            "CAST(sum(batch_sent) AS numeric) AS batch_sent, CAST(sum(batch_received) AS numeric) AS batch_received, "
            "CAST(sum(bytes) AS numeric) AS bytes FROM {mz_message_counts_per_worker} GROUP BY channel_id"),
    LogView("mz_arrangement_sizes", _c(
        ("operator_id", INT8), ("records", INT8), ("batches", INT8), ("size", INT8), ("capacity", INT8),
        ("allocations", INT8)),
            "SELECT operator_id, CAST(sum(records) AS bigint) AS records, CAST(sum(batches) AS bigint) AS batches, "
            "CAST(sum(size) AS bigint) AS size, CAST(sum(capacity) AS bigint) AS capacity, "
            "CAST(sum(allocations) AS bigint) AS allocations FROM {mz_arrangement_sizes_per_worker} "
            "GROUP BY operator_id"),
    LogView("mz_records_per_dataflow", _c(
        ("id", INT8), ("name", TEXT), ("records", INT8), ("batches", INT8), ("size", INT8), ("capacity", INT8),
        ("allocations", INT8)),
            "SELECT d.id, d.name, CAST(sum(a.records) AS bigint) AS records, CAST(sum(a.batches) AS bigint) AS batches, "
            "CAST(sum(a.size) AS bigint) AS size, CAST(sum(a.capacity) AS bigint) AS capacity, "
            "CAST(sum(a.allocations) AS bigint) AS allocations "
            "FROM {mz_arrangement_sizes_per_worker} a JOIN {mz_dataflow_operators_per_worker} o "
            "ON a.operator_id = o.id AND o.worker_id = 0 JOIN {mz_dataflows_per_worker} d "
            "ON o.dataflow_id = d.id AND d.worker_id = 0 GROUP BY d.id, d.name"),
    LogView("mz_compute_exports", _c(("export_id", TEXT), ("dataflow_id", INT8)),
            "SELECT export_id, dataflow_id FROM {mz_compute_exports_per_worker} WHERE worker_id = 0"),
    LogView("mz_compute_frontiers", _c(("export_id", TEXT), ("time", MZ_TIMESTAMP)),
            "SELECT export_id, min(time) AS time FROM {mz_compute_frontiers_per_worker} GROUP BY export_id"),
    LogView("mz_compute_import_frontiers", _c(("export_id", TEXT), ("import_id", TEXT), ("time", MZ_TIMESTAMP)),
            "SELECT export_id, import_id, min(time) AS time FROM {mz_compute_import_frontiers_per_worker} "
            "GROUP BY export_id, import_id"),
    LogView("mz_peek_durations_histogram", _c(("type", TEXT), ("duration_ns", INT8), ("count", _N)),
            "SELECT type, duration_ns, CAST(sum(count) AS numeric) AS count "
            "FROM {mz_peek_durations_histogram_per_worker} GROUP BY type, duration_ns"),
    LogView("mz_active_peeks", _c(("id", TEXT), ("object_id", TEXT), ("type", TEXT), ("time", MZ_TIMESTAMP)),
            "SELECT id, object_id, type, time FROM {mz_active_peeks_per_worker} WHERE worker_id = 0"),
    LogView("mz_compute_error_counts", _c(("export_id", TEXT), ("count", _N)),
            "SELECT export_id, CAST(sum(count) AS numeric) AS count FROM {mz_compute_error_counts_per_worker} "
            "GROUP BY export_id"),
)
VIEWS_BY_NAME = {v.name: v for v in LOG_VIEWS}


def relation_names() -> Iterable[str]:
    """Every per-replica relation's base name (sources, then views)."""
    yield from (v.name for v in LOG_VARIANTS)
    yield from (v.name for v in LOG_VIEWS)


def columns_of(name: str) -> tuple[tuple[str, PgType], ...]:
    rel = BY_NAME.get(name) or VIEWS_BY_NAME[name]
    return rel.columns
