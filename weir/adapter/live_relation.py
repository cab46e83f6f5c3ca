"""Runtime relations whose rows change with time rather than with events (a hold's lag, a
durable subscription's time since its last acknowledgement): measured every INTERVAL_S
and before every read of them, appending only the rows that changed. The first refresh
after a start retracts what the previous run left.

Relations that describe one thing from several sides (an object's hydration status and
its hydration time) are measured from one reading and appended at one timestamp, so a
query joining them never sees one side ahead of the other."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from weir.adapter.frontiers import diff_rows
from weir.catalog.builtins import BuiltinTable

if TYPE_CHECKING:
    from weir.adapter.coordinator import Coordinator

log = logging.getLogger(__name__)

INTERVAL_S = 10.0
Rows = dict[Any, tuple[Any, ...]]
Measure = Callable[[], Awaitable[Rows]]
MeasureMany = Callable[[], Awaitable[Sequence[Rows]]]


class LiveRelations:
    """Keeps relations current that are measured together. `measure` returns, per
    relation in `parts` order, key -> row for now; each part names the columns its
    rows' keys are made of."""

    def __init__(self, coord: Coordinator, parts: Sequence[tuple[BuiltinTable, Sequence[str]]],
                 measure: MeasureMany) -> None:
        self.coord, self.measure = coord, measure
        self.parts = [(relation, list(key)) for relation, key in parts]
        self.ids = frozenset(relation.id for relation, _ in self.parts)
        self.name = "+".join(relation.name for relation, _ in self.parts)
        self._old: list[Rows] | None = None
        self._lock = asyncio.Lock()

    async def _load(self, relation: BuiltinTable, key: Sequence[str]) -> Rows:
        """What an earlier run left in the relation: retracted by the first refresh."""
        old: Rows = {}
        names = [n for n, _ in relation.columns]
        try:
            since, upper = self.coord.storage.frontiers(relation.id)
            snap = await self.coord.storage.snapshot(
                relation.id, max(since, min(self.coord.oracle.read_ts(), upper - 1)))
            for r in snap.to_pylist():
                old[tuple(r[k] for k in key)] = tuple(r[n] for n in names)
        except Exception:  # noqa: BLE001 - nothing to retract on a first start
            pass
        return old

    async def refresh(self) -> None:
        from weir.adapter.builtin_tables import builtin_updates

        async with self._lock:
            if self._old is None:
                self._old = [await self._load(relation, key) for relation, key in self.parts]
            new = list(await self.measure())
            updates = {}
            for (relation, _), old, rows in zip(self.parts, self._old, new, strict=True):
                changes = diff_rows(old, rows)
                if changes:
                    updates[relation.id] = builtin_updates(relation, changes)
            if updates:
                await self.coord.storage.append(updates)
            self._old = new

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(INTERVAL_S)
            try:
                await self.refresh()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - retried on the next pass
                log.warning("recording %s failed", self.name, exc_info=True)


class LiveRelation(LiveRelations):
    """One relation measured on its own."""

    def __init__(self, coord: Coordinator, relation: BuiltinTable, key: Sequence[str], measure: Measure) -> None:
        async def measure_one() -> list[Rows]:
            return [await measure()]

        super().__init__(coord, [(relation, key)], measure_one)
        self.relation = relation
