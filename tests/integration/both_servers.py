"""A weir session and a PostgreSQL 15 session over the same objects, for tests that compare
the two servers statement by statement."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

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


Both = tuple[psycopg.Connection, psycopg.Connection]


def _norm(v: Any) -> Any:
    """A value as both servers mean it: numerics without trailing zeros (as Materialize
    prints them), instants in UTC."""
    if isinstance(v, Decimal) and v.is_finite():
        return v.normalize()
    if isinstance(v, dt.datetime) and v.tzinfo:
        return v.astimezone(dt.UTC)
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return v


def normalized(rows: list[tuple[Any, ...]]) -> list[str]:
    """Rows as a sorted list of their normalized values' text (a multiset compares equal)."""
    return sorted(str(tuple(_norm(v) for v in r)) for r in rows)


def select_as_postgres(both: Both, sql: str, binary: bool = False) -> None:
    """`sql` as a SELECT: the same column names and types and the same rows on both."""
    w, p = both
    with w.cursor(binary=binary) as cw, p.cursor(binary=binary) as cp:
        cw.execute(sql)
        cp.execute(sql)
        assert [(d.name, d.type_code) for d in cw.description or []] == \
            [(d.name, d.type_code) for d in cp.description or []]
        assert normalized(cw.fetchall()) == normalized(cp.fetchall())


def materialized_view_as_postgres(both: Both, name: str, sql: str, change: tuple[str, str] | None = None) -> None:
    """`sql` as weir's materialized view `name`: its contents equal PostgreSQL's SELECT, and
    again after `change` (a statement run on both, then its undoing)."""
    w, p = both
    w.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")
    try:
        assert normalized(w.execute(f"SELECT * FROM {name}").fetchall()) == normalized(p.execute(sql).fetchall())
        if change is not None:
            for conn in both:
                conn.execute(change[0])
            assert normalized(w.execute(f"SELECT * FROM {name}").fetchall()) == normalized(p.execute(sql).fetchall())
    finally:
        w.execute(f"DROP MATERIALIZED VIEW IF EXISTS {name}")
        if change is not None:
            for conn in both:
                conn.execute(change[1])


def indexed_view_as_postgres(both: Both, name: str, sql: str) -> None:
    """`sql` as weir's view `name` with a default index: read from the index, PostgreSQL's rows."""
    w, p = both
    w.execute(f"CREATE VIEW {name} AS {sql}")
    try:
        w.execute(f"CREATE DEFAULT INDEX ON {name}")
        assert normalized(w.execute(f"SELECT * FROM {name}").fetchall()) == normalized(p.execute(sql).fetchall())
    finally:
        w.execute(f"DROP VIEW IF EXISTS {name} CASCADE")
