"""PostgreSQL types of the expressions of a resolved query, as far as weir needs them to
choose a faithful translation (log of numeric vs double, `||` of arrays vs jsonb vs
text, date - date ...). None means "not known"; callers decide what is safe then.

Column types come from the relations resolve() bound: each bound table carries its
columns' PgTypes in `meta["weir_columns"]`.
"""

from __future__ import annotations

from sqlglot import exp

from weir import types as T
from weir.types import PgType

COLUMNS_META = "weir_columns"

_RANK = {T.INT2.oid: 1, T.INT4.oid: 2, T.INT8.oid: 3, T.NUMERIC.oid: 4, T.FLOAT4.oid: 5, T.FLOAT8.oid: 6}
_INTS = (T.INT2.oid, T.INT4.oid, T.INT8.oid)
FLOATS = (T.FLOAT4.oid, T.FLOAT8.oid)
_TEXTS = (T.TEXT.oid, T.VARCHAR.oid, 1042, 19, T.UNKNOWN.oid)
_TIMES = (T.TIMESTAMP.oid, T.TIMESTAMPTZ.oid)


def is_int(t: PgType | None) -> bool:
    return t is not None and t.oid in _INTS


def is_float(t: PgType | None) -> bool:
    return t is not None and t.oid in FLOATS


def is_numeric(t: PgType | None) -> bool:
    return t is not None and t.oid == T.NUMERIC.oid and not t.is_array


def is_text(t: PgType | None) -> bool:
    return t is not None and t.oid in _TEXTS


def is_jsonb(t: PgType | None) -> bool:
    return t is not None and t.oid in (T.JSONB.oid, 114)


def is_interval(t: PgType | None) -> bool:
    return t is not None and t.oid == T.INTERVAL.oid


def is_date(t: PgType | None) -> bool:
    return t is not None and t.oid == T.DATE.oid


def is_timestamp(t: PgType | None) -> bool:
    return t is not None and t.oid in _TIMES


def datatype(d: exp.DataType) -> PgType | None:
    try:
        return T.parse_type(d.sql(dialect="postgres"))
    except Exception:  # noqa: BLE001 - a type weir does not know
        return None


def promote(a: PgType | None, b: PgType | None) -> PgType | None:
    """The common numeric type PostgreSQL's operators resolve to (unknown literals adopt the other)."""
    if a is None or a.oid == T.UNKNOWN.oid:
        return b
    if b is None or b.oid == T.UNKNOWN.oid:
        return a
    if a.oid in _RANK and b.oid in _RANK:
        r = a if _RANK[a.oid] >= _RANK[b.oid] else b
        return T.NUMERIC if r.oid == T.NUMERIC.oid else r
    return a


def _resolved(t: PgType | None) -> PgType | None:
    """A subquery's or VALUES list's column of unknown type ('foo') is text outside it."""
    return T.TEXT if t is not None and t.oid == T.UNKNOWN.oid else t


