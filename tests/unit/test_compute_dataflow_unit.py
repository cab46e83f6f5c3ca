"""Dataflows without Spark: the linear rewrite, CreateDataflow parsing, the controller's
replay and epochs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from weir.compute.controller.dataflows import DataflowControl, InstalledDataflow
from weir.compute.protocol import Message
from weir.compute.replica.dataflow_spec import DataflowSpec
from weir.compute.replica.linear import NotLinear, linear_rewrite
from weir.errors import WeirError

VIEWS = {"weir_u1": ["a", "b"], "weir_u2": ["a", "b"]}


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT a, b + 1 AS c FROM weir_u1 AS x WHERE a > 1 ORDER BY a",
     "SELECT a, b + 1 AS c, `__weir_t`, `__weir_d` FROM weir_u1 AS x WHERE a > 1"),
    ("SELECT * FROM weir_u1 UNION ALL SELECT x.* FROM weir_u2 x",
     "SELECT `a`, `b`, `__weir_t`, `__weir_d` FROM weir_u1 UNION ALL "
     "SELECT x.`a`, x.`b`, `__weir_t`, `__weir_d` FROM weir_u2 AS x"),
    ("SELECT * FROM (SELECT a, b * 2 AS bb FROM weir_u1 WHERE b > 0) s WHERE bb < 10",
     "SELECT `a`, `bb`, `__weir_t`, `__weir_d` FROM (SELECT a, b * 2 AS bb, `__weir_t`, `__weir_d` "
     "FROM weir_u1 WHERE b > 0) AS s WHERE bb < 10"),
    ("SELECT explode(array(a, b)) AS e FROM WEIR_U1",
     "SELECT EXPLODE(ARRAY(a, b)) AS e, `__weir_t`, `__weir_d` FROM WEIR_U1"),
])
def test_linear_queries_carry_time_and_diff(sql: str, expected: str) -> None:
    assert linear_rewrite(sql, VIEWS) == expected


@pytest.mark.parametrize("sql", [
    "SELECT a, count(*) FROM weir_u1 GROUP BY a",
    "SELECT sum(a) FROM weir_u1",
    "SELECT DISTINCT a FROM weir_u1",
    "SELECT a FROM weir_u1 JOIN weir_u2 USING (a)",
    "SELECT a FROM weir_u1, weir_u2",
    "SELECT a FROM weir_u1 WHERE a IN (SELECT a FROM weir_u2)",
    "SELECT a FROM weir_u1 UNION SELECT a FROM weir_u2",
    "SELECT a FROM weir_u1 EXCEPT ALL SELECT a FROM weir_u2",
    "SELECT a FROM weir_u1 LIMIT 3",
    "SELECT 1 AS x",
    "SELECT a FROM other_table",
    "WITH t AS (SELECT a FROM weir_u1) SELECT a FROM t",
    "SELECT a, row_number() OVER (ORDER BY a) FROM weir_u1",
    "SELECT * FROM (SELECT a + 1 FROM weir_u1) s",
    "SELECT a AS __weir_t FROM weir_u1 WHERE __weir_t > 0",
    "SELECT FROM WHERE",
])
def test_other_queries_are_not_linear(sql: str) -> None:
    with pytest.raises(NotLinear):
        linear_rewrite(sql, VIEWS)


def test_create_dataflow_parsing() -> None:
    body = {"type": "CreateDataflow", "dataflow_id": "u7", "sql": "SELECT a FROM weir_u1",
            "inputs": [{"name": "weir_u1", "shard_id": "u1",
                        "columns": [{"name": "a", "pg_type": "integer", "nullable": True}]}],
            "output": {"shard_id": "u7"}, "as_of": 5, "strategy": "linear"}
    spec = DataflowSpec.from_body(body)
    assert (spec.output_shard_id, spec.as_of, spec.inputs[0].column_names) == ("u7", 5, ("a",))
    assert spec.same_definition(DataflowSpec.from_body({**body, "as_of": 9}))
    assert not spec.same_definition(DataflowSpec.from_body({**body, "sql": "SELECT 1"}))
    with pytest.raises(WeirError) as e:
        DataflowSpec.from_body({**body, "strategy": "magic"})
    assert e.value.sqlstate == "22023"
    with pytest.raises(WeirError) as e:
        DataflowSpec.from_body({k: v for k, v in body.items() if k != "output"})
    assert e.value.sqlstate == "08P01"


class _Out:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send_nowait(self, body: dict[str, Any]) -> None:
        self.sent.append(body)


class _Conn:
    def __init__(self, replica: Any) -> None:
        self.replica, self.out, self.closed = replica, _Out(), False


def test_controller_replays_dataflows_and_hands_out_epochs() -> None:
    replicas = {r: SimpleNamespace(replica_id=r, cluster_id="c1", conn=None) for r in ("r1", "r2")}
    followed: list[tuple[str, str | None, int]] = []  # (output, errors shard, upper) storage follows
    control = DataflowControl(SimpleNamespace(replicas=replicas, on_write_frontier=lambda *a: followed.append(a)),  # type: ignore[arg-type]
                              epoch=7)
    e1 = control.next_epoch("c1")
    replicas["r1"].conn = _Conn(replicas["r1"])
    df = InstalledDataflow("c1", "u9", "SELECT 1", [], "u9", as_of=100, strategy="recompute")
    control.dataflows["u9"] = df
    control.update_input_frontiers({"u1": 50})
    assert replicas["r1"].conn.out.sent[-1] == {"type": "UpdateInputFrontiers", "uppers": {"u1": 50}}
    control.update_input_frontiers({"u1": 40})  # never backwards
    assert control.uppers == {"u1": 50}
    assert control.on_message(replicas["r1"].conn, Message({"type": "Frontiers", "dataflow_id": "u9",
                                                            "write_frontier": 130}))
    assert control.write_frontiers() == {"u9": {"r1": 130}}
    assert followed == [("u9", None, 130)]
    # r2 connects: a newer epoch for the cluster, announced to r1; r2 gets the replay.
    e2 = control.next_epoch("c1")
    assert e2 > e1 > 7 * 1_000_000
    assert replicas["r1"].conn.out.sent[-1] == {"type": "SetWriterEpoch", "epoch": e2}
    replicas["r2"].conn = _Conn(replicas["r2"])
    control.on_connected(replicas["r2"].conn)
    sent = replicas["r2"].conn.out.sent
    assert sent[0] == {"type": "UpdateInputFrontiers", "uppers": {"u1": 50}}
    assert sent[1]["type"] == "CreateDataflow" and sent[1]["as_of"] == 129
    control.allow_compaction("c1", "u9", 140)
    assert df.command()["as_of"] == 140


def test_a_completed_hydrations_row_counts_go_to_every_later_create_dataflow() -> None:
    """The update that completes a hydration (`final`) fixes each plan node's rows per
    worker: later CreateDataflows carry them, the coordinator takes them once per change."""
    replicas = {"r1": SimpleNamespace(replica_id="r1", cluster_id="c1", conn=None)}
    control = DataflowControl(SimpleNamespace(replicas=replicas), epoch=7)  # type: ignore[arg-type]
    conn = _Conn(replicas["r1"])
    replicas["r1"].conn = conn
    df = InstalledDataflow("c1", "u9", "SELECT 1", [], "u9", as_of=100, strategy="recompute")
    df.row_counts = [[3, [1]]]  # from the catalog
    control.dataflows["u9"] = df
    assert control.take_row_counts() == {} and df.command()["row_counts"] == [[3, [1]]]
    status = {"type": "HydrationStatus", "dataflow_id": "u9"}
    control.on_message(conn, Message({**status, "reset": True, "updates": [[3, 0, False, 4, None, 0, None, None],
                                                                           [3, 1, False, 2, None, 0, None, None]]}))
    assert df.row_counts == [[3, [1]]]  # still hydrating
    control.on_message(conn, Message({**status, "updates": [[3, 1, True, 6, None, 0, None, None]], "final": True}))
    assert df.command()["row_counts"] == [[3, [4, 6]]]
    assert control.take_row_counts() == {"u9": [[3, [4, 6]]]} and control.take_row_counts() == {}
    spec = DataflowSpec.from_body({**df.command(), "output": {"shard_id": "u9"}})
    assert spec.row_counts == {3: [4, 6]} and spec.same_definition(DataflowSpec.from_body(
        {**df.command(), "row_counts": None}))
