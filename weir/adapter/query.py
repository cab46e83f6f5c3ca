"""Reads: timestamp selection, constant queries on the coordinator, peeks on a replica
(Spark job over the shards as of the chosen timestamp), streamed back as rows."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlglot import exp

from weir import types as T
from weir.adapter import api, dataflow_errors, indexes, planning, privileges, system_reads
from weir.codec.arrow_values import column_values
from weir.compute import introspection as ci
from weir.errors import SqlState, WeirError
from weir.http import metrics
from weir.http.metrics import READS_THROUGH_INDEXES
from weir.sql import constant, fast_path
from weir.sql.plan import NeedsReplan, QueryPlan, SparkPlan
from weir.sql.render import bind_params
from weir.sql.resolve import RelationDesc
from weir.types import PgType

if TYPE_CHECKING:
    from weir.adapter.session import Session

log = logging.getLogger(__name__)


def _hints(inputs: dict[str, RelationDesc]) -> dict[str, PgType]:
    """Column types Spark cannot express (uuid, jsonb, varchar, mz_timestamp) by column name."""
    out: dict[str, PgType] = {}
    for desc in inputs.values():
        for c in desc.columns:
            if T.from_arrow(c.type.arrow).oid != c.type.oid or c.type.precision is not None:
                out.setdefault(c.name, c.type)
    return out


def columns_from_schema(schema: pa.Schema, names: list[str | None],
                        inputs: dict[str, RelationDesc],
                        casts: list[PgType | None] | None = None) -> list[api.Column]:
    hints = _hints(inputs)
    cols = []
    named = iter(names) if names and None not in names and len(names) == len(schema) else None
    for f in schema:
        name = next(named) if named is not None else f.name
        if name is None or name.startswith("_weir_c"):
            name = f.name
        if name.startswith("_weir_c") and name[7:].isdigit() and int(name[7:]) < len(names):
            name = names[int(name[7:])] or name  # beside a star: the projection's own name
        t = T.from_arrow(f.type)
        if t.oid == T.NUMERIC.oid:
            # Spark's decimal(p,s) of a computed value is not a declared numeric(p,s):
            # unconstrained, printed without trailing zeros (as Materialize prints numeric);
            # a numeric(p,s) column or cast keeps its typmod through the hints below
            t = T.NUMERIC
        if name == "mz_now" and pa.types.is_integer(f.type):
            t = T.MZ_TIMESTAMP
        hint = hints.get(f.name) or hints.get(name)
        cast = casts[len(cols)] if casts and len(casts) == len(schema) else None
        if cast is not None:
            if cast.arrow.equals(f.type) or (cast.oid == T.MZ_TIMESTAMP.oid and pa.types.is_integer(f.type)):
                t = cast
        elif hint is not None and hint.arrow.equals(f.type):
            t = hint
        elif hint is not None and hint.oid == T.MZ_TIMESTAMP.oid and pa.types.is_integer(f.type):
            t = hint
        cols.append(api.Column(name, t))
    return cols


def _result_columns(spark: SparkPlan, schema: pa.Schema, casts: list[PgType | None]) -> list[api.Column]:
    """columns_from_schema, worked out once for a plan while its result's schema is the same."""
    kept = spark.__dict__.get("_result_columns")
    if kept is not None and kept[1] is casts and (kept[0] is schema or kept[0].equals(schema)):
        return list(kept[2])
    cols = columns_from_schema(schema, spark.names, spark.inputs, casts)
    spark.__dict__["_result_columns"] = (schema, casts, cols)
    return cols


def input_spec(desc: RelationDesc, files: list[str], as_of: int, consolidate: bool) -> dict[str, Any]:
    return {
        "name": desc.spark_name,
        "files": files,
        "columns": [{"name": c.name, "pg_type": c.type.exact_sql(), "nullable": c.nullable} for c in desc.columns],
        "as_of": as_of,
        "consolidate": consolidate,
    }


def stored_inputs(inputs: dict[str, RelationDesc]) -> list[str]:
    """The inputs read at the query's timestamp: all but replicas' introspection shards,
    which are read at their own latest complete times (`introspection_times`)."""
    return [sid for sid, d in inputs.items() if d is None or not d.volatile]


def storage_since(coord: Any, sid: str) -> int:
    return coord.storage.frontiers(sid)[0] if sid in coord.storage.collections else 0


def introspection_times(coord: Any, inputs: dict[str, RelationDesc]) -> dict[str, int]:
    """Each introspection shard's read time: the one its plan chose (its `read_at` column
    says so), kept readable; else the shard's latest complete time. Never waits."""
    out = {}
    for sid, d in inputs.items():
        if d is None or not d.volatile or sid not in coord.storage.collections:
            continue
        since, upper = coord.storage.frontiers(sid)
        t = d.read_at if d.read_at is not None and d.read_at >= since else upper - 1
        out[sid] = max(t, since)
    return out


