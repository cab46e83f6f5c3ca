"""A compute replica process: one SparkSession serving the compute protocol.

    python -m weir.compute.replica --listen 127.0.0.1:0 --replica-id r1 --size 1

Starts Spark first, then listens and prints ``WEIR_REPLICA_LISTENING <host>
<port>`` on stdout, so whoever started it knows it can take commands at once.
The socket is served by an asyncio loop; Spark calls run in worker threads so
CancelPeek and heartbeats are handled while peeks run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from weir.compute import protocol as P
from weir.compute.replica import class_archive
from weir.compute.replica.dataflow_manager import DataflowManager
from weir.compute.replica.engine import SparkEngine, jvm_process
from weir.compute.replica.errors import error_fields, translate
from weir.compute.replica.introspection_logs import IntrospectionLogs, live_table
from weir.compute.replica.introspection_writer import IntrospectionWriter
from weir.compute.replica.process_metrics import ProcessMetrics
from weir.compute.sizes import ReplicaSize, resolve_size
from weir.errors import SqlState, WeirError

log = logging.getLogger("weir.compute.replica")

HEARTBEAT_INTERVAL = 1.0
CANCEL_RETRY_INTERVAL = 0.2
FAST_PATH_WAIT = 2.0  # how long a fast-path peek waits for its index to reach its timestamp
JVM_DIED_EXIT_CODE = 3
FENCED_EXIT_CODE = 4  # a newer incarnation of this replica exists: this one is a zombie


@dataclass
class _Peek:
    peek_id: str
    tag: str
    canceled: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)


class _Connection:
    """One controller connection and the peeks it started."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.out = P.MessageWriter(writer)
        self.peeks: dict[str, _Peek] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.peer = writer.get_extra_info("peername")


