"""Spark's series and generators as the in-process engine (weir.sql.in_process) writes them
for DuckDB: weir renders PostgreSQL's `generate_series(a, b)` in FROM over non-constant
bounds (pgjdbc's `generate_series(1, array_upper(current_schemas(false), 1))`) as
`explode(sequence(a, b, step))`, with its own checks of the step around it.

- `explode(array)` as a projection is DuckDB's `unnest(list)`: a row per element, none for
  an empty or NULL array, the other projections repeated (a map's explode, which Spark
  gives two columns, fails in DuckDB and runs on a replica);
- `sequence(a, b, step)` of integers is DuckDB's `generate_series(a, b, step)`, except
  where Spark raises (a step of 0, or one away from the end), and of Spark's element type
  (DuckDB's is always BIGINT); one without a step (but between constants), or of other
  types, runs on a replica;
- `LATERAL VIEW inline(array of structs)` (weir's `unnest(a) WITH ORDINALITY`, through
  transform()'s index, which counts from 1 in DuckDB) is DuckDB's lateral unnest;
- `slice(array, start, length)` with constant start >= 1 and length >= 0 is DuckDB's
  `list_slice(array, start, start + length - 1)`.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types

_INTS = (exp.DataType.Type.TINYINT, exp.DataType.Type.SMALLINT, exp.DataType.Type.INT)
NODES = (exp.Explode, exp.GenerateSeries, exp.ArraySlice, exp.Inline)


def unsupported(node: exp.Expression, dialect: object) -> str | None:
    """Why DuckDB cannot run this generator or series as Spark does (None: it can)."""
    if type(node) is exp.Explode:
        parent = node.parent.parent if isinstance(node.parent, exp.Alias) else node.parent
        return None if isinstance(parent, exp.Select) and node.arg_key in ("this", "expressions") \
            else "explode() inside an expression"
    if isinstance(node, exp.Inline):
        lateral = node.parent
        ok = isinstance(lateral, exp.Lateral) and lateral.args.get("view") and not lateral.args.get("outer")
        return None if ok else "inline() outside a LATERAL VIEW"
    if isinstance(node, exp.GenerateSeries):
        return None if _element_type(node, dialect) is not None else "sequence() of this kind"
    if isinstance(node, exp.ArraySlice):
        start, length = node.args.get("start"), node.args.get("end")
        ok = node.args.get("is_length") and _constant(start, 1) and _constant(length, 0)
        return None if ok else "slice() of this kind"
    return f"{node.key}"


def _constant(e: exp.Expression | None, least: int) -> bool:
    return isinstance(e, exp.Literal) and not e.is_string and e.this.lstrip("-").isdigit() and int(e.this) >= least


def _element_type(node: exp.GenerateSeries, dialect: object) -> str | None:
    """INTEGER or BIGINT: Spark's element type of an integer sequence with a step."""
    parts = [node.args.get("start"), node.args.get("end"), _step(node)]
    if any(p is None for p in parts):
        return None
    kinds = []
    for p in parts:
        typed = p if p.type is not None and p.type.this != exp.DataType.Type.UNKNOWN \
            else annotate_types(p.copy(), dialect=dialect)  # type: ignore[arg-type]
        kinds.append(typed.type.this if typed.type is not None else None)
    if all(k in _INTS for k in kinds):
        return "INTEGER"
    if all(k in (*_INTS, exp.DataType.Type.BIGINT) for k in kinds):
        return "BIGINT"
    return None


def _step(node: exp.GenerateSeries) -> exp.Expression | None:
    """The step, Spark's default (1, or -1 down to a lower end) for constant bounds."""
    step, start, end = node.args.get("step"), node.args.get("start"), node.args.get("end")
    if step is None and _constant(start, -(2**31)) and _constant(end, -(2**31)):
        return exp.Literal.number(1 if int(start.this) <= int(end.this) else -1)
    return step


def rewrite(node: exp.Expression, dialect: object) -> exp.Expression:
    """The DuckDB form of a node `unsupported` accepted."""
    if isinstance(node, exp.GenerateSeries):
        start, end, step = node.args["start"].copy(), node.args["end"].copy(), _step(node).copy()
        series = exp.Cast(this=exp.Anonymous(this="generate_series", expressions=[start, end, step]),
                          to=exp.DataType.build(f"{_element_type(node, dialect)}[]", dialect="duckdb"))
        wrong = exp.or_(
            exp.EQ(this=step.copy(), expression=exp.Literal.number(0)),
            exp.and_(exp.GT(this=step.copy(), expression=exp.Literal.number(0)),
                     exp.GT(this=start.copy(), expression=end.copy())),
            exp.and_(exp.LT(this=step.copy(), expression=exp.Literal.number(0)),
                     exp.LT(this=start.copy(), expression=end.copy())))
        return exp.Case(ifs=[exp.If(this=wrong, true=exp.Anonymous(
            this="error", expressions=[exp.Literal.string("Illegal sequence boundaries")]))], default=series)
    if isinstance(node, exp.ArraySlice):
        start, length = node.args["start"], node.args["end"]
        last = int(start.this) + int(length.this) - 1
        return exp.Anonymous(this="list_slice", expressions=[
            node.this.copy(), exp.Literal.number(int(start.this)), exp.Literal.number(last)])
    if isinstance(node, exp.Inline):
        return node.copy()  # DuckDB's CROSS JOIN LATERAL (SELECT unnest(list, max_depth => 2))
    return exp.Unnest(expressions=[node.this.copy()])


def zero_based_indexes(tree: exp.Expression) -> None:
    """transform(a, (v, i) -> ...): Spark's index i counts from 0, DuckDB's list_transform's
    from 1; the lambda sees i - 1."""
    for node in list(tree.find_all(exp.Transform)):
        fn = node.args.get("expression")
        if not (isinstance(fn, exp.Lambda) and len(fn.expressions) == 2):
            continue
        index = fn.expressions[1].name
        for ref in list(fn.this.find_all(exp.Identifier, exp.Column)):
            if ref.name != index or (isinstance(ref, exp.Column) and ref.table):
                continue
            if isinstance(ref, exp.Identifier) and (isinstance(ref.parent, exp.Column) or (
                    isinstance(ref.parent, exp.PropertyEQ) and ref.arg_key == "this")):
                continue  # a column's part, or a struct field's name
            ref.replace(exp.Paren(this=exp.Sub(this=exp.to_identifier(index), expression=exp.Literal.number(1))))
