"""COUNTER: the sequence 1, 2, 3, ... one value per tick, as in Materialize.

With MAX CARDINALITY n the collection keeps at most n values: the tick that inserts
value v (v > n) also retracts v - n, the oldest value still present.
"""

from __future__ import annotations

from typing import Any

from weir import types as T
from weir.storage.sources.common import Batch, Relation

PRIMARY_RELATION = ""  # COUNTER has no subsources: its one relation is the source itself

RELATIONS: list[Relation] = [(PRIMARY_RELATION, [("counter", T.INT8, False)])]


class Counter:
    def __init__(self, max_cardinality: int | None) -> None:
        self.max_cardinality = max_cardinality

    def initial_state(self, as_of: int, epoch_ms: int) -> dict[str, Any]:
        return {}

    def snapshot(self, as_of: int, epoch_ms: int) -> dict[str, Batch]:
        """What the first `as_of` ticks leave: 1..as_of, less values retracted since."""
        first = 1
        if self.max_cardinality is not None:
            first = max(1, as_of - self.max_cardinality + 1)
        values = list(range(first, as_of + 1))
        return {PRIMARY_RELATION: ([(v,) for v in values], [1] * len(values))}

    def tick(self, tick: int, state: dict[str, Any], now_ms: int) -> dict[str, Batch]:
        rows, diffs = [(tick + 1,)], [1]
        if self.max_cardinality is not None and tick >= self.max_cardinality:
            rows.append((tick - self.max_cardinality + 1,))
            diffs.append(-1)
        return {PRIMARY_RELATION: (rows, diffs)}
