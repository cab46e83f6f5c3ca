"""PostgreSQL's format(formatstr, VARIADIC args): `%[n$][-][width]s|I|L` and `%%`.

Spark's format_string is printf's, with other conversions and other text for every
type, so weir reads the format string itself (PostgreSQL's text_format in varlena.c,
step for step) and writes the result as a concatenation: %s is the argument's
PostgreSQL text ('' for NULL), %I quote_ident's (NULL is 22004), %L quote_literal's
('NULL' for NULL), each padded to its width. The format string must be a constant (so is
the array after VARIADIC); errors in it are PostgreSQL's, raised while planning."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from weir import types as T
from weir.errors import SqlState, WeirError
from weir.sql import pg_text
from weir.sql.catalog_definitions import QUOTED_KEYWORDS
from weir.sql.infer import Types
from weir.sql.translate import raise_sql, spark_template


def _invalid(message: str, hint: str | None = None) -> WeirError:
    return WeirError(SqlState.INVALID_PARAMETER_VALUE, message, hint=hint)


@dataclass
class _Spec:
    """One conversion: argument index (0-based), justify left, width (None, a number, or
    the index of the argument holding it), type s / I / L."""
    arg: int
    left: bool
    width: int | None
    width_arg: int | None
    kind: str


def _number(fmt: str, i: int) -> tuple[int | None, int]:
    start = i
    while i < len(fmt) and fmt[i].isdigit():
        i += 1
    if i == start:
        return None, i
    value = int(fmt[start:i])
    if value > 2**31 - 1:
        raise _invalid("number is out of range")
    return value, i


def _unterminated(fmt: str, i: int) -> None:
    if i >= len(fmt):
        raise _invalid("unterminated format() type specifier",
                       'For a single "%" use "%%".')


def _argpos(fmt: str, i: int) -> tuple[int | None, int]:
    """An `n$` at i: (n, index after it), or (None, i)."""
    n, j = _number(fmt, i)
    _unterminated(fmt, j)
    if n is not None and fmt[j] == "$":
        if n == 0:
            raise _invalid("format specifies argument 0, but arguments are numbered from 1")
        return n, j + 1
    return None, i


def parse(fmt: str) -> list[str | _Spec]:
    """The literal pieces and conversions of a format string, arguments numbered as
    text_format numbers them (an unnumbered one takes the one after the last used)."""
    out: list[str | _Spec] = []
    literal: list[str] = []
    i, last = 0, -1
    while i < len(fmt):
        if fmt[i] != "%":
            literal.append(fmt[i])
            i += 1
            continue
        i += 1
        _unterminated(fmt, i)
        if fmt[i] == "%":
            literal.append("%")
            i += 1
            continue
        n, i = _argpos(fmt, i)
        left = False
        while i < len(fmt) and fmt[i] == "-":
            left, i = True, i + 1
        _unterminated(fmt, i)
        width, width_arg = None, None
        if fmt[i] == "*":
            i += 1
            _unterminated(fmt, i)
            wn, i = _argpos(fmt, i)
            width_arg = (wn - 1) if wn is not None else last + 1
            last = width_arg
        else:
            width, i = _number(fmt, i)
            _unterminated(fmt, i)
        kind = fmt[i]
        if kind not in "sIL":
            raise _invalid(f'unrecognized format() type specifier "{kind}"', 'For a single "%" use "%%".')
        arg = (n - 1) if n is not None else last + 1
        last = arg
        if literal:
            out.append("".join(literal))
            literal = []
        out.append(_Spec(arg, left, width, width_arg, kind))
        i += 1
    if literal:
        out.append("".join(literal))
    return out


def _arguments(node: exp.Expression) -> list[exp.Expression]:
    args = list(node.expressions)
    if len(args) == 1 and isinstance(args[0], exp.Variadic):
        array, to = args[0].this, None
        if isinstance(array, exp.Cast) and array.to.expressions:  # ARRAY[...]::text[]: each element cast
            array, to = array.this, array.to.expressions[0]
        if not isinstance(array, exp.Array):
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                            "format() with VARIADIC of an array that is not an ARRAY[...] constructor is not supported")
        return [exp.Cast(this=e.copy(), to=to.copy()) if to is not None else e for e in array.expressions]
    if any(isinstance(a, exp.Variadic) for a in args):
        raise WeirError(SqlState.SYNTAX_ERROR, "VARIADIC argument must be the last one")
    return args


def _piece(spec: _Spec, args: list[exp.Expression], types: Types) -> exp.Expression:
    if spec.arg >= len(args) or (spec.width_arg is not None and spec.width_arg >= len(args)):
        raise _invalid("too few arguments for format()")
    x = args[spec.arg]
    t = types.of(x)
    text = (exp.Cast(this=x.copy(), to=exp.DataType.build("STRING")) if isinstance(x, exp.Null) or t is None
            or t.oid == T.UNKNOWN.oid else pg_text.text_of(x, t, types))
    if spec.kind == "s":
        value = spark_template("coalesce({v}, '')", v=text)
    elif spec.kind == "L":
        # quote_literal: quotes doubled; with a backslash, E'...' with backslashes doubled
        value = spark_template(
            "CASE WHEN {v} IS NULL THEN 'NULL' WHEN instr({v}, chr(92)) > 0 THEN concat('E', chr(39), "
            "replace(replace({v}, chr(92), repeat(chr(92), 2)), chr(39), repeat(chr(39), 2)), chr(39)) "
            "ELSE concat(chr(39), replace({v}, chr(39), repeat(chr(39), 2)), chr(39)) END", v=text)
    else:
        keywords = ", ".join(f"'{k}'" for k in sorted(QUOTED_KEYWORDS))
        value = spark_template(
            "CASE WHEN {v} IS NULL THEN " + raise_sql("22004", "null values cannot be formatted as an SQL identifier")
            + " WHEN {v} RLIKE '^[a-z_][a-z0-9_]*$' AND {v} NOT IN (" + keywords + ") THEN {v} "
            "ELSE concat('\"', replace({v}, '\"', '\"\"'), '\"') END", v=text)
    if spec.width_arg is not None:
        w = args[spec.width_arg]
        return spark_template("CASE WHEN {w} < 0 OR {left} THEN rpad({v}, greatest(abs({w}), char_length({v})), ' ') "
                              "ELSE lpad({v}, greatest({w}, char_length({v})), ' ') END",
                              v=value, w=exp.Cast(this=w.copy(), to=exp.DataType.build("INT")),
                              left=exp.Boolean(this=spec.left))
    if spec.width:
        fn = "rpad" if spec.left else "lpad"
        return spark_template(f"{fn}({{v}}, greatest({spec.width}, char_length({{v}})), ' ')", v=value)
    return value


def format_(node: exp.Expression, types: Types) -> exp.Expression:
    fmt = node.this
    if isinstance(fmt, exp.Null):
        return exp.Cast(this=exp.Null(), to=exp.DataType.build("STRING"))
    if not (isinstance(fmt, exp.Literal) and fmt.is_string):
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "format() with a format string that is not a constant is not supported")
    args = _arguments(node)
    pieces = [exp.Literal.string(p) if isinstance(p, str) else _piece(p, args, types) for p in parse(fmt.this)]
    if not pieces:
        return exp.Literal.string("")
    return exp.Concat(expressions=pieces, safe=False, coalesce=False) if len(pieces) > 1 else pieces[0]


HANDLERS: dict[type, Callable[[exp.Expression, Types], exp.Expression]] = {exp.Format: format_}
