"""Run queries on PostgreSQL and weir and compare their answers exactly.

Values are compared in the text form each server sends on the wire (no parsing, so no
normalisation hides a difference). Spark costs weir ~0.1-1 s per query whatever its size,
so queries PostgreSQL gives the same column types are run on weir in batches, one UNION
ALL tagged with each query's number, on a few connections at once; a batch that fails or
whose rows for a query differ is re-run query by query, and only a query's own answer
counts. Materialized views are checked the same way: one view per batch."""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import psycopg

from tests.differential.generator import Query

Row = tuple[str | None, ...]


@dataclass
class Outcome:
    """One server's answer: rows (text form) or an error."""

    rows: list[Row] | None = None
    types: tuple[int, ...] = ()
    sqlstate: str | None = None
    message: str | None = None

    @property
    def ok(self) -> bool:
        return self.rows is not None

    def show(self, limit: int = 12) -> str:
        if self.rows is None:
            return f"ERROR {self.sqlstate}: {(self.message or '').splitlines()[0] if self.message else ''}"
        rows = self.rows[:limit]
        more = f" ... ({len(self.rows)} rows)" if len(self.rows) > limit else ""
        return repr(rows) + more


def execute(conn: psycopg.Connection, sql: str, timeout: float | None = None) -> Outcome:
    """Run one statement; its rows as the server's text form. After `timeout` seconds the
    statement is cancelled (a query that hangs is an answer too: 57014)."""
    timer = threading.Timer(timeout, conn.cancel) if timeout else None
    if timer is not None:
        timer.start()
    try:
        cur = conn.execute(sql)  # type: ignore[arg-type]
    except psycopg.Error as e:
        return Outcome(sqlstate=e.sqlstate or "?????", message=str(e))
    finally:
        if timer is not None:
            timer.cancel()
    res = cur.pgresult
    if res is None or res.nfields == 0:
        return Outcome(rows=[])
    rows = []
    for i in range(res.ntuples):
        rows.append(tuple(None if (v := res.get_value(i, j)) is None else v.decode()
                          for j in range(res.nfields)))
    return Outcome(rows=rows, types=tuple(res.ftype(j) for j in range(res.nfields)))


def _key(row: Row) -> tuple[tuple[bool, str], ...]:
    return tuple((v is None, v or "") for v in row)


def same_rows(a: Sequence[Row], b: Sequence[Row], ordered: bool) -> bool:
    if ordered:
        return list(a) == list(b)
    return sorted(a, key=_key) == sorted(b, key=_key)


def classify(pg: Outcome, weir: Outcome, ordered: bool) -> str:
    """identical | refused (weir errors cleanly) | differs (a wrong answer, or weir answers
    what PostgreSQL refuses)."""
    if pg.ok and weir.ok:
        assert pg.rows is not None and weir.rows is not None
        return "identical" if same_rows(pg.rows, weir.rows, ordered) else "differs"
    if not weir.ok:
        return "identical" if not pg.ok and pg.sqlstate == weir.sqlstate else "refused"
    return "differs"


@dataclass
class Result:
    query: Query
    pg: Outcome
    weir: Outcome
    category: str
    mv: bool = False  # checked as a materialized view's contents


@dataclass
class Report:
    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0
    weir_statements: int = 0
    unchecked: int = 0  # generated but not run: the time budget ran out first

    def counts(self) -> Counter[tuple[str, str]]:
        return Counter((("mv:" if r.mv else "") + r.query.kind, r.category) for r in self.results)

    def of(self, category: str) -> list[Result]:
        return [r for r in self.results if r.category == category]

    def summary(self) -> str:
        by_cat = Counter(r.category for r in self.results)
        lines = [f"{len(self.results)} checks ({sum(1 for r in self.results if not r.mv)} queries, "
                 f"{sum(1 for r in self.results if r.mv)} as materialized views) in {self.seconds:.1f}s, "
                 f"{self.weir_statements} statements sent to weir, {self.unchecked} left unchecked "
                 f"(time budget): {dict(by_cat)}"]
        for (kind, cat), n in sorted(self.counts().items()):
            lines.append(f"  {kind:14} {cat:10} {n}")
        return "\n".join(lines)


