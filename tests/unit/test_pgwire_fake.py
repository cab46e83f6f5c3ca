"""A fake adapter (Coordinator + Session test doubles) and a threaded PgServer
harness for the pgwire tests. The fake understands a handful of statements:

  SELECT 1 | SELECT $1, $2::int ... | SELECT generate_series(1, N)
  SELECT pg_sleep(S)           sleeps in execute (cancel target)
  SELECT slow_rows(N)          yields a row, then sleeps in the iterator
  SELECT fail_after(N)         yields N rows then raises 22012
  SELECT 1/0 | SELECT boom     WeirError 22012 | RuntimeError (-> XX000)
  SELECT notice                a NoticeResponse plus one row
  SELECT types                 one row of many types (binary/text codecs)
  BEGIN | COMMIT | ROLLBACK | SET application_name ... | INSERT ...
  COPY ... TO STDOUT | COPY ... FROM STDIN (rejected, 0A000)
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import re
import struct
import threading
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

from weir import types as T
from weir.adapter.api import (
    Column,
    Command,
    CopyOut,
    ExecuteResult,
    Notice,
    PreparedStatement,
    Rows,
)
from weir.errors import SqlState, WeirError
from weir.pgwire.server import PgServer

_ids = itertools.count(1000)

TYPES_COLUMNS = [
    Column("i2", T.INT2),
    Column("i4", T.INT4),
    Column("i8", T.INT8),
    Column("f8", T.FLOAT8),
    Column("t", T.TEXT),
    Column("b", T.BOOL),
    Column("n", T.NUMERIC),
    Column("d", T.DATE),
    Column("ts", T.TIMESTAMP),
    Column("by", T.BYTEA),
    Column("nul", T.TEXT),
]
TYPES_ROW = (
    -7, 123456, 2**40, 1.5, "héllo\tworld", True, Decimal("12.50"),
    dt.date(2024, 2, 29), dt.datetime(2024, 1, 2, 3, 4, 5, 600000), b"\x00\x01\xff", None,
)


async def _batches(
    session: FakeSession, rows: list[tuple[Any, ...]], size: int = 100
) -> AsyncIterator[list[tuple[Any, ...]]]:
    for i in range(0, len(rows), size):
        session.task = asyncio.current_task()
        yield rows[i : i + size]


class FakeSession:
    def __init__(self, coord: FakeCoordinator, user: str, database: str, params: dict[str, str]):
        self.coord = coord
        self.connection_id = next(_ids)
        self.secret_key = 0xDEADBEEF ^ self.connection_id
        self.user = user
        self.database = database
        self.params = params
        self.status = "I"
        self.notices: list[Notice] = []
        self.changes: dict[str, str] = {}
        self.task: asyncio.Task[Any] | None = None
        self.closed = False
        self.failed_count = 0
        self.implicit_ends = 0

    def parameter_statuses(self) -> dict[str, str]:
        return {
            "server_version": "15.0",
            "server_encoding": "UTF8",
            "client_encoding": "UTF8",
            "DateStyle": "ISO, MDY",
            "IntervalStyle": "postgres",
            "TimeZone": "UTC",
            "integer_datetimes": "on",
            "standard_conforming_strings": "on",
            "is_superuser": "off",
            "session_authorization": self.user,
            "application_name": self.params.get("application_name", ""),
        }

    def take_parameter_changes(self) -> dict[str, str]:
        changes, self.changes = self.changes, {}
        return changes

    def take_notices(self) -> list[Notice]:
        notices, self.notices = self.notices, []
        return notices

    @property
    def transaction_status(self) -> str:
        return self.status

    def split(self, sql: str) -> list[str]:
        return [s.strip() for s in sql.split(";") if s.strip()]

    def first_syntax_error(self, texts: list[str]) -> Exception | None:
        from weir.sql import parse

        for text in texts:
            try:
                parse.parse_one(text)
            except WeirError as e:
                if e.sqlstate == SqlState.SYNTAX_ERROR:
                    return e
            except Exception:  # noqa: BLE001
                pass
        return None

    def ends_transaction(self, sql: str) -> bool:
        from weir.sql import parse
        from weir.sql import statements as st

        try:
            parsed = parse.parse_one(sql)
        except Exception:  # noqa: BLE001
            return True
        return isinstance(parsed, st.Empty) or (
            isinstance(parsed, st.Transaction) and parsed.action in ("commit", "rollback"))

    async def prepare(self, sql: str, param_oids: list[int], name: str = "", *,
                      describe_result: bool = True) -> PreparedStatement:
        text = sql.strip().rstrip(";").strip()
        low = text.lower()
        nparams = max((int(n) for n in re.findall(r"\$(\d+)", text)), default=0)
        ptypes: list[T.PgType] = []
        for i in range(1, nparams + 1):
            oid = param_oids[i - 1] if i <= len(param_oids) else 0
            cast = re.search(rf"\${i}::(\w+)", low)
            if oid:
                ptypes.append(T.by_oid(oid))
            elif cast:
                ptypes.append(T.parse_type(cast.group(1)))
            else:
                ptypes.append(T.TEXT)
        cols: list[Column] | None
        if low.startswith("select"):
            if nparams:
                cols = [Column(f"p{i + 1}", t) for i, t in enumerate(ptypes)]
            elif low == "select types":
                cols = TYPES_COLUMNS
            elif "generate_series" in low or low.startswith(("select slow_rows", "select fail_after")):
                cols = [Column("n", T.INT4)]
            elif low.startswith("select pg_sleep"):
                cols = [Column("pg_sleep", T.TEXT)]
            elif low in ("select 1", "select notice", "select 1/0", "select boom"):
                cols = [Column("?column?", T.INT4)]
            else:
                raise WeirError(SqlState.SYNTAX_ERROR, f"unknown select: {text}")
        elif low.split(" ", 1)[0] in ("begin", "commit", "rollback", "set", "insert", "copy"):
            cols = None
        else:
            word = text.split()[0] if text.split() else text
            raise WeirError(
                SqlState.SYNTAX_ERROR, f'syntax error at or near "{word}"', position=1
            )
        return PreparedStatement(sql, ptypes, cols, plan=low)

    async def execute(
        self, stmt: PreparedStatement, params: list[Any], *, extended: bool = False
    ) -> ExecuteResult:
        self.task = asyncio.current_task()
        try:
            return await self._execute(stmt, params)
        except (WeirError, asyncio.CancelledError):
            self.mark_failed()
            raise

    async def _execute(self, stmt: PreparedStatement, params: list[Any]) -> ExecuteResult:
        low: str = stmt.plan
        word = low.split(" ", 1)[0]
        if self.status == "E" and word not in ("commit", "rollback"):
            raise WeirError(
                SqlState.IN_FAILED_SQL_TRANSACTION,
                "current transaction is aborted, commands ignored until end of transaction block",
            )
        if word == "begin":
            self.status = "T"
            return Command("BEGIN")
        if word in ("commit", "rollback"):
            tag = "ROLLBACK" if self.status == "E" else word.upper()
            self.status = "I"
            return Command(tag)
        if word == "set":
            m = re.match(r"set\s+application_name\s*(?:=|to)\s*'?([^']*)'?", low)
            if m:
                self.changes["application_name"] = m.group(1)
            return Command("SET")
        if word == "insert":
            return Command("INSERT 0 1")
        if word == "copy":
            if "from stdin" in low:
                raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, "COPY FROM STDIN not supported")
            rows = [(i, f"row\t{i}" if i % 2 else None) for i in range(1, 4)]
            cols = [Column("a", T.INT4), Column("b", T.TEXT)]
            return CopyOut(cols, _batches(self, rows))
        assert stmt.columns is not None
        m = re.search(r"pg_sleep\(([\d.]+)\)", low)
        if m:
            await asyncio.sleep(float(m.group(1)))
        if stmt.param_types:
            return Rows(stmt.columns, _batches(self, [tuple(params)]))
        if low == "select 1":
            return Rows(stmt.columns, _batches(self, [(1,)]))
        if low == "select notice":
            self.notices.append(Notice("01000", "this is a notice", "WARNING"))
            return Rows(stmt.columns, _batches(self, [(1,)]))
        if low == "select 1/0":
            raise WeirError(SqlState.DIVISION_BY_ZERO, "division by zero")
        if low == "select boom":
            raise RuntimeError("boom went the adapter")
        if low == "select types":
            return Rows(stmt.columns, _batches(self, [TYPES_ROW]))
        m = re.search(r"generate_series\(\s*1\s*,\s*(\d+)\s*\)", low)
        if m:
            return Rows(stmt.columns, _batches(self, [(i,) for i in range(1, int(m.group(1)) + 1)]))
        if low.startswith("select pg_sleep"):
            return Rows(stmt.columns, _batches(self, [("",)]))
        m = re.match(r"select slow_rows\((\d+)\)", low)
        if m:
            return Rows(stmt.columns, self._slow_rows(int(m.group(1))))
        m = re.match(r"select fail_after\((\d+)\)", low)
        if m:
            return Rows(stmt.columns, self._fail_after(int(m.group(1))))
        raise AssertionError(low)

    async def _slow_rows(self, n: int) -> AsyncIterator[list[tuple[Any, ...]]]:
        for i in range(n):
            self.task = asyncio.current_task()
            yield [(i,)]
            await asyncio.sleep(0.5)

    async def _fail_after(self, n: int) -> AsyncIterator[list[tuple[Any, ...]]]:
        self.task = asyncio.current_task()
        yield [(i,) for i in range(n)]
        raise WeirError(SqlState.DIVISION_BY_ZERO, "division by zero")

    def mark_failed(self) -> None:
        self.failed_count += 1
        if self.status == "T":
            self.status = "E"

    async def end_implicit_transaction(self) -> None:
        self.implicit_ends += 1

    async def close(self) -> None:
        self.closed = True
        if self.task is not None:
            self.task.cancel()

    def cancel(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()


class FakeCoordinator:
    def __init__(
        self,
        auth: str = "trust",
        passwords: dict[str, str] | None = None,
        verifiers: dict[str, str] | None = None,
    ) -> None:
        self.auth = auth
        self.passwords = passwords or {}
        self.verifiers = verifiers or {}
        self.sessions: dict[int, FakeSession] = {}
        self.opened: list[tuple[str, str, dict[str, str]]] = []
        self.cancels: list[tuple[int, int]] = []

    def auth_method(self, user: str, host: str) -> str:
        return self.auth

    def scram_verifier(self, user: str) -> str | None:
        return self.verifiers.get(user)

    def check_password(self, user: str, password: str) -> bool:
        return self.passwords.get(user) == password

    async def open_session(self, user: str, database: str, params: dict[str, str]) -> FakeSession:
        if user == "nobody":
            raise WeirError(
                SqlState.INVALID_AUTHORIZATION_SPECIFICATION, f'role "{user}" does not exist'
            )
        self.opened.append((user, database, dict(params)))
        session = FakeSession(self, user, database, params)
        if database == "nodb":
            session.notices.append(
                Notice("3D000", f'session database "{database}" does not exist', "WARNING")
            )
        self.sessions[session.connection_id] = session
        return session

    def cancel(self, connection_id: int, secret_key: int) -> None:
        self.cancels.append((connection_id, secret_key))
        session = self.sessions.get(connection_id)
        if session is not None and session.secret_key == secret_key:
            session.cancel()


class ServerThread:
    """A PgServer on port 0 running in its own event loop thread, so blocking
    clients (psycopg, pg8000, psql, raw sockets) can talk to it from the test."""

    def __init__(self, coordinator: FakeCoordinator | None = None, **kwargs: Any) -> None:
        self.coordinator = coordinator or FakeCoordinator()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = PgServer(self.coordinator, "127.0.0.1", 0, **kwargs)
        self.call(self.server.start())
        self.port = self.server.port

    def call(self, coro: Any, timeout: float = 10.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def dsn(self, user: str = "materialize", **extra: str) -> str:
        parts = {"host": "127.0.0.1", "port": str(self.port), "user": user,
                 "dbname": "materialize", "sslmode": "disable", **extra}
        return " ".join(f"{k}={v}" for k, v in parts.items())

    def stop(self) -> None:
        self.call(self.server.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()





def _serve_in_child(pipe: Any, kwargs: dict[str, Any]) -> None:
    s = ServerThread(FakeCoordinator(), **kwargs)
    pipe.send(s.port)
    pipe.recv()
    s.stop()


class ServerProcess:
    """A PgServer with the fake adapter in a child process: needed when a client
    blocks while holding the GIL (psycopg's legacy conn.cancel() does)."""

    def __init__(self, **kwargs: Any) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self.pipe, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve_in_child, args=(child, kwargs), daemon=True)
        self.proc.start()
        self.port: int = self.pipe.recv()

    dsn = ServerThread.dsn

    def stop(self) -> None:
        self.pipe.send("stop")
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()