class Replica:
    def __init__(self, replica_id: str, size: ReplicaSize, engine: SparkEngine,
                 incarnation: int = 0, peek_threads: int = 4) -> None:
        self.replica_id = replica_id
        self.size = size
        self.engine = engine
        self.incarnation = incarnation
        self.started = time.monotonic()
        self.pool = ThreadPoolExecutor(max_workers=peek_threads, thread_name_prefix="peek")
        self.fast_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="fast-path")
        engine.index_source = lambda index_id, ts: self.dataflows.index_contents(index_id, ts, FAST_PATH_WAIT)
        self.cancel_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cancel")
        self.conn: _Connection | None = None
        self.heartbeat = 0
        self.stopping = asyncio.Event()
        self.exit_code = 0
        self.dataflows = DataflowManager(engine, self._send_current, self._fatal, replica_id)
        self.logs = IntrospectionLogs(exports=lambda: dict(self.dataflows.dataflows))
        self.logging: dict[str, Any] | None = None
        self.writer: IntrospectionWriter | None = None
        self._listener: Any = None
        self._operator_hydration: Any = None
        self._hydration_on = True  # enable_compute_operator_hydration_status_logging
        jvm = jvm_process(engine.spark)
        self.metrics = ProcessMetrics(jvm.pid if jvm is not None else None)

    # -- connections ------------------------------------------------------

    async def on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        old, conn = self.conn, _Connection(reader, writer)
        self.conn = conn
        if old is not None:
            log.info("new controller connection from %s replaces %s", conn.peer, old.peer)
            self._close(old)
        try:
            await conn.out.send(self._hello())
            while True:
                msg = await P.read_message(reader)
                if msg is None:
                    break
                await self._dispatch(conn, msg)
        except P.ProtocolError as e:
            log.warning("protocol error from %s: %s", conn.peer, e)
            conn.out.send_nowait({"type": P.ERROR, "sqlstate": SqlState.PROTOCOL_VIOLATION,
                                  "message": str(e)})
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # Shutdown. Python 3.11's start_server callback logs cancelled handlers as errors.
            pass
        finally:
            self._close(conn)
            if self.conn is conn:
                self.conn = None

    def _close(self, conn: _Connection) -> None:
        for peek in list(conn.peeks.values()):
            self._cancel(peek)
        conn.out.close()

    def _hello(self) -> dict[str, Any]:
        return {"type": P.HELLO, "protocol": P.PROTOCOL_VERSION, "replica_id": self.replica_id,
                "pid": os.getpid(), "size": self.size.name, "workers": self.size.workers,
                "spark_version": self.engine.version, "ui_url": self.engine.ui_url,
                "incarnation": self.incarnation}

    def _spawn(self, conn: _Connection, coro: Any) -> None:
        task = asyncio.create_task(coro)
        conn.tasks.add(task)
        task.add_done_callback(conn.tasks.discard)

    async def _dispatch(self, conn: _Connection, msg: P.Message) -> None:
        body, kind = msg.body, msg.type
        if kind == P.PEEK:
            self._spawn(conn, self._peek(conn, body))
        elif kind == P.CANCEL_PEEK:
            peek = conn.peeks.get(str(body.get("peek_id")))
            if peek is not None:
                self._cancel(peek)
        elif kind == P.DESCRIBE:
            self._spawn(conn, self._describe(conn, body))
        elif kind == P.PING:
            await conn.out.send({"type": P.PONG, "nonce": body.get("nonce")})
        elif kind == P.CREATE_INSTANCE:
            await self._create_instance(conn, body)
        elif kind == P.UPDATE_INPUT_FRONTIERS:
            self.dataflows.update_input_frontiers(body)
        elif kind == P.CREATE_DATAFLOW:
            dataflow_id = str(body.get("dataflow_id"))
            if body.get("name"):
                self.logs.names[dataflow_id] = str(body["name"])
            hydration = self._hydration()
            if hydration is not None and dataflow_id not in self.dataflows.dataflows:
                hydration.track(dataflow_id, index=bool((body.get("output") or {}).get("index")))
            self._spawn(conn, self.dataflows.create(body))
        elif kind == P.DROP_DATAFLOW:
            self.logs.dataflow_dropped(str(body.get("dataflow_id")))
            if self._operator_hydration is not None:
                self._operator_hydration.forget(str(body.get("dataflow_id")))
            self._spawn(conn, self.dataflows.drop(body))
        elif kind == P.ALLOW_COMPACTION:
            self.dataflows.allow_compaction(body)
        elif kind == P.SET_WRITER_EPOCH:
            self.dataflows.set_writer_epoch(body)
        elif kind == P.UPDATE_LOGGING:
            self._configure_logging(body.get("logging"), self.incarnation)
        elif kind in P.RESERVED_COMMANDS:
            await conn.out.send({"type": P.ERROR, "sqlstate": SqlState.FEATURE_NOT_SUPPORTED,
                                 "message": f"{kind} not yet supported", "in_reply_to": kind})
        else:
            await conn.out.send({"type": P.ERROR, "sqlstate": SqlState.PROTOCOL_VIOLATION,
                                 "message": f"unknown command {kind!r}", "in_reply_to": kind})

    async def _create_instance(self, conn: _Connection, body: dict[str, Any]) -> None:
        replica_id, incarnation = body.get("replica_id"), int(body.get("incarnation", 0))
        if replica_id != self.replica_id or incarnation < self.incarnation:
            await conn.out.send({
                "type": P.ERROR, "sqlstate": SqlState.INVALID_AUTHORIZATION_SPECIFICATION,
                "message": f"replica {self.replica_id} incarnation {self.incarnation} refuses "
                           f"CreateInstance for {replica_id} incarnation {incarnation}",
                "in_reply_to": P.CREATE_INSTANCE})
            conn.out.close()
            return
        self.incarnation = incarnation
        epoch = body.get("writer_epoch")
        self.dataflows.configure(body.get("storage"), None if epoch is None else int(epoch), incarnation)
        self._configure_logging(body.get("logging"), incarnation)
        await conn.out.send({"type": P.INSTANCE_CREATED, "replica_id": self.replica_id,
                             "incarnation": incarnation})
        if self._operator_hydration is not None:
            self._operator_hydration.resend()

    def _configure_logging(self, config: dict[str, Any] | None, incarnation: int) -> None:
        """CreateInstance's logging configuration: collect introspection every interval and,
        given a shard, write it there with this incarnation as writer epoch. The same
        configuration again (a reconnecting controller) changes nothing."""
        self._hydration_on = bool((config or {}).get("hydration", True))
        self.dataflows.track_hydration = self._hydration_on
        if self._operator_hydration is not None:
            self._operator_hydration.set_enabled(self._hydration_on)
        if config == self.logging:
            return
        self.logging = config
        if self.writer is not None:
            self.writer.stop()
            self.writer = None
        interval_ms = int((config or {}).get("interval_ms", 0))
        if interval_ms <= 0:
            self.engine.live_logs = None
            return
        self.engine.live_logs = lambda: live_table(self.logs.contents())
        listener = self._spark_listener()
        drain = listener.drain if listener is not None else None
        shard_id = (config or {}).get("shard_id")
        loop = asyncio.get_running_loop()
        self.writer = IntrospectionWriter(self.logs, self.dataflows.store, str(shard_id) if shard_id else None,
                                          incarnation, interval_ms / 1000, drain,
                                          every_interval=lambda: self.metrics.read_jvm(self.engine.spark),
                                          on_fenced=lambda why: loop.call_soon_threadsafe(self._fenced, why))
        self.writer.start()

    def _spark_listener(self) -> Any:
        """The replica's one Spark listener (introspection and hydration read it), or None."""
        if self._listener is None:
            try:
                from weir.compute.replica.spark_listener import SparkListenerHandle

                self._listener = SparkListenerHandle.install(self.engine.spark)
            except Exception:  # noqa: BLE001 - introspection must never stop the replica
                log.exception("could not install the Spark listener; operator introspection is off")
                self._listener = False
        return self._listener or None

    def _hydration(self) -> Any:
        """Per plan node hydration tracking (started with the first dataflow), or None."""
        if not self._hydration_on:
            return None
        if self._operator_hydration is None:
            listener = self._spark_listener()
            if listener is None:
                return None
            from weir.compute.replica.hydration import OperatorHydration

            loop = asyncio.get_running_loop()
            self._operator_hydration = OperatorHydration(
                listener, lambda: dict(self.dataflows.dataflows),
                lambda body: loop.call_soon_threadsafe(self._send_current, body))
        return self._operator_hydration

    def _send_current(self, body: dict[str, Any]) -> None:
        """Send on the current controller connection, if any (dataflow responses)."""
        conn = self.conn
        if conn is not None and not conn.out.closed:
            conn.out.send_nowait(body)

    # -- peeks ------------------------------------------------------------

    def _cancel(self, peek: _Peek) -> None:
        if peek.canceled:
            return
        peek.canceled = True
        asyncio.get_running_loop().create_task(self._cancel_jobs(peek))

    async def _cancel_jobs(self, peek: _Peek) -> None:
        """Cancel until the peek's thread returns: a job may start after a cancel."""
        loop = asyncio.get_running_loop()
        while not peek.done.is_set():
            try:
                await loop.run_in_executor(self.cancel_pool, self.engine.cancel, peek.tag)
            except Exception as e:  # the session may be shutting down
                log.debug("cancel %s: %s", peek.peek_id, e)
            try:
                await asyncio.wait_for(peek.done.wait(), CANCEL_RETRY_INTERVAL)
            except TimeoutError:
                pass

    async def _peek(self, conn: _Connection, body: dict[str, Any]) -> None:
        peek_id = str(body.get("peek_id"))
        peek = _Peek(peek_id, f"weir-peek-{uuid.uuid4().hex}")
        conn.peeks[peek_id] = peek
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        inputs = body.get("inputs") or []
        # a read of introspection itself is only introspected with INTROSPECTION DEBUGGING
        own = bool(inputs) and all(str(i.get("name", "")).startswith("weir_introspection_") for i in inputs)
        self.logs.peek_started(peek_id, peek.tag, _peek_object(body), "index" if body.get("index") else "persist",
                               int(body.get("timestamp") or 0),
                               record=not own or bool((self.logging or {}).get("debugging")))
        try:
            try:
                if body.get("index") is not None:  # fast path: from the arrangement, no Spark job
                    table = await loop.run_in_executor(self.fast_pool, self.dataflows.index_peek,
                                                       body, FAST_PATH_WAIT)
                else:
                    table = await loop.run_in_executor(
                        self.pool, self.engine.peek, peek.tag, str(body.get("sql", "")),
                        list(body.get("inputs") or []), body.get("timestamp"))
            except Exception as e:
                peek.done.set()
                if await loop.run_in_executor(self.cancel_pool, self.engine.jvm_gone, e):
                    # Not the query's answer: the controller retries on another replica / life.
                    self._fatal("the Spark JVM died while running peek " + peek_id)
                    return
                if peek.canceled:
                    await conn.out.send({"type": P.PEEK_RESPONSE, "peek_id": peek_id,
                                         "status": "canceled"})
                else:
                    err = translate(e)
                    log.info("peek %s failed: %s", peek_id, err)
                    await conn.out.send({"type": P.PEEK_RESPONSE, "peek_id": peek_id,
                                         "status": "error", "error": error_fields(err)})
                return
            peek.done.set()
            if peek.canceled:
                await conn.out.send({"type": P.PEEK_RESPONSE, "peek_id": peek_id,
                                     "status": "canceled"})
                return
            await self._send_rows(conn, peek, table)
            log.info("peek %s: %d rows in %.3fs%s", peek_id, table.num_rows, time.monotonic() - started,
                     " (fast path)" if body.get("index") is not None else "")
        except (ConnectionError, RuntimeError) as e:
            log.info("peek %s: connection lost while answering: %s", peek_id, e)
        finally:
            peek.done.set()
            conn.peeks.pop(peek_id, None)
            self.logs.peek_finished(peek_id)

    async def _send_rows(self, conn: _Connection, peek: _Peek, table: pa.Table) -> None:
        await conn.out.send({"type": P.PEEK_RESPONSE, "peek_id": peek.peek_id, "status": "rows"},
                            [P.schema_to_ipc(table.schema)])
        sent = 0
        for batch in _batches(table):
            if peek.canceled:
                await conn.out.send({"type": P.PEEK_DONE, "peek_id": peek.peek_id,
                                     "row_count": sent, "canceled": True})
                return
            await conn.out.send({"type": P.PEEK_BATCH, "peek_id": peek.peek_id,
                                 "rows": batch.num_rows}, [P.batch_to_ipc(batch)])
            sent += batch.num_rows
        await conn.out.send({"type": P.PEEK_DONE, "peek_id": peek.peek_id, "row_count": sent})

    async def _describe(self, conn: _Connection, body: dict[str, Any]) -> None:
        request_id = body.get("request_id")
        loop = asyncio.get_running_loop()
        try:
            schema = await loop.run_in_executor(
                self.pool, self.engine.describe, f"weir-describe-{uuid.uuid4().hex}",
                str(body.get("sql", "")), list(body.get("inputs") or []))
        except Exception as e:
            await conn.out.send({"type": P.DESCRIBE_RESPONSE, "request_id": request_id,
                                 "status": "error", "error": error_fields(translate(e))})
            return
        await conn.out.send({"type": P.DESCRIBE_RESPONSE, "request_id": request_id,
                             "status": "ok"}, [P.schema_to_ipc(schema)])

    # -- lifecycle --------------------------------------------------------

    def _fenced(self, why: str) -> None:
        log.error("introspection %s: a newer incarnation of replica %s runs; this one stops",
                  why, self.replica_id)
        self.exit_code = FENCED_EXIT_CODE
        self.stopping.set()

    def _fatal(self, why: str) -> None:
        log.error("%s; stopping the replica", why)
        self.exit_code = JVM_DIED_EXIT_CODE
        self.stopping.set()

    async def heartbeats(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_INTERVAL)
            code = self.engine.jvm_exit_code()
            if code is not None:
                self._fatal(f"the Spark JVM exited with code {code}")
                return
            conn = self.conn
            if conn is None or conn.out.closed:
                continue
            self.heartbeat += 1
            try:
                await conn.out.send({
                    "type": P.STATUS, "replica_id": self.replica_id, "incarnation": self.incarnation,
                    "heartbeat": self.heartbeat, "time": time.time(), "pid": os.getpid(),
                    "ui_url": self.engine.ui_url, "active_peeks": len(conn.peeks),
                    "dataflows": self.dataflows.status(),
                    "introspection": self.writer.status() if self.writer is not None else None,
                    "metrics": self.metrics.sample(),
                    "uptime_s": round(time.monotonic() - self.started, 3)})
            except (ConnectionError, RuntimeError):
                pass
            except Exception:
                log.exception("heartbeat failed")

    async def serve(self, host: str, port: int, exit_on_stdin_eof: bool = False) -> None:
        server = await asyncio.start_server(self.on_connection, host, port)
        bound = server.sockets[0].getsockname()
        print(f"WEIR_REPLICA_LISTENING {bound[0]} {bound[1]}", flush=True)
        log.info("replica %s listening on %s:%s (Spark UI %s)", self.replica_id, bound[0],
                 bound[1], self.engine.ui_url)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stopping.set)
        tasks = [asyncio.create_task(self.heartbeats())]
        if exit_on_stdin_eof:
            _watch_stdin(loop, self.stopping)
        try:
            await self.stopping.wait()
        finally:
            log.info("replica %s stopping", self.replica_id)
            server.close()
            if self.conn is not None:
                self._close(self.conn)
            for t in tasks:
                t.cancel()
            if self.exit_code == 0:
                try:
                    await asyncio.wait_for(self.dataflows.stop_all(), 15)
                except Exception as e:
                    log.warning("stopping dataflows: %s", e)
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.fast_pool.shutdown(wait=False, cancel_futures=True)


