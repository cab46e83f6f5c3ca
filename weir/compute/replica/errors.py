"""Spark exceptions -> errors a PostgreSQL user understands.

Spark 4 errors carry a condition (`DIVIDE_BY_ZERO`), an SQLSTATE and message
parameters. Most SQLSTATEs are already PostgreSQL's; the rest (Spark's own
`xxKxx` codes and a few that differ) are mapped here, and messages are
rewritten into PostgreSQL's wording where one exists, otherwise cleaned of
Spark's "[CONDITION] ... SQLSTATE: xxxxx" decoration, config tips and stacks.
This is the only place that knows Spark's error conditions.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from weir.errors import SqlState, WeirError, from_runtime_marker, leaks

log = logging.getLogger(__name__)

_SPARK_TO_PG_TYPE = {
    "TINYINT": "smallint", "SMALLINT": "smallint", "INT": "integer", "BIGINT": "bigint",
    "FLOAT": "real", "DOUBLE": "double precision", "BOOLEAN": "boolean", "STRING": "text",
    "DATE": "date", "TIMESTAMP": "timestamp with time zone", "TIMESTAMP_NTZ": "timestamp",
    "BINARY": "bytea",
}

# Spark SQLSTATEs that are valid PostgreSQL codes with a different meaning, or
# that PostgreSQL spells differently for the same error.
_SQLSTATE_MAP = {
    "22018": SqlState.INVALID_TEXT_REPRESENTATION,  # invalid character value for cast
    "42605": SqlState.UNDEFINED_FUNCTION,  # wrong number of arguments
    "42604": SqlState.INVALID_TEXT_REPRESENTATION,  # invalid typed literal
    "42704": SqlState.AMBIGUOUS_COLUMN,  # Spark uses it for ambiguous references
    "HY008": SqlState.QUERY_CANCELED,
}


def _name(param: str | None) -> str:
    """`a`.`b` -> a.b (Spark quotes every identifier part with backticks)."""
    return re.sub(r"`([^`]*)`", r"\1", param or "").strip()


def _unquote(param: str | None) -> str:
    p = (param or "").strip()
    if len(p) >= 2 and p[0] == p[-1] and p[0] in "'\"":
        return p[1:-1]
    return p


def _pg_type(spark_type: str | None) -> str:
    t = _unquote(spark_type).upper()
    if t.startswith("DECIMAL"):
        return "numeric"
    if t.startswith("INTERVAL"):
        return "interval"
    if t.startswith("ARRAY"):
        return t.lower()
    return _SPARK_TO_PG_TYPE.get(t, t.lower())


def _column_message(p: Mapping[str, str]) -> tuple[str, str | None]:
    name = _name(p.get("objectName"))
    msg = f'column "{name}" does not exist' if "." not in name else f"column {name} does not exist"
    proposal = [_name(x) for x in re.findall(r"`[^`]*`(?:\.`[^`]*`)*", p.get("proposal", ""))]
    proposal = [x for x in proposal if not leaks(x)]
    hint = f'Perhaps you meant to reference the column "{proposal[0]}".' if len(proposal) == 1 else None
    return msg, hint


def _cast_message(p: Mapping[str, str]) -> str:
    return f'invalid input syntax for type {_pg_type(p.get("targetType"))}: "{_unquote(p.get("expression"))}"'


def _overflow_message(p: Mapping[str, str]) -> str:
    what = (p.get("message") or "").lower()
    if "long" in what or "bigint" in what:
        return "bigint out of range"
    if "integer" in what or "int " in what:
        return "integer out of range"
    if "short" in what or "smallint" in what:
        return "smallint out of range"
    return "value out of range: overflow"


def _binary_overflow_message(p: Mapping[str, str]) -> str:
    """Spark shows the operands as SQL values: 7L is a bigint, 7S a smallint, 7 an integer."""
    operands = [str(p.get(k) or "") for k in ("value1", "value2")]
    if any(v.endswith("L") for v in operands):
        return "bigint out of range"
    if any(v.endswith("S") for v in operands):
        return "smallint out of range"
    if all(re.fullmatch(r"-?\d+", v) for v in operands):
        return "integer out of range"
    return "value out of range: overflow"


# condition (first dotted part) -> (sqlstate, message builder or None to keep Spark's text)
_Builder = Callable[[Mapping[str, str]], "str | tuple[str, str | None]"]
_CONDITIONS: dict[str, tuple[str, _Builder | None]] = {
    "DIVIDE_BY_ZERO": (SqlState.DIVISION_BY_ZERO, lambda p: "division by zero"),
    "INTERVAL_DIVIDED_BY_ZERO": (SqlState.DIVISION_BY_ZERO, lambda p: "division by zero"),
    "REMAINDER_BY_ZERO": (SqlState.DIVISION_BY_ZERO, lambda p: "division by zero"),
    "UNRESOLVED_COLUMN": (SqlState.UNDEFINED_COLUMN, _column_message),
    "UNRESOLVED_FIELD": (SqlState.UNDEFINED_COLUMN, lambda p: f'field "{_name(p.get("fieldName"))}" does not exist'),
    "TABLE_OR_VIEW_NOT_FOUND": (SqlState.UNDEFINED_TABLE, lambda p: f"unknown catalog item '{_name(p.get('relationName'))}'"),
    "UNRESOLVED_ROUTINE": (SqlState.UNDEFINED_FUNCTION, lambda p: f"function {_name(p.get('routineName'))} does not exist"),
    "WRONG_NUM_ARGS": (SqlState.UNDEFINED_FUNCTION, lambda p: f"function {_name(p.get('functionName'))} does not exist"),
    "PARSE_SYNTAX_ERROR": (SqlState.SYNTAX_ERROR, lambda p: f'syntax error at or near "{_unquote(p.get("error"))}"'),
    "PARSE_EMPTY_STATEMENT": (SqlState.SYNTAX_ERROR, lambda p: "syntax error: empty statement"),
    "AMBIGUOUS_REFERENCE": (SqlState.AMBIGUOUS_COLUMN, lambda p: f'column reference "{_name(p.get("name"))}" is ambiguous'),
    "AMBIGUOUS_COLUMN_OR_FIELD": (SqlState.AMBIGUOUS_COLUMN, lambda p: f'column reference "{_name(p.get("name"))}" is ambiguous'),
    "CAST_INVALID_INPUT": (SqlState.INVALID_TEXT_REPRESENTATION, _cast_message),
    "CAST_OVERFLOW": (SqlState.NUMERIC_VALUE_OUT_OF_RANGE, lambda p: f"{_pg_type(p.get('targetType'))} out of range"),
    "CAST_OVERFLOW_IN_TABLE_INSERT": (SqlState.NUMERIC_VALUE_OUT_OF_RANGE, lambda p: f"{_pg_type(p.get('targetType'))} out of range"),
    "ARITHMETIC_OVERFLOW": (SqlState.NUMERIC_VALUE_OUT_OF_RANGE, _overflow_message),
    "BINARY_ARITHMETIC_OVERFLOW": (SqlState.NUMERIC_VALUE_OUT_OF_RANGE, _binary_overflow_message),
    "NUMERIC_VALUE_OUT_OF_RANGE": (SqlState.NUMERIC_VALUE_OUT_OF_RANGE, lambda p: "numeric field overflow"),
    "DATATYPE_MISMATCH": (SqlState.DATATYPE_MISMATCH, None),
    "INVALID_ARRAY_INDEX": (SqlState.ARRAY_SUBSCRIPT_ERROR, lambda p: "array subscript out of range"),
    "INVALID_ARRAY_INDEX_IN_ELEMENT_AT": (SqlState.ARRAY_SUBSCRIPT_ERROR, lambda p: "array subscript out of range"),
    "MISSING_GROUP_BY": (SqlState.GROUPING_ERROR, None),
    "MISSING_AGGREGATION": (SqlState.GROUPING_ERROR, lambda p: f'column "{_name(p.get("expression"))}" must appear in the GROUP BY clause or be used in an aggregate function'),
    "CANNOT_PARSE_TIMESTAMP": (SqlState.INVALID_DATETIME_FORMAT, None),
    "DATETIME_OVERFLOW": (SqlState.DATETIME_FIELD_OVERFLOW, None),
    "USER_RAISED_EXCEPTION": (SqlState.RAISE_EXCEPTION, None),
    "OPERATION_CANCELED": (SqlState.QUERY_CANCELED, lambda p: "canceling statement due to user request"),
    "SPARK_JOB_CANCELLED": (SqlState.QUERY_CANCELED, lambda p: "canceling statement due to user request"),
    "FAILED_READ_FILE": (SqlState.IO_ERROR, None),
    "UNSUPPORTED_FEATURE": (SqlState.FEATURE_NOT_SUPPORTED, None),
    "COLLECTION_SIZE_LIMIT_EXCEEDED": (SqlState.PROGRAM_LIMIT_EXCEEDED, lambda p: (
        f"cannot build a series or array of {p.get('numberOfElements') or 'that many'} elements: "
        f"the limit is {p.get('maxRoundedArrayLength') or 2147483632}")),
}

# Conditions whose PostgreSQL-style message drops something Spark's text tells.
# (Not the overflows: Spark's text names its own types, DECIMAL(29,0) and 1BD, which
# PostgreSQL's users never see.)
_SPARK_TEXT_AS_DETAIL = frozenset({"WRONG_NUM_ARGS", "UNRESOLVED_FIELD", "MISSING_AGGREGATION"})

_NOISE = [
    re.compile(r"^\[[A-Z0-9_.]+\]\s*"),  # [CONDITION] prefix
    re.compile(r"\s*SQLSTATE: \w{5}.*$", re.S),  # SQLSTATE suffix, ";line 1 pos 7", plans
    re.compile(r"\s*Use [`']?try_\w+[`']? to tolerate [^.]*\."),
    re.compile(r'\s*If necessary set "[^"]*" to "[^"]*" to bypass this error[^.]*\.'),
    re.compile(r"\s*Use the SQL function `get\(\)`[^.]*\."),
    re.compile(r"\s*Please, refer to '[^']*' for a fix\."),
]


def clean_message(message: str) -> str:
    """Spark's message without its decoration, tips and context; one line, no final period."""
    msg = message.split("\n== ", 1)[0]
    msg = msg.split("\n\tat ", 1)[0]
    for pattern in _NOISE:
        msg = pattern.sub("", msg)
    lines = [ln.strip() for ln in msg.strip().splitlines() if ln.strip()]
    first = lines[0] if lines else message.strip().split("\n", 1)[0]
    return first[:-1] if first.endswith(".") and not first.endswith("..") else first


