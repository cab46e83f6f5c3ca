"""Materialized views that read no relation (`AS SELECT 1`, `AS VALUES ...`): their
contents never change, so no dataflow maintains them. The query runs once, on the
view's cluster, when the view is created; its rows are kept in the catalog (as
PostgreSQL text) and written to the view's shard, which the coordinator then advances
like a table's. A restart that finds the shard without them (a crash between the catalog
commit and the write) writes them again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from weir import codec
from weir.adapter import api, query
from weir.catalog.model import Item
from weir.codec import interval_value as cinterval_value
from weir.sql.plan import QueryPlan

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator
    from weir.adapter.session import Session

STRATEGY = "constant"


def is_constant(item: Item) -> bool:
    return item.kind == "materialized-view" and item.definition.get("strategy") == STRATEGY


async def evaluate(session: Session, plan: QueryPlan, columns: list[api.Column]) -> list[list[str | None]]:
    """The view's rows, each value as PostgreSQL's text of the view's column type."""
    rows = await query.collect(await query.peek(session, plan, []))
    return [[None if v is None else codec.encode_text(codec.coerce(v, c.type), c.type).decode()
             for v, c in zip(row, columns, strict=True)] for row in rows]


def _updates(item: Item) -> pa.Table:
    rows = item.definition.get("rows", [])
    arrays = {c.name: pa.array(cinterval_value.for_arrow([None if r[i] is None else codec.decode_text(r[i].encode(), c.type)
                                                          for r in rows], c.type), type=c.type.arrow)
              for i, c in enumerate(item.columns)}
    arrays["mz_diff"] = pa.array([1] * len(rows), pa.int64())
    return pa.table(arrays)


def _shard_columns(item: Item) -> list[tuple[str, Any, bool]]:
    return [(c.name, c.type, True) for c in item.columns]


async def create_shard(coord: Coordinator, item: Item) -> None:
    """The view's shard, with its rows (a write of the coordinator, like an INSERT's)."""
    await coord.storage.create_collection(item.id, _shard_columns(item))
    if item.definition.get("rows"):
        await coord.storage.append({item.id: _updates(item)})


async def open_shard(coord: Coordinator, item: Item) -> None:
    """At start-up, before the storage controller runs: the shard, advanced by it."""
    await coord.storage.ensure_collection(item.id, _shard_columns(item))


async def recover(coord: Coordinator, item: Item) -> None:
    """After start-up: write the rows a crash kept from the shard."""
    if not item.definition.get("rows"):
        return
    _, upper = coord.storage.frontiers(item.id)
    if (await coord.storage.snapshot(item.id, upper - 1)).num_rows == 0:
        await coord.storage.append({item.id: _updates(item)})
