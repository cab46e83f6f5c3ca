"""`weir hydration` (weir.hydration_cli) without a server: the display from hand-made rows,
as rich's plain-text export shows it, and the command's exit codes over a fake connection."""

from __future__ import annotations

import argparse
import re
import socket
from datetime import timedelta
from typing import Any

import psycopg
import psycopg.errors
import pytest
from rich.console import Console

from weir import hydration_cli as h
from weir.cli import build_parser

MV, IDX, SMALL = "u5", "u6", "u7"
R1, R2 = "u1", "u2"


def _names(**kw: Any) -> dict[str, Any]:
    return dict(
        objects=[h.ObjectRow(MV, "big_mv", "materialized-view", "u3"),
                 h.ObjectRow(IDX, "big_idx", "index", "u4"),
                 h.ObjectRow(SMALL, "small_mv", "materialized-view", "u3")],
        schemas=[h.SchemaRow("u3", "public", "u1"), h.SchemaRow("u4", "sales", "u1")],
        databases=[h.DatabaseRow("u1", "materialize")],
        clusters=[h.ClusterRow("u1", "quickstart")],
        replicas=[h.ReplicaRow(R1, "r1", "u1"), h.ReplicaRow(R2, "r2", "u1")], **kw)


def _hydrating() -> h.Snapshot:
    """big_mv hydrating on r1 (done on r2): a plan of four nodes, two workers each, one
    node with known expectations half done, one finished, two with unknown totals."""
    ops = [(0, 0, False), (0, 1, False), (1, 0, True), (1, 1, False), (2, 0, True), (2, 1, True),
           (3, 0, False), (3, 1, False)]
    progress = [(0, 0, 10, None, 5.0, None), (0, 1, 12, None, 6.0, None),
                (1, 0, 500, 500, 0.0, None), (1, 1, 300, 500, 1500.0, timedelta(seconds=12)),
                (2, 0, 1000, 1000, 0.0, None), (2, 1, 1000, 1000, 0.0, None),
                (3, 0, 0, None, 0.0, None), (3, 1, 0, None, 0.0, None)]
    return h.Snapshot(**_names(
        statuses=[h.StatusRow(MV, R1, False, None), h.StatusRow(MV, R2, True, timedelta(seconds=3.2)),
                  h.StatusRow(IDX, R1, True, timedelta(seconds=75)),
                  h.StatusRow(SMALL, R1, True, timedelta(seconds=1))],
        operators=[h.OperatorRow(MV, n, R1, w, hyd) for n, w, hyd in ops],
        progress=[h.ProgressRow(MV, R1, n, w, rows, exp, rows * 10, None, rate, eta)
                  for n, w, rows, exp, rate, eta in progress],
        plan_nodes=[h.PlanNodeRow(MV, 0, None, "Reduce"), h.PlanNodeRow(MV, 1, 0, "Exchange"),
                    h.PlanNodeRow(MV, 2, 1, "Scan t1"), h.PlanNodeRow(MV, 3, 0, "Scan t2")]))


