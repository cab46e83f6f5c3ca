"""Which queries the delta join keeps from deltas (weir.compute.replica.incremental.join_shape),
without Spark: how a join's Spark SQL splits into each input's part and the rest."""

from __future__ import annotations

import pytest

from weir.compute.replica.incremental.join_shape import JOINED, NotJoinable, Stage, split
from weir.compute.replica.incremental.reduce import shape

INPUTS = {"weir_u1": ["id", "k", "v"], "weir_u2": ["k", "name"]}


def test_join_then_aggregate() -> None:
    s = split("SELECT d.name, COUNT(*), SUM(e.v) FROM weir_u1 AS `e` JOIN weir_u2 AS `d` ON e.k = d.k "
              "GROUP BY d.name", INPUTS)
    left, right = s.inputs
    assert (left.name, left.alias, left.filters) == ("weir_u1", "e", ())
    assert (right.name, right.alias) == ("weir_u2", "d")
    assert s.stages == (Stage(("__c0",), ("d.k",)),)  # the key of the inputs before: a column of JOINED
    assert left.columns == (("k", "__c0"), ("v", "__c2")) and right.columns == (("name", "__c1"),)
    assert s.post_sql == f"SELECT __c1, COUNT(*), SUM(__c2) FROM {JOINED} GROUP BY __c1"
    assert shape(s.post_sql).keys == 1  # the rest is what the reduce strategy keeps


def test_conditions_go_to_their_input_or_stay_after_the_join() -> None:
    s = split("SELECT e.id, name FROM weir_u1 AS e, weir_u2 AS d WHERE d.k = e.k + 1 AND e.v > 3 "
              "AND name LIKE 'a%' AND e.v < LENGTH(d.name) AND e.id = 2 * e.v", INPUTS)
    left, right = s.inputs
    assert s.stages == (Stage(("__c0 + 1",), ("d.k",)),)
    assert left.filters == ("e.v > 3", "e.id = 2 * e.v")  # an equality within one input filters it
    assert right.filters == ("name LIKE 'a%'",)
    assert s.post_sql == f"SELECT __c1, __c2 FROM {JOINED} WHERE __c3 < LENGTH(__c2)"


def test_stars_and_unqualified_columns() -> None:
    s = split("SELECT * FROM weir_u1 JOIN weir_u2 AS d ON weir_u1.k = d.k AND v = 1", INPUTS)
    assert [c for c, _ in s.inputs[0].columns] == ["id", "k", "v"]
    assert s.inputs[0].filters == ("v = 1",)
    assert s.post_sql == f"SELECT __c1, __c0, __c2, __c3, __c4 FROM {JOINED}"
    s = split("SELECT d.* FROM weir_u1 AS a JOIN weir_u1 AS d ON a.id = d.k", {"weir_u1": INPUTS["weir_u1"]})
    assert s.inputs[0].columns == (("id", "__c0"),) and len(s.inputs[1].columns) == 3  # a self-join


def test_three_inputs_join_stage_by_stage() -> None:
    inputs = {"c": ["c_id", "seg"], "o": ["o_id", "cust", "day"], "l": ["ord", "price"]}
    s = split("SELECT o.o_id, sum(l.price) FROM c, o, l WHERE c.seg = 'B' AND c.c_id = o.cust "
              "AND l.ord = o.o_id AND o.day < l.price GROUP BY o.o_id", inputs)
    assert [i.name for i in s.inputs] == ["c", "o", "l"]
    assert s.inputs[0].filters == ("c.seg = 'B'",)
    # stage 1 meets c and o on c_id = cust; stage 2 meets (c, o) and l on o_id = ord
    assert [(st.left, st.right) for st in s.stages] == [(("__c0",), ("o.cust",)), (("__c1",), ("l.ord",))]
    assert s.post_sql == f"SELECT __c1, SUM(__c2) FROM {JOINED} WHERE __c3 < __c2 GROUP BY __c1"


def test_outer_joins_keep_their_conditions_apart() -> None:
    s = split("SELECT a.id, b.name FROM weir_u1 AS a LEFT JOIN weir_u2 AS b ON a.k = b.k AND b.name <> 'x' "
              "WHERE a.v > 1 AND b.name IS NULL", INPUTS)
    assert [st.kind for st in s.stages] == ["LEFT"] and s.stages[0].keeps(0) and not s.stages[0].keeps(1)
    assert s.inputs[0].filters == ("a.v > 1",)  # WHERE on the kept side: before the join
    assert s.inputs[1].filters == ("b.name <> 'x'",)  # ON on the padded side: before the join
    assert s.post_sql == f"SELECT __c1, __c2 FROM {JOINED} WHERE __c2 IS NULL"  # WHERE on the padded side: after
    s = split("SELECT a.id FROM weir_u1 AS a FULL OUTER JOIN weir_u2 AS b ON a.k = b.k WHERE a.v = 1", INPUTS)
    assert s.stages[0].kind == "FULL" and s.inputs[0].filters == () and "WHERE __c2 = 1" in s.post_sql
    s = split("SELECT b.k FROM weir_u1 AS a RIGHT JOIN weir_u2 AS b ON a.k = b.k AND a.v = 2", INPUTS)
    assert s.stages[0].kind == "RIGHT" and s.inputs[0].filters == ("a.v = 2",)


@pytest.mark.parametrize("sql", [
    "SELECT a.k FROM weir_u1 AS a LEFT JOIN weir_u2 AS b ON a.k = b.k AND a.v > 1",  # on the kept side
    "SELECT a.k FROM weir_u1 AS a FULL OUTER JOIN weir_u2 AS b ON a.k = b.k AND b.name = 'x'",
    "SELECT a.k FROM weir_u1 AS a LEFT JOIN weir_u2 AS b ON a.k = b.k AND a.v < LENGTH(b.name)",
    "SELECT a.k FROM weir_u1 AS a LEFT SEMI JOIN weir_u2 AS b ON a.k = b.k",
    "SELECT a.k FROM weir_u1 AS a JOIN weir_u2 AS b ON a.k < b.k",  # no equality
    "SELECT a.k FROM weir_u1 AS a CROSS JOIN weir_u2 AS b",
    "SELECT a.k FROM weir_u1 AS a JOIN weir_u2 AS b USING (k)",
    "SELECT a.k FROM weir_u1 AS a JOIN weir_u2 AS b ON a.k = b.k JOIN weir_u1 AS c ON c.v < a.k",
    "SELECT k FROM weir_u1 AS a JOIN weir_u2 AS b ON a.k = b.k",  # ambiguous
    "SELECT a.k FROM weir_u1 AS a JOIN weir_u2 AS b ON a.k = b.k WHERE a.v IN (SELECT 1)",
    "SELECT a.k FROM weir_u1 AS a JOIN (SELECT k FROM weir_u2) AS b ON a.k = b.k",
    "SELECT a.k FROM weir_u1 AS a JOIN other AS b ON a.k = b.k",
    "SELECT a.k FROM weir_u1 AS a JOIN weir_u2 AS a ON a.k = a.k",
    "SELECT a.nope FROM weir_u1 AS a JOIN weir_u2 AS b ON a.k = b.k",
    "SELECT k FROM weir_u1",
])
def test_what_it_does_not_join(sql: str) -> None:
    with pytest.raises(NotJoinable):
        split(sql, INPUTS)
