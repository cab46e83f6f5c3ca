"""Materialized-view dataflows: real replica processes (local[1] Spark) maintaining
output shards on real Iceberg shards; the test plays the coordinator (it writes the
input shards and announces their uppers)."""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.integration.dataflow_env import (
    Env,
    Row,
    expected_log,
    output_log,
    sums,
    wait_upper,
)
from tests.integration.test_compute import LoopThread
from weir import types as T
from weir.compute.controller import ComputeController
from weir.errors import WeirError
from weir.orchestrator.process import ProcessOrchestrator
from weir.storage.frontiers import Fenced
from weir.storage.persist import Shard, ShardStore

pytestmark = pytest.mark.integration

@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, java: None) -> Iterator[Env]:
    data: Path = tmp_path_factory.mktemp("dataflow")
    storage = {"catalog_uri": f"sqlite:///{data / 'catalog.db'}", "warehouse": str(data / "warehouse")}
    store = ShardStore(storage["catalog_uri"], storage["warehouse"])
    lt = LoopThread()
    orch = ProcessOrchestrator(log_dir=data / "logs", min_backoff=0.2)
    e = Env(lt, orch, ComputeController(orch, ready_timeout=150, storage_config=storage), store)
    lt.run(e.ctl.add_replica("c1", "r1", "1", lambda: e.next_incarnation("r1")))
    e.online("r1", 1)
    # r2 boots while the first tests run; it gets their dataflows replayed when it connects.
    lt.run(e.ctl.add_replica("c1", "r2", "1", lambda: e.next_incarnation("r2")))
    try:
        yield e
    finally:
        lt.run(e.ctl.stop(), timeout=60)
        lt.close()


def test_aggregate_is_maintained_exactly(env: Env) -> None:
    inp = env.input("agg_in")
    inp.append([((1, 10), 1), ((2, 20), 1), ((1, 5), 1)], 5)
    inp.append([((3, 7), 1)], 8, upper=11)
    out = env.store.create_shard("agg_out", [("k", T.INT4, True), ("s", T.INT8, True)], initial_upper=10)
    sql = "SELECT k, sum(v) AS s FROM weir_in GROUP BY k"
    assert env.create("agg", sql, {"weir_in": "agg_in"}, out, as_of=10) == "recompute"
    wait_upper(out, 11)
    assert Counter(tuple(r.values()) for r in out.read(10).to_pylist()) == sums(inp.at(10))
    # Retractions and updates, found through the input's durable upper.
    inp.append([((1, 10), -1), ((2, 1), 1)], 12)
    inp.append([((3, 7), -1)], 15, upper=16)
    wait_upper(out, 16)
    # An announced upper ahead of the durable one lets the view advance (no changes).
    env.announce({"agg_in": 30})
    wait_upper(out, 30)
    inp.append([((4, 1), 1), ((4, 1), 1)], 31, upper=32)
    env.announce({"agg_in": 40})
    u = wait_upper(out, 40)
    times = [10, 12, 15, 31]
    assert output_log(out, u) == expected_log(lambda t: sums(inp.at(t)), times)
    # Peeks keep working beside the dataflow.
    peek = env.lt.run(env.ctl.peek("c1", "SELECT 1 AS one", [], 1))
    assert env.lt.run(peek.collect()).to_pylist() == [{"one": 1}]
    frontiers = env.ctl.write_frontiers()["agg"]
    assert frontiers["r1"] >= 40
    env.drop("agg")
    assert "agg" not in env.ctl.write_frontiers()
    stopped = out.frontiers().upper
    env.announce({"agg_in": 60})
    time.sleep(2)
    assert out.frontiers().upper == stopped


def test_join_with_several_changes_per_interval(env: Env) -> None:
    a = env.input("join_a", [("k", T.INT4, False), ("name", T.TEXT, True)])
    b = env.input("join_b", [("k", T.INT4, False), ("w", T.INT8, False)])
    a.append([((1, "x"), 1), ((2, "y"), 1)], 100)
    b.append([((1, 10), 1), ((2, 20), 1), ((2, 21), 1)], 100)
    out = env.store.create_shard("join_out", [("k", T.INT4, True), ("name", T.TEXT, True),
                                              ("w", T.INT8, True)], initial_upper=100)
    sql = "SELECT a.k, a.name, b.w FROM weir_a a JOIN weir_b b ON a.k = b.k"
    env.create("join", sql, {"weir_a": "join_a", "weir_b": "join_b"}, out, as_of=100)
    wait_upper(out, 101)
    # Two input changes at different times land in one interval.
    a.append([((2, "y"), -1), ((2, "z"), 1), ((3, "q"), 1)], 105, upper=110)
    b.append([((3, 30), 1), ((1, 10), -1)], 107, upper=110)
    u = wait_upper(out, 110)

    def join(t: int) -> Counter[Row]:
        res: Counter[Row] = Counter()
        for (ka, name), na in a.at(t).items():
            for (kb, w), nb in b.at(t).items():
                if ka == kb:
                    res[(ka, name, w)] += na * nb
        return res

    assert output_log(out, u) == expected_log(join, [100, 105, 107])
    env.drop("join")