def _text(snapshot: h.Snapshot, target: str | None = None, width: int = 120, **kw: Any) -> str:
    console = Console(record=True, width=width, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(h.render(snapshot, target, width=width, **kw))
    return console.export_text()


def _line(text: str, start: str, having: str = "") -> str:
    """The one line of `text` that starts with `start` (and has `having`)."""
    (line,) = [ln for ln in text.splitlines() if ln.startswith(start) and having in ln]
    return line


def test_a_hydrating_object_shows_a_bar_per_plan_node_indented_by_depth() -> None:
    text = _text(_hydrating(), watching=True)
    lines = text.splitlines()
    assert lines[0].split() == ["OBJECT", "REPLICA", "STATUS", "PROGRESS", "ROWS", "WORKERS", "ROWS/S", "TIME"]
    # the object on r1, overall: hydrated nodes / all nodes
    r1 = _line(text, "big_mv", "quickstart.r1")
    assert "hydrating" in r1 and "1/4 nodes" in r1 and "━" in r1
    # its plan nodes, in tree order, one space of indent per level
    nodes = [(len(ln) - len(ln.lstrip()), re.split(r"\s{2,}", ln.strip())[0]) for ln in lines if ln.startswith(" ")]
    assert nodes == [(1, "Reduce"), (2, "Exchange"), (3, "Scan t1"), (2, "Scan t2")]
    # known expectation: a bar and processed / expected, workers, rate and ETA
    exchange = _line(text, "  Exchange")
    assert "800 / 1,000" in exchange and "1/2" in exchange and "1.5k" in exchange
    assert "ETA 12s" in exchange and "━" in exchange
    # unknown expectation: an indeterminate display and the count alone
    reduce = _line(text, " Reduce")
    assert "22 / ?" in reduce and "0/2" in reduce and "11" in reduce and "━" not in reduce
    assert "ETA" not in reduce  # unknown for its workers
    scan = _line(text, "   Scan t1")
    assert "hydrated" in scan and "2,000 / 2,000" in scan and "2/2" in scan
    # the same object on r2 and the others: hydrated, one line each, how long it took
    r2 = _line(text, "big_mv", "quickstart.r2")
    assert "hydrated" in r2 and "took 3.2s" in r2 and "━" not in r2
    assert "took 1m15s" in _line(text, "sales.big_idx")
    assert "3 of 4 hydrated (3 objects on 2 replicas)" in text
    assert "Ctrl-C" in text
    assert not h.build_view(_hydrating()).done


def test_all_hydrated() -> None:
    snap = _hydrating()
    snap.statuses = [s._replace(hydrated=True, hydration_time=timedelta(seconds=2)) for s in snap.statuses]
    view = h.build_view(snap)
    assert view.done
    text = _text(snap, watching=True)
    assert "hydrating" not in text and "Ctrl-C" not in text
    assert not [ln for ln in text.splitlines() if ln.startswith(" ")]  # no plan nodes
    assert [ln.split()[0] for ln in text.splitlines()[1:5]] == ["big_mv", "big_mv", "sales.big_idx", "small_mv"]
    assert "4 of 4 hydrated" in text


def test_a_named_object_shows_its_plan_nodes_even_hydrated() -> None:
    snap = _hydrating()
    for name in ("small_mv", "public.small_mv", "materialize.public.small_mv", '"small_mv"', "SMALL_MV", SMALL):
        assert h.resolve_target(snap, name) == [SMALL], name
    assert h.resolve_target(snap, "sales.big_idx") == [IDX]
    text = _text(snap, "big_mv")
    assert "small_mv" not in text and "big_idx" not in text
    assert "   Scan t1" in text and "took 3.2s" in text
    r2_nodes = text.split("quickstart.r2")[1]
    assert "Reduce" in r2_nodes  # r2's nodes too: plan node names come per object


def test_a_named_object_that_does_not_exist() -> None:
    with pytest.raises(h.ObjectNotFound, match="no index or materialized view named 'nope'"):
        h.build_view(_hydrating(), "nope")
    with pytest.raises(h.ObjectNotFound):
        h.build_view(_hydrating(), "sales.small_mv")  # wrong schema
    with pytest.raises(h.ObjectNotFound):
        h.build_view(_hydrating(), "u99")


def test_a_named_object_no_replica_reports_yet() -> None:
    snap = h.Snapshot(**_names(statuses=[]))
    view = h.build_view(snap, "small_mv")
    assert not view.done
    line = _line(_text(snap, "small_mv"), "small_mv")
    assert "waiting" in line and "no replica reports it yet" in line


def test_nothing_installed() -> None:
    snap = h.Snapshot(**_names(statuses=[]))
    assert h.build_view(snap).done
    assert "no index or materialized view is installed on any replica" in _text(snap)


def test_without_the_progress_and_plan_node_relations() -> None:
    """An older server (42P01 for the newer relations): object status, nodes by id with
    their workers from the per-worker statuses, and a note per missing relation."""
    snap = _hydrating()
    snap.progress = snap.plan_nodes = None
    snap.missing = ["mz_internal.mz_compute_hydration_progress", "mz_internal.mz_compute_plan_nodes"]
    text = _text(snap)
    assert " node 0" in text and " node 3" in text and "Reduce" not in text
    assert "1/2" in _line(text, " node 1") and "/ ?" not in text
    assert "no mz_internal.mz_compute_hydration_progress on this server" in text
    assert "no mz_internal.mz_compute_plan_nodes on this server: plan nodes unnamed" in text
    snap.operators = None
    snap.missing.append("mz_internal.mz_compute_operator_hydration_statuses_per_worker")
    text = _text(snap)
    r1 = _line(text, "big_mv", "quickstart.r1")
    assert "hydrating" in r1 and "nodes" not in r1  # the object alone


def testplan_order_survives_odd_trees() -> None:
    nodes = {n: h.PlanNodeRow("x", n, p, f"op{n}") for n, p in [(5, None), (3, 5), (4, 5), (9, 4), (7, 8), (8, 7)]}
    order = h.plan_order(nodes, [11])
    assert order[:4] == [(5, 0), (3, 1), (4, 1), (9, 2)]
    assert {n for n, _ in order} == {3, 4, 5, 7, 8, 9, 11}  # a cycle and an unnamed node still shown


def test_a_narrow_terminal_keeps_the_columns_that_matter() -> None:
    text = _text(_hydrating(), width=80)
    assert max(len(ln.rstrip()) for ln in text.splitlines()) <= 80
    header = text.splitlines()[0].split()
    assert "ROWS/S" not in header and {"OBJECT", "REPLICA", "STATUS", "PROGRESS", "TIME"} <= set(header)
    assert "ETA 12s" in text and "took 1m15s" in text


# ---- the command, over a fake connection ----------------------------------------------

class FakeConnection:
    """Answers each relation's query from `states` (advancing one state per read of the
    statuses); a relation mapped to an exception raises it."""

    def __init__(self, states: list[dict[str, Any]]) -> None:
        self.states = states
        self.reads = -1
        self.queries: list[str] = []

    def __enter__(self) -> FakeConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, query: str) -> Any:
        self.queries.append(query)
        relation = query.rsplit("FROM ", 1)[1].split()[0].split(".")[1]
        if relation == "mz_compute_hydration_statuses":
            self.reads = min(self.reads + 1, len(self.states) - 1)
        answer = self.states[max(self.reads, 0)][relation]
        if isinstance(answer, BaseException):
            raise answer
        return argparse.Namespace(fetchall=lambda: [tuple(r) for r in answer])