def _sqlstate(spark_state: str | None) -> str:
    s = (spark_state or "").upper()
    if s in _SQLSTATE_MAP:
        return _SQLSTATE_MAP[s]
    if re.fullmatch(r"[0-9A-Z]{5}", s) and "K" not in s:
        return s
    if re.fullmatch(r"[0-9]{2}K..", s):  # Spark's own subclasses: keep the class
        return s[:2] + "000"
    return SqlState.INTERNAL_ERROR


def _from_condition(condition: str, spark_state: str | None, params: Mapping[str, str],
                    message: str) -> WeirError:
    base = condition.split(".", 1)[0]
    if base == "USER_RAISED_EXCEPTION":
        marked = from_runtime_marker(params.get("errorMessage") or message)
        if marked is not None:
            return marked
    sqlstate, builder = _CONDITIONS.get(base, (None, None))
    if sqlstate is None:
        sqlstate = _sqlstate(spark_state)
    hint: str | None = None
    text = clean_message(message)
    detail: str | None = None
    if builder is not None:
        try:
            built = builder(params)
        except Exception:  # a parameter Spark renamed: keep its own text
            built = text
        if isinstance(built, tuple):
            built, hint = built
        if base in _SPARK_TEXT_AS_DETAIL and built != text:
            detail = text
        text = built
    if leaks(detail):  # the message itself is made client-safe where it reaches the client
        log.warning("query engine error detail not shown: %s", detail)
        detail = None
    if condition.startswith("CAST_INVALID_INPUT") and _pg_type(params.get("targetType")) in (
        "date", "timestamp", "timestamp with time zone"
    ):
        sqlstate = SqlState.INVALID_DATETIME_FORMAT
    return WeirError(sqlstate, text, detail=detail, hint=hint)


