"""Temporal filters without Spark: which uses of mz_now() a materialized view takes, the
thresholds query, the Spark SQL a dataflow gets, and how a dataflow finds the flip times
of a step (weir.compute.replica.temporal) from the thresholds query's answers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import sqlglot

from weir import types as T
from weir.adapter.resolver import CatalogResolver
from weir.catalog import Catalog
from weir.catalog.model import ColumnDef
from weir.compute.replica.temporal import Thresholds
from weir.errors import WeirError
from weir.sql import plan as plan_mod
from weir.sql.dialect import Weir
from weir.sql.render import SessionContext
from weir.sql.temporal import thresholds_query


def _q(sql: str) -> Any:
    return sqlglot.parse_one(sql, read=Weir)


@pytest.mark.parametrize(("sql", "flips"), [
    ("SELECT * FROM t WHERE mz_now() <= ts + INTERVAL '1 hour'", ["CAST((ts + CAST('1 hour' AS INTERVAL)) AS "
                                                                  "mz_timestamp) + 1"]),
    ("SELECT * FROM t WHERE ts < mz_now() AND a > 1", ["CAST((ts) AS mz_timestamp) + 1"]),
    ("SELECT * FROM t WHERE mz_now() >= ts", ["(ts)"]),
    ("SELECT * FROM t WHERE mz_now() = x", ["(x)", "CAST((x) AS mz_timestamp) + 1"]),
])
def test_thresholds_query(sql: str, flips: list[str]) -> None:
    got = thresholds_query(_q(sql)).sql(dialect="postgres")
    for f in flips:
        assert f"CAST({f} AS mz_timestamp) AS weir_flip" in got, got
    if "a > 1" in sql:
        assert got.endswith("WHERE a > 1")
    assert thresholds_query(_q("SELECT * FROM t WHERE a > 1")) is None


@pytest.mark.parametrize("sql", [
    "SELECT mz_now() FROM t",
    "SELECT * FROM t WHERE mz_now() <= ts OR a > 1",
    "SELECT a, count(*) FROM t GROUP BY a HAVING mz_now() < max(ts)",
    "SELECT * FROM t WHERE mz_now() < (SELECT max(ts) FROM t)",
    "SELECT * FROM t WHERE mz_now() < ts UNION SELECT * FROM t",
    "SELECT * FROM t WHERE mz_now() <> ts",
])
def test_mz_now_outside_temporal_filters_is_refused(sql: str) -> None:
    with pytest.raises(WeirError) as e:
        thresholds_query(_q(sql))
    assert e.value.sqlstate == "0A000" and "mz_now()" in e.value.message


@pytest.fixture
def resolver(tmp_path: Path) -> CatalogResolver:
    cat = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    db = cat.find_database("materialize")
    assert db is not None
    schema = cat.find_schema(db.id, "public")
    assert schema is not None
    cat.create_item("table", schema.id, "ev", [ColumnDef("id", T.INT4), ColumnDef("ts", T.TIMESTAMP)],
                    "CREATE TABLE ev (id int, ts timestamp)", {})
    return CatalogResolver(cat, "materialize", ["public"])


def _spark(resolver: CatalogResolver, query: Any, *, parameter: bool) -> str:
    plan = plan_mod.plan_query(query, [], resolver, cluster_id="u1", indexes_on=lambda _: [])
    assert plan.spark is not None
    ctx = SessionContext(timestamp=None)
    ctx.mz_now_parameter = parameter
    return plan.spark.template.render([], ctx)


def test_dataflow_sql_compares_milliseconds(resolver: CatalogResolver) -> None:
    q = _q("SELECT id FROM ev WHERE mz_now() <= ts + INTERVAL '1 hour'")
    sql = _spark(resolver, q, parameter=True)
    assert re.search(r":weir_mz_now AS BIGINT\)( AS BIGINT\))? <= UNIX_MILLIS\(CAST\(.* AS TIMESTAMP_LTZ\)\)", sql), sql
    thresholds = _spark(resolver, thresholds_query(q), parameter=False)
    assert "weir_flip" in thresholds and "UNIX_MILLIS" in thresholds.upper() and "weir_mz_now" not in thresholds


class _Session:
    """Answers the thresholds query from a list of flip times (the inputs as they stand)."""

    def __init__(self, runs: list[int], flips: list[int]) -> None:
        self.runs, self.flips = runs, flips

    def sql(self, text: str) -> Any:
        at = int(re.search(r">= (\d+)", text).group(1))  # type: ignore[union-attr]
        limit = int(re.search(r"LIMIT (\d+)", text).group(1))  # type: ignore[union-attr]
        self.runs.append(at)
        rows = sorted(f for f in set(self.flips) if f >= at)[:limit]
        return type("R", (), {"collect": lambda _self: [(f,) for f in rows]})()


def test_flip_times_per_step_and_remembered() -> None:
    runs: list[int] = []
    flips = [105, 230, 231, 900]
    th = Thresholds("SELECT ...", lambda: _Session(runs, flips), limit=3)
    bind = lambda session, t: None  # noqa: E731
    assert th.times(bind, 100, 200, []) == {105}
    assert runs == [100]
    assert th.times(bind, 200, 220, []) == set(), "the next flip (230) is remembered"
    assert runs == [100]
    assert th.times(bind, 220, 300, []) == {230, 231}
    assert runs == [100, 220]
    # an input change at 400: the segment from 400 runs the query over the new inputs
    flips[:] = [450, 950]
    assert th.times(bind, 300, 500, [400]) == {450}
    assert runs == [100, 220, 400], "300..400: nothing flips before 900 (remembered)"
    th.forget()
    assert th.times(bind, 500, 600, []) == set() and runs[-1] == 500
