"""PostgreSQL types of the expressions of a resolved query, as far as weir needs them to
choose a faithful translation (log of numeric vs double, `||` of arrays vs jsonb vs
text, date - date ...). None means "not known"; callers decide what is safe then.

Column types come from the relations resolve() bound: each bound table carries its
columns' PgTypes in `meta["weir_columns"]`.
"""

from __future__ import annotations

from sqlglot import exp

from weir import types as T
from weir.sql.literals import is_interval_literal
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
    if d.this == exp.DataType.Type.STRUCT and d.sql(dialect="spark").replace(" ", "") == T.INTERVAL_DDL.replace(" ", ""):
        return T.INTERVAL  # weir's own Spark type of an interval (a NULL's or a parameter's cast)
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


def _is_unknown(t: PgType | None) -> bool:
    return t is not None and t.oid == T.UNKNOWN.oid


# result types of jsonb functions (weir.sql.jsonb); the set-returning ones: their value
JSONB_FUNCTIONS: dict[str, PgType] = {
    "to_jsonb": T.JSONB, "jsonb_build_object": T.JSONB, "jsonb_build_array": T.JSONB,
    "jsonb_strip_nulls": T.JSONB, "jsonb_agg": T.JSONB, "jsonb_typeof": T.TEXT, "jsonb_pretty": T.TEXT,
    "jsonb_array_length": T.INT4, "jsonb_array_elements": T.JSONB, "jsonb_array_elements_text": T.TEXT,
    "jsonb_object_keys": T.TEXT, "jsonb_set": T.JSONB, "jsonb_insert": T.JSONB,
    "jsonb_extract_path": T.JSONB, "jsonb_extract_path_text": T.TEXT, "jsonb_contains": T.BOOL,
    "jsonb_contained": T.BOOL, "jsonb_exists": T.BOOL, "jsonb_exists_any": T.BOOL, "jsonb_exists_all": T.BOOL,
    "jsonb_delete": T.JSONB,
}
# columns of jsonb's set-returning functions in FROM, in order
JSONB_ROWS: dict[str, tuple[PgType, ...]] = {
    "jsonb_each": (T.TEXT, T.JSONB), "jsonb_each_text": (T.TEXT, T.TEXT),
    "jsonb_array_elements": (T.JSONB,), "jsonb_array_elements_text": (T.TEXT,), "jsonb_object_keys": (T.TEXT,),
}
_JSONB_ROW_NAMES = {"jsonb_each": ("key", "value"), "jsonb_each_text": ("key", "value"),
                    "jsonb_array_elements": ("value",), "jsonb_array_elements_text": ("value",)}


