"""SAVEPOINT / RELEASE / ROLLBACK TO without a server: the statement forms PostgreSQL
accepts, and what ROLLBACK TO restores of a transaction's buffered state
(tests/integration/test_sqlalchemy.py runs them on a server and compares with PostgreSQL)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from weir.adapter import savepoints
from weir.adapter.session import Transaction
from weir.errors import WeirError
from weir.sql import statements as st
from weir.sql.parse import parse_statement


@pytest.mark.parametrize(("sql", "action", "name"), [
    ("SAVEPOINT a", "savepoint", "a"),
    ('savepoint "_pg3_1"', "savepoint", "_pg3_1"),
    ("RELEASE a", "release", "a"),
    ("RELEASE SAVEPOINT Sp1;", "release", "sp1"),
    ("RELEASE SAVEPOINT", "release", "savepoint"),  # PostgreSQL: the savepoint named savepoint
    ("ROLLBACK TO a", "rollback_to", "a"),
    ("rollback to savepoint a", "rollback_to", "a"),
    ("ROLLBACK WORK TO SAVEPOINT \"A b\"", "rollback_to", "A b"),
    ("ROLLBACK TRANSACTION TO x", "rollback_to", "x"),
])
def test_savepoint_forms(sql: str, action: str, name: str) -> None:
    s = parse_statement(sql)
    assert isinstance(s, st.Savepoint) and (s.action, s.name) == (action, name)


def test_plain_rollback_is_still_a_rollback() -> None:
    for sql in ("ROLLBACK", "ROLLBACK WORK", "ABORT"):
        s = parse_statement(sql)
        assert isinstance(s, st.Transaction) and s.action == "rollback"


@pytest.mark.parametrize("sql", ["SAVEPOINT", "SAVEPOINT a b", "ROLLBACK TO", "ROLLBACK TO SAVEPOINT a b",
                                 "RELEASE", "ROLLBACK TO 1"])
def test_bad_forms_are_syntax_errors(sql: str) -> None:
    with pytest.raises(WeirError) as e:
        parse_statement(sql)
    assert e.value.sqlstate == "42601"


class _Cursor:
    closed = False

    async def close(self) -> None:
        self.closed = True


class _Session:
    """The parts of a session savepoints touch."""

    def __init__(self, txn: Transaction | None) -> None:
        self.txn = txn
        self.vars: dict[str, str] = {"database": "materialize"}
        self.cursors: dict[str, Any] = {}

    def set(self, name: str, value: str) -> None:  # what Session.set_var records in a transaction
        assert self.txn is not None
        self.txn.saved_vars.setdefault(name, self.vars.get(name))
        self.vars[name] = value

    def restore_vars(self, values: dict[str, str | None]) -> None:
        for name, value in values.items():
            if value is None:
                self.vars.pop(name, None)
            else:
                self.vars[name] = value


def _run(session: _Session, sql: str) -> str:
    stmt = parse_statement(sql)
    assert isinstance(stmt, st.Savepoint)
    return asyncio.run(savepoints.execute(session, stmt)).tag  # type: ignore[arg-type]


def test_rollback_to_restores_buffered_state() -> None:
    txn = Transaction(explicit=True)
    s = _Session(txn)
    s.set("application_name", "before")
    txn.writes["s1"] = ["w1"]  # type: ignore[list-item]
    old = s.cursors["c_old"] = _Cursor()
    assert _run(s, "SAVEPOINT a") == "SAVEPOINT"
    s.set("application_name", "after")
    s.set("search_path", "x")
    txn.writes["s1"].append("w2")  # type: ignore[arg-type]
    txn.writes["s2"] = ["w3"]  # type: ignore[list-item]
    txn.ddl.append("create index")
    new = s.cursors["c_new"] = _Cursor()
    txn.failed = True
    assert _run(s, "ROLLBACK TO SAVEPOINT a") == "ROLLBACK"
    assert s.vars == {"database": "materialize", "application_name": "before"}
    assert txn.writes == {"s1": ["w1"]} and txn.ddl == [] and not txn.failed
    assert s.cursors == {"c_old": old} and new.closed and not old.closed
    assert list(txn.saved_vars) == ["application_name"]
    # the savepoint stays after ROLLBACK TO; RELEASE removes it and every later one
    _run(s, "SAVEPOINT b")
    assert _run(s, "RELEASE a") == "RELEASE"
    assert txn.savepoints == []


def test_names_are_a_stack_and_unknown_names_fail() -> None:
    txn = Transaction(explicit=True)
    s = _Session(txn)
    _run(s, "SAVEPOINT a")
    s.set("x", "1")
    _run(s, "SAVEPOINT a")  # the same name again: the newer one wins
    s.set("x", "2")
    _run(s, "ROLLBACK TO a")
    assert s.vars["x"] == "1" and len(txn.savepoints) == 2
    for sql in ("RELEASE nope", "ROLLBACK TO nope"):
        with pytest.raises(WeirError) as e:
            _run(s, sql)
        assert (e.value.sqlstate, e.value.message) == ("3B001", 'savepoint "nope" does not exist')


@pytest.mark.parametrize(("sql", "what"), [("SAVEPOINT a", "SAVEPOINT"), ("RELEASE a", "RELEASE SAVEPOINT"),
                                           ("ROLLBACK TO a", "ROLLBACK TO SAVEPOINT")])
def test_outside_a_transaction_block(sql: str, what: str) -> None:
    for txn in (None, Transaction(explicit=False)):
        with pytest.raises(WeirError) as e:
            _run(_Session(txn), sql)
        assert (e.value.sqlstate, e.value.message) == ("25P01", f"{what} can only be used in transaction blocks")


def test_only_rollback_to_is_allowed_in_a_failed_transaction() -> None:
    assert savepoints.allowed_when_failed(parse_statement("ROLLBACK TO a"))
    assert savepoints.allowed_when_failed(parse_statement("ROLLBACK"))
    assert not savepoints.allowed_when_failed(parse_statement("SAVEPOINT a"))
    assert not savepoints.allowed_when_failed(parse_statement("RELEASE a"))
