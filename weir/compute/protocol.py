"""The compute protocol: how the compute controller and a replica talk.

Transport
=========
A plain TCP stream (asyncio streams on both ends), so a replica can live on
another machine. Nothing is pickled: every frame is either JSON or Arrow IPC.

Each frame is::

    +----------------+--------+-----------------------+
    | length: u32 BE | kind   | payload               |
    | (kind+payload) | 1 byte | length - 1 bytes      |
    +----------------+--------+-----------------------+

- kind ``b"J"``: a UTF-8 JSON object with a string field ``"type"``: a message.
- kind ``b"A"``: Arrow IPC bytes attached to the JSON message right before it.
  A message that carries Arrow frames says how many in ``"attachments": n``
  (absent = 0); exactly that many ``A`` frames follow it, with no other frame
  in between. Arrow payloads are IPC *encapsulated messages*: a schema
  (``pa.Schema.serialize()``) or one record batch (``RecordBatch.serialize()``),
  never dictionary-encoded. Concatenating a peek's schema frame, its batch
  frames and an end-of-stream marker gives a valid Arrow IPC stream.

Frames larger than ``MAX_FRAME`` are a protocol error (both sides close).

Connection
==========
The replica listens; the controller connects. The replica speaks first with
``Hello``; the controller answers ``CreateInstance``; the replica confirms with
``InstanceCreated``. A replica serves one controller connection at a time: a
new connection replaces (closes) the old one and cancels its peeks.

Commands (controller -> replica)
================================
- ``CreateInstance{replica_id, incarnation, logging?, storage?, writer_epoch?}``:
  binds the connection to one incarnation of the replica. An incarnation lower
  than one already seen is refused with ``Error`` (a zombie controller) and the
  socket closed. ``storage: {"catalog_uri", "warehouse"}`` is where the shards
  live (the replica opens its own ShardStore on them); ``writer_epoch`` is the
  epoch its dataflows' appends carry (default: the incarnation).
  ``logging: {"interval_ms", "debugging", "shard_id"}`` (weir.compute.introspection):
  with ``interval_ms`` > 0 the replica collects its introspection logs (from Spark's
  listener events and its own bookkeeping) every interval; with a ``shard_id`` (this
  replica's own: the controller specialises CreateInstance per replica) it also appends
  them there, all logs in one append per interval, with its incarnation as writer epoch,
  first retracting what earlier incarnations left. The same ``logging`` again changes
  nothing; another replaces the previous one.
- ``Peek{peek_id, sql, inputs, timestamp}``: run ``sql`` (Spark SQL) over
  ``inputs`` and return the rows. ``inputs`` is a list of collections::

      {"name": "weir_u1",               # temp view the SQL refers to
       "files": ["/abs/a.parquet"],     # Parquet data files of the update log
       "columns": [{"name": "a", "pg_type": "integer", "nullable": true}],
       "as_of": 1700000000000,          # read the contents at this time
       "consolidate": true}             # sum diffs (false: every row is +1)

  The data files hold the columns (in their stored types: smallint as int32,
  interval as int64 microseconds) plus ``mz_timestamp`` and ``mz_diff``
  (int64). ``as_of`` defaults to the peek's ``timestamp``.
- ``CancelPeek{peek_id}``: stop the peek's Spark jobs; unknown ids are ignored.
- ``Describe{request_id, sql, inputs}``: the result schema, by analysis only.
- ``Ping{nonce?}``: answered by ``Pong{nonce?}``.
- ``CreateDataflow{dataflow_id, sql, inputs, output: {shard_id}, as_of, strategy}``:
  maintain a materialized view (see weir.compute.replica.dataflow). ``sql`` is Spark
  SQL over temp views; ``inputs`` is a list of
  ``{"name": "weir_u3", "shard_id": "u3", "columns"?: [{"name", ...}]}`` (the
  shard's columns, renamed to ``columns``' names if given). The output shard
  has the query's columns in order. ``strategy``: ``"recompute"`` (any query),
  ``"linear"`` (filters, projections, maps, UNION ALL), ``"reduce"`` (GROUP BY with
  count / sum over a linear query or an equi-join) or ``"join"`` (equi-joins,
  inner or outer, of any number of inputs, then linear operators); each falls back to
  recompute when the query is not of its shape. ``thresholds_sql`` (optional): the view has a
  temporal filter (weir.sql.temporal); ``sql`` takes the named parameter
  ``:weir_mz_now`` (the time computed) and ``thresholds_sql``, over the same inputs,
  selects the times (column ``weir_flip``) at which its rows' comparisons with
  mz_now() flip (weir.compute.replica.temporal). Answered by ``DataflowCreated`` or, if
  the query cannot run, ``DataflowError{at: "create"}``. Idempotent for the
  same definition (a controller replaying it after a reconnection). ``since``
  (optional): the AllowCompaction in force, so that an index keeps the history
  it is asked for from its first step.
  ``name`` (optional): the maintained object's name; the replica's introspection
  names the dataflow after it (``Dataflow: materialize.public.mv``).
  ``plan_nodes`` (optional): ``[[plan_node_id, operator, parent_id], ...]``, the
  plan pinned when the dataflow was first created (weir.compute.replica.plan_ids);
  without it the replica explains the query and pins it itself.
  ``row_counts`` (optional): ``[[plan_node_id, [rows on worker 0, 1, ...]], ...]``, what
  each plan node produced in the dataflow's last completed hydration (on any replica,
  kept in the catalog across server restarts): the replica's expectation for the nodes
  it cannot size exactly, unless it hydrated the dataflow itself since.
  ``output.errors_shard_id`` (optional): the view's errors shard
  (weir.storage.error_shards). With it, a *data* error of the query (SQLSTATE
  class 22 or P0, weir.errors.is_data_error) is not retried: the dataflow
  appends the error at the time it occurred there (before the output's append
  of that interval, and only when the errors change), leaves the output as it
  was, advances the frontier, and retracts the error at the first time the
  query computes cleanly again (weir.compute.replica.dataflow_errors). An index
  keeps its errors in memory: a ``Peek`` of it at a time it errs answers
  ``status: "error"`` with that error.
- ``DropDataflow{dataflow_id}``: stop it; answered by ``DataflowDropped``
  once its thread and Spark jobs have stopped (also for unknown ids).
- ``AllowCompaction{dataflow_id, since}``: the controller will not need the
  dataflow's results before ``since`` (monotonic). A materialized view records
  it (the output shard's since is the coordinator's to downgrade); an index keeps
  its arrangement's updates from ``since`` on (and at least its last 10 s), so
  peeks read any time from there; a replayed index dataflow hydrates at ``since``.
- ``UpdateInputFrontiers{uppers: {shard_id: upper}}``: the uppers of input
  shards as the coordinator knows them (ahead of the durable ones). A dataflow
  computes times below min over its inputs of max(announced, durable upper).
- ``SetWriterEpoch{epoch}``: a newer writer epoch for appends (monotonic; a
  dataflow fenced by a higher epoch waits for one).
- ``UpdateLogging{logging}``: CreateInstance's ``logging`` changed (ALTER CLUSTER ...
  SET (INTROSPECTION INTERVAL ...)): the replica collects and writes as it now says.
- Reserved, answered with ``Error{sqlstate: "0A000"}`` for now: ``Subscribe``.

Responses (replica -> controller)
=================================
- ``Hello{protocol, replica_id, pid, size, workers, spark_version, ui_url,
  incarnation}``: sent on accept.
- ``InstanceCreated{replica_id, incarnation}``.
- ``PeekResponse{peek_id, status, error?}`` with ``status`` one of:

  - ``"rows"``: ``attachments: 1``, the Arrow schema of the result. Then zero
    or more ``PeekBatch{peek_id, rows, attachments: 1}`` (one record batch
    each, at most ``BATCH_ROWS`` rows), then ``PeekDone{peek_id, row_count}``.
    A peek canceled while its rows are being sent ends with
    ``PeekDone{peek_id, row_count, canceled: true}``.
  - ``"error"``: ``error: {sqlstate, message, detail, hint}``.
  - ``"canceled"``: the peek was canceled before it produced rows.

  Every peek gets exactly one ``PeekResponse``. Batches of concurrent peeks
  may interleave; each ``PeekBatch`` names its peek.
- ``DescribeResponse{request_id, status: "ok"|"error", error?}``; ``"ok"``
  carries ``attachments: 1``: the Arrow schema.
- ``Status{replica_id, incarnation, heartbeat, time, pid, ui_url,
  active_peeks, dataflows, uptime_s}``: a heartbeat, once a second;
  ``dataflows`` maps each dataflow id to ``{write_frontier, strategy,
  appended, lost, kept, followed, computed}`` (see weir.compute.replica.dataflow);
  an index's adds ``history_bytes`` (memory of the updates its arrangement keeps
  for reads before its upper), ``held_bytes`` (of those, the ones older than the
  last 10 s: what only its since keeps), ``history_floor`` (the earliest time it reads) and
  ``records`` (distinct rows).
- ``Error{sqlstate, message, detail?, in_reply_to?}``: a command the replica
  could not understand or refuses.
- ``DataflowCreated{dataflow_id, strategy, columns, plan_nodes}``: the strategy it
  runs with, the query's column names and its pinned plan (as in CreateDataflow;
  null if Spark could not explain it).
- ``HydrationStatus{dataflow_id, updates: [[plan_node_id, worker_id, hydrated, rows,
  rows_expected, bytes, started_ms, finished_ms], ...], reset?}``: per plan node and
  worker, what changed in the dataflow's hydration on this replica and how far it is
  (weir.compute.replica.hydration_progress: ``rows_expected`` null where unknown, times
  in unix ms or null); ``reset``: forget what was sent before; ``final``: this update
  completes a hydration that ran the query, so the rows every (node, worker) now has are
  its final counts (the controller keeps them for CreateDataflow's ``row_counts``).
- ``Frontiers{dataflow_id, write_frontier, hydrated, error_count?}``: the output
  shard's upper as this replica last saw it, sent whenever it advances (by this
  replica's append or another's). ``error_count``: how many runtime errors the
  export holds at that frontier (absent when this replica does not know without
  reading storage, e.g. right after following another replica's append).
- ``DataflowError{dataflow_id, sqlstate, message, detail?, hint?, at}``:
  ``at: "create"`` (refused; not installed) or ``"run"`` (a step failed for a
  reason other than its data, e.g. storage; it is retried with backoff; sent
  again only when the error changes).
- ``DataflowDropped{dataflow_id}``.
- Reserved for later: ``SubscribeResponse``.
"""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

