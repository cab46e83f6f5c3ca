"""The Spark side of a replica: its SparkSession, peek inputs, peeks, describes.

Every call here blocks (py4j) and runs in a worker thread of the replica.
Each peek gets its own `newSession()` so concurrent peeks can bind the same
temp view names to different inputs, and its own job tag so CancelPeek can
stop exactly its Spark jobs (SparkContext tags are thread-local properties
that the threads collecting results inherit).
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa

from weir.codec import spark_udfs
from weir.compute.replica import class_archive
from weir.compute.replica.small_inputs import (
    SMALL_INPUTS_CONF,
    configure_small_inputs,
    small_contents,
)
from weir.compute.sizes import ReplicaSize
from weir.errors import SqlState, WeirError
from weir.storage.maintenance import local_path
from weir.storage.schema import Column, physical_name
from weir.types import INTERVAL, PgType, parse_type

log = logging.getLogger(__name__)

_N = "__weir_n"
_I = "__weir_i"
_NESTED_LOOP = re.compile(r"\b(BroadcastNestedLoopJoin|CartesianProduct)\b")


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def stored_ddl(t: PgType) -> str:
    """The Spark type of a column as it sits in a shard's Parquet files."""
    if t.inner is not None:
        return f"ARRAY<{stored_ddl(t.inner)}>"
    if t.stored_as == "int":
        return "INT"
    if t.stored_as == "long":
        return "BIGINT"
    return t.spark_ddl


@functools.lru_cache(maxsize=4096)
def _parquet_types(path: str) -> dict[str, pa.DataType]:
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(local_path(path))
    except (OSError, ValueError, pa.ArrowException):
        return {}
    return {f.name: f.type for f in schema}


def stored_forms(columns: Sequence[Column], files: Sequence[str]) -> list[Column]:
    """`columns` with each interval column that a shard written before intervals had months
    holds as long microseconds (its files say so) typed as such (stored_as long)."""
    if not files or not any(t.oid == INTERVAL.oid for _, t, _ in columns):
        return list(columns)
    found = _parquet_types(str(files[0]))
    return [(n, replace(t, stored_as="long") if t.oid == INTERVAL.oid
             and pa.types.is_integer(found.get(physical_name(n), pa.null())) else t, nl) for n, t, nl in columns]


_STORED_VIEWS = itertools.count()


def empty_dir() -> str:
    """A directory without files: reading it is an empty scan that Spark plans like any
    other (an empty DataFrame would let the optimizer fold the whole query away, and a
    dataflow's plan, pinned when it is created, must not depend on its inputs being empty)."""
    if not _EMPTY_DIR:
        _EMPTY_DIR.append(tempfile.mkdtemp(prefix="weir-empty-input-"))
    return _EMPTY_DIR[0]


_EMPTY_DIR: list[str] = []


def stored_view(session: Any, files: Sequence[str], columns: Sequence[Column]) -> tuple[str, list[Column]]:
    """A temporary view over a shard's Parquet files as they are stored (physical column
    names and stored types, then mz_timestamp and mz_diff): its name and the columns'
    stored forms, for `contents_sql`."""
    columns = stored_forms(columns, files)
    ddl = ", ".join([f"{_quote(physical_name(n))} {stored_ddl(t)}" for n, t, _ in columns]
                    + ["mz_timestamp BIGINT", "mz_diff BIGINT"])
    name = f"__weir_stored_{next(_STORED_VIEWS)}"
    session.read.schema(ddl).parquet(*(files or [empty_dir()])).createOrReplaceTempView(name)
    return name, columns


