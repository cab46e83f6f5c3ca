"""PostgreSQL's text output of arrays and records, as Spark SQL, wherever a query turns one
into text (`::text`, `||` of a record, concat): Spark's own CAST prints `[1, null]` and
`{1, a b}` where PostgreSQL prints `{1,NULL}` and `(1,"a b")`.

An array is `{e1,e2,...}`: a NULL element is NULL; an element's text is quoted (with `"`
and `\\` escaped by a backslash) when it is empty, is NULL in any case, or holds a brace, a
comma, a quote, a backslash or white space. A record is `(f1,f2,...)`: a NULL field is
empty; a field's text is quoted (`"` and `\\` doubled) when it is empty or holds a
parenthesis, a comma, a quote, a backslash or white space. Each element's or field's text
is its type's own text output (weir.codec's), computed by Spark expressions; floats'
digits by the replica's UDFs (weir.codec.spark_udfs), which Spark runs only outside of
lambdas: an array of floats has its texts made by one call for the whole array, and a
record holding a float inside an array is refused.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from weir import types as T
from weir.sql import infer, interval_ops
from weir.sql.infer import Types
from weir.sql.translate import refuse, spark_template

Handler = Callable[[exp.Expression, Types], exp.Expression]

# the text of one value (Spark SQL, {x} the value) of types whose text is Spark's CAST
_CAST = "CAST({x} AS STRING)"
_PLAIN_CAST = frozenset({T.INT2.oid, T.INT4.oid, T.INT8.oid, 26, T.MZ_TIMESTAMP.oid})
# types held as Spark strings that are their PostgreSQL text
_AS_IS = frozenset({T.TEXT.oid, T.VARCHAR.oid, 19, T.UNKNOWN.oid, T.UUID.oid, T.JSONB.oid, 114, 18, 24, 1033})
# numeric without trailing zeros, as weir prints an unconstrained numeric
_TRIMMED = r"regexp_replace(regexp_replace(CAST({x} AS STRING), '(\\.[0-9]*?)0+$', '$1'), '\\.$', '')"
# a date or timestamp outside years 1-9999: Spark prints -0043 / +10000, PostgreSQL 0044 ... BC / 10000
_YEAR = ("CASE WHEN year({x}) BETWEEN 1 AND 9999 THEN {cast} "
         "ELSE concat(lpad(CAST(IF(year({x}) < 1, 1 - year({x}), year({x})) AS STRING), 4, '0'), "
         "regexp_replace({cast}, '^[+-]?[0-9]+', ''), IF(year({x}) < 1, ' BC', '')) END")
_FLOAT_UDFS = {T.FLOAT4.oid: ("weir_float4_out", "weir_float4_texts"),
               T.FLOAT8.oid: ("weir_float8_out", "weir_float8_texts")}

_QUOTE_ELEMENT = (r"CASE WHEN {s} IS NULL THEN 'NULL' "
                  r"""WHEN {s} = '' OR lower({s}) = 'null' OR {s} RLIKE '[{{}},"\\\\\\s]' """
                  r"""THEN concat('"', replace(replace({s}, '\\', '\\\\'), '"', '\\"'), '"') ELSE {s} END""")
_QUOTE_FIELD = (r"CASE WHEN {s} IS NULL THEN '' "
                r"""WHEN {s} = '' OR {s} RLIKE '[(),"\\\\\\s]' """
                r"""THEN concat('"', replace(replace({s}, '\\', '\\\\'), '"', '""'), '"') ELSE {s} END""")


def _call(name: str, *args: exp.Expression) -> exp.Expression:
    call = exp.Anonymous(this=name, expressions=list(args))
    call.meta["weir_literal"] = True  # weir's own function: the gate lets it pass
    return call


def _lambda_var(depth: int) -> str:
    return f"_weir_t{depth}"


def text_of(x: exp.Expression, t: T.PgType | None, types: Types, *, depth: int = 0) -> exp.Expression:
    """Spark SQL for PostgreSQL's text output of `x` (of type `t`); NULL for NULL. `depth`
    counts the lambdas `x` is inside (a Python UDF cannot be called in one). Raises 0A000
    where weir cannot print it as PostgreSQL does."""
    if t is None:
        raise refuse("text output of a value of this type")
    if t.is_array:
        return array_text(x, t, types, depth=depth)
    if t.oid == T.RECORD_OID:
        return record_text(x, t, types, depth=depth)
    if t.oid == T.BOOL.oid:
        return spark_template("CASE WHEN {x} THEN 't' WHEN NOT {x} THEN 'f' END", x=x)
    if t.oid in _PLAIN_CAST:
        return spark_template(_CAST, x=x)
    if t.oid in _AS_IS:
        return x.copy()
    if t.oid == T.BPCHAR.oid:  # weir keeps character(n) without its padding: PostgreSQL shows it
        return spark_template(f"rpad({{x}}, {t.length}, ' ')", x=x) if t.length is not None else x.copy()
    if infer.is_numeric(t):
        return spark_template(_TRIMMED if t.precision is None else _CAST, x=x)
    if infer.is_float(t):
        if depth:
            raise refuse("text output of a record with a float field inside an array")
        return _call(_FLOAT_UDFS[t.oid][0], x.copy())
    if t.oid in (T.DATE.oid, T.TIMESTAMP.oid):
        return spark_template(_YEAR.replace("{cast}", _CAST), x=x)
    if t.oid == T.TIMESTAMPTZ.oid:  # the session's time zone is UTC on replicas
        return spark_template(_YEAR.replace("{cast}", "concat(CAST({x} AS STRING), '+00')"), x=x)
    if t.oid == T.INTERVAL.oid:
        return interval_ops.text(x)
    if t.oid == T.BYTEA.oid:
        return spark_template(r"concat('\\x', lower(hex({x})))", x=x)
    raise refuse(f"text output of {t.name} inside an array or a record")


def array_text(a: exp.Expression, t: T.PgType, types: Types, *, depth: int = 0) -> exp.Expression:
    """`{...}` of an array; of a multidimensional one, `{{...},{...}}`: each sub-array's
    text (never quoted) inside the braces."""
    et = t.element
    assert et is not None
    var = _lambda_var(depth)
    if t.ndims > 1:
        if infer.is_float(et):  # its digits' UDF cannot run inside a lambda
            raise refuse("text output of a multidimensional array of floats")
        inner = array_text(exp.column(var), T.with_ndims(t, t.ndims - 1), types, depth=depth + 1)
        return spark_template(f"concat('{{{{', array_join(transform({{a}}, {var} -> {{i}}), ','), '}}}}')",
                              a=a, i=inner)
    if infer.is_float(et) and not depth:  # one UDF call for the whole array
        texts = _call(_FLOAT_UDFS[et.oid][1], a.copy())
    else:
        inner = text_of(exp.column(var), et, types, depth=depth + 1)
        texts = spark_template(f"transform({{a}}, {var} -> {{t}})", a=a, t=inner)
    quoted = spark_template(_QUOTE_ELEMENT.replace("{s}", var))
    return spark_template(f"concat('{{{{', array_join(transform({{t}}, {var} -> {{q}}), ','), '}}}}')",
                          t=texts, q=quoted)


def _resolved(t: T.PgType | None, fallback: T.PgType) -> T.PgType | None:
    if t is None or t.oid == T.UNKNOWN.oid:
        return fallback
    return t


def record_text(r: exp.Expression, t: T.PgType, types: Types, *, depth: int = 0) -> exp.Expression:
    """`(...)` of a record: of a row constructor's own expressions, or of a struct's fields
    (named f1, f2 ... by a cast: Spark names a struct's fields after its columns)."""
    fields = t.fields or ()
    while isinstance(r, exp.Paren):
        r = r.this
    if isinstance(r, exp.Tuple):
        values = [text_of(e, _resolved(types.of(e), T.TEXT), types, depth=depth) for e in r.expressions]
        nullable = None
    else:
        if any(f is None for f in fields) or not fields:
            raise refuse("text output of a record whose field types are not known")
        ddl = "STRUCT<" + ", ".join(f"f{i + 1}: {f.spark_ddl}" for i, f in enumerate(fields) if f is not None) + ">"
        struct = exp.Cast(this=r.copy(), to=exp.DataType.build(ddl, dialect="spark"))
        values = [text_of(exp.Dot(this=struct.copy(), expression=exp.to_identifier(f"f{i + 1}")), f, types,
                          depth=depth)
                  for i, f in enumerate(fields)]
        nullable = r
    var = _lambda_var(depth)
    quoted = spark_template(_QUOTE_FIELD.replace("{s}", var))
    text = spark_template(f"concat('(', array_join(transform({{v}}, {var} -> {{q}}), ','), ')')",
                          v=exp.Array(expressions=values), q=quoted)
    if nullable is None:
        return text
    return spark_template("CASE WHEN {r} IS NOT NULL THEN {t} END", r=nullable, t=text)


# types whose text output is not Spark's CAST AS STRING (which prints [1, null], {1, a b},
# a timestamptz without its offset and a bytea's raw bytes)
def _own_text(t: T.PgType) -> bool:
    return t.is_array or t.oid in (T.RECORD_OID, T.BYTEA.oid, T.TIMESTAMPTZ.oid, T.INTERVAL.oid)


def _as_text(x: exp.Expression, t: T.PgType, types: Types) -> exp.Expression:
    """`x`'s text output, typed text for the handlers after this one."""
    return exp.Cast(this=text_of(x, t, types), to=exp.DataType.build("TEXT"))


def text_cast(previous: Handler) -> Handler:
    """A cast to text, varchar or char of an array, a record, a bytea or a timestamptz is
    its PostgreSQL text output (then cut to a length by `previous`, which handles every
    other cast)."""
    def handler(node: exp.Expression, types: Types) -> exp.Expression:
        source, target = types.of(node.this), infer.datatype(node.to)  # type: ignore[attr-defined]
        if source is None or target is None or not _own_text(source) or target.oid not in (
                T.TEXT.oid, T.VARCHAR.oid, T.BPCHAR.oid):
            return previous(node, types)
        if target.oid == T.TEXT.oid:
            return text_of(node.this, source, types)
        return previous(exp.Cast(this=_as_text(node.this, source, types), to=node.to), types)  # type: ignore[attr-defined]
    return handler


def text_operands(previous: Handler) -> Handler:
    """`||` and concat() take an array's or a record's text output (`'x' || ROW(1, 'a b')` is
    x(1,"a b")); `||` of two arrays or of an array and an element stays array concatenation."""
    def handler(node: exp.Expression, types: Types) -> exp.Expression:
        if isinstance(node, exp.DPipe):
            for key in ("this", "expression"):
                t = types.of(node.args[key])
                if t is not None and t.oid in (T.RECORD_OID, T.INTERVAL.oid):
                    node.set(key, _as_text(node.args[key], t, types))
        else:
            for a in list(node.expressions):
                t = types.of(a)
                if t is not None and (t.is_array or t.oid in (T.RECORD_OID, T.INTERVAL.oid)):
                    a.replace(_as_text(a, t, types))
        return previous(node, types)
    return handler