def choose_timestamp(session: Session, inputs: dict[str, RelationDesc], *, for_write: bool = False) -> int:
    """Strict serializable: the oracle's read timestamp, which every completed write is
    at or below; inside a transaction, the transaction's first read timestamp."""
    txn = None if for_write else session.txn
    if txn is not None and txn.explicit and txn.writes:
        # as in Materialize: a transaction either reads at one timestamp or writes at one
        raise WeirError(SqlState.INVALID_TRANSACTION_STATE, "transaction in write-only mode",
                        hint="Reads are not allowed after writes in a transaction block.")
    if txn is not None and txn.explicit and txn.read_ts is not None:
        return txn.read_ts
    ts = session.coord.oracle.read_ts()
    storage = session.coord.storage
    for sid in stored_inputs(inputs):
        since, _ = storage.frontiers(sid)
        ts = max(ts, since)
    if txn is not None and txn.explicit:
        txn.read_ts = ts
        # every later read of the transaction is at ts: keep it readable until the end
        held = [sid for sid, c in storage.collections.items() if c.since <= ts]
        txn.hold = storage.acquire_read_hold(held, ts)
    return ts


_AS_OF_TYPE_ERROR = "AS OF or UP TO should be castable to a (non-null) mz_timestamp value"
_UNMATERIALIZABLE = (exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime, exp.CurrentUser)


def eval_as_of(session: Session, expr: exp.Expression) -> int:
    """The mz_timestamp an AS OF / UP TO expression names."""
    for node in expr.walk():
        if isinstance(node, _UNMATERIALIZABLE) or (
                isinstance(node, exp.Anonymous) and node.name.lower() in ("now", "mz_now")):
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                            "calling an unmaterializable function in AS OF or UP TO not yet supported")
    try:
        _, types, rows = constant.evaluate(exp.select(expr.copy()), session.context(None))
    except (constant.NotConstant, WeirError):
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, _AS_OF_TYPE_ERROR) from None
    value = rows[0][0]
    if isinstance(value, bool) or value is None:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, _AS_OF_TYPE_ERROR)
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE, _AS_OF_TYPE_ERROR) from None
    if not isinstance(value, int):
        if value != int(value):
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE, _AS_OF_TYPE_ERROR)
        value = int(value)
    if not 0 <= value < 2**63:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE, _AS_OF_TYPE_ERROR)
    return value


async def timestamp_as_of(session: Session, inputs: dict[str, RelationDesc], as_of: Any) -> int:
    """AS OF t reads exactly at t (since <= t, waiting for upper > t); AS OF AT LEAST t
    reads at the least valid time at or after t."""
    t = eval_as_of(session, as_of.expr)
    storage = session.coord.storage
    sinces = {sid: storage.frontiers(sid)[0] for sid in inputs}
    if as_of.at_least:
        t = max([t, *sinces.values()])
    else:
        bad = {sid: since for sid, since in sinces.items() if t < since}
        if bad:
            from weir.adapter.holds import too_old_detail

            detail = ", ".join(f"{inputs[sid].name}: since {since}" for sid, since in bad.items())
            held = [d for d in (too_old_detail(session.coord, sid, t) for sid in bad) if d]
            if held:
                detail += " (" + "; ".join(held) + ")"
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                            f"Timestamp ({t}) is not valid for all inputs: {detail}",
                            hint="could not find a valid timestamp: the inputs have been compacted "
                                 "past it; use AS OF AT LEAST or a later time")
    while any(storage.frontiers(sid)[1] <= t for sid in inputs):
        await asyncio.sleep(0.05)  # the inputs' uppers will pass t; cancellable
    return t