PROTOCOL_VERSION = 1
KIND_JSON = b"J"
KIND_ARROW = b"A"
MAX_FRAME = 1 << 30
BATCH_ROWS = 65536
_HEADER = struct.Struct(">I")
# Arrow IPC end-of-stream marker: continuation token + zero length.
IPC_EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"

# Commands.
CREATE_INSTANCE = "CreateInstance"
PEEK = "Peek"
CANCEL_PEEK = "CancelPeek"
DESCRIBE = "Describe"
PING = "Ping"
CREATE_DATAFLOW = "CreateDataflow"
# CreateDataflow's temporal filter: the parameter mz_now() is in `sql`, the column of
# `thresholds_sql` that holds the flip times
MZ_NOW_PARAMETER = "weir_mz_now"
FLIP_COLUMN = "weir_flip"
DROP_DATAFLOW = "DropDataflow"
ALLOW_COMPACTION = "AllowCompaction"
UPDATE_INPUT_FRONTIERS = "UpdateInputFrontiers"
SET_WRITER_EPOCH = "SetWriterEpoch"
UPDATE_LOGGING = "UpdateLogging"
RESERVED_COMMANDS = frozenset({"Subscribe"})

# Responses.
HELLO = "Hello"
INSTANCE_CREATED = "InstanceCreated"
PEEK_RESPONSE = "PeekResponse"
PEEK_BATCH = "PeekBatch"
PEEK_DONE = "PeekDone"
DESCRIBE_RESPONSE = "DescribeResponse"
STATUS = "Status"
PONG = "Pong"
ERROR = "Error"
DATAFLOW_CREATED = "DataflowCreated"
DATAFLOW_DROPPED = "DataflowDropped"
DATAFLOW_ERROR = "DataflowError"
HYDRATION_STATUS = "HydrationStatus"
FRONTIERS = "Frontiers"


