"""Builtin relations: definitions are consistent and rows() follows the catalog."""

from __future__ import annotations

from datetime import timedelta

import pytest

from weir.catalog import Catalog, ColumnDef
from weir.catalog.builtins import BUILTINS, PG_FIXED_OIDS, builtin_rows, by_name, redact
from weir.types import INT4, TEXT, parse_type


@pytest.fixture
def cat(tmp_path) -> Catalog:  # noqa: ANN001
    c = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    yield c
    c.close()


def rows(c: Catalog, name: str, schema: str = "mz_catalog") -> list[tuple]:
    b = by_name(schema, name)
    assert b is not None
    return b.rows(c)


def as_dicts(c: Catalog, name: str, schema: str = "mz_catalog") -> list[dict]:
    b = by_name(schema, name)
    return [dict(zip([n for n, _ in b.columns], r, strict=True)) for r in b.rows(c)]


def test_definitions_are_unique_and_well_typed() -> None:
    assert len({b.id for b in BUILTINS}) == len(BUILTINS)
    assert len({b.oid for b in BUILTINS}) == len(BUILTINS)
    assert len({(b.schema, b.name) for b in BUILTINS}) == len(BUILTINS)
    for b in BUILTINS:
        assert b.id.startswith("s") and (16384 <= b.oid < 20000 or PG_FIXED_OIDS.get(b.name) == b.oid)
        assert b.nullable <= {n for n, _ in b.columns}, b.name
        for _, ty in b.columns:  # every type survives the catalog's JSON round trip
            assert parse_type(ty.sql()) == ty
    expected = {
        "mz_databases": ["id", "oid", "name", "owner_id", "privileges"],
        "mz_schemas": ["id", "oid", "database_id", "name", "owner_id", "privileges"],
        "mz_tables": ["id", "oid", "schema_id", "name", "owner_id", "privileges", "create_sql",
                      "redacted_create_sql", "source_id"],
        "mz_views": ["id", "oid", "schema_id", "name", "definition", "owner_id", "privileges",
                     "create_sql", "redacted_create_sql"],
        "mz_columns": ["id", "name", "position", "nullable", "type", "default", "type_oid",
                       "type_mod"],
        "mz_clusters": ["id", "name", "owner_id", "privileges", "managed", "size",
                        "replication_factor", "disk", "availability_zones",
                        "introspection_debugging", "introspection_interval"],
        "mz_cluster_replicas": ["id", "name", "cluster_id", "size", "availability_zone",
                                "owner_id", "disk"],
        "mz_objects": ["id", "oid", "schema_id", "name", "type", "owner_id", "cluster_id",
                       "privileges"],
        "mz_roles": ["id", "oid", "name", "inherit", "rolcanlogin", "rolsuper"],
    }
    for name, cols in expected.items():
        assert [n for n, _ in by_name("mz_catalog", name).columns] == cols


def test_rows_have_the_declared_shape(cat: Catalog) -> None:
    t = cat.create_item("table", "u1", "t", [ColumnDef("a", INT4)], "CREATE TABLE t (a int)")
    cat.create_item("view", "u1", "v", [ColumnDef("a", INT4)], "CREATE VIEW v AS SELECT 1",
                    {"query": "SELECT 1"}, dependencies=[t.id])
    cat.create_item("index", "u1", "i", [], "CREATE INDEX i ON t (a)", {"on_id": t.id},
                    cluster_id="u1", dependencies=[t.id])
    for b, data in zip(BUILTINS, builtin_rows(cat).values(), strict=True):
        for r in data:
            assert len(r) == len(b.columns), b.name
            for (name, _), value in zip(b.columns, r, strict=True):
                assert value is not None or name in b.nullable, (b.name, name)


def test_bootstrap_rows(cat: Catalog) -> None:
    assert rows(cat, "mz_databases") == [("u1", 20001, "materialize", "u1", ["u1=UC/u1", "=U/u1"])]
    schemas = {r["name"]: r for r in as_dicts(cat, "mz_schemas")}
    assert schemas["public"]["database_id"] == "u1"
    assert schemas["mz_catalog"]["database_id"] is None
    assert [r["name"] for r in as_dicts(cat, "mz_roles")] == [
        "mz_system", "mz_support", "mz_monitor", "mz_monitor_redacted", "materialize"]
    [cl] = as_dicts(cat, "mz_clusters")
    assert (cl["id"], cl["name"], cl["managed"], cl["size"], cl["replication_factor"]) == (
        "u1", "quickstart", True, "1", 1)
    assert cl["introspection_interval"] == timedelta(seconds=1)
    assert rows(cat, "mz_cluster_replicas") == [("u1", "r1", "u1", "1", None, "u1", False)]
    assert rows(cat, "mz_tables") == []  # builtins are not user tables ...
    objects = {r["name"]: r for r in as_dicts(cat, "mz_objects")}
    assert objects["mz_tables"]["type"] == "table"  # ... but they are objects
    assert objects["mz_tables"]["id"] == by_name("mz_catalog", "mz_tables").id
    cols = [r for r in as_dicts(cat, "mz_columns") if r["id"] == by_name("mz_catalog", "mz_roles").id]
    assert [c["name"] for c in cols] == ["id", "oid", "name", "inherit", "rolcanlogin", "rolsuper"]
    assert [c["position"] for c in cols] == [1, 2, 3, 4, 5, 6]


