"""What a CreateDataflow command asks a replica to maintain (weir.compute.protocol): the
query, its inputs and output, the strategy, as one value a dataflow is built from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from weir.compute import protocol as P
from weir.compute.replica import plan_ids
from weir.compute.replica.plan_ids import PinnedNode
from weir.errors import SqlState, WeirError

RECOMPUTE, LINEAR, ARRANGE, REDUCE, JOIN = "recompute", "linear", "arrange", "reduce", "join"
STRATEGIES = (RECOMPUTE, LINEAR, ARRANGE, REDUCE, JOIN)
INCREMENTAL = (REDUCE, JOIN)  # kept from deltas with state on the executors (incremental/)
# what each strategy does per interval and the state it keeps (EXPLAIN shows it)
MAINTAINS = {
    RECOMPUTE: "the whole query per interval on Spark, diffed against its previous result "
               "(state: that result, cached on the executors)",
    LINEAR: "each interval's input updates through the query (filters, projections, UNION ALL); no state",
    REDUCE: "each interval's updates through the query's linear part, hash-partitioned by group key "
            "(a global aggregate is one group); "
            "state: per group count(*) and per argument its non-NULL count and sum, as sorted runs "
            "per key partition on Spark's executors",
    JOIN: "each interval's input updates through delta joins, stage by stage, then the rest of the "
          "query (filters, projections)",
    ARRANGE: "the query's updates into an arrangement in replica memory (state: the arrangement)",
}
# An index's export: {"keys": [column positions], "columns": [{"name", "pg_type"}],
# "direct": true when it arranges one stored collection as is (no Spark)}.
IndexExport = Mapping[str, Any]


@dataclass(frozen=True)
class InputSpec:
    name: str  # the temp view the SQL reads
    shard_id: str
    column_names: tuple[str, ...] | None  # as the SQL names them (default: the shard's)


@dataclass(frozen=True)
class DataflowSpec:
    dataflow_id: str
    sql: str
    inputs: tuple[InputSpec, ...]
    output_shard_id: str
    as_of: int
    strategy: str
    index: IndexExport | None = field(default=None, hash=False)
    errors_shard_id: str | None = None  # where runtime errors go (None: retried like any failure)
    thresholds_sql: str | None = None  # a temporal filter's flips (weir.compute.replica.temporal)
    # the plan's nodes, pinned when the dataflow was first created (weir.compute.replica.plan_ids)
    plan_nodes: tuple[PinnedNode, ...] | None = field(default=None, hash=False, compare=False)
    # plan node -> rows per worker of its last completed hydration (hydration expectations)
    row_counts: Mapping[int, list[int]] | None = field(default=None, hash=False, compare=False)
    # an incremental strategy recomputes instead while its inputs hold fewer updates than
    # this and its state is not built (0: always the strategy)
    min_updates: int = 0

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> DataflowSpec:
        try:
            inputs = []
            for i in body.get("inputs") or []:
                cols = i.get("columns")
                names = tuple(str(c["name"]) for c in cols) if cols else None
                inputs.append(InputSpec(str(i["name"]), str(i["shard_id"]), names))
            output = body["output"]
            index = output.get("index")
            spec = cls(str(body["dataflow_id"]), str(body["sql"]), tuple(inputs),
                       "" if index is not None else str(output["shard_id"]), int(body["as_of"]),
                       str(body.get("strategy") or RECOMPUTE), dict(index) if index is not None else None,
                       str(output["errors_shard_id"]) if output.get("errors_shard_id") else None,
                       str(body["thresholds_sql"]) if body.get("thresholds_sql") else None,
                       tuple(pinned) if (pinned := plan_ids.from_wire(body.get("plan_nodes"))) else None,
                       P.row_counts_from_wire(body.get("row_counts")) or None,
                       int(body.get("min_updates") or 0))
        except (KeyError, TypeError, ValueError) as e:
            raise WeirError(SqlState.PROTOCOL_VIOLATION, f"malformed CreateDataflow: {e!r}") from None
        if spec.strategy not in STRATEGIES:
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                            f"unknown dataflow strategy {spec.strategy!r}")
        return spec

    def same_definition(self, other: DataflowSpec) -> bool:
        return (self.sql, self.inputs, self.output_shard_id, self.strategy, self.index,
                self.errors_shard_id, self.thresholds_sql, self.min_updates) == (
            other.sql, other.inputs, other.output_shard_id, other.strategy, other.index,
            other.errors_shard_id, other.thresholds_sql, other.min_updates)
