"""Faithful Spark translations of PostgreSQL's string functions that Spark has under the
same name with other answers at the edges (negative counts, position zero, non-text
arguments), for the gate in `weir.sql.functions`. Each takes a node whose children are
already translated and returns Spark's equivalent or raises as PostgreSQL would."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from weir import types as T
from weir.errors import SqlState, WeirError
from weir.sql import infer, pg_text
from weir.sql.infer import Types
from weir.sql.translate import raise_sql as _raise
from weir.sql.translate import spark_template, undefined_function


def _texts(name: str, node: exp.Expression, types: Types, *args: exp.Expression | None) -> None:
    """PostgreSQL has these for text only (an integer would be 42883 there; Spark casts it)."""
    for a in args:
        if a is None:
            continue
        t = types.of(a)
        if not (infer.is_text(t) or t is not None and t.oid == T.UNKNOWN.oid or isinstance(a, exp.Null)):
            raise undefined_function(name, node, types)


def _ints(name: str, node: exp.Expression, types: Types, *args: exp.Expression | None) -> None:
    for a in args:
        if a is not None and not (infer.is_int(types.of(a)) or isinstance(a, exp.Null)):
            raise undefined_function(name, node, types)


def left(node: exp.Expression, types: Types) -> exp.Expression:
    """left(s, n): a negative n drops |n| characters from the end (Spark: empty)."""
    s, n = node.this, node.expression
    _texts("left", node, types, s)
    _ints("left", node, types, n)
    return spark_template("CASE WHEN {n} >= 0 THEN substring({s}, 1, {n}) "
                          "ELSE substring({s}, 1, greatest(char_length({s}) + {n}, 0)) END", s=s, n=n)


def right(node: exp.Expression, types: Types) -> exp.Expression:
    """right(s, n): a negative n drops |n| characters from the start (Spark: empty)."""
    s, n = node.this, node.expression
    _texts("right", node, types, s)
    _ints("right", node, types, n)
    return spark_template("CASE WHEN {n} >= 0 THEN substring({s}, greatest(char_length({s}) - {n} + 1, 1)) "
                          "ELSE substring({s}, 1 - {n}) END", s=s, n=n)


def pad(node: exp.Expression, types: Types) -> exp.Expression:
    """lpad/rpad: Spark's agree with PostgreSQL's (longer strings cut to n, an empty fill
    leaves the string as it is, a negative n is empty) once the fill defaults to a space."""
    name = "lpad" if node.args.get("is_left") else "rpad"
    s, n, fill = node.this, node.expression, node.args.get("fill_pattern")
    _texts(name, node, types, s, fill)
    _ints(name, node, types, n)
    return spark_template(f"{name}({{s}}, {{n}}, {{f}})", s=s, n=n, f=fill if fill is not None else exp.Literal.string(" "))


def concat_ws(node: exp.Expression, types: Types) -> exp.Expression:
    """concat_ws(sep, ...) skips NULL arguments as Spark's does; arguments whose text
    Spark writes differently from PostgreSQL (booleans, floats, ...) are refused."""
    args = node.expressions
    if len(args) < 2:
        raise undefined_function("concat_ws", node, types)
    _texts("concat_ws", node, types, args[0])
    for a in list(args[1:]):
        t = types.of(a)
        if t is not None and (t.is_array or t.oid == T.RECORD_OID):  # its PostgreSQL text
            a.replace(pg_text.text_of(a, t, types))
            continue
        if not (infer.is_text(t) or infer.is_int(t) or isinstance(a, exp.Null)
                or t is not None and t.oid == T.UNKNOWN.oid):
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                            f"function concat_ws with an argument of type {t.name if t else 'unknown'} is not supported")
    return node


def split_part(node: exp.Expression, types: Types) -> exp.Expression:
    """split_part(s, delimiter, n): n = 0 is 22023; a negative n counts from the end; an
    empty delimiter does not split (Spark agrees on the last two)."""
    s, d, n = node.this, node.args["delimiter"], node.args["part_index"]
    _texts("split_part", node, types, s, d)
    _ints("split_part", node, types, n)
    return spark_template("CASE WHEN {n} = 0 THEN " + _raise("22023", "field position must not be zero")
                          + " ELSE split_part({s}, {d}, {n}) END",
                          s=s, d=d, n=n)


def translate(node: exp.Expression, types: Types) -> exp.Expression:
    """translate(s, from, to): characters of `from` without a counterpart in `to` are
    deleted, in Spark as in PostgreSQL."""
    _texts("translate", node, types, node.this, node.args.get("from_"), node.args.get("to"))
    return node


def chr_(node: exp.Expression, types: Types) -> exp.Expression:
    """chr(n) is the character of code point n; Spark's chr() takes n modulo 256 (chr(256)
    would be NUL). Code points above ASCII are refused at run time rather than mistaken."""
    if len(node.expressions) != 1:
        raise undefined_function("chr", node, types)
    n = node.expressions[0]
    _ints("chr", node, types, n)
    return spark_template(
        "CASE WHEN {n} IS NULL THEN CAST(NULL AS STRING) WHEN {n} = 0 THEN " + _raise("54000", "null character not permitted")
        + " WHEN {n} < 0 THEN " + _raise("22023", "character number must be positive")
        + " WHEN {n} < 128 THEN chr({n}) ELSE "
        + _raise("0A000", "chr of a code point above 127 is not supported") + " END", n=n)


HANDLERS: dict[type, Callable[[exp.Expression, Types], exp.Expression]] = {
    exp.Left: left, exp.Right: right, exp.Pad: pad, exp.ConcatWs: concat_ws,
    exp.SplitPart: split_part, exp.Translate: translate, exp.Chr: chr_,
}
