"""`LoadGenerator`: one source's generator as a deterministic, restartable state machine.

Its whole progress is `state()`, a small JSON-able dict (the next tick number, the
start time, and a few counters per kind). Given the spec and that state, the same
updates come out again, so a caller that persists the state after each durable write
resumes after a restart without duplicating or skipping a tick.

Time: AUCTION's timestamps are "now" when a tick runs. `tick(now_ms=...)` takes the
wall clock from the caller; without it (and for the ticks AS OF folds into the
snapshot) tick t is at `epoch_ms + t * tick_ms`, `epoch_ms` being fixed in the state
when the generator is first created, which makes a run fully reproducible.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any, Protocol

import pyarrow as pa

from weir.errors import SqlState, WeirError
from weir.storage.sources.auction import Auction
from weir.storage.sources.common import Batch, Relation, to_table
from weir.storage.sources.counter import Counter
from weir.storage.sources.spec import LoadGeneratorSpec, normalize_kind, subsources
from weir.storage.sources.tpch import Tpch

STATE_FORMAT = 1


class _Kind(Protocol):
    def initial_state(self, as_of: int, epoch_ms: int) -> dict[str, Any]: ...

    def snapshot(self, as_of: int, epoch_ms: int) -> dict[str, Batch]: ...

    def tick(self, tick: int, state: dict[str, Any], now_ms: int) -> dict[str, Batch]: ...


def _make_kind(spec: LoadGeneratorSpec) -> _Kind:
    kind = normalize_kind(spec.kind)
    if kind == "counter":
        return Counter(spec.max_cardinality)
    if kind == "auction":
        return Auction(spec.seed, spec.tick_ms)
    return Tpch(spec.scale_factor, spec.seed)


class LoadGenerator:
    """Snapshot, then one batch of updates per tick, for every relation of a source."""

    def __init__(self, spec: LoadGeneratorSpec, state: dict[str, Any] | None = None, *,
                 epoch_ms: int | None = None) -> None:
        self.spec = spec
        self.kind = normalize_kind(spec.kind)
        self.relations: list[Relation] = subsources(spec)
        self._kind = _make_kind(spec)
        if state is None:
            epoch = int(time.time() * 1000) if epoch_ms is None else int(epoch_ms)
            self._state = self._fresh(epoch)
        else:
            self._state = self._check(state)

    def _fresh(self, epoch_ms: int) -> dict[str, Any]:
        return {"format": STATE_FORMAT, "kind": self.kind, "tick": self.spec.as_of,
                "epoch_ms": epoch_ms, "gen": self._kind.initial_state(self.spec.as_of, epoch_ms)}

    def _check(self, state: dict[str, Any]) -> dict[str, Any]:
        if state.get("format") != STATE_FORMAT or state.get("kind") != self.kind \
                or not isinstance(state.get("tick"), int) or "gen" not in state:
            raise WeirError(SqlState.INTERNAL_ERROR,
                            f"load generator state does not belong to a {self.kind.upper()} source: "
                            f"{json.dumps(state)[:200]}")
        return copy.deepcopy(state)

    # ---- progress ------------------------------------------------------------------------
    @property
    def next_tick(self) -> int:
        """The number of the tick `tick()` produces next (ticks count from 0)."""
        return int(self._state["tick"])

    @property
    def epoch_ms(self) -> int:
        return int(self._state["epoch_ms"])

    @property
    def finished(self) -> bool:
        """UP TO reached: no more ticks."""
        up_to = self.spec.up_to
        return up_to is not None and self.next_tick >= up_to

    @property
    def ticking(self) -> bool:
        """Whether a runner should call `tick()` at all (TPCH without TICK INTERVAL never does)."""
        return self.spec.tick_ms > 0 and not self.finished

    def state(self) -> dict[str, Any]:
        """JSON-serializable progress; pass it back to the constructor to resume."""
        return copy.deepcopy(self._state)

    # ---- data ----------------------------------------------------------------------------
    def _tables(self, batches: dict[str, Batch]) -> dict[str, pa.Table]:
        return {name: to_table(cols, batches.get(name, ([], []))) for name, cols in self.relations}

    def snapshot(self) -> dict[str, pa.Table]:
        """The initial contents of every relation (AS OF folds the first ticks in)."""
        return self._tables(self._kind.snapshot(self.spec.as_of, self.epoch_ms))

    def tick(self, now_ms: int | None = None) -> dict[str, pa.Table]:
        """The next tick's updates for every relation (empty tables where nothing changes);
        {} once UP TO is reached."""
        if self.finished:
            return {}
        t = self.next_tick
        now = self.epoch_ms + t * self.spec.tick_ms if now_ms is None else int(now_ms)
        batches = self._kind.tick(t, self._state["gen"], now)
        self._state["tick"] = t + 1
        return self._tables(batches)

    def advance_to(self, tick: int) -> None:
        """Move to the state after ticks [0, tick) without producing their updates, e.g.
        to line up with a progress offset found in storage."""
        if tick < self.spec.as_of:
            raise WeirError(SqlState.INTERNAL_ERROR,
                            f"cannot move a load generator to tick {tick}, before AS OF {self.spec.as_of}")
        if tick < self.next_tick:
            self._state = self._fresh(self.epoch_ms)
        while self.next_tick < tick:
            t = self.next_tick
            self._kind.tick(t, self._state["gen"], self.epoch_ms + t * self.spec.tick_ms)
            self._state["tick"] = t + 1
