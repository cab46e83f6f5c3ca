"""An interval's text on Spark (`x::text`, `CAST(x AS varchar)`): PostgreSQL's 'postgres'
IntervalStyle of the value PostgreSQL would hold.

weir's Spark intervals are day-time intervals (microseconds): a stored value or literal is
PostgreSQL's interval with its whole days in days and the rest in the time field (as
weir's own output prints it). Arithmetic keeps PostgreSQL's fields apart, which Spark's
single count of microseconds cannot show (`30 * INTERVAL '1 hour'` is '30:00:00', not
'1 day 06:00:00'): the text of `+`, `-`, unary minus, and of `*` and `/` by a number is
computed from the two fields (days, microseconds) derived as PostgreSQL's interval_pl,
interval_um, interval_mul and interval_div derive them; the text of any other computed
interval (sum, CASE, ...) is refused.
"""

from __future__ import annotations

from sqlglot import exp

from weir import types as T
from weir.sql import infer
from weir.sql import translate as tr
from weir.sql.infer import Types

_DAY = 86_400_000_000
_TEXT = (exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR)


def cast(node: exp.Expression, types: Types) -> exp.Expression | None:
    """`interval::text` as PostgreSQL prints it, or None when the cast is not that."""
    if not isinstance(node, exp.Cast) or node.to.this not in _TEXT or node.to.expressions:
        return None
    if not infer.is_interval(types.of(node.this)):
        return None
    d, t = _fields(node.this, types)
    return tr.spark_template(_TEXT_SQL, d=d, t=t)


def _fields(node: exp.Expression, types: Types) -> tuple[exp.Expression, exp.Expression]:
    """(days, microseconds) of an interval expression, as BIGINT Spark expressions."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Neg):
        d, t = _fields(node.this, types)
        return tr.spark_template("(- {d})", d=d), tr.spark_template("(- {t})", t=t)
    if isinstance(node, (exp.Add, exp.Sub)) and all(
            infer.is_interval(types.of(x)) for x in (node.this, node.expression)):
        (d1, t1), (d2, t2) = _fields(node.this, types), _fields(node.expression, types)
        op = "+" if isinstance(node, exp.Add) else "-"
        return tr.spark_template(f"({{a}} {op} {{b}})", a=d1, b=d2), tr.spark_template(f"({{a}} {op} {{b}})", a=t1, b=t2)
    if isinstance(node, (exp.Mul, exp.Div)):
        left, right = node.this, node.expression
        if infer.is_interval(types.of(left)) and _number(types.of(right)):
            span, factor = left, right
        elif isinstance(node, exp.Mul) and infer.is_interval(types.of(right)) and _number(types.of(left)):
            span, factor = right, left
        else:
            raise _refused()
        d, t = _fields(span, types)
        op = "*" if isinstance(node, exp.Mul) else "/"
        if op == "/":
            factor = tr.spark_template(f"CASE WHEN CAST({{f}} AS DOUBLE) = 0 THEN {tr.raise_sql('22012', 'division by zero')} "
                                       "ELSE CAST({f} AS DOUBLE) END", f=factor)
        # interval_mul / interval_div without months: the whole days of day * factor, its
        # fraction (rounded to microseconds, TSROUND) cascaded into the time
        prod = tr.spark_template(f"(CAST({{d}} AS DOUBLE) {op} CAST({{f}} AS DOUBLE))", d=d, f=factor)
        whole = tr.spark_template("CAST({p} AS BIGINT)", p=prod)
        rem = tr.spark_template("(rint(({p} - {w}) * 86400.0 * 1000000.0) / 1000000.0)", p=prod, w=whole)
        carry = tr.spark_template("CAST({r} / 86400.0 AS BIGINT)", r=rem)
        days = tr.spark_template("({w} + {c})", w=whole, c=carry)
        time = tr.spark_template(f"CAST(rint(CAST({{t}} AS DOUBLE) {op} CAST({{f}} AS DOUBLE) "
                                 "+ ({r} - {c} * 86400.0) * 1000000.0) AS BIGINT)", t=t, f=factor, r=rem, c=carry)
        return days, time
    if isinstance(node, exp.Column) or (isinstance(node, exp.Anonymous) and node.meta.get("weir_literal")) \
            or (isinstance(node, exp.Cast) and isinstance(node.this, exp.Null)):
        micros = tr.spark_template(
            "(CAST(extract(DAY FROM {v}) AS BIGINT) * 86400000000 + CAST(extract(HOUR FROM {v}) AS BIGINT) * 3600000000"
            " + CAST(extract(MINUTE FROM {v}) AS BIGINT) * 60000000 + CAST(extract(SECOND FROM {v}) * 1000000 AS BIGINT))",
            v=node)
        # whole days in days, the rest (of the same sign) in the time: weir's reading of a day-time interval
        days = tr.spark_template(f"CAST({{m}} DIV {_DAY} AS BIGINT)", m=micros)
        return days, tr.spark_template(f"({{m}} - {{d}} * {_DAY})", m=micros, d=days)
    raise _refused()


def _number(t: T.PgType | None) -> bool:
    return infer.is_int(t) or infer.is_float(t) or infer.is_numeric(t)


def _refused() -> Exception:
    return tr.refuse("text of an interval computed this way")


# EncodeInterval (IntervalStyle postgres) of an interval without months
_TEXT_SQL = (  # NULL for NULL (concat_ws alone would give '')
    "CASE WHEN {d} IS NOT NULL AND {t} IS NOT NULL THEN concat_ws(' ', CASE WHEN {d} <> 0 THEN concat(CAST({d} AS STRING), CASE WHEN {d} = 1 THEN ' day' ELSE ' days' END) END, "
    "CASE WHEN {t} <> 0 OR {d} = 0 THEN concat("
    "CASE WHEN {t} < 0 THEN '-' WHEN {d} < 0 THEN '+' ELSE '' END, "
    "CASE WHEN abs({t}) DIV 3600000000 < 10 THEN '0' ELSE '' END, CAST(abs({t}) DIV 3600000000 AS STRING), ':', "
    "lpad(CAST(abs({t}) DIV 60000000 % 60 AS STRING), 2, '0'), ':', "
    "lpad(CAST(abs({t}) DIV 1000000 % 60 AS STRING), 2, '0'), "
    "CASE WHEN abs({t}) % 1000000 <> 0 THEN regexp_replace(concat('.', lpad(CAST(abs({t}) % 1000000 AS STRING), 6, '0')), "
    "'0+$', '') ELSE '' END) END) END")
