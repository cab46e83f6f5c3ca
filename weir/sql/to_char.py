"""to_char(timestamp | date, template): PostgreSQL's template patterns as a Java
DateTimeFormatter pattern for Spark's date_format, with the same meaning ('HH' is 01-12,
'HH24' 00-23), or a refusal for patterns without a faithful equivalent."""

from __future__ import annotations

import re

from sqlglot import exp

from weir import types as T
from weir.errors import WeirError
from weir.sql import infer, udf_calls
from weir.sql import translate as tr
from weir.sql.infer import Types
from weir.sql.translate import refuse as _refuse

# PostgreSQL to_char template patterns -> Java DateTimeFormatter patterns (longest first).
_TO_CHAR = [
    ("FMHH24", "H"), ("FMHH12", "h"), ("FMHH", "h"), ("FMMI", "m"), ("FMSS", "s"), ("FMDD", "d"),
    ("FMMM", "M"), ("FMMonth", "MMMM"), ("FMDay", "EEEE"), ("HH24", "HH"), ("HH12", "hh"),
    ("HH", "hh"), ("MI", "mm"), ("SS", "ss"), ("MS", "SSS"), ("US", "SSSSSS"), ("YYYY", "yyyy"),
    ("YY", "yy"), ("MM", "MM"), ("DDD", "DDD"), ("DD", "dd"), ("Mon", "MMM"), ("Dy", "EEE"),
    ("AM", "a"), ("PM", "a"),
]


def to_char(node: exp.Expression, types: Types) -> exp.Expression:
    """to_char(timestamp|date, 'template') as Spark's date_format with the same meaning."""
    if len(node.expressions) != 2:
        raise _refuse("to_char with these arguments")
    value, fmt = node.expressions
    t = types.of(value)
    if not (infer.is_timestamp(t) or infer.is_date(t)):
        raise _refuse(f"to_char of {t.name if t else 'an argument of unknown type'}")
    if isinstance(fmt, exp.Literal) and fmt.is_string:
        try:
            return exp.Anonymous(this="date_format", expressions=[value, exp.Literal.string(_java_pattern(fmt.this))])
        except WeirError:
            pass  # a pattern Java's formatter has no equivalent of: PostgreSQL's own, in the UDF
    micros = tr.spark_template("CAST(unix_micros(CAST({x} AS TIMESTAMP_LTZ)) AS STRING)", x=value)
    text = exp.Cast(this=fmt, to=exp.DataType.build("STRING", dialect="spark"))
    operation = "to_char_tz" if t is not None and t.oid == T.TIMESTAMPTZ.oid else "to_char"
    return udf_calls.checked("weir_datetime", operation, micros, text)


def _java_pattern(template: str) -> str:
    out: list[str] = []
    literal: list[str] = []

    def flush() -> None:
        if literal:
            out.append("'" + "".join(literal).replace("'", "''") + "'")
            literal.clear()

    i = 0
    while i < len(template):
        if template[i] == '"':
            end = template.find('"', i + 1)
            if end < 0:
                raise _refuse("to_char template with an unterminated quote")
            literal.append(template[i + 1:end])
            i = end + 1
            continue
        for pg, java in _TO_CHAR:
            if template.startswith(pg, i):
                flush()
                out.append(java)
                i += len(pg)
                break
        else:
            ch = template[i]
            if re.match(r"[A-Za-z]", ch):
                raise _refuse(f"to_char template pattern at \"{template[i:i + 4]}\"")
            literal.append(ch)
            i += 1
    flush()
    return "".join(out)
