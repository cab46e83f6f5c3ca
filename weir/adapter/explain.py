"""EXPLAIN [RAW | OPTIMIZED | PHYSICAL] PLAN FOR ... and EXPLAIN TIMESTAMP FOR ...

The physical plan is the Spark physical plan the query runs on a replica (Spark's own
EXPLAIN over the same temporary views), one node per line, indented."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from weir import types as T
from weir.adapter import api, planning, query
from weir.errors import SqlState, WeirError
from weir.sql import fast_path
from weir.sql import statements as st

if TYPE_CHECKING:
    from weir.adapter.session import Session

_SECTIONS = {"raw": "== Analyzed Logical Plan ==", "optimized": "== Optimized Logical Plan ==",
             "physical": "== Physical Plan =="}


async def _one(column: str, text: str) -> api.Rows:
    async def gen() -> AsyncIterator[list[tuple[Any, ...]]]:
        yield [(text,)]

    return api.Rows([api.Column(column, T.TEXT)], gen(), "EXPLAIN")


def _query_of(session: Session, stmt: st.Explain) -> exp.Expression:
    if stmt.query is not None:
        return stmt.query
    assert stmt.object_name is not None
    item = session.coord.catalog.get_item(session.coord.resolver(session).lookup(stmt.object_name).id)
    kind = "materialized-view" if stmt.object_kind == "materialized view" else "index"
    if item.kind != kind:
        raise WeirError(SqlState.WRONG_OBJECT_TYPE, f'"{item.full_name}" is not a {stmt.object_kind}')
    sql = item.definition.get("query")
    if kind == "index":  # an index on a view: the view's query, arranged
        sql = session.coord.catalog.get_item(item.definition["on_id"]).definition.get("query")
    if not sql:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"EXPLAIN of this {stmt.object_kind} not yet supported")
    import sqlglot

    return sqlglot.parse_one(sql, read="postgres")


_LABELS = {"raw": "Raw Plan", "optimized": "Optimized Plan", "physical": "Physical Plan"}


def _fast_path_text(session: Session, q: exp.Expression) -> str | None:
    """As Materialize: a query answered from an index says so, with what it reads."""
    planned = planning.plan(session, q)
    plan = fast_path.bind(planned.fast_path, [], []) if planned.fast_path is not None else None
    if plan is None:
        return None
    b = plan.body
    lines = ["Explained Query (fast path):"]
    cols = [c.name for c in plan.on.columns]
    if b["limit"] is not None or b["offset"]:
        lines.append(f"  Finish limit={b['limit']} offset={b['offset'] or 0}")
    if b["order"]:
        lines.append("  Finish order_by=[" + ", ".join(
            f"{cols[i]} {'desc' if d else 'asc'} nulls_{'first' if nf else 'last'}" for i, d, nf in b["order"]) + "]")
    lines.append("  Project (" + ", ".join(cols[i] for i in b["project"]) + ")")
    if b["filter"] is not None:
        where = q.args.get("where")
        lines.append(f"    Filter {where.this.sql(dialect='postgres') if where is not None else ''}")
    lookup = f" lookup_values=[{', '.join(repr(tuple(v)) for v in b['lookup'])}]" if b["lookup"] else ""
    lines.append(f"      ReadIndex on={plan.on.name} {plan.index.name}=[{'lookup' if lookup else 'full scan'}]"
                 f"{lookup}")
    lines += ["", "Used Indexes:", f"  - {plan.index.full_name} ({'lookup' if lookup else '*** full scan ***'})",
              "", "Target cluster: " + session.coord.current_cluster(session).name]
    return "\n".join(lines)


def _index_plan(session: Session, item: Any, stage: str) -> str | None:
    """EXPLAIN ... FOR INDEX of an index on a stored collection (no Spark plan: the
    replica arranges the shard's updates itself)."""
    d = item.definition
    if not d.get("direct"):
        return None
    on = session.coord.catalog.get_item(d["on_id"])
    keys = ", ".join(d["keys"])
    if stage == "physical":
        return (f"ArrangeBy keys=[({keys})] in replica memory\n"
                f"  ReadShardUpdates shard={on.id} ({on.full_name}) via pyarrow, no Spark job")
    return f"ArrangeBy keys=[({keys})]\n  Get {on.full_name}"


async def explain(session: Session, stmt: st.Explain) -> api.Rows:
    if stmt.stage == "timestamp":
        assert stmt.query is not None
        return await _one("Timestamp", explain_timestamp(session, stmt.query))
    if stmt.query is not None and stmt.stage in ("optimized", "physical"):
        text = _fast_path_text(session, stmt.query)
        if text is not None:
            return await _one(_LABELS[stmt.stage], text)
    if stmt.object_kind == "index":
        assert stmt.object_name is not None
        item = session.coord.catalog.get_item(session.coord.resolver(session).lookup(stmt.object_name).id)
        if item.kind != "index":
            raise WeirError(SqlState.WRONG_OBJECT_TYPE, f'"{item.full_name}" is not an index')
        text = _index_plan(session, item, stmt.stage)
        if text is not None:
            return await _one(_LABELS[stmt.stage], text)
    node_ids = "node_ids" in stmt.options or "node identifiers" in stmt.options
    strategy = _strategy(session, stmt) if stmt.stage == "physical" else ""
    if node_ids and stmt.stage == "physical" and stmt.object_kind in ("materialized view", "index"):
        text = _pinned_plan(session, stmt)
        if text is not None:
            return await _one(_LABELS[stmt.stage], strategy + text)
    q = _query_of(session, stmt)
    if stmt.stage == "raw" and "spark" not in stmt.options:
        text = q.sql(dialect="postgres", pretty=True)
        return await _one("Raw Plan", text)
    ts = session.coord.oracle.read_ts()
    plan = planning.plan(session, q, spark=True)  # a constant query too: how Spark would run it
    assert plan.spark is not None
    spark_sql = plan.spark.template.render([], session.context(ts))
    # the inputs as a read now would see them: Spark plans a scan of data files otherwise
    # than an empty input, and the plan (its node ids) should be the one a read runs
    inputs = await query.peek_inputs(session.coord, plan.inputs,
                                     max([ts, *(query.storage_since(session.coord, sid) for sid in plan.inputs)]),
                                     query.introspection_times(session.coord, plan.inputs))
    cluster = session.coord.current_cluster(session)
    mode = "FORMATTED" if node_ids and stmt.stage == "physical" else "EXTENDED"
    result = await session.coord.compute.peek(cluster.id, f"EXPLAIN {mode} " + spark_sql, inputs, None)
    table = await result.collect()
    full = table.column(0)[0].as_py() if table.num_rows else ""
    section = _section(full, _SECTIONS[stmt.stage])
    if node_ids:
        # Spark's formatted plan: its tree, each node with the id Spark numbers it by
        # (the plan node ids introspection and hydration use); the per-node details after it
        section = section.split("\n\n", 1)[0] if stmt.stage == "physical" else _number_nodes(section)
    if stmt.object_kind == "index":
        item = session.coord.catalog.get_item(session.coord.resolver(session).lookup(stmt.object_name or []).id)
        section = f"ArrangeBy keys=[({', '.join(item.definition['keys'])})] in replica memory\n" + \
            "\n".join("  " + line for line in section.splitlines())
    return await _one(_LABELS[stmt.stage], strategy + section)


def _strategy(session: Session, stmt: st.Explain) -> str:
    """How each replica maintains a materialized view (the strategy, the state it keeps, why
    not the one asked for): lines before its plan. Empty for anything else."""
    if stmt.object_kind != "materialized view":
        return ""
    coord = session.coord
    item = coord.catalog.get_item(coord.resolver(session).lookup(stmt.object_name or []).id)
    if item.kind != "materialized-view":
        return ""
    lines = []
    for replica_id, (name, explanation) in sorted(coord.compute.dataflow_strategy(item.id).items()):
        try:
            replica = coord.catalog.get_replica(replica_id).name
        except Exception:  # noqa: BLE001 - dropped meanwhile
            replica = replica_id
        lines.append(f"Strategy on replica {replica}: {name}: {explanation}\n")
    return "".join(lines)


def _pinned_plan(session: Session, stmt: st.Explain) -> str | None:
    """The plan a materialized view's or an index's dataflow runs, with the plan node ids
    pinned when it was created (weir.compute.replica.plan_ids): the ids its hydration
    statuses and operator introspection use. None before a replica has explained it."""
    coord = session.coord
    item = coord.catalog.get_item(coord.resolver(session).lookup(stmt.object_name or []).id)
    if item.kind != ("index" if stmt.object_kind == "index" else "materialized-view"):
        return None  # the query's path says what is wrong
    nodes = coord.compute.plan_nodes(item.id) or item.definition.get("plan_nodes")
    if not nodes:
        return None
    ops = [(int(i), str(name), None if parent is None else int(parent)) for i, name, parent in nodes]
    if item.kind == "index":  # the arrangement, over the view's plan
        keys = ", ".join(item.definition.get("keys") or [])
        ops = [(i, name, 0 if parent is None else parent) for i, name, parent in ops]
        ops.append((0, f"ArrangeBy keys=[({keys})]", None))
    return f"{item.full_name}:\n" + plan_tree(ops)


def plan_tree(ops: list[tuple[int, str, int | None]]) -> str:
    """(plan node id, name, parent's plan node id) as an indented tree, `Name (id)` per line."""
    children: dict[int | None, list[tuple[int, str]]] = {}
    ids = {i for i, _, _ in ops}
    for i, name, parent in ops:
        children.setdefault(parent if parent in ids else None, []).append((i, name))
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for i, name in sorted(children.get(parent, [])):  # as Spark lists them: first child first
            lines.append(f"{'  ' * depth}{name.strip()} ({i})")
            walk(i, depth + 1)

    walk(None, 0)
    return "\n".join(lines)


def _section(text: str, header: str) -> str:
    if header not in text:
        return text.strip()
    body = text.split(header, 1)[1]
    body = re.split(r"\n== [A-Za-z ]+ ==\n", "\n" + body.lstrip("\n"), maxsplit=1)[0]
    return body.strip("\n")


def _number_nodes(plan: str) -> str:
    """Prefix each operator line with its node id (the order Spark prints them)."""
    out = []
    n = 0
    for line in plan.splitlines():
        stripped = line.lstrip(" :+-*()0123456789")
        if stripped:
            n += 1
            out.append(f"{line}  [node {n}]")
        else:
            out.append(line)
    return "\n".join(out)


def explain_timestamp(session: Session, q: exp.Expression) -> str:
    coord = session.coord
    inputs = planning.plan(session, q).inputs
    oracle_ts = coord.oracle.read_ts()
    ts = query.choose_timestamp(session, inputs, for_write=True)
    fr = {sid: coord.storage.frontiers(sid) for sid in inputs}
    since = max((s for s, _ in fr.values()), default=0)
    upper = min((u for _, u in fr.values()), default=oracle_ts + 1)

    def fmt(t: int) -> str:
        return f"{t} ({dt.datetime.fromtimestamp(t / 1000, dt.UTC):%Y-%m-%d %H:%M:%S.%f}"[:-3] + ")"

    lines = [
        f"                query timestamp: {fmt(ts)}",
        f"          oracle read timestamp: {fmt(oracle_ts)}",
        f"largest not in advance of upper: {fmt(upper - 1)}",
        f"                          upper:[{fmt(upper)}]",
        f"                          since:[{fmt(since)}]",
        f"        can respond immediately: {'true' if ts < upper else 'false'}",
        "                       timeline: Some(EpochMilliseconds)",
        f"              session wall time: {fmt(int(dt.datetime.now(dt.UTC).timestamp() * 1000))}",
        "",
        "candidate timestamp: the oracle's read timestamp (strict serializable), which every "
        "completed write is at or below, moved up to every input's since",
    ]
    for sid, desc in inputs.items():
        s, u = fr[sid]
        lines += ["", f"source {desc.name} ({desc.id}, storage):",
                  f"                  read frontier:[{fmt(s)}]",
                  f"                 write frontier:[{fmt(u)}]"]
    return "\n".join(lines)