def test_rows_follow_ddl(cat: Catalog) -> None:
    before = builtin_rows(cat)
    t = cat.create_item("table", "u1", "t", [ColumnDef("a", INT4, False),
                                             ColumnDef("b", TEXT, True, "'hi'")],
                        "CREATE TABLE t (a int NOT NULL, b text DEFAULT 'hi')")
    v = cat.create_item("view", "u1", "v", [ColumnDef("a", INT4)], "CREATE VIEW v AS SELECT a FROM t",
                        {"query": "SELECT a FROM t"}, dependencies=[t.id])
    mv = cat.create_item("materialized-view", "u1", "mv", [ColumnDef("a", INT4)], "",
                         {"query": "SELECT a FROM t"}, cluster_id="u1", dependencies=[t.id])
    alice = cat.create_role("alice", login=True)
    cat.grant_role("alice", "materialize", grantor_id="u1")
    cl = cat.create_cluster("c2", "2", 2)
    after = builtin_rows(cat)
    assert before != after

    [tr] = as_dicts(cat, "mz_tables")
    assert (tr["id"], tr["oid"], tr["schema_id"], tr["name"], tr["owner_id"]) == (
        t.id, t.oid, "u1", "t", "u1")
    assert tr["privileges"] == ["u1=arwd/u1"]
    assert tr["create_sql"] == t.create_sql
    assert tr["redacted_create_sql"] == "CREATE TABLE t (a int NOT NULL, b text DEFAULT '<REDACTED>')"
    [vr] = as_dicts(cat, "mz_views")
    assert (vr["id"], vr["definition"]) == (v.id, "SELECT a FROM t")
    [mr] = as_dicts(cat, "mz_materialized_views")
    assert (mr["id"], mr["cluster_id"]) == (mv.id, "u1")
    cols = [(r["name"], r["position"], r["nullable"], r["type"], r["default"], r["type_oid"])
            for r in as_dicts(cat, "mz_columns") if r["id"] == t.id]
    assert cols == [("a", 1, False, "integer", None, 23), ("b", 2, True, "text", "'hi'", 25)]
    assert {(r["id"], r["type"]) for r in as_dicts(cat, "mz_objects") if r["id"].startswith("u")} == {
        (t.id, "table"), (v.id, "view"), (mv.id, "materialized-view")}
    assert rows(cat, "mz_object_dependencies", "mz_internal") == [(v.id, t.id), (mv.id, t.id)]
    assert (alice.id, "alice", True, True, False) in [
        (r["id"], r["name"], r["inherit"], r["rolcanlogin"], r["rolsuper"])
        for r in as_dicts(cat, "mz_roles")]
    assert rows(cat, "mz_role_members") == [(alice.id, "u1", "u1")]
    assert [r["name"] for r in as_dicts(cat, "mz_clusters")] == ["quickstart", "c2"]
    assert [(r["name"], r["cluster_id"], r["size"]) for r in as_dicts(cat, "mz_cluster_replicas")
            if r["cluster_id"] == cl.id] == [("r1", cl.id, "2"), ("r2", cl.id, "2")]

    cat.drop_item(t.id, cascade=True)
    cat.drop_cluster("c2")
    assert as_dicts(cat, "mz_tables") == [] and as_dicts(cat, "mz_views") == []
    assert [r["name"] for r in as_dicts(cat, "mz_clusters")] == ["quickstart"]


def test_rows_are_deterministic_and_snapshot_is_cached(cat: Catalog) -> None:
    cat.create_item("table", "u1", "t", [ColumnDef("a", INT4)], "")
    s1 = cat.snapshot()
    assert cat.snapshot() is s1  # no change, no reload
    assert builtin_rows(cat) == builtin_rows(cat)
    cat.oracle_set(123)  # not a catalog change
    assert cat.snapshot() is s1
    cat.create_role("x")
    s2 = cat.snapshot()
    assert s2 is not s1 and s2.generation > s1.generation
    assert builtin_rows(s2) == builtin_rows(cat)
    with cat.transaction() as tx:  # inside a transaction rows() see its changes
        tx.create_role("y")
        assert "y" in [r[2] for r in rows(tx, "mz_roles")]
    assert "y" in [r[2] for r in rows(cat, "mz_roles")]


def test_grants_show_in_privileges(cat: Catalog) -> None:
    t = cat.create_item("table", "u1", "t", [ColumnDef("a", INT4)], "")
    alice = cat.create_role("alice")
    cat.grant_privileges("item", t.id, alice.id, "r", "u1")
    cat.grant_privileges("item", t.id, "p", "r", "u1")
    [tr] = as_dicts(cat, "mz_tables")
    assert tr["privileges"] == ["u1=arwd/u1", "=r/u1", f"{alice.id}=r/u1"]


def test_redact() -> None:
    assert redact("SELECT 'a''b', x FROM t WHERE y = 'z'") == (
        "SELECT '<REDACTED>', x FROM t WHERE y = '<REDACTED>'")
