"""AUCTION: an auction house, as Materialize's AUCTION load generator models it.

`organizations`, `users` and `accounts` are fixed when the source is created (the
snapshot). Each tick then either starts a new auction (`auctions`) or places the next
bid in the ongoing one (`bids`): an auction gets 2 to 9 bids, one per tick, after which
the next tick starts another auction. An auction ends 10 seconds after it starts; its
i-th bid is timed i seconds after the start. Ids are as in Materialize: organizations
and users from 1, account id = organization id + 42 with a balance of 10000, auctions
from 1, and bid id = auction id * 10 + bid number. Nothing is ever retracted.

The names are weir's own (synthetic), not Materialize's lists; the counts are close.
"""

from __future__ import annotations

from typing import Any

from weir import types as T
from weir.storage.sources.common import Batch, Relation, Row, empty_batch, rng

RELATIONS: list[Relation] = [
    ("organizations", [("id", T.INT8, False), ("name", T.TEXT, False)]),
    ("users", [("id", T.INT8, False), ("org_id", T.INT8, False), ("name", T.TEXT, False)]),
    ("accounts", [("id", T.INT8, False), ("org_id", T.INT8, False), ("balance", T.INT8, False)]),
    ("auctions", [("id", T.INT8, False), ("seller", T.INT8, False), ("item", T.TEXT, False),
                  ("end_time", T.TIMESTAMPTZ, False)]),
    ("bids", [("id", T.INT8, False), ("buyer", T.INT8, False), ("auction_id", T.INT8, False),
              ("amount", T.INT4, False), ("bid_time", T.TIMESTAMPTZ, False)]),
]

_ORG_HEADS = ["Acme", "Blue", "Cobalt", "Delta", "Ember", "Falcon", "Granite", "Harbor", "Iris",
              "Juniper", "Kestrel", "Lumen", "Maple", "Nimbus", "Orbit"]
_ORG_TAILS = ["works", "tech", "labs", "corp", "systems"]
ORGANIZATIONS: list[str] = [h + t for t in _ORG_TAILS for h in _ORG_HEADS]  # 75, as in Materialize

_FIRST = ["Ada", "Alan", "Alice", "Amir", "Anna", "Arjun", "Ben", "Bianca", "Carla", "Chen",
          "Clara", "Dan", "Dara", "Diego", "Elena", "Emil", "Eva", "Farah", "Felix", "Grace",
          "Hana", "Hugo", "Ian", "Ines", "Ivan", "Jade", "Jonas", "Julia", "Kai", "Kofi",
          "Lara", "Leo", "Lina", "Luca", "Maya", "Milo", "Mira", "Nadia", "Nico", "Noor",
          "Olga", "Omar", "Paul", "Priya", "Quinn", "Rafael", "Rosa", "Ruth", "Sam", "Sara",
          "Sofia", "Tariq", "Tess", "Theo", "Uma", "Vera", "Victor", "Wen", "Xavier", "Yara",
          "Yusuf", "Zara", "Zoe", "Zhou"]
_LAST = ["Abbott", "Baker", "Castro", "Dalton", "Eriksen", "Fischer", "Garcia", "Hughes",
         "Ibrahim", "Jensen", "Kowalski", "Larsen", "Moreau", "Nakamura", "Okafor", "Petrov",
         "Quintero", "Rossi", "Schmidt", "Tanaka", "Usman", "Varga", "Walsh", "Xu", "Yilmaz",
         "Zimmer", "Alvarez", "Brennan", "Cohen", "Dubois", "Evans", "Ferreira", "Gupta",
         "Horvat", "Ito", "Jovanovic", "Kim", "Lindqvist", "Mendes", "Novak", "Olsen", "Park",
         "Quinn", "Reyes", "Silva", "Torres", "Ueda", "Vogel", "Weber", "Young", "Zhang",
         "Amato", "Bauer", "Costa", "Diaz", "Engel", "Fontaine", "Grant", "Hale", "Ivanova",
         "Janssen", "Keller", "Lopez", "Murphy"]
USERS: list[str] = [f"{f} {s}" for s in _LAST for f in _FIRST]  # 4096 users

ITEMS = ["Signed Memorabilia", "City Bar Crawl", "Best Pizza in Town", "Gift Basket", "Custom Art"]

ACCOUNT_ID_OFFSET = 42
ACCOUNT_BALANCE = 10_000
MAX_BIDS = 10  # an auction gets 2..MAX_BIDS-1 bids; bid ids are auction id * MAX_BIDS + n
AUCTION_LENGTH_MS = 10_000

_AUCTION_STREAM = 1
_BID_STREAM = 2


class Auction:
    def __init__(self, seed: int, tick_ms: int) -> None:
        self.seed = seed
        self.tick_ms = tick_ms

    def _fixed(self) -> dict[str, Batch]:
        n_orgs = len(ORGANIZATIONS)
        orgs = [(i + 1, name) for i, name in enumerate(ORGANIZATIONS)]
        users = [(i + 1, i % n_orgs + 1, name) for i, name in enumerate(USERS)]
        accounts = [(org + ACCOUNT_ID_OFFSET, org, ACCOUNT_BALANCE) for org in range(1, n_orgs + 1)]
        return {"organizations": (orgs, [1] * len(orgs)), "users": (users, [1] * len(users)),
                "accounts": (accounts, [1] * len(accounts))}

    def initial_state(self, as_of: int, epoch_ms: int) -> dict[str, Any]:
        return self._replay(as_of, epoch_ms, None)

    def snapshot(self, as_of: int, epoch_ms: int) -> dict[str, Batch]:
        """The fixed relations plus whatever the first `as_of` ticks emitted."""
        out = self._fixed()
        out["auctions"], out["bids"] = empty_batch(), empty_batch()
        self._replay(as_of, epoch_ms, out)
        return out

    def _replay(self, ticks: int, epoch_ms: int, out: dict[str, Batch] | None) -> dict[str, Any]:
        state: dict[str, Any] = {"auction": 0, "nbids": 0, "next_bid": 0, "auction_ms": epoch_ms}
        for t in range(ticks):
            batches = self.tick(t, state, epoch_ms + t * self.tick_ms)
            if out is not None:
                for rel, (rows, diffs) in batches.items():
                    out[rel][0].extend(rows)
                    out[rel][1].extend(diffs)
        return state

    def tick(self, tick: int, state: dict[str, Any], now_ms: int) -> dict[str, Batch]:
        """Start an auction when the last one has all its bids, else place its next bid."""
        auctions: list[Row] = []
        bids: list[Row] = []
        if state["next_bid"] >= state["nbids"]:
            auction = state["auction"] + 1
            r = rng(self.seed, _AUCTION_STREAM, auction)
            seller = r.randint(1, len(USERS))
            item = r.choice(ITEMS)
            nbids = r.randrange(2, MAX_BIDS)
            state.update(auction=auction, nbids=nbids, next_bid=0, auction_ms=now_ms)
            auctions.append((auction, seller, item, (now_ms + AUCTION_LENGTH_MS) * 1000))
        else:
            auction, n = state["auction"], state["next_bid"]
            r = rng(self.seed, _BID_STREAM, auction, n)
            buyer = r.randint(1, len(USERS))
            amount = r.randint(1, 99)
            bids.append((auction * MAX_BIDS + n, buyer, auction, amount,
                         (state["auction_ms"] + n * 1000) * 1000))
            state["next_bid"] = n + 1
        return {"auctions": (auctions, [1] * len(auctions)), "bids": (bids, [1] * len(bids))}