def contents_sql(view: str, columns: Sequence[Column], as_of: int | None, consolidate: bool = True) -> str:
    """Spark SQL over a `stored_view`: the collection at `as_of` (None: all its updates) as
    plain rows, each repeated by its count, in the types queries see. One statement, so
    binding an input costs one analysis, not one per DataFrame step."""
    named = ", ".join(f"{_quote(physical_name(n))} AS {_quote(n)}" for n, _, _ in columns)
    data = ", ".join(_quote(n) for n, _, _ in columns)
    where = f" WHERE mz_timestamp <= {int(as_of)}" if as_of is not None else ""
    rows = f"SELECT {named}, mz_diff FROM {view}{where}"
    if consolidate:
        rows = (f"SELECT {data} FROM (SELECT {data}, sum(mz_diff) AS {_N} FROM ({rows}) GROUP BY {data} "
                f"HAVING sum(mz_diff) > 0) LATERAL VIEW explode(sequence(CAST(1 AS BIGINT), {_N})) AS {_I}")
    typed = ", ".join(f"{query_expr(_quote(n), t)} AS {_quote(n)}" for n, t, _ in columns)
    return f"SELECT {typed} FROM ({rows})"


def query_expr(ref: str, t: PgType, depth: int = 0) -> str:
    """Spark SQL turning a stored value `ref` into the type queries see."""
    if t.inner is not None:  # of a multidimensional array: its sub-arrays'
        if stored_ddl(t.inner) == t.inner.spark_ddl:
            return ref
        var = f"__x{depth}"
        return f"transform({ref}, {var} -> {query_expr(var, t.inner, depth + 1)})"
    if t.oid == INTERVAL.oid and t.stored_as == "long":  # whole days and the rest, as weir printed them
        return (f"CASE WHEN {ref} IS NOT NULL THEN CAST(named_struct('months', 0, 'days', CAST({ref} DIV 86400000000 AS INT), "
                f"'micros', {ref} - ({ref} DIV 86400000000) * 86400000000) AS {t.spark_ddl}) END")
    if stored_ddl(t) != t.spark_ddl:
        return f"CAST({ref} AS {t.spark_ddl})"
    return ref


def spark_conf(size: ReplicaSize, config: Mapping[str, Any] | None = None, *,
               archive: bool = True) -> dict[str, str]:
    """Session settings: UTC, ANSI errors, Arrow results, a UI on a free port, the
    class archive (weir.compute.replica.class_archive) when there is one."""
    # a code cache of its own size: with C1 alone (-XX:TieredStopAtLevel=1, as the tests
    # run) the JVM's default is 48 MB, which a replica running many dataflows filled in
    # under 90 s; Spark then failed a task with "Out of space in CodeCache for adapters"
    # (a VirtualMachineError) and the executor took the JVM down
    java = "-XX:+ExitOnOutOfMemoryError -XX:ReservedCodeCacheSize=256m"
    if archive and (shared := class_archive.java_options()):
        java += " " + shared
    conf = {
        "spark.master": size.master,
        "spark.app.name": "weir-replica",
        "spark.driver.memory": size.driver_memory,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.ansi.enabled": "true",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "65536",
        "spark.sql.shuffle.partitions": str(max(2, size.workers)),
        "spark.ui.enabled": "true",
        "spark.ui.port": "0",
        "spark.ui.showConsoleProgress": "false",
        # Introspection (spark_plan, spark_listener): without AQE an executed plan keeps the
        # operator ids its explain printed (replicas run few partitions, so AQE's coalescing
        # gains little), and a 1 s heartbeat gives live in-task SQL metrics (default 10 s).
        "spark.sql.adaptive.enabled": "false",
        "spark.executor.heartbeatInterval": "1s",
        # WITH RECURSIVE runs until its working table is empty, as in PostgreSQL (Spark's
        # defaults stop it with an error after 100 levels or a million rows)
        "spark.sql.cteRecursionLevelLimit": "-1",
        "spark.sql.cteRecursionRowLimit": "-1",
        # A JVM out of memory is unusable: let it die so the replica restarts (oom-killed).
        "spark.driver.extraJavaOptions": java,
        "spark.sql.warehouse.dir": os.path.join(tempfile.gettempdir(), f"weir-spark-{os.getpid()}"),
    }
    if size.is_local:
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    conf.update(size.spark_conf)
    conf.update({str(k): str(v) for k, v in ((config or {}).get("spark_conf") or {}).items()})
    return conf