class Types:
    """Memoised type inference over one (unchanging) expression tree."""

    def __init__(self) -> None:
        self._memo: dict[int, PgType | None] = {}

    def same_as(self, new: exp.Expression, old: exp.Expression) -> None:
        """`new` replaces `old` in the tree and has its type (a rewrite keeps the meaning)."""
        if id(new) not in self._memo:
            self._memo[id(new)] = self.of(old)

    def of(self, e: exp.Expression | None) -> PgType | None:
        if e is None:
            return None
        key = id(e)
        if key not in self._memo:
            self._memo[key] = None  # cycles (a column of its own select) stay unknown
            self._memo[key] = self._infer(e)
        return self._memo[key]

    def _infer(self, e: exp.Expression) -> PgType | None:  # noqa: C901 - one case per node kind
        if isinstance(e, (exp.Paren, exp.Alias, exp.Neg, exp.Ordered)):
            return self.of(e.this)
        if isinstance(e, exp.Literal):
            if e.is_string:
                return T.UNKNOWN
            if any(c in e.this for c in ".eE"):
                return T.NUMERIC
            v = int(e.this)
            return T.INT4 if -(2**31) <= v < 2**31 else T.INT8 if -(2**63) <= v < 2**63 else T.NUMERIC
        if isinstance(e, exp.Boolean) or isinstance(e, (exp.Predicate, exp.Connector, exp.Not)):
            return T.BOOL
        if isinstance(e, (exp.Cast, exp.TryCast)):
            return datatype(e.to)
        if isinstance(e, exp.Column):
            return self._column(e)
        if isinstance(e, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)):
            return self._arith(e)
        if isinstance(e, exp.DPipe):
            a, b = self.of(e.this), self.of(e.expression)
            for t in (a, b):
                if t is not None and t.is_array:
                    return t
            if is_jsonb(a) and is_jsonb(b):
                return T.JSONB
            return T.TEXT
        if isinstance(e, (exp.Case, exp.If, exp.Coalesce, exp.Greatest, exp.Least, exp.Nullif)):
            return self._common(e)
        if isinstance(e, exp.Subquery) or isinstance(e, exp.Select):
            sel = e.this if isinstance(e, exp.Subquery) else e
            return self.of(sel.selects[0]) if isinstance(sel, exp.Select) and sel.selects else None
        if isinstance(e, exp.Bracket):
            t = self.of(e.this)
            return t.element if t is not None and t.is_array else None
        if isinstance(e, exp.Array):
            inner = self._common(e)
            return T.array_of(inner) if inner is not None and not inner.is_array else None
        return self._function(e)

    def _common(self, e: exp.Expression) -> PgType | None:
        if isinstance(e, exp.Case):
            children = [i.args.get("true") for i in e.args.get("ifs") or []] + [e.args.get("default")]
        elif isinstance(e, exp.If):
            children = [e.args.get("true"), e.args.get("false")]
        elif isinstance(e, exp.Nullif):
            children = [e.this]
        else:
            children = list(e.iter_expressions())
        out: PgType | None = None
        for child in children:
            out = promote(out, self.of(child))
        return out

    def _arith(self, e: exp.Binary) -> PgType | None:
        a, b = self.of(e.this), self.of(e.expression)
        if isinstance(e, exp.Sub) and is_date(a) and is_date(b):
            return T.INT4
        if isinstance(e, (exp.Add, exp.Sub)) and (is_timestamp(a) and is_timestamp(b)):
            return T.INTERVAL if isinstance(e, exp.Sub) else None
        for x, y in ((a, b), (b, a)):
            if is_timestamp(x) and is_interval(y):
                return x
            if is_date(x) and is_interval(y):
                return T.TIMESTAMP
            if is_date(x) and is_int(y):
                return T.DATE
            if is_interval(x) and (y is None or is_interval(y) or (y.oid in _RANK)):
                return T.INTERVAL
        return promote(a, b)

    def _column(self, col: exp.Column) -> PgType | None:
        name = col.name
        table = col.table
        node: exp.Expression | None = col.parent
        while node is not None:
            if isinstance(node, exp.Select):
                found = self._from_sources(node, table, name)
                if found is not None:
                    return found
            node = node.parent
        return None

    def _from_sources(self, select: exp.Select, table: str, name: str) -> PgType | None:
        sources: list[exp.Expression] = []
        frm = select.args.get("from_") or select.args.get("from")
        if frm is not None:
            sources.extend(_flatten(frm.this))
        for j in select.args.get("joins") or []:
            sources.extend(_flatten(j.this))
        for src in sources:
            alias = src.alias_or_name
            if table and alias != table:
                continue
            if isinstance(src, exp.Table):
                cols = src.meta.get(COLUMNS_META)
                if cols and name in cols:
                    return cols[name]
                cte = _cte(select, src.name)
                if cte is not None:
                    found = self._projection(cte.this, name)
                    if found is not None:
                        return found
            elif isinstance(src, exp.Subquery):
                found = self._projection(src.this, name)
                if found is not None:
                    return found
            elif isinstance(src, exp.Values):  # (VALUES (...), ...) AS t(a, b)
                found = self._values_column(src, name)
                if found is not None:
                    return found
        return None

    def _values_column(self, values: exp.Values, name: str) -> PgType | None:
        alias = values.args.get("alias")
        names = [c.name for c in alias.columns] if alias is not None else []
        if name not in names:
            return None
        k = names.index(name)
        out: PgType | None = None
        for row in values.expressions:
            cells = row.expressions if isinstance(row, exp.Tuple) else [row]
            if k < len(cells):
                t = self.of(cells[k])
                out = t if out is None else promote(out, t)
        return _resolved(out)

    def _projection(self, q: exp.Expression, name: str) -> PgType | None:
        while isinstance(q, exp.SetOperation):
            q = q.this
        if isinstance(q, exp.Subquery):
            q = q.this
        if not isinstance(q, exp.Select):
            return None
        for p in q.selects:
            if p.alias_or_name == name:
                return _resolved(self.of(p))
        for p in q.selects:  # `SELECT *` (a view's definition, inlined): the name is a source's
            if isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star)):
                found = self._from_sources(q, p.table if isinstance(p, exp.Column) else "", name)
                if found is not None:
                    return found
        return None

    def _function(self, e: exp.Expression) -> PgType | None:  # noqa: C901 - a table of results
        arg = self.of(e.this) if isinstance(e.args.get("this"), exp.Expression) else None
        if isinstance(e, exp.Count) or isinstance(e, (exp.RowNumber, exp.Rank, exp.DenseRank, exp.Ntile)):
            return T.INT8
        if isinstance(e, exp.Sum):
            if arg is not None and arg.oid in (T.INT2.oid, T.INT4.oid):
                return T.INT8
            return T.NUMERIC if is_int(arg) or is_numeric(arg) else arg
        if isinstance(e, exp.Avg):
            return T.FLOAT8 if is_float(arg) else T.NUMERIC if arg is not None else None
        if isinstance(e, (exp.Lag, exp.Lead)) and e.args.get("default") is not None:
            return promote(arg, self.of(e.args["default"]))
        if isinstance(e, (exp.Min, exp.Max, exp.Abs, exp.FirstValue, exp.LastValue, exp.Lag, exp.Lead)):
            return arg
        if isinstance(e, exp.ArrayAgg):
            inner = self.of(e.this.this if isinstance(e.this, exp.Order) else e.this)
            return T.array_of(inner) if inner is not None and not inner.is_array else None
        if isinstance(e, (exp.Log, exp.Ln, exp.Exp, exp.Sqrt, exp.Pow, exp.Cbrt)):
            args = [self.of(a) for a in e.iter_expressions()]
            return T.NUMERIC if any(is_numeric(a) for a in args) else T.FLOAT8
        if isinstance(e, (exp.Length, exp.StrPosition, exp.Ascii)):
            return T.INT4
        if isinstance(e, (exp.Upper, exp.Lower, exp.Substring, exp.Trim, exp.Concat, exp.ConcatWs,
                          exp.Replace, exp.Left, exp.Right, exp.Pad, exp.Repeat, exp.Reverse, exp.MD5,
                          exp.TimeToStr, exp.GroupConcat, exp.SplitPart, exp.Chr, exp.Initcap)):
            return T.TEXT
        if isinstance(e, (exp.JSONExtract, exp.JSONBExtract)):
            return T.JSONB
        if isinstance(e, (exp.JSONExtractScalar, exp.JSONBExtractScalar)):
            return T.TEXT
        if isinstance(e, exp.Extract):
            return T.NUMERIC
        if isinstance(e, exp.TimestampTrunc):
            return arg
        if isinstance(e, exp.AtTimeZone):  # the one timestamp type becomes the other
            return T.TIMESTAMPTZ if arg is not None and arg.oid in (T.TIMESTAMP.oid, T.DATE.oid) else T.TIMESTAMP
        if isinstance(e, (exp.Round, exp.Ceil, exp.Floor, exp.Sign)):
            return arg
        if isinstance(e, (exp.LogicalAnd, exp.LogicalOr)):
            return T.BOOL
        if isinstance(e, (exp.ArraySize,)):
            return T.INT4
        if isinstance(e, exp.ArrayConcat):
            return arg
        if isinstance(e, exp.CurrentDate):
            return T.DATE
        if isinstance(e, exp.CurrentTimestamp):
            return T.TIMESTAMPTZ
        if isinstance(e, exp.Anonymous) and e.name.lower() == "make_dt_interval":
            return T.INTERVAL  # a folded interval literal
        if isinstance(e, exp.Anonymous) and e.name.lower() == "mz_now":
            return T.MZ_TIMESTAMP
        return None


def _cte(node: exp.Expression, name: str) -> exp.CTE | None:
    cur: exp.Expression | None = node
    while cur is not None:
        w = cur.args.get("with_") or cur.args.get("with") if isinstance(cur, exp.Query) else None
        if w is not None:
            for cte in w.expressions:
                if cte.alias_or_name == name:
                    return cte
        cur = cur.parent
    return None


def _flatten(src: exp.Expression) -> list[exp.Expression]:
    """The relations of a FROM item: a parenthesised join `(a JOIN b ...)` (sqlglot: an
    unaliased Subquery or Paren around a table that carries the joins) is its tables."""
    if isinstance(src, (exp.Subquery, exp.Paren)) and not isinstance(src.this, exp.Query):
        return _flatten(src.this)
    out = [src]
    for j in src.args.get("joins") or []:
        out.extend(_flatten(j.this))
    return out