@dataclass(frozen=True)
class HydrationProgress:
    """One plan node on one worker, as a HydrationStatus update carries it: times in unix
    milliseconds, `expected` None where the replica knows no honest figure."""

    hydrated: bool
    rows: int = 0
    expected: int | None = None
    bytes: int = 0
    started_ms: int | None = None
    finished_ms: int | None = None

    def wire(self, node: int, worker: int) -> list[Any]:
        return [node, worker, self.hydrated, self.rows, self.expected, self.bytes,
                self.started_ms, self.finished_ms]

    @classmethod
    def from_wire(cls, update: Sequence[Any]) -> tuple[tuple[int, int], HydrationProgress]:
        node, worker, hydrated, *rest = update  # a status alone is [node, worker, hydrated]
        rows, expected, nbytes, started, finished = (list(rest) + [0, None, 0, None, None][len(rest):])[:5]
        return (int(node), int(worker)), cls(bool(hydrated), int(rows or 0), None if expected is None else int(expected),
                                             int(nbytes or 0), None if started is None else int(started),
                                             None if finished is None else int(finished))


RowCounts = dict[int, list[int]]  # plan node id -> rows it produced on worker 0, 1, ...


def row_counts(progress: Mapping[tuple[int, int], HydrationProgress]) -> RowCounts:
    """Each plan node's rows per worker (a worker without a report: 0)."""
    out: RowCounts = {}
    for (node, worker), p in progress.items():
        rows = out.setdefault(node, [])
        rows.extend([0] * (worker + 1 - len(rows)))
        rows[worker] = p.rows
    return out


