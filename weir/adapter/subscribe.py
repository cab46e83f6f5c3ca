"""SUBSCRIBE: a snapshot at the as-of time, then every change as the inputs' uppers
advance, in timestamp order, holding the inputs' since at the subscription's frontier.

A subscription to a stored collection (table, source) reads the shard's updates directly.
Any other query (views, joins, aggregates) is recomputed by a peek at each time an input
changed and diffed against the previous answer: correct for every query Spark can run."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlglot import exp

from weir.adapter import api, indexes, planning, privileges, query
from weir.adapter.subscribe_output import SubscribeOutput
from weir.codec.arrow_values import column_values
from weir.errors import SqlState, WeirError
from weir.sql import statements as st
from weir.sql import temporal
from weir.sql.plan import QueryPlan
from weir.sql.resolve import RelationDesc

if TYPE_CHECKING:
    from weir.adapter.session import Session

POLL_S = 0.05
Row = tuple[Any, ...]


def _direct(expr: exp.Expression, inputs: dict[str, RelationDesc]) -> RelationDesc | None:
    """SELECT * FROM <one stored collection>: read its updates instead of recomputing."""
    if (isinstance(expr, exp.Select) and len(expr.expressions) == 1 and isinstance(expr.expressions[0], exp.Star)
            and len(inputs) == 1 and not any(expr.args.get(k) for k in ("where", "group", "joins", "limit",
                                                                        "order", "having", "distinct", "with"))):
        return next(iter(inputs.values()))
    return None


def _counts(table: pa.Table, names: list[str]) -> collections.Counter[Row]:
    out: collections.Counter[Row] = collections.Counter()
    if table.num_rows == 0:
        return out
    cols = [column_values(table.column(n)) for n in names]
    for row, d in zip(zip(*cols, strict=True), table.column("mz_diff").to_pylist(), strict=True):
        out[_key(row)] += d
    return out


class _Fields(tuple):  # noqa: SLOT001 - a marker type
    """A struct value (an interval's {months, days, micros}) as a hashable key."""


def _key(row: Row) -> Row:
    return tuple(tuple(v) if isinstance(v, list) else _Fields(v.items()) if isinstance(v, dict) else v for v in row)


def _unkey(row: Row) -> Row:
    return tuple(dict(v) if isinstance(v, _Fields) else list(v) if isinstance(v, tuple) else v for v in row)


def refuse_mz_now(plan: QueryPlan) -> None:
    """A query with mz_now() changes as time passes, not only when an input changes."""
    if plan.inputs and plan.spark is not None and any(temporal.is_mz_now(c) for c in plan.spark.template.session_calls):
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "SUBSCRIBE to a query with mz_now() is not supported",
                        hint="Create a materialized view with the temporal filter and subscribe to it.")


