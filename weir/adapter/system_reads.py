"""System reads in process (DESIGN.md, "System-relation reads"): a query that reads only
system relations (mz_catalog, mz_internal, mz_introspection, pg_catalog,
information_schema) runs in the coordinator, over those collections' contents at the
timestamp the usual rules choose, with DuckDB over Arrow: no replica round trip, no Spark
job. The query is the one planned for Spark, rendered for DuckDB (weir.sql.in_process);
what DuckDB cannot run the same way, or fails on, runs on a replica as before, so the
answer is always Spark's; only a query's own error for a name that names nothing (class
42) is raised from here. User data never comes here."""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from weir import types as T
from weir.catalog.model import SYSTEM_SCHEMAS
from weir.codec.spark_udfs import UDFS
from weir.compute import introspection as ci
from weir.errors import RUNTIME_MARKER, WeirError, from_runtime_marker
from weir.sql import in_process_jsonb
from weir.sql.in_process import IN_PROCESS_UDFS, MACROS, NotInProcess, has_arithmetic, to_duckdb
from weir.sql.resolve import RelationDesc

if TYPE_CHECKING:
    from weir.adapter.session import Session
    from weir.sql.plan import SparkPlan

log = logging.getLogger(__name__)

VAR = "enable_system_reads_in_process"
# errors a query raises itself (weir.errors.runtime_marker) that DuckDB may answer with:
# class 42, names that name nothing. Others (data exceptions, what is not supported) are
# Spark's to raise, whose order of evaluation may differ.
NAME_ERRORS = ("42",)
_USEC = 1_000


def applies(session: Session, spark: SparkPlan) -> bool:
    """Whether the query reads system collections only (at least one), and may run here."""
    if not spark.inputs or session.get_var(VAR) != "on":
        return False
    collections = session.coord.storage.collections
    return all(sid != ci.LIVE_LOGS and sid in collections and desc is not None and _system(desc)
               for sid, desc in spark.inputs.items())


def _system(desc: RelationDesc) -> bool:
    return desc.name.split(".", 1)[0] in SYSTEM_SCHEMAS


class Engine:
    """One in-memory DuckDB database with weir's macros and Python UDFs (the very functions
    replicas register with Spark). Each worker thread keeps its own cursor (`_CursorState`):
    a collection's contents are the same Arrow table until it is written, so a repeated
    catalog query neither registers its inputs again nor is planned again."""

    def __init__(self) -> None:
        self._db = duckdb.connect(":memory:")
        self._db.execute("SET TimeZone = 'UTC'")
        # catalog-sized queries: one thread and a bounded memory, the cores are the replicas'
        self._db.execute("SET threads = 1")
        self._db.execute("SET memory_limit = '1GB'")
        for macro in MACROS:
            self._db.execute(macro)
        for name, arg in IN_PROCESS_UDFS.items():
            fn, _ = UDFS[name]
            self._db.create_function(name, fn, [duckdb.sqltype(arg)], duckdb.sqltype("VARCHAR"),
                                     null_handling="special")
        jsonb, _ = UDFS[in_process_jsonb.UDF]  # one per argument type (weir.sql.in_process_jsonb)
        for tag, arg in in_process_jsonb.SIGNATURES.items():
            text = duckdb.sqltype("VARCHAR")
            self._db.create_function(in_process_jsonb.udf_name(tag), lambda op, value, t: jsonb(op, value, t),
                                     [text, duckdb.sqltype(arg), text], text, null_handling="special")
        self._lock = threading.Lock()
        self._local = threading.local()
        self._answers = _Answers()
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="system-reads")

    async def run(self, sql: str, tables: dict[str, pa.Table], *, describing: bool = False) -> pa.Table:
        """The query's answer (kept for the same query over the same contents); `describing`:
        over empty inputs for its schema, on a cursor of its own, so that the inputs the
        answering cursor keeps registered are not replaced by empty ones."""
        found = None if describing else self._answers.get(sql, tables)
        if found is not None:
            return found
        result = await asyncio.get_running_loop().run_in_executor(self._pool, self._run, sql, tables, describing)
        if not describing:
            self._answers.put(sql, tables, result)
        return result

    def _run(self, sql: str, tables: dict[str, pa.Table], describing: bool = False) -> pa.Table:
        which = "describing" if describing else "answering"
        state: _CursorState | None = getattr(self._local, which, None)
        if state is None:
            with self._lock:
                state = _CursorState(self._db.cursor())
            setattr(self._local, which, state)
        try:
            return _normalized(state.execute(sql, tables))
        except BaseException:
            setattr(self._local, which, None)  # a fresh cursor next time, whatever state this one is in
            state.cursor.close()
            raise

    def close(self) -> None:
        self._pool.shutdown(wait=False)
        self._db.close()


