"""Incremental builtin contents and incremental catalog snapshots equal recomputing
everything, whatever mix of changes came between them."""

from __future__ import annotations

import collections
import random

import pytest

from weir.catalog import Catalog, ColumnDef
from weir.catalog.builtin_contents import BuiltinContents, hashable
from weir.catalog.builtins import BUILTIN_TABLES, HOLD, hold_row
from weir.types import INT4, TEXT


@pytest.fixture
def cat(tmp_path) -> Catalog:  # noqa: ANN001
    c = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    yield c
    c.close()


def full(cat: Catalog) -> dict[str, collections.Counter]:
    """Every builtin relation recomputed from a snapshot read from scratch."""
    fresh = Catalog(cat.url)
    try:
        snap = fresh.snapshot()
        return {b.id: collections.Counter(hashable(r) for r in b.compute(snap))
                for b in BUILTIN_TABLES if not b.runtime}
    finally:
        fresh.close()


def test_incremental_equals_full(cat: Catalog) -> None:
    rng = random.Random(7)
    contents = BuiltinContents()
    contents.update(cat.snapshot())
    tables: list[str] = []
    holds: list[str] = []
    n = 0
    for step in range(60):
        n += 1
        op = rng.choice(["table", "table", "hold", "hold", "advance", "drop", "rename", "owner",
                         "grant", "role", "schema", "index"])
        if op == "table" or not tables:
            tables.append(cat.create_item("table", "u1", f"t{n}", [ColumnDef("a", INT4), ColumnDef("b", TEXT)],
                                          f"CREATE TABLE t{n} (a int, b text)").id)
        elif op == "hold":
            on = rng.sample(tables, min(2, len(tables)))
            holds.append(cat.create_item(HOLD, "u1", f"h{n}", dependencies=on, definition={
                "at": n, "max_lag_ms": 1000, "auto_advances": 0}).id)
        elif op == "advance" and holds:
            moved = {h: {"at": n * 10, "max_lag_ms": 1000, "auto_advances": 1} for h in rng.sample(holds, min(3, len(holds)))}
            cat.set_definitions(moved)
            snap_items = {i.id: i for i in cat.list_items(HOLD)}
            contents.replace_item_rows(next(b for b in BUILTIN_TABLES if b.name == "mz_holds"),
                                       {h: [hold_row(snap_items[h], "u1")] for h in moved})
        elif op == "drop":
            victim = rng.choice(tables)
            dropped = cat.drop_item(victim, cascade=True).items
            gone = {i.id for i in dropped}
            tables = [x for x in tables if x not in gone]
            holds = [x for x in holds if x not in gone]
        elif op == "rename":
            t = rng.choice(tables)
            cat.alter_item(t, name=f"r{n}")
        elif op == "owner":
            role = cat.create_role(f"o{n}")
            cat.set_owner("item", rng.choice(tables), role.id)
        elif op == "grant":
            role = cat.create_role(f"g{n}")
            cat.grant_privileges("item", rng.choice(tables), role.id, "r", "u1")
        elif op == "role":
            cat.create_role(f"x{n}")
        elif op == "schema":
            cat.create_schema("u1", f"s{n}")
        elif op == "index":
            t = rng.choice(tables)
            cat.create_item("index", "u1", f"i{n}", [ColumnDef("a", INT4)], "", {
                "on_id": t, "keys": ["a"], "columns": [{"name": "a", "nullable": True}]},
                cluster_id="u1", dependencies=[t])
        if rng.random() < 0.5 or step == 59:  # several changes may come between updates
            snap = cat.snapshot()
            assert snap.items == Catalog.snapshot(_fresh := Catalog(cat.url)).items, op
            _fresh.close()
            contents.update(snap)
            expected = full(cat)
            got = {bid: collections.Counter({r: c for r, c in rows.items() if c})
                   for bid, rows in contents.rows.items()}
            assert got == expected, op


def test_contents_read_back_from_storage_change_nothing(cat: Catalog) -> None:
    """At start-up the builtin relations' stored rows are loaded as storage gives them
    (intervals are structs, read as dicts: mz_clusters.introspection_interval); the first
    update then finds nothing to change. A restart failed ("unhashable type: 'dict'")."""
    import pyarrow as pa

    from weir.codec import interval_value

    snap = cat.snapshot()
    contents = BuiltinContents()
    for b in BUILTIN_TABLES:
        if b.runtime:
            continue
        rows = list(b.compute(snap))
        stored = []
        for row in rows:  # through Arrow, as the shard holds it and pyarrow reads it back
            values = [pa.array(interval_value.for_arrow([v], t), type=t.arrow).to_pylist()[0]
                      for v, (_, t) in zip(row, b.columns, strict=True)]
            stored.append((tuple(values), 1))
        contents.load(b, stored)
    assert contents.update(snap) == {}
