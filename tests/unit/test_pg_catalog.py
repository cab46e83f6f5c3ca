"""pg_catalog and information_schema (issue 14): their rows follow the catalog, types are
weir's, functions are what weir's function gate accepts. No Spark: the rows computed from
catalog snapshots, as the builtin writer stores them."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from weir.catalog import Catalog, ColumnDef
from weir.catalog import builtin_information_schema as information_schema
from weir.catalog import builtin_pg_catalog as pg_catalog
from weir.catalog import builtin_pg_system as pg_system
from weir.catalog.builtin_contents import BuiltinContents
from weir.catalog.builtins import BUILTIN_VIEWS, BUILTINS, PG_FIXED_OIDS, by_name
from weir.catalog.pg_functions import PROCS
from weir.codec import decode_text, encode_text
from weir.errors import WeirError
from weir.sql import render
from weir.sql.parse import parse_one
from weir.types import BY_NAME, BY_OID, INT4, TEXT, parse_type

BKI = Path("/usr/share/postgresql/15/postgres.bki")


@pytest.fixture
def cat(tmp_path) -> Catalog:  # noqa: ANN001
    c = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    yield c
    c.close()


def rel(cat: Catalog, name: str, schema: str = "pg_catalog") -> list[dict[str, Any]]:
    """A relation's rows as dicts: a builtin table, or the table behind a per-database view."""
    b = by_name(schema, name) or by_name("mz_internal", f"{name}_all_databases") or by_name(
        "mz_internal", f"{schema}_{name}_all_databases") or by_name("mz_internal", f"{schema}_{name}")
    assert b is not None, name
    return [dict(zip([n for n, _ in b.columns], r, strict=True)) for r in b.rows(cat)]


def objects(cat: Catalog) -> dict[str, Any]:
    t = cat.create_item("table", "u1", "t", [ColumnDef("a", INT4, False), ColumnDef("b", TEXT, True, "'x'")],
                        "CREATE TABLE t (a int NOT NULL, b text DEFAULT 'x')")
    v = cat.create_item("view", "u1", "v", [ColumnDef("a", INT4)], "CREATE VIEW v AS SELECT a FROM t",
                        {"query": "SELECT a FROM materialize.public.t"}, dependencies=[t.id])
    mv = cat.create_item("materialized-view", "u1", "mv", [ColumnDef("b", TEXT)], "",
                         {"query": "SELECT b FROM materialize.public.t"}, cluster_id="u1", dependencies=[t.id])
    i = cat.create_item("index", "u1", "t_b_idx", [], "CREATE INDEX t_b_idx ON t (b)", {
        "on_id": t.id, "keys": ["b"], "columns": [{"name": "a", "pg_type": "integer", "nullable": False},
                                                 {"name": "b", "pg_type": "text", "nullable": True}]},
        cluster_id="u1", dependencies=[t.id])
    return {"t": t, "v": v, "mv": mv, "i": i}


def test_definitions() -> None:
    mine = [b for b in (*BUILTINS, *BUILTIN_VIEWS) if 600 <= int(b.id[1:]) < 700]
    assert len(mine) == len(pg_catalog.TABLES + pg_catalog.VIEWS + pg_system.TABLES + pg_system.VIEWS
                            + information_schema.TABLES + information_schema.VIEWS)
    assert all(17000 <= b.oid < 17200 or PG_FIXED_OIDS.get(b.name) == b.oid for b in mine)
    every = (*BUILTINS, *BUILTIN_VIEWS)
    assert len({b.id for b in every}) == len(every) and len({b.oid for b in every}) == len(every)
    names = {(b.schema, b.name) for b in mine}
    for name in ("pg_namespace pg_class pg_attribute pg_type pg_database pg_roles pg_authid pg_user pg_index "
                 "pg_indexes pg_views pg_matviews pg_tables pg_proc pg_description pg_attrdef pg_constraint "
                 "pg_inherits pg_am pg_collation pg_enum pg_range pg_depend pg_settings pg_extension "
                 "pg_event_trigger pg_trigger pg_rewrite pg_tablespace pg_stat_activity pg_locks").split():
        assert ("pg_catalog", name) in names, name
    for name in ("schemata tables views columns table_constraints key_column_usage referential_constraints "
                 "routines parameters character_sets applicable_roles enabled_roles role_table_grants "
                 "column_privileges").split():
        assert ("information_schema", name) in names, name
    assert by_name("pg_catalog", "pg_authid").restricted