def test_linear_strategy_matches_recompute(env: Env) -> None:
    cols = [("k", T.INT4, False), ("v", T.INT8, False), ("name", T.TEXT, True)]
    inp = env.input("lin_in", cols)
    inp.append([((1, 1, "a"), 1), ((2, 5, "x"), 1), ((3, 9, None), 2)], 200, upper=201)
    out_cols = [("k", T.INT4, True), ("v2", T.INT8, True), ("n", T.TEXT, True)]
    outs = {s: env.store.create_shard(f"lin_{s}", out_cols, initial_upper=200)
            for s in ("linear", "recompute")}
    sql = ("SELECT k, v * 2 AS v2, upper(name) AS n FROM weir_l WHERE v > 1 "
           "UNION ALL SELECT k, v, name FROM weir_l WHERE name = 'x'")
    for s, out in outs.items():
        assert env.create(f"lin_{s}", sql, {"weir_l": "lin_in"}, out, as_of=200, strategy=s) == s
    # A query that is not linear falls back to recomputing.
    agg_out = env.store.create_shard("lin_agg", [("n", T.INT8, True)], initial_upper=200)
    assert env.create("lin_agg", "SELECT count(*) AS n FROM weir_l", {"weir_l": "lin_in"}, agg_out,
                      as_of=200, strategy="linear") == "recompute"
    env.drop("lin_agg")
    for out in outs.values():
        wait_upper(out, 201)
    inp.append([((2, 5, "x"), -1), ((4, 0, "x"), 1), ((3, 9, None), 1)], 203)
    inp.append([((1, 1, "a"), -1), ((1, 2, "a"), 1)], 206, upper=210)
    inp.append([((3, 9, None), -3)], 212, upper=215)
    env.announce({"lin_in": 220})

    def query(t: int) -> Counter[Row]:
        res: Counter[Row] = Counter()
        for (k, v, name), n in inp.at(t).items():
            if v > 1:
                res[(k, v * 2, name.upper() if name is not None else None)] += n
            if name == "x":
                res[(k, v, name)] += n
        return res

    expected = expected_log(query, [200, 203, 206, 212])
    for out in outs.values():
        assert output_log(out, wait_upper(out, 220))
    logs = {s: output_log(out, 220) for s, out in outs.items()}
    assert logs["linear"] == logs["recompute"] == expected
    for s in outs:
        env.drop(f"lin_{s}")