def _is_gateway_failure(exc: BaseException) -> bool:
    from py4j.protocol import Py4JNetworkError

    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, (Py4JNetworkError, ConnectionRefusedError, ConnectionResetError,
                          BrokenPipeError)):
            return True
        e = e.__cause__ or e.__context__
    return False


def spark_session(conf: Mapping[str, str]) -> Any:
    """The process's SparkSession (the engine's; the class archive's training run)."""
    from pyspark.sql import SparkSession

    # Python UDFs (weir.codec.spark_udfs) run in workers of this interpreter, which has weir
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def jvm_process(spark: Any) -> Any:
    """The Spark driver JVM's process (a Popen) when PySpark launched it, else None
    (PySpark has no public handle on it)."""
    return getattr(getattr(spark.sparkContext, "_gateway", None), "proc", None)


class SparkEngine:
    """One SparkSession and the operations the compute protocol asks of it."""

    def __init__(self, size: ReplicaSize, config: Mapping[str, Any] | None = None) -> None:
        self.spark = spark_session(spark_conf(size, config))
        self.sc = self.spark.sparkContext
        configure_small_inputs(self.spark.conf.get(SMALL_INPUTS_CONF, None))
        from pyspark.sql.functions import udf

        # made once (the function is pickled once), registered once in a template session
        # (a session's function registry, like its temporary views, is its own)
        self._udfs = {name: udf(function, returns) for name, (function, returns) in spark_udfs.UDFS.items()}
        self._template = self.spark.newSession()
        for name, function in self._udfs.items():
            self._template.udf.register(name, function)
        # an index's contents at a time (set by the replica): views read through their indexes
        self.index_source: Callable[[str, int], pa.Table] | None = None
        # the introspection logs' current contents (set by the replica while it collects them)
        self.live_logs: Callable[[], pa.Table] | None = None
        self.ui_url: str | None = self.sc.uiWebUrl  # asked once: heartbeats must not need the JVM
        self.version = str(self.spark.version)
        self.sc.setLogLevel(str((config or {}).get("log_level", "WARN")))
        # PySpark logs every SQL error with a JVM stack; we report them ourselves.
        for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)

    def jvm_gone(self, exc: BaseException | None = None, wait: float = 2.0) -> bool:
        """Whether the JVM died (a socket error from py4j is how a peek learns it)."""
        if self.jvm_exit_code() is not None:
            return True
        if exc is None or not _is_gateway_failure(exc):
            return False
        try:  # a reset result socket alone (e.g. a canceled collect) is not a dead JVM
            self.spark._jvm.java.lang.System.currentTimeMillis()
            return False
        except Exception:
            pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and self.jvm_exit_code() is None:
            time.sleep(0.05)
        return True  # the gateway does not answer even if the process lingers

    def jvm_exit_code(self) -> int | None:
        """The Spark driver JVM's exit code once it has died (e.g. out of memory), else None."""
        proc = jvm_process(self.spark)
        return proc.poll() if proc is not None else None

    def stop(self) -> None:
        self.spark.stop()

    # -- inputs -----------------------------------------------------------

    def _bind_input(self, session: Any, spec: Mapping[str, Any], timestamp: int | None) -> None:
        from pyspark.sql import functions as F
        from pyspark.sql.types import StructType

        try:
            name = str(spec["name"])
            columns = [(str(c["name"]), parse_type(str(c["pg_type"])), bool(c.get("nullable", True)))
                       for c in spec.get("columns", [])]
            files = [str(f) for f in spec.get("files", [])]
            columns = stored_forms(columns, files)
        except (KeyError, TypeError) as e:
            raise WeirError(SqlState.PROTOCOL_VIOLATION, f"malformed peek input: {e}") from None
        as_of = spec.get("as_of", timestamp)
        if spec.get("live_logs"):  # this replica's in-memory introspection logs
            if self.live_logs is None:
                raise WeirError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE,
                                "this replica does not collect introspection (INTROSPECTION INTERVAL 0)")
            table = self.live_logs()
            df = session.createDataFrame(table) if table.num_rows else session.createDataFrame(
                [], StructType.fromDDL(", ".join(f"{_quote(n)} {t.spark_ddl}" for n, t, _ in columns)))
            df.createOrReplaceTempView(name)
            return
        if spec.get("index") is not None:  # an index's arrangement, instead of recomputing a view
            if self.index_source is None or as_of is None:
                raise WeirError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE, "no arrangements here",
                                detail="not-fast-path")
            table = self.index_source(str(spec["index"]), int(as_of))
            df = session.createDataFrame(table.rename_columns([n for n, _, _ in columns]))
            df.selectExpr(*[f"CAST({_quote(n)} AS {t.spark_ddl}) AS {_quote(n)}" for n, t, _ in columns]) \
                .createOrReplaceTempView(name)
            return
        if columns and as_of is not None and (small := small_contents(
                session, files, columns, int(as_of), bool(spec.get("consolidate", True)))) is not None:
            small.createOrReplaceTempView(name)
            return
        if columns:
            view, stored = stored_view(session, files, columns)
            session.sql(f"CREATE OR REPLACE TEMPORARY VIEW {_quote(name)} AS "
                        + contents_sql(view, stored, as_of, bool(spec.get("consolidate", True))))
            return
        # no columns (SELECT FROM t): DataFrame steps (a SELECT list cannot be empty)
        df = session.read.schema("mz_timestamp BIGINT, mz_diff BIGINT").parquet(*(files or [empty_dir()]))
        if as_of is not None:
            df = df.where(F.col("mz_timestamp") <= F.lit(int(as_of)))
        if spec.get("consolidate", True):
            df = (df.groupBy().agg(F.sum("mz_diff").alias(_N)).where(F.col(_N) > 0)
                  .withColumn(_I, F.explode(F.sequence(F.lit(1).cast("bigint"), F.col(_N)))))
        df.select().createOrReplaceTempView(name)

    def shuffle_partitions(self) -> int:
        return int(self.spark.conf.get("spark.sql.shuffle.partitions"))

    def new_session(self) -> Any:
        """A SparkSession of its own (temporary views, settings) with weir's UDFs: a JVM-side
        clone of a template that has them (registering them in each new session pickled
        and sent every function again, ~80 ms a peek or a dataflow step)."""
        from pyspark.sql import SparkSession

        return SparkSession(self.sc, self._template._jsparkSession.cloneSession())

    def _session(self, inputs: Sequence[Mapping[str, Any]], timestamp: int | None) -> Any:
        session = self.new_session()
        for spec in inputs:
            self._bind_input(session, spec, timestamp)
        return session

    # -- operations -------------------------------------------------------

    def peek(self, tag: str, sql: str, inputs: Sequence[Mapping[str, Any]],
             timestamp: int | None) -> pa.Table:
        """Run the query to completion and collect it as Arrow."""
        self.sc.addJobTag(tag)
        self.sc.setInterruptOnCancel(True)
        self.sc.setJobDescription(f"peek {tag}")
        try:
            session = self._session(inputs, timestamp)
            df = session.sql(sql)
            if _NESTED_LOOP.search(df._jdf.queryExecution().sparkPlan().toString()):
                # Generated code loops over a nested-loop join's build side checking for a kill
                # only once per 1,000 streamed rows: a canceled cross join kept the replica's
                # core for minutes. The interpreted operators stop within a second.
                session.conf.set("spark.sql.codegen.wholeStage", "false")
            return df.toArrow()
        finally:
            self.sc.removeJobTag(tag)
            self.sc.setJobDescription(None)  # type: ignore[arg-type]

    def describe(self, tag: str, sql: str, inputs: Sequence[Mapping[str, Any]]) -> pa.Schema:
        """The result schema, from analysis only (no job runs)."""
        from pyspark.sql.pandas.types import to_arrow_schema

        self.sc.addJobTag(tag)
        try:
            session = self._session(inputs, None)
            return to_arrow_schema(session.sql(sql).schema, timezone="UTC")
        finally:
            self.sc.removeJobTag(tag)

    def cancel(self, tag: str) -> None:
        self.sc.cancelJobsWithTag(tag)