def test_pg_type_has_every_type_of_weir(cat: Catalog) -> None:
    types = {r["oid"]: r for r in rel(cat, "pg_type")}
    assert set(BY_OID) <= set(types)
    for oid, t in BY_OID.items():
        r = types[oid]
        assert (r["typlen"], r["typarray"]) == (t.typlen, t.array_oid), t.name
        if t.element is not None:
            assert r["typelem"] == t.element.oid
        if t.element is not None and oid not in (22, 30):
            assert (r["typname"], r["typcategory"], r["typinput"], r["typoutput"], r["typreceive"]) == (
                "_" + types[t.element.oid]["typname"], "A", "array_in", "array_out", "array_recv")
    assert (types[23]["typname"], types[23]["typinput"], types[23]["typsend"]) == ("int4", "int4in", "int4send")
    assert types[16552]["typname"] == "mz_timestamp"
    pg = next(r["oid"] for r in rel(cat, "pg_namespace") if r["nspname"] == "pg_catalog")
    assert types[25]["typnamespace"] == pg
    for r in types.values():  # every type a function names is there
        assert r["typelem"] in types or r["typelem"] == 0
    for p in PROCS:
        assert p[6] in types and all(a in types for a in p[7]), p


def test_relations_follow_the_catalog(cat: Catalog) -> None:
    o = objects(cat)
    t, v, mv, i = o["t"], o["v"], o["mv"], o["i"]
    classes = {r["relname"]: r for r in rel(cat, "pg_class") if r["database_name"] == "materialize"}
    assert {n: (r["oid"], r["relkind"]) for n, r in classes.items()} == {
        "t": (t.oid, "r"), "v": (v.oid, "v"), "mv": (mv.oid, "m"), "t_b_idx": (i.oid, "i")}
    assert classes["t"]["relhasindex"] and not classes["mv"]["relhasindex"]
    assert classes["t"]["relnatts"] == 2 and classes["t_b_idx"]["relnatts"] == 1
    assert classes["t"]["relacl"] == ["materialize=arwd/materialize"]
    public = next(r for r in rel(cat, "pg_namespace") if r["nspname"] == "public")
    assert classes["t"]["relnamespace"] == public["oid"]
    assert public["nspacl"] == ["materialize=UC/materialize", "=U/materialize"]
    assert {r["relname"]: r["relkind"] for r in rel(cat, "pg_class") if r["database_name"] is None}[
        "pg_class"] == "v"

    attrs = [(r["attname"], r["attnum"], r["atttypid"], r["attnotnull"], r["atthasdef"])
             for r in rel(cat, "pg_attribute") if r["attrelid"] == t.oid]
    assert attrs == [("a", 1, 23, True, False), ("b", 2, 25, False, True)]
    assert [(r["attname"], r["attnum"], r["atttypid"]) for r in rel(cat, "pg_attribute")
            if r["attrelid"] == i.oid] == [("b", 1, 25)]
    [ix] = [r for r in rel(cat, "pg_index") if r["indexrelid"] == i.oid]
    assert (ix["indrelid"], ix["indkey"], ix["indnatts"], ix["indcollation"]) == (t.oid, [2], 1, [100])
    [ixs] = [r for r in rel(cat, "pg_indexes") if r["indexname"] == "t_b_idx"]
    assert (ixs["schemaname"], ixs["tablename"]) == ("public", "t")
    assert ixs["indexdef"] == "CREATE INDEX t_b_idx IN CLUSTER quickstart ON public.t USING arrangement (b)"
    assert [(r["tablename"], r["tableowner"], r["hasindexes"]) for r in rel(cat, "pg_tables")
            if r["database_name"] == "materialize"] == [("t", "materialize", True)]
    assert [(r["viewname"], r["definition"]) for r in rel(cat, "pg_views")
            if r["database_name"] == "materialize"] == [("v", "SELECT a FROM materialize.public.t")]
    assert [(r["matviewname"], r["ispopulated"]) for r in rel(cat, "pg_matviews")] == [("mv", True)]
    assert [(r["adrelid"], r["adnum"], r["adbin"]) for r in rel(cat, "pg_attrdef")] == [(t.oid, 2, "'x'")]
    class_oid = pg_catalog.PG_CLASS_OID
    deps = {(r["objid"], r["refobjid"], r["deptype"]) for r in rel(cat, "pg_depend")
            if r["refclassid"] == class_oid}
    assert deps == {(v.oid, t.oid, "n"), (mv.oid, t.oid, "n"), (i.oid, t.oid, "a")}

    cat.drop_item(t.id, cascade=True)
    assert not [r for r in rel(cat, "pg_class") if r["database_name"] == "materialize"]
    assert not [r for r in rel(cat, "pg_attribute") if r["attrelid"] in (t.oid, i.oid)]
    assert not rel(cat, "pg_index") and not rel(cat, "pg_attrdef")