def _jsonb_rows_column(src: exp.Expression, name: str) -> PgType | None:
    """The type of a column of `FROM jsonb_each(...) AS e(k, v)` (or LATERAL ...)."""
    call = src.this
    if not isinstance(call, exp.Anonymous) or call.name.lower() not in JSONB_ROWS:
        return None
    fname = call.name.lower()
    alias = src.args.get("alias")
    given = [c.name for c in alias.columns] if alias is not None else []
    default = _JSONB_ROW_NAMES.get(fname) or ((alias.name if alias is not None and alias.name else fname),)
    names = given + list(default[len(given):])
    return JSONB_ROWS[fname][names.index(name)] if name in names else None


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

    def assign(self, e: exp.Expression, t: PgType | None) -> None:
        """`e`, a node a translation made, has type `t`."""
        self._memo[id(e)] = t

    def of(self, e: exp.Expression | None) -> PgType | None:
        if e is None:
            return None
        key = id(e)
        if key not in self._memo:
            self._memo[key] = None  # cycles (a column of its own select) stay unknown
            self._memo[key] = self._infer(e)
        return self._memo[key]

    def _infer(self, e: exp.Expression) -> PgType | None:  # noqa: C901 - one case per node kind
        if isinstance(e, (exp.Paren, exp.Alias, exp.Neg, exp.Ordered, exp.Window)):
            return self.of(e.this)  # a window function's type is its function's
        if isinstance(e, exp.Literal):
            if e.meta.get("weir_type") in ("jsonb", "json"):  # a folded '...'::jsonb (weir.sql.render.literal)
                return T.BY_NAME[e.meta["weir_type"]]
            if e.is_string:
                return T.UNKNOWN
            if any(c in e.this for c in ".eE"):
                return T.NUMERIC
            v = int(e.this)
            return T.INT4 if -(2**31) <= v < 2**31 else T.INT8 if -(2**63) <= v < 2**63 else T.NUMERIC
        if isinstance(e, exp.HexString):  # a folded bytea literal (weir.sql.literals)
            return T.BYTEA
        if isinstance(e, exp.Boolean) or isinstance(e, (exp.Predicate, exp.Connector, exp.Not)):
            return T.BOOL
        if isinstance(e, (exp.Cast, exp.TryCast)):
            if e.meta.get("weir_type") in ("jsonb", "json"):  # a jsonb parameter's slot (weir.sql.plan)
                return T.BY_NAME[e.meta["weir_type"]]
            if e.meta.get("weir_type") in ("int2vector", "oidvector"):  # a folded literal (weir.sql.literals)
                return T.CATALOG_TYPES[e.meta["weir_type"]]
            to = datatype(e.to)
            source = self.of(e.this) if to is not None and to.is_array else None
            if to is not None and source is not None and source.is_array and source.ndims > to.ndims:
                return T.with_ndims(to, source.ndims)  # int[] is int[] whatever its dimensions
            return to
        if isinstance(e, exp.Column):
            return self._column(e)
        if isinstance(e, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)):
            return self._arith(e)
        if isinstance(e, exp.DPipe):
            a, b = self.of(e.this), self.of(e.expression)
            for t in (a, b):
                if t is not None and t.is_array:
                    return t
            a_null, b_null = isinstance(e.this, exp.Null), isinstance(e.expression, exp.Null)
            if (is_jsonb(a) and (is_jsonb(b) or _is_unknown(b) or b_null)) or (
                    is_jsonb(b) and (_is_unknown(a) or a_null)):
                return T.JSONB  # an untyped literal beside a jsonb is jsonb
            return T.TEXT
        if isinstance(e, (exp.Case, exp.If, exp.Coalesce, exp.Greatest, exp.Least, exp.Nullif)):
            return self._common(e)
        if isinstance(e, exp.Subquery) or isinstance(e, exp.Select):
            sel = e.this if isinstance(e, exp.Subquery) else e
            return self.of(sel.selects[0]) if isinstance(sel, exp.Select) and sel.selects else None
        if isinstance(e, exp.Bracket):
            base = e.this
            while isinstance(base, exp.Bracket) and self.of(base) is not None and not is_jsonb(self.of(base)):
                base = base.this  # a[i][j]: an element of a multidimensional array
            t = self.of(base)
            return t.element if t is not None and t.is_array else T.JSONB if is_jsonb(t) else None
        if isinstance(e, exp.Array):
            typed = [x for x in e.expressions if not isinstance(x, exp.Null)]
            inner = self._common(e) if typed else None
            if (typed and all(_is_unknown(self.of(x)) for x in typed)) or (e.expressions and not typed):
                inner = T.TEXT  # ARRAY['a', NULL], ARRAY[NULL]: text[], as PostgreSQL resolves unknowns
            if inner is not None and inner.is_array:  # of arrays: one more dimension
                return self._sub_arrays(typed)
            return T.array_of(inner) if inner is not None else None
        if isinstance(e, exp.Tuple):  # a row constructor (a record); its NULLs and literals are text
            return T.record_of(tuple(T.TEXT if isinstance(x, exp.Null) else _resolved(self.of(x))
                                     for x in e.expressions))
        return self._function(e)

    def _sub_arrays(self, subs: list[exp.Expression]) -> PgType | None:
        """ARRAY[...] of arrays: their element types' common type (ARRAY[[1], [2.5]] is
        numeric[]), one more dimension than the first's."""
        kinds = [self.of(x) for x in subs]
        first = kinds[0]
        if first is None or not first.is_array or first.ndims >= T.MAXDIM:
            return None
        element: PgType | None = None
        for k in kinds:
            element = promote(element, k.element if k is not None and k.is_array else k)
        if element is None or element.is_array:
            return None
        return T.array_of(T.with_ndims(T.array_of(element), first.ndims))

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
        if table and not any(src.alias_or_name == table for src in sources):
            table = table.lower()  # an unquoted qualifier (INTERVAL_TBL.f1) names the folded relation
        for src in sources:
            alias = src.alias_or_name
            if table and alias != table:
                continue
            if isinstance(src, (exp.Table, exp.Lateral)) and isinstance(src.this, exp.Anonymous):
                found = _jsonb_rows_column(src, name)
                if found is not None:
                    return found
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
        this = e.args.get("this")
        if isinstance(this, exp.Distinct) and len(this.expressions) == 1:  # sum(DISTINCT x): x's type
            this = this.expressions[0]
        arg = self.of(this) if isinstance(this, exp.Expression) else None
        if isinstance(e, exp.WithinGroup):  # ordered-set aggregates (weir.sql.ordered_set)
            keys = e.expression.expressions if isinstance(e.expression, exp.Order) else []
            if isinstance(e.this, (exp.PercentileDisc, exp.Mode)):
                return self.of(keys[0].this) if keys else None
            return T.FLOAT8 if isinstance(e.this, exp.PercentileCont) else self.of(e.this)
        if isinstance(e, exp.Count) or isinstance(e, (exp.RowNumber, exp.Rank, exp.DenseRank, exp.Ntile)):
            return T.INT8
        if isinstance(e, (exp.PercentRank, exp.CumeDist)):
            return T.FLOAT8
        if isinstance(e, exp.Sum):
            if arg is not None and arg.oid in (T.INT2.oid, T.INT4.oid):
                return T.INT8
            return T.NUMERIC if is_int(arg) or is_numeric(arg) else arg
        if isinstance(e, (exp.JustifyDays, exp.JustifyHours, exp.JustifyInterval)):
            return T.INTERVAL
        if isinstance(e, exp.Avg):
            return T.FLOAT8 if is_float(arg) else arg if is_interval(arg) else T.NUMERIC if arg is not None else None
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
        if isinstance(e, (exp.JSONExtract, exp.JSONBExtract, exp.JSONBDeleteAtPath)):
            return T.JSONB
        if isinstance(e, (exp.JSONExtractScalar, exp.JSONBExtractScalar)):
            return T.TEXT
        if isinstance(e, exp.JSONBExists):
            return T.BOOL
        if isinstance(e, exp.Extract):  # date_part(text, interval) is double precision
            interval_part = is_interval(self.of(e.expression)) and e.meta.get("weir_output_name") == "date_part"
            return T.FLOAT8 if interval_part else T.NUMERIC
        if isinstance(e, exp.TimestampTrunc):
            return arg
        if isinstance(e, exp.AtTimeZone):  # the one timestamp type becomes the other
            return T.TIMESTAMPTZ if arg is not None and arg.oid == T.TIMESTAMP.oid else T.TIMESTAMP  # a date: timestamptz
        if isinstance(e, exp.Trunc):  # trunc(integer) is trunc(double precision)
            return T.FLOAT8 if is_float(arg) or (is_int(arg) and e.args.get("decimals") is None) else T.NUMERIC
        if isinstance(e, (exp.Round, exp.Ceil, exp.Floor, exp.Sign)):
            return arg
        if isinstance(e, (exp.LogicalAnd, exp.LogicalOr)):
            return T.BOOL
        if isinstance(e, (exp.ArraySize,)):
            return T.INT4
        if isinstance(e, exp.ArrayConcat):
            return arg
        if isinstance(e, (exp.ArrayPosition, exp.ArrayRemove, exp.DateBin)) or (
                isinstance(e, exp.Anonymous) and e.name.lower() in ("array_positions", "array_replace")):
            return self._array_search(e)
        if isinstance(e, exp.CurrentDate):
            return T.DATE
        if isinstance(e, exp.CurrentTimestamp):
            return T.TIMESTAMPTZ
        if isinstance(e, exp.Anonymous) and is_interval_literal(e):
            return T.INTERVAL  # a folded interval literal, or an interval computed field by field
        if isinstance(e, exp.Anonymous) and e.name.lower() in ("array_ndims", "array_lower", "array_upper",
                                                               "cardinality"):
            return T.INT4
        if isinstance(e, exp.Anonymous) and e.name.lower() == "array_dims":
            return T.TEXT
        if isinstance(e, exp.Anonymous) and e.name.lower() == "mz_now":
            return T.MZ_TIMESTAMP
        if isinstance(e, exp.Anonymous) and e.name.lower() in JSONB_FUNCTIONS:
            return JSONB_FUNCTIONS[e.name.lower()]
        if isinstance(e, exp.JSONBObjectAgg):
            return T.JSONB
        return None


    def _array_search(self, e: exp.Expression) -> PgType | None:
        """array_position(s) are integers; array_remove / array_replace keep the array, its
        elements of the type common with the values (int[] with a numeric is numeric[]);
        date_bin is of its source's type (weir.sql.array_functions)."""
        if isinstance(e, exp.ArrayPosition):
            return T.INT4
        if isinstance(e, exp.DateBin):
            return self.of(e.expression)
        if e.name.lower() == "array_positions":
            return T.array_of(T.INT4)
        args = [e.this, e.expression] if isinstance(e, exp.ArrayRemove) else list(e.expressions)
        t = self.of(args[0]) if args else None
        if t is None and args and isinstance(args[0], exp.Array) and args[0].expressions and all(
                isinstance(a, exp.Null) or isinstance(a, exp.Literal) and a.is_string for a in args[0].expressions):
            t = T.TEXT_ARRAY  # ARRAY['a', NULL]
        if t is None or not t.is_array or t.element is None:
            return t
        if t.element.oid == T.UNKNOWN.oid:  # ARRAY['a']: text[]
            t = T.TEXT_ARRAY
        common: PgType = t.element
        for v in args[1:]:
            vt = self.of(v)
            if vt is not None and not vt.is_array and vt.oid != T.UNKNOWN.oid:
                common = promote(common, vt) or common
        return t if common.oid == t.element.oid else T.array_of(common)


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