def test_reduce_strategy_matches_the_query_under_random_changes(env: Env) -> None:
    """GROUP BY with count / sum, a global aggregate and a SELECT DISTINCT kept from deltas
    (state as runs on the executors) give the query's very changes, per time, over a seeded
    stream of inserts and deletes with NULL keys and values, several times per interval,
    both replicas racing for each one. (The model is the query computed here; recompute
    is held to the same model by the join test and the differential suite.)"""
    env.online("r2", 1)
    cols = [("k", T.INT4, False), ("g", T.TEXT, True), ("v", T.INT8, True)]
    inp = env.input("red_in", cols)
    rng = random.Random(28)
    live: list[Row] = []

    def changes(n: int) -> list[tuple[Row, int]]:
        out: list[tuple[Row, int]] = []
        for _ in range(n):
            if live and rng.random() < 0.4:
                out.append((live.pop(rng.randrange(len(live))), -1))
            else:
                row = (rng.randrange(10), rng.choice([None, "a", "b", "c"]),
                       rng.choice([None, *range(-5, 20)]))
                live.append(row)
                out.append((row, 1))
        return out

    inp.append(changes(30), 400, upper=401)
    out_cols = [("g", T.TEXT, True), ("n", T.INT8, True), ("c", T.INT8, True), ("s", T.INT8, True),
                ("m", T.INT4, True)]
    outs = {"reduce": env.store.create_shard("red_reduce", out_cols, initial_upper=400)}
    sql = ("SELECT g, count(*) AS n, count(v) AS c, sum(v) AS s, k % 3 AS m FROM weir_r "
           "WHERE k <> 7 GROUP BY g, k % 3")
    assert env.create("red_reduce", sql, {"weir_r": "red_in"}, outs["reduce"], as_of=400, strategy="reduce") == "reduce"
    # a global aggregate: one row always, also while its (filtered) input is empty
    global_cols = [("n", T.INT8, True), ("c", T.INT8, True), ("s", T.INT8, True)]
    global_sql = "SELECT count(*) AS n, count(v) AS c, sum(v) AS s FROM weir_r WHERE k = 3 AND g = 'a'"
    outs["g_reduce"] = env.store.create_shard("red_g_reduce", global_cols, initial_upper=400)
    assert env.create("red_g_reduce", global_sql, {"weir_r": "red_in"}, outs["g_reduce"], as_of=400,
                      strategy="reduce") == "reduce"
    # SELECT DISTINCT: a GROUP BY of its select list
    outs["d_reduce"] = env.store.create_shard("red_d_reduce", [("g", T.TEXT, True), ("m", T.INT4, True)],
                                              initial_upper=400)
    assert env.create("red_d_reduce", "SELECT DISTINCT g, k % 3 AS m FROM weir_r WHERE v > 10",
                      {"weir_r": "red_in"}, outs["d_reduce"], as_of=400, strategy="reduce") == "reduce"
    # arithmetic over aggregates and HAVING: a map and a filter after the groups
    outs["p_reduce"] = env.store.create_shard("red_p_reduce", [("g", T.TEXT, True), ("x", T.INT8, True),
                                                               ("c", T.INT8, True)], initial_upper=400)
    assert env.create("red_p_reduce", "SELECT g, sum(v) * 2 + count(*) AS x, count(v) AS c FROM weir_r "
                      "GROUP BY g HAVING count(*) > 2 AND sum(v) IS NOT NULL", {"weir_r": "red_in"},
                      outs["p_reduce"], as_of=400, strategy="reduce") == "reduce"
    outs["gp_reduce"] = env.store.create_shard("red_gp_reduce", [("n1", T.INT8, True)], initial_upper=400)
    assert env.create("red_gp_reduce", "SELECT count(*) + 1 AS n1 FROM weir_r WHERE k = 3 HAVING count(*) > 0",
                      {"weir_r": "red_in"}, outs["gp_reduce"], as_of=400, strategy="reduce") == "reduce"
    # bool_and / bool_or, count_if and FILTER: counts and sums of CASE WHEN
    outs["b_reduce"] = env.store.create_shard("red_b_reduce", [
        ("g", T.TEXT, True), ("ba", T.BOOL, True), ("bo", T.BOOL, True), ("ci", T.INT8, True),
        ("cf", T.INT8, True), ("sf", T.INT8, True)], initial_upper=400)
    assert env.create("red_b_reduce", "SELECT g, bool_and(v > 3) AS ba, bool_or(v > 10) AS bo, count_if(v > 5) AS ci, "
                      "count(*) FILTER (WHERE k > 4) AS cf, sum(v) FILTER (WHERE k < 5) AS sf FROM weir_r GROUP BY g",
                      {"weir_r": "red_in"}, outs["b_reduce"], as_of=400, strategy="reduce") == "reduce"
    # what it cannot keep from deltas (max) it recomputes
    mx_out = env.store.create_shard("red_max", [("g", T.TEXT, True), ("mx", T.INT8, True)], initial_upper=400)
    assert env.create("red_max", "SELECT g, max(v) AS mx FROM weir_r GROUP BY g", {"weir_r": "red_in"},
                      mx_out, as_of=400, strategy="reduce") == "recompute"
    env.drop("red_max")
    times, t = [400], 400
    for round_ in range(8):
        for _ in range(rng.choice((1, 3))):  # several times in one interval, now and then
            t += rng.randrange(1, 4)
            inp.append(changes(rng.randrange(1, 6)), t, upper=t + 1)
            times.append(t)
        if round_ % 3 == 0:
            for out in outs.values():
                wait_upper(out, t + 1, timeout=300)  # five views on two replicas, beside another worker

    def query(at: int) -> Counter[Row]:
        groups: dict[tuple[Any, int], list[Any]] = {}
        for (k, g, v), n in inp.at(at).items():
            if k == 7:
                continue
            acc = groups.setdefault((g, k % 3), [0, 0, 0])
            acc[0] += n
            if v is not None:
                acc[1] += n
                acc[2] += v * n
        return Counter({(g, n, c, s if c else None, m): 1 for (g, m), (n, c, s) in groups.items()})

    def global_query(at: int) -> Counter[Row]:
        n = c = total = 0
        for (k, g, v), w in inp.at(at).items():
            if k == 3 and g == "a":
                n += w
                c += w if v is not None else 0
                total += w * (v or 0)
        return Counter({(n, c, total if c else None): 1})

    def distinct_query(at: int) -> Counter[Row]:
        return Counter({(g, k % 3): 1 for (k, g, v), w in inp.at(at).items() if w > 0 and v is not None and v > 10})

    def post_query(at: int) -> Counter[Row]:
        groups: dict[Any, list[int]] = {}
        for (_, g, v), w in inp.at(at).items():
            acc = groups.setdefault(g, [0, 0, 0])
            acc[0] += w
            acc[1] += w if v is not None else 0
            acc[2] += w * (v or 0)
        return Counter({(g, s * 2 + n, c): 1 for g, (n, c, s) in groups.items() if n > 2 and c > 0})

    def bool_query(at: int) -> Counter[Row]:
        groups: dict[Any, list[tuple[int, Any, int]]] = {}
        for (k, g, v), w in inp.at(at).items():
            groups.setdefault(g, []).extend([(k, v, 1)] * w)
        out: Counter[Row] = Counter()
        for g, rows in groups.items():
            vs = [v for _, v, _ in rows if v is not None]
            sf = [v for k, v, _ in rows if v is not None and k < 5]
            out[(g, all(v > 3 for v in vs) if vs else None, any(v > 10 for v in vs) if vs else None,
                 sum(v > 5 for v in vs), sum(k > 4 for k, _, _ in rows), sum(sf) if sf else None)] = 1
        return out

    def global_post_query(at: int) -> Counter[Row]:
        n = sum(w for (k, _, _), w in inp.at(at).items() if k == 3)
        return Counter({(n + 1,): 1} if n > 0 else {})

    env.announce({"red_in": t + 5})
    logs = {s: output_log(out, wait_upper(out, t + 5)) for s, out in outs.items()}
    assert logs["d_reduce"] == expected_log(distinct_query, times)
    assert logs["reduce"] == expected_log(query, times)
    assert logs["g_reduce"] == expected_log(global_query, times)
    assert logs["p_reduce"] == expected_log(post_query, times)
    assert logs["gp_reduce"] == expected_log(global_post_query, times)
    assert logs["b_reduce"] == expected_log(bool_query, times)
    assert any(not global_post_query(at) for at in times) and any(global_post_query(at) for at in times)
    assert any(global_query(at) == Counter({(0, 0, None): 1}) for at in times), "never empty: a weak test"
    assert any(global_query(at) != Counter({(0, 0, None): 1}) for at in times), "always empty: a weak test"
    # still kept from deltas on both replicas (a failure of its own would have fallen back)
    deadline = time.monotonic() + 30
    while True:
        runs = [env.ctl.replicas[r].last_status.get("dataflows", {}).get(d, {}) for r in ("r1", "r2")
                for d in ("red_reduce", "red_g_reduce", "red_d_reduce", "red_p_reduce", "red_gp_reduce",
                          "red_b_reduce")]
        if all(s.get("write_frontier") == t + 5 for s in runs) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert [s.get("strategy") for s in runs] == ["reduce"] * 12, runs
    for s in outs:
        env.drop(f"red_{s}")