def test_incremental_rows_see_other_items(cat: Catalog) -> None:
    """relhasindex / hasindexes / pg_indexes.tablename change with another item (an index,
    a renamed table): the builtin writer's item-by-item update recomputes those too."""
    contents = BuiltinContents()
    contents.update(cat.snapshot())
    t = cat.create_item("table", "u1", "t", [ColumnDef("a", INT4)], "CREATE TABLE t (a int)")
    contents.update(cat.snapshot())
    i = cat.create_item("index", "u1", "i", [], "", {"on_id": t.id, "keys": ["a"], "columns": [
        {"name": "a", "pg_type": "integer", "nullable": True}]}, cluster_id="u1", dependencies=[t.id])
    contents.update(cat.snapshot())
    cat.alter_item(t.id, name="t2")
    contents.update(cat.snapshot())
    for name in ("pg_class_all_databases", "pg_tables_all_databases", "pg_indexes_all_databases"):
        b = by_name("mz_internal", name)
        assert set(contents.rows[b.id]) == {tuple(tuple(x) if isinstance(x, list) else x for x in r)
                                            for r in b.rows(cat)}, name
    [r] = [r for r in rel(cat, "pg_indexes")]
    assert r["tablename"] == "t2"
    cat.drop_item(i.id)
    contents.update(cat.snapshot())
    b = by_name("mz_internal", "pg_class_all_databases")
    assert [r[13] for r in contents.rows[b.id] if r[1] == "t2"] == [False]


def test_databases_and_roles(cat: Catalog) -> None:
    alice = cat.create_role("alice", login=True, password="secret")
    cat.grant_role("materialize", "alice", grantor_id="u1")  # alice is a member of materialize
    db = cat.create_database("other", "u1")
    cat.create_item("table", cat.get_schema(db.id, "public").id, "t", [ColumnDef("a", INT4)], "")
    assert [r["datname"] for r in rel(cat, "pg_database")] == ["materialize", "other"]
    [d] = [r for r in rel(cat, "pg_database") if r["datname"] == "materialize"]
    assert (d["encoding"], d["datcollate"], d["datacl"]) == (6, "C", ["materialize=UC/materialize", "=U/materialize"])
    [a] = [r for r in rel(cat, "pg_authid") if r["rolname"] == "alice"]
    assert a["rolpassword"].startswith("SCRAM-SHA-256$") and a["oid"] == alice.oid
    assert {r["rolname"]: r["rolpassword"] for r in rel(cat, "pg_roles")}["alice"] == "********"
    assert "alice" in [r["usename"] for r in rel(cat, "pg_user")]
    m = rel(cat, "pg_auth_members")
    assert [(r["roleid"], r["member"]) for r in m] == [(cat.get_role("materialize").oid, alice.oid)]
    assert sorted(r["database_name"] for r in rel(cat, "pg_class") if r["relname"] == "t") == ["other"]
    assert {r["nspname"] for r in rel(cat, "pg_namespace") if r["database_name"] == "other"} == {"public"}
    enabled = {(r["for_role"], r["role_name"]) for r in rel(cat, "enabled_roles_all", "information_schema")}
    assert ("alice", "alice") in enabled and ("alice", "materialize") in enabled
    assert ("alice", "mz_system") not in enabled and ("materialize", "mz_system") in enabled  # a superuser


