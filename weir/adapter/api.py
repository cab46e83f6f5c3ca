"""What the adapter offers the wire protocol layer (pgwire calls down into this).

pgwire owns framing, formats and protocol state (portals, Sync, suspended
portals); the adapter owns SQL meaning: sessions, statements, transactions,
execution. Values cross this boundary in the Python value domain of
`weir.types`; pgwire encodes/decodes them with `weir.codec`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from weir.types import PgType


@dataclass(frozen=True)
class Column:
    name: str
    type: PgType
    table_oid: int = 0
    column_number: int = 0


@dataclass
class Notice:
    """A NoticeResponse to send (severity NOTICE/WARNING/INFO)."""

    sqlstate: str
    message: str
    severity: str = "NOTICE"


@dataclass
class Rows:
    """A statement that returns rows: RowDescription, DataRows, then the tag.

    `batches` yields lists of row tuples; pgwire may stop pulling early (portal
    row limit) and resume later, or close it (portal closed). `tag` is called
    once the iterator is exhausted with the number of rows sent (e.g. SELECT n).
    """

    columns: list[Column]
    batches: AsyncIterator[list[tuple[Any, ...]]]
    tag_prefix: str = "SELECT"
    sent_bytes: int = 0  # counted by pgwire as it sends rows (statement history's result_size)
    counted: bool = True  # False: the tag is the prefix alone (PostgreSQL's SHOW <variable>)

    def tag(self, row_count: int) -> str:
        return f"{self.tag_prefix} {row_count}" if self.counted else self.tag_prefix


@dataclass
class CopyOut:
    """COPY ... TO STDOUT: CopyOutResponse, CopyData per row (text format), CopyDone."""

    columns: list[Column]
    batches: AsyncIterator[list[tuple[Any, ...]]]
    # text format, tab-delimited, \N for NULL (PostgreSQL's default COPY text format)
    sent_bytes: int = 0

    def tag(self, row_count: int) -> str:
        return f"COPY {row_count}"


@dataclass
class Command:
    """A statement that returns only a command tag (INSERT 0 2, CREATE TABLE, SET ...)."""

    tag: str


@dataclass
class EmptyQuery:
    """The query string was empty (EmptyQueryResponse)."""


ExecuteResult = Rows | CopyOut | Command | EmptyQuery


@dataclass
class PreparedStatement:
    """A parsed statement. `param_types` has one entry per $n (inferred where the
    client sent 0/unspecified). `columns` is the RowDescription it will produce,
    None when it returns no rows (NoData)."""

    sql: str
    param_types: list[PgType]
    columns: list[Column] | None
    plan: Any = field(default=None, repr=False)  # adapter-private
    logging: Any = field(default=None, repr=False)  # adapter-private (statement history)


class Session(Protocol):
    """One client connection's session state, owned by the adapter."""

    connection_id: int  # BackendKeyData process id
    secret_key: int  # BackendKeyData secret

    def parameter_statuses(self) -> dict[str, str]:
        """ParameterStatus values to send after authentication."""

    def take_parameter_changes(self) -> dict[str, str]:
        """ParameterStatus values changed by the last statement (e.g. SET application_name)."""

    def take_notices(self) -> list[Notice]:
        """Notices raised by the last statement."""

    @property
    def transaction_status(self) -> str:
        """'I' idle, 'T' in a transaction block, 'E' in a failed transaction block."""

    def split(self, sql: str) -> list[str]:
        """Split a simple-query string into statement texts (empty list if blank)."""

    def first_syntax_error(self, texts: list[str]) -> Exception | None:
        """The first 42601 among a simple query's statements (PostgreSQL parses the whole
        string before running any of it), or None."""

    def ends_transaction(self, sql: str) -> bool:
        """COMMIT / ROLLBACK / END / ABORT / ROLLBACK TO or an empty query: what a failed
        transaction block still accepts (an unparseable text too: prepare reports it)."""

    async def prepare(self, sql: str, param_oids: list[int], name: str = "", *,
                      describe_result: bool = True) -> PreparedStatement:
        """Parse/plan one statement (raises WeirError 42601 for syntax errors, and for a
        string with more than one statement). `name`: the prepared statement's name
        ('' for the unnamed statement and simple queries); `describe_result`: work out the
        result's columns now (a simple query's result describes itself)."""

    async def execute(
        self, stmt: PreparedStatement, params: list[Any], *, extended: bool = False
    ) -> ExecuteResult:
        """Execute; raises WeirError. Cancellation arrives as asyncio.CancelledError
        raised inside this coroutine or inside the Rows/CopyOut iterator; pgwire then
        reports 57014. Errors inside a transaction block put it in state 'E'."""

    def mark_failed(self) -> None:
        """An error happened during this statement (e.g. while streaming rows)."""

    async def end_implicit_transaction(self) -> None:
        """Sync after an extended-protocol batch, or end of a simple query: commits the
        implicit transaction if one is open."""

    async def close(self) -> None:
        """The client went away: cancel anything running, release holds."""


class Coordinator(Protocol):
    """The adapter's entry point for pgwire."""

    def auth_method(self, user: str, host: str) -> str:
        """'trust', 'password' (cleartext) or 'scram-sha-256' for this user and peer."""

    def scram_verifier(self, user: str) -> str | None:
        """The stored SCRAM-SHA-256 verifier (RFC 5803 form) or None if no password."""

    def check_password(self, user: str, password: str) -> bool:
        """Cleartext password check against the stored verifier."""

    async def open_session(self, user: str, database: str, params: dict[str, str]) -> Session:
        """Start a session after authentication; raises WeirError (e.g. 28000 unknown role)."""

    def cancel(self, connection_id: int, secret_key: int) -> None:
        """CancelRequest: cancel that session's running statement if the key matches."""