def test_small_inputs_recompute_until_they_pass_the_threshold(env: Env) -> None:
    """A reduce view with min_updates 40 recomputes while its input holds fewer updates
    (no state built), then keeps its groups from deltas once it holds more; its changes are
    the query's at every time across the switch, on both replicas."""
    inp = env.input("small_in")
    out = env.store.create_shard("small_out", [("k", T.INT4, True), ("n", T.INT8, True), ("s", T.INT8, True)],
                                 initial_upper=700)
    inp.append([((k % 3, k), 1) for k in range(10)], 700, upper=701)
    sql = "SELECT k, count(*) AS n, sum(v) AS s FROM weir_s GROUP BY k"
    assert env.create("small", sql, {"weir_s": "small_in"}, out, as_of=700, strategy="reduce", min_updates=40) == "reduce"

    def query(at: int) -> Counter[Row]:
        groups: dict[int, list[int]] = {}
        for (k, v), w in inp.at(at).items():
            acc = groups.setdefault(k, [0, 0])
            acc[0] += w
            acc[1] += w * v
        return Counter({(k, n, s): 1 for k, (n, s) in groups.items() if n})

    times, t = [700], 700
    for _ in range(3):  # 10 + 3 * 5 < 40 updates: recomputed
        t += 2
        inp.append([((t % 3, t), 1), ((1, 1), -1), ((1, 1), 1), ((2, t), 1), ((0, 5), 1)], t, upper=t + 1)
        times.append(t)
        env.announce({"small_in": t + 1})
        wait_upper(out, t + 1)
    small = [env.status(r, "small") for r in ("r1", "r2")]
    assert all(s.get("small", 0) > 0 and not any(row[1] for op in s.get("state", []) for row in op)
               for s in small if s), small
    assert any(small), small
    for _ in range(3):  # past 40: kept from deltas, its state built from the inputs
        t += 2
        inp.append([((k % 3, k), 1) for k in range(t, t + 8)] + [((0, 5), -1)], t, upper=t + 1)
        times.append(t)
        env.announce({"small_in": t + 1})
        wait_upper(out, t + 1)
    assert output_log(out, t + 1) == expected_log(query, times)
    deadline = time.monotonic() + 30
    while True:
        big = [env.status(r, "small") for r in ("r1", "r2")]
        built = [s for s in big if s and sum(row[1] for op in s.get("state", []) for row in op) > 0]
        if built or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert built and all(s.get("strategy") == "reduce" for s in built), big
    env.drop("small")