FLOATS = (700, 701)


def signature(out: Outcome) -> tuple[bool, ...]:
    """Queries batch together when their columns agree on this: a float column stays as
    it is (Spark's float-to-text cast is not the wire form), any other is cast to text."""
    return tuple(t in FLOATS for t in out.types)


def batch_sql(queries: Sequence[Query], ids: Sequence[int], sig: tuple[bool, ...]) -> str:
    cols = ", ".join(f"c{k}" if is_float else f"CAST(c{k} AS text) AS c{k}"
                     for k, is_float in enumerate(sig))
    return " UNION ALL ".join(f"SELECT {i} AS diff_qid, {cols} FROM ({q.sql}) AS diff_q{i}"
                              for i, q in zip(ids, queries, strict=True))


BOOL = 16


def as_cast_to_text(row: Row, types: Sequence[int]) -> Row:
    """A row of PostgreSQL's output as `CAST(c AS text)` of each column would give it."""
    return tuple({"t": "true", "f": "false"}.get(v, v) if v is not None and k < len(types) and types[k] == BOOL
                 else v for k, v in enumerate(row))


def split_batch(w: Outcome, ids: Sequence[int]) -> dict[int, list[Row]]:
    got: dict[int, list[Row]] = {i: [] for i in ids}
    assert w.rows is not None
    for row in w.rows:
        got[int(row[0] or -1)].append(row[1:])
    return got


Explain = Callable[[Query, Outcome, Outcome], str | None]


