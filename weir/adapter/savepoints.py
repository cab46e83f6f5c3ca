"""SAVEPOINT / RELEASE / ROLLBACK TO inside an explicit transaction, as in PostgreSQL.

Drivers open savepoints on their own (psycopg's TypeInfo.fetch, SQLAlchemy's
begin_nested), so they must work. Everything a weir transaction changes before COMMIT is
held by the session until then: variables (SET, SET LOCAL, set_config), the buffered
writes of INSERT/UPDATE/DELETE, the CREATE INDEX | MATERIALIZED VIEW (and its hold) that
run at COMMIT, and the cursors it declared. A savepoint records each of them, so ROLLBACK
TO restores them exactly and makes a failed transaction usable again. Reads are not undone
(nothing to undo): the transaction keeps the timestamp its first read chose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from weir.adapter import api
from weir.errors import SqlState, WeirError
from weir.sql import statements as st

if TYPE_CHECKING:
    from weir.adapter.session import Session, Transaction

_WHAT = {"savepoint": "SAVEPOINT", "release": "RELEASE SAVEPOINT", "rollback_to": "ROLLBACK TO SAVEPOINT"}
_TAG = {"savepoint": "SAVEPOINT", "release": "RELEASE", "rollback_to": "ROLLBACK"}


@dataclass
class Mark:
    """What the transaction had buffered when the savepoint was set."""

    name: str
    vars: dict[str, str]
    saved_vars: dict[str, str | None]
    session_vars: dict[str, str | None]
    writes: dict[str, int]  # shard -> how many buffered tables
    ddl: int
    cursors: dict[str, Any]


def _mark(session: Session, txn: Transaction, name: str) -> Mark:
    return Mark(name, dict(session.vars), dict(txn.saved_vars), dict(txn.session_vars),
                {sid: len(ts) for sid, ts in txn.writes.items()}, len(txn.ddl), dict(session.cursors))


def _find(txn: Transaction, name: str) -> int:
    """The newest savepoint of that name (PostgreSQL lets a name be reused; the latest wins)."""
    for i in range(len(txn.savepoints) - 1, -1, -1):
        if txn.savepoints[i].name == name:
            return i
    raise WeirError(SqlState.INVALID_SAVEPOINT_SPECIFICATION, f'savepoint "{name}" does not exist')


async def _rollback_to(session: Session, txn: Transaction, mark: Mark) -> None:
    """Undo everything the transaction buffered since `mark`."""
    for sid in list(txn.writes):
        keep = mark.writes.get(sid, 0)
        if keep:
            del txn.writes[sid][keep:]
        else:
            del txn.writes[sid]
    del txn.ddl[mark.ddl:]
    later = {name: cur for name, cur in session.cursors.items() if mark.cursors.get(name) is not cur}
    for name, cur in later.items():  # declared after the savepoint: closed, as PostgreSQL does
        session.cursors.pop(name, None)
        await cur.close()
    changed = set(txn.saved_vars) | set(mark.saved_vars)
    session.restore_vars({name: mark.vars.get(name) for name in changed})
    txn.saved_vars, txn.session_vars = dict(mark.saved_vars), dict(mark.session_vars)
    txn.failed = False


async def execute(session: Session, stmt: st.Savepoint) -> api.Command:
    txn = session.txn
    if txn is None or not txn.explicit:
        raise WeirError(SqlState.NO_ACTIVE_SQL_TRANSACTION,
                        f"{_WHAT[stmt.action]} can only be used in transaction blocks")
    if stmt.action == "savepoint":
        txn.savepoints.append(_mark(session, txn, stmt.name))
    elif stmt.action == "release":
        del txn.savepoints[_find(txn, stmt.name):]
    else:
        i = _find(txn, stmt.name)
        del txn.savepoints[i + 1:]
        await _rollback_to(session, txn, txn.savepoints[i])
    return api.Command(_TAG[stmt.action])


def allowed_when_failed(stmt: st.Statement) -> bool:
    """What a failed transaction still accepts: COMMIT, ROLLBACK and ROLLBACK TO."""
    if isinstance(stmt, st.Transaction):
        return stmt.action in ("commit", "rollback")
    return isinstance(stmt, st.Savepoint) and stmt.action == "rollback_to"
