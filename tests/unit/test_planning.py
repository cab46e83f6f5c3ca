"""One planning pass per statement (weir.sql.plan): resolution happens once, the
rendered Spark SQL takes each execution's values through its slots, and the fast
path is planned with parameters left open. A real catalog (SQLite); no Spark."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import sqlglot

from weir import types as T
from weir.adapter.resolver import CatalogResolver
from weir.catalog import Catalog
from weir.catalog.model import ColumnDef
from weir.sql import fast_path
from weir.sql import plan as plan_mod
from weir.sql import resolve as resolve_mod
from weir.sql.render import SessionContext


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    db = cat.find_database("materialize")
    assert db is not None
    schema = cat.find_schema(db.id, "public")
    assert schema is not None
    t = cat.create_item("table", schema.id, "t", [ColumnDef("a", T.INT4), ColumnDef("s", T.TEXT)],
                        "CREATE TABLE t (a int, s text)", {})
    cat.create_item("view", schema.id, "v", [ColumnDef("a", T.INT4)], "CREATE VIEW v AS ...",
                    {"query": 'SELECT "t".a FROM "materialize"."public"."t" AS t WHERE a > 1'},
                    dependencies=[t.id])
    return cat


@pytest.fixture
def resolutions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every top-level resolution (a view's own query, resolved inside, is not one)."""
    seen: list[str] = []
    real = resolve_mod.resolve

    def counting(expr: Any, resolver: Any, **kwargs: Any) -> Any:
        if not kwargs.get("_depth"):
            seen.append(expr.sql())
        return real(expr, resolver, **kwargs)

    monkeypatch.setattr(plan_mod, "resolve", counting)
    return seen


def _plan(catalog: Catalog, sql: str, types: list[T.PgType] | None = None, **kwargs: Any) -> plan_mod.QueryPlan:
    resolver = CatalogResolver(catalog, "materialize", ["public"])
    return plan_mod.plan_query(sqlglot.parse_one(sql, read="postgres"), types or [], resolver,
                               cluster_id="u1", indexes_on=lambda _: [], **kwargs)


def test_a_materialized_views_query_is_resolved_once(catalog: Catalog, resolutions: list[str]) -> None:
    """What CREATE MATERIALIZED VIEW needs (dependencies, inputs, the qualified text to
    store, the Spark SQL of its dataflow) comes from one resolution."""
    plan = _plan(catalog, "SELECT v.a, t.s FROM v JOIN t ON v.a = t.a", qualify=True)
    assert len(resolutions) == 1
    assert plan.spark is not None and plan.spark.qualified is not None
    assert '"materialize"."public"."v"' in plan.spark.qualified.sql(dialect="postgres")
    assert sorted(d.name for d in plan.depends_on.values()) == ["materialize.public.t", "materialize.public.v"]
    assert [d.name for d in plan.inputs.values()] == ["materialize.public.t"]  # v expands to t
    sql = plan.spark.template.render([], SessionContext())
    assert "weir_" in sql and ":weir_" not in sql


def test_executions_fill_the_template_without_planning_again(catalog: Catalog, resolutions: list[str]) -> None:
    plan = _plan(catalog, "SELECT a / $1 AS d, s FROM t WHERE s = $2 AND a < 10 LIMIT $3", [T.INT4, T.TEXT, T.INT8])
    assert len(resolutions) == 1
    assert plan.spark is not None
    first = plan.spark.template.render([2, "it's :weir_p1", 5], SessionContext())
    second = plan.spark.template.render([3, "y", 1], SessionContext())
    assert len(resolutions) == 1
    assert "CAST(CAST(3 AS INT) AS INT)" in second and second.rstrip().endswith("LIMIT 1")
    # the integer division stays an integer division: $1 is typed in the plan
    assert "CAST(CAST(2 AS INT) AS INT)" in first
    # a value that looks like a slot is data, not a slot
    assert "it\\'s :weir_p1" in first or "it''s :weir_p1" in first
    assert first.rstrip().endswith("LIMIT 5")
    with pytest.raises(plan_mod.NeedsReplan):  # LIMIT NULL: no LIMIT at all
        plan.spark.template.render([2, "y", None], SessionContext())