def test_information_schema(cat: Catalog) -> None:
    o = objects(cat)
    tables = {r["table_name"]: r for r in rel(cat, "tables", "information_schema")
              if r["database_name"] == "materialize"}
    assert {n: (r["table_type"], r["is_insertable_into"]) for n, r in tables.items()} == {
        "t": ("BASE TABLE", "YES"), "v": ("VIEW", "NO"), "mv": ("MATERIALIZED VIEW", "NO")}
    cols = [(r["column_name"], r["ordinal_position"], r["is_nullable"], r["data_type"], r["udt_name"],
             r["column_default"], r["numeric_precision"], r["character_octet_length"])
            for r in rel(cat, "columns", "information_schema") if r["table_name"] == "t"]
    assert cols == [("a", 1, "NO", "integer", "int4", None, 32, None),
                    ("b", 2, "YES", "text", "text", "'x'", None, 1073741824)]
    [c] = [r for r in rel(cat, "table_constraints", "information_schema") if r["table_name"] == "t"]
    public = cat.get_schema_by_id(o["t"].schema_id).oid
    assert (c["constraint_type"], c["constraint_name"]) == ("CHECK", f"{public}_{o['t'].oid}_1_not_null")
    grants = {(r["grantee"], r["privilege_type"]) for r in rel(cat, "role_table_grants", "information_schema")
              if r["table_name"] == "t"}
    assert grants == {("materialize", p) for p in ("SELECT", "INSERT", "UPDATE", "DELETE")}
    routines = {r["routine_name"] for r in rel(cat, "routines", "information_schema")}
    assert {"abs", "upper", "sum", "now"} <= routines
    params = [r for r in rel(cat, "parameters", "information_schema") if r["specific_name"] == "abs_1397"]
    assert [(r["ordinal_position"], r["data_type"], r["parameter_mode"]) for r in params] == [(1, "integer", "IN")]


def test_catalog_types_in_the_codec() -> None:
    int2vector, aclitems, char = BY_NAME["int2vector"], BY_OID[1034], BY_NAME['"char"']
    assert encode_text([1, 3], int2vector) == b"1 3" and decode_text("1 3", int2vector) == [1, 3]
    assert encode_text(["a=r/b", "=r/b"], aclitems) == b"{a=r/b,=r/b}"
    assert encode_text("r", char) == b"r"
    assert parse_type('"char"') == char and parse_type("aclitem[]") == aclitems
    assert parse_type("char") != char  # character(1)


# ---------------------------------------------------------------- pg_proc and the function gate

_POLYMORPHIC = {2283: 23, 2277: 1007, 2776: 23, 5077: 23, 5078: 1007, 2276: 23}
_SAMPLE = {16: "true", 20: "1", 21: "1", 23: "1", 26: "1", 700: "1.5", 701: "1.5", 1700: "1.5", 25: "'day'",
           1043: "'day'", 1042: "'d'", 19: "'day'", 1082: "'2020-01-01'", 1114: "'2020-01-01 00:00:00'",
           1184: "'2020-01-01 00:00:00+00'", 1186: "'1 day'", 17: "'\\x00'", 3802: "'{\"a\": 1}'",
           114: "'{\"a\": 1}'", 1007: "ARRAY[1]", 1009: "ARRAY['a']"}