class _Answers:
    """Answers kept while their inputs are unchanged. Every function the in-process engine
    runs is deterministic (weir.sql.in_process admits no others; session values such as
    current_user or now() are literals in the SQL), so the same SQL over the same contents
    has the same answer: what Materialize gets from indexes on its catalog, here for the
    queries tools repeat (psql's \\d, an ORM's reflection, a BI tool's sync). Contents are
    compared by identity: a collection's Arrow table is a new object whenever it changes."""

    MAX_ENTRIES = 256
    MAX_ROWS = 10_000  # a larger answer is computed each time rather than kept

    def __init__(self) -> None:
        # SQL -> (the inputs it was computed over, the answer), least recently used first
        self._kept: dict[str, tuple[dict[str, pa.Table], pa.Table]] = {}

    def get(self, sql: str, tables: dict[str, pa.Table]) -> pa.Table | None:
        found = self._kept.pop(sql, None)
        if found is None:
            return None
        inputs, answer = found
        if inputs.keys() != tables.keys() or any(tables[name] is not t for name, t in inputs.items()):
            return None  # an input changed: this answer is gone for good
        self._kept[sql] = found
        return answer

    def put(self, sql: str, tables: dict[str, pa.Table], answer: pa.Table) -> None:
        if answer.num_rows > self.MAX_ROWS:
            return
        if len(self._kept) >= self.MAX_ENTRIES:
            del self._kept[next(iter(self._kept))]
        self._kept[sql] = (dict(tables), answer)


@dataclass
class _Input:
    table: pa.Table  # the contents (the object itself is kept: `is` comparisons are safe)
    version: int  # changes whenever what the name stands for changes
    native: bool = False  # copied into a DuckDB temporary table (else a view of the Arrow table)
    uses: int = 1


class _CursorState:
    """One worker thread's cursor, its inputs and its prepared statements. DuckDB's planning
    is most of a small catalog query's time, so statements are prepared once; scanning an
    Arrow table costs more than a table of DuckDB's own, so contents read a second time
    unchanged (the catalog's, between two DDL statements) are copied into a temporary
    table. A prepared statement binds what its inputs were when it was prepared, so it is
    used only while every input's version is the same. A statement is prepared the second
    time it comes: one that comes once (a table's oid in it) is run as it is, without a
    prepared statement to keep and later drop."""

    MAX_PREPARED = 128
    MAX_SEEN = 512

    def __init__(self, cursor: duckdb.DuckDBPyConnection) -> None:
        self.cursor = cursor
        self.inputs: dict[str, _Input] = {}
        # SQL -> (statement name, its inputs' versions), least recently used first
        self.prepared: dict[str, tuple[str, dict[str, int]]] = {}
        self.seen: dict[str, None] = {}  # run once, not prepared (least recently first)
        self._next = 0

    def _use(self, name: str, table: pa.Table) -> int:
        cur, known = self.cursor, self.inputs.get(name)
        if known is not None and known.table is table:
            known.uses += 1
            if not known.native and known.uses >= 2:
                cur.unregister(name)
                source = f"{name}__arrow"
                cur.register(source, table)
                cur.execute(f'CREATE TEMP TABLE "{name}" AS SELECT * FROM "{source}"')
                cur.unregister(source)
                known.native, known.version = True, self._bump()
            return known.version
        if known is not None and known.native:
            cur.execute(f'DROP TABLE "{name}"')
        cur.register(name, table)
        self.inputs[name] = _Input(table, self._bump())
        return self.inputs[name].version

    def _bump(self) -> int:
        self._next += 1
        return self._next

    def execute(self, sql: str, tables: dict[str, pa.Table]) -> pa.Table:
        cur = self.cursor
        versions = {name: self._use(name, table) for name, table in tables.items()}
        found = self.prepared.pop(sql, None)
        if found is not None and found[1] != versions:
            cur.execute(f"DEALLOCATE {found[0]}")
            found = None
        if found is None and sql not in self.seen:
            if len(self.seen) >= self.MAX_SEEN:
                del self.seen[next(iter(self.seen))]
            self.seen[sql] = None
            return cur.execute(sql).to_arrow_table()
        self.seen.pop(sql, None)
        if found is None:
            if len(self.prepared) >= self.MAX_PREPARED:
                oldest = next(iter(self.prepared))
                cur.execute(f"DEALLOCATE {self.prepared.pop(oldest)[0]}")
            found = (f"weir_q{self._bump()}", versions)
            cur.execute(f"PREPARE {found[0]} AS {sql}")
        self.prepared[sql] = found
        return cur.execute(f"EXECUTE {found[0]}").to_arrow_table()


