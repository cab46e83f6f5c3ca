"""Framing of the compute protocol, Arrow payloads, sizes and error translation (no Spark)."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pyarrow as pa
import pytest

from weir.compute import protocol as P
from weir.compute.replica.engine import query_expr, stored_ddl
from weir.compute.replica.errors import clean_message, translate
from weir.compute.sizes import resolve_size
from weir.errors import WeirError
from weir.types import parse_type


def _reader(data: bytes, chunk: int | None = None) -> asyncio.StreamReader:
    """A StreamReader holding `data` (call inside a running loop)."""
    reader = asyncio.StreamReader()
    step = chunk or max(1, len(data))
    for i in range(0, len(data), step):
        reader.feed_data(data[i:i + step])
    reader.feed_eof()
    return reader


def _run(make: Any) -> Any:
    """Run `make()` (a coroutine function) in a fresh loop."""

    async def main() -> Any:
        return await make()

    return asyncio.run(main())


def test_frame_layout() -> None:
    frame = P.encode_frame(P.KIND_JSON, b'{"type":"Ping"}')
    (length,) = struct.unpack(">I", frame[:4])
    assert length == len(frame) - 4
    assert frame[4:5] == b"J"
    assert frame[5:] == b'{"type":"Ping"}'


def test_message_roundtrip_with_attachments_in_small_chunks() -> None:
    schema = pa.schema([("a", pa.int32()), ("b", pa.string())])
    batch = pa.record_batch([pa.array([1, 2]), pa.array(["x", None])], schema=schema)
    data = (P.encode_message({"type": "PeekResponse", "peek_id": "1", "status": "rows"},
                             [P.schema_to_ipc(schema)])
            + P.encode_message({"type": "PeekBatch", "peek_id": "1", "rows": 2},
                               [P.batch_to_ipc(batch)])
            + P.encode_message({"type": "PeekDone", "peek_id": "1", "row_count": 2}))

    async def read_all() -> list[P.Message]:
        reader = _reader(data, chunk=3)
        out = []
        while (msg := await P.read_message(reader)) is not None:
            out.append(msg)
        return out

    msgs = _run(read_all)
    assert [m.type for m in msgs] == ["PeekResponse", "PeekBatch", "PeekDone"]
    assert msgs[0].body["attachments"] == 1
    got_schema = P.schema_from_ipc(msgs[0].attachments[0])
    assert got_schema == schema
    got = P.batch_from_ipc(msgs[1].attachments[0], got_schema)
    assert got.to_pylist() == [{"a": 1, "b": "x"}, {"a": 2, "b": None}]
    assert msgs[2].attachments == []


def test_arrow_frames_concatenate_to_an_ipc_stream() -> None:
    schema = pa.schema([("x", pa.int64())])
    batches = [pa.record_batch([pa.array(range(i, i + 3))], schema=schema) for i in (0, 3)]
    stream = P.schema_to_ipc(schema) + b"".join(P.batch_to_ipc(b) for b in batches) + P.IPC_EOS
    table = pa.ipc.open_stream(stream).read_all()
    assert table.column("x").to_pylist() == list(range(6))


def test_clean_eof_and_truncation() -> None:
    assert _run(lambda: P.read_message(_reader(b""))) is None
    frame = P.encode_message({"type": "Ping"})
    with pytest.raises(P.ProtocolError):
        _run(lambda: P.read_message(_reader(frame[:2])))
    with pytest.raises(P.ProtocolError):
        _run(lambda: P.read_message(_reader(frame[:-1])))


def test_bad_frames() -> None:
    with pytest.raises(P.ProtocolError):  # unknown kind
        _run(lambda: P.read_frame(_reader(struct.pack(">I", 2) + b"X{")))
    with pytest.raises(P.ProtocolError):  # zero length
        _run(lambda: P.read_frame(_reader(struct.pack(">I", 0))))
    with pytest.raises(P.ProtocolError):  # absurd length
        _run(lambda: P.read_frame(_reader(struct.pack(">I", P.MAX_FRAME + 1) + b"J")))
    with pytest.raises(P.ProtocolError):  # Arrow frame nobody announced
        _run(lambda: P.read_message(_reader(P.encode_frame(P.KIND_ARROW, b"xx"))))
    with pytest.raises(P.ProtocolError):  # JSON without a type
        _run(lambda: P.read_message(_reader(P.encode_frame(P.KIND_JSON, b'{"a":1}'))))
    with pytest.raises(P.ProtocolError):  # not JSON
        _run(lambda: P.read_message(_reader(P.encode_frame(P.KIND_JSON, b"\xff"))))
    announced = P.encode_frame(P.KIND_JSON, b'{"type":"PeekBatch","attachments":1}')
    with pytest.raises(P.ProtocolError):  # announced attachment missing
        _run(lambda: P.read_message(_reader(announced + P.encode_message({"type": "Ping"}))))
    with pytest.raises(ValueError):
        P.encode_message({"no": "type"})


def test_writer_sends_whole_messages() -> None:
    async def scenario() -> list[P.Message]:
        received: list[P.Message] = []
        done = asyncio.Event()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while (msg := await P.read_message(reader)) is not None:
                received.append(msg)
            writer.close()
            done.set()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        out = P.MessageWriter(writer)
        blob = b"\x00" * 200_000
        await asyncio.gather(*(out.send({"type": "PeekBatch", "n": i}, [blob]) for i in range(20)))
        out.send_nowait({"type": "Ping"})
        out.close()
        await asyncio.wait_for(done.wait(), 10)
        server.close()
        return received

    msgs = _run(scenario)
    assert sorted(m.body["n"] for m in msgs[:-1]) == list(range(20))
    assert all(len(m.attachments[0]) == 200_000 for m in msgs[:-1])
    assert msgs[-1].type == "Ping"


def test_sizes() -> None:
    assert resolve_size("1").master == "local[1]"
    assert resolve_size("4").driver_memory == "4g"
    with pytest.raises(WeirError) as e:
        resolve_size("xl")
    assert e.value.sqlstate == "22023" and "'1', '2', '4'" in e.value.message
    custom = resolve_size("big", {"sizes": {"big": {"master": "spark://h:7077", "workers": 8}}})
    assert custom.master == "spark://h:7077" and not custom.is_local


def test_stored_types_cast_back() -> None:
    assert stored_ddl(parse_type("smallint")) == "INT"
    assert stored_ddl(parse_type("interval")) == "STRUCT<months: INT, days: INT, micros: BIGINT>"
    assert stored_ddl(parse_type("smallint[]")) == "ARRAY<INT>"
    assert stored_ddl(parse_type("numeric(10,2)")) == "DECIMAL(10,2)"
    assert query_expr("`s`", parse_type("smallint")) == "CAST(`s` AS SMALLINT)"
    assert query_expr("`i`", parse_type("interval")) == "`i`"
    assert query_expr("`t`", parse_type("text[]")) == "`t`"
    assert query_expr("`a`", parse_type("smallint[]")).startswith("transform(`a`")


class _FakeSparkError(Exception):
    def __init__(self, condition: str, state: str, params: dict[str, str], message: str) -> None:
        super().__init__(message)
        self._c, self._s, self._p, self._m = condition, state, params, message

    def getCondition(self) -> str:  # noqa: N802 - PySpark's name
        return self._c

    def getSqlState(self) -> str:  # noqa: N802
        return self._s

    def getMessageParameters(self) -> dict[str, str]:  # noqa: N802
        return self._p

    def getMessage(self) -> str:  # noqa: N802
        return self._m


@pytest.mark.parametrize(("condition", "state", "params", "sqlstate", "message"), [
    ("DIVIDE_BY_ZERO", "22012", {}, "22012", "division by zero"),
    ("UNRESOLVED_COLUMN.WITH_SUGGESTION", "42703", {"objectName": "`foo`", "proposal": "`id`"},
     "42703", 'column "foo" does not exist'),
    ("TABLE_OR_VIEW_NOT_FOUND", "42P01", {"relationName": "`nosuch`"}, "42P01",
     "unknown catalog item 'nosuch'"),
    ("PARSE_SYNTAX_ERROR", "42601", {"error": "'selec'"}, "42601",
     'syntax error at or near "selec"'),
    ("CAST_INVALID_INPUT", "22018", {"expression": "'x'", "targetType": '"INT"'}, "22P02",
     'invalid input syntax for type integer: "x"'),
    ("CAST_INVALID_INPUT", "22018", {"expression": "'x'", "targetType": '"DATE"'}, "22007",
     'invalid input syntax for type date: "x"'),
    ("DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", "42K09", {}, "42804", "Cannot resolve x"),
    ("ARITHMETIC_OVERFLOW", "22003", {"message": "integer overflow"}, "22003",
     "integer out of range"),
    ("AMBIGUOUS_REFERENCE", "42704", {"name": "`id`"}, "42702",
     'column reference "id" is ambiguous'),
    ("SOME_NEW_THING", "42K99", {}, "42000", "Something new"),
    ("COLLECTION_SIZE_LIMIT_EXCEEDED.PARAMETER", "54000",
     {"numberOfElements": "9223372036854775807", "maxRoundedArrayLength": "2147483632",
      "parameter": "`count`", "functionName": "`sequence`"}, "54000",
     "cannot build a series or array of 9223372036854775807 elements: the limit is 2147483632"),
])
def test_translate_conditions(condition: str, state: str, params: dict[str, str],
                              sqlstate: str, message: str) -> None:
    text = f"[{condition}] {message if condition == 'SOME_NEW_THING' else 'Cannot resolve x'}. SQLSTATE: {state}"
    err = translate(_FakeSparkError(condition, state, params, text))
    assert (err.sqlstate, err.message) == (sqlstate, message)


def test_translate_unknown_and_clean() -> None:
    err = translate(RuntimeError("boom\n\tat org.apache.Foo"))
    # issue 10 part 3: an unexpected exception's text never reaches the client (it is logged)
    assert err.sqlstate == "XX000" and "boom" not in err.message and "org.apache" not in err.message
    assert err.detail is None and err.hint is None
    assert clean_message(
        "[DIVIDE_BY_ZERO] Division by zero. Use `try_divide` to tolerate divisor being 0 and "
        'return NULL instead. If necessary set "spark.sql.ansi.enabled" to "false" to bypass '
        "this error. SQLSTATE: 22012\n== SQL (line 1, position 8) ==\nselect 1/0"
    ) == "Division by zero"
