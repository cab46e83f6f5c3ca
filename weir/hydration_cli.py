"""`weir hydration [--watch] [object]`: how far each index and materialized view has
hydrated on each replica, with a progress bar per plan node (issue 13).

A SQL client of a running server, nothing more: it reads the hydration relations over
the PostgreSQL wire protocol (mz_internal.mz_compute_hydration_statuses,
mz_compute_operator_hydration_statuses_per_worker, mz_compute_hydration_progress,
mz_compute_plan_nodes; names from mz_catalog) and never imports the server's code, so it
works against any weir it can reach. Two halves, so the display is testable without a
server:

- `build_view` / `render` (pure): fetched rows -> a `HydrationView` -> a rich renderable;
- `fetch` / `run` (thin): one query per relation, then print once or refresh in a
  `rich.live.Live` until every displayed object has hydrated.

The overall bar of an object on a replica counts plan nodes: hydrated nodes / all nodes
(a node is hydrated when all its workers are). Rows would be the other choice, but
expectations are only known for some scans and operators downstream of a scan process
the same rows again, so a row total would neither be complete nor add up.

A server that lacks a relation the display only enriches itself with (the progress and
plan-node relations are newer than the statuses) answers 42P01; the display then does
without it and says so instead of failing.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import psycopg
import psycopg.errors
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

INDEXED_TYPES = frozenset({"index", "materialized-view"})


# ---- the rows, one NamedTuple per relation (positional, as the queries select them) ----

class ObjectRow(NamedTuple):
    id: str
    name: str
    type: str
    schema_id: str | None


class SchemaRow(NamedTuple):
    id: str
    name: str
    database_id: str | None


class DatabaseRow(NamedTuple):
    id: str
    name: str


class ClusterRow(NamedTuple):
    id: str
    name: str


class ReplicaRow(NamedTuple):
    id: str
    name: str
    cluster_id: str


class StatusRow(NamedTuple):
    object_id: str
    replica_id: str
    hydrated: bool
    hydration_time: timedelta | None


class OperatorRow(NamedTuple):
    object_id: str
    plan_node_id: int
    replica_id: str
    worker_id: int
    hydrated: bool


class ProgressRow(NamedTuple):
    object_id: str
    replica_id: str
    plan_node_id: int
    worker_id: int
    rows_processed: int
    rows_expected: int | None
    bytes_processed: int
    started_at: datetime | None
    rate_rows_per_second: float
    estimated_remaining: timedelta | None


class PlanNodeRow(NamedTuple):
    object_id: str
    plan_node_id: int
    parent_plan_node_id: int | None
    operator: str


@dataclass
class Snapshot:
    """Everything one refresh read. `progress` / `plan_nodes` / `operators` are None when
    the server has no such relation (then `missing` names it)."""

    objects: list[ObjectRow]
    statuses: list[StatusRow]
    schemas: list[SchemaRow] = field(default_factory=list)
    databases: list[DatabaseRow] = field(default_factory=list)
    clusters: list[ClusterRow] = field(default_factory=list)
    replicas: list[ReplicaRow] = field(default_factory=list)
    operators: list[OperatorRow] | None = None
    progress: list[ProgressRow] | None = None
    plan_nodes: list[PlanNodeRow] | None = None
    missing: list[str] = field(default_factory=list)


# ---- the view model --------------------------------------------------------------------

class ObjectNotFound(Exception):
    """The [object] argument names no index or materialized view."""


@dataclass
class NodeLine:
    plan_node_id: int
    operator: str
    depth: int
    hydrated: bool
    workers_hydrated: int | None  # None: no per-worker status reported
    workers: int | None
    rows_processed: int | None  # None: no progress reported
    rows_expected: int | None
    rate: float | None
    eta: timedelta | None


@dataclass
class ObjectLine:
    object_id: str
    name: str
    replica: str | None  # "cluster.replica"; None: no replica has reported it yet
    hydrated: bool
    hydration_time: timedelta | None
    nodes: list[NodeLine] | None  # None: not detailed (hydrated, and not the named one)

    @property
    def nodes_hydrated(self) -> int:
        return sum(n.hydrated for n in self.nodes or ())

    @property
    def eta(self) -> timedelta | None:
        """The object is done when its slowest node is: the largest ETA, if all are known."""
        pending = [n.eta for n in self.nodes or () if not n.hydrated]
        if not pending or any(e is None for e in pending):
            return None
        return max(e for e in pending if e is not None)


@dataclass
class HydrationView:
    lines: list[ObjectLine]
    missing: list[str]
    target: str | None

    @property
    def done(self) -> bool:
        """Every displayed object hydrated on every replica (what --watch waits for)."""
        return all(line.hydrated for line in self.lines)


def _split_name(name: str) -> list[str]:
    """`db.schema."Name"` -> parts; unquoted parts fold to lower case, as in SQL."""
    parts = []
    for quoted, bare in re.findall(r'"((?:[^"]|"")*)"|([^.]+)', name):
        parts.append(quoted.replace('""', '"') if quoted else bare.strip().lower())
    return parts


def resolve_target(snapshot: Snapshot, target: str) -> list[str]:
    """The ids of the indexes / materialized views `target` names: an id (u12), a name, or
    a schema- or database-qualified name. A bare name in several schemas names them all."""
    objects = [o for o in snapshot.objects if o.type in INDEXED_TYPES]
    by_id = [o.id for o in objects if o.id == target]
    if by_id:
        return by_id
    parts = _split_name(target)
    schemas = {s.id: s for s in snapshot.schemas}
    databases = {d.id: d.name for d in snapshot.databases}
    found = []
    for o in objects:
        schema = schemas.get(o.schema_id or "")
        qualified = [databases.get(schema.database_id or "") if schema else None,
                     schema.name if schema else None, o.name]
        if parts and qualified[-len(parts):] == parts:
            found.append(o.id)
    if not found:
        raise ObjectNotFound(f"no index or materialized view named {target!r}")
    return found


def plan_order(nodes: dict[int, PlanNodeRow], extra: Iterable[int]) -> list[tuple[int, int]]:
    """(plan node id, depth) in tree order: parents before children, siblings by id; node
    ids reported without a plan node row come last, at depth 0."""
    children: dict[int | None, list[int]] = defaultdict(list)
    for n in nodes.values():
        parent = n.parent_plan_node_id if n.parent_plan_node_id in nodes else None
        children[parent].append(n.plan_node_id)
    out: list[tuple[int, int]] = []
    seen: set[int] = set()

    def visit(node_id: int, depth: int) -> None:
        if node_id in seen:
            return
        seen.add(node_id)
        out.append((node_id, depth))
        for child in sorted(children.get(node_id, ())):
            visit(child, depth + 1)

    for root in sorted(children.get(None, ())):
        visit(root, 0)
    for node_id in sorted(set(nodes) - seen):  # a cycle: still shown, flat
        visit(node_id, 0)
    for node_id in sorted(set(extra) - seen):
        visit(node_id, 0)
    return out


def _node_lines(object_hydrated: bool, plan: dict[int, PlanNodeRow], operators: list[OperatorRow],
                progress: list[ProgressRow]) -> list[NodeLine]:
    """One object on one replica, per plan node: its workers summed (rows, rates), the
    slowest pending worker's ETA (unknown if any pending worker's is)."""
    workers: dict[int, dict[int, bool]] = defaultdict(dict)
    for op in operators:
        workers[int(op.plan_node_id)][int(op.worker_id)] = bool(op.hydrated)
    prog: dict[int, list[ProgressRow]] = defaultdict(list)
    for p in progress:
        prog[int(p.plan_node_id)].append(p)
    lines = []
    for node_id, depth in plan_order(plan, set(workers) | set(prog)):
        ws = workers.get(node_id, {})
        ps = prog.get(node_id, [])
        hydrated = all(ws.values()) if ws else object_hydrated
        expected = [p.rows_expected for p in ps]
        etas = [p.estimated_remaining for p in ps if not ws.get(int(p.worker_id), False)]
        lines.append(NodeLine(
            plan_node_id=node_id, depth=depth, hydrated=hydrated,
            operator=plan[node_id].operator if node_id in plan else f"node {node_id}",
            workers_hydrated=sum(ws.values()) if ws else None,
            workers=len(ws) if ws else (len(ps) or None),
            rows_processed=sum(int(p.rows_processed or 0) for p in ps) if ps else None,
            rows_expected=(sum(int(e) for e in expected if e is not None)
                           if ps and all(e is not None for e in expected) else None),
            rate=sum(float(p.rate_rows_per_second or 0) for p in ps) if ps else None,
            eta=(max(e for e in etas if e is not None)
                 if etas and not hydrated and all(e is not None for e in etas) else None)))
    return lines


def build_view(snapshot: Snapshot, target: str | None = None) -> HydrationView:
    """The objects to display (all indexes and materialized views with a dataflow on a
    replica, or those `target` names), one line per replica, with plan nodes for the ones
    still hydrating or named. Raises ObjectNotFound for a target that names nothing."""
    wanted = set(resolve_target(snapshot, target)) if target is not None else None
    objects = {o.id: o for o in snapshot.objects}
    clusters = {c.id: c.name for c in snapshot.clusters}
    replicas = {r.id: f"{clusters.get(r.cluster_id, r.cluster_id)}.{r.name}" for r in snapshot.replicas}
    schemas = {s.id: s.name for s in snapshot.schemas}
    plans: dict[str, dict[int, PlanNodeRow]] = defaultdict(dict)
    for n in snapshot.plan_nodes or ():
        parent = None if n.parent_plan_node_id is None else int(n.parent_plan_node_id)
        plans[n.object_id][int(n.plan_node_id)] = PlanNodeRow(n.object_id, int(n.plan_node_id), parent, n.operator)
    operators: dict[tuple[str, str], list[OperatorRow]] = defaultdict(list)
    for op in snapshot.operators or ():
        operators[(op.object_id, op.replica_id)].append(op)
    progress: dict[tuple[str, str], list[ProgressRow]] = defaultdict(list)
    for p in snapshot.progress or ():
        progress[(p.object_id, p.replica_id)].append(p)

    def display_name(object_id: str) -> str:
        o = objects.get(object_id)
        if o is None:
            return object_id
        schema = schemas.get(o.schema_id or "")
        return o.name if schema in (None, "public") else f"{schema}.{o.name}"

    lines = []
    reported = set()
    for s in snapshot.statuses:
        o = objects.get(s.object_id)
        if (wanted is not None and s.object_id not in wanted) or (o is not None and o.type not in INDEXED_TYPES):
            continue
        reported.add(s.object_id)
        detailed = not s.hydrated or wanted is not None
        key = (s.object_id, s.replica_id)
        lines.append(ObjectLine(
            object_id=s.object_id, name=display_name(s.object_id),
            replica=replicas.get(s.replica_id, s.replica_id), hydrated=bool(s.hydrated),
            hydration_time=s.hydration_time,
            nodes=_node_lines(bool(s.hydrated), plans.get(s.object_id, {}), operators.get(key, []),
                              progress.get(key, [])) if detailed else None))
    for object_id in sorted((wanted or set()) - reported):  # named, but no replica reports it yet
        lines.append(ObjectLine(object_id=object_id, name=display_name(object_id), replica=None,
                                hydrated=False, hydration_time=None, nodes=[]))
    lines.sort(key=lambda line: (line.name, line.replica or "", line.object_id))
    return HydrationView(lines=lines, missing=list(snapshot.missing), target=target)


# ---- rendering -------------------------------------------------------------------------

COLUMNS = ("OBJECT", "REPLICA", "STATUS", "PROGRESS", "ROWS", "WORKERS", "ROWS/S", "TIME")


def _count(n: float) -> str:
    return f"{n:,.0f}"


def _rate(rows_per_second: float | None) -> str:
    if rows_per_second is None:
        return ""
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if rows_per_second >= size:
            return f"{rows_per_second / size:.1f}{unit}"
    return f"{rows_per_second:.0f}"


def _duration(d: timedelta | None) -> str:
    if d is None:
        return ""
    s = max(d.total_seconds(), 0.0)
    if s < 10:
        return f"{s:.1f}s"
    m, sec = divmod(int(round(s)), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{sec:02d}s" if m else f"{sec}s")


Bar = tuple[float, float] | None  # (completed, total); None: total unknown (a spinner)


def _materialize(cell: RenderableType | Bar, bar_width: int) -> RenderableType:
    if cell is None:
        return Spinner("dots", style="cyan")  # indeterminate; animates while Live refreshes
    if isinstance(cell, tuple):
        completed, total = cell
        total = max(total, 1)
        return ProgressBar(total=total, completed=min(completed, total), width=bar_width)
    return cell


def _node_row(node: NodeLine) -> list[RenderableType | Bar]:
    label = Text(" " * (node.depth + 1) + node.operator, style="dim" if node.hydrated else "")
    bar: Bar
    if node.hydrated:
        bar = (1, 1)
    elif node.rows_expected:
        bar = (node.rows_processed or 0, node.rows_expected)
    else:
        bar = None
    if node.rows_processed is None:
        rows = ""
    elif node.rows_expected is None:
        rows = f"{_count(node.rows_processed)} / ?"
    else:
        rows = f"{_count(node.rows_processed)} / {_count(node.rows_expected)}"
    workers = "" if node.workers is None else \
        f"{'?' if node.workers_hydrated is None else node.workers_hydrated}/{node.workers}"
    status = Text("hydrated", style="green dim") if node.hydrated else ""
    rate = "" if node.hydrated else _rate(node.rate)
    eta = "" if node.hydrated or node.eta is None else f"ETA {_duration(node.eta)}"
    return [label, "", status, bar, rows, workers, rate, eta]


def _object_row(line: ObjectLine) -> list[RenderableType | Bar]:
    name = Text(line.name, style="bold")
    if line.replica is None:
        return [name, "-", Text("waiting", style="yellow"), None, "no replica reports it yet", "", "", ""]
    if line.hydrated:
        status = Text("hydrated", style="green")
        took = _duration(line.hydration_time)
        time_ = f"took {took}" if took else ""
    else:
        status = Text("hydrating", style="yellow")
        time_ = f"ETA {_duration(line.eta)}" if line.eta is not None else ""
    bar: RenderableType | Bar = ""
    progress = ""
    if line.nodes:  # overall: hydrated plan nodes / all plan nodes
        bar = (line.nodes_hydrated, len(line.nodes))
        progress = f"{line.nodes_hydrated}/{len(line.nodes)} nodes"
    elif line.nodes is not None:  # detailed, but no node reported
        bar = (1, 1) if line.hydrated else None
    return [name, line.replica, status, bar, progress, "", "", time_]


MIN_BAR, MAX_BAR = 6, 30
DROPPABLE = ("ROWS/S", "WORKERS")  # what a narrow terminal does without, in this order


def _layout(rows: list[list[RenderableType | Bar]], width: int) -> tuple[list[str], int, int]:
    """(columns, gap, bar width) that fit `width`: two spaces between columns, else one,
    else without the least needed columns; the bars get what is left. A terminal too
    narrow even then folds the OBJECT column."""
    natural = {h: max([len(h)] + [len(str(r[i])) for r in rows if isinstance(r[i], str | Text)])
               for i, h in enumerate(COLUMNS) if h != "PROGRESS"}
    columns = list(COLUMNS)

    def room(gap: int) -> int:
        return width - sum(natural.get(h, 0) for h in columns) - gap * (len(columns) - 1)

    gap = 2 if room(2) >= MIN_BAR else 1
    for drop in DROPPABLE:
        if room(gap) >= MIN_BAR:
            break
        columns.remove(drop)
    return columns, gap, max(MIN_BAR, min(MAX_BAR, room(gap)))


def render(view: HydrationView | Snapshot, target: str | None = None, *,
           watching: bool = False, width: int = 120) -> RenderableType:
    """The display for a console `width` wide: a line per object and replica and, under
    the ones still hydrating (or named), a line per plan node indented by its depth in
    the plan (one space a level: plans run deep). The bars take the width left."""
    if isinstance(view, Snapshot):
        view = build_view(view, target)
    rows: list[list[RenderableType | Bar]] = []
    for line in view.lines:
        rows.append(_object_row(line))
        rows += [_node_row(node) for node in line.nodes or ()]
    columns, gap, bar_width = _layout(rows, width)
    table = Table(box=None, pad_edge=False, padding=(0, gap, 0, 0), header_style="bold")
    for header in columns:
        if header == "OBJECT":
            table.add_column(header, overflow="fold")
        else:
            table.add_column(header, no_wrap=True, overflow="ellipsis")
    for row in rows:
        table.add_row(*(_materialize(cell, bar_width) for header, cell in zip(COLUMNS, row, strict=True)
                        if header in columns))
    if not view.lines:
        summary = Text("no index or materialized view is installed on any replica", style="dim")
    else:
        hydrated = sum(line.hydrated for line in view.lines)
        objects = len({line.object_id for line in view.lines})
        replicas = len({line.replica for line in view.lines if line.replica is not None})
        summary = Text(f"{hydrated} of {len(view.lines)} hydrated ({objects} object{'s' * (objects != 1)} "
                       f"on {replicas} replica{'s' * (replicas != 1)})", style="dim")
    parts: list[RenderableType] = [table, summary] if view.lines else [summary]
    for name in view.missing:
        parts.append(Text(f"note: no {name} on this server: {MISSING_NOTES.get(name, 'shown without it')}",
                          style="dim"))
    if watching and not view.done:
        parts.append(Text("refreshing until all are hydrated; Ctrl-C to stop", style="dim"))
    return Group(*parts)


# ---- fetching and the command ----------------------------------------------------------

NAMES = {  # attribute: (query, row type): the names, refetched only when an id is new
    "objects": ("SELECT id, name, type, schema_id FROM mz_catalog.mz_objects "
                "WHERE type IN ('index', 'materialized-view')", ObjectRow),
    "schemas": ("SELECT id, name, database_id FROM mz_catalog.mz_schemas", SchemaRow),
    "databases": ("SELECT id, name FROM mz_catalog.mz_databases", DatabaseRow),
    "clusters": ("SELECT id, name FROM mz_catalog.mz_clusters", ClusterRow),
    "replicas": ("SELECT id, name, cluster_id FROM mz_catalog.mz_cluster_replicas", ReplicaRow),
}
STATUSES = ("SELECT object_id, replica_id, hydrated, hydration_time "
            "FROM mz_internal.mz_compute_hydration_statuses", StatusRow)
OPTIONAL = {  # attribute: (query, row type, what the display lacks without it)
    "operators": ("SELECT object_id, plan_node_id, replica_id, worker_id, hydrated "
                  "FROM mz_internal.mz_compute_operator_hydration_statuses_per_worker", OperatorRow,
                  "no plan nodes' worker status"),
    "progress": ("SELECT object_id, replica_id, plan_node_id, worker_id, rows_processed, rows_expected, "
                 "bytes_processed, started_at, rate_rows_per_second, estimated_remaining "
                 "FROM mz_internal.mz_compute_hydration_progress", ProgressRow,
                 "no row counts, rates or ETAs"),
    "plan_nodes": ("SELECT object_id, plan_node_id, parent_plan_node_id, operator "
                   "FROM mz_internal.mz_compute_plan_nodes", PlanNodeRow, "plan nodes unnamed"),
}
MISSING_NOTES = {q.rsplit("FROM ", 1)[1]: note for q, _, note in OPTIONAL.values()}


def _rows(conn: psycopg.Connection[Any], query: str, row_type: Any) -> list[Any]:
    return [row_type(*r) for r in conn.execute(query).fetchall()]


def fetch(conn: psycopg.Connection[Any], previous: Snapshot | None = None) -> Snapshot:
    """One read of every relation the display uses: separate autocommit queries (a few ms
    apart is fine for a progress display). The names come from `previous` while they still
    cover every object and replica reported: each read costs the server a round of work,
    and --watch reads once a second."""
    got: dict[str, Any] = {"statuses": _rows(conn, *STATUSES), "missing": []}
    for attr, (query, row_type, _) in OPTIONAL.items():
        try:
            got[attr] = _rows(conn, query, row_type)
        except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn):
            got[attr] = None  # an older server: shown without it
            got["missing"].append(query.rsplit("FROM ", 1)[1])
    if previous is not None:
        objects = {o.id for o in previous.objects}
        replicas = {r.id for r in previous.replicas}
        if all(s.object_id in objects and s.replica_id in replicas for s in got["statuses"]):
            return Snapshot(**got, **{attr: getattr(previous, attr) for attr in NAMES})
    for attr, (query, row_type) in NAMES.items():
        got[attr] = _rows(conn, query, row_type)
    return Snapshot(**got)


def _one_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


def run(args: argparse.Namespace, console: Console | None = None,
        connect: Callable[..., psycopg.Connection[Any]] = psycopg.connect) -> int:
    """`weir hydration`: 0 when printed (or, with --watch, once all are hydrated), 1 when
    the server is unreachable or the object unknown, 130 on Ctrl-C."""
    console = console or Console()
    target: str | None = args.object
    where = f"{args.host}:{args.port}"
    try:
        conn = connect(host=args.host, port=args.port, user=args.user, dbname=args.database,
                       autocommit=True, connect_timeout=10, application_name="weir hydration")
    except psycopg.OperationalError as e:
        print(f"weir hydration: cannot reach weir at {where}: {_one_line(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    try:
        with conn:
            if not args.watch:
                console.print(render(build_view(fetch(conn), target), width=console.width))
                return 0
            return _watch(conn, target, args.interval, console)
    except ObjectNotFound as e:
        print(f"weir hydration: {e}", file=sys.stderr)
        return 1
    except psycopg.OperationalError as e:
        print(f"weir hydration: lost the connection to {where}: {_one_line(e)}", file=sys.stderr)
        return 1
    except psycopg.Error as e:
        print(f"weir hydration: {_one_line(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _watch(conn: psycopg.Connection[Any], target: str | None, interval: float, console: Console) -> int:
    """Refresh every `interval` seconds until every displayed object has hydrated. Live
    redraws in place on a terminal (the spinners animate between refreshes); elsewhere it
    prints only the final display."""
    snapshot = fetch(conn)
    view = build_view(snapshot, target)  # an unknown object fails before Live starts
    try:
        with Live(render(view, watching=True, width=console.width), console=console,
                  refresh_per_second=4, redirect_stdout=False, redirect_stderr=False) as live:
            while not view.done:
                time.sleep(interval)
                snapshot = fetch(conn, snapshot)
                view = build_view(snapshot, target)
                live.update(render(view, watching=True, width=console.width))
    finally:
        if not console.is_terminal:
            console.line()  # Live ends its last (only) print without one off a terminal
    return 0

