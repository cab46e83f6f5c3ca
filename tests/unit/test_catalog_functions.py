"""PostgreSQL's catalog functions and reg* casts rewritten as SQL over pg_catalog's
relations (weir.sql.catalog_functions), checked without Spark: the rewrite, its Spark
rendering through weir's gate, and that the in-process engine takes it."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from weir.catalog.pg_types import format_name, type_rows
from weir.sql import catalog_functions as cf
from weir.sql.catalog_format_type import TYPE_NAMES, format_type_sql
from weir.sql.dialect import Weir


def _rw(sql: str) -> exp.Expression:
    return cf.rewrite(sqlglot.parse_one(sql, read=Weir))


def test_type_names_are_pg_types() -> None:
    for row in type_rows(0, 0, 0):
        assert TYPE_NAMES[int(row[0])] == format_name(int(row[0]))


def test_psql_operator_and_collation() -> None:
    out = _rw("SELECT 1 FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' "
              "COLLATE pg_catalog.default").sql("postgres")
    assert "OPERATOR" not in out and "COLLATE" not in out
    assert "c.relname ~ '^(t)$'" in out


def test_visibility_is_a_subquery_on_the_search_path() -> None:
    out = _rw("SELECT 1 FROM pg_class c WHERE pg_catalog.pg_table_is_visible(c.oid)")
    assert not any(isinstance(n, exp.Anonymous) and n.name == "pg_table_is_visible" for n in out.walk())
    assert "CURRENT_SCHEMAS(FALSE)" in out.sql("postgres")


def test_regclass_casts_both_ways() -> None:
    out = _rw("SELECT c.oid::pg_catalog.regclass FROM pg_class c WHERE c.oid = 'pg_catalog.pg_class'::regclass")
    sql = out.sql("postgres")
    assert "weir_c.relname = 'pg_class' AND weir_n.nspname = 'pg_catalog'" in sql  # the literal: an oid
    assert out.expressions[0].meta["weir_output_name"] == "oid"  # the output: the name, named oid
    assert isinstance(out.expressions[0], exp.Coalesce)


def test_order_by_a_regclass_output_uses_its_position() -> None:
    out = _rw("SELECT c.oid::pg_catalog.regclass FROM pg_class c ORDER BY c.oid::pg_catalog.regclass::pg_catalog.text")
    assert out.args["order"].expressions[0].this == exp.Literal.number(1)


def test_format_type_and_qualified_calls() -> None:
    out = _rw("SELECT pg_catalog.format_type(a.atttypid, a.atttypmod), pg_catalog.array_to_string(x, ',') FROM t a")
    assert isinstance(out.expressions[0], exp.Case)
    assert isinstance(out.expressions[1], exp.ArrayToString)


def test_no_rewrite_leaves_query_alone() -> None:
    e = sqlglot.parse_one("SELECT a FROM t", read=Weir)
    assert cf.rewrite(e) is e


def test_rewritten_catalog_functions_run_in_process() -> None:
    """The Spark SQL of the rewrites (rendered through weir's gate) is within what the
    in-process engine runs."""
    from weir.sql.in_process import to_duckdb
    from weir.sql.render import to_spark

    # not yet: quote_ident's replace() (Spark's rendering reads back as regexp_replace), so
    # regclass names and quote_ident run on a replica
    for sql in (f"SELECT {format_type_sql('x', None)} FROM (SELECT 23 AS x, -1 AS y) s",):
        to_duckdb(to_spark(sqlglot.parse_one(sql, read=Weir)))


def test_always_empty_relations_are_empty_in_the_catalog() -> None:
    """weir.sql.featureless names the pg_catalog relations of features weir lacks; the catalog
    must define each with no rows (and every relation it defines so must be named)."""
    from weir.catalog.builtins import BUILTIN_VIEWS, BUILTINS
    from weir.sql import featureless

    pg = {b.name: b for b in BUILTINS if b.schema == "pg_catalog"}
    names = {v.name for v in BUILTIN_VIEWS if v.schema == "pg_catalog"} | set(pg)
    assert featureless.ALWAYS_EMPTY <= names
    for name in featureless.ALWAYS_EMPTY & set(pg):
        assert pg[name].compute.__name__ == "_none", name


def test_subquery_columns_over_always_empty_relations_are_null() -> None:
    import sqlglot

    from weir.sql import featureless
    from weir.sql.dialect import Weir

    q = ("SELECT pol.polname, array_to_string(array(SELECT rolname FROM pg_roles WHERE oid = ANY(pol.polroles) "
         "ORDER BY 1), ',') AS roles FROM pg_catalog.pg_policy pol LEFT JOIN pg_class c ON c.oid = pol.polrelid")
    out = featureless.prune(sqlglot.parse_one(q, read=Weir)).sql("postgres")
    assert out.startswith('SELECT pol.polname, CAST(NULL AS TEXT) AS "roles" FROM pg_catalog.pg_policy')
    kept = "SELECT (SELECT 1) AS x FROM pg_class c LEFT JOIN pg_policy p ON p.polrelid = c.oid"
    assert featureless.prune(sqlglot.parse_one(kept, read=Weir)).sql("postgres") == \
        sqlglot.parse_one(kept, read=Weir).sql("postgres")


def test_casts_to_oid_and_name_render_for_spark() -> None:
    """Spark has no oid or name type: casts to them are Spark's int and string."""
    import sqlglot

    from weir.sql.dialect import Weir
    from weir.sql.render import to_spark

    assert to_spark(sqlglot.parse_one("SELECT CAST(1 AS oid), CAST('x' AS name)", read=Weir)) == \
        "SELECT CAST(1 AS INT), CAST('x' AS STRING)"


def test_format_with_a_constant_pattern_is_a_concatenation() -> None:
    """format('%I.%I', ...) (Metabase), format('%s', ...): %s is '' for NULL, %I quotes and
    fails for NULL; patterns weir does not write out (%L, positions, too few arguments) stay
    format(), which weir refuses."""
    out = _rw("SELECT format('%I.%s x%%', a, b) FROM t").sql("postgres")
    assert "FORMAT" not in out.upper().replace("FORMATTED", "")
    assert "null values cannot be formatted as an SQL identifier" in out and "'.'" in out and "' x%'" in out
    for kept in ("SELECT format('%L', a) FROM t", "SELECT format('%1$s', a) FROM t", "SELECT format('%s %s', a) FROM t"):
        assert isinstance(_rw(kept).selects[0], exp.Format)


def test_array_subquery_is_a_collecting_scalar_subquery() -> None:
    """ARRAY(SELECT ...) (psql's \\du), which Spark lacks: a scalar subquery collecting the
    values in order, an empty array for no rows; in process alike."""
    from weir.sql.in_process import to_duckdb
    from weir.sql.render import to_spark

    sql = to_spark(sqlglot.parse_one("SELECT ARRAY(SELECT b.x FROM t b WHERE b.k = r.k ORDER BY 1) FROM t r",
                                     read=Weir))
    assert "ARRAY(SELECT" not in sql.upper() and "COLLECT_LIST" in sql.upper() and "ARRAY()" in sql.upper()
    assert "[]" in to_duckdb(sql)


def test_any_keyword_is_a_label_after_as() -> None:
    assert sqlglot.parse_one("SELECT 1 AS select, 2 AS update", read=Weir).named_selects == ["select", "update"]
