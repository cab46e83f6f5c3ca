"""Which queries the reduce strategy keeps from deltas (weir.compute.replica.incremental.reduce),
without Spark: the shape of the Spark SQL a materialized view's dataflow runs."""

from __future__ import annotations

import pytest

from weir.compute.replica.incremental.reduce import NotReducible, Output, shape


def test_keys_and_aggregates_in_any_order() -> None:
    s = shape("SELECT g, COUNT(*) AS n, SUM(v) AS sv, COUNT(v) AS cv, SUM(CAST(b AS DECIMAL(38, 0))) AS sb, k % 3 "
              "FROM weir_u1 AS `t` WHERE v IS DISTINCT FROM 7 GROUP BY g, k % 3")
    assert (s.keys, s.arguments) == (2, 3)
    assert s.outputs == (Output("key", 0), Output("count", None), Output("sum", 0), Output("count", 1),
                         Output("sum", 2), Output("key", 1))
    assert s.pre_sql == ("SELECT g AS __k0, k % 3 AS __k1, v AS __a0, v AS __a1, CAST(b AS DECIMAL(38, 0)) AS __a2 "
                         "FROM weir_u1 AS `t` WHERE v IS DISTINCT FROM 7")


def test_a_global_aggregate_is_one_group_of_a_constant_key() -> None:
    s = shape("SELECT COUNT(*) AS n, SUM(v) AS s FROM weir_u1 AS `t` WHERE k = 3")
    assert (s.keys, s.arguments, s.is_global) == (1, 1, True)
    assert s.outputs == (Output("count", None), Output("sum", 0))
    assert s.pre_sql == "SELECT TRUE AS __k0, v AS __a0 FROM weir_u1 AS `t` WHERE k = 3"
    assert not shape("SELECT g, COUNT(*) AS n FROM t GROUP BY g").is_global


def test_distinct_is_a_group_by_of_its_select_list() -> None:
    s = shape("SELECT DISTINCT g AS x, k % 3 FROM weir_u1 AS `t` WHERE v > 1")
    assert (s.keys, s.arguments, s.is_global) == (2, 0, False)
    assert s.outputs == (Output("key", 0), Output("key", 1))
    assert s.pre_sql == "SELECT g AS __k0, k % 3 AS __k1 FROM weir_u1 AS `t` WHERE v > 1"


@pytest.mark.parametrize("sql", [
    "SELECT DISTINCT g, COUNT(*) AS n FROM t GROUP BY g",
    "SELECT DISTINCT COUNT(*) AS n FROM t",
    "SELECT DISTINCT * FROM t",
    "SELECT g, MAX(v) AS m FROM t GROUP BY g",
    "SELECT g, COUNT(DISTINCT v) AS n FROM t GROUP BY g",
    "SELECT g, SUM(v) + MAX(v) AS s FROM t GROUP BY g",  # max inside an expression
    "SELECT g, COUNT(*) AS n FROM t GROUP BY g HAVING MAX(v) > 1",
    "SELECT g, SUM(v) + v AS s FROM t GROUP BY g",  # v outside an aggregate, not a key
    "SELECT g, COUNT(*) AS n FROM t GROUP BY g HAVING v > 1",
    "SELECT DISTINCT g FROM t HAVING COUNT(*) > 1",
    "SELECT g, COUNT(*) AS n FROM t GROUP BY g LIMIT 3",
    "SELECT v, COUNT(*) AS n FROM t GROUP BY g",  # v is not a key
    "SELECT g, COUNT(*) AS n FROM t GROUP BY ROLLUP (g)",
    "SELECT g, SUM((SELECT 1)) AS n FROM t GROUP BY g",
    "SELECT g, COUNT(*) AS n FROM t GROUP BY g UNION ALL SELECT g, 1 AS n FROM t",
])
def test_what_it_does_not_keep(sql: str) -> None:
    with pytest.raises(NotReducible):
        shape(sql)


