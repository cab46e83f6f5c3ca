"""The join class of issue 10 at the rendering level (no Spark): what weir hands Spark
must keep every operand of a parenthesised join and PostgreSQL's comma precedence."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from weir.sql.render import to_spark
from weir.sql.resolve import ColumnDesc, RelationDesc, resolve
from weir.types import INT4


class Tables:
    """A catalog of plain tables t, u and a view v (over t)."""

    def lookup(self, parts: list[str]) -> RelationDesc:
        name = parts[-1]
        cols = [ColumnDesc("a", INT4), ColumnDesc("b", INT4)]
        if name == "v":
            return RelationDesc("v", "materialize.public.v", "view", cols,
                                view_sql="SELECT a, b FROM materialize.public.t")
        return RelationDesc(name, f"materialize.public.{name}", "table", cols, shard_id=f"s{name}")


def spark(sql: str) -> str:
    return to_spark(resolve(sqlglot.parse_one(sql, read="postgres"), Tables()).expr)


def test_parenthesised_cross_join_keeps_both_operands() -> None:
    out = spark("SELECT count(*) FROM (t AS x CROSS JOIN t AS y)")
    assert out.count("weir_st") == 2, out
    assert "CROSS JOIN" in out, out


def test_parenthesised_join_over_a_view_keeps_its_operands() -> None:
    out = spark("SELECT count(*) FROM (v AS x JOIN u AS y ON x.a = y.a) LEFT JOIN t AS z ON z.a = x.a")
    assert "weir_su" in out and out.count("weir_st") == 2, out


def test_comma_binds_looser_than_join() -> None:
    out = spark("SELECT * FROM t AS x, t AS y RIGHT JOIN u AS z ON y.a = z.a")
    tree = sqlglot.parse_one(out, read="spark")
    joins = tree.args["joins"]
    # x, (y RIGHT JOIN z): the right join is inside a parenthesised second FROM item
    assert len(joins) == 1 and isinstance(joins[0].this, exp.Subquery), out
    assert "RIGHT JOIN" in joins[0].this.sql(dialect="spark"), out


def test_first_from_item_keeps_its_joins() -> None:
    out = spark("SELECT * FROM t x JOIN u y USING (a), t w RIGHT JOIN u z ON w.a = z.a, u q")
    assert out.count("USING") == 1 and "(weir_st AS `w` RIGHT JOIN" in out.replace('"', "`"), out


def test_stored_view_definition_keeps_parenthesised_operands() -> None:
    q = resolve(sqlglot.parse_one("SELECT * FROM (t AS x CROSS JOIN u AS y)", read="postgres"), Tables(),
                qualify=True).qualified
    assert q is not None
    assert q.sql(dialect="postgres").count("public") == 2, q.sql(dialect="postgres")


def test_alias_column_names_survive_binding() -> None:
    """`J1_TBL t1 (a, b, c) NATURAL JOIN J2_TBL t2 (d, a)` (PostgreSQL's join.sql) joins on
    the renamed columns."""
    out = spark("SELECT * FROM t AS x (c, d) NATURAL JOIN u AS y (d, e)").replace('"', "`")
    assert "`x`(c, d)" in out.replace(" (", "(") and "`y`(d, e)" in out.replace(" (", "("), out
    assert "AS x(c, d)" in spark("SELECT * FROM v AS x (c, d)").replace(" (", "(")


def test_comma_before_a_join_of_values_lists_parses_in_spark() -> None:
    """`FROM a(x), b(y) RIGHT JOIN c(z)` over VALUES lists: the grouped item is Spark SQL
    (sqlglot put the joins of a VALUES list before its alias: a syntax error)."""
    out = spark("SELECT a.x, b.y, c.z FROM (VALUES (1)) a(x), (VALUES (2)) b(y) "
                "RIGHT JOIN (VALUES (3)) c(z) ON b.y = c.z")
    tree = sqlglot.parse_one(out, read="spark")
    (join,) = tree.args["joins"]
    assert isinstance(join.this, exp.Subquery) and "AS b(y) RIGHT JOIN" in join.this.sql(dialect="spark"), out
