"""Object privileges (issue 11, part 8) through the wire protocol: each privilege refused
with 42501 naming it, then allowed once granted; owners, superusers and PUBLIC's defaults;
GRANT / REVOKE, ALTER ... OWNER TO, SHOW PRIVILEGES and the privileges columns."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tests.integration.server import WeirServer


def _denied(c: psycopg.Connection, sql: str, *words: str) -> None:
    with pytest.raises(psycopg.Error) as info:
        c.execute(sql)
    err = info.value
    assert err.sqlstate == "42501", (sql, err.sqlstate, str(err))
    text = f"{err} {err.diag.message_detail or ''}"
    for w in words:
        assert w in text, (sql, w, text)


@pytest.fixture
def roles(server: WeirServer) -> Iterator[tuple[psycopg.Connection, psycopg.Connection, psycopg.Connection]]:
    """(superuser, pv_alice, pv_bob) sessions, and a schema pv with a table and a view."""
    with server.connect() as su:
        su.execute("CREATE ROLE pv_alice LOGIN")
        su.execute("CREATE ROLE pv_bob LOGIN")
        su.execute("CREATE SCHEMA pv")
        su.execute("CREATE TABLE pv.t (a int)")
        su.execute("INSERT INTO pv.t VALUES (1)")
        su.execute("CREATE VIEW pv.v AS SELECT a FROM pv.t")
        dsn = f"host=127.0.0.1 port={server.sql_port} dbname=materialize"
        with psycopg.connect(f"{dsn} user=pv_alice", autocommit=True) as alice, \
                psycopg.connect(f"{dsn} user=pv_bob", autocommit=True) as bob:
            try:
                yield su, alice, bob
            finally:
                su.execute("DROP SCHEMA pv CASCADE")
                su.execute("REVOKE ALL ON CLUSTER quickstart FROM pv_alice")
                su.execute("GRANT USAGE ON CLUSTER quickstart TO PUBLIC")
        su.execute("DROP ROLE pv_alice")
        su.execute("DROP ROLE pv_bob")


def test_each_privilege_refused_then_granted(roles: tuple) -> None:
    su, alice, bob = roles
    # USAGE on the schema comes first, then SELECT on the relation
    _denied(alice, "SELECT * FROM pv.t", "USAGE", "pv")
    su.execute("GRANT USAGE ON SCHEMA pv TO pv_alice")
    _denied(alice, "SELECT * FROM pv.t", "SELECT", "pv.t")
    _denied(alice, "COPY (SUBSCRIBE pv.t) TO STDOUT", "SELECT")
    su.execute("GRANT SELECT ON TABLE pv.t TO pv_alice")
    assert alice.execute("SELECT a FROM pv.t").fetchall() == [(1,)]
    # a view is checked itself (read with its owner's rights on what it reads)
    _denied(alice, "SELECT * FROM pv.v", "SELECT", "pv.v")
    su.execute("GRANT SELECT ON VIEW pv.v TO pv_alice")
    assert alice.execute("SELECT a FROM pv.v").fetchall() == [(1,)]
    # writes: INSERT, UPDATE and DELETE each (UPDATE and DELETE also read)
    _denied(alice, "INSERT INTO pv.t VALUES (2)", "INSERT")
    su.execute("GRANT INSERT ON pv.t TO pv_alice")
    alice.execute("INSERT INTO pv.t VALUES (2)")
    _denied(alice, "UPDATE pv.t SET a = 3 WHERE a = 2", "UPDATE")
    su.execute("GRANT UPDATE ON pv.t TO pv_alice")
    alice.execute("UPDATE pv.t SET a = 3 WHERE a = 2")
    _denied(alice, "DELETE FROM pv.t WHERE a = 3", "DELETE")
    su.execute("GRANT DELETE ON pv.t TO pv_alice")
    alice.execute("DELETE FROM pv.t WHERE a = 3")
    assert alice.execute("SELECT a FROM pv.t").fetchall() == [(1,)]
    # bob has none of it; REVOKE takes a privilege back
    _denied(bob, "SELECT * FROM pv.t", "USAGE")
    su.execute("REVOKE INSERT ON pv.t FROM pv_alice")
    _denied(alice, "INSERT INTO pv.t VALUES (2)", "INSERT")
    # USAGE on the cluster a query runs on (PUBLIC has it on quickstart by default)
    su.execute("REVOKE USAGE ON CLUSTER quickstart FROM PUBLIC")
    _denied(alice, "SELECT * FROM pv.t", "USAGE", "quickstart")
    su.execute("GRANT USAGE ON CLUSTER quickstart TO pv_alice")
    assert alice.execute("SELECT a FROM pv.t").fetchall() == [(1,)]
    assert su.execute("SELECT a FROM pv.t").fetchall() == [(1,)]  # superusers pass every check
    # a privilege that does not apply to the object is refused, and a non-owner may not grant
    with pytest.raises(psycopg.Error) as info:
        su.execute("GRANT INSERT ON VIEW pv.v TO pv_bob")
    assert info.value.sqlstate == "0LP01"
    _denied(alice, "GRANT SELECT ON pv.t TO pv_bob", "owner")


def test_create_ownership_and_show(roles: tuple) -> None:
    su, alice, bob = roles
    su.execute("GRANT USAGE ON SCHEMA pv TO pv_alice")
    _denied(alice, "CREATE TABLE pv.mine (a int)", "CREATE", "pv")
    su.execute("GRANT CREATE ON SCHEMA pv TO pv_alice")
    alice.execute("CREATE TABLE pv.mine (a int)")
    alice.execute("INSERT INTO pv.mine VALUES (7)")  # an owner holds every privilege on it
    assert alice.execute("SELECT a FROM pv.mine").fetchall() == [(7,)]
    _denied(alice, "DROP TABLE pv.t", "owner")
    # objects on a cluster need CREATE on it; an index, ownership of its relation
    _denied(alice, "CREATE INDEX mine_i ON pv.mine (a)", "CREATE", "quickstart")
    _denied(alice, "CREATE INDEX t_i ON pv.t (a)", "owner")
    su.execute("GRANT CREATE ON CLUSTER quickstart TO pv_alice")
    alice.execute("CREATE INDEX mine_i ON pv.mine (a)")
    # holds: CREATE on the schema and SELECT on every object
    _denied(alice, "CREATE HOLD pv.h ON pv.t", "SELECT")
    alice.execute("CREATE HOLD pv.h ON pv.mine, pv.mine_i")
    _denied(bob, "ALTER HOLD pv.h ADVANCE", "owner")
    # durable subscriptions: the owner reads, acknowledges and drops them
    alice.execute("CREATE DURABLE SUBSCRIPTION pv.ds WITH (ACKNOWLEDGE WITHIN '1h') AS SELECT a FROM pv.mine")
    _denied(bob, "ACKNOWLEDGE DURABLE SUBSCRIPTION pv.ds UP TO 1", "owner")
    _denied(bob, "COPY (SUBSCRIBE USING DURABLE SUBSCRIPTION pv.ds) TO STDOUT", "owner")
    alice.execute("DROP DURABLE SUBSCRIPTION pv.ds")
    alice.execute("DROP HOLD pv.h")
    # ALTER ... OWNER TO: only to a role one belongs to (superusers: any)
    _denied(alice, "ALTER TABLE pv.mine OWNER TO pv_bob", "member")
    su.execute("ALTER TABLE pv.mine OWNER TO pv_bob")
    _denied(alice, "DROP TABLE pv.mine", "owner")
    owner = su.execute("SELECT r.name FROM mz_catalog.mz_tables t JOIN mz_catalog.mz_roles r ON r.id = t.owner_id "
                       "WHERE t.name = 'mine'").fetchone()
    assert owner == ("pv_bob",)
    # SHOW PRIVILEGES and the privileges column say the same
    su.execute("GRANT SELECT ON pv.t TO pv_alice")
    shown = alice.execute("SHOW PRIVILEGES ON TABLES FOR pv_alice").fetchall()
    assert ("materialize", "pv_alice", "materialize", "pv", "t", "table", "SELECT") in shown
    (alice_id,) = su.execute("SELECT id FROM mz_catalog.mz_roles WHERE name = 'pv_alice'").fetchone()
    (acl,) = su.execute("SELECT privileges::text FROM mz_catalog.mz_tables WHERE name = 't' AND "
                        "schema_id = (SELECT id FROM mz_catalog.mz_schemas WHERE name = 'pv')").fetchone()
    assert f"{alice_id}=r/" in acl
    clusters = {r[1]: r[6] for r in su.execute("SHOW PRIVILEGES ON CLUSTERS").fetchall() if r[4] == "quickstart"}
    assert clusters.get("PUBLIC") == "USAGE"


def test_has_privilege_functions_answer_from_the_grants(roles: tuple) -> None:
    """has_table / schema / database_privilege answer what the privilege checks above
    enforce: a role's own grants, PUBLIC's, ownership and superuser, asked by name or of
    the current user (they failed on a pattern that was not a constant before)."""
    su, alice, bob = roles

    def has(c: psycopg.Connection, sql: str) -> list[bool]:
        return list(c.execute(f"SELECT {sql}").fetchone())

    assert has(su, "has_table_privilege('pv_alice', 'pv.t', 'SELECT'), "
                   "has_table_privilege('pv_alice', 'pv.t', 'INSERT'), "
                   "has_schema_privilege('pv_alice', 'pv', 'USAGE'), "
                   "has_table_privilege('pv.t', 'SELECT, INSERT'), "
                   "has_database_privilege('pv_alice', 'materialize', 'USAGE')") == [False, False, False, True, True]
    # every role may connect (weir checks no CONNECT privilege; PostgreSQL grants it to PUBLIC)
    assert has(su, "has_database_privilege('pv_alice', 'materialize', 'CONNECT'), "
                   "has_database_privilege('pv_alice', 'materialize', 'CREATE')") == [True, False]
    su.execute("GRANT USAGE ON SCHEMA pv TO pv_alice")
    su.execute("GRANT SELECT ON TABLE pv.t TO pv_alice")
    su.execute("GRANT INSERT ON TABLE pv.t TO PUBLIC")
    assert has(alice, "has_table_privilege('pv.t', 'SELECT'), has_table_privilege('pv.t', 'INSERT'), "
                      "has_table_privilege('pv.t', 'SELECT, INSERT'), has_table_privilege('pv.t', 'DELETE'), "
                      "has_schema_privilege('pv', 'USAGE'), has_schema_privilege('pv', 'CREATE')") \
        == [True, True, True, False, True, False]
    # bob has only PUBLIC's grant; the answers hold for what the server then does
    assert has(bob, "has_table_privilege('pv_bob', 'pv.t', 'SELECT'), "
                    "has_table_privilege('pv_bob', 'pv.t', 'INSERT')") == [False, True]
    assert alice.execute("SELECT count(*) FROM pv.t").fetchone() == (1,)
    su.execute("REVOKE SELECT ON TABLE pv.t FROM pv_alice")
    assert has(alice, "has_table_privilege('pv.t', 'SELECT')") == [False]
    _denied(alice, "SELECT * FROM pv.t", "SELECT", "pv.t")
