"""Which joins the delta join keeps, and how a join's query splits: each input's own part
(its columns, its filters), the keys each join stage meets on (and whether it keeps a
side's unmatched rows), and the rest of the query over the joined relation, `__weir_joined`.

Inner joins take their conditions from ON and WHERE alike: a condition on one input filters
it before the join, an equality between the inputs joined so far and the next one is a key
of that stage, anything else filters after the joins. An outer join's ON may hold only its
keys and conditions on the side it pads (filters of that side); a WHERE condition on a side
an outer join pads filters after the joins. Anything else raises NotJoinable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

JOINED = "__weir_joined"
INNER, LEFT, RIGHT, FULL = "INNER", "LEFT", "RIGHT", "FULL"


class NotJoinable(Exception):  # noqa: N818 - a reason, not a failure
    """The query is not (recognisably) a join the delta join keeps."""


@dataclass(frozen=True)
class Input:
    name: str  # the input view it reads
    alias: str
    columns: tuple[tuple[str, str], ...]  # (input column, its name in JOINED) the rest reads
    filters: tuple[str, ...]  # the conditions on this input alone (Spark SQL over `alias`)


@dataclass(frozen=True)
class Stage:
    """Stage s joins inputs[:s] (already joined) with inputs[s] on left = right, key by key."""

    left: tuple[str, ...]  # over JOINED's names of the inputs before (Spark SQL)
    right: tuple[str, ...]  # over the input's alias (Spark SQL)
    kind: str = INNER  # or LEFT, RIGHT, FULL: which sides keep unmatched rows, padded with NULLs

    def keeps(self, side: int) -> bool:
        """Whether side 0 (the inputs before) or 1 (the input) keeps its unmatched rows."""
        return self.kind == FULL or self.kind == (LEFT, RIGHT)[side]


@dataclass(frozen=True)
class JoinShape:
    inputs: tuple[Input, ...]
    stages: tuple[Stage, ...]  # stage s (1 ..) is stages[s - 1]
    post_sql: str  # the rest of the query, over JOINED


def has_join(sql: str) -> bool:
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except SqlglotError:
        return False
    return isinstance(tree, exp.Select) and bool(tree.args.get("joins"))


def split(sql: str, inputs: Mapping[str, Sequence[str]]) -> JoinShape:
    """Each input's part of the query, the keys each join stage meets on, and the rest over JOINED."""
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except SqlglotError as e:
        raise NotJoinable(f"cannot parse: {e}") from None
    if not isinstance(tree, exp.Select):
        raise NotJoinable(f"{tree.key} is not a join")
    for key in ("with", "with_", "laterals", "limit", "offset", "windows", "qualify"):
        if tree.args.get(key):
            raise NotJoinable(f"a join with {key}")
    tree.set("order", None)
    joins = tree.args.get("joins") or []
    if not joins:
        raise NotJoinable("one input (no join)")
    kinds: list[str] = []
    for join in joins:
        side, kind = (join.args.get("side") or "").upper(), (join.args.get("kind") or "").upper()
        if kind not in ("", "INNER", "CROSS", "OUTER") or (kind == "OUTER" and not side):
            raise NotJoinable(f"a {side} {kind} join".replace("  ", " "))
        if join.args.get("using") or join.args.get("method"):
            raise NotJoinable("JOIN ... USING or NATURAL")
        kinds.append(side or INNER)
    tables = [tree.args["from_"].this, *(j.this for j in joins)]
    views = {k.lower(): [c.lower() for c in v] for k, v in inputs.items()}
    aliases: list[str] = []
    for t in tables:
        if not isinstance(t, exp.Table) or t.args.get("db") or t.args.get("catalog") \
                or t.args.get("laterals") or t.args.get("pivots") or t.name.lower() not in views:
            raise NotJoinable(f"{t.sql(dialect='spark')[:60]} is not an input of the dataflow")
        aliases.append(t.alias_or_name.lower())
    if len(set(aliases)) < len(aliases):
        raise NotJoinable("two inputs have the same name")
    names = [tuple(views[t.name.lower()]) for t in tables]
    n = len(tables)
    for node in tree.walk():
        if node is not tree and isinstance(node, (exp.Select, exp.Subquery, exp.Exists, exp.Window)):
            raise NotJoinable(f"a {node.key} inside the join's query")
    _expand_stars(tree, aliases, names)

    def input_of(col: exp.Column) -> int:
        name = col.name.lower()
        if col.table:
            if col.table.lower() not in aliases:
                raise NotJoinable(f"{col.sql(dialect='spark')} names no input")
            s = aliases.index(col.table.lower())
            if name not in names[s]:
                raise NotJoinable(f"{col.sql(dialect='spark')} is not a column")
            return s
        found = [s for s in range(n) if name in names[s]]
        if len(found) != 1:
            raise NotJoinable(f"column {col.name} is {'ambiguous' if found else 'unknown'}")
        return found[0]

    def reads(e: exp.Expression) -> set[int]:
        return {input_of(c) for c in e.find_all(exp.Column)}

    # an input an outer join pads with NULLs: a WHERE condition on it filters after the joins
    nullable: set[int] = set()
    for s, kind in enumerate(kinds, 1):
        nullable |= {s} if kind == LEFT else set(range(s)) if kind == RIGHT else set(range(s + 1)) \
            if kind == FULL else set()
    filters: list[list[exp.Expression]] = [[] for _ in range(n)]
    pending: list[exp.Expression] = []  # conditions of the inner joins and WHERE, not yet placed
    outer_on: dict[int, list[exp.Expression]] = {}  # an outer join's own ON conditions
    for c in [c for j, k in zip(joins, kinds, strict=True) if k == INNER for c in _conjuncts(j.args.get("on"))] \
            + _conjuncts(tree.args.get("where")):
        got = reads(c)
        if len(got) == 1 and not got & nullable:
            filters[next(iter(got))].append(c)
        else:
            pending.append(c)
    for s, (j, kind) in enumerate(zip(joins, kinds, strict=True), 1):
        if kind == INNER:
            continue
        outer_on[s] = []
        for c in _conjuncts(j.args.get("on")):
            got = reads(c)
            if len(got) == 1 and got == {s} and kind == LEFT or len(got) == 1 and got == {0} and s == 1 \
                    and kind == RIGHT:
                filters[next(iter(got))].append(c)  # on the side that only appears through matches
            else:
                outer_on[s].append(c)
    used: list[dict[str, str]] = [{} for _ in range(n)]

    def joined_name(col: exp.Column) -> str:
        s, name = input_of(col), col.name.lower()
        if name not in used[s]:
            used[s][name] = f"__c{sum(len(u) for u in used)}"
        return used[s][name]

    def renamed(e: exp.Expression) -> exp.Expression:
        return e.copy().transform(
            lambda node: exp.column(joined_name(node))
            if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star) else node)

    stages: list[Stage] = []
    for s in range(1, n):  # inputs[:s] joined, meet inputs[s] on every equality between them
        left: list[str] = []
        right: list[str] = []
        conditions = outer_on.get(s, pending)
        for c in list(conditions):
            if not isinstance(c, exp.EQ):
                continue
            a, b = reads(c.this), reads(c.expression)
            for x, y, xs, ys in ((c.this, c.expression, a, b), (c.expression, c.this, b, a)):
                if xs and ys == {s} and max(xs) < s:
                    left.append(renamed(x).sql(dialect="spark"))
                    right.append(y.sql(dialect="spark"))
                    conditions.remove(c)
                    break
        if not left:
            raise NotJoinable(f"no equality between {tables[s].sql(dialect='spark')} and the inputs before it "
                              "(a cross join)")
        if s in outer_on and outer_on[s]:
            raise NotJoinable(f"a {kinds[s - 1]} join's condition {outer_on[s][0].sql(dialect='spark')[:60]} "
                              "is neither a key equality nor on its padded side alone")
        stages.append(Stage(tuple(left), tuple(right), kinds[s - 1]))
    post = tree.copy()
    post.set("joins", None)
    post.set("from_", exp.From(this=exp.to_table(JOINED)))
    post.set("where", exp.Where(this=exp.and_(*pending)) if pending else None)
    post = renamed(post)
    return JoinShape(
        tuple(Input(tables[s].name, aliases[s], tuple((c, used[s][c]) for c in names[s] if c in used[s]),
                    tuple(f.sql(dialect="spark") for f in filters[s])) for s in range(n)),
        tuple(stages), post.sql(dialect="spark"))


def _conjuncts(e: exp.Expression | None) -> list[exp.Expression]:
    if e is None:
        return []
    if isinstance(e, (exp.Paren, exp.Where)):
        return _conjuncts(e.this)
    if isinstance(e, exp.And):
        return [*_conjuncts(e.this), *_conjuncts(e.expression)]
    return [e]


def _expand_stars(tree: exp.Select, aliases: list[str], names: list[tuple[str, ...]]) -> None:
    out: list[exp.Expression] = []
    for p in tree.expressions:
        star = ("" if isinstance(p, exp.Star) else
                p.table.lower() if isinstance(p, exp.Column) and isinstance(p.this, exp.Star) else None)
        if star is None:
            out.append(p)
            continue
        for s in range(len(aliases)):
            if star in ("", aliases[s]):
                out += [exp.column(exp.to_identifier(n, quoted=True), table=exp.to_identifier(aliases[s]))
                        for n in names[s]]
    tree.set("expressions", out)
