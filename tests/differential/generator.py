"""A seeded generator of PostgreSQL queries over tests/differential/schema.py's tables.

Own generator rather than hypothesis: the differential run wants thousands of distinct,
reproducible queries per seed, grouped for batching, not shrinking. Outputs are aliased c0,
c1, ... or left unnamed (`?column?`, as often twice in one SELECT: PostgreSQL allows it; the
runner names them by position); `ordered` is true only when its ORDER BY fully determines
the order of its rows (it ends with a unique key). Relations are tables, and VALUES lists
with column alias lists wherever a relation may stand."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from tests.differential.schema import EMPTY, NULLS, T1, T2, T3, Table

JOINABLE = (T1, T2, T3)
# a VALUES list as a relation, `(VALUES ...) AS a7(id, i, s)`, joined like t3
VALS = Table("(VALUES (1, 1, 'a'), (2, NULL, 'b c'), (3, 2, NULL), (4, 6, ''))",
             (("id", "int"), ("i", "int"), ("s", "text")), ())


_PLAIN = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?\Z")


def relation(t: Table, alias: str) -> str:
    """`t AS alias`, or for VALUES the list with its column names."""
    if t is VALS:
        return f"{t.name} AS {alias}({', '.join(c for c, _ in t.columns)})"
    return f"{t.name} AS {alias}"


@dataclass(frozen=True)
class Query:
    sql: str
    kind: str
    ordered: bool = False


class Generator:
    """`Generator(seed).queries(n)`: the same n queries for the same seed."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        self._alias = 0

    def queries(self, n: int) -> list[Query]:
        kinds = [("join", 5), ("subquery", 3), ("aggregate", 3), ("window", 2), ("setop", 2),
                 ("order", 2), ("expr", 3), ("distinct", 1)]
        names = [k for k, w in kinds for _ in range(w)]
        return [getattr(self, f"q_{self.r.choice(names)}")() for _ in range(n)]

    # ---- helpers ---------------------------------------------------------------------
    def _new_alias(self) -> str:
        self._alias += 1
        return f"a{self._alias}"

    def _cols(self, t: Table, *types: str) -> list[str]:
        return [c for c, ty in t.columns if not types or ty in types]

    def _int(self, t: Table) -> str:
        return self.r.choice(self._cols(t, "int", "bigint"))

    def _select(self, exprs: list[str]) -> str:
        """Each output aliased c<i>, or (one time in four, if it is not a plain column,
        whose name would be its own) left unnamed."""
        return ", ".join(e if not _PLAIN.match(e) and self.r.random() < 0.25 else f"{e} AS c{i}"
                         for i, e in enumerate(exprs))

    def _pred(self, alias: str, t: Table) -> str:
        r = self.r
        c = r.choice([c for c, _ in t.columns if c != "id"])
        ty = t.type_of(c)
        ref = f"{alias}.{c}"
        if ty in ("int", "bigint", "numeric", "double precision"):
            return r.choice([f"{ref} > {r.randint(-1, 3)}", f"{ref} IS NULL", f"{ref} IS NOT NULL",
                             f"{ref} BETWEEN 0 AND 2", f"{ref} IN (1, 2, NULL)", f"{ref} <> 2",
                             f"NOT ({ref} < 1)", f"{ref} = 2 OR {ref} IS NULL"])
        if ty == "text":
            return r.choice([f"{ref} = 'a'", f"{ref} LIKE 'a%'", f"{ref} IS NULL", f"{ref} > 'b'",
                             f"{ref} IN ('a', 'C')", f"upper({ref}) = 'C'"])
        if ty == "boolean":
            return r.choice([ref, f"NOT {ref}", f"{ref} IS NOT TRUE", f"{ref} IS UNKNOWN"])
        if ty == "date":
            return r.choice([f"{ref} >= DATE '2024-01-01'", f"{ref} < '2000-01-01'"])
        return r.choice([f"{ref} > TIMESTAMP '2000-01-01 00:00:00'", f"{ref} IS NULL"])

    # ---- joins -------------------------------------------------------------------------
    def _leaf(self) -> tuple[str, list[tuple[str, Table]]]:
        t = self.r.choice((EMPTY, VALS)) if self.r.random() < 0.2 else self.r.choice(JOINABLE)
        a = self._new_alias()
        return relation(t, a), [(a, t)]

    def _on(self, left: list[tuple[str, Table]], right: list[tuple[str, Table]], full: bool) -> str:
        (la, _), (ra, rt) = self.r.choice(left), self.r.choice(right)
        r = self.r
        if full:  # PostgreSQL runs FULL JOIN only on merge- or hash-joinable conditions
            return r.choice([f"{la}.i = {ra}.i", f"{la}.s = {ra}.s", f"{la}.id = {ra}.id"])
        base = r.choice([f"{la}.i = {ra}.i", f"{la}.i = {ra}.i", f"{la}.s = {ra}.s",
                         f"{la}.i < {ra}.i", f"{la}.id = {ra}.id", "true"])
        if r.random() < 0.25:
            base += f" AND {self._pred(ra, rt)}"
        return base

    def _tree(self, leaves: int) -> tuple[str, list[tuple[str, Table]]]:
        if leaves == 1:
            return self._leaf()
        r = self.r
        split = r.randint(1, leaves - 1)
        left, la = self._tree(split)
        right, ra = self._tree(leaves - split)
        if len(ra) > 1:
            right = f"({right})"
        if len(la) == 1 and len(ra) == 1 and r.random() < 0.3:
            side = r.choice(["", "LEFT ", "RIGHT ", "FULL ", "INNER "])
            if r.random() < 0.5:
                return f"{left} {side}JOIN {right} USING (i)", la + ra
            return f"{left} NATURAL {side}JOIN {right}", la + ra
        kind = r.choice(["JOIN", "INNER JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN",
                         "LEFT OUTER JOIN", "CROSS JOIN"])
        if kind == "CROSS JOIN":
            return f"{left} CROSS JOIN {right}", la + ra
        return f"{left} {kind} {right} ON {self._on(la, ra, kind == 'FULL JOIN')}", la + ra

    def q_join(self) -> Query:
        r = self.r
        items, aliases = [], []
        budget = 4  # leaves in all: at most 8^4 rows, however they cross
        for _ in range(r.choice([1, 1, 2, 2, 3])):
            if budget < 1:
                break
            leaves = min(budget, r.choice([1, 2, 2, 3]))
            budget -= leaves
            sql, al = self._tree(leaves)
            if len(al) > 1 and r.random() < 0.3:
                sql = f"({sql})"
            items.append(sql)
            aliases += al
        from_ = ", ".join(items)
        where = f" WHERE {self._pred(*r.choice(aliases))}" if r.random() < 0.3 else ""
        if r.random() < 0.3:
            a, t = r.choice(aliases)
            sel = self._select(["count(*)", f"count({a}.{self._int(t)})"])
            return Query(f"SELECT {sel} FROM {from_}{where}", "join")
        exprs = []
        for _ in range(r.randint(1, 4)):
            a, t = r.choice(aliases)
            exprs.append(f"{a}.{r.choice(self._cols(t))}")
        return Query(f"SELECT {self._select(exprs)} FROM {from_}{where}", "join")

    # ---- subqueries --------------------------------------------------------------------
    def q_subquery(self) -> Query:
        r = self.r
        outer, inner = r.choice(JOINABLE), r.choice(JOINABLE + (EMPTY, NULLS, VALS))
        x, y = self._new_alias(), self._new_alias()
        corr = f" WHERE {y}.i = {x}.i" if r.random() < 0.6 else (
            f" WHERE {self._pred(y, inner)}" if r.random() < 0.5 else "")
        ic = self._int(inner)
        form = r.randrange(6)
        if form == 0:
            agg = r.choice(["max", "min", "sum", "count"])
            sel = self._select([f"{x}.id", f"(SELECT {agg}({y}.{ic}) FROM {relation(inner, y)}{corr})"])
            return Query(f"SELECT {sel} FROM {outer.name} AS {x}", "subquery")
        if form == 1:
            neg = r.choice(["", "NOT "])
            return Query(f"SELECT {self._select([f'{x}.id', f'{x}.i'])} FROM {outer.name} AS {x} "
                         f"WHERE {x}.i {neg}IN (SELECT {y}.{ic} FROM {relation(inner, y)}{corr})", "subquery")
        if form == 2:
            neg = r.choice(["", "NOT "])
            return Query(f"SELECT {self._select([f'{x}.id', f'{x}.s'])} FROM {outer.name} AS {x} "
                         f"WHERE {neg}EXISTS (SELECT 1 FROM {relation(inner, y)}{corr})", "subquery")
        if form == 3:
            op = r.choice(["= ANY", "> ALL", "<= ANY", "<> ALL"])
            return Query(f"SELECT {self._select([f'{x}.id'])} FROM {outer.name} AS {x} "
                         f"WHERE {x}.i {op} (SELECT {y}.{ic} FROM {relation(inner, y)}{corr})", "subquery")
        if form == 4:
            g = r.choice(["i", "s"])
            return Query(f"SELECT {self._select([f'{y}.{g}', f'{y}.c', f'{x}.id'])} FROM "
                         f"(SELECT {g}, count(*) AS c FROM {relation(inner, self._new_alias())} GROUP BY {g}) AS {y} "
                         f"{r.choice(['JOIN', 'LEFT JOIN', 'RIGHT JOIN'])} {outer.name} AS {x} ON {x}.{g} = {y}.{g}",
                         "subquery")
        return Query(f"SELECT {self._select([f'{x}.id', f'{x}.i'])} FROM {outer.name} AS {x} WHERE "
                     f"{x}.i > (SELECT avg({y}.{ic}) FROM {relation(inner, y)})", "subquery")

    # ---- aggregates --------------------------------------------------------------------
    def _agg(self, t: Table) -> str:
        r = self.r
        nums = self._cols(t, "int", "bigint", "numeric", "double precision")
        c = r.choice(nums)
        forms = ["count(*)", f"count({c})", f"sum({c})", f"min({c})", f"max({c})", f"avg({c})",
                 f"count(DISTINCT {c})", f"sum(DISTINCT {c})", "min(s)", "max(s)", "count(s)"]
        if t is T1:
            forms += ["bool_and(f)", "bool_or(f)", "min(dt)", "max(ts)", "count(DISTINCT dt)"]
        return r.choice(forms)

    def q_aggregate(self) -> Query:
        r = self.r
        t = r.choice((T1, T1, T2, T3, EMPTY, NULLS))
        aggs = [self._agg(t) for _ in range(r.randint(1, 3))]
        where = f" WHERE {self._pred(t.name, t)}" if r.random() < 0.3 else ""
        if r.random() < 0.4:
            return Query(f"SELECT {self._select(aggs)} FROM {t.name}{where}", "aggregate")
        ic = self._int(t)
        key = r.choice([ic, f"{ic} % 2", f"{ic} IS NULL", "s", "upper(s)", "coalesce(s, 'none')",
                        f"{ic} + 1"] + (["dt", "f", "date_trunc('month', ts)"] if t is T1 else []))
        having = r.choice(["", "", " HAVING count(*) > 1", f" HAVING sum({ic}) IS NOT NULL",
                           f" HAVING max({ic}) > 1"])
        return Query(f"SELECT {self._select([key] + aggs)} FROM {t.name}{where} GROUP BY {key}{having}",
                     "aggregate")

    def q_distinct(self) -> Query:
        r = self.r
        t = r.choice(JOINABLE)
        cols = r.sample([c for c in self._cols(t) if c != "id"], r.randint(1, 2))
        if r.random() < 0.3:
            return Query(f"SELECT {self._select([f'count(DISTINCT {cols[0]})'])} FROM {t.name}", "distinct")
        return Query(f"SELECT DISTINCT {self._select(cols)} FROM {t.name}", "distinct")

    # ---- windows -----------------------------------------------------------------------
    def q_window(self) -> Query:
        r = self.r
        t = r.choice(JOINABLE)
        ic = self._int(t)
        part = r.choice(["", "PARTITION BY i ", "PARTITION BY s ", f"PARTITION BY {ic} % 2 "])
        total = r.random() < 0.7
        order = f"ORDER BY {r.choice(['i', 's', ic])}{r.choice(['', ' DESC'])}" + (", id" if total else "")
        frame = r.choice(["", "", " ROWS BETWEEN 1 PRECEDING AND CURRENT ROW",
                          " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
                          " ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING",
                          " RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"])
        peer_safe = ["rank()", "dense_rank()", f"sum({ic})", "count(*)", f"max({ic})", f"min({ic})"]
        fn = r.choice(peer_safe + (["row_number()", f"lag({ic})", "lead(s)", f"first_value({ic})",
                                    f"last_value({ic})", f"lag({ic}, 2, -1)"] if total else []))
        if not total and frame.startswith(" ROWS"):  # a ROWS frame over peers is arbitrary
            frame = ""
        if fn in ("rank()", "dense_rank()", "row_number()") or fn.startswith(("lag", "lead")):
            frame = ""
        sel = self._select(["id", f"{fn} OVER ({part}{order}{frame})"])
        return Query(f"SELECT {sel} FROM {t.name}", "window")

    # ---- set operations ----------------------------------------------------------------
    def _branch(self) -> str:
        t = self.r.choice(JOINABLE + (EMPTY, NULLS))
        where = f" WHERE {self._pred(t.name, t)}" if self.r.random() < 0.5 else ""
        return f"SELECT i, s FROM {t.name}{where}"

    def q_setop(self) -> Query:
        r = self.r
        ops = ["UNION", "UNION ALL", "INTERSECT", "INTERSECT ALL", "EXCEPT", "EXCEPT ALL"]
        sql = f"{self._branch()} {r.choice(ops)} {self._branch()}"
        if r.random() < 0.3:
            sql = f"({sql}) {r.choice(ops)} ({self._branch()})"
        return Query(f"SELECT i AS c0, s AS c1 FROM ({sql}) AS u", "setop")

    # ---- ORDER BY / LIMIT / OFFSET -----------------------------------------------------
    def q_order(self) -> Query:
        r = self.r
        t = r.choice(JOINABLE)
        cols = r.sample(self._cols(t), r.randint(1, 3))
        keys = [f"{c}{r.choice(['', ' ASC', ' DESC'])}{r.choice(['', '', ' NULLS FIRST', ' NULLS LAST'])}"
                for c in r.sample(self._cols(t), r.randint(1, 2))]
        total = r.random() < 0.8
        if total:
            keys.append("id")
        tail = ""
        if total and r.random() < 0.6:
            tail += f" LIMIT {r.randint(0, 5)}"
        if total and r.random() < 0.4:
            tail += f" OFFSET {r.randint(0, 4)}"
        where = f" WHERE {self._pred(t.name, t)}" if r.random() < 0.3 else ""
        return Query(f"SELECT {self._select(cols)} FROM {t.name}{where} ORDER BY {', '.join(keys)}{tail}",
                     "order", ordered=total)

    # ---- expressions and casts ---------------------------------------------------------
    def q_expr(self) -> Query:
        r = self.r
        forms = [
            "i + b", "i * 2", "i / 2", "i % 3", "-i", "abs(i)", "b - i", "i::text", "i::bigint",
            "i::numeric", "i::double precision", "b::int", "n::int", "n::text", "n + i",
            "n * 2", "d::int", "d * 2", "d::text", "d::numeric", "f::int", "f::text", "i::boolean",
            "dt::timestamp", "dt::text", "ts::date", "ts::text", "dt + i", "s || 'x'",
            "length(s)", "upper(s)", "lower(s)", "substr(s, 1, 1)", "s LIKE 'a%'",
            "CASE WHEN i > 1 THEN 'big' WHEN i IS NULL THEN 'null' ELSE 'small' END",
            "coalesce(i, -1)", "nullif(i, 2)", "greatest(i, 1)", "least(i, b)", "i IN (1, 2, NULL)",
            "i BETWEEN 0 AND 2", "i IS DISTINCT FROM 2", "f AND i > 1", "f OR i > 1", "NOT f",
            "CAST(i AS smallint)", "CAST(n AS numeric(10,1))", "round(n)", "round(n, 1)",
            "trunc(d)", "floor(n)", "ceil(n)", "i = b", "n = i", "s = 'a'", "s < 'b'",
            "ts + INTERVAL '1 day'", "dt - 1", "extract(year FROM dt)", "date_trunc('day', ts)",
            "CAST(s AS varchar)", "(i > 1) IS TRUE", "coalesce(s, '') || coalesce(i::text, '')",
            "dt + INTERVAL '1 month'", "ts - INTERVAL '1 year 1 mon'", "ts + INTERVAL '30 hours'",
            "dt - INTERVAL '1' YEAR", "INTERVAL '2 mons 3 days' + ts", "dt + INTERVAL '1 day'",
            # every type's text output, alone and inside arrays and records
            "b::text", "dt::text", "(ts - TIMESTAMP '2000-01-01')::text", "(INTERVAL '1 hour' * i)::text",
            "ARRAY[i, b]::text", "ARRAY[s, 'x y', NULL]::text", "ARRAY[n]::text", "ARRAY[d, 0.5]::text",
            "ARRAY[f]::text", "ARRAY[dt]::text", "ARRAY[ts]::text", "ARRAY[]::int[]::text",
            "ARRAY[s, '']::text", "ROW(i, s)::text", "ROW(dt, n, f)::text", "array_length(ARRAY[i, b], 1)",
            "s::bytea::text", "md5(coalesce(s, ''))", "ARRAY[i] < ARRAY[NULL::int]",
            # untyped literals beside arrays, arrays ordered with NULL elements last
            "ARRAY[i, 2] = '{1,2}'", "(ARRAY[i] || '{9}')::text", "ARRAY[i] IN ('{1}', '{2}')",
            "coalesce(ARRAY[i], '{0}')::text", "ARRAY[s] IS DISTINCT FROM '{a}'", "ARRAY[n] = ARRAY[1.50]",
            "greatest(ARRAY[i, NULL], ARRAY[i, 2])::text", "least(ARRAY[n], ARRAY[1.50], NULL)::text",
            "ARRAY[d] > '{0.5}'",
        ]
        exprs = r.sample(forms, r.randint(1, 3))
        where = f" WHERE {self._pred('t1', T1)}" if r.random() < 0.2 else ""
        return Query(f"SELECT {self._select(['id'] + exprs)} FROM t1{where}", "expr")
