"""plan_nodes against Spark's own EXPLAIN FORMATTED, on a real local[1] SparkSession.

For each query shape the query runs, then the ids, names, tree structure and
codegen stages `plan_nodes` gives for its executed plan are compared with what
`explain("formatted")` prints for the same QueryExecution.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest

from weir.compute.replica.engine import spark_conf, spark_session
from weir.compute.replica.spark_plan import (
    PlanNode,
    codegen_stages,
    explain_text,
    plan_info_of,
    plan_nodes,
)
from weir.compute.sizes import DEFAULT_SIZES


def session_conf() -> dict[str, str]:
    """A replica's settings (AQE off, 1 s heartbeat) on local[1], without a UI."""
    return spark_conf(DEFAULT_SIZES["1"], {"spark_conf": {"spark.ui.enabled": "false"}})


def start_session() -> Any:
    """The process's session with those settings (getOrCreate: the test modules
    share one, which saves a JVM start)."""
    s = spark_session(session_conf())
    s.sparkContext.setLogLevel("ERROR")
    # plan ids are only stable without AQE: fail loudly if the settings lost it
    assert s.conf.get("spark.sql.adaptive.enabled") == "false"
    return s


@pytest.fixture(scope="session")
def spark(java: None) -> Iterator[Any]:
    s = start_session()
    yield s
    s.stop()


# ---- what Spark's explain prints ------------------------------------------------

_HEADER = re.compile(r"^\((\d+)\) (.*?)(?: \[codegen id : (\d+)\])?(?: \[Reuses operator id: \d+\])?$")
_TREE_ID = re.compile(r"\((\d+)\)(?: \([^()]*\))?$")
_HOST = re.compile(r"^Subquery:\d+ Hosting operator id = (\d+) ")


@dataclass
class Explained:
    names: dict[int, str] = field(default_factory=dict)
    codegen: dict[int, int | None] = field(default_factory=dict)
    parents: dict[int, int | None] = field(default_factory=dict)  # first place in a tree


def parse_explain(text: str) -> Explained:
    """Ids, names and codegen ids from the per-operator sections; parents from the
    trees (the main plan's and each subquery's, whose root hangs under its host)."""
    out = Explained()
    for line in text.splitlines():
        if (m := _HEADER.match(line)) is not None:
            out.names[int(m.group(1))] = m.group(2)
            out.codegen[int(m.group(1))] = int(m.group(3)) if m.group(3) else None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        host: int | None
        if line == "== Physical Plan ==":
            host = None
        elif (h := _HOST.match(line)) is not None:
            host = int(h.group(1))
        else:
            i += 1
            continue
        stack: list[tuple[int, int]] = []  # (depth, id)
        i += 1
        while i < len(lines) and lines[i].strip() and (t := _TREE_ID.search(lines[i])) is not None:
            depth = len(lines[i]) - len(lines[i].lstrip(" :+-"))
            while stack and stack[-1][0] >= depth:
                stack.pop()
            node = int(t.group(1))
            out.parents.setdefault(node, stack[-1][1] if stack else host)
            stack.append((depth, node))
            i += 1
    return out


def explain(df: Any) -> str:
    jvm = df.sparkSession.sparkContext._jvm
    return str(jvm.org.apache.spark.sql.api.python.PythonSQLUtils.explainString(
        df._jdf.queryExecution(), "formatted"))


def check(df: Any, codegen: bool = True) -> list[PlanNode]:
    """Run `df`, then compare plan_nodes with explain for the executed plan."""
    df.collect()
    text = explain(df)
    want = parse_explain(text)
    nodes = plan_nodes(plan_info_of(df))
    assert [(n.node_id, n.name) for n in nodes] == sorted(want.names.items()), text
    assert {n.node_id: n.parent_id for n in nodes} == want.parents, text
    if codegen:
        assert {n.node_id: n.codegen_stage for n in nodes} == want.codegen, text
    return nodes


def by_name(nodes: list[PlanNode], name: str) -> list[PlanNode]:
    return [n for n in nodes if n.name == name]