def _peek_object(body: dict[str, Any]) -> str:
    """What a peek reads, for mz_active_peeks: its index, else its first input's shard."""
    if body.get("index") is not None:
        return str(body["index"])
    inputs = body.get("inputs") or []
    return str(inputs[0].get("index") or str(inputs[0].get("name", "")).removeprefix("weir_")) if inputs else ""


def _batches(table: pa.Table) -> list[pa.RecordBatch]:
    """The table in batches of at most BATCH_ROWS rows, small chunks merged."""
    if table.num_rows == 0:
        return []
    if table.num_rows <= P.BATCH_ROWS or len(table.to_batches()) > table.num_rows // P.BATCH_ROWS + 1:
        table = table.combine_chunks()
    return [b for b in table.to_batches(max_chunksize=P.BATCH_ROWS) if b.num_rows]


def _watch_stdin(loop: asyncio.AbstractEventLoop, stopping: asyncio.Event) -> None:
    """Stop when the process that started us goes away (its end of our stdin closes)."""

    def wait_eof() -> None:
        try:
            while sys.stdin.buffer.read(65536):
                pass
        except (OSError, ValueError):
            pass
        try:
            loop.call_soon_threadsafe(stopping.set)
            log.info("stdin closed: the orchestrator is gone")
        except RuntimeError:  # the loop already finished: we are exiting anyway
            pass

    threading.Thread(target=wait_eof, name="stdin-watch", daemon=True).start()