def test_views_from_deltas_take_an_interval_of_many_times_in_one_step(env: Env) -> None:
    """An input written many times a second (one timestamp per write) is taken by a view kept
    from deltas (reduce, linear) in one step per interval, whatever its number of times: at
    16 times a step a join + aggregate view over a table written ten times a second fell
    ever further behind (bench/freshness.py saw no change within a minute)."""
    env.online("r2", 1)
    inp = env.input("many_in")
    inp.append([((1, 1), 1), ((2, 2), 1)], 600, upper=601)
    outs = {"reduce": env.store.create_shard("many_reduce", [("k", T.INT4, True), ("s", T.INT8, True)],
                                             initial_upper=600),
            "linear": env.store.create_shard("many_linear", [("k", T.INT4, True), ("v", T.INT8, True)],
                                             initial_upper=600)}
    sqls = {"reduce": "SELECT k, sum(v) AS s FROM weir_m GROUP BY k",
            "linear": "SELECT k, v FROM weir_m WHERE v % 2 = 0"}
    for strategy, out in outs.items():
        assert env.create(f"many_{strategy}", sqls[strategy], {"weir_m": "many_in"}, out, as_of=600,
                          strategy=strategy) == strategy
    for out in outs.values():
        wait_upper(out, 601, timeout=300)

    def computed() -> dict[str, int]:
        """Steps that ran Spark work, per view, over both replicas, once both report the upper."""
        deadline = time.monotonic() + 60
        while True:
            runs = {(r, d): env.ctl.replicas[r].last_status.get("dataflows", {}).get(f"many_{d}", {})
                    for r in ("r1", "r2") for d in outs}
            if all(st.get("write_frontier") == outs[d].frontiers().upper for (_, d), st in runs.items()):
                return {d: sum(st.get("computed", 0) for (_, e), st in runs.items() if e == d) for d in outs}
            assert time.monotonic() < deadline, runs
            time.sleep(0.2)

    before = computed()
    # 40 writes at 40 times, durable in one append: one interval for the views
    times = list(range(610, 650))
    rows = [((k % 5, k), 1) for k in range(40)]
    f = inp.shard.frontiers()
    data = pa.table({"k": pa.array([r[0] for r, _ in rows], pa.int32()),
                     "v": pa.array([r[1] for r, _ in rows], pa.int64()),
                     "mz_timestamp": pa.array(times, pa.int64()), "mz_diff": pa.array([1] * 40, pa.int64())})
    inp.shard.compare_and_append(data, f.upper, 651, 0)
    inp.updates += [(r, t, d) for (r, d), t in zip(rows, times, strict=True)]
    env.announce({"many_in": 651})
    for out in outs.values():
        wait_upper(out, 651, timeout=300)
    steps = {d: n - before[d] for d, n in computed().items()}
    # one step each on whichever replica won (the other may have computed it too, then lost)
    assert all(1 <= n <= 2 for n in steps.values()), steps

    def reduce_query(t: int) -> Counter[Row]:
        sums_: Counter[int] = Counter()
        for (k, v), n in inp.at(t).items():
            sums_[k] += v * n
        return Counter({(k, v): 1 for k, v in sums_.items()})

    def linear_query(t: int) -> Counter[Row]:
        return Counter({r: n for r, n in inp.at(t).items() if r[1] % 2 == 0})

    assert output_log(outs["reduce"], 651) == expected_log(reduce_query, [600, *times])
    assert output_log(outs["linear"], 651) == expected_log(linear_query, [600, *times])
    for d in outs:
        env.drop(f"many_{d}")


