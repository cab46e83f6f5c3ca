"""The durable catalog, run against SQLite and (when available) a real PostgreSQL."""

from __future__ import annotations

import base64
import itertools
import re
import threading
from collections.abc import Callable, Iterator

import pytest
from scramp import ScramClient, ScramMechanism

from tests.pg_server import pg_server  # noqa: F401  (session fixture)
from weir.catalog import Catalog, ColumnDef
from weir.catalog.scram import make_verifier, parse_verifier
from weir.errors import WeirError
from weir.types import INT4, TEXT

_pg_db_counter = itertools.count()

Opener = Callable[[], Catalog]


@pytest.fixture(params=["sqlite", "postgres"])
def open_catalog(request: pytest.FixtureRequest, tmp_path) -> Iterator[Opener]:  # noqa: ANN001
    """Opens (and re-opens) one catalog database; closes every catalog it opened."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'catalog.db'}"
    else:
        server = request.getfixturevalue("pg_server")
        url = server.create_database(f"weir_cat_{next(_pg_db_counter)}")
    opened: list[Catalog] = []

    def opener() -> Catalog:
        c = Catalog(url)
        opened.append(c)
        return c

    yield opener
    for c in opened:
        c.close()


@pytest.fixture
def cat(open_catalog: Opener) -> Catalog:
    return open_catalog()


def err(excinfo: pytest.ExceptionInfo[WeirError]) -> tuple[str, str]:
    return excinfo.value.sqlstate, excinfo.value.message


def public(c: Catalog) -> str:
    return c.resolve_schema("materialize", "public").id


def table(c: Catalog, name: str, schema_id: str | None = None, **kw) -> object:  # noqa: ANN003
    cols = [ColumnDef("a", INT4, False), ColumnDef("b", TEXT, True, "'x'")]
    return c.create_item("table", schema_id or public(c), name, cols,
                         f"CREATE TABLE {name} (a int NOT NULL, b text DEFAULT 'x')", {}, **kw)


def view(c: Catalog, name: str, on: list[str], kind: str = "view") -> object:
    return c.create_item(kind, public(c), name, [ColumnDef("a", INT4)],
                         f"CREATE VIEW {name} AS SELECT a FROM t", {"query": "SELECT a FROM t"},
                         dependencies=on)


# -- bootstrap ---------------------------------------------------------------------------


def test_bootstrap_contents(cat: Catalog) -> None:
    [db] = cat.list_databases()
    assert (db.id, db.name, db.owner_id) == ("u1", "materialize", "u1")
    schemas = {s.name: s for s in cat.list_schemas()}
    assert schemas["public"].database_id == "u1" and schemas["public"].id == "u1"
    for i, name in enumerate(["mz_catalog", "mz_internal", "pg_catalog", "information_schema"]):
        s = schemas[name]
        assert (s.id, s.database_id, s.oid) == (f"s{i + 1}", None, 16384 + i)
    roles = {r.name: r for r in cat.list_roles()}
    m = roles["materialize"]
    assert (m.id, m.superuser, m.login, m.password, m.oid) == ("u1", True, True, None, 20000)
    assert {"mz_system", "mz_support", "mz_monitor", "mz_monitor_redacted"} <= set(roles)
    assert all(r.id.startswith("s") and r.oid < 20000 for n, r in roles.items() if n != "materialize")
    [cl] = cat.list_clusters()
    assert (cl.id, cl.name, cl.managed, cl.size, cl.replication_factor) == ("u1", "quickstart", True, "1", 1)
    [rep] = cat.list_replicas()
    assert (rep.id, rep.cluster_id, rep.name, rep.size, rep.incarnation) == ("u1", "u1", "r1", "1", 0)
    assert cat.oracle_get() == 0
    assert cat.get_metadata("catalog_version") == "1"
    mz_tables = cat.resolve_item(None, "mz_catalog", "mz_tables")
    assert mz_tables.builtin and mz_tables.kind == "table" and mz_tables.id.startswith("s")
    assert mz_tables.full_name == "mz_catalog.mz_tables"
    # system schemas resolve from any database
    assert cat.find_schema("u1", "mz_catalog").id == "s1"


def test_reopen_is_durable_and_ids_continue(open_catalog: Opener) -> None:
    c1 = open_catalog()
    t = table(c1, "t")
    c1.create_role("alice", login=True, password="pw")
    c1.create_cluster("c2", "2", 2)
    c1.set_system_var("max_query_result_size", "2GB")
    c1.close()
    c2 = open_catalog()
    assert c2.builtin_changes == []
    assert c2.get_item(t.id) == t
    assert c2.verify_password("alice", "pw")
    assert [r.name for r in c2.list_replicas(c2.get_cluster("c2").id)] == ["r1", "r2"]
    assert c2.get_system_var("max_query_result_size") == "2GB"
    t2 = table(c2, "t2")
    assert t2.id != t.id and t2.oid > t.oid
    assert len(c2.list_databases()) == 1 and len(c2.list_clusters()) == 2


# -- transactions ------------------------------------------------------------------------


def test_transaction_rolls_back_everything(cat: Catalog) -> None:
    before = cat.snapshot()
    with pytest.raises(RuntimeError):
        with cat.transaction() as tx:
            table(tx, "t")
            tx.create_role("bob")
            tx.create_cluster("c2")
            tx.create_database("db2")
            raise RuntimeError("boom")
    assert cat.find_item(public(cat), "t") is None
    assert cat.find_role("bob") is None and cat.find_cluster("c2") is None
    assert cat.find_database("db2") is None
    after = cat.snapshot()
    assert (after.items, after.roles, after.clusters, after.replicas) == (
        before.items, before.roles, before.clusters, before.replicas)
    # ids were not consumed by the rolled-back transaction
    assert table(cat, "t").id == "u1"


def test_failed_call_inside_transaction_leaves_no_trace(cat: Catalog) -> None:
    with cat.transaction() as tx:
        table(tx, "t")
        with pytest.raises(WeirError):
            table(tx, "t")  # duplicate: that call alone is undone
        with pytest.raises(WeirError):
            tx.create_item("view", public(tx), "v", [], "", {}, dependencies=["u999"])
        tx.create_role("carol")
    assert cat.find_item(public(cat), "t") is not None
    assert cat.find_item(public(cat), "v") is None
    assert cat.find_role("carol") is not None


def test_nested_transaction_is_a_savepoint(cat: Catalog) -> None:
    with cat.transaction() as tx:
        tx.create_role("r1")
        with pytest.raises(ValueError):
            with tx.transaction():
                tx.create_role("r2")
                raise ValueError
        assert tx.find_role("r2") is None
    assert cat.find_role("r1") is not None and cat.find_role("r2") is None


def test_threads_share_the_catalog_safely(cat: Catalog) -> None:
    errors: list[BaseException] = []
    ids: list[str] = []

    def work(n: int) -> None:
        try:
            for k in range(5):
                ids.append(table(cat, f"t_{n}_{k}").id)
                cat.oracle_set(n * 10 + k)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert len(set(ids)) == 40
    assert len(cat.list_items("table", schema_id=public(cat))) == 40
    assert cat.oracle_get() == 74


# -- errors ------------------------------------------------------------------------------


def test_duplicate_names(cat: Catalog) -> None:
    table(cat, "t")
    with pytest.raises(WeirError) as e:
        table(cat, "t")
    assert err(e) == ("42P07", 'table "t" already exists')
    view(cat, "v", [])
    with pytest.raises(WeirError) as e:
        table(cat, "v")
    assert err(e) == ("42P07", 'view "v" already exists')
    cat.create_role("alice")
    with pytest.raises(WeirError) as e:
        cat.create_role("alice")
    assert err(e) == ("42710", 'role "alice" already exists')
    with pytest.raises(WeirError) as e:
        cat.create_cluster("quickstart")
    assert err(e) == ("42710", 'cluster "quickstart" already exists')
    with pytest.raises(WeirError) as e:
        cat.create_replica("u1", "r1", "1")
    assert err(e) == ("42710", 'cluster replica "quickstart.r1" already exists')
    with pytest.raises(WeirError) as e:
        cat.create_database("materialize")
    assert err(e) == ("42P04", 'database "materialize" already exists')
    with pytest.raises(WeirError) as e:
        cat.create_schema("u1", "public")
    assert err(e) == ("42P06", 'schema "public" already exists')
    with pytest.raises(WeirError) as e:
        cat.create_role("mz_hacker")
    assert e.value.sqlstate == "42939"
    with pytest.raises(WeirError) as e:
        cat.create_cluster("mz_thing")
    assert e.value.sqlstate == "42939"


def test_unknown_objects(cat: Catalog) -> None:
    cases = [
        (lambda: cat.get_database("nope"), "3D000", 'database "nope" does not exist'),
        (lambda: cat.resolve_schema("nope", "public"), "3D000", 'database "nope" does not exist'),
        (lambda: cat.resolve_schema("materialize", "nope"), "3F000", 'schema "nope" does not exist'),
        (lambda: cat.get_schema_by_id("u99"), "3F000", None),
        (lambda: cat.get_item("u99"), "42P01", None),
        (lambda: cat.resolve_item("materialize", "public", "nope"), "42P01", None),
        (lambda: cat.get_role("nope"), "42704", 'role "nope" does not exist'),
        (lambda: cat.get_cluster("nope"), "42704", 'cluster "nope" does not exist'),
        (lambda: cat.resolve_replica("quickstart", "nope"), "42704", None),
        (lambda: cat.get_replica("u99"), "42704", None),
        (lambda: cat.drop_role("nope"), "42704", None),
        (lambda: cat.drop_cluster("nope"), "42704", None),
        (lambda: cat.drop_item("u99"), "42P01", None),
        (lambda: cat.create_item("table", "u99", "t"), "3F000", None),
        (lambda: cat.create_item("table", "u1", "t", owner_id="u99"), "42704", None),
        (lambda: cat.create_item("index", "u1", "i", cluster_id="u99"), "42704", None),
        (lambda: cat.grant_role("nope", "materialize"), "42704", None),
    ]
    for fn, code, message in cases:
        with pytest.raises(WeirError) as e:
            fn()
        assert e.value.sqlstate == code, (code, e.value)
        if message:
            assert e.value.message == message
    assert cat.find_item(public(cat), "t") is None


def test_drop_with_dependents(cat: Catalog) -> None:
    t = table(cat, "t")
    v = view(cat, "v", [t.id])
    w = view(cat, "w", [v.id], kind="materialized-view")
    idx = cat.create_item("index", public(cat), "t_idx", [], "CREATE INDEX t_idx ON t (a)",
                          {"on_id": t.id}, cluster_id="u1", dependencies=[t.id])
    with pytest.raises(WeirError) as e:
        cat.drop_item(t.id)
    assert err(e) == ("2BP01", 'cannot drop table "t": still depended upon by view "v"')
    with pytest.raises(WeirError) as e:
        cat.drop_item(v.id)
    assert err(e) == ("2BP01", 'cannot drop view "v": still depended upon by materialized view "w"')
    assert [i.id for i in cat.dependents(t.id)] == [idx.id, w.id, v.id]
    res = cat.drop_item(t.id, cascade=True)
    order = [i.id for i in res.items]
    assert set(order) == {t.id, v.id, w.id, idx.id}
    assert order.index(w.id) < order.index(v.id) < order.index(t.id)
    assert order[-1] == t.id
    assert cat.list_items(schema_id=public(cat)) == []
    assert cat.drop_item(table(cat, "t").id).items[0].name == "t"


def test_drop_schema_database_cluster(cat: Catalog) -> None:
    db = cat.create_database("db2")
    s = cat.get_schema(db.id, "public")
    t = table(cat, "t", s.id)
    v = view(cat, "v", [t.id])  # in materialize.public, reads db2.public.t
    with pytest.raises(WeirError) as e:
        cat.drop_schema(s.id)
    assert e.value.sqlstate == "2BP01" and "contains objects" in e.value.message
    with pytest.raises(WeirError) as e:
        cat.drop_database("db2")
    assert e.value.sqlstate == "2BP01"
    res = cat.drop_database("db2", cascade=True)
    assert [i.id for i in res.items] == [v.id, t.id] and res.schemas[0].id == s.id
    assert cat.find_database("db2") is None and cat.find_item(public(cat), "v") is None
    with pytest.raises(WeirError) as e:
        cat.drop_schema("s1")
    assert e.value.sqlstate == "42501"
    # clusters
    cl = cat.create_cluster("c2", "2", 2)
    t = table(cat, "t")
    mv = cat.create_item("materialized-view", public(cat), "mv", [ColumnDef("a", INT4)], "",
                         {"query": "SELECT a FROM t"}, cluster_id=cl.id, dependencies=[t.id])
    after = view(cat, "after", [mv.id])
    with pytest.raises(WeirError) as e:
        cat.drop_cluster("c2")
    assert e.value.sqlstate == "2BP01" and 'cluster "c2"' in e.value.message
    res = cat.drop_cluster("c2", cascade=True)
    assert [i.id for i in res.items] == [after.id, mv.id]
    assert sorted(r.name for r in res.replicas) == ["r1", "r2"]
    assert cat.find_cluster("c2") is None and cat.list_replicas(cl.id) == []
    assert cat.find_item(public(cat), "t") is not None


def test_drop_role_refuses_owners(cat: Catalog) -> None:
    alice = cat.create_role("alice")
    t = table(cat, "t", owner_id=alice.id)
    with pytest.raises(WeirError) as e:
        cat.drop_role("alice")
    assert e.value.sqlstate == "2BP01"
    assert e.value.message == 'role "alice" cannot be dropped because some objects depend on it'
    assert "materialize.public.t" in (e.value.detail or "")
    cat.drop_item(t.id)
    cat.grant_role("alice", "materialize")
    cat.drop_role("alice")
    assert cat.find_role("alice") is None and cat.role_members() == []
    with pytest.raises(WeirError) as e:
        cat.drop_role("mz_system")
    assert e.value.sqlstate == "42939"


# -- roles -------------------------------------------------------------------------------


def test_role_membership_is_transitive(cat: Catalog) -> None:
    for name in ("a", "b", "c", "d"):
        cat.create_role(name)
    assert cat.grant_role("a", "b") is True  # b is a member of a
    assert cat.grant_role("b", "c") is True
    assert cat.grant_role("b", "c") is False
    assert cat.is_member("a", "c") and cat.is_member("a", "b") and cat.is_member("c", "c")
    assert not cat.is_member("c", "a") and not cat.is_member("a", "d")
    a, b, c = (cat.get_role(n).id for n in "abc")
    assert cat.memberships(c) == {a, b, c}
    assert [(m.role_id, m.member_id) for m in cat.role_members("a")] == [(a, b)]
    with pytest.raises(WeirError) as e:
        cat.grant_role("c", "a")  # would make a cycle
    assert e.value.sqlstate == "0LP01"
    with pytest.raises(WeirError) as e:
        cat.grant_role("a", "a")
    assert e.value.sqlstate == "0LP01"
    assert cat.revoke_role("b", "c") is True and cat.revoke_role("b", "c") is False
    assert not cat.is_member("a", "c")


def test_role_attributes_and_passwords(cat: Catalog) -> None:
    r = cat.create_role("alice", login=True, password="s3cret")
    assert r.login and not r.superuser and r.inherit
    v = cat.scram_verifier("alice")
    assert re.fullmatch(r"SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+", v)
    assert cat.verify_password("alice", "s3cret") and not cat.verify_password("alice", "nope")
    assert not cat.verify_password("materialize", "") and not cat.verify_password("ghost", "x")
    r = cat.alter_role("alice", superuser=True)
    assert r.superuser and r.login and cat.scram_verifier("alice") == v  # None keeps
    cat.alter_role("alice", password="other")
    assert cat.verify_password("alice", "other") and not cat.verify_password("alice", "s3cret")
    cat.alter_role("alice", password="")
    assert cat.scram_verifier("alice") is None
    cat.alter_role("alice", password=v)  # a ready-made verifier is stored as is
    assert cat.scram_verifier("alice") == v
    cat.alter_role("alice", clear_password=True, login=False)
    assert cat.get_role("alice").password is None and not cat.get_role("alice").login
    assert cat.alter_role("alice", rename_to="alicia").name == "alicia"


def test_verifier_works_with_a_real_scram_exchange(cat: Catalog) -> None:
    cat.create_role("bob", login=True, password="hunter2")
    v = parse_verifier(cat.scram_verifier("bob"))
    mech = ScramMechanism("SCRAM-SHA-256")

    def auth_fn(username: str) -> tuple[bytes, bytes, bytes, int]:
        return v.salt, v.stored_key, v.server_key, v.iterations

    for password, ok in (("hunter2", True), ("wrong", False)):
        server = mech.make_server(auth_fn)
        client = ScramClient(["SCRAM-SHA-256"], "bob", password)
        server.set_client_first(client.get_client_first())
        client.set_server_first(server.get_server_first())
        if ok:
            server.set_client_final(client.get_client_final())
            client.set_server_final(server.get_server_final())
        else:
            with pytest.raises(Exception):  # noqa: B017 - scramp's ScramException
                server.set_client_final(client.get_client_final())


def test_verifier_matches_postgresql_derivation() -> None:
    # PostgreSQL computes the same keys for the same salt and iteration count
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    text = make_verifier("pencil", salt=salt)
    assert text.startswith("SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$")
    # RFC 7677's test vector: same salt, password 'pencil', 4096 iterations
    assert parse_verifier(text).server_key == base64.b64decode(
        "wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=")


# -- clusters ----------------------------------------------------------------------------


def test_clusters_and_replicas(cat: Catalog) -> None:
    cl = cat.create_cluster("c2", "2", 2)
    reps = cat.list_replicas(cl.id)
    assert [(r.name, r.size, r.incarnation) for r in reps] == [("r1", "2", 0), ("r2", "2", 0)]
    change = cat.alter_cluster("c2", replication_factor=3)
    assert [r.name for r in change.created] == ["r3"] and change.dropped == ()
    change = cat.alter_cluster("c2", replication_factor=1)
    assert sorted(r.name for r in change.dropped) == ["r2", "r3"]
    change = cat.alter_cluster("c2", size="4")
    assert [r.size for r in change.created] == ["4"] and change.dropped[0].id == reps[0].id
    assert change.cluster.size == "4" and change.cluster.replication_factor == 1
    un = cat.create_cluster("un", managed=False)
    assert (un.managed, un.size, un.replication_factor) == (False, None, None)
    assert cat.list_replicas(un.id) == []
    rep = cat.create_replica(un.id, "x", "1")
    assert cat.resolve_replica("un", "x") == rep
    assert cat.drop_replica(rep.id) == rep and cat.list_replicas(un.id) == []
    renamed = cat.alter_cluster("un", rename_to="un2").cluster
    assert renamed.name == "un2" and renamed.id == un.id


def test_incarnation_bump_is_durable(open_catalog: Opener) -> None:
    c1 = open_catalog()
    assert c1.bump_incarnation("u1") == 1
    assert c1.bump_incarnation("u1") == 2
    c1.close()
    c2 = open_catalog()
    assert c2.get_replica("u1").incarnation == 2
    assert c2.bump_incarnation("u1") == 3
    with pytest.raises(WeirError):
        c2.bump_incarnation("u99")


def test_oracle_is_monotonic_and_durable(open_catalog: Opener) -> None:
    c1 = open_catalog()
    assert c1.oracle_set(1000) == 1000
    assert c1.oracle_set(500) == 1000
    assert c1.oracle_get() == 1000
    assert c1.oracle_set(1_700_000_000_000) == 1_700_000_000_000
    c1.close()
    c2 = open_catalog()
    assert c2.oracle_get() == 1_700_000_000_000
    assert c2.bump_epoch() == 1 and c2.bump_epoch() == 2


def test_system_vars(open_catalog: Opener) -> None:
    c1 = open_catalog()
    assert c1.get_system_var("search_path") == "public"
    assert c1.set_system_var("statement_timeout", "10000") == "10s"
    assert c1.set_system_var("EXTRA_FLOAT_DIGITS", "2") == "2"
    with pytest.raises(WeirError) as e:
        c1.set_system_var("extra_float_digits", "7")
    assert e.value.sqlstate == "22023" and "1 .. 3" in e.value.message
    with pytest.raises(WeirError) as e:
        c1.set_system_var("no_such_thing", "1")
    assert err(e) == ("42704", 'unrecognized configuration parameter "no_such_thing"')
    with pytest.raises(WeirError) as e:
        c1.set_system_var("server_version", "16")
    assert e.value.sqlstate == "55P02"
    c1.close()
    c2 = open_catalog()
    assert c2.get_system_var("statement_timeout") == "10s"
    assert c2.list_system_vars()["extra_float_digits"] == "2"
    c2.reset_system_var("extra_float_digits")
    assert c2.get_system_var("extra_float_digits") == "1"


# -- items -------------------------------------------------------------------------------


def test_items_roundtrip_and_alter(cat: Catalog) -> None:
    t = table(cat, "t")
    assert t.columns[1].default == "'x'" and not t.columns[0].nullable
    assert t.full_name == "materialize.public.t" and t.oid >= 20000
    assert cat.find_item_by_oid(t.oid) == t
    h = cat.create_item("hold", public(cat), "h", [], "CREATE HOLD h ON t", {"as_of": 5},
                        dependencies=[t.id])
    assert h.dependencies == (t.id,) and h.definition == {"as_of": 5}
    h2 = cat.alter_item(h.id, definition={"as_of": 9})
    assert h2.definition == {"as_of": 9} and h2.dependencies == (t.id,)
    with pytest.raises(WeirError) as e:
        cat.alter_item(h.id, name="t")
    assert e.value.sqlstate == "42P07"
    assert cat.alter_item(t.id, name="t2").name == "t2"
    assert {i.kind for i in cat.list_items(schema_id=public(cat))} == {"table", "hold"}
    assert [i.name for i in cat.list_items("hold")] == ["h"]
    cat.grant_privileges("item", t.id, "p", "r", "u1")
    cat.grant_privileges("item", t.id, "p", "a", "u1")
    [p] = cat.list_privileges("item", t.id)
    assert p.privileges == "ar"
    cat.revoke_privileges("item", t.id, "p", "ar")
    assert cat.list_privileges("item", t.id) == []


def test_shares_its_database_with_pyiceberg(open_catalog: Opener, tmp_path) -> None:  # noqa: ANN001
    from pyiceberg.catalog.sql import SqlCatalog

    cat = open_catalog()
    ice = SqlCatalog("weir", uri=cat.url, warehouse=f"file://{tmp_path}")
    ice.create_namespace("ns")
    table(cat, "t")
    cat.close()
    again = open_catalog()
    assert again.builtin_changes == [] and again.find_item(public(again), "t") is not None
    assert ("ns",) in ice.list_namespaces()


def test_two_catalogs_on_one_sqlite_file(tmp_path) -> None:  # noqa: ANN001
    url = f"sqlite:///{tmp_path / 'catalog.db'}"
    a, b = Catalog(url), Catalog(url)
    try:
        t = table(a, "t")
        assert b.get_item(t.id) == t
        assert table(b, "t2").id != t.id
        b.oracle_set(50)
        assert a.oracle_get() == 50
    finally:
        a.close()
        b.close()