def _parse_listen(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return host or "127.0.0.1", int(port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m weir.compute.replica")
    parser.add_argument("--listen", default="127.0.0.1:0", help="host:port to listen on")
    parser.add_argument("--replica-id", required=True)
    parser.add_argument("--size", default="1")
    parser.add_argument("--incarnation", type=int, default=0)
    parser.add_argument("--config", default=None, help="JSON: sizes, spark_conf, log_level")
    parser.add_argument("--exit-on-stdin-eof", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = json.loads(args.config) if args.config else {}
    try:
        size = resolve_size(args.size, config)
        host, port = _parse_listen(args.listen)
    except (WeirError, ValueError) as e:
        print(f"weir replica: {e}", file=sys.stderr)
        return 2
    engine = SparkEngine(size, config)
    class_archive.build_in_background()  # the next start of a replica is twice as fast
    replica = Replica(args.replica_id, size, engine, args.incarnation,
                      peek_threads=int(config.get("peek_threads", 4)))
    try:
        asyncio.run(replica.serve(host, port, args.exit_on_stdin_eof))
    finally:
        if replica.exit_code == 0:
            try:
                engine.stop()
            except Exception as e:
                log.warning("stopping Spark: %s", e)
    if replica.exit_code:
        # py4j's threads would keep a process whose JVM is gone from exiting.
        logging.shutdown()
        os._exit(replica.exit_code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