# ---- the shapes ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    a = spark.createDataFrame(pa.table({"k": list(range(100)), "v": [str(i % 7) for i in range(100)]}))
    b = spark.range(50).withColumnRenamed("id", "k")
    root = tmp_path_factory.mktemp("plans")
    spark.range(200).selectExpr("id", "id % 4 AS p", "id * 2 AS x") \
        .write.partitionBy("p").parquet(str(root / "fact"))
    spark.range(4).selectExpr("id AS p", "CAST(id AS STRING) AS name").write.parquet(str(root / "dim"))
    fact = spark.read.parquet(str(root / "fact"))
    dim = spark.read.parquet(str(root / "dim"))
    for name, df in {"a": a, "b": b, "fact": fact, "dim": dim}.items():
        df.createOrReplaceTempView(name)
    return {"a": a, "b": b, "fact": fact, "dim": dim}


def test_group_by_with_shuffle(spark: Any, tables: dict[str, Any]) -> None:
    from pyspark.sql import functions as F

    a = tables["a"]
    nodes = check(a.groupBy((F.col("k") % 3).alias("g")).agg(F.count(F.lit(1)).alias("n")))
    assert [n.name for n in nodes] == ["LocalTableScan", "HashAggregate", "Exchange", "HashAggregate"]
    exchange = by_name(nodes, "Exchange")[0]
    assert exchange.exchange == "hashpartitioning" and exchange.codegen_stage is None
    assert "shuffle records written" in exchange.metrics
    acc, kind = by_name(nodes, "LocalTableScan")[0].metrics["number of output rows"]
    assert kind == "sum" and acc > 0
    assert all(n.exchange is None for n in nodes if n.name != "Exchange")
    # ordering puts every sort key through a range shuffle
    nodes = check(a.orderBy("v"))
    assert by_name(nodes, "Exchange")[0].exchange == "rangepartitioning"
    # a global aggregate gathers into one partition
    nodes = check(a.agg(F.sum("k")))
    assert by_name(nodes, "Exchange")[0].exchange == "SinglePartition"


def test_broadcast_join(spark: Any, tables: dict[str, Any]) -> None:
    from pyspark.sql import functions as F

    nodes = check(tables["a"].join(F.broadcast(tables["b"]), "k"))
    join = by_name(nodes, "BroadcastHashJoin")[0]
    exchange = by_name(nodes, "BroadcastExchange")[0]
    assert exchange.exchange == "broadcast" and exchange.parent_id == join.node_id
    # built on the left: Spark's explain gives the streamed side the build side's
    # codegen id (a counter shared across siblings); the tree (and plan_nodes) do not
    nodes = check(F.broadcast(tables["b"]).join(tables["a"], "k", "right"), codegen=False)
    join = by_name(nodes, "BroadcastHashJoin")[0]
    assert by_name(nodes, "LocalTableScan")[0].codegen_stage == join.codegen_stage


def test_sort_merge_join(spark: Any, tables: dict[str, Any]) -> None:
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        nodes = check(tables["a"].join(tables["b"], "k"))
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    join = by_name(nodes, "SortMergeJoin")[0]
    sorts = by_name(nodes, "Sort")
    assert [s.parent_id for s in sorts] == [join.node_id, join.node_id]
    assert [n.exchange for n in by_name(nodes, "Exchange")] == ["hashpartitioning"] * 2


def test_union(spark: Any, tables: dict[str, Any]) -> None:
    nodes = check(tables["a"].select("k").union(tables["b"].select("k")))
    union = by_name(nodes, "Union")[0]
    assert union.parent_id is None and len([n for n in nodes if n.parent_id == union.node_id]) == 2


def test_filter_project_over_arrow(spark: Any, tables: dict[str, Any]) -> None:
    from pyspark.sql import functions as F

    query: Callable[[], Any] = lambda: tables["a"].where("k > 5").select((F.col("k") + 1).alias("k1"), "v")  # noqa: E731
    # by default the optimizer folds both into the local relation
    assert [n.name for n in check(query())] == ["LocalTableScan"]
    rule = "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation"
    spark.conf.set("spark.sql.optimizer.excludedRules", rule)
    try:
        nodes = check(query())
    finally:
        spark.conf.unset("spark.sql.optimizer.excludedRules")
    assert [n.name for n in nodes] == ["LocalTableScan", "Filter", "Project"]
    assert [n.parent_id for n in nodes] == [2, 3, None]
    assert {n.codegen_stage for n in nodes} == {1}
    assert nodes[1].description.startswith("Filter ") and len(nodes[1].description) <= 200


