"""Load generator sources (COUNTER, AUCTION, TPCH): option parsing, the generators'
data and determinism, and SourceRunner writing into real shards through a real
StorageController (Iceberg over SQLite in a temporary warehouse), without Spark."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from weir import types as T
from weir.adapter.oracle import TimestampOracle
from weir.errors import SqlState, WeirError
from weir.storage.controller import StorageController
from weir.storage.persist import ShardStore
from weir.storage.sources import (
    PRIMARY_RELATION,
    LoadGenerator,
    LoadGeneratorSpec,
    MemoryStateStore,
    SourceRunner,
    parse_interval_us,
    parse_options,
    subsources,
)
from weir.storage.sources.tpch import order_key

# ---- helpers ---------------------------------------------------------------------------------


def _rows(t: pa.Table) -> Counter[tuple[Any, ...]]:
    """A table of updates as a multiset of data rows (diffs applied)."""
    out: Counter[tuple[Any, ...]] = Counter()
    data = [c for c in t.column_names if c not in ("mz_diff", "mz_timestamp")]
    for rec in t.to_pylist():
        out[tuple(rec[c] for c in data)] += rec["mz_diff"]
    return out


def _apply(contents: dict[str, Counter[tuple[Any, ...]]], updates: dict[str, pa.Table]) -> None:
    """Apply updates; a retraction must hit a row that is there."""
    for rel, t in updates.items():
        c = contents.setdefault(rel, Counter())
        for row, d in _rows(t).items():
            c[row] += d
            assert c[row] >= 0, f"{rel}: retracted {row} that is not present"
            if c[row] == 0:
                del c[row]


def _contents(gen: LoadGenerator, ticks: int) -> dict[str, Counter[tuple[Any, ...]]]:
    out: dict[str, Counter[tuple[Any, ...]]] = {}
    _apply(out, gen.snapshot())
    for _ in range(ticks):
        _apply(out, gen.tick())
    return out


def _code(exc: pytest.ExceptionInfo[WeirError]) -> str:
    return exc.value.sqlstate


# ---- options ---------------------------------------------------------------------------------


def test_parse_options_defaults() -> None:
    c = parse_options("COUNTER", {})
    assert (c.kind, c.tick_ms, c.as_of, c.up_to, c.max_cardinality) == ("counter", 1000, 0, None, None)
    a = parse_options("auction", {"TICK INTERVAL": "'250ms'", "SEED": "7"})
    assert (a.kind, a.tick_ms, a.seed) == ("auction", 250, 7)
    t = parse_options("TPCH", {})
    assert (t.tick_ms, t.scale_factor, t.seed) == (0, 0.01, 0)  # TPCH is static by default
    t = parse_options("tpch", {"scale_factor": "0.001", "tick interval": "1s", "AS OF": "3",
                               "UP TO": "10"})
    assert (t.tick_ms, t.scale_factor, t.as_of, t.up_to) == (1000, 0.001, 3, 10)
    assert LoadGeneratorSpec.from_dict(json.loads(json.dumps(t.to_dict()))) == t


@pytest.mark.parametrize("text,us", [
    ("1s", 1_000_000), ("500ms", 500_000), ("'2 seconds'", 2_000_000), ("1 minute", 60_000_000),
    ("1m 30s", 90_000_000), ("1.5s", 1_500_000), ("00:00:02", 2_000_000), ("3", 3_000_000),
    ("250 milliseconds", 250_000), ("1h", 3_600_000_000), ("1 minute 30 seconds", 90_000_000),
    ("'.5 second'", 500_000), ("1 day", 86_400_000_000),
])
def test_parse_interval(text: str, us: int) -> None:
    assert parse_interval_us(text) == us


@pytest.mark.parametrize("kind,options,code,fragment", [
    ("counter", {"SCALE FACTOR": "1"}, SqlState.FEATURE_NOT_SUPPORTED,
     "COUNTER load generators do not support SCALE FACTOR values"),
    ("tpch", {"KEYS": "10"}, SqlState.FEATURE_NOT_SUPPORTED, "do not support KEYS"),
    ("auction", {"MAX CARDINALITY": "3"}, SqlState.FEATURE_NOT_SUPPORTED, "MAX CARDINALITY"),
    ("counter", {"SEED": "3"}, SqlState.FEATURE_NOT_SUPPORTED, "SEED"),
    ("counter", {"COLOR": "red"}, SqlState.INVALID_PARAMETER_VALUE, "unrecognized"),
    ("counter", {"TICK INTERVAL": "soon"}, SqlState.INVALID_PARAMETER_VALUE, "TICK INTERVAL"),
    ("counter", {"TICK INTERVAL": "5 fortnights"}, SqlState.INVALID_PARAMETER_VALUE, "interval"),
    ("counter", {"TICK INTERVAL": "0s"}, SqlState.INVALID_PARAMETER_VALUE, "greater than zero"),
    ("counter", {"MAX CARDINALITY": "-1"}, SqlState.INVALID_PARAMETER_VALUE, "non-negative integer"),
    ("counter", {"MAX CARDINALITY": "many"}, SqlState.INVALID_PARAMETER_VALUE, "MAX CARDINALITY"),
    ("counter", {"AS OF": "5", "UP TO": "4"}, SqlState.INVALID_PARAMETER_VALUE, "UP TO cannot be less"),
    ("tpch", {"SCALE FACTOR": "-1"}, SqlState.INVALID_PARAMETER_VALUE, "unsupported scale factor"),
    ("tpch", {"SCALE FACTOR": "nan"}, SqlState.INVALID_PARAMETER_VALUE, "unsupported scale factor"),
    ("tpch", {"SCALE FACTOR": "big"}, SqlState.INVALID_PARAMETER_VALUE, "SCALE FACTOR"),
    ("tpch", {"SCALE FACTOR": "10"}, SqlState.FEATURE_NOT_SUPPORTED, "SCALE FACTOR 10"),
    ("counter", {"TICK INTERVAL": "1s", "tick_interval": "2s"}, SqlState.INVALID_PARAMETER_VALUE,
     "more than once"),
    ("marketing", {}, SqlState.FEATURE_NOT_SUPPORTED, "MARKETING not yet supported"),
    ("key value", {}, SqlState.FEATURE_NOT_SUPPORTED, "KEY VALUE"),
    ("lottery", {}, SqlState.INVALID_PARAMETER_VALUE, "unknown load generator"),
])
def test_parse_options_errors(kind: str, options: dict[str, str], code: str, fragment: str) -> None:
    with pytest.raises(WeirError) as exc:
        parse_options(kind, options)
    assert _code(exc) == code
    assert fragment in exc.value.message


def test_subsources_match_materialize() -> None:
    def shape(kind: str) -> dict[str, list[tuple[str, str, bool]]]:
        return {name: [(c, t.name, n) for c, t, n in cols]
                for name, cols in subsources(parse_options(kind, {}))}

    assert shape("counter") == {PRIMARY_RELATION: [("counter", "bigint", False)]}
    ts = "timestamp with time zone"
    assert shape("auction") == {
        "organizations": [("id", "bigint", False), ("name", "text", False)],
        "users": [("id", "bigint", False), ("org_id", "bigint", False), ("name", "text", False)],
        "accounts": [("id", "bigint", False), ("org_id", "bigint", False), ("balance", "bigint", False)],
        "auctions": [("id", "bigint", False), ("seller", "bigint", False), ("item", "text", False),
                     ("end_time", ts, False)],
        "bids": [("id", "bigint", False), ("buyer", "bigint", False), ("auction_id", "bigint", False),
                 ("amount", "integer", False), ("bid_time", ts, False)],
    }
    tpch = dict(subsources(parse_options("tpch", {})))
    assert set(tpch) == {"region", "nation", "supplier", "customer", "part", "partsupp", "orders",
                         "lineitem"}
    assert [c[0] for c in tpch["lineitem"]][:4] == ["l_orderkey", "l_partkey", "l_suppkey", "l_linenumber"]
    assert dict((c, t) for c, t, _ in tpch["orders"])["o_totalprice"] == T.numeric(15, 2)
    assert dict((c, t) for c, t, _ in tpch["lineitem"])["l_shipdate"] == T.DATE


# ---- COUNTER ---------------------------------------------------------------------------------


def test_counter_sequence_and_max_cardinality() -> None:
    gen = LoadGenerator(parse_options("counter", {}), epoch_ms=0)
    assert gen.snapshot()[PRIMARY_RELATION].num_rows == 0
    assert [_rows(gen.tick()[PRIMARY_RELATION]) for _ in range(3)] == \
        [Counter({(1,): 1}), Counter({(2,): 1}), Counter({(3,): 1})]

    gen = LoadGenerator(parse_options("counter", {"MAX CARDINALITY": "3"}), epoch_ms=0)
    contents = _contents(gen, 10)
    assert contents[PRIMARY_RELATION] == Counter({(8,): 1, (9,): 1, (10,): 1})
    # the tick that inserts 11 retracts 8, the oldest
    assert _rows(gen.tick()[PRIMARY_RELATION]) == Counter({(11,): 1, (8,): -1})

    zero = LoadGenerator(parse_options("counter", {"MAX CARDINALITY": "0"}), epoch_ms=0)
    assert _contents(zero, 5).get(PRIMARY_RELATION, Counter()) == Counter()


def test_counter_as_of_and_up_to() -> None:
    spec = parse_options("counter", {"AS OF": "5", "UP TO": "7", "MAX CARDINALITY": "3"})
    gen = LoadGenerator(spec, epoch_ms=0)
    assert _rows(gen.snapshot()[PRIMARY_RELATION]) == Counter({(3,): 1, (4,): 1, (5,): 1})
    assert gen.next_tick == 5
    assert _rows(gen.tick()[PRIMARY_RELATION]) == Counter({(6,): 1, (3,): -1})
    gen.tick()
    assert gen.finished and not gen.ticking
    assert gen.tick() == {}
    # AS OF folds exactly the ticks a source without it would have produced
    plain = LoadGenerator(parse_options("counter", {"MAX CARDINALITY": "3"}), epoch_ms=0)
    assert _contents(plain, 7) == _contents(LoadGenerator(spec, epoch_ms=0), 2)


# ---- AUCTION ---------------------------------------------------------------------------------


def test_auction_snapshot_and_ticks() -> None:
    gen = LoadGenerator(parse_options("auction", {}), epoch_ms=1_700_000_000_000)
    snap = gen.snapshot()
    orgs, users, accounts = (snap[r].to_pylist() for r in ("organizations", "users", "accounts"))
    assert len(orgs) == 75 and len(users) > 1000 and len(accounts) == 75
    assert [o["id"] for o in orgs] == list(range(1, 76))
    assert {u["org_id"] for u in users} == set(range(1, 76))
    assert {(a["id"], a["org_id"], a["balance"]) for a in accounts} == \
        {(org + 42, org, 10_000) for org in range(1, 76)}
    assert snap["auctions"].num_rows == snap["bids"].num_rows == 0

    auctions: list[dict[str, Any]] = []
    bids: list[dict[str, Any]] = []
    for _ in range(200):
        tick = gen.tick()
        new = tick["auctions"].to_pylist() + tick["bids"].to_pylist()
        assert len(new) == 1, "each tick starts an auction or places one bid"
        assert all(r["mz_diff"] == 1 for r in new)
        auctions += tick["auctions"].to_pylist()
        bids += tick["bids"].to_pylist()
    ids = [a["id"] for a in auctions]
    assert ids == list(range(1, len(ids) + 1))
    per_auction = Counter(b["auction_id"] for b in bids)
    assert all(2 <= n <= 9 for a, n in per_auction.items() if a != ids[-1])
    by_id = {a["id"]: a for a in auctions}
    n_users = len(users)
    for b in bids:
        a = by_id[b["auction_id"]]
        assert b["id"] // 10 == a["id"] and 1 <= b["amount"] <= 99 and 1 <= b["buyer"] <= n_users
        assert a["end_time"] > b["bid_time"]  # bids come in before the auction ends
    assert len({b["id"] for b in bids}) == len(bids)


def test_auction_deterministic_and_resumable() -> None:
    spec = parse_options("auction", {"SEED": "3"})

    def run(gen: LoadGenerator, n: int) -> list[dict[str, Any]]:
        out = []
        for _ in range(n):
            out += [r for t in gen.tick().values() for r in t.to_pylist()]
        return out

    a = LoadGenerator(spec, epoch_ms=0)
    whole = run(a, 40)
    b = LoadGenerator(spec, epoch_ms=0)
    first = run(b, 17)
    state = json.loads(json.dumps(b.state()))  # survives JSON, as it would in the catalog
    resumed = LoadGenerator(spec, state)
    assert first + run(resumed, 23) == whole
    other = LoadGenerator(parse_options("auction", {"SEED": "4"}), epoch_ms=0)
    assert run(other, 40) != whole
    # AS OF 12: the snapshot holds what the first 12 ticks emitted
    folded = LoadGenerator(parse_options("auction", {"SEED": "3", "AS OF": "12"}), epoch_ms=0)
    assert _contents(folded, 5) == _contents(LoadGenerator(spec, epoch_ms=0), 17)


# ---- TPCH ------------------------------------------------------------------------------------


def test_tpch_sf_001_cardinalities() -> None:
    """(How long the snapshot takes is bench/sources.py's job, not a unit test's.)"""
    gen = LoadGenerator(parse_options("tpch", {}), epoch_ms=0)  # SF 0.01, Materialize's default
    snap = gen.snapshot()
    counts = {k: v.num_rows for k, v in snap.items()}
    assert {k: counts[k] for k in ("region", "nation", "supplier", "customer", "part", "partsupp",
                                   "orders")} == {"region": 5, "nation": 25, "supplier": 100,
                                                  "customer": 1500, "part": 2000,
                                                  "partsupp": 8000, "orders": 15000}
    assert 55_000 < counts["lineitem"] < 65_000  # 1..7 per order, 4 on average


def test_tpch_consistency() -> None:
    gen = LoadGenerator(parse_options("tpch", {"SCALE FACTOR": "0.001", "TICK INTERVAL": "1s"}),
                        epoch_ms=0)
    snap = {k: v.to_pylist() for k, v in gen.snapshot().items()}
    assert {k: len(v) for k, v in snap.items() if k != "lineitem"} == {
        "supplier": 10, "part": 200, "partsupp": 800, "customer": 150, "orders": 1500,
        "nation": 25, "region": 5}
    assert {n["n_regionkey"] for n in snap["nation"]} == set(range(5))
    orderkeys = [o["o_orderkey"] for o in snap["orders"]]
    assert orderkeys == [order_key(i) for i in range(1, 1501)]
    assert orderkeys[:9] == [1, 2, 3, 4, 5, 6, 7, 32, 33]  # dbgen's sparse keys
    partsupp = {(p["ps_partkey"], p["ps_suppkey"]) for p in snap["partsupp"]}
    assert len(partsupp) == 800
    lines: dict[int, list[dict[str, Any]]] = {}
    for li in snap["lineitem"]:
        lines.setdefault(li["l_orderkey"], []).append(li)
        assert (li["l_partkey"], li["l_suppkey"]) in partsupp
        assert li["l_shipdate"] < li["l_receiptdate"]
        assert li["l_linestatus"] in "OF" and li["l_returnflag"] in "RAN"
    customers = {c["c_custkey"] for c in snap["customer"]}
    for o in snap["orders"]:
        ls = lines[o["o_orderkey"]]
        assert 1 <= len(ls) <= 7 and [li["l_linenumber"] for li in ls] == list(range(1, len(ls) + 1))
        statuses = {li["l_linestatus"] for li in ls}
        assert o["o_orderstatus"] == (statuses.pop() if len(statuses) == 1 else "P")
        total = sum(li["l_extendedprice"] * (1 + li["l_tax"]) * (1 - li["l_discount"]) for li in ls)
        assert abs(o["o_totalprice"] - total) <= 0.01
        assert o["o_custkey"] in customers and o["o_custkey"] % 3 != 0

    # each tick replaces one order (same key) and its lineitems
    contents = _contents(gen, 0)
    for _ in range(20):
        tick = gen.tick()
        assert set(r for r, t in tick.items() if t.num_rows) == {"orders", "lineitem"}
        changes = _rows(tick["orders"])
        assert sorted(changes.values()) == [-1, 1]
        assert len({row[0] for row in changes}) == 1
        _apply(contents, tick)  # retractions hit present rows
    assert len(contents["orders"]) == 1500
    assert len({row[0] for row in contents["orders"]}) == 1500


def test_tpch_resume_and_as_of() -> None:
    opts = {"SCALE FACTOR": "0.001", "TICK INTERVAL": "10ms", "SEED": "9"}
    spec = parse_options("tpch", opts)
    a = LoadGenerator(spec, epoch_ms=0)
    for _ in range(6):
        a.tick()
    resumed = LoadGenerator(spec, json.loads(json.dumps(a.state())))
    assert _rows(resumed.tick()["lineitem"]) == _rows(
        LoadGenerator(spec, a.state()).tick()["lineitem"])
    continuous = LoadGenerator(spec, epoch_ms=0)
    assert _contents(continuous, 13) == _contents(LoadGenerator(spec, epoch_ms=0), 13)
    folded = LoadGenerator(parse_options("tpch", {**opts, "AS OF": "8"}), epoch_ms=0)
    assert _contents(folded, 5) == _contents(LoadGenerator(spec, epoch_ms=0), 13)
    # advance_to lines a generator up with a tick count (e.g. a progress offset)
    b = LoadGenerator(spec, epoch_ms=0)
    b.advance_to(6)
    assert b.state() == a.state()


def test_state_mismatch_is_refused() -> None:
    state = LoadGenerator(parse_options("counter", {}), epoch_ms=0).state()
    with pytest.raises(WeirError) as exc:
        LoadGenerator(parse_options("auction", {}), state)
    assert _code(exc) == SqlState.INTERNAL_ERROR


# ---- SourceRunner against a real StorageController -------------------------------------------


class _Durable:
    def __init__(self) -> None:
        self.mark = 0

    def load(self) -> int:
        return self.mark

    def persist(self, ts: int) -> None:
        self.mark = max(self.mark, ts)


async def _controller(tmp: Path, durable: _Durable) -> StorageController:
    oracle = TimestampOracle(durable.load, durable.persist)
    store = ShardStore(f"sqlite:///{tmp / 'cat.db'}", str(tmp / "wh"))
    ctl = StorageController(store, oracle, tmp / "wal", tick_ms=50, persist_every_ticks=2)
    ctl.start()
    return ctl


async def _read(ctl: StorageController, sid: str) -> Counter[tuple[Any, ...]]:
    return _rows(await ctl.snapshot(sid, ctl.oracle.read_ts()))


async def _wait(pred: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not await pred():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


def test_runner_counter_ticks_and_resumes(tmp_path: Path) -> None:
    async def run() -> None:
        durable = _Durable()
        store = MemoryStateStore()
        spec = parse_options("counter", {"TICK INTERVAL": "100ms"})
        ctl = await _controller(tmp_path, durable)
        runner = SourceRunner(ctl, "u1", spec, {PRIMARY_RELATION: "u1"}, store,
                              progress_shard_id="u1_progress")
        await runner.start()

        async def at_least(n: int) -> bool:
            return len(await _read(ctl, "u1")) >= n

        await _wait(lambda: at_least(3))
        upper_before = ctl.frontiers("u1")[1]
        seen = len(await _read(ctl, "u1"))
        await _wait(lambda: at_least(seen + 2))  # two more ticks became visible: upper moved
        assert ctl.frontiers("u1")[1] > upper_before
        await runner.stop()
        rows = await _read(ctl, "u1")
        n = len(rows)
        assert rows == Counter({(v,): 1 for v in range(1, n + 1)})
        assert store.state is not None and store.state["tick"] == n
        assert await _read(ctl, "u1_progress") == Counter({(n,): 1})
        await ctl.stop()

        # restart: a new controller over the same shards, the saved state; no duplicates
        ctl = await _controller(tmp_path, durable)
        runner = SourceRunner(ctl, "u1", spec, {PRIMARY_RELATION: "u1"}, store,
                              progress_shard_id="u1_progress")
        await runner.start()
        await _wait(lambda: at_least(n + 3))
        await runner.stop()
        rows = await _read(ctl, "u1")
        assert rows == Counter({(v,): 1 for v in range(1, len(rows) + 1)})
        await ctl.stop()

    asyncio.run(run())


def test_runner_progress_shard_prevents_replay(tmp_path: Path) -> None:
    """A crash after an append but before the state save leaves a stale saved state; the
    progress relation, written in the same group commit, moves the generator past it."""

    async def run() -> None:
        durable = _Durable()
        store = MemoryStateStore()
        spec = parse_options("counter", {"TICK INTERVAL": "50ms", "MAX CARDINALITY": "4"})
        ctl = await _controller(tmp_path, durable)
        runner = SourceRunner(ctl, "c", spec, {PRIMARY_RELATION: "c"}, store,
                              progress_shard_id="c_progress")
        await runner.start()
        stale = store.state
        await _wait(lambda: _has_at_least(ctl, "c_progress", 6))
        await runner.stop()
        written = runner.generator.next_tick if runner.generator else 0
        await ctl.stop()

        store.state = stale  # the saves after the snapshot were "lost"
        ctl = await _controller(tmp_path, durable)
        runner = SourceRunner(ctl, "c", spec, {PRIMARY_RELATION: "c"}, store,
                              progress_shard_id="c_progress")
        await runner.start()
        assert runner.generator is not None and runner.generator.next_tick == written
        await _wait(lambda: _has_at_least(ctl, "c_progress", written + 3))
        await runner.stop()
        offset = runner.generator.next_tick
        assert await _read(ctl, "c") == Counter({(v,): 1 for v in range(offset - 3, offset + 1)})
        await ctl.stop()

    asyncio.run(run())


async def _has_at_least(ctl: StorageController, sid: str, offset: int) -> bool:
    rows = await _read(ctl, sid)
    return bool(rows) and next(iter(rows))[0] >= offset


def test_runner_tpch_one_group_commit_per_tick(tmp_path: Path) -> None:
    async def run() -> None:
        durable = _Durable()
        spec = parse_options("tpch", {"SCALE FACTOR": "0.001", "TICK INTERVAL": "100ms"})
        rels = [name for name, _ in subsources(spec)]
        shard_ids = {name: f"tpch_{name}" for name in rels}
        ctl = await _controller(tmp_path, durable)
        runner = SourceRunner(ctl, "tpch", spec, shard_ids, MemoryStateStore())
        await runner.start()
        snap_ts = runner.last_write_ts
        assert snap_ts is not None
        counts = {n: sum((await _read(ctl, sid)).values()) for n, sid in shard_ids.items()}
        assert counts["orders"] == 1500 and counts["region"] == 5 and counts["partsupp"] == 800

        async def ticked() -> bool:
            return runner.ticks_written >= 4

        await _wait(ticked)
        await runner.stop()
        times = {}
        for name in ("orders", "lineitem"):
            shard = ctl.collections[shard_ids[name]].shard
            upd = shard.read_updates(0, ctl.frontiers(shard_ids[name])[1])
            times[name] = set(upd.column("mz_timestamp").to_pylist()) - {snap_ts}
        assert len(times["orders"]) >= 4
        assert times["orders"] == times["lineitem"]  # each tick is one commit across relations
        orders = await _read(ctl, shard_ids["orders"])
        assert len(orders) == 1500 and all(v == 1 for v in orders.values())
        await ctl.stop()

    asyncio.run(run())


def test_runner_auction_static_and_up_to(tmp_path: Path) -> None:
    async def run() -> None:
        durable = _Durable()
        ctl = await _controller(tmp_path, durable)
        # TPCH without TICK INTERVAL: snapshot only, no ticking task left running
        static = parse_options("tpch", {"SCALE FACTOR": "0.0001"})
        runner = SourceRunner(ctl, "s", static, {"region": "s_region", "nation": "s_nation"},
                              MemoryStateStore())
        await runner.start()
        await asyncio.sleep(0.2)
        assert not runner.running and runner.ticks_written == 0
        assert len(await _read(ctl, "s_nation")) == 25

        spec = parse_options("auction", {"TICK INTERVAL": "50ms", "UP TO": "6"})
        shard_ids = {name: f"a_{name}" for name, _ in subsources(spec)}
        store = MemoryStateStore()
        runner = SourceRunner(ctl, "a", spec, shard_ids, store)
        await runner.start()

        async def done() -> bool:
            return not runner.running

        await _wait(done)
        assert runner.ticks_written == 6 and store.state is not None and store.state["tick"] == 6
        auctions = await _read(ctl, "a_auctions")
        bids = await _read(ctl, "a_bids")
        assert sum(auctions.values()) + sum(bids.values()) == 6
        assert len(await _read(ctl, "a_users")) == 4096
        await runner.stop()
        await ctl.stop()

    asyncio.run(run())


def test_runner_rejects_unknown_relations(tmp_path: Path) -> None:
    spec = parse_options("counter", {})
    with pytest.raises(WeirError):
        SourceRunner(None, "x", spec, {"bids": "x"}, MemoryStateStore())  # type: ignore[arg-type]
