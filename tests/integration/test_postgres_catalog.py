"""`weir serve --catalog-url postgresql+psycopg://...`: the catalog (and the Iceberg SQL
catalog beside it) on a real PostgreSQL server, durable across a restart."""

from __future__ import annotations

from pathlib import Path

from tests.integration.server import WeirServer
from tests.pg_server import PgServer, pg_server  # noqa: F401  (session-scoped fixture)


def test_serve_with_postgres_catalog(tmp_path: Path, java: None, pg_server: PgServer) -> None:  # noqa: F811
    url = pg_server.create_database("weir_catalog_e2e")
    srv = WeirServer(tmp_path / "data", extra_args=["--catalog-url", url]).start()
    try:
        with srv.connect() as c:
            c.execute("CREATE TABLE pgc (id int, name text)")
            c.execute("INSERT INTO pgc VALUES (1, 'a'), (2, 'b')")
            c.execute("CREATE VIEW pgc_v AS SELECT name FROM pgc WHERE id = 2")
        srv.stop()
        assert not (tmp_path / "data" / "catalog.db").exists(), "catalog must live in PostgreSQL"
        srv.start()
        with srv.connect() as c:
            assert c.execute("SELECT * FROM pgc_v").fetchall() == [("b",)]
            assert c.execute("SELECT count(*) FROM pgc").fetchone() == (2,)
        import psycopg

        with psycopg.connect(pg_server.dsn("weir_catalog_e2e")) as pc:
            names = {r[0] for r in pc.execute("SELECT name FROM weir_items").fetchall()}
            assert {"pgc", "pgc_v"} <= names
    finally:
        srv.stop()