def test_arguments_become_the_integers_their_accumulators_add() -> None:
    from weir.compute.replica.incremental.reduce import _as_integers

    sql = _as_integers("SELECT g AS __k0, v AS __a0, name AS __a1, n AS __a2 FROM t", [2, 0, 0], {1})
    assert sql == ("SELECT g AS __k0, TRY_CAST(TRY_MULTIPLY((v), 100) AS BIGINT) AS __a0, "
                   "IF((name) IS NULL, CAST(NULL AS BIGINT), CAST(1 AS BIGINT)) AS __a1, n AS __a2, "
                   "NOT (v) IS NULL AND TRY_CAST(TRY_MULTIPLY((v), 100) AS BIGINT) IS NULL AS __o0 FROM t")


def test_expressions_over_groups_and_having_are_a_map_and_filter_after_them() -> None:
    """weir's avg (its sum and count, divided), arithmetic over aggregates and HAVING: the
    groups keep each distinct count / sum once; the select list and HAVING read them."""
    s = shape("SELECT g, SUM(v) * 2 AS s2, weir_numeric('div', SUM(CAST(v AS DECIMAL(38, 10))), COUNT(v)) AS a, "
              "COUNT(*) AS n FROM weir_u1 AS `t` WHERE v > 1 GROUP BY g HAVING COUNT(*) > 1 AND g <> 'x'")
    assert (s.keys, s.arguments, s.is_global) == (1, 3, False)
    assert s.outputs == (Output("key", 0), Output("sum", 0), Output("sum", 1), Output("count", 2),
                         Output("count", None))
    assert s.pre_sql == ("SELECT g AS __k0, v AS __a0, CAST(v AS DECIMAL(38, 10)) AS __a1, v AS __a2 "
                         "FROM weir_u1 AS `t` WHERE v > 1")
    assert s.groups_sql == ("SELECT g AS __g0, SUM(v) AS __g1, SUM(CAST(v AS DECIMAL(38, 10))) AS __g2, "
                            "COUNT(v) AS __g3, COUNT(*) AS __g4 FROM weir_u1 AS `t` WHERE v > 1 GROUP BY g")
    assert s.post_sql == ("SELECT __g0 AS __c0, __g1 * 2 AS __c1, WEIR_NUMERIC('div', __g2, __g3) AS __c2, "
                          "__g4 AS __c3, __weir_t, __weir_n FROM __weir_groups WHERE __g4 > 1 AND __g0 <> 'x'")
    # a global aggregate's HAVING: its one row comes and goes
    g = shape("SELECT SUM(v) AS s FROM t HAVING COUNT(*) > 0")
    assert g.is_global and g.post_sql == "SELECT __g1 AS __c0, __weir_t, __weir_n FROM __weir_groups WHERE __g2 > 0"
    # a constant beside a global aggregate
    assert shape("SELECT 1 AS one, COUNT(*) AS n FROM t").post_sql == (
        "SELECT 1 AS __c0, __g1 AS __c1, __weir_t, __weir_n FROM __weir_groups")
    # keys and aggregates alone need no map: the groups are the view
    assert shape("SELECT g, COUNT(*) AS n FROM t GROUP BY g").post_sql is None


def test_bool_and_or_count_if_and_filter_are_counts_and_sums() -> None:
    s = shape("SELECT g, BOOL_AND(b) AS ba, BOOL_OR(b) AS bo, COUNT_IF(v > 1) AS ci, "
              "COUNT(*) FILTER (WHERE v > 2) AS cf, SUM(v) FILTER (WHERE b) AS sf FROM t GROUP BY g")
    assert s.groups_sql == ("SELECT g AS __g0, COUNT(b) AS __g1, COUNT(CASE WHEN b THEN 1 END) AS __g2, "
                            "COUNT(CASE WHEN v > 1 THEN 1 END) AS __g3, COUNT(CASE WHEN v > 2 THEN 1 END) AS __g4, "
                            "SUM(CASE WHEN b THEN v END) AS __g5 FROM t GROUP BY g")
    assert s.post_sql == ("SELECT __g0 AS __c0, CASE WHEN __g1 = 0 THEN NULL ELSE __g1 = __g2 END AS __c1, "
                          "CASE WHEN __g1 = 0 THEN NULL ELSE __g2 > 0 END AS __c2, __g3 AS __c3, __g4 AS __c4, "
                          "__g5 AS __c5, __weir_t, __weir_n FROM __weir_groups")
    with pytest.raises(NotReducible):
        shape("SELECT g, COUNT(DISTINCT v) FILTER (WHERE b) AS n FROM t GROUP BY g")
