"""Reads: timestamp selection, constant queries on the coordinator, peeks on a replica
(Spark job over the shards as of the chosen timestamp), streamed back as rows."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlglot import exp

from weir import types as T
from weir.adapter import api, dataflow_errors, fast_path, indexes
from weir.errors import SqlState, WeirError
from weir.http.metrics import READS, READS_THROUGH_INDEXES
from weir.sql import constant
from weir.sql.render import (
    bind_params,
    fold_typed_literals,
    name_outputs,
    pg_type_of_datatype,
    substitute_session_functions,
    to_spark,
    typed_division,
)
from weir.sql.resolve import RelationDesc, resolve
from weir.types import PgType

if TYPE_CHECKING:
    from weir.adapter.session import Session

log = logging.getLogger(__name__)


@dataclass
class PeekPlan:
    spark_sql: str
    inputs: dict[str, RelationDesc]
    names: list[str | None]
    cluster_id: str


def _hints(inputs: dict[str, RelationDesc]) -> dict[str, PgType]:
    """Column types Spark cannot express (uuid, jsonb, varchar, mz_timestamp) by column name."""
    out: dict[str, PgType] = {}
    for desc in inputs.values():
        for c in desc.columns:
            if T.from_arrow(c.type.arrow).oid != c.type.oid:
                out.setdefault(c.name, c.type)
    return out


def cast_hints(expr: exp.Expression) -> list[PgType | None]:
    """Per top-level projection, the type it is cast to, for types Spark cannot express
    (`x::uuid`, `'{}'::jsonb`, `n::mz_timestamp` come back from Spark as text or bigint)."""
    select = expr
    while isinstance(select, exp.SetOperation):
        select = select.this
    if not isinstance(select, exp.Select):
        return []
    out: list[PgType | None] = []
    for p in select.expressions:
        inner = p.this if isinstance(p, exp.Alias) else p
        t = pg_type_of_datatype(inner.to) if isinstance(inner, exp.Cast) else None
        out.append(t if t is not None and T.from_arrow(t.arrow).oid != t.oid else None)
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
        t = T.from_arrow(f.type)
        if name == "mz_now" and pa.types.is_integer(f.type):
            t = T.MZ_TIMESTAMP
        hint = hints.get(f.name) or hints.get(name)
        cast = casts[len(cols)] if casts and len(casts) == len(schema) else None
        if cast is not None and (cast.arrow.equals(f.type) or (
                cast.oid == T.MZ_TIMESTAMP.oid and pa.types.is_integer(f.type))):
            t = cast
        elif hint is not None and hint.arrow.equals(f.type):
            t = hint
        elif hint is not None and hint.oid == T.MZ_TIMESTAMP.oid and pa.types.is_integer(f.type):
            t = hint
        cols.append(api.Column(name, t))
    return cols


def spark_schema(inputs: dict[str, RelationDesc]) -> dict[str, dict[str, str]]:
    return {d.spark_name: {c.name: c.type.spark_ddl for c in d.columns} for d in inputs.values()}


def plan_peek(session: Session, expr: exp.Expression, ts: int | None) -> PeekPlan:
    resolved = resolve(fold_typed_literals(expr), session.coord.resolver(session))
    names = name_outputs(resolved.expr)
    body = substitute_session_functions(resolved.expr, session.context(ts))
    body = typed_division(body, spark_schema(resolved.inputs))
    cluster = session.coord.current_cluster(session)
    return PeekPlan(to_spark(body), resolved.inputs, names, cluster.id)


async def describe(session: Session, expr: exp.Expression, param_types: list[PgType]) -> list[api.Column]:
    bound = bind_params(expr, [None] * len(param_types), param_types)
    if constant.is_constant(bound):
        try:
            names, types, _ = constant.evaluate(bound, session.context(0))
            return [api.Column(n, t) for n, t in zip(names, types, strict=True)]
        except constant.NotConstant:
            pass
        except WeirError:
            pass
    fast = fast_path.plan(session, fold_typed_literals(bound))
    if fast is not None:
        return fast.columns
    plan = plan_peek(session, bound, 0)
    # A result's shape depends only on the query and the catalog: describe each once per
    # catalog generation instead of asking a replica on every Parse.
    key = (bound.sql(dialect="postgres"), session.database, tuple(session.search_path),
           session.coord.catalog.generation)
    cache = session.coord.describe_cache
    if key in cache:
        return cache[key]
    inputs = [input_spec(desc, [], 0, False) for desc in plan.inputs.values()]
    schema = await session.coord.compute.describe(plan.cluster_id, plan.spark_sql, inputs)
    columns = columns_from_schema(schema, plan.names, plan.inputs, cast_hints(bound))
    if len(cache) >= 1024:
        cache.pop(next(iter(cache)))
    cache[key] = columns
    return columns


def input_spec(desc: RelationDesc, files: list[str], as_of: int, consolidate: bool) -> dict[str, Any]:
    return {
        "name": desc.spark_name,
        "files": files,
        "columns": [{"name": c.name, "pg_type": c.type.sql() if not c.type.is_array
                     else c.type.name, "nullable": c.nullable} for c in desc.columns],
        "as_of": as_of,
        "consolidate": consolidate,
    }


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
    for sid in inputs:
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
            detail = ", ".join(f"{inputs[sid].name}: since {since}" for sid, since in bad.items())
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                            f"Timestamp ({t}) is not valid for all inputs: {detail}",
                            hint="could not find a valid timestamp: the inputs have been compacted "
                                 "past it; use AS OF AT LEAST or a later time")
    while any(storage.frontiers(sid)[1] <= t for sid in inputs):
        await asyncio.sleep(0.05)  # the inputs' uppers will pass t; cancellable
    return t


async def peek(session: Session, expr: exp.Expression, params: list[Any], param_types: list[PgType],
               *, tag_prefix: str = "SELECT", for_write: bool = False, as_of: Any = None) -> api.Rows:
    """Run a read. `for_write`: the read half of UPDATE/DELETE/INSERT ... SELECT, which reads
    the latest data whatever the session's transaction has read."""
    bound = bind_params(expr, params, param_types)
    coord = session.coord
    await coord.flush_implicit_writes(session)
    if as_of is not None and constant.is_constant(bound):
        eval_as_of(session, as_of.expr)
    if constant.is_constant(bound):
        try:
            ts = coord.oracle.read_ts()
            names, types, rows = constant.evaluate(bound, session.context(ts))
            session.execution_timestamp = ts
            cols = [api.Column(n, t) for n, t in zip(names, types, strict=True)]
            _ran(session, "constant")
            return api.Rows(cols, _once(rows), tag_prefix)
        except constant.NotConstant:
            pass
    folded = fold_typed_literals(bound)
    resolved = resolve(folded, coord.resolver(session))
    session.lifecycle("optimization-finished")
    if as_of is None and not for_write:
        fast = await _fast_path(session, folded, resolved.inputs, tag_prefix)
        if fast is not None:
            return fast
    if as_of is not None:
        ts = await timestamp_as_of(session, resolved.inputs, as_of)
    else:
        ts = choose_timestamp(session, resolved.inputs, for_write=for_write)
    hold = coord.storage.acquire_read_hold(list(resolved.inputs), ts)
    try:
        # strict serializable: a view maintained by a replica may trail the oracle; wait for it
        await coord.storage.wait_for_upper(list(resolved.inputs), ts)
        await coord.dataflow_errors.check(resolved.inputs, ts)  # a view's runtime errors at ts
        session.execution_timestamp = ts
        session.lifecycle("storage-dependencies-finished")
        cluster = coord.current_cluster(session)
        result = None
        via = indexes.indexed_views(coord, resolved, cluster.id) if as_of is None else {}
        if via:  # read the views' arrangements instead of recomputing them
            try:
                through = resolve(folded, indexes.ThroughIndexes(coord.resolver(session), via))
                result, names = await _spark_peek(session, through, ts, cluster.id)
                resolved = through
                READS_THROUGH_INDEXES.inc()
            except WeirError as e:
                if e.detail != "not-fast-path":
                    raise
                log.info("reading through indexes not possible: %s", e.message)
        if result is None:
            result, names = await _spark_peek(session, resolved, ts, cluster.id)
    except BaseException:
        hold.release()
        raise
    session.lifecycle("compute-dependencies-finished")
    cols = columns_from_schema(result.schema, names, resolved.inputs, cast_hints(bound))
    _ran(session, "standard")
    return api.Rows(cols, _stream(session, result.batches, hold), tag_prefix)


