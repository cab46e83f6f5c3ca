"""Materialized views are correct: after each round of changes, every view read at a
timestamp equals its query run as a one-off Spark batch over the inputs at that same
timestamp (one read-only transaction: every read at its timestamp, held), for the query shapes that matter (filter/project, join, aggregates, DISTINCT,
outer join, window function)."""

from __future__ import annotations

import decimal
import random

import psycopg
import pytest

from tests.integration.server import WeirServer

SHAPES = {
    "mvc_filter": "SELECT id, amount * 2 AS dbl, note FROM mvc_bids WHERE amount > 10",
    "mvc_join": "SELECT a.id, a.item, b.amount FROM mvc_auctions a JOIN mvc_bids b ON a.id = b.auction_id",
    "mvc_agg": "SELECT auction_id, count(*) AS n, sum(amount) AS total, min(amount) AS lo, max(amount) AS hi, "
               "avg(amount) AS mean FROM mvc_bids GROUP BY auction_id",
    "mvc_distinct": "SELECT DISTINCT auction_id, amount > 50 AS big FROM mvc_bids",
    "mvc_outer": "SELECT a.id, a.item, b.amount FROM mvc_auctions a LEFT JOIN mvc_bids b ON a.id = b.auction_id",
    "mvc_window": "SELECT auction_id, amount, row_number() OVER (PARTITION BY auction_id ORDER BY amount DESC, id) "
                  "AS rank FROM mvc_bids",
}


def _norm(rows: list[tuple]) -> list[tuple]:
    def v(x: object) -> object:
        return round(x, 6) if isinstance(x, (float, decimal.Decimal)) else x

    return sorted((tuple(v(x) for x in r) for r in rows), key=repr)


@pytest.mark.timeout(900)
def test_materialized_views_match_a_batch_at_the_same_timestamp(server: WeirServer) -> None:
    rng = random.Random(11)
    with server.connect() as c:
        c.execute("CREATE TABLE mvc_auctions (id int, item text)")
        c.execute("CREATE TABLE mvc_bids (id int, auction_id int, amount int, note text)")
        c.execute("INSERT INTO mvc_auctions VALUES " + ", ".join(f"({i}, 'item{i}')" for i in range(8)))
        c.execute("INSERT INTO mvc_bids VALUES " + ", ".join(
            f"({i}, {rng.randrange(10)}, {rng.randrange(100)}, {'NULL' if i % 5 == 0 else repr(f'n{i}')})"
            for i in range(40)))
        for name, q in SHAPES.items():
            c.execute(f"CREATE MATERIALIZED VIEW {name} AS {q}")
        try:
            next_id = 40
            for round_ in range(3):
                if round_:
                    for _ in range(6):
                        c.execute("INSERT INTO mvc_bids VALUES (%s, %s, %s, %s)",
                                  (next_id, rng.randrange(10), rng.randrange(100), f"n{next_id}"))
                        next_id += 1
                    c.execute("UPDATE mvc_bids SET amount = amount + 7 WHERE id %% 3 = %s", (round_ % 3,))
                    c.execute("DELETE FROM mvc_bids WHERE id %% 11 = %s", (round_,))
                    c.execute("INSERT INTO mvc_auctions VALUES (%s, %s)", (100 + round_, f"new{round_}"))
                # one read-only transaction reads everything at one timestamp and holds it
                c.execute("BEGIN")
                batches = {name: _norm(c.execute(q).fetchall()) for name, q in SHAPES.items()}
                ts = c.execute("SELECT mz_now()::text FROM mvc_auctions LIMIT 1").fetchone()[0]
                for name in SHAPES:
                    got = _norm(c.execute(f"SELECT * FROM {name}").fetchall())
                    assert got == batches[name], f"round {round_}: {name} differs from its query at {ts}"
                c.execute("COMMIT")
                assert batches["mvc_agg"] and batches["mvc_window"] and batches["mvc_outer"]
        finally:
            if c.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                c.execute("ROLLBACK")
            for name in SHAPES:
                c.execute(f"DROP MATERIALIZED VIEW IF EXISTS {name}")
            c.execute("DROP TABLE mvc_bids")
            c.execute("DROP TABLE mvc_auctions")
