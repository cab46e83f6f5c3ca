"""Runtime relations whose rows change with time rather than with events (a hold's lag, a
durable subscription's time since its last acknowledgement): measured every INTERVAL_S
and before every read of them, appending only the rows that changed. The first refresh
after a start retracts what the previous run left."""

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
Measure = Callable[[], Awaitable[dict[Any, tuple[Any, ...]]]]


class LiveRelation:
    """Keeps one such relation current. `measure` returns key -> row for now; `key` names
    the columns a row's key is made of."""

    def __init__(self, coord: Coordinator, relation: BuiltinTable, key: Sequence[str], measure: Measure) -> None:
        self.coord, self.relation, self.measure = coord, relation, measure
        self._names = [n for n, _ in relation.columns]
        self._key = list(key)
        self._old: dict[Any, tuple[Any, ...]] | None = None
        self._lock = asyncio.Lock()

    async def _load(self) -> dict[Any, tuple[Any, ...]]:
        """What an earlier run left in the relation: retracted by the first refresh."""
        old: dict[Any, tuple[Any, ...]] = {}
        rid = self.relation.id
        try:
            since, upper = self.coord.storage.frontiers(rid)
            snap = await self.coord.storage.snapshot(rid, max(since, min(self.coord.oracle.read_ts(), upper - 1)))
            for r in snap.to_pylist():
                old[tuple(r[k] for k in self._key)] = tuple(r[n] for n in self._names)
        except Exception:  # noqa: BLE001 - nothing to retract on a first start
            pass
        return old

    async def refresh(self) -> None:
        from weir.adapter.builtin_tables import builtin_updates

        async with self._lock:
            if self._old is None:
                self._old = await self._load()
            new = await self.measure()
            changes = diff_rows(self._old, new)
            if changes:
                await self.coord.storage.append({self.relation.id: builtin_updates(self.relation, changes)})
            self._old = new

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(INTERVAL_S)
            try:
                await self.refresh()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - retried on the next pass
                log.warning("recording %s failed", self.relation.name, exc_info=True)