def jsonb_result_types(query: exp.Expression) -> list[PgType | None]:
    """Per result column of a resolved query, jsonb where inference says so (Spark returns
    a jsonb as a STRING: without this its column would be described as text), or an array
    whose element Spark has no type for (`array_agg(atttypid)` is oid[], a list of ints
    to Spark, which a column-name hint cannot tell), or one of pg_catalog's own types
    (name, oid, "char") under another name (`t.typtype AS kind`), else None. Stars expand
    over relations whose columns are known; [] when they are not."""
    types = Types()
    found = _query_types(query, types)
    if found is None:
        return []
    casts = _top_level_casts(query, types)
    return [T.JSONB if t is not None and t.oid == T.JSONB.oid and not t.is_array
            else t if _array_spark_loses(t) or (cast and t is not None) or (t is not None and t.oid in _CATALOG_SCALARS)
            else None
            for t, cast in zip(found, casts or [False] * len(found), strict=True)]


def _top_level_casts(query: exp.Expression, types: Types) -> list[bool] | None:
    """Per result column (stars expanded), whether it is a projection cast to a type: its
    type is the cast's (what weir.sql.plan.cast_hints says, beside a star too)."""
    select = query
    while isinstance(select, exp.SetOperation):
        select = select.this
    if not isinstance(select, exp.Select):
        return None
    out: list[bool] = []
    for p in select.expressions:
        if _is_star(p):
            out.extend([False] * len(_star_types(select, p.table if isinstance(p, exp.Column) else "", types) or []))
        else:
            out.append(isinstance(p.this if isinstance(p, exp.Alias) else p, (exp.Cast, exp.TryCast)))
    return out