class RawClient:
    """A scripted frontend speaking raw protocol bytes, for corner cases drivers avoid."""

    def __init__(self, port: int, timeout: float = 5.0) -> None:
        import socket

        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    @staticmethod
    def msg(typ: bytes, payload: bytes = b"") -> bytes:
        return typ + struct.pack("!i", len(payload) + 4) + payload

    def send(self, *chunks: bytes) -> None:
        self.sock.sendall(b"".join(chunks))

    def _fill(self, n: int) -> bool:
        while len(self.buf) < n:
            data = self.sock.recv(65536)
            if not data:
                return False
            self.buf += data
        return True

    def recv_byte(self) -> bytes:
        assert self._fill(1)
        b, self.buf = self.buf[:1], self.buf[1:]
        return b

    def recv(self) -> tuple[str, bytes] | None:
        """Next backend message, or None on EOF."""
        if not self._fill(5):
            return None
        (length,) = struct.unpack_from("!i", self.buf, 1)
        if not self._fill(1 + length):
            return None
        typ, body = self.buf[:1].decode(), self.buf[5 : 1 + length]
        self.buf = self.buf[1 + length :]
        return typ, body

    def until(self, typ: str = "Z") -> list[tuple[str, bytes]]:
        out = []
        while True:
            m = self.recv()
            assert m is not None, f"EOF before {typ!r}; got {out}"
            out.append(m)
            if m[0] == typ:
                return out

    def startup(self, user: str = "materialize", **params: str) -> list[tuple[str, bytes]]:
        kv = {"user": user, "database": "materialize", **params}
        body = struct.pack("!i", 3 << 16) + b"".join(
            k.encode() + b"\0" + v.encode() + b"\0" for k, v in kv.items()
        ) + b"\0"
        self.send(struct.pack("!i", len(body) + 4) + body)
        return self.until("Z")

    # message builders
    def query(self, sql: str) -> bytes:
        return self.msg(b"Q", sql.encode() + b"\0")

    def parse(self, name: str, sql: str, oids: tuple[int, ...] = ()) -> bytes:
        payload = name.encode() + b"\0" + sql.encode() + b"\0" + struct.pack("!h", len(oids))
        return self.msg(b"P", payload + b"".join(struct.pack("!i", o) for o in oids))

    def bind(
        self, portal: str, stmt: str, params: tuple[bytes | None, ...] = (),
        fmts: tuple[int, ...] = (), result_fmts: tuple[int, ...] = (),
    ) -> bytes:
        p = portal.encode() + b"\0" + stmt.encode() + b"\0"
        p += struct.pack("!h", len(fmts)) + b"".join(struct.pack("!h", f) for f in fmts)
        p += struct.pack("!h", len(params))
        for v in params:
            p += struct.pack("!i", -1) if v is None else struct.pack("!i", len(v)) + v
        p += struct.pack("!h", len(result_fmts)) + b"".join(
            struct.pack("!h", f) for f in result_fmts
        )
        return self.msg(b"B", p)

    def execute(self, portal: str = "", max_rows: int = 0) -> bytes:
        return self.msg(b"E", portal.encode() + b"\0" + struct.pack("!i", max_rows))

    def describe(self, kind: str, name: str = "") -> bytes:
        return self.msg(b"D", kind.encode() + name.encode() + b"\0")

    def close_msg(self, kind: str, name: str = "") -> bytes:
        return self.msg(b"C", kind.encode() + name.encode() + b"\0")

    def sync(self) -> bytes:
        return self.msg(b"S")

    def close(self) -> None:
        self.sock.close()


def error_fields(body: bytes) -> dict[str, str]:
    fields = {}
    for part in body.split(b"\0"):
        if part:
            fields[chr(part[0])] = part[1:].decode()
    return fields


def data_row_values(body: bytes) -> list[bytes | None]:
    (n,) = struct.unpack_from("!h", body)
    pos, vals = 2, []
    for _ in range(n):
        (ln,) = struct.unpack_from("!i", body, pos)
        pos += 4
        if ln < 0:
            vals.append(None)
        else:
            vals.append(body[pos : pos + ln])
            pos += ln
    return vals
