"""Portal state and value formatting for the extended protocol: result format
codes, per-column encoders, resumable row streams, and Bind parameter decoding
(codec failures turned into PostgreSQL's SQLSTATEs)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from weir import codec
from weir.adapter.api import Column, ExecuteResult, PreparedStatement, Rows
from weir.errors import SqlState, WeirError
from weir.pgwire import messages as m
from weir.types import PgType

log = logging.getLogger("weir.pgwire")


def resolve_formats(codes: list[int], ncols: int) -> list[int]:
    """PostgreSQL's rule: no codes = all text, one code = all columns, else one per column."""
    if not codes:
        return [0] * ncols
    if len(codes) == 1:
        return codes * ncols
    if len(codes) == ncols:
        return list(codes)
    raise m.protocol_violation(
        f"bind message has {len(codes)} result formats but query has {ncols} columns"
    )


def encoders_for(columns: list[Column], formats: list[int]) -> list[tuple[m.Encoder, Any]]:
    return [
        (codec.encode_binary if f else codec.encode_text, c.type)
        for c, f in zip(columns, formats, strict=True)
    ]


@dataclass
class RowStream:
    """Rows left to send from a Rows result (a portal can stop and resume)."""

    batches: AsyncIterator[list[tuple[Any, ...]]]
    encoders: list[tuple[m.Encoder, Any]]
    pending: list[tuple[Any, ...]] = field(default_factory=list)
    pos: int = 0
    exhausted: bool = False
    result: Any = None  # the Rows result: its sent_bytes are counted as rows go out

    @property
    def sent_bytes(self) -> int:
        return self.result.sent_bytes if self.result is not None else 0

    @sent_bytes.setter
    def sent_bytes(self, n: int) -> None:
        if self.result is not None:
            self.result.sent_bytes = n


@dataclass
class Portal:
    name: str
    stmt: PreparedStatement
    params: list[Any]
    format_codes: list[int]
    result: ExecuteResult | None = None
    rows: RowStream | None = None
    done: bool = False  # a Command/COPY portal that already ran
    failed: bool = False

    def columns(self) -> list[Column] | None:
        """What Describe (portal) reports: COPY and commands have no RowDescription."""
        if isinstance(self.result, Rows):
            return self.result.columns
        if self.result is not None:
            return None
        return self.stmt.columns


async def close_iter(it: object) -> None:
    aclose = getattr(it, "aclose", None)
    if aclose is None:
        return
    try:
        await aclose()
    except Exception:
        log.debug("pgwire: error closing a result iterator", exc_info=True)


def cannot_run(portal: Portal) -> WeirError:
    return WeirError(
        SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE, f'portal "{portal.name}" cannot be run'
    )


def decode_param(value: bytes | None, fmt: int, t: PgType, index: int) -> Any:
    """Bind parameter bytes -> Python value; codec failures become PostgreSQL's errors."""
    if value is None:
        return None
    try:
        if fmt:
            return codec.decode_binary(value, t)
        return codec.decode_text(value, t)
    except WeirError:
        raise
    except Exception:
        if fmt:
            raise WeirError(
                SqlState.INVALID_BINARY_REPRESENTATION,
                f"incorrect binary data format in bind parameter {index + 1}",
            ) from None
        text = value.decode(errors="replace")
        raise WeirError(
            SqlState.INVALID_TEXT_REPRESENTATION,
            f'invalid input syntax for type {t.name}: "{text}"',
        ) from None
