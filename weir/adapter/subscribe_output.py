"""How SUBSCRIBE shows the updates of one timestamp: as diffs (the default, optionally
WITHIN TIMESTAMP ORDER BY), or keyed as ENVELOPE UPSERT / ENVELOPE DEBEZIUM, with
Materialize's columns and states (doc/user/content/sql/subscribe.md, "Modifying the
output format")."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from weir import types as T
from weir.adapter import api
from weir.errors import SqlState, WeirError
from weir.sql import statements as st

Row = tuple[Any, ...]


@dataclass(frozen=True)
class _Order:
    position: int  # in the diff row (mz_diff, data columns) being sorted
    desc: bool
    nulls_first: bool


class SubscribeOutput:
    """Columns and rows of one subscription's output."""

    def __init__(self, stmt: st.Subscribe, data: list[api.Column]) -> None:
        self.progress = stmt.progress
        self.envelope = stmt.envelope
        names = [c.name for c in data]
        self.key: list[int] = [_position(names, k, "KEY") for k in stmt.envelope_key]
        if len(set(self.key)) != len(self.key):
            raise WeirError(SqlState.SYNTAX_ERROR, "SUBSCRIBE ENVELOPE KEY names a column twice")
        self.values = [i for i in range(len(data)) if i not in self.key]
        self.order = [_order(names, o) for o in stmt.within_order]
        meta = [api.Column("mz_timestamp", T.MZ_TIMESTAMP)]
        if self.progress:
            meta.append(api.Column("mz_progressed", T.BOOL))
        if self.envelope is None:
            self.columns = [*meta, api.Column("mz_diff", T.INT8), *data]
        else:
            keys = [data[i] for i in self.key]
            values = [data[i] for i in self.values]
            if self.envelope == "debezium":
                values = ([api.Column(f"before_{c.name}", c.type) for c in values]
                          + [api.Column(f"after_{c.name}", c.type) for c in values])
            self.columns = [*meta, api.Column("mz_state", T.TEXT), *keys, *values]

    def progress_row(self, ts: int) -> Row:
        return (ts, True, *(None,) * (len(self.columns) - 2))

    def rows_at(self, ts: int, updates: Sequence[tuple[Row, int]]) -> list[Row]:
        """The output rows of the updates (row, diff) at one timestamp."""
        prefix = (ts, False) if self.progress else (ts,)
        if self.envelope is not None:
            return [(*prefix, *r) for r in self._keyed(updates)]
        rows = [(d, *r) for r, d in updates if d]
        if self.order:
            rows.sort(key=functools.cmp_to_key(self._compare))
        return [(*prefix, *r) for r in rows]

    def _compare(self, a: Row, b: Row) -> int:
        for o in self.order:
            x, y = a[o.position], b[o.position]
            if x is None or y is None:
                if x is None and y is None:
                    continue
                return (-1 if x is None else 1) * (1 if o.nulls_first else -1)
            if x != y:
                c = -1 if x < y else 1
                return -c if o.desc else c
        return 0

    def _keyed(self, updates: Sequence[tuple[Row, int]]) -> list[Row]:
        """Materialize's four cases per key: one insert (upsert / debezium insert), one
        retraction and one insert (upsert), one retraction (delete); anything else is a
        key_violation with the values NULL."""
        groups: dict[Row, list[tuple[Row, int]]] = {}
        for row, diff in updates:
            if diff:
                groups.setdefault(tuple(row[i] for i in self.key), []).append((row, diff))
        out = []
        width = len(self.values)
        nulls = (None,) * width
        for key in sorted(groups, key=_sort_key):
            group = sorted(groups[key], key=lambda rd: rd[1])
            values = [tuple(row[i] for i in self.values) for row, _ in group]
            diffs = [d for _, d in group]
            debezium = self.envelope == "debezium"
            if diffs == [1]:
                state, before, after = ("insert" if debezium else "upsert"), nulls, values[0]
            elif diffs == [-1, 1]:
                state, before, after = "upsert", values[0], values[1]
            elif diffs == [-1]:
                state, before, after = "delete", values[0], nulls
            else:
                state, before, after = "key_violation", nulls, nulls
            out.append((state, *key, *before, *after) if debezium
                       else (state, *key, *(nulls if state == "delete" else after)))
        return out


def _sort_key(key: Row) -> tuple[Any, ...]:
    return tuple((v is None, v if v is not None else 0) for v in key)


def _position(names: list[str], name: str, clause: str) -> int:
    if name not in names:
        raise WeirError(SqlState.UNDEFINED_COLUMN, f'column "{name}" does not exist',
                        hint=f"SUBSCRIBE's {clause} names columns of what it subscribes to.")
    return names.index(name)


def _order(names: list[str], o: exp.Ordered) -> _Order:
    col = o.this
    if not isinstance(col, exp.Column) or col.table:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        f"WITHIN TIMESTAMP ORDER BY {col.sql(dialect='postgres')}: only columns are supported")
    name = col.name
    position = 0 if name == "mz_diff" else 1 + _position(names, name, "WITHIN TIMESTAMP ORDER BY")
    desc = bool(o.args.get("desc"))
    nulls_first = o.args.get("nulls_first")
    # PostgreSQL's default: NULLs sort as larger than every value
    return _Order(position, desc, desc if nulls_first is None else bool(nulls_first))
