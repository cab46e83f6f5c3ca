"""PostgreSQL's set-returning functions (SRFs) in a select list, on Spark and in process.

PostgreSQL (10+) runs every SRF of one select list in lockstep: they advance together, the
row count is the longest one's, the shorter ones are NULL past their end (SQLAlchemy's
reflection selects `unnest(indkey), unnest(indclass), generate_subscripts(indkey, 1)` side by
side). Spark takes one generator per select list and none inside an expression, and two
explode()s would multiply their rows. So a select list with several SRFs, or one inside an
expression, gets one LATERAL VIEW over the zipped arrays,

    LATERAL VIEW inline(arrays_zip(coalesce(a, array()), coalesce(b, array()))) weir_srf0 AS c0, c1

(Spark's arrays_zip pads the shorter arrays with NULL as PostgreSQL does; a NULL array,
which yields no rows, zips as an empty one) and each call becomes its column. One SRF
alone as a projection stays Spark's explode() there. The in-process engine runs the same
SQL with DuckDB's list_zip (`arrays_zip_duckdb`).

Also generate_subscripts(array, dim[, reverse]): the subscripts of the array's dimension
`dim` (weir's arrays have one, from 1; int2vector and oidvector, the system catalogs'
vectors, count from 0, as in PostgreSQL), none for a NULL or empty array or another
dimension.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import sqlglot
from sqlglot import exp

from weir.errors import SqlState, WeirError
from weir.sql.infer import Types
from weir.types import ZERO_BASED_ARRAYS

# the system catalogs' vectors, whose subscripts start at 0
_ARRAY_SRFS = (exp.Explode, exp.Unnest, exp.ExplodingGenerateSeries)  # one array's elements each


def _not_supported(what: str, hint: str | None = None) -> WeirError:
    return WeirError(SqlState.FEATURE_NOT_SUPPORTED, what, hint=hint)


def _is_generate_subscripts(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and node.name.lower() == "generate_subscripts"


def check_placement(tree: exp.Expression, is_srf: Callable[[exp.Expression], bool]) -> None:
    """PostgreSQL's refusals of SRFs where they cannot run (CASE, COALESCE, an aggregate's
    argument), and weir's: several SRFs, or one inside an expression, in a select list that
    also aggregates or computes window functions (PostgreSQL runs the SRFs after those)."""
    for select in tree.find_all(exp.Select):
        srfs = [n for p in select.expressions for n in p.walk()
                if (is_srf(n) or _is_generate_subscripts(n)) and n.find_ancestor(exp.Select) is select]
        for srf in srfs:
            holder = srf.find_ancestor(exp.Case, exp.Coalesce, exp.If, exp.AggFunc, exp.Select)
            if isinstance(holder, (exp.Case, exp.If, exp.Coalesce)):
                what = "COALESCE" if isinstance(holder, exp.Coalesce) else "CASE"
                raise _not_supported(f"set-returning functions are not allowed in {what}",
                                     "You might be able to move the set-returning function into a LATERAL FROM item.")
            if isinstance(holder, exp.AggFunc):
                raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                                "aggregate function calls cannot contain set-returning function calls",
                                hint="You might be able to move the set-returning function into a LATERAL FROM item.")
        if _needs_lockstep(select, srfs) and _aggregates(select):
            raise _not_supported("several set-returning functions (or one inside an expression) in a select "
                                 "list with aggregates or window functions is not supported")


def _top_level(srf: exp.Expression, select: exp.Select) -> bool:
    parent = srf.parent
    return parent is select or (isinstance(parent, exp.Alias) and parent.parent is select)


def _needs_lockstep(select: exp.Select, srfs: list[exp.Expression]) -> bool:
    return len(srfs) > 1 or any(not _top_level(s, select) for s in srfs)


def _aggregates(select: exp.Select) -> bool:
    if select.args.get("group") is not None or select.args.get("having") is not None:
        return True
    return any(n.find_ancestor(exp.Select) is select for p in select.expressions
               for n in p.find_all(exp.AggFunc, exp.Window))


def generate_subscripts(node: exp.Expression, types: Types) -> exp.Expression:
    """generate_subscripts(a, dim[, reverse]) as explode() of a Spark array of the
    subscripts (int), through transform()'s index; an array of another dimension than 1,
    or a NULL argument (the function is strict), has none."""
    args = list(node.expressions)
    t = types.of(args[0]) if args else None
    if len(args) not in (2, 3) or (t is not None and not t.is_array and t.name != "unknown"):
        names = ", ".join("unknown" if (a := types.of(x)) is None else a.name for x in args)
        raise WeirError(SqlState.UNDEFINED_FUNCTION, f"function generate_subscripts({names}) does not exist",
                        hint="No function matches the given name and argument types. "
                             "You might need to add explicit type casts.")
    first = 0 if t is not None and t.oid in ZERO_BASED_ARRAYS else 1
    forward = f"CAST(weir_i + {first} AS INT)"
    index = forward if len(args) == 2 else \
        f"CASE WHEN __weir_rev THEN CAST(size(__weir_a) - 1 - weir_i + {first} AS INT) ELSE {forward} END"
    strict = "__weir_dim = 1" + (" AND __weir_rev IS NOT NULL" if len(args) == 3 else "")
    sql = f"CASE WHEN {strict} THEN transform(__weir_a, (weir_v, weir_i) -> {index}) END"
    values = {"__weir_a": args[0], "__weir_dim": args[1], **({"__weir_rev": args[2]} if len(args) == 3 else {})}
    tree = sqlglot.parse_one(sql, read="spark").transform(
        lambda n: values[n.name].copy() if isinstance(n, exp.Column) and n.name in values else n)
    return exp.Explode(this=tree)


def _array_of(srf: exp.Expression) -> exp.Expression:
    if isinstance(srf, exp.Unnest):
        if len(srf.expressions) != 1:
            raise _not_supported("unnest() of several arrays in a select list is not supported")
        return srf.expressions[0]
    return srf.this


def _srfs(select: exp.Select) -> list[exp.Expression]:
    """The select list's generators (Spark's), in order."""
    out = []
    for p in select.expressions:
        for n in p.walk():
            if isinstance(n, (exp.Explode, exp.Unnest, exp.Inline)) and n.find_ancestor(exp.Select) is select:
                out.append(n)
    return out


def lockstep(tree: exp.Expression) -> exp.Expression:
    """The Spark-ready query with every select list that has several SRFs, or one inside
    an expression, zipped into one LATERAL VIEW (see the module's docstring)."""
    names = (f"weir_srf{k}" for k in itertools.count())
    for select in list(tree.find_all(exp.Select)):
        srfs = _srfs(select)
        if not _needs_lockstep(select, srfs):
            continue
        if any(type(s) not in _ARRAY_SRFS for s in srfs) or any(
                s.find_ancestor(exp.Explode, exp.Unnest, exp.Select) is not select for s in srfs):
            raise _not_supported("set-returning functions of this kind in lockstep are not supported")
        if _aggregates(select):
            raise _not_supported("several set-returning functions (or one inside an expression) in a select "
                                 "list with aggregates or window functions is not supported")
        name = next(names)
        columns = [exp.to_identifier(f"c{k}") for k in range(len(srfs))]
        arrays = [exp.Coalesce(this=_array_of(s).copy(), expressions=[exp.Array(expressions=[])]) for s in srfs]
        view = exp.Lateral(this=exp.Inline(this=exp.ArraysZip(expressions=arrays)), view=True,
                           alias=exp.TableAlias(this=exp.to_identifier(name), columns=columns))
        for srf, col in zip(srfs, columns, strict=True):
            srf.replace(exp.column(col.copy(), table=name))
        if select.args.get("from_") is None:  # LATERAL VIEW follows a FROM
            select.from_(exp.Subquery(this=exp.select("1"), alias=exp.TableAlias(this=exp.to_identifier("weir_one"))),
                         copy=False)
        select.append("laterals", view)
    return tree


def arrays_zip_duckdb(node: exp.Expression) -> exp.Expression:
    """Spark's arrays_zip in DuckDB: list_zip pads alike; NULL when an array is NULL (DuckDB
    would zip it as an empty one)."""
    args = [a.copy() for a in node.expressions]
    zipped = exp.Anonymous(this="list_zip", expressions=args)
    nullable = [a for a in args if not (isinstance(a, exp.Coalesce) and isinstance(a.expressions[-1], exp.Array))]
    if not nullable:  # lockstep's own arrays: never NULL
        return zipped
    null = exp.or_(*(exp.Is(this=a.copy(), expression=exp.Null()) for a in nullable))
    return exp.Case(ifs=[exp.If(this=null, true=exp.Null())], default=zipped)
