"""An index's arrangement and the fast-path peeks it answers.

An arrangement is the indexed collection's contents, consolidated, in replica
memory: row -> multiplicity, bucketed by the index key so a lookup touches only
its key's rows. It also keeps the updates after its `since` (AllowCompaction: the
coordinator's holds on the index, or its RETAIN HISTORY), and at least those of the last
`RETAIN_MS`, so a peek can read any time in [floor, upper) by rewinding them: a peek at
the strict-serializable timestamp usually trails the upper by a little, and a read AS OF
a held time may be hours back. `history_bytes` is what that history costs in memory.

A fast-path peek (`FastPath`) is a lookup on the key, a filter, a projection,
ORDER BY and LIMIT/OFFSET, evaluated with pyarrow over the candidate rows: no
Spark job. Its filter arrives as a small JSON expression tree built by the
adapter (see `compile_filter`); anything pyarrow cannot evaluate exactly as SQL
would raises `NotFastPath`, and the adapter then runs the query on Spark.
"""

from __future__ import annotations

import decimal
import sys
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from weir.errors import SqlState, WeirError

RETAIN_MS = 10_000
TIME, DIFF = "mz_timestamp", "mz_diff"
Row = tuple[Any, ...]


class NotFastPath(WeirError):
    """The peek cannot be answered from the arrangement (yet); run it on Spark instead."""

    def __init__(self, message: str) -> None:
        super().__init__(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE, message, detail="not-fast-path")


def _hashable(v: Any) -> Any:
    """Lists and structs (an interval's {months, days, micros}) as tuples, which Arrow
    takes back for both."""
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    return tuple(_hashable(x) for x in v.values()) if isinstance(v, dict) else v


def _entry_bytes(row: Row) -> int:
    """Memory of one history entry: its (time, row, diff) tuple and the row's values
    (small ints and None are shared by the interpreter, counted anyway: an upper bound)."""
    return 96 + sys.getsizeof(row) + sum(sys.getsizeof(v) for v in row)


def arranged_rows(table: pa.Table, width: int) -> list[Row]:
    cols = [table.column(i).to_pylist() for i in range(width)]
    if any(pa.types.is_list(table.schema.field(i).type) or pa.types.is_struct(table.schema.field(i).type)
           for i in range(width)):
        cols = [[_hashable(v) for v in c] for c in cols]
    return list(zip(*cols, strict=True)) if cols else [()] * table.num_rows