_CATALOG_SCALARS = frozenset({18, 19, 26})  # "char", name, oid


def _array_spark_loses(t: PgType | None) -> bool:
    """An array of a type Spark has no name for (oid[]); not one of unknown-typed literals,
    which PostgreSQL resolves to text[] as Spark's strings say."""
    e = t.element if t is not None and t.is_array else None
    return e is not None and t is not None and t.oid != 0 and not e.is_array \
        and e.oid != T.RECORD_OID and T.from_arrow(e.arrow).oid != e.oid


def result_types(query: exp.Expression) -> list[PgType | None] | None:
    """Per result column of a resolved query, its inferred type (None where inference
    cannot tell); None when the columns themselves are unknown (a star over an unknown
    relation, a statement that is not a query)."""
    return _query_types(query, Types())


def _is_star(p: exp.Expression) -> bool:
    return isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star))


def _query_types(query: exp.Expression, types: Types) -> list[PgType | None] | None:
    select = query
    while isinstance(select, exp.SetOperation):
        select = select.this
    if isinstance(select, exp.Subquery):
        select = select.this
    if not isinstance(select, exp.Select):
        return None
    out: list[PgType | None] = []
    for p in select.expressions:
        if _is_star(p):
            expanded = _star_types(select, p.table if isinstance(p, exp.Column) else "", types)
            if expanded is None:
                return None
            out.extend(expanded)
        else:
            out.append(_resolved(types.of(p)))
    return out