def test_session_functions_take_each_executions_values(catalog: Catalog) -> None:
    plan = _plan(catalog, "SELECT a, now(), current_user FROM t")
    assert plan.spark is not None
    at = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    sql = plan.spark.template.render([], SessionContext(user="alice", statement_time=at))
    assert "'alice'" in sql and "2026-01-02 03:04:05" in sql
    sql = plan.spark.template.render([], SessionContext(user="bob", statement_time=at))
    assert "'bob'" in sql


def test_a_constant_query_is_answered_once(catalog: Catalog, resolutions: list[str]) -> None:
    plan = _plan(catalog, "SELECT 1 + 1 AS two")
    assert plan.constant and plan.constant_result is not None
    assert plan.constant_result[2] == [(2,)]
    assert plan.spark is None and resolutions == []
    # session-dependent: evaluated per execution, but planned for Spark in case it must run there
    plan = _plan(catalog, "SELECT current_user")
    assert plan.constant and plan.constant_result is None and plan.spark is not None


class _Index:
    def __init__(self, key_positions: list[int]) -> None:
        self.id, self.name, self.full_name, self.cluster_id = "u9", "t_a", "materialize.public.t_a", "u1"
        self.definition = {"key_positions": key_positions}


def test_the_fast_path_is_planned_with_parameters_open(catalog: Catalog) -> None:
    resolver = CatalogResolver(catalog, "materialize", ["public"])
    expr = sqlglot.parse_one("SELECT a, s FROM t WHERE a = $1 AND s <> 'x' LIMIT $2", read="postgres")
    plan = fast_path.plan(expr, resolver, lambda _: [_Index([0])])
    assert plan is not None
    bound = fast_path.bind(plan, [7, 3], [T.INT4, T.INT8])
    assert bound is not None
    assert bound.body["lookup"] == [["7"]] and bound.body["limit"] == 3
    assert fast_path.bind(plan, [None, 3], [T.INT4, T.INT8]) is None  # a NULL key: the slow path
    again = fast_path.bind(plan, [8, None], [T.INT4, T.INT8])
    assert again is not None and again.body["lookup"] == [["8"]] and again.body["limit"] is None


@pytest.mark.parametrize(("where", "flt"), [
    ("s IS NULL", {"op": "is_null", "args": [{"col": 1}]}),
    ("s IS NOT NULL", {"op": "is_not_null", "args": [{"col": 1}]}),  # sqlglot: Is(negate=True)
    ("NOT (s IS NOT NULL)", {"op": "not", "args": [{"op": "is_not_null", "args": [{"col": 1}]}]}),
    ("s LIKE 'a%'", {"op": "like", "args": [{"col": 1}], "pattern": "a%"}),
    ("s NOT LIKE 'a%'", {"op": "not", "args": [{"op": "like", "args": [{"col": 1}], "pattern": "a%"}]}),
])
def test_fast_path_filters_keep_their_negations(catalog: Catalog, where: str, flt: dict[str, Any]) -> None:
    """`IS NOT NULL` and `NOT LIKE` (negate=True in sqlglot's tree) were read as IS NULL / LIKE:
    the fast path answered with exactly the rows the filter excludes."""
    resolver = CatalogResolver(catalog, "materialize", ["public"])
    expr = sqlglot.parse_one(f"SELECT a, s FROM t WHERE {where}", read="postgres")
    plan = fast_path.plan(expr, resolver, lambda _: [_Index([0])])
    assert plan is not None
    bound = fast_path.bind(plan, [], [])
    assert bound is not None and bound.body["filter"] == flt


def test_integer_division_truncates_through_views_and_batches(catalog: Catalog) -> None:
    """Integer / integer is Spark's `div` wherever weir's inference knows both operands are
    integers: through an inlined view, `SELECT *` and the branches of a UNION ALL (a
    materialized view over an indexed view once divided as doubles: 1 / 2 gave 0.5)."""
    p = _plan(catalog, "SELECT 1 AS q, CAST(c AS text) AS c FROM (SELECT a / 2 AS c FROM v) x "
                       "UNION ALL SELECT 2, CAST(a / -2 AS text) FROM (SELECT * FROM v) z "
                       "UNION ALL SELECT 3, CAST(a / 2.0 AS text) FROM t")
    assert p.spark is not None
    sql = p.spark.template.render([], SessionContext())
    assert sql.count(" DIV ") == 2 and sql.count("WEIR_NUMERIC('div'") == 1, sql  # numeric: exact