class Arrangement:
    """Consolidated contents by key, plus recent history; every method is thread-safe."""

    def __init__(self, schema: pa.Schema, key_positions: Sequence[int], since: int | None = None) -> None:
        self.schema = schema
        self.key_positions = tuple(key_positions)
        self.buckets: dict[Row, dict[Row, int]] = {}
        self.history: deque[tuple[int, Row, int, int]] = deque()  # (time, row, diff, bytes)
        self.history_bytes = 0
        self.since = since  # history is kept from here (None: only the last RETAIN_MS)
        self.upper = 0  # 0: not hydrated
        self.floor = 0  # the earliest time a peek can read
        self.records = 0  # distinct rows held
        self.size_bytes = 0  # their memory (an upper bound, as _entry_bytes)
        self._cond = threading.Condition()

    @property
    def hydrated(self) -> bool:
        return self.upper > 0

    def _key(self, row: Row) -> Row:
        return tuple(row[i] for i in self.key_positions)

    def _add(self, row: Row, diff: int) -> None:
        bucket = self.buckets.setdefault(self._key(row), {})
        n = bucket.get(row, 0) + diff
        if n == 0:
            del bucket[row]
            self.records -= 1
            self.size_bytes -= _entry_bytes(row)
            if not bucket:
                del self.buckets[self._key(row)]
        else:
            if row not in bucket:
                self.records += 1
                self.size_bytes += _entry_bytes(row)
            bucket[row] = n

    # -- maintenance (the index dataflow's thread) ----------------------------------------

    def load(self, snapshot: pa.Table, as_of: int) -> None:
        """Hydrate: `snapshot` holds the contents at `as_of` (mz_diff = multiplicity)."""
        width = len(self.schema)
        diffs = snapshot.column(DIFF).to_pylist()
        with self._cond:
            self.buckets.clear()
            self.history.clear()
            self.history_bytes = 0
            self.records = 0
            self.size_bytes = 0
            for row, d in zip(arranged_rows(snapshot, width), diffs, strict=True):
                if d:
                    self._add(row, int(d))
            self.floor = as_of
            self.upper = as_of + 1
            self._cond.notify_all()

    def apply(self, updates: pa.Table, upper: int) -> None:
        """Updates at times in [self.upper, upper) (columns, mz_timestamp, mz_diff)."""
        width = len(self.schema)
        times = updates.column(TIME).to_pylist()
        diffs = updates.column(DIFF).to_pylist()
        with self._cond:
            for row, t, d in zip(arranged_rows(updates, width), times, diffs, strict=True):
                if d:
                    self._add(row, int(d))
                    self._remember(int(t), row, int(d))
            self._advance(upper)

    def apply_rows(self, changes: Iterable[tuple[Row, int]], time: int, upper: int) -> None:
        with self._cond:
            for row, d in changes:
                if d:
                    self._add(row, d)
                    self._remember(time, row, d)
            self._advance(upper)

    def _remember(self, time: int, row: Row, diff: int) -> None:
        size = _entry_bytes(row)
        self.history.append((time, row, diff, size))
        self.history_bytes += size

    def advance(self, upper: int) -> None:
        with self._cond:
            self._advance(upper)

    def allow_compaction(self, since: int) -> None:
        """Peeks will not read before `since`: history before it may go (monotonic)."""
        with self._cond:
            self.since = max(self.since or 0, since)
            self._advance(self.upper)

    def _advance(self, upper: int) -> None:
        self.upper = max(self.upper, upper)
        cutoff = self.upper - RETAIN_MS
        if self.since is not None:
            cutoff = min(cutoff, self.since)
        while self.history and self.history[0][0] < cutoff:
            self.history_bytes -= self.history.popleft()[3]
        self.floor = max(self.floor, min(cutoff, self.upper - 1))
        self._cond.notify_all()

    def held_bytes(self) -> int:
        """Memory of the history older than the last RETAIN_MS: what only the since keeps
        (counted from the recent end, which is short)."""
        with self._cond:
            recent, boundary = 0, self.upper - RETAIN_MS
            for t, _, _, size in reversed(self.history):
                if t < boundary:
                    break
                recent += size
            return self.history_bytes - recent

    def contents(self) -> dict[Row, int]:
        """Every row and its multiplicity at upper - 1."""
        with self._cond:
            return {r: n for b in self.buckets.values() for r, n in b.items()}

    # -- peeks (any thread) ------------------------------------------------------------------

    def wait_for(self, ts: int, timeout: float) -> bool:
        """Until the arrangement holds `ts` (upper > ts); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self.upper > ts, timeout)

    def rows_at(self, ts: int, keys: Iterable[Row] | None) -> list[Row]:
        """The rows at `ts` (each repeated by its multiplicity), all or those with `keys`."""
        with self._cond:
            if not self.floor <= ts < self.upper:
                raise NotFastPath(f"time {ts} is outside the arrangement's [{self.floor}, {self.upper})")
            if keys is None:
                counts = {r: n for b in self.buckets.values() for r, n in b.items()}
                wanted = None
            else:
                wanted = set(keys)
                counts = {}
                for k in wanted:
                    counts.update(self.buckets.get(k, {}))
            for t, row, d, _ in reversed(self.history):
                if t <= ts:
                    break
                if wanted is None or self._key(row) in wanted:
                    counts[row] = counts.get(row, 0) - d
        out: list[Row] = []
        for row, n in counts.items():
            out.extend([row] * n if n > 0 else [])
        return out


# ---- fast-path peeks --------------------------------------------------------------------

_COMPARISONS = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                "gt": "greater", "ge": "greater_equal"}


def _literal(value: Any, target: pa.DataType | None, number: bool = False) -> pa.Scalar:
    """`value` as a scalar of the column type it meets; a number never becomes text
    (text = 42 is an error in PostgreSQL, left to the slow path)."""
    if number and target is not None and (pa.types.is_string(target) or pa.types.is_binary(target)):
        raise NotFastPath(f"comparing {target} with a number")
    try:
        if target is not None and pa.types.is_decimal(target) and isinstance(value, (int, float, str)):
            return pa.scalar(decimal.Decimal(str(value)), type=target)  # raises if it does not fit
        scalar = pa.scalar(value)
        if target is not None and not scalar.type.equals(target):
            scalar = scalar.cast(target)
        return scalar
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError,
            decimal.InvalidOperation) as e:
        raise NotFastPath(f"literal {value!r} does not convert exactly: {e}") from None


def _column_type(node: Mapping[str, Any], schema: pa.Schema) -> pa.DataType | None:
    return schema.field(int(node["col"])).type if "col" in node else None


def compile_filter(node: Mapping[str, Any], schema: pa.Schema) -> pc.Expression:
    """The pyarrow expression of a filter tree over columns named c0, c1, ...

    Nodes: {"col": i}, {"lit": v}, {"op": eq|ne|lt|le|gt|ge, "args": [a, b]},
    {"op": and|or, "args": [...]}, {"op": not|is_null|is_not_null, "args": [a]},
    {"op": like, "args": [a], "pattern": p}. Comparisons and and/or follow SQL's
    three-valued logic (pyarrow's Kleene kernels)."""
    op = node.get("op")
    if op is None:
        if "col" in node:
            return pc.field(f"c{int(node['col'])}")
        if "lit" in node:
            return pc.scalar(_literal(node["lit"], None))
        raise NotFastPath(f"unknown filter node {dict(node)!r}")
    args = list(node.get("args") or [])
    if op in _COMPARISONS:
        a, b = args
        ta, tb = _column_type(a, schema), _column_type(b, schema)
        left = pc.scalar(_literal(a["lit"], tb, bool(a.get("number")))) if "lit" in a else compile_filter(a, schema)
        right = pc.scalar(_literal(b["lit"], ta, bool(b.get("number")))) if "lit" in b else compile_filter(b, schema)
        if ta is not None and tb is not None and not ta.equals(tb):
            raise NotFastPath(f"comparing {ta} with {tb}")
        return pc.Expression._call(_COMPARISONS[op], [left, right])
    if op in ("and", "or"):
        parts = [compile_filter(a, schema) for a in args]
        out = parts[0]
        for p in parts[1:]:
            out = pc.Expression._call(f"{op}_kleene", [out, p])
        return out
    if op == "not":
        return pc.Expression._call("invert", [compile_filter(args[0], schema)])
    if op == "is_null":
        return compile_filter(args[0], schema).is_null()
    if op == "is_not_null":
        return compile_filter(args[0], schema).is_valid()
    if op == "like":
        if not pa.types.is_string(_column_type(args[0], schema) or pa.null()):
            raise NotFastPath("LIKE on a non-text column")
        return pc.Expression._call("match_like", [compile_filter(args[0], schema)],
                                   pc.MatchSubstringOptions(str(node["pattern"])))
    raise NotFastPath(f"operator {op!r} is not evaluated on the fast path")


class FastPath:
    """A fast-path peek, as the adapter sends it (the Peek's "index" fields)."""

    def __init__(self, body: Mapping[str, Any], schema: pa.Schema) -> None:
        self.schema = schema
        self.lookup = body.get("lookup")
        self.filter = compile_filter(body["filter"], schema) if body.get("filter") else None
        self.project = [int(i) for i in body["project"]] if body.get("project") is not None \
            else list(range(len(schema)))
        self.names = list(body.get("names") or [schema.field(i).name for i in self.project])
        self.order = [(int(i), bool(desc), bool(nf)) for i, desc, nf in body.get("order") or []]
        self.limit = None if body.get("limit") is None else int(body["limit"])
        self.offset = int(body.get("offset") or 0)

    def keys(self, arrangement: Arrangement) -> list[Row] | None:
        if self.lookup is None:
            return None
        kp = arrangement.key_positions
        out = []
        for values in self.lookup:
            if len(values) != len(kp):
                raise NotFastPath("lookup does not bind every key column")
            out.append(tuple(_literal(v, self.schema.field(i).type).as_py() for v, i in
                             zip(values, kp, strict=True)))
        return out

    def run(self, rows: list[Row]) -> pa.Table:
        width = len(self.schema)
        arrays = [pa.array([r[i] for r in rows], type=self.schema.field(i).type) for i in range(width)]
        table = pa.Table.from_arrays(arrays, names=[f"c{i}" for i in range(width)])
        if self.filter is not None:
            table = table.filter(self.filter)
        if self.order:
            keys = [(f"c{i}", "descending" if desc else "ascending", "at_start" if nf else "at_end")
                    for i, desc, nf in self.order]
            table = table.take(pc.sort_indices(table, sort_keys=keys))
        if self.offset or self.limit is not None:
            end = table.num_rows if self.limit is None else self.offset + self.limit
            table = table.slice(self.offset, max(0, end - self.offset))
        table = table.select([f"c{i}" for i in self.project])
        return table.rename_columns(self.names)