@pytest.mark.timeout(900)
def test_join_strategies_match_recompute_under_random_changes(env: Env) -> None:
    """A delta join (strategy "join"), a join + GROUP BY (strategy "reduce" over a delta
    join) and a join of three inputs + GROUP BY (two join stages) under a seeded stream of
    inserts and deletes on every input, several times per
    interval now and then: every time's changes equal the queries' own, on both replicas
    (which must both still run the strategy)."""
    rng = random.Random(2828)
    e = env.input("dj_e", [("id", T.INT8, False), ("k", T.INT4, True), ("v", T.INT4, True)])
    d = env.input("dj_d", [("k", T.INT8, True), ("name", T.TEXT, True)])
    r = env.input("dj_r", [("name", T.TEXT, True), ("region", T.INT4, True)])
    live: dict[str, list[Row]] = {"e": [], "d": [], "r": []}
    ids = iter(range(1, 10_000))

    def changes(side: str, n: int) -> list[tuple[Row, int]]:
        out: list[tuple[Row, int]] = []
        for _ in range(n):
            if live[side] and rng.random() < 0.4:
                out.append((live[side].pop(rng.randrange(len(live[side]))), -1))
            else:
                k = rng.choice([None, *range(6)])
                name = rng.choice([None, "a", "b", "c", "z"])
                row = ((next(ids), k, rng.choice([None, *range(-3, 9)])) if side == "e"
                       else (k, name) if side == "d" else (name, rng.choice([None, 1, 2])))
                live[side].append(row)
                out.append((row, 1))
        return out

    e.append(changes("e", 25), 500, upper=501)
    d.append(changes("d", 8), 500, upper=501)
    r.append(changes("r", 5), 500, upper=501)
    inputs = {"weir_e": "dj_e", "weir_d": "dj_d", "weir_r": "dj_r"}
    views = {
        "join": ("SELECT e.id, e.v, d.name FROM weir_e AS e JOIN weir_d AS d ON e.k = d.k AND d.name <> 'z' "
                 "WHERE e.v < length(d.name) + 5",
                 [("id", T.INT8, True), ("v", T.INT4, True), ("name", T.TEXT, True)]),
        # a decimal's sum is kept as its unscaled integers; a count of text counts non-NULLs
        "reduce": ("SELECT d.name, count(*) AS n, sum(e.v) AS s, sum(e.v * 1.5) AS h, count(d.name) AS c "
                   "FROM weir_e AS e, weir_d AS d WHERE d.k = e.k GROUP BY d.name",
                   [("name", T.TEXT, True), ("n", T.INT8, True), ("s", T.INT8, True), ("h", T.NUMERIC, True),
                    ("c", T.INT8, True)]),
        # outer joins: the kept side's unmatched rows padded with NULLs (NULL keys never match)
        "left": ("SELECT e.id, e.k, d.name FROM weir_e AS e LEFT JOIN weir_d AS d ON e.k = d.k AND d.name <> 'z'",
                 [("id", T.INT8, True), ("k", T.INT4, True), ("name", T.TEXT, True)]),
        "full": ("SELECT d.name, count(*) AS n, count(e.id) AS c FROM weir_e AS e FULL OUTER JOIN weir_d AS d "
                 "ON e.k = d.k GROUP BY d.name",
                 [("name", T.TEXT, True), ("n", T.INT8, True), ("c", T.INT8, True)]),
        "three": ("SELECT r.region, count(*) AS n, sum(e.v) AS s FROM weir_e AS e JOIN weir_d AS d ON e.k = d.k "
                  "JOIN weir_r AS r ON r.name = d.name GROUP BY r.region",
                  [("region", T.INT4, True), ("n", T.INT8, True), ("s", T.INT8, True)]),
    }
    strategy = {"join": "join", "reduce": "reduce", "three": "reduce", "left": "join", "full": "reduce"}
    outs: dict[str, Shard] = {}
    for kind, (sql, cols) in views.items():
        outs[kind] = out = env.store.create_shard(f"dj_{kind}", cols, initial_upper=500)
        assert env.create(f"dj_{kind}", sql, inputs, out, as_of=500, strategy=strategy[kind]) == strategy[kind]
    times, t = [500], 500
    for round_ in range(6):
        for _ in range(rng.choice((1, 3))):  # several times in one interval, now and then
            t += rng.randrange(1, 4)
            upper = t + 1
            e.append(changes("e", rng.randrange(0, 6)), t, upper=upper)
            d.append(changes("d", rng.randrange(0, 3)), t, upper=upper)
            r.append(changes("r", rng.randrange(0, 2)), t, upper=upper)
            times.append(t)
        if round_ % 3 == 0:
            for out in outs.values():
                wait_upper(out, t + 1, timeout=300)  # five views on two replicas, beside another worker

    def joined(at: int) -> list[tuple[Row, Row, int]]:
        return [(a, b, na * nb) for a, na in e.at(at).items() for b, nb in d.at(at).items()
                if a[1] is not None and a[1] == b[0]]

    def outer(at: int, keep_right: bool, right_ok: Callable[[Row], bool] = lambda b: True) -> list[Any]:
        es, ds = e.at(at), Counter({b: n for b, n in d.at(at).items() if right_ok(b)})
        out: list[Any] = [(a, b, na * nb) for a, na in es.items() for b, nb in ds.items()
                          if a[1] is not None and a[1] == b[0]]
        out += [(a, None, na) for a, na in es.items() if not any(a[1] is not None and a[1] == b[0] for b in ds)]
        if keep_right:
            out += [(None, b, nb) for b, nb in ds.items() if not any(a[1] is not None and a[1] == b[0] for a in es)]
        return out

    def left_query(at: int) -> Counter[Row]:
        out: Counter[Row] = Counter()
        for a, b, n in outer(at, False, lambda b: b[1] is not None and b[1] != "z"):
            out[(a[0], a[1], b[1] if b else None)] += n
        return out

    def full_query(at: int) -> Counter[Row]:
        groups: dict[Any, list[int]] = {}
        for a, b, n in outer(at, True):
            acc = groups.setdefault(b[1] if b else None, [0, 0])
            acc[0] += n
            acc[1] += n if a is not None else 0
        return Counter({(g, n, c): 1 for g, (n, c) in groups.items() if n})

    def join_query(at: int) -> Counter[Row]:
        out: Counter[Row] = Counter()
        for a, b, n in joined(at):
            if b[1] is not None and b[1] != "z" and a[2] is not None and a[2] < len(b[1]) + 5:
                out[(a[0], a[2], b[1])] += n
        return out

    def reduce_query(at: int, three: bool = False) -> Counter[Row]:
        groups: dict[Any, list[Any]] = {}
        rows = joined(at)
        if three:
            rows = [(a, (c[1],), n * nc) for a, b, n in rows for c, nc in r.at(at).items()
                    if b[1] is not None and b[1] == c[0]]
        for a, b, n in rows:
            acc = groups.setdefault(b[1] if not three else b[0], [0, 0, 0])
            acc[0] += n
            if a[2] is not None:
                acc[1] += n
                acc[2] += a[2] * n
        if three:
            return Counter({(g, n, s if c else None): 1 for g, (n, c, s) in groups.items()})
        return Counter({(g, n, s if c else None, Decimal(s) * Decimal("1.5") if c else None, n if g is not None else 0): 1
                        for g, (n, c, s) in groups.items()})

    env.announce({"dj_e": t + 5, "dj_d": t + 5, "dj_r": t + 5})
    for kind, query in (("join", join_query), ("reduce", reduce_query), ("left", left_query), ("full", full_query),
                        ("three", lambda at: reduce_query(at, three=True))):
        assert output_log(outs[kind], wait_upper(outs[kind], t + 5, timeout=300)) == expected_log(query, times), kind
    deadline = time.monotonic() + 30
    while True:
        runs = {kind: [env.ctl.replicas[r].last_status.get("dataflows", {}).get(f"dj_{kind}", {})
                       for r in ("r1", "r2")] for kind in views}
        if all(s.get("write_frontier") == t + 5 for r in runs.values() for s in r) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for kind, statuses in runs.items():
        assert [s.get("strategy") for s in statuses] == [strategy[kind]] * 2, statuses
    for kind in views:
        env.drop(f"dj_{kind}")