def _star_types(select: exp.Select, table: str, types: Types) -> list[PgType | None] | None:
    frm = select.args.get("from_") or select.args.get("from")
    if frm is None:
        return None
    sources = _flatten(frm.this)
    for j in select.args.get("joins") or []:
        sources.extend(_flatten(j.this))
    out: list[PgType | None] = []
    for src in sources:
        if table and src.alias_or_name != table:
            continue
        call = src.this if isinstance(src, (exp.Table, exp.Lateral)) else None
        cte = _cte(select, src.name) if isinstance(src, exp.Table) else None
        found: list[PgType | None] | None = None
        if isinstance(call, exp.Anonymous) and call.name.lower() in JSONB_ROWS:
            found = list(JSONB_ROWS[call.name.lower()])
        elif isinstance(src, exp.Table) and src.meta.get(COLUMNS_META):
            found = list(src.meta[COLUMNS_META].values())
        elif isinstance(src, exp.Subquery):
            found = _query_types(src.this, types)
        elif cte is not None:
            found = _query_types(cte.this, types)
        if found is None:
            return None
        out.extend(found)
    return out


_KEY_OPERATORS = (exp.JSONExtract, exp.JSONExtractScalar, exp.JSONBContainsTopKey)
_PATH_OPERATORS = (exp.JSONBExtract, exp.JSONBExtractScalar, exp.JSONBContainsAnyTopKeys,
                   exp.JSONBContainsAllTopKeys)


def jsonb_parameter_type(param: exp.Expression, parent: exp.Expression | None,
                         guess: PgType | None) -> PgType | None:
    """An untyped parameter right of a jsonb operator has the type PostgreSQL gives it:
    text for `->`, `->>`, `?` and `jsonb - $1`, text[] for `#>`, `#>>`, `?|`, `?&`
    (the other operand's type, jsonb, only for `@>`, `<@`, `||`, `=`)."""
    right = parent is not None and (parent.args.get("expression") is param or (
        isinstance(param.parent, exp.Paren) and parent.args.get("expression") is param.parent))
    if not right:
        return guess
    if isinstance(parent, _KEY_OPERATORS) or (isinstance(parent, exp.Sub) and is_jsonb(guess)):
        return T.TEXT
    if isinstance(parent, _PATH_OPERATORS):
        return T.TEXT_ARRAY
    return guess
