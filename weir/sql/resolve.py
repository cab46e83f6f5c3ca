"""Name resolution: bind the relations a query reads to catalog collections and
render it as Spark SQL over temporary views of those collections."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import sqlglot
from sqlglot import exp

from weir.errors import SqlState, WeirError
from weir.sql.dialect import Weir  # how statements are read: a[i][j] as written
from weir.sql.infer import COLUMNS_META
from weir.sql.joins import replace_table
from weir.sql.render import fold_typed_literals
from weir.types import PgType


@dataclass(frozen=True)
class ColumnDesc:
    name: str
    type: PgType
    nullable: bool = True
    default: str | None = None


@dataclass
class RelationDesc:
    """A relation a query can name: a stored collection (table, source, builtin) or a view."""

    id: str
    name: str  # fully qualified, for messages
    kind: str  # table | view | source | builtin
    columns: list[ColumnDesc]
    shard_id: str | None = None
    view_sql: str | None = None  # a view's definition, names fully qualified
    oid: int = 0
    restricted: bool = False  # superusers only, except through the views built on it
    # A replica's introspection log: its part of the replica's introspection shard
    # (`shard_id`), read at the shard's own latest complete time `read_at`, never waited for.
    part: str | None = None
    read_at: int | None = None
    volatile: bool = False  # resolved anew for every plan (its read times change)
    temporary: bool = False  # in a session's mz_temp schema: only temporary objects may depend on it

    @property
    def spark_name(self) -> str:
        return f"weir_{self.shard_id}"


class Resolver(Protocol):
    def lookup(self, parts: list[str]) -> RelationDesc:
        """Resolve [name], [schema, name] or [database, schema, name]; raise 42P01."""


@dataclass
class Resolved:
    """A query with every relation bound. `expr` names collections by their Spark temp
    view names; `inputs` are the collections it reads (by shard id)."""

    expr: exp.Expression
    inputs: dict[str, RelationDesc] = field(default_factory=dict)
    depends_on: dict[str, RelationDesc] = field(default_factory=dict)
    qualified: exp.Expression | None = None  # names fully qualified (resolve(..., qualify=True))
    # union views expanded over the members of the moment (mz_introspection.*_persist), at any depth
    unions: set[str] = field(default_factory=set)


def _cte_names(expr: exp.Expression) -> set[str]:
    return {cte.alias_or_name.lower() for cte in expr.find_all(exp.CTE)}


def table_parts(table: exp.Table) -> list[str]:
    parts = [p.name for p in table.parts]
    return [p if _quoted(table, p) else p.lower() for p in parts]


def _quoted(table: exp.Table, name: str) -> bool:
    for ident in table.find_all(exp.Identifier):
        if ident.name == name and ident.quoted:
            return True
    return False


def _named_tables(expr: exp.Expression) -> list[tuple[exp.Table, list[str]]]:
    """The relations a query names in the catalog (not CTEs, not table functions)."""
    ctes = _cte_names(expr)
    out = []
    for table in list(expr.find_all(exp.Table)):
        if not isinstance(table.this, exp.Identifier):
            continue
        parts = table_parts(table)
        if len(parts) == 1 and parts[0] in ctes:
            continue
        out.append((table, parts))
    return out


def column_type_fn(expr: exp.Expression, resolver: Resolver) -> Callable[[exp.Column], PgType | None]:
    """A column reference's type, from the relations the statement names (by the column's
    name: enough to tell a text column from an oid one). The relations are looked up on
    the first call only: most statements never ask."""
    cols: dict[str, PgType] | None = None

    def columns() -> dict[str, PgType]:
        found: dict[str, PgType] = {}
        for _, parts in _named_tables(expr):
            try:
                desc = resolver.lookup(parts)
            except Exception:  # noqa: BLE001 - unknown names are reported when the query is resolved
                continue
            for c in desc.columns:
                found.setdefault(c.name, c.type)
        return found

    def lookup(col: exp.Column) -> PgType | None:
        nonlocal cols
        if cols is None:
            cols = columns()
        return cols.get(col.name.lower())

    return lookup


def resolve(expr: exp.Expression, resolver: Resolver, *, qualify: bool = False, _depth: int = 0) -> Resolved:
    """Bind relation names in a (copied) query expression; with `qualify`, also return
    the query with every relation named database.schema.name (for view definitions, so
    a view means the same thing whatever the reader's search_path) from the same lookups."""
    if _depth > 32:
        raise WeirError(SqlState.PROGRAM_LIMIT_EXCEEDED, "views nested too deeply")
    expr = expr.copy()
    out = Resolved(expr)
    named = _named_tables(expr)
    _unqualify_columns(expr, named)
    if qualify:
        out.qualified = expr.copy()
        peers = [t for t, _ in _named_tables(out.qualified)]
    for k, (table, parts) in enumerate(named):
        desc = resolver.lookup(parts)
        if qualify:
            replace_table(peers[k], _qualified_table(desc, table.alias or parts[-1]))
        if desc.restricted and _depth == 0 and not getattr(resolver, "may_read_restricted", True):
            raise WeirError(SqlState.INSUFFICIENT_PRIVILEGE, f"permission denied for {desc.kind} {desc.name}",
                            hint=f"Read {desc.name.removesuffix('_raw')} instead.")
        if desc.kind == "index":
            raise WeirError(SqlState.WRONG_OBJECT_TYPE,
                            f"catalog item '{desc.name}' is an index and so cannot be depended upon")
        out.depends_on[desc.id] = desc
        alias = table.alias or parts[-1]
        if desc.view_sql is not None:
            # stored as written: its typed literals folded here, as the query's own were
            body = fold_typed_literals(sqlglot.parse_one(desc.view_sql, read=Weir))
            inner = resolve(body, resolver, _depth=_depth + 1)
            out.inputs.update(inner.inputs)
            out.unions |= inner.unions | ({desc.name} if desc.volatile else set())
            # the view's columns are named as the catalog has them ('?column?' for a + b):
            # what the query would be named by Spark's rules is not the view's name
            names = [exp.to_identifier(c.name, quoted=True) for c in desc.columns]
            sub = exp.Subquery(this=inner.expr, alias=exp.TableAlias(this=exp.to_identifier(alias),
                                                                   columns=names or None))
            if table is expr:
                out.expr = sub
            else:
                replace_table(table, sub)
        elif desc.part is not None:
            sub = _log_part(desc, alias, out)
            if table is expr:
                out.expr = sub
            else:
                replace_table(table, sub)
        else:
            assert desc.shard_id is not None
            out.inputs[desc.shard_id] = desc
            new = exp.Table(this=exp.to_identifier(desc.spark_name))
            new.set("alias", exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))
            new.meta[COLUMNS_META] = {c.name: c.type for c in desc.columns}  # for weir.sql.infer
            replace_table(table, new)
    return out