def _state(snap: h.Snapshot, **override: Any) -> dict[str, Any]:
    state = {"mz_objects": snap.objects, "mz_schemas": snap.schemas, "mz_databases": snap.databases,
             "mz_clusters": snap.clusters, "mz_cluster_replicas": snap.replicas,
             "mz_compute_hydration_statuses": snap.statuses,
             "mz_compute_operator_hydration_statuses_per_worker": snap.operators or [],
             "mz_compute_hydration_progress": snap.progress or [],
             "mz_compute_plan_nodes": snap.plan_nodes or []}
    return state | override


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["hydration", *argv])


def _run(conn: FakeConnection, *argv: str, width: int = 120) -> tuple[int, str]:
    console = Console(record=True, width=width, file=open("/dev/null", "w"))  # noqa: SIM115
    code = h.run(_args(*argv), console, connect=lambda **kw: conn)  # type: ignore[arg-type,return-value]
    return code, console.export_text()


def test_the_command_prints_once() -> None:
    conn = FakeConnection([_state(_hydrating())])
    code, text = _run(conn)
    assert code == 0 and "1/4 nodes" in text and "Ctrl-C" not in text


def test_watch_refreshes_until_all_are_hydrated() -> None:
    hydrating = _hydrating()
    done = _hydrating()
    done.statuses = [s._replace(hydrated=True) for s in done.statuses]
    done.operators = [o._replace(hydrated=True) for o in done.operators or ()]
    conn = FakeConnection([_state(hydrating), _state(hydrating), _state(done)])
    code, text = _run(conn, "--watch", "--interval", "0")
    assert code == 0 and conn.reads == 2
    assert "hydrating" not in text and "4 of 4 hydrated" in text
    # the names are read once while they cover every object and replica reported
    assert sum("mz_catalog.mz_objects" in q for q in conn.queries) == 1


def test_missing_relations_degrade_and_unknown_objects_fail(capsys: pytest.CaptureFixture[str]) -> None:
    missing = {name: psycopg.errors.UndefinedTable(f"unknown catalog item 'mz_internal.{name}'")
               for name in ("mz_compute_hydration_progress", "mz_compute_plan_nodes")}
    code, text = _run(FakeConnection([_state(_hydrating(), **missing)]), "big_mv")
    assert code == 0 and " node 2" in text and "plan nodes unnamed" in text
    code, text = _run(FakeConnection([_state(_hydrating())]), "--watch", "nope")
    assert code == 1 and text == ""
    assert capsys.readouterr().err == "weir hydration: no index or materialized view named 'nope'\n"
    # a relation the display needs: a one-line error
    broken = {"mz_compute_hydration_statuses": psycopg.errors.UndefinedTable("unknown catalog item 'x'")}
    code, _ = _run(FakeConnection([_state(_hydrating(), **broken)]))
    assert code == 1 and capsys.readouterr().err == "weir hydration: unknown catalog item 'x'\n"


def test_ctrl_c_exits_130() -> None:
    conn = FakeConnection([_state(_hydrating(), mz_compute_plan_nodes=KeyboardInterrupt())])
    assert _run(conn, "--watch")[0] == 130


def test_an_unreachable_server(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused
        code = h.run(_args("--port", str(port)), Console(file=open("/dev/null", "w")))  # noqa: SIM115
    err = capsys.readouterr().err
    assert code == 1 and err.startswith(f"weir hydration: cannot reach weir at 127.0.0.1:{port}: ")
    assert err.count("\n") == 1


def test_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    args = _args()
    assert (args.object, args.watch, args.interval, args.host, args.port, args.user, args.database) == \
        (None, False, 1.0, "127.0.0.1", 6875, "materialize", "materialize")
    monkeypatch.setenv("WEIR_SQL_PORT", "7000")
    args = _args("--watch", "--interval", "0.5", "public.mv")
    assert (args.object, args.watch, args.interval, args.port) == ("public.mv", True, 0.5, 7000)