def _java_chain(exc: BaseException) -> list[Any]:
    """The Java exception and its causes, for errors py4j did not convert."""
    java = getattr(exc, "java_exception", None)
    chain: list[Any] = []
    try:
        while java is not None and len(chain) < 10:
            chain.append(java)
            java = java.getCause()
    except Exception:
        pass
    return chain


def translate(exc: BaseException) -> WeirError:
    """The WeirError to show a client for an exception raised by Spark."""
    if isinstance(exc, WeirError):
        return exc
    get_condition = getattr(exc, "getCondition", None)
    if callable(get_condition):
        try:
            condition = get_condition()
            if condition:
                params = exc.getMessageParameters() or {}  # type: ignore[attr-defined]
                return _from_condition(condition, exc.getSqlState(), params,  # type: ignore[attr-defined]
                                       exc.getMessage())  # type: ignore[attr-defined]
        except Exception:
            pass
    for java in _java_chain(exc):
        try:
            name = java.getClass().getName()
            text = str(java.getMessage() or "")
        except Exception:
            continue
        if name == "java.lang.OutOfMemoryError":
            return WeirError(SqlState.OUT_OF_MEMORY, "out of memory", detail=text or None)
        if "cancelled" in text.lower() and "org.apache.spark" in name:
            return WeirError(SqlState.QUERY_CANCELED, "canceling statement due to user request")
        try:
            condition = java.getCondition()
        except Exception:
            condition = None
        if condition:
            params = dict(java.getMessageParameters() or {})
            return _from_condition(condition, java.getSqlState(), params, text)
    if isinstance(exc, MemoryError):
        return WeirError(SqlState.OUT_OF_MEMORY, "out of memory")
    log.warning("untranslated query engine error: %s", exc, exc_info=exc)
    return WeirError(SqlState.INTERNAL_ERROR, "internal error")


def error_fields(err: WeirError) -> dict[str, str | None]:
    return {"sqlstate": err.sqlstate, "message": err.message, "detail": err.detail, "hint": err.hint}