async def subscribe(session: Session, stmt: st.Subscribe, *, cluster_id: str | None = None,
                    check: Callable[[], None] | None = None) -> tuple[list[api.Column], AsyncIterator[list[Row]]]:
    """`cluster_id`: where its peeks run instead of the session's cluster; `check`: called
    between steps, ends the subscription with the error it raises (a durable subscription's
    reader taken over)."""
    if stmt.durable is not None:
        from weir.adapter import durable_subscriptions

        return await durable_subscriptions.subscribe(session, stmt)
    coord = session.coord
    target = indexes.read_through(session, stmt.query)
    plan = planning.plan(session, target)
    inputs = plan.inputs
    refuse_mz_now(plan)
    privileges.require_read(session, plan.depends_on)
    privileges.require(session, "cluster", cluster_id or coord.current_cluster(session).id, "U")
    direct = _direct(target, inputs)
    if direct is not None:
        data_cols = [api.Column(c.name, c.type) for c in direct.columns]
    else:
        data_cols = await planning.describe(session, plan)
    if stmt.as_of is not None:
        as_of = await query.timestamp_as_of(session, inputs, stmt.as_of)
    else:
        await coord.builtin_writes_settled(inputs)  # a DDL just before is in its snapshot
        as_of = query.choose_timestamp(session, inputs, for_write=True)
    up_to = query.eval_as_of(session, stmt.up_to) if stmt.up_to is not None else None
    hold = coord.storage.acquire_read_hold(list(inputs), as_of)
    output = SubscribeOutput(stmt, data_cols)
    names = [c.name for c in data_cols]

    def rows_at(ts: int, updates: collections.Counter[Row]) -> list[Row]:
        return output.rows_at(ts, [(_unkey(r), d) for r, d in sorted(updates.items(), key=lambda x: repr(x[0]))])

    async def answer_at(ts: int) -> collections.Counter[Row]:
        rows = await query.peek(session, plan, [], as_of=st.AsOf(exp.Literal.number(ts)), cluster_id=cluster_id)
        return collections.Counter(_key(r) for r in await query.collect(rows))

    def upper() -> int:
        if direct is not None:
            # A materialized view's upper reaches the storage controller once per tick
            # (it reads the shards replicas write); the frontier a replica reports comes
            # right after its append is durable, so follow that as soon as it arrives.
            sid = direct.shard_id
            reported = coord.compute.write_frontiers().get(sid, {}).values()
            return max([coord.storage.frontiers(sid)[1], *reported])
        return min((coord.storage.frontiers(sid)[1] for sid in inputs), default=coord.oracle.read_ts() + 1)

    async def gen() -> AsyncIterator[list[Row]]:
        session.running = asyncio.current_task()
        try:
            if up_to is not None and up_to <= as_of:
                return
            if direct is not None:
                # a materialized view may not have reached as_of yet: its snapshot then would
                # miss what it writes at times up to as_of, which the updates after it skip
                while upper() <= as_of:
                    await asyncio.sleep(POLL_S)
                await coord.dataflow_errors.check([direct.shard_id], as_of)  # a view's runtime errors
                current = _counts(await coord.storage.snapshot(direct.shard_id, as_of), names)  # type: ignore[arg-type]
            else:
                current = await answer_at(as_of)
            if stmt.snapshot and current:
                yield rows_at(as_of, current)
            frontier = as_of + 1
            if stmt.progress:
                yield [output.progress_row(frontier)]
            if not inputs:
                return  # a constant query is complete after its snapshot (as in Materialize)
            while up_to is None or frontier < up_to:
                if check is not None:
                    check()
                hi = upper()
                if up_to is not None:
                    hi = min(hi, up_to)
                if hi <= frontier:
                    await asyncio.sleep(POLL_S)
                    continue
                out: list[Row] = []
                if direct is not None:
                    await coord.dataflow_errors.check_between(direct.shard_id, frontier, hi)  # type: ignore[arg-type]
                    ups = await coord.storage.read_updates(direct.shard_id, frontier, hi)  # type: ignore[arg-type]
                    by_time: dict[int, collections.Counter[Row]] = collections.defaultdict(collections.Counter)
                    if ups.num_rows:
                        cols = [column_values(ups.column(n)) for n in names]
                        for row, t, d in zip(zip(*cols, strict=True), ups.column("mz_timestamp").to_pylist(),
                                             ups.column("mz_diff").to_pylist(), strict=True):
                            by_time[t][_key(row)] += d
                    for t in sorted(by_time):
                        out += rows_at(t, by_time[t])
                else:
                    times: set[int] = set()
                    for sid in inputs:
                        ups = await coord.storage.read_updates(sid, frontier, hi)
                        times.update(ups.column("mz_timestamp").to_pylist())
                    for t in sorted(times):
                        new = await answer_at(t)
                        diff = collections.Counter(new)
                        diff.subtract(current)
                        out += rows_at(t, diff)
                        current = new
                        if t + 1 < hi:  # each time is a Spark job: say how far it got after each
                            frontier = t + 1
                            hold.downgrade(t)
                            if stmt.progress:
                                out.append(output.progress_row(frontier))
                            if out:
                                yield out
                            out = []
                            if check is not None:
                                check()
                frontier = hi
                hold.downgrade(frontier - 1)
                if stmt.progress:
                    out.append(output.progress_row(frontier))
                if out:
                    yield out
        finally:
            hold.release()

    return output.columns, gen()