# sqlglot reads these as other functions (char(int) as chr, interval(...) as a cast)
_MISREAD = {"char", "interval"}


def _accepted(name: str, kind: str, args: list[int]) -> bool:
    """Whether weir's gate (what a query goes through before Spark) runs name(args)."""
    types = [_POLYMORPHIC.get(a, a) for a in args]
    if any(a not in BY_OID for a in types):
        return False
    spelled = [BY_OID[a].sql() if BY_OID[a].element is None else BY_OID[a].name for a in types]
    attempts = [[f"CAST(NULL AS {s})" for s in spelled]]
    if all(a in _SAMPLE for a in types):
        attempts.append([f"CAST({_SAMPLE[a]} AS {s})" for a, s in zip(types, spelled, strict=True)])
    for values in attempts:
        sql = f"SELECT {name}({', '.join(values)})" + (" OVER ()" if kind == "w" else "")
        try:
            render.to_spark(parse_one(sql).expr)
            return True
        except WeirError:
            continue  # refused, or known but not for these values: the next ones
        except Exception:  # noqa: BLE001 - anything else: not something weir runs
            return False
    return False


def _pg_procs() -> list[dict[str, str]]:
    cols: list[str] = []
    out, inside = [], False
    for line in BKI.read_text().splitlines():
        if line.startswith("create pg_proc "):
            inside, cols = True, []
        elif inside and line.startswith(" ") and " = " in line and not out:
            cols.append(line.strip().split(" = ")[0])
        elif inside and line.startswith("insert ( "):
            out.append(dict(zip(cols, shlex.split(line[len("insert ( "):-2]), strict=True)))
        elif inside and line.startswith("close pg_proc"):
            break
    return out


def generate_procs() -> list[tuple[Any, ...]]:
    """PROCS as weir's gate decides it over PostgreSQL 15's pg_proc."""
    def arr(v: str, conv: Any) -> tuple[Any, ...] | None:
        return None if v == "_null_" else tuple(conv(x) for x in v.strip("{}").split(","))

    out = []
    for d in _pg_procs():
        args = [int(x) for x in d["proargtypes"].split()]
        if (d["prokind"] not in ("f", "a", "w") or d["proname"] in _MISREAD
                or (d["prokind"] == "a" and d["provariadic"] != "0")  # hypothetical-set aggregates
                or {2275, 2281} & {*args, int(d["prorettype"])}):  # cstring / internal: not SQL's
            continue
        if not _accepted(d["proname"], d["prokind"], args):
            continue
        flags = d["prokind"] + d["provolatile"] + d["proparallel"] + d["proisstrict"] + d["proretset"]
        out.append((int(d["oid"]), d["proname"], flags, float(d["procost"]), float(d["prorows"]),
                    int(d["provariadic"]), int(d["prorettype"]), tuple(args), arr(d["proallargtypes"], int),
                    arr(d["proargmodes"], str), arr(d["proargnames"], str), d["prosrc"]))
    return sorted(out)


@pytest.mark.skipif(not BKI.exists(), reason="PostgreSQL 15's postgres.bki is not installed")
def test_pg_proc_is_what_the_function_gate_runs() -> None:
    generated = generate_procs()
    if generated != list(PROCS):
        listing = "\n".join(f"    {p!r}," for p in generated).replace("'", '"')
        pytest.fail("weir.catalog.pg_functions.PROCS differs from what weir's function gate accepts; "
                    f"missing: {sorted({p[:2] for p in generated} - {p[:2] for p in PROCS})}, "
                    f"extra: {sorted({p[:2] for p in PROCS} - {p[:2] for p in generated})}; "
                    f"the list is:\n{listing}")
