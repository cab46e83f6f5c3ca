"""What the builtin relations hold, and the updates that bring them to a new catalog
snapshot. After a change of a few items (CREATE HOLD among thousands of holds) only those
items' rows are recomputed; anything else changed recomputes every relation."""

from __future__ import annotations

import collections
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from weir.catalog.builtins import BUILTIN_TABLES, BuiltinTable, ItemRows
from weir.catalog.model import Item, Snapshot
from weir.codec.interval import PgInterval

Row = tuple[Any, ...]
Changes = list[tuple[Row, int]]


_INTERVAL_FIELDS = {"months", "days", "micros"}


def _value(v: Any) -> Any:
    """A stored value as the builtin relations compute it: lists as tuples, and an interval
    read back from storage (its struct, a dict) as the timedelta they compute (PgInterval
    when it has months), so a restart's first update retracts nothing that is unchanged."""
    if isinstance(v, list):
        return tuple(_value(x) for x in v)
    if isinstance(v, dict) and v.keys() == _INTERVAL_FIELDS:
        if v["months"]:
            return PgInterval(v["months"], v["days"], v["micros"])
        return timedelta(days=v["days"], microseconds=v["micros"])
    return v


def hashable(row: Iterable[Any]) -> Row:
    return tuple(_value(v) for v in row)


def changed_items(old: Snapshot, new: Snapshot) -> dict[str, Item | None] | None:
    """The items that differ between two snapshots, as they are in `new` (None: dropped);
    None if anything but items differs."""
    if old.non_item_parts() != new.non_item_parts():
        return None
    if new.changes is not None and old.revision >= 0 and new.base_revision == old.revision:
        return new.changes  # the catalog knows which items it reloaded (a superset is fine)
    before = {i.id: i for i in old.items}
    after = {i.id: i for i in new.items}
    out: dict[str, Item | None] = {}
    for k in before.keys() | after.keys():
        a, b = before.get(k), after.get(k)
        if a is not b and a != b:
            out[k] = b
    return out


class BuiltinContents:
    """Per builtin relation: its rows with their counts, and for relations computed item by
    item, each item's rows (what an incremental update retracts)."""

    def __init__(self) -> None:
        self.rows: dict[str, collections.Counter[Row]] = {}
        self._by_item: dict[str, dict[str, list[Row]]] = {}
        self._snapshot: Snapshot | None = None

    def load(self, builtin: BuiltinTable, rows: Iterable[tuple[Row, int]]) -> None:
        """What storage holds (at start-up); the next update recomputes everything."""
        counts: collections.Counter[Row] = collections.Counter()
        for row, diff in rows:
            counts[hashable(row)] += diff
        self.rows[builtin.id] = counts
        self._snapshot = None

    def update(self, snap: Snapshot) -> dict[str, Changes]:
        """The updates (row, diff) per builtin relation that make it match `snap`."""
        changed = changed_items(self._snapshot, snap) if self._snapshot is not None else None
        out: dict[str, Changes] = {}
        for b in BUILTIN_TABLES:
            if b.runtime:
                continue
            if changed is None:
                changes = self._recompute(b, snap)
            elif isinstance(b.compute, ItemRows):
                changes = self._recompute_items(b, b.compute, snap, changed)
            else:
                continue  # only items changed: a relation not computed from items is as it was
            if changes:
                out[b.id] = changes
        self._snapshot = snap
        return out

    def replace_item_rows(self, builtin: BuiltinTable, rows: dict[str, list[Row]]) -> Changes:
        """Set some items' rows of one relation computed item by item, without a snapshot
        (a batch of hold advances rewrites a few rows of mz_holds among thousands)."""
        per = self._by_item.setdefault(builtin.id, {})
        diff: collections.Counter[Row] = collections.Counter()
        for item_id, new in rows.items():
            for r in per.pop(item_id, ()):
                diff[r] -= 1
            hashed = [hashable(r) for r in new]
            for r in hashed:
                diff[r] += 1
            if hashed:
                per[item_id] = hashed
        return self._apply(builtin, diff)

    def _recompute(self, b: BuiltinTable, snap: Snapshot) -> Changes:
        if isinstance(b.compute, ItemRows):
            per = {i.id: [hashable(r) for r in b.compute.of(snap, i)] for i in snap.items}
            self._by_item[b.id] = {k: v for k, v in per.items() if v}
            new = collections.Counter(r for rows in per.values() for r in rows)
        else:
            new = collections.Counter(hashable(r) for r in b.compute(snap))
        old = self.rows.get(b.id, collections.Counter())
        self.rows[b.id] = new
        if new == old:
            return []
        diff = collections.Counter(new)
        diff.subtract(old)
        return [(r, d) for r, d in diff.items() if d != 0]

    def _recompute_items(self, b: BuiltinTable, compute: ItemRows, snap: Snapshot,
                         changed: dict[str, Item | None]) -> Changes:
        if compute.related is not None and self._snapshot is not None:
            more = compute.related(self._snapshot, snap, set(changed)) - changed.keys()
            if more:
                changed = {**changed, **{k: snap.item_by_id.get(k) for k in more}}
        return self.replace_item_rows(b, {
            item_id: compute.of(snap, item) if item is not None else [] for item_id, item in changed.items()})

    def _apply(self, b: BuiltinTable, diff: collections.Counter[Row]) -> Changes:
        counts = self.rows.setdefault(b.id, collections.Counter())
        out = []
        for r, d in diff.items():
            if d == 0:
                continue
            out.append((r, d))
            n = counts[r] + d
            if n:
                counts[r] = n
            else:
                del counts[r]
        return out