async def peek(session: Session, plan: QueryPlan, params: list[Any], *, tag_prefix: str = "SELECT",
               for_write: bool = False, as_of: Any = None, cluster_id: str | None = None) -> api.Rows:
    """Run a planned read with these parameter values. `for_write`: the read half of
    UPDATE/DELETE/INSERT ... SELECT, which reads the latest data whatever the session's
    transaction has read. `cluster_id`: where to run it instead of the session's cluster."""
    coord = session.coord
    privileges.require_read(session, plan.depends_on)
    await coord.flush_implicit_writes(session)
    if plan.constant:
        if as_of is not None:
            eval_as_of(session, as_of.expr)
        try:
            ts = coord.oracle.read_ts()
            result = plan.constant_result
            bound = plan.expr if result is not None else bind_params(plan.expr, params, plan.param_types)
            if result is None:
                result = constant.evaluate(bound, session.context(ts))
            names, types, rows = result
            delay = constant.sleep_seconds(bound)
            if delay > 0:  # pg_sleep: awaited, so a CancelRequest or statement_timeout ends it
                await asyncio.sleep(delay)
            session.execution_timestamp = ts
            cols = [api.Column(n, t) for n, t in zip(names, types, strict=True)]
            _ran(session, "constant")
            return api.Rows(cols, _once(rows), tag_prefix)
        except constant.NotConstant:
            pass
    assert plan.spark is not None  # planned for Spark unless the coordinator's answer is known
    inputs = plan.spark.inputs
    await coord.builtin_writes_settled(inputs)
    session.lifecycle("optimization-finished")
    at = await timestamp_as_of(session, inputs, as_of) if as_of is not None else None
    privileges.require(session, "cluster", cluster_id or coord.current_cluster(session).id, "U")
    if not for_write and plan.fast_path is not None:
        fast = await _fast_path(session, plan.fast_path, params, plan.param_types, inputs, tag_prefix, at)
        if fast is not None:
            return fast
    ts = at if at is not None else choose_timestamp(session, inputs, for_write=for_write)
    stored = stored_inputs(inputs)
    own_times = introspection_times(coord, inputs)
    hold = coord.storage.acquire_read_hold(stored, ts)
    for sid, t in own_times.items():
        hold.also(coord.storage.acquire_read_hold([sid], t))
    try:
        # strict serializable: a view maintained by a replica may trail the oracle; wait for it
        await coord.storage.wait_for_upper(stored, ts)
        await coord.dataflow_errors.check(inputs, ts)  # a view's runtime errors at ts
        session.execution_timestamp = ts
        session.lifecycle("storage-dependencies-finished")
        cluster_id = cluster_id or coord.current_cluster(session).id
        replica_id = target_replica(session, cluster_id, inputs)
        spark = plan.spark
        if system_reads.applies(session, spark):
            try:
                table = await system_reads.read(session, spark, params, ts, own_times)
            except WeirError:
                _ran(session, "in-process")  # the query's own error, raised here (a name naming nothing)
                raise
            if table is not None:
                session.lifecycle("compute-dependencies-finished")
                cols = _result_columns(spark, table.schema, plan.cast_hints)
                _ran(session, "in-process")
                return api.Rows(cols, _stream(session, _batches(table), hold), tag_prefix)
        result = None
        via = _hydrated_indexes(coord, plan, at)
        if via:  # read the views' arrangements instead of recomputing them
            try:
                through = plan.through_indexes(coord.resolver(session), via)
                result = await _spark_peek(session, through, params, ts, cluster_id, own_times, replica_id)
                spark = through
                READS_THROUGH_INDEXES.inc()
            except WeirError as e:
                if e.detail != "not-fast-path":
                    raise
                log.info("reading through indexes not possible: %s", e.message)
        if result is None:
            try:
                result = await _spark_peek(session, spark, params, ts, cluster_id, own_times, replica_id)
            except NeedsReplan:
                spark = planning.plan_bound(session, plan, params).spark
                assert spark is not None
                result = await _spark_peek(session, spark, [], ts, cluster_id, own_times, replica_id)
    except BaseException:
        hold.release()
        raise
    session.lifecycle("compute-dependencies-finished")
    cols = columns_from_schema(result.schema, spark.names, spark.inputs, plan.cast_hints)
    _ran(session, "standard")
    return api.Rows(cols, _stream(session, result.batches, hold), tag_prefix)


def _hydrated_indexes(coord: Any, plan: QueryPlan, at: int | None) -> dict[str, Any]:
    """The views the query reads that have a hydrated index on the cluster: view id -> index
    (for a read AS OF `at`, one that keeps its history from `at` or earlier)."""
    out: dict[str, Any] = {}
    for view_id, found in plan.view_indexes.items():
        for idx in found:
            if (indexes.write_frontier(coord, idx.id) or 0) > 0 and (
                    at is None or indexes.readable_at(coord, idx.id, at)):
                out[view_id] = idx
                break
    return out


async def _spark_peek(session: Session, spark: SparkPlan, params: list[Any], ts: int, cluster_id: str,
                      own_times: dict[str, int] | None = None, replica_id: str | None = None) -> Any:
    """Run a planned query as a Spark job on the cluster; inputs are shards as of `ts` (an
    introspection shard as of its own time), or index arrangements (inputs whose id is an
    index's)."""
    coord = session.coord
    sql = spark.template.render(params, session.context(ts))
    inputs = await peek_inputs(coord, spark.inputs, ts, own_times)
    result = await coord.compute.peek(cluster_id, sql, inputs, ts, replica_id=replica_id)
    session.dataflow_ran(result.replica_id, f"Dataflow: peek {result.peek_id}")
    return result


