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


def _differences(both: Both, queries: list[tuple[str, str]], when: str) -> list[str]:
    """For each (weir relation, PostgreSQL query): a line if weir's contents differ."""
    w, p = both
    out = []
    for name, sql in queries:
        try:
            got: Any = normalized(w.execute(f"SELECT * FROM {name}").fetchall())
        except psycopg.Error as e:
            got = f"error {e.sqlstate}: {e}"
        want = normalized(p.execute(sql).fetchall())
        if got != want:
            out.append(f"{name} {when}: {sql}\n    weir:       {got}\n    PostgreSQL: {want}")
    return out


def _create_all(w: psycopg.Connection, statements: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """Run each (name, CREATE statement); the names created and a line per refusal."""
    created, refused = [], []
    for name, sql in statements:
        try:
            w.execute(sql)
            created.append(name)
        except psycopg.Error as e:
            refused.append(f"{name}: {sql}\n    refused: {e.sqlstate}: {e}")
    return created, refused


BATCH = 8  # views that exist at once: each idle view still costs its replica a commit a second


def materialized_views_as_postgres(both: Both, prefix: str, queries: list[str],
                                   change: tuple[str, str] | None = None) -> None:
    """Each query as weir's materialized view `prefix`N: its contents equal PostgreSQL's
    SELECT, and again after `change` (a statement run on both, then its undoing). BATCH
    views exist at once, so a batch waits for hydration once, not once per query; every
    difference is reported, by view."""
    bad: list[str] = []
    for first in range(0, len(queries), BATCH):
        bad += _materialized_batch(both, prefix, list(enumerate(queries))[first:first + BATCH], change)
    assert not bad, f"{len(bad)} of {len(queries)} materialized views differ:\n" + "\n".join(bad)


def _materialized_batch(both: Both, prefix: str, queries: list[tuple[int, str]],
                        change: tuple[str, str] | None) -> list[str]:
    w, p = both
    created, bad = _create_all(w, [(f"{prefix}{n}", f"CREATE MATERIALIZED VIEW {prefix}{n} AS {q}") for n, q in queries])
    try:
        pairs = [(f"{prefix}{n}", q) for n, q in queries if f"{prefix}{n}" in created]
        bad += _differences(both, pairs, "as created")
        if change is not None:
            for conn in both:
                conn.execute(change[0])
            bad += _differences(both, pairs, f"after {change[0]}")
    finally:
        for name in created:
            w.execute(f"DROP MATERIALIZED VIEW IF EXISTS {name}")
        if change is not None:
            for conn in both:
                conn.execute(change[1])
    return bad


def indexed_views_as_postgres(both: Both, prefix: str, queries: list[str]) -> None:
    """Each query as weir's view `prefix`N with a default index: read from the index,
    PostgreSQL's rows. BATCH indexes exist at once (one hydration wait per batch)."""
    w, _ = both
    bad: list[str] = []
    for first in range(0, len(queries), BATCH):
        batch = list(enumerate(queries))[first:first + BATCH]
        views, refused = _create_all(w, [(f"{prefix}{n}", f"CREATE VIEW {prefix}{n} AS {q}") for n, q in batch])
        bad += refused
        try:
            indexed, refused = _create_all(w, [(v, f"CREATE DEFAULT INDEX ON {v}") for v in views])
            bad += refused
            bad += _differences(both, [(f"{prefix}{n}", q) for n, q in batch if f"{prefix}{n}" in indexed],
                                "from its index")
        finally:
            for v in views:
                w.execute(f"DROP VIEW IF EXISTS {v} CASCADE")
    assert not bad, f"{len(bad)} of {len(queries)} indexed views differ:\n" + "\n".join(bad)
