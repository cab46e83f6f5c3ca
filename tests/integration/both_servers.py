"""A weir session and a PostgreSQL 15 session over the same objects, for tests that compare
the two servers statement by statement."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tests.integration.server import WeirServer


def paired(server: WeirServer, pg: object, database: str, setup: list[str],
           pg_first: tuple[str, ...] = ()) -> Iterator[tuple[psycopg.Connection, psycopg.Connection]]:
    """(weir, PostgreSQL) autocommit connections, each having run `setup` (PostgreSQL in a
    fresh database, after `pg_first`)."""
    pg.create_database(database)  # type: ignore[attr-defined]
    with server.connect() as w, psycopg.connect(pg.dsn(database), autocommit=True) as p:  # type: ignore[attr-defined]
        for sql in pg_first:
            p.execute(sql)
        for sql in setup:
            w.execute(sql)
            p.execute(sql)
        yield w, p


def errors(conns: tuple[psycopg.Connection, ...], sql: str) -> list[tuple[str | None, str | None]]:
    """The SQLSTATE and primary message each connection fails `sql` with."""
    got = []
    for conn in conns:
        with pytest.raises(psycopg.Error) as info:
            conn.execute(sql)
        got.append((info.value.sqlstate, info.value.diag.message_primary))
    return got