def test_cached_dataframes(spark: Any, tables: dict[str, Any]) -> None:
    from pyspark.sql import functions as F

    counted = tables["fact"].groupBy("p").agg(F.count(F.lit(1)).alias("n")).cache()
    busy = counted.where("n > 1").cache()
    try:
        nodes = check(counted.groupBy("n").agg(F.sum("p")))
        scan = by_name(nodes, "InMemoryTableScan")[0]
        relation = by_name(nodes, "InMemoryRelation")[0]
        assert (scan.node_id, relation.node_id, relation.parent_id) == (1, 2, 1)
        # the cached plan, numbered under its relation
        assert [n.parent_id for n in nodes if n.parent_id == relation.node_id] == [relation.node_id]
        check(busy.selectExpr("p + 1 AS q", "n"))  # a cache inside a cache
        # one cached plan reached twice: counted once, as explain's identity map does
        nodes = check(counted.join(busy, "p"))
        assert len(by_name(nodes, "Scan parquet ")) == 1
    finally:
        busy.unpersist()
        counted.unpersist()


def test_scalar_subqueries(spark: Any, tables: dict[str, Any]) -> None:
    nodes = check(spark.sql("SELECT * FROM a WHERE k > (SELECT avg(k) FROM b)"))
    host = by_name(nodes, "Filter")[0]
    sub_root = max(nodes, key=lambda n: n.node_id)
    assert sub_root.name == "HashAggregate" and sub_root.parent_id == host.node_id
    # merged, reused and nested subqueries
    check(spark.sql(
        "SELECT k, (SELECT max(k) FROM b) m FROM a WHERE k > (SELECT avg(k) FROM b) "
        "AND k < (SELECT max(k) FROM b WHERE k < (SELECT min(k) + 40 FROM b))"))


def test_reused_exchanges(spark: Any, tables: dict[str, Any]) -> None:
    nodes = check(spark.sql(
        "WITH x AS (SELECT id % 5 g, count(*) c FROM fact GROUP BY 1) "
        "SELECT * FROM x l JOIN x r ON l.g = r.g"))
    reused = by_name(nodes, "ReusedExchange")[0]
    assert reused.exchange == "hashpartitioning" and not any(n.parent_id == reused.node_id for n in nodes)
    # dynamic partition pruning: the subquery's broadcast, reused by the join
    nodes = check(spark.sql("SELECT f.id, d.name FROM fact f JOIN dim d ON f.p = d.p WHERE d.name = '3'"))
    assert by_name(nodes, "ReusedExchange")[0].exchange == "broadcast"
    broadcast = by_name(nodes, "BroadcastExchange")[0]
    assert broadcast.parent_id == by_name(nodes, "Scan parquet ")[0].node_id  # its host


def test_explain_text_and_codegen_stages(spark: Any, tables: dict[str, Any]) -> None:
    from pyspark.sql import functions as F

    df = tables["a"].groupBy((F.col("k") % 3).alias("g")).count()
    df.collect()
    info = plan_info_of(df)
    assert explain_text(plan_nodes(info)) == "\n".join([
        "HashAggregate (4)",
        "  Exchange (3)",
        "    HashAggregate (2)",
        "      LocalTableScan (1)",
    ])
    stages = codegen_stages(info)
    assert [(s.stage_id, s.node_ids) for s in stages] == [(1, (1, 2)), (2, (4,))]
    assert stages[0].metrics["duration"][1] == "timing"


def test_plan_from_listener_json_shape() -> None:
    """The JSON a SQLExecutionStart carries (no Spark needed)."""
    def node(name: str, *children: dict[str, Any], accs: tuple[int, ...] = ()) -> dict[str, Any]:
        return {"nodeName": name, "simpleString": name + " x\ny", "children": list(children),
                "metadata": {}, "metrics": [{"name": f"m{a}", "accumulatorId": a, "metricType": "sum"}
                                            for a in accs]}

    info = node("WholeStageCodegen (1)", node("Project", node("Filter", node("Range", accs=(3,)), accs=(2,))),
                accs=(1,))
    nodes = plan_nodes(info)
    assert [(n.node_id, n.name, n.parent_id, n.codegen_stage) for n in nodes] == [
        (1, "Range", 2, 1), (2, "Filter", 3, 1), (3, "Project", None, 1)]
    assert nodes[0].metrics == {"m3": (3, "sum")} and nodes[0].description == "Range x y"
