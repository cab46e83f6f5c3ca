"""Differences between weir's and PostgreSQL's answers that the differential suite
knows about, in two short, explicit lists:

- ALLOWED: differences Materialize documents (weir follows Materialize), and the limits weir
  documents in its README (numeric scale, float rounding), each with why;
- KNOWN_WRONG: bugs. Each names the part of issue 10 that owns it. They are listed only
  so the suite stays green while the owner fixes them; delete the entry with the fix.

ALLOWED lives here (the pg-regress runner uses it too); KNOWN_WRONG in
tests/integration/test_differential.py. A difference is
explained by an entry when its `query` pattern (if any) matches the query and either
normalising both answers' values with it (column by column, knowing PostgreSQL's column
type) makes them equal, or its `weir_error` pattern matches weir's error."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tests.differential.generator import Query
from tests.differential.runner import Outcome, Row, same_rows

NUMERIC, FLOAT8 = 1700, 701


@dataclass(frozen=True)
class Known:
    name: str
    part: str  # the part of issue 10 that owns the bug ("" for ALLOWED)
    why: str
    normalise: Callable[[int, str], str] | None = None
    query: str | None = None  # regex over the query text
    weir_error: str | None = None  # regex over weir's SQLSTATE + message


def decimal_zeros(oid: int, v: str) -> str:
    """A decimal's text without trailing fractional zeros, whatever the column's type."""
    if re.fullmatch(r"-?\d+\.\d+", v):
        v = v.rstrip("0").rstrip(".")
        return "0" if v in ("-0", "") else v
    return v


def array_decimal_zeros(oid: int, v: str) -> str:
    """An array's text with every decimal element without trailing fractional zeros."""
    if not v.startswith("{"):
        return v
    return re.sub(r"(?<=[{,])-?\d+\.\d+(?=[,}])", lambda m: decimal_zeros(oid, m.group(0)), v)


def numeric_scale(oid: int, v: str) -> str:
    """A numeric column's value without trailing fractional zeros."""
    return decimal_zeros(oid, v) if oid == NUMERIC else v


def numeric_scale_10(oid: int, v: str) -> str:
    """A numeric value rounded half up to 10 fractional digits, without trailing zeros (also
    in text: a numeric cast to text)."""
    if re.fullmatch(r"-?\d+\.\d{11,}", v):
        from decimal import ROUND_HALF_UP, Decimal
        v = format(Decimal(v).quantize(Decimal("1E-10"), rounding=ROUND_HALF_UP), "f")
    return decimal_zeros(oid, v)


def float_12(oid: int, v: str) -> str:
    """A double to 12 significant digits."""
    try:
        return f"{float(v):.12g}"
    except ValueError:
        return v


def float_text(oid: int, v: str) -> str:
    try:
        return repr(float(v))
    except ValueError:
        return v


def query_words(oid: int, v: str) -> str:
    """A view's query text as the set of its words and numbers (keywords, names, constants),
    without AS and the default frame exclusion: the same query deparsed differently."""
    words = set(re.findall(r"[a-z_][a-z_0-9]*|\d+", v.lower())) - {"as", "exclude", "no", "others"}
    return " ".join(sorted(words))


# Differences Materialize documents, each with its reason.
ALLOWED: tuple[Known, ...] = (
    Known("numeric-trailing-zeros", "",
          "Materialize trims all trailing zeros off numeric values (materialize.com/docs/sql/types/numeric, "
          "\"Output\"); weir does for unconstrained numeric, which Spark holds as DECIMAL(38,10) and so "
          "cannot keep PostgreSQL's per-value scale: PostgreSQL 2.5000000000000000, weir 2.5",
          normalise=numeric_scale),
    Known("numeric-text-trailing-zeros", "", "the same for numeric::text: PostgreSQL '1.50', weir '1.5'",
          normalise=decimal_zeros, query=r"\bn::text|numeric\)?::text|\|\|"),
    Known("numeric-array-text-trailing-zeros", "",
          "the same for the numeric elements of an array's text: PostgreSQL '{1.50}', weir '{1.5}'",
          normalise=array_decimal_zeros, query=r"::text"),
    Known("numeric-scale-10", "",
          "weir's limit, not Materialize's (README, \"numeric\"): unconstrained numeric is a Spark "
          "DECIMAL(38,10), so a quotient, average, ln, log, exp or sqrt is PostgreSQL's value rounded "
          "to 10 fractional digits (PostgreSQL 1.4285714285714286, weir 1.4285714286)",
          normalise=numeric_scale_10),
    Known("float-statistics-rounding", "",
          "variance and standard deviation of doubles round differently in their last bits: PostgreSQL "
          "accumulates Youngs-Cramer sums row by row (its own answer changes with the order it reads rows "
          "and with parallel workers), Spark merges central moments per partition; equal to 12 digits",
          normalise=float_12, query=r"\b(var_pop|var_samp|variance|stddev|stddev_pop|stddev_samp)\("),
    Known("view-definition-text", "",
          "pg_get_viewdef answers the view's query as weir stores it, as Materialize's answers "
          "mz_views.definition; PostgreSQL's deparses it (columns qualified, alias lists, pretty-printed). "
          "Compared as the set of the query's words, so another query still differs",
          normalise=query_words, query=r"^\s*select\s+pg_get_viewdef\("),
)


def _norm(rows: Sequence[Row], types: Sequence[int], f: Callable[[int, str], str]) -> list[Row]:
    return [tuple(None if v is None else f(types[k] if k < len(types) else 0, v)
                  for k, v in enumerate(r)) for r in rows]


def explain(q: Query, pg: Outcome, weir: Outcome, allowed: Sequence[Known],
            known_wrong: Sequence[Known]) -> str | None:
    """'allowed:<name>' or 'wrong:<name>' for a difference the lists explain, else None."""
    for prefix, entries in (("allowed", allowed), ("wrong", known_wrong)):
        for k in entries:
            if k.query is not None and not re.search(k.query, q.sql, re.I):
                continue
            if k.weir_error is not None:
                if not weir.ok and re.search(k.weir_error, f"{weir.sqlstate} {weir.message}", re.S):
                    return f"{prefix}:{k.name}"
                continue
            if k.normalise is not None and pg.rows is not None and weir.rows is not None:
                if same_rows(_norm(pg.rows, pg.types, k.normalise),
                             _norm(weir.rows, pg.types, k.normalise), q.ordered):
                    return f"{prefix}:{k.name}"
            elif k.normalise is None:
                return f"{prefix}:{k.name}"
    return None


def explainer(allowed: Sequence[Known], known_wrong: Sequence[Known]) -> Callable[[Query, Outcome, Outcome], str | None]:
    return lambda q, pg, weir: explain(q, pg, weir, allowed, known_wrong)