async def _spark_peek(session: Session, resolved: Any, ts: int, cluster_id: str) -> tuple[Any, list[str | None]]:
    """Run a resolved query as a Spark job on the cluster; inputs are shards as of `ts`,
    or index arrangements (inputs whose id is an index's)."""
    coord = session.coord
    names = name_outputs(resolved.expr)
    body = substitute_session_functions(resolved.expr, session.context(ts))
    body = typed_division(body, spark_schema(resolved.inputs))
    inputs = []
    for sid, desc in resolved.inputs.items():
        if sid in coord.storage.collections:
            plan = await coord.storage.scan_plan(sid, ts)
            inputs.append(input_spec(desc, list(plan.files), ts, bool(plan.may_have_retractions)))
        else:
            inputs.append({**input_spec(desc, [], ts, False), "index": sid})
    return await coord.compute.peek(cluster_id, to_spark(body), inputs, ts), names


def _ran(session: Session, strategy: str) -> None:
    """How a read ran: constant (on the coordinator), fast-path (from an index) or
    standard (a Spark job); for statement history and /metrics."""
    session.execution_strategy = strategy
    READS.labels(strategy=strategy).inc()


async def _fast_path(session: Session, expr: exp.Expression, inputs: dict[str, RelationDesc],
                     tag_prefix: str) -> api.Rows | None:
    """Answer from an index's arrangement (no Spark job), or None to take the slow path."""
    plan = fast_path.plan(session, expr)
    if plan is None:
        return None
    coord = session.coord
    ts = choose_timestamp(session, inputs)
    session.execution_timestamp = ts
    hold = coord.storage.acquire_read_hold(list(inputs), ts)
    try:
        result = await coord.compute.peek_index(plan.index.cluster_id or "", plan.index.id, ts, plan.body)
        await coord.dataflow_errors.check(inputs, ts)  # an indexed view's runtime errors at ts
    except WeirError as e:
        hold.release()
        if e.sqlstate == SqlState.QUERY_CANCELED or dataflow_errors.final_for_reads(e):
            raise
        log.info("fast path on index %s not taken: %s", plan.index.name, e.message)
        return None
    except BaseException:
        hold.release()
        raise
    _ran(session, "fast-path")
    return api.Rows(plan.columns, _stream(session, result.batches, hold), tag_prefix)


async def _once(rows: list[tuple[Any, ...]]) -> AsyncIterator[list[tuple[Any, ...]]]:
    yield rows


async def _stream(session: Session, batches: AsyncIterator[pa.RecordBatch], hold: Any
                  ) -> AsyncIterator[list[tuple[Any, ...]]]:
    session.running = asyncio.current_task()
    try:
        async for batch in batches:
            if batch.num_rows == 0:
                continue
            cols = [c.to_pylist() for c in batch.columns]
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
