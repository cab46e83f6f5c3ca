"""The one place for weir's error type and PostgreSQL SQLSTATE codes.

Every layer raises `WeirError`; pgwire turns it into an ErrorResponse with
S/V/C/M (and D/H when set) fields. Codes follow PostgreSQL's appendix A.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace

log = logging.getLogger(__name__)


class SqlState:
    """SQLSTATE codes weir uses (PostgreSQL names, upper-cased)."""

    SUCCESSFUL_COMPLETION = "00000"
    WARNING = "01000"
    CONNECTION_EXCEPTION = "08000"
    CONNECTION_FAILURE = "08006"
    PROTOCOL_VIOLATION = "08P01"
    FEATURE_NOT_SUPPORTED = "0A000"
    INVALID_GRANT_OPERATION = "0LP01"
    DATA_EXCEPTION = "22000"
    STRING_DATA_RIGHT_TRUNCATION = "22001"
    NUMERIC_VALUE_OUT_OF_RANGE = "22003"
    NULL_VALUE_NOT_ALLOWED = "22004"
    INVALID_DATETIME_FORMAT = "22007"
    DATETIME_FIELD_OVERFLOW = "22008"
    INTERVAL_FIELD_OVERFLOW = "22015"
    DIVISION_BY_ZERO = "22012"
    ARRAY_SUBSCRIPT_ERROR = "2202E"
    INVALID_PARAMETER_VALUE = "22023"
    INVALID_REGULAR_EXPRESSION = "2201B"
    INVALID_ESCAPE_SEQUENCE = "22025"
    INVALID_TEXT_REPRESENTATION = "22P02"
    INVALID_BINARY_REPRESENTATION = "22P03"
    INTEGRITY_CONSTRAINT_VIOLATION = "23000"
    NOT_NULL_VIOLATION = "23502"
    UNIQUE_VIOLATION = "23505"
    INVALID_CURSOR_STATE = "24000"
    INVALID_TRANSACTION_STATE = "25000"
    ACTIVE_SQL_TRANSACTION = "25001"
    NO_ACTIVE_SQL_TRANSACTION = "25P01"
    IN_FAILED_SQL_TRANSACTION = "25P02"
    READ_ONLY_SQL_TRANSACTION = "25006"
    INVALID_SQL_STATEMENT_NAME = "26000"
    INVALID_AUTHORIZATION_SPECIFICATION = "28000"
    INVALID_PASSWORD = "28P01"
    DEPENDENT_OBJECTS_STILL_EXIST = "2BP01"
    INVALID_CURSOR_NAME = "34000"
    INVALID_SAVEPOINT_SPECIFICATION = "3B001"
    INVALID_CATALOG_NAME = "3D000"
    INVALID_SCHEMA_NAME = "3F000"
    SERIALIZATION_FAILURE = "40001"
    SYNTAX_ERROR = "42601"
    INSUFFICIENT_PRIVILEGE = "42501"
    UNDEFINED_COLUMN = "42703"
    UNDEFINED_FUNCTION = "42883"
    UNDEFINED_TABLE = "42P01"
    UNDEFINED_PARAMETER = "42P02"
    UNDEFINED_OBJECT = "42704"
    RESERVED_NAME = "42939"
    CANT_CHANGE_RUNTIME_PARAM = "55P02"
    DUPLICATE_OBJECT = "42710"
    DUPLICATE_TABLE = "42P07"
    DUPLICATE_DATABASE = "42P04"
    DUPLICATE_SCHEMA = "42P06"
    DUPLICATE_PREPARED_STATEMENT = "42P05"
    DUPLICATE_CURSOR = "42P03"
    DUPLICATE_COLUMN = "42701"
    AMBIGUOUS_COLUMN = "42702"
    DATATYPE_MISMATCH = "42804"
    INDETERMINATE_DATATYPE = "42P18"
    GROUPING_ERROR = "42803"
    WINDOWING_ERROR = "42P20"
    AMBIGUOUS_ALIAS = "42P09"
    WRONG_OBJECT_TYPE = "42809"
    INVALID_TABLE_DEFINITION = "42P16"
    INVALID_COLUMN_REFERENCE = "42P10"
    CANNOT_COERCE = "42846"
    UNDEFINED_PSTATEMENT = "26000"
    OUT_OF_MEMORY = "53200"
    PROGRAM_LIMIT_EXCEEDED = "54000"
    OBJECT_NOT_IN_PREREQUISITE_STATE = "55000"
    OBJECT_IN_USE = "55006"
    QUERY_CANCELED = "57014"
    ADMIN_SHUTDOWN = "57P01"
    CANNOT_CONNECT_NOW = "57P03"
    IO_ERROR = "58030"
    RAISE_EXCEPTION = "P0001"
    INTERNAL_ERROR = "XX000"


@dataclass
class WeirError(Exception):
    """An error a client sees: a SQLSTATE plus a message a user understands."""

    sqlstate: str
    message: str
    detail: str | None = None
    hint: str | None = None
    severity: str = "ERROR"
    position: int | None = None

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return f"{self.severity}: {self.message} (SQLSTATE {self.sqlstate})"


RUNTIME_MARKER = "weir-error:"


def runtime_marker(sqlstate: str, message: str) -> str:
    """The text of a Spark raise_error() that the replica turns back into this error."""
    return f"{RUNTIME_MARKER}{sqlstate}:{message}"


def from_runtime_marker(text: str) -> WeirError | None:
    """The error a runtime_marker() text stands for, if `text` holds one."""
    at = text.find(RUNTIME_MARKER)
    if at < 0:
        return None
    rest = text[at + len(RUNTIME_MARKER):]
    sqlstate, _, message = rest.partition(":")
    message = message.split("\n", 1)[0].rstrip()
    while message and message[-1] in "'\"" and message.count(message[-1]) % 2 == 1:
        message = message[:-1]  # Spark's quote around the text; a message's own quotes pair up
    message = message.rstrip(".")
    return WeirError(sqlstate[:5], message)


def undefined_table(name: str) -> WeirError:
    return WeirError(SqlState.UNDEFINED_TABLE, f'unknown catalog item \'{name}\'')


def syntax_error(message: str) -> WeirError:
    return WeirError(SqlState.SYNTAX_ERROR, message)


def unsupported(what: str) -> WeirError:
    return WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"{what} not yet supported")


def internal(message: str) -> WeirError:
    return WeirError(SqlState.INTERNAL_ERROR, message)


def query_canceled() -> WeirError:
    return WeirError(SqlState.QUERY_CANCELED, "canceling statement due to user request")


# What a message a client sees must never contain: Spark's [ERROR_CLASS] tags, JVM and
# Python class names and attribute errors, weir's generated names (_weir_c0, weir_<shard>).
_LEAK = re.compile(
    r"\[[A-Z][A-Z0-9_]+(?:\.[A-Z0-9_]+)*\]|`|_weir_|\bweir_u\d|org\.apache|\bjava\.|\bscala\.|py4j"
    r"|pyspark|Traceback|\bSpark\b|\bArrow\b|\w+(?:Exception|Error)\b|object has no attribute"
    r"|NoneType|\b[A-Z][a-z]+(?:[A-Z][a-z]+)*Type\b|Error parsing|line \d+ pos \d+")

_GENERIC = {"0A": "feature not supported", "22": "invalid input value", "42": "invalid query",
            "53": "out of memory", "57": "operator intervention", "58": "I/O error"}


def leaks(text: str | None) -> bool:
    """Whether a message shows internals of Spark, the JVM, Python or weir."""
    return bool(text) and _LEAK.search(text) is not None  # type: ignore[arg-type]


def client_safe(err: WeirError) -> WeirError:
    """The error as a client may see it: one that shows internals becomes a generic message
    of its SQLSTATE class (XX000 when it has none), the original kept in the server log."""
    if not (leaks(err.message) or leaks(err.detail) or leaks(err.hint)):
        return err
    log.warning("error shown to the client without internals; original: %s (detail: %s, hint: %s)",
                err, err.detail, err.hint)
    if not leaks(err.message):
        return replace(err, detail=None if leaks(err.detail) else err.detail,
                       hint=None if leaks(err.hint) else err.hint)
    state = err.sqlstate if err.sqlstate[:2] in _GENERIC else SqlState.INTERNAL_ERROR
    return replace(err, sqlstate=state, message=_GENERIC.get(state[:2], "internal error"),
                   detail=None, hint=None)


def from_exception(exc: BaseException) -> WeirError:
    """A client error for an exception weir did not expect (the exception itself is logged
    by the caller): never the exception's own text."""
    if isinstance(exc, WeirError):
        return client_safe(exc)
    return WeirError(SqlState.INTERNAL_ERROR, "internal error")


# SQLSTATE classes of errors that a query's *data* causes (division by zero, a failed
# cast, overflow, a user-raised error): deterministic for the same input, so a dataflow
# records them as data at a time instead of retrying (weir.compute.replica.dataflow_errors).
_DATA_ERROR_CLASSES = ("22", "P0")
# and a materialized view's ASSERT NOT NULL that its query's rows break (a NULL there)
_DATA_ERRORS = frozenset({"23502"})


def is_data_error(sqlstate: str | None) -> bool:
    """Whether an error with this SQLSTATE comes from the input data (not the machinery)."""
    return bool(sqlstate) and (str(sqlstate)[:2] in _DATA_ERROR_CLASSES or str(sqlstate) in _DATA_ERRORS)