class Differential:
    """Compare `queries` on a PostgreSQL and a weir holding the same tables. `explain`
    names the known bug a differing pair of answers shows (None: unexplained)."""

    def __init__(self, pg_dsn: str, weir_dsn: str, *, batch: int = 25, parallel: int = 3,
                 solo_sample: int = 20, explain: Explain = lambda q, p, w: None,
                 timeout: float = 120.0, budget: float | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        self.pg_dsn, self.weir_dsn, self.timeout = pg_dsn, weir_dsn, timeout
        self.budget, self.log = budget, log
        self.batch, self.parallel, self.solo_sample = batch, parallel, solo_sample
        self.explain = explain
        self._local = threading.local()
        self._conns: list[psycopg.Connection] = []
        self._lock = threading.Lock()
        self.statements = 0

    def _weir(self) -> psycopg.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            conn = psycopg.connect(self.weir_dsn, autocommit=True)
            self._local.conn = conn
            with self._lock:
                self._conns.append(conn)
        return conn

    def weir_execute(self, sql: str) -> Outcome:
        with self._lock:
            self.statements += 1
        return execute(self._weir(), sql, self.timeout)

    def close(self) -> None:
        for c in self._conns:
            c.close()

    def _result(self, q: Query, pg: Outcome, weir: Outcome, *, mv: bool = False) -> Result:
        cat = classify(pg, weir, q.ordered and not mv)
        if cat != "identical" and (known := self.explain(q, pg, weir)) is not None:
            cat = f"known:{known}"
        return Result(q, pg, weir, cat, mv)

    def run(self, queries: Sequence[Query], *, mv_batches: int = 0) -> Report:
        """Check `queries`; with a time budget, batches not started when it runs out (less
        the materialized views' share) are left unchecked and counted as such."""
        start = time.monotonic()
        deadline = None if self.budget is None else start + self.budget * (0.8 if mv_batches else 1.0)
        pg = psycopg.connect(self.pg_dsn, autocommit=True)
        expected = [execute(pg, q.sql) for q in queries]
        groups: dict[tuple[bool, ...], list[int]] = defaultdict(list)
        solo: list[int] = []
        for i, out in enumerate(expected):
            (groups[signature(out)] if out.ok and out.types else solo).append(i)
        batches = [(sig, ids[k:k + self.batch]) for sig, ids in groups.items()
                   for k in range(0, len(ids), self.batch)]
        # PostgreSQL's answer to each batch, split by query: what weir's must equal. Not
        # asked of PostgreSQL (planning a UNION ALL of 25 joins takes it seconds): its text
        # cast is its output function but for booleans ('true', not 't')
        pg.close()
        pg_batch = {tuple(ids): Outcome(rows=[(str(i), *as_cast_to_text(row, expected[i].types))
                                              for i in ids for row in expected[i].rows or []])
                    for _, ids in batches}
        sampled = set([i for i, q in enumerate(queries) if q.ordered][: self.solo_sample])

        def one(i: int) -> Result:
            return self._result(queries[i], expected[i], self.weir_execute(queries[i].sql))

        def batch(item: tuple[tuple[bool, ...], list[int]]) -> list[Result]:
            sig, ids = item
            if deadline is not None and time.monotonic() > deadline:
                return []
            if self.log is not None:
                self.log(f"{time.monotonic() - start:6.0f}s batch of {len(ids)}")
            want = pg_batch[tuple(ids)]
            w = self.weir_execute(batch_sql([queries[i] for i in ids], ids, sig))
            if not (w.ok and want.ok):
                return [one(i) for i in ids]
            got, exp = split_batch(w, ids), split_batch(want, ids)
            out = []
            for i in ids:
                mine = Outcome(rows=got[i])
                if i not in sampled and same_rows(exp[i], got[i], False):
                    out.append(Result(queries[i], expected[i], mine, "identical"))
                elif i not in sampled and (known := self.explain(
                        queries[i], Outcome(rows=exp[i], types=expected[i].types), mine)):
                    out.append(Result(queries[i], expected[i], mine, f"known:{known}"))
                else:  # an unexplained difference counts only as the query's own answer
                    out.append(one(i))
            return out

        results: list[Result] = []
        with ThreadPoolExecutor(self.parallel) as ex:
            for rs in ex.map(batch, batches):
                results += rs
            results += ex.map(one, solo)
        report = Report(results, unchecked=len(queries) - len(results))
        if mv_batches:
            mvs = [(sig, ids) for sig, ids in batches if len(ids) > 1][:mv_batches]
            report.results += self.check_mvs(queries, pg_batch, mvs, [e.types for e in expected])
        report.seconds = time.monotonic() - start
        report.weir_statements = self.statements
        return report

    def check_mvs(self, queries: Sequence[Query], pg_batch: dict[tuple[int, ...], Outcome],
                  batches: Iterable[tuple[tuple[bool, ...], list[int]]],
                  pg_types: Sequence[tuple[int, ...]] = ()) -> list[Result]:
        """Each batch as one materialized view: its contents, split by query, must equal
        PostgreSQL's answer to each query (as the batch's text casts render it)."""
        out: list[Result] = []
        for n, (sig, ids) in enumerate(batches):
            name = f"diff_mv_{n}"
            self.weir_execute(f"DROP MATERIALIZED VIEW IF EXISTS {name}")
            created = self.weir_execute(f"CREATE MATERIALIZED VIEW {name} AS "
                                        + batch_sql([queries[i] for i in ids], ids, sig))
            w = self.weir_execute(f"SELECT * FROM {name}") if created.ok else created
            self.weir_execute(f"DROP MATERIALIZED VIEW IF EXISTS {name}")
            want = split_batch(pg_batch[tuple(ids)], ids)
            got = split_batch(w, ids) if w.ok else {}
            for i in ids:
                mine = Outcome(rows=got[i]) if w.ok else w
                types = pg_types[i] if i < len(pg_types) and pg_types[i] else expected_types(sig)
                out.append(self._result(queries[i], Outcome(rows=want[i], types=types), mine, mv=True))
        return out


def expected_types(sig: tuple[bool, ...]) -> tuple[int, ...]:
    return tuple(701 if f else 25 for f in sig)