def test_invalid_queries_are_refused_at_creation(env: Env) -> None:
    env.input("bad_in")
    out = env.store.create_shard("bad_out", [("k", T.INT4, True)], initial_upper=0)
    with pytest.raises(WeirError) as e:
        env.create("bad1", "SELECT nope FROM weir_in", {"weir_in": "bad_in"}, out, as_of=0)
    assert e.value.sqlstate == "42703"
    with pytest.raises(WeirError) as e:
        env.create("bad2", "SELECT k, v FROM weir_in", {"weir_in": "bad_in"}, out, as_of=0)
    assert e.value.sqlstate == "42804"
    assert env.ctl.write_frontiers() == {}


def test_replicas_share_the_output_and_survive_a_kill(env: Env) -> None:
    lt, ctl = env.lt, env.ctl
    env.online("r2", 1)
    inp = env.input("rep_in")
    inp.append([((1, 1), 1), ((2, 2), 1)], 300, upper=301)
    out = env.store.create_shard("rep_out", [("k", T.INT4, True), ("s", T.INT8, True)], initial_upper=300)
    # kept from deltas (the reduce strategy): the restarted replica rebuilds its state
    assert env.create("rep", "SELECT k, sum(v) AS s FROM weir_in GROUP BY k", {"weir_in": "rep_in"}, out,
                      as_of=300, strategy="reduce") == "reduce"
    times = [300]
    t = 300
    deadline = time.monotonic() + 60
    while min(ctl.write_frontiers()["rep"].get(r, 0) for r in ("r1", "r2")) < 301:
        assert time.monotonic() < deadline, ctl.write_frontiers()
        time.sleep(0.2)
    for i in range(3):  # announced to both at once: they race for each interval
        t += 10
        inp.append([((1, i), 1), ((i + 3, 1), 1)], t, upper=t + 1)
        env.announce({"rep_in": t + 1})
        times.append(t)
        wait_upper(out, t + 1)

    def stats() -> list[dict[str, Any]]:
        return [ctl.replicas[r].last_status.get("dataflows", {}).get("rep", {}) for r in ("r1", "r2")]

    deadline = time.monotonic() + 30
    while sum(s.get("lost", 0) + s.get("followed", 0) for s in stats()) < 1 or \
            min(s.get("write_frontier") or 0 for s in stats()) < t + 1:
        assert time.monotonic() < deadline, stats()
        time.sleep(0.2)
    epoch = ctl.writer_epoch("c1")
    assert epoch is not None
    # Kill r1: r2 keeps the view up to date while the orchestrator restarts r1.
    pid = env.orch.pid("r1")
    assert pid is not None
    # its incarnation now: an earlier test of the module may have seen it restarted
    life = next(s.incarnation for s in ctl.replica_statuses() if s.replica_id == "r1")
    os.killpg(pid, signal.SIGKILL)
    for i in range(2):
        t += 10
        inp.append([((2, 2), -1), ((2, 3 + i), 1)] if i == 0 else [((2, 3), -1)], t, upper=t + 1)
        times.append(t)
        wait_upper(out, t + 1)
    env.online("r1", life + 1)
    t += 10
    inp.append([((9, 9), 1)], t, upper=t + 1)
    times.append(t)
    env.announce({"rep_in": t + 5})
    u = wait_upper(out, t + 5)
    assert output_log(out, u) == expected_log(lambda x: sums(inp.at(x)), times)
    # The restarted replica hydrated from the output and follows it.
    deadline = time.monotonic() + 60
    while ctl.write_frontiers()["rep"].get("r1", 0) < t + 5:
        assert time.monotonic() < deadline, ctl.write_frontiers()
        time.sleep(0.2)
    # Writers of the old epoch (a zombie r1) are fenced once a newer one appended.
    new_epoch = ctl.writer_epoch("c1")
    assert new_epoch is not None and new_epoch > epoch
    assert out.frontiers().epoch > epoch
    with pytest.raises(Fenced):
        f = out.frontiers()
        out.compare_and_append(None, f.upper, f.upper + 1, epoch)
    # Alone now, r1 is killed while its output is quiet: its checkpoint is the output's
    # upper, so the restarted r1 resumes its state instead of rebuilding it, and the next
    # changes (only r1 writes them) come out right.
    lt.run(ctl.drop_replica("r2"))

    def r1_at(upper: int, incarnation: int) -> dict[str, Any]:
        deadline = time.monotonic() + 60
        while True:
            status = ctl.replicas["r1"].last_status
            r1 = status.get("dataflows", {}).get("rep", {})
            if status.get("incarnation") == incarnation and r1.get("write_frontier") == upper:
                return r1
            assert time.monotonic() < deadline, status
            time.sleep(0.2)

    for change in ([((1, 5), 1), ((11, 2), 1)], [((3, 1), -1), ((12, 1), 1)]):
        t += 10
        inp.append(change, t, upper=t + 1)
        times.append(t)
        env.announce({"rep_in": t + 1})
        r1 = r1_at(t + 1, life + 1 if change[0][0] == (1, 5) else life + 2)
        if change[0][0] == (1, 5):  # r1's state is the output's (it wrote the last interval)
            pid = env.orch.pid("r1")
            assert pid is not None
            os.killpg(pid, signal.SIGKILL)
            env.online("r1", life + 2)
            r1 = r1_at(t + 1, life + 2)
            assert r1.get("resumed") == 1 and r1.get("strategy") == "reduce", r1
    assert r1.get("appended") == 1, r1  # the interval after the restart, from the resumed state
    assert output_log(out, wait_upper(out, t + 1)) == expected_log(lambda x: sums(inp.at(x)), times)
    env.drop("rep")