def _unqualify_columns(expr: exp.Expression, named: list[tuple[exp.Table, list[str]]]) -> None:
    """`schema.table.column` (as SQLAlchemy writes every column) names the column of an
    unaliased `[schema.]table` in FROM: keep only `table.column`, which the alias every
    relation is given below (its name) resolves."""
    plain = {(parts[-1], parts[-2] if len(parts) > 1 else None) for t, parts in named if not t.alias}
    if not plain:
        return
    names = {name for name, _ in plain}
    for col in expr.find_all(exp.Column):
        db, table = col.args.get("db"), col.args.get("table")
        if db is None or not isinstance(table, exp.Identifier) or not isinstance(db, exp.Identifier):
            continue
        name = table.name if table.quoted else table.name.lower()
        schema = db.name if db.quoted else db.name.lower()
        if name in names and ((name, schema) in plain or (name, None) in plain):
            col.set("db", None)
            col.set("catalog", None)


def _log_part(desc: RelationDesc, alias: str, out: Resolved) -> exp.Subquery:
    """An introspection log as a subquery over its replica's shard (weir.compute.introspection)."""
    from weir.compute import introspection as ci

    assert desc.shard_id is not None and desc.part is not None
    variant = ci.BY_NAME[desc.part]
    raw = RelationDesc(desc.shard_id, f"{ci.SCHEMA}.{desc.shard_id}", "source",
                       [ColumnDesc(n, t) for n, t in ci.SHARD_COLUMNS], shard_id=desc.shard_id,
                       read_at=desc.read_at, volatile=True)
    out.inputs[desc.shard_id] = raw
    inner = sqlglot.parse_one(variant.select_sql(raw.spark_name), read="spark")
    for t in inner.find_all(exp.Table):
        t.meta[COLUMNS_META] = {n: ty for n, ty in ci.SHARD_COLUMNS}
    return exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))


def _qualified_table(desc: RelationDesc, alias: str) -> exp.Table:
    full = desc.name.split(".")
    new = exp.Table(
        this=exp.to_identifier(full[-1], quoted=True),
        db=exp.to_identifier(full[-2], quoted=True) if len(full) > 1 else None,
        catalog=exp.to_identifier(full[-3], quoted=True) if len(full) > 2 else None,
    )
    new.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    return new
