"""Engine set-up and the transaction discipline every catalog method follows.

One `RLock` serialises catalog work inside the process (calls are short, and
the coordinator calls from the event loop and from executor threads). A
`transaction()` binds one connection to the calling thread; every method,
called inside it on that thread, runs in that connection (inside a savepoint,
so a failed call leaves nothing behind), and outside it in its own short
transaction. SQLite transactions start with BEGIN IMMEDIATE so two writers
never deadlock on a read-to-write upgrade; busy_timeout makes them wait.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from sqlalchemy import Connection, Engine, create_engine, event, insert, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool

from weir.catalog import tables as t

USER_OID_START = 20000
SYSTEM_OID_START = 16384
BUSY_TIMEOUT_MS = 30_000


def make_engine(url: str) -> Engine:
    """SQLite (WAL, busy timeout, BEGIN IMMEDIATE) or any other SQLAlchemy URL."""
    u = make_url(url)
    if u.get_backend_name() != "sqlite":
        return create_engine(u, pool_pre_ping=True)
    memory = u.database in (None, "", ":memory:")
    kwargs: dict[str, Any] = {
        "connect_args": {"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
    }
    if memory:
        kwargs["poolclass"] = StaticPool
    else:
        Path(u.database or "").parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(u, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        if not memory:
            cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        readonly = conn.get_execution_options().get("weir_readonly", False)
        conn.exec_driver_sql("BEGIN" if readonly else "BEGIN IMMEDIATE")

    return engine


def id_key(object_id: str) -> tuple[str, int]:
    """Sort key for ids like 'u12' so u2 < u10."""
    head = object_id.rstrip("0123456789")
    tail = object_id[len(head):]
    return head, int(tail) if tail else -1


class CatalogBase:
    """Connections, transactions, id/oid allocation; the object APIs build on it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._engine = make_engine(url)
        self._lock = threading.RLock()
        self._local = threading.local()
        self._generation = 0
        self._revision = 0
        self._names_cache: Any = None  # (generation, databases, schemas by name): ObjectsMixin
        self._decoded_items: dict[Any, Any] = {}  # (row, dependencies) -> Item (ObjectsMixin)
        # ids of items changed by commits since the cached snapshot (Catalog.snapshot reloads
        # only those); every write to items or their dependencies goes through _touch_items
        self._items_touched: set[str] = set()

    @property
    def generation(self) -> int:
        """Bumped by every committed change to what objects are: names, kinds, columns,
        dependencies, owners, privileges (what plans, name lookups and builtin relations
        are cached on). A change of an item's definition alone (`set_definitions`: a hold
        advancing, a durable subscription acknowledged) bumps only `revision`."""
        return self._generation

    @property
    def revision(self) -> int:
        """Bumped by every committed change made through this Catalog."""
        return self._revision

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _current(self) -> Connection | None:
        return getattr(self._local, "conn", None)

    @property
    def in_transaction(self) -> bool:
        """True on a thread that is inside `transaction()`."""
        return self._current() is not None

    @contextmanager
    def transaction(self) -> Iterator[Self]:
        """`with catalog.transaction() as tx:` commits every change in the block at
        once, or none if it raises. Nests (as a savepoint). Yields the catalog.
        Do not await inside it: it holds the catalog's lock."""
        with self._lock:
            outer = self._current()
            if outer is not None:
                savepoint = outer.begin_nested()
                try:
                    yield self
                except BaseException:
                    if savepoint.is_active:
                        savepoint.rollback()
                    raise
                savepoint.commit()
                return
            conn = self._engine.connect()
            tx = conn.begin()
            self._local.conn = conn
            self._local.dirty = False
            self._local.structural = False
            self._local.touched = set()
            try:
                yield self
                tx.commit()
                self._items_touched |= self._local.touched
                if self._local.dirty:
                    self._revision += 1
                if self._local.structural:
                    self._generation += 1
            except BaseException:
                if tx.is_active:
                    tx.rollback()
                raise
            finally:
                self._local.conn = None
                self._local.dirty = self._local.structural = False
                self._local.touched = set()
                conn.close()

    @contextmanager
    def _write(self, dirty: bool = True, structural: bool = True) -> Iterator[Connection]:
        """A connection for one mutating call (its own transaction or a savepoint).
        `dirty=False` for writes that do not change catalog objects (oracle, kv);
        `structural=False` for changes of item definitions only (see `generation`)."""
        with self.transaction():
            if dirty:
                self._local.dirty = True
                if structural:
                    self._local.structural = True
            conn = self._current()
            assert conn is not None
            yield conn

    def _touch_items(self, ids: Iterable[str]) -> None:
        """Record, inside a write, which items it changes (added, altered or dropped): the
        next snapshot reloads only those. A savepoint rolled back leaves them recorded,
        which costs a reload and nothing else."""
        self._local.touched.update(ids)

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        """A connection for reads: the thread's open transaction, else a fresh one."""
        with self._lock:
            conn = self._current()
            if conn is not None:
                yield conn
                return
            with self._engine.connect() as fresh:
                fresh = fresh.execution_options(weir_readonly=True)
                with fresh.begin():
                    yield fresh

    # -- ids ---------------------------------------------------------------------------

    def _next_seq(self, conn: Connection, name: str, start: int = 1) -> int:
        row = conn.execute(
            select(t.ids.c.next).where(t.ids.c.name == name).with_for_update()
        ).first()
        if row is None:
            conn.execute(insert(t.ids).values(name=name, next=start + 1))
            return start
        conn.execute(update(t.ids).where(t.ids.c.name == name).values(next=row[0] + 1))
        return int(row[0])

    def _next_id(self, conn: Connection, kind: str, system: bool = False) -> str:
        """'u<n>' (or 's<n>') from the per-kind sequence, e.g. kind 'item'."""
        prefix = "s" if system else "u"
        return f"{prefix}{self._next_seq(conn, f'{kind}.{prefix}')}"

    def _next_oid(self, conn: Connection) -> int:
        return self._next_seq(conn, "oid.user", USER_OID_START)