def row_counts_to_wire(counts: Mapping[int, Sequence[int]]) -> list[list[Any]]:
    return [[node, list(rows)] for node, rows in sorted(counts.items())]


def row_counts_from_wire(raw: Any) -> RowCounts:
    """CreateDataflow's `row_counts` (absent or malformed: none)."""
    try:
        return {int(node): [int(r) for r in rows] for node, rows in raw or ()}
    except (TypeError, ValueError):
        return {}


class ProtocolError(Exception):
    """The peer sent something that is not valid compute protocol."""


@dataclass
class Message:
    """A JSON message with the Arrow frames attached to it."""

    body: dict[str, Any]
    attachments: list[bytes] = field(default_factory=list)

    @property
    def type(self) -> str:
        return str(self.body["type"])


def encode_frame(kind: bytes, payload: bytes) -> bytes:
    if kind not in (KIND_JSON, KIND_ARROW):
        raise ValueError(f"unknown frame kind {kind!r}")
    length = len(payload) + 1
    if length > MAX_FRAME:
        raise ProtocolError(f"frame of {length} bytes exceeds the {MAX_FRAME} byte limit")
    return _HEADER.pack(length) + kind + payload


def encode_message(body: dict[str, Any], attachments: Sequence[bytes] = ()) -> bytes:
    """The frames of one message: its JSON frame then its Arrow frames."""
    if not isinstance(body.get("type"), str):
        raise ValueError("a message needs a string 'type'")
    if attachments or "attachments" in body:
        body = {**body, "attachments": len(attachments)}
    out = [encode_frame(KIND_JSON, json.dumps(body, separators=(",", ":")).encode())]
    out.extend(encode_frame(KIND_ARROW, bytes(a)) for a in attachments)
    return b"".join(out)