async def peek_inputs(coord: Any, inputs: dict[str, RelationDesc], ts: int,
                      own_times: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """A peek's inputs: shards' data files as of `ts` (an introspection shard's as of its
    own time), a replica's live logs, or index arrangements (inputs whose id is an index's)."""
    out = []
    for sid, desc in inputs.items():
        if sid == ci.LIVE_LOGS:  # the targeted replica's in-memory introspection logs
            out.append({**input_spec(desc, [], ts, False), "live_logs": True})
        elif sid in coord.storage.collections:
            at = (own_times or {}).get(sid, ts)
            scan = await coord.storage.scan_plan(sid, at)
            out.append(input_spec(desc, list(scan.files), at, bool(scan.may_have_retractions)))
        else:
            out.append({**input_spec(desc, [], ts, False), "index": sid})
    return out


def target_replica(session: Session, cluster_id: str, inputs: dict[str, RelationDesc]) -> str | None:
    """The replica a read must run on: the one `SET cluster_replica` names (every read,
    as in Materialize), else for a read of live introspection logs the cluster's only
    replica; a cluster with several needs the variable."""
    cat = session.coord.catalog
    name = session.get_var("cluster_replica")
    if name:
        replica = cat.find_replica(cluster_id, name)
        if replica is None:
            cluster = cat.get_cluster_by_id(cluster_id)
            raise WeirError(SqlState.UNDEFINED_OBJECT, f"cluster replica '{cluster.name}.{name}' does not exist")
        return str(replica.id)
    if ci.LIVE_LOGS not in inputs:
        return None
    replicas = cat.list_replicas(cluster_id)
    if len(replicas) == 1:
        return str(replicas[0].id)
    logs = sorted({d.part for d in inputs.values() if d.part} | {d.name for d in inputs.values()})
    raise WeirError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE, "log source reads must target a replica",
                    detail=f"The query reads live introspection logs ({', '.join(logs)}) of a cluster "
                           f"with {len(replicas)} replicas.",
                    hint="Use SET cluster_replica = <replica-name> to target a specific replica in the active "
                         "cluster, or read mz_introspection.<log>_persist (every replica, from any cluster).")


def _ran(session: Session, strategy: str) -> None:
    """How a read ran: constant (on the coordinator), fast-path (from an index) or
    standard (a Spark job); for statement history and /metrics."""
    session.execution_strategy = strategy
    metrics.count(metrics.READS, strategy)


async def _fast_path(session: Session, plan: fast_path.FastPathPlan, params: list[Any],
                     param_types: list[PgType], inputs: dict[str, RelationDesc],
                     tag_prefix: str, at: int | None) -> api.Rows | None:
    """Answer from an index's arrangement (no Spark job), or None to take the slow path.
    `at`: the time of a read AS OF, which only an index keeping history from then serves."""
    bound = fast_path.bind(plan, params, param_types)
    if bound is None:
        return None
    coord = session.coord
    if at is not None and not indexes.readable_at(coord, bound.index.id, at):
        return None
    ts = at if at is not None else choose_timestamp(session, inputs)
    session.execution_timestamp = ts
    hold = coord.storage.acquire_read_hold(list(inputs), ts)
    try:
        result = await coord.compute.peek_index(bound.index.cluster_id or "", bound.index.id, ts, bound.body)
        await coord.dataflow_errors.check(inputs, ts)  # an indexed view's runtime errors at ts
    except WeirError as e:
        hold.release()
        if e.sqlstate == SqlState.QUERY_CANCELED or dataflow_errors.final_for_reads(e):
            raise
        log.info("fast path on index %s not taken: %s", bound.index.name, e.message)
        return None
    except BaseException:
        hold.release()
        raise
    _ran(session, "fast-path")
    columns = [api.Column(n, t) for n, t in bound.columns]
    return api.Rows(columns, _stream(session, result.batches, hold), tag_prefix)


async def _batches(table: pa.Table) -> AsyncIterator[pa.RecordBatch]:
    for batch in table.to_batches(max_chunksize=4096):
        yield batch


async def _once(rows: list[tuple[Any, ...]]) -> AsyncIterator[list[tuple[Any, ...]]]:
    yield rows


async def _stream(session: Session, batches: AsyncIterator[pa.RecordBatch], hold: Any
                  ) -> AsyncIterator[list[tuple[Any, ...]]]:
    session.running = asyncio.current_task()
    try:
        async for batch in batches:
            if batch.num_rows == 0:
                continue
            cols = [column_values(c) for c in batch.columns]
            yield list(zip(*cols, strict=True))
    finally:
        hold.release()
        aclose = getattr(batches, "aclose", None)
        if aclose is not None:
            try:
                await aclose()
            except Exception:  # noqa: BLE001 - the stream is being abandoned
                pass


async def collect(rows: api.Rows) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    async for batch in rows.batches:
        out.extend(batch)
    return out