def _normalized(table: pa.Table) -> pa.Table:
    """DuckDB's Arrow types as a replica's Spark returns them: string (not views or large
    strings), intervals as microsecond durations."""
    fields, columns, changed = [], [], False
    for f, col in zip(table.schema, table.columns, strict=True):
        t = f.type
        if pa.types.is_large_string(t) or pa.types.is_string_view(t):
            col, t = col.cast(pa.string()), pa.string()
        elif t == pa.month_day_nano_interval():
            col, t = _durations(col), pa.duration("us")
        else:
            fields.append(f)
            columns.append(col)
            continue
        changed = True
        fields.append(pa.field(f.name, t, f.nullable))
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=pa.schema(fields)) if changed else table


def _durations(col: pa.ChunkedArray) -> pa.Array:
    out = []
    for v in col.to_pylist():
        if v is None:
            out.append(None)
            continue
        months, days, nanos = v.months, v.days, v.nanoseconds
        out.append(((months * 30 + days) * 86_400_000_000_000 + nanos) // _USEC)
    return pa.array(out, pa.int64()).cast(pa.duration("us"))


async def read(session: Session, spark: SparkPlan, params: list[Any], ts: int,
               own_times: dict[str, int]) -> pa.Table | None:
    """The query's answer computed here, or None: it runs on a replica instead."""
    coord = session.coord
    try:
        spark_sql = spark.template.render(params, session.context(ts))
        if _decimal_arithmetic(spark_sql, spark):
            raise NotInProcess("arithmetic over numeric columns (Spark's decimal result types)")
        sql = to_duckdb(spark_sql)
    except NotInProcess as e:
        log.debug("system read on a replica: %s", e)
        return None
    except Exception:  # noqa: BLE001 - e.g. parameters the template cannot take: the normal path
        return None
    tables = {}
    for sid, desc in spark.inputs.items():
        table = await coord.storage.contents(sid, own_times.get(sid, ts))
        tables[desc.spark_name] = _input(table, desc)
    try:
        return await coord.system_reads.run(sql, tables)
    except (duckdb.Error, pa.ArrowException, ValueError, TypeError) as e:
        raised = _raised_by_query(e)
        if raised is not None and raised.sqlstate.startswith(NAME_ERRORS):
            # the query's own error: a name it looks up in the catalog names nothing (a reg*
            # cast, has_table_privilege ...); Spark fails the same way over the same
            # contents, seconds later
            raise raised from None
        log.info("system read on a replica instead: %s (DuckDB SQL: %.2000s)", e, sql)
        return None


def _raised_by_query(e: Exception) -> WeirError | None:
    """The error the query's own error() call raised, if that is what failed: DuckDB's
    other errors quote the query's text, markers included (a binder error is not one)."""
    if not isinstance(e, duckdb.InvalidInputException):
        return None
    _, _, message = str(e).partition("Invalid Input Error: ")
    return from_runtime_marker(message) if message.startswith(RUNTIME_MARKER) else None


def _decimal_arithmetic(spark_sql: str, spark: SparkPlan) -> bool:
    return any(c.type.oid == T.NUMERIC.oid for d in spark.inputs.values() for c in d.columns) \
        and has_arithmetic(spark_sql)


async def describe(session: Session, spark: SparkPlan) -> pa.Schema | None:
    """The query's result schema, from running it here over empty inputs (None: a replica
    describes it)."""
    try:
        spark_sql = spark.template.render([], session.context(0), describe=True)
        if _decimal_arithmetic(spark_sql, spark):
            return None
        sql = to_duckdb(spark_sql)
    except Exception:  # noqa: BLE001 - NotInProcess, or a template only a replica takes
        return None
    tables = {desc.spark_name: pa.schema([pa.field(c.name, c.type.arrow) for c in desc.columns]).empty_table()
              for desc in spark.inputs.values()}
    try:
        return (await session.coord.system_reads.run(sql, tables, describing=True)).schema
    except (duckdb.Error, pa.ArrowException, ValueError, TypeError) as e:
        log.info("system read described by a replica instead: %s", e)
        return None


_SELECTED: dict[tuple[int, tuple[str, ...]], tuple[pa.Table, pa.Table]] = {}


def _input(table: pa.Table, desc: RelationDesc) -> pa.Table:
    """A collection's rows with exactly the columns the query names: the same Arrow table
    for the same contents and columns, so that the engine need not register it again."""
    names = tuple(c.name for c in desc.columns)
    if tuple(table.column_names) == names:
        return table
    key = (id(table), names)
    found = _SELECTED.get(key)
    if found is not None and found[0] is table:
        return found[1]
    if len(_SELECTED) >= 256:
        _SELECTED.clear()
    selected = table.select(list(names))
    _SELECTED[key] = (table, selected)
    return selected