def decode_json(payload: bytes) -> dict[str, Any]:
    try:
        body = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProtocolError(f"invalid JSON frame: {e}") from None
    if not isinstance(body, dict) or not isinstance(body.get("type"), str):
        raise ProtocolError("a JSON frame must be an object with a string 'type'")
    return body


async def read_frame(reader: asyncio.StreamReader) -> tuple[bytes, bytes] | None:
    """The next (kind, payload), or None at a clean end of stream."""
    try:
        header = await reader.readexactly(_HEADER.size)
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise ProtocolError("connection closed inside a frame header") from None
    (length,) = _HEADER.unpack(header)
    if length < 1 or length > MAX_FRAME:
        raise ProtocolError(f"invalid frame length {length}")
    try:
        data = await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise ProtocolError("connection closed inside a frame") from None
    kind, payload = data[:1], data[1:]
    if kind not in (KIND_JSON, KIND_ARROW):
        raise ProtocolError(f"unknown frame kind {kind!r}")
    return kind, payload


async def read_message(reader: asyncio.StreamReader) -> Message | None:
    """The next message with its attachments, or None at end of stream."""
    frame = await read_frame(reader)
    if frame is None:
        return None
    kind, payload = frame
    if kind != KIND_JSON:
        raise ProtocolError("Arrow frame without a message announcing it")
    body = decode_json(payload)
    count = body.get("attachments", 0)
    if not isinstance(count, int) or count < 0:
        raise ProtocolError("'attachments' must be a non-negative integer")
    attachments: list[bytes] = []
    for _ in range(count):
        frame = await read_frame(reader)
        if frame is None:
            raise ProtocolError("connection closed before a message's Arrow frames")
        if frame[0] != KIND_ARROW:
            raise ProtocolError(f"expected {count} Arrow frames after {body['type']}")
        attachments.append(frame[1])
    return Message(body, attachments)


class MessageWriter:
    """Writes whole messages so frames of concurrent senders never interleave."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._lock = asyncio.Lock()

    def send_nowait(self, body: dict[str, Any], attachments: Sequence[bytes] = ()) -> None:
        """Queue a message without waiting for the peer (e.g. from a cancel path)."""
        if not self._writer.is_closing():
            self._writer.write(encode_message(body, attachments))

    async def send(self, body: dict[str, Any], attachments: Sequence[bytes] = ()) -> None:
        data = encode_message(body, attachments)
        async with self._lock:
            if self._writer.is_closing():
                raise ConnectionResetError("connection closed")
            self._writer.write(data)
            await self._writer.drain()

    def close(self) -> None:
        if not self._writer.is_closing():
            self._writer.close()

    @property
    def closed(self) -> bool:
        return self._writer.is_closing()


def schema_to_ipc(schema: pa.Schema) -> bytes:
    return schema.serialize().to_pybytes()


def schema_from_ipc(data: bytes) -> pa.Schema:
    try:
        return pa.ipc.read_schema(pa.py_buffer(data))
    except (pa.ArrowInvalid, OSError) as e:
        raise ProtocolError(f"invalid Arrow schema frame: {e}") from None


def batch_to_ipc(batch: pa.RecordBatch) -> bytes:
    return batch.serialize().to_pybytes()


def batch_from_ipc(data: bytes, schema: pa.Schema) -> pa.RecordBatch:
    try:
        return pa.ipc.read_record_batch(pa.py_buffer(data), schema)
    except (pa.ArrowInvalid, OSError) as e:
        raise ProtocolError(f"invalid Arrow record batch frame: {e}") from None


def error_body(sqlstate: str, message: str, detail: str | None = None,
               hint: str | None = None) -> dict[str, Any]:
    """The `error` object of PeekResponse / DescribeResponse."""
    return {"sqlstate": sqlstate, "message": message, "detail": detail, "hint": hint}
