"""TPCH: the eight TPC-H relations at a SCALE FACTOR, as Materialize's TPCH generator.

Cardinalities follow the TPC-H specification (and Materialize): supplier 10,000 x SF,
part 200,000 x SF (4 partsupp rows each), customer 150,000 x SF, orders 1,500,000 x SF
with 1 to 7 lineitems each, 25 nations and 5 regions; every count is at least 1. Keys,
value ranges, dates and the derived columns (retail price, order status, total price,
line status, return flag, sparse order keys) follow the specification's rules; the
comment texts are simplified (slices of a seeded word soup, not dbgen's grammar).

If a TICK INTERVAL is given, each tick replaces one random order, keeping its key:
the old order and its lineitems are retracted and a regenerated order with new
lineitems is inserted (Materialize's behaviour). Without one the data never changes.
An order is a pure function of (seed, order number, version), so the generator's state
is just the version of each order changed so far.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Sequence
from typing import Any, TypeVar

from weir import types as T
from weir.storage.sources.common import Batch, Column, Relation, Row, rng
from weir.storage.sources.tpch_text import (
    CONTAINERS,
    INSTRUCTIONS,
    MODES,
    NATIONS,
    PART_NAMES,
    PRIORITIES,
    REGIONS,
    SEGMENTS,
    TYPES,
    text_pool,
)

_ID = T.INT8
_MONEY = T.numeric(15, 2)  # TPC-H's DECIMAL(15,2); Materialize uses numeric with scale 2


def _cols(*spec: tuple[str, T.PgType]) -> list[Column]:
    return [(name, t, False) for name, t in spec]


RELATIONS: list[Relation] = [
    ("supplier", _cols(("s_suppkey", _ID), ("s_name", T.TEXT), ("s_address", T.TEXT),
                       ("s_nationkey", _ID), ("s_phone", T.TEXT), ("s_acctbal", _MONEY),
                       ("s_comment", T.TEXT))),
    ("part", _cols(("p_partkey", _ID), ("p_name", T.TEXT), ("p_mfgr", T.TEXT), ("p_brand", T.TEXT),
                   ("p_type", T.TEXT), ("p_size", T.INT4), ("p_container", T.TEXT),
                   ("p_retailprice", _MONEY), ("p_comment", T.TEXT))),
    ("partsupp", _cols(("ps_partkey", _ID), ("ps_suppkey", _ID), ("ps_availqty", T.INT4),
                       ("ps_supplycost", _MONEY), ("ps_comment", T.TEXT))),
    ("customer", _cols(("c_custkey", _ID), ("c_name", T.TEXT), ("c_address", T.TEXT),
                       ("c_nationkey", _ID), ("c_phone", T.TEXT), ("c_acctbal", _MONEY),
                       ("c_mktsegment", T.TEXT), ("c_comment", T.TEXT))),
    ("orders", _cols(("o_orderkey", _ID), ("o_custkey", _ID), ("o_orderstatus", T.TEXT),
                     ("o_totalprice", _MONEY), ("o_orderdate", T.DATE), ("o_orderpriority", T.TEXT),
                     ("o_clerk", T.TEXT), ("o_shippriority", T.INT4), ("o_comment", T.TEXT))),
    ("lineitem", _cols(("l_orderkey", _ID), ("l_partkey", _ID), ("l_suppkey", _ID),
                       ("l_linenumber", T.INT4), ("l_quantity", _MONEY), ("l_extendedprice", _MONEY),
                       ("l_discount", _MONEY), ("l_tax", _MONEY), ("l_returnflag", T.TEXT),
                       ("l_linestatus", T.TEXT), ("l_shipdate", T.DATE), ("l_commitdate", T.DATE),
                       ("l_receiptdate", T.DATE), ("l_shipinstruct", T.TEXT), ("l_shipmode", T.TEXT),
                       ("l_comment", T.TEXT))),
    ("nation", _cols(("n_nationkey", _ID), ("n_name", T.TEXT), ("n_regionkey", _ID),
                     ("n_comment", T.TEXT))),
    ("region", _cols(("r_regionkey", _ID), ("r_name", T.TEXT), ("r_comment", T.TEXT))),
]

_EPOCH = datetime.date(1970, 1, 1).toordinal()
START_DATE = datetime.date(1992, 1, 1).toordinal() - _EPOCH  # days since 1970-01-01
CURRENT_DATE = datetime.date(1995, 6, 17).toordinal() - _EPOCH
END_DATE = datetime.date(1998, 12, 31).toordinal() - _EPOCH
ORDER_END_DAYS = END_DATE - START_DATE - 151

T_ = TypeVar("T_")

_V_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789, "

# Random streams: each table's rows draw from their own, keyed by row key.
_S_SUPPLIER, _S_PART, _S_CUSTOMER, _S_ORDER, _S_NATION, _S_REGION, _S_TICK, _S_TEXT = range(1, 9)


def _ri(r: random.Random, lo: int, hi: int) -> int:
    """Uniform in [lo, hi]; `Random.randint` costs 10x more and dominates generation."""
    return lo + int(r.random() * (hi - lo + 1))


def _ch(r: random.Random, seq: Sequence[T_]) -> T_:
    return seq[int(r.random() * len(seq))]


def counts(scale_factor: float) -> dict[str, int]:
    """Row counts per scale factor (TPC-H's, floored, at least 1), as Materialize plans them."""
    def n(mult: float) -> int:
        return max(1, int(scale_factor * mult))

    return {"supplier": n(10_000), "part": n(200_000), "customer": n(150_000),
            "orders": n(1_500_000), "clerk": n(1_000)}


def order_key(i: int) -> int:
    """dbgen's sparse order keys (mk_sparse): 8 of every 32 keys are used."""
    return ((i >> 3) << 5) | (i & 7)


def retail_price_cents(partkey: int) -> int:
    return 90_000 + (partkey // 10) % 20_001 + 100 * (partkey % 1000)


class Tpch:
    def __init__(self, scale_factor: float, seed: int) -> None:
        c = counts(scale_factor)
        self.n_supplier, self.n_part = c["supplier"], c["part"]
        self.n_customer, self.n_orders, self.n_clerk = c["customer"], c["orders"], c["clerk"]
        self.seed = seed
        self._pool = text_pool(rng(seed, _S_TEXT))

    # ---- progress -----------------------------------------------------------------------
    def _pick(self, tick: int) -> int:
        """The order (0-based number) a tick replaces."""
        return _ri(rng(self.seed, _S_TICK, tick), 0, self.n_orders - 1)

    def initial_state(self, as_of: int, epoch_ms: int) -> dict[str, Any]:
        versions: dict[str, int] = {}
        for t in range(as_of):
            k = str(self._pick(t))
            versions[k] = versions.get(k, 0) + 1
        return {"versions": versions}

    def tick(self, tick: int, state: dict[str, Any], now_ms: int) -> dict[str, Batch]:
        versions: dict[str, int] = state["versions"]
        idx = self._pick(tick)
        old_version = versions.get(str(idx), 0)
        old_order, old_lines = self._order(idx, old_version)
        new_order, new_lines = self._order(idx, old_version + 1)
        versions[str(idx)] = old_version + 1
        return {
            "orders": ([old_order, new_order], [-1, 1]),
            "lineitem": (old_lines + new_lines, [-1] * len(old_lines) + [1] * len(new_lines)),
        }

    # ---- rows ---------------------------------------------------------------------------
    def _text(self, r: Any, lo: int, hi: int) -> str:
        start = _ri(r, 0, len(self._pool) - hi - 1)
        return self._pool[start:start + _ri(r, lo, hi)]

    @staticmethod
    def _v_string(r: Any, lo: int, hi: int) -> str:
        return "".join(r.choices(_V_ALPHABET, k=_ri(r, lo, hi)))

    @staticmethod
    def _phone(r: Any, nation: int) -> str:
        return f"{nation + 10}-{_ri(r, 100, 999)}-{_ri(r, 100, 999)}-{_ri(r, 1000, 9999)}"

    def _suppliers(self, partkey: int) -> list[int]:
        """The part's (up to) 4 suppliers by TPC-H's rule; at tiny scale factors the rule
        repeats a supplier, which is then replaced by the next free one."""
        s = self.n_supplier
        out: list[int] = []
        for i in range(min(4, s)):
            k = (partkey + i * (s // 4 + (partkey - 1) // s)) % s
            while k + 1 in out:
                k = (k + 1) % s
            out.append(k + 1)
        return out

    def snapshot(self, as_of: int, epoch_ms: int) -> dict[str, Batch]:
        versions = self.initial_state(as_of, epoch_ms)["versions"]
        out: dict[str, Batch] = {}

        def put(rel: str, rows: list[Row]) -> None:
            out[rel] = (rows, [1] * len(rows))

        put("supplier", [self._supplier(k) for k in range(1, self.n_supplier + 1)])
        parts: list[Row] = []
        partsupp: list[Row] = []
        for k in range(1, self.n_part + 1):
            part, ps = self._part(k)
            parts.append(part)
            partsupp.extend(ps)
        put("part", parts)
        put("partsupp", partsupp)
        put("customer", [self._customer(k) for k in range(1, self.n_customer + 1)])
        orders: list[Row] = []
        lineitems: list[Row] = []
        for idx in range(self.n_orders):
            order, lines = self._order(idx, versions.get(str(idx), 0))
            orders.append(order)
            lineitems.extend(lines)
        put("orders", orders)
        put("lineitem", lineitems)
        nations = []
        for k, (name, region) in enumerate(NATIONS):
            nations.append((k, name, region, self._text(rng(self.seed, _S_NATION, k), 31, 114)))
        put("nation", nations)
        put("region", [(k, name, self._text(rng(self.seed, _S_REGION, k), 31, 115))
                       for k, name in enumerate(REGIONS)])
        return out

    def _supplier(self, key: int) -> Row:
        r = rng(self.seed, _S_SUPPLIER, key)
        nation = _ri(r, 0, len(NATIONS) - 1)
        return (key, f"Supplier#{key:09d}", self._v_string(r, 10, 40), nation, self._phone(r, nation),
                _ri(r, -99_999, 999_999), self._text(r, 25, 100))

    def _customer(self, key: int) -> Row:
        r = rng(self.seed, _S_CUSTOMER, key)
        nation = _ri(r, 0, len(NATIONS) - 1)
        return (key, f"Customer#{key:09d}", self._v_string(r, 10, 40), nation, self._phone(r, nation),
                _ri(r, -99_999, 999_999), _ch(r, SEGMENTS), self._text(r, 29, 116))

    def _part(self, key: int) -> tuple[Row, list[Row]]:
        r = rng(self.seed, _S_PART, key)
        m, n = _ri(r, 1, 5), _ri(r, 1, 5)
        part = (key, " ".join(r.sample(PART_NAMES, 5)), f"Manufacturer#{m}", f"Brand#{m}{n}",
                " ".join(_ch(r, s) for s in TYPES), _ri(r, 1, 50),
                " ".join(_ch(r, s) for s in CONTAINERS), retail_price_cents(key),
                self._text(r, 5, 22))
        partsupp = [(key, s, _ri(r, 1, 9_999), _ri(r, 100, 100_000), self._text(r, 49, 198))
                    for s in self._suppliers(key)]
        return part, partsupp

    def _order(self, idx: int, version: int) -> tuple[Row, list[Row]]:
        """Order number idx (0-based) in a given version, with its lineitems."""
        r = rng(self.seed, _S_ORDER, idx, version)
        key = order_key(idx + 1)
        custkey = _ri(r, 1, self.n_customer)
        while custkey % 3 == 0:  # a third of the customers place no orders
            custkey = _ri(r, 1, self.n_customer)
        orderdate = START_DATE + _ri(r, 0, ORDER_END_DAYS)
        lines: list[Row] = []
        total = 0  # in 1e-6 units: cents * (100 + tax) * (100 - discount)
        statuses = set()
        for number in range(1, _ri(r, 1, 7) + 1):
            partkey = _ri(r, 1, self.n_part)
            suppkey = _ch(r, self._suppliers(partkey))
            quantity = _ri(r, 1, 50)
            extended = quantity * retail_price_cents(partkey)
            discount, tax = _ri(r, 0, 10), _ri(r, 0, 8)
            ship = orderdate + _ri(r, 1, 121)
            commit = orderdate + _ri(r, 30, 90)
            receipt = ship + _ri(r, 1, 30)
            linestatus = "O" if ship > CURRENT_DATE else "F"
            returnflag = _ch(r, "RA") if receipt <= CURRENT_DATE else "N"
            statuses.add(linestatus)
            total += extended * (100 + tax) * (100 - discount)
            lines.append((key, partkey, suppkey, number, quantity * 100, extended, discount, tax,
                          returnflag, linestatus, ship, commit, receipt, _ch(r, INSTRUCTIONS),
                          _ch(r, MODES), self._text(r, 10, 43)))
        status = statuses.pop() if len(statuses) == 1 else "P"
        order = (key, custkey, status, (total + 5_000) // 10_000, orderdate, _ch(r, PRIORITIES),
                 f"Clerk#{_ri(r, 1, self.n_clerk):09d}", 0, self._text(r, 19, 78))
        return order, lines
