"""Run queries on PostgreSQL and weir and compare their answers exactly.

Values are compared in the text form each server sends on the wire (no parsing, so no
normalisation hides a difference). Spark costs weir ~0.1-1 s per query whatever its size,
so queries PostgreSQL gives the same column types are run on weir in batches, one UNION
ALL tagged with each query's number, on a few connections at once; a batch that fails is
halved until its failing queries stand alone, a query whose rows differ is re-run alone,
and only a query's own answer counts. Each query's columns are named by the batch (`AS diff_q7(c0, c1)`), so a query may
leave them unnamed or name two alike, as PostgreSQL allows in a SELECT.

Every batch is checked three ways, each against PostgreSQL's SELECT: as a SELECT, as the
contents of a materialized view, and through an index on a view (`Report.counts` by path).
Queries with unnamed columns are also made into materialized views of their own, whose
column names ('?column?') must be PostgreSQL's, or refused as PostgreSQL refuses a view
that names a column twice (42701)."""

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
    names: tuple[str, ...] = ()
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
    return Outcome(rows=rows, types=tuple(res.ftype(j) for j in range(res.nfields)),
                   names=tuple((res.fname(j) or b"").decode() for j in range(res.nfields)))


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
    path: str = "select"  # select | mv (a materialized view's contents) | index (an indexed view's)

    @property
    def mv(self) -> bool:
        """Checked through a view (materialized or indexed) rather than as a SELECT."""
        return self.path != "select"


@dataclass
class Report:
    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0
    weir_statements: int = 0
    unchecked: int = 0  # generated but not run: the time budget ran out first

    def counts(self) -> Counter[tuple[str, str]]:
        return Counter((("" if r.path == "select" else f"{r.path}:") + r.query.kind, r.category)
                       for r in self.results)

    def paths(self) -> Counter[tuple[str, str]]:
        """(path, category) counts: how many queries each path checked, and how."""
        return Counter((r.path, r.category) for r in self.results)

    def of(self, category: str) -> list[Result]:
        return [r for r in self.results if r.category == category]

    def summary(self) -> str:
        by_cat = Counter(r.category for r in self.results)
        per_path = Counter(r.path for r in self.results)
        lines = [f"{len(self.results)} checks ({per_path['select']} as SELECTs, {per_path['mv']} as "
                 f"materialized views, {per_path['index']} through indexed views) in {self.seconds:.1f}s, "
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
    names = ", ".join(f"c{k}" for k in range(len(sig)))
    return " UNION ALL ".join(f"SELECT {i} AS diff_qid, {cols} FROM ({q.sql}) AS diff_q{i}({names})"
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
                 timeout: float = 120.0, budget: float | None = None, min_checked: int = 0,
                 log: Callable[[str], None] | None = None) -> None:
        self.pg_dsn, self.weir_dsn, self.timeout = pg_dsn, weir_dsn, timeout
        self.budget, self.log, self.min_checked = budget, log, min_checked
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

    def _result(self, q: Query, pg: Outcome, weir: Outcome, *, path: str = "select") -> Result:
        cat = classify(pg, weir, q.ordered and path == "select")
        if cat != "identical" and (known := self.explain(q, pg, weir)) is not None:
            cat = f"known:{known}"
        return Result(q, pg, weir, cat, path)

    CHUNK = 500  # queries PostgreSQL answers at a time
    VIEW_BATCH = 16  # queries in one view of the view paths

    def run(self, queries: Sequence[Query], *, mv_batches: int = 0, index_batches: int | None = None,
            own_views: int = 0) -> Report:
        """Check `queries` as SELECTs, then up to `mv_batches` batches as materialized views
        and `index_batches` (default: as many) through indexed views, then up to `own_views`
        queries with unnamed columns as materialized views of their own. With a time budget,
        the SELECTs get half of it and the views the rest; what was not started when its
        share ran out is counted as unchecked."""
        start = time.monotonic()
        views = bool(mv_batches or index_batches is None or index_batches or own_views)
        deadline = None if self.budget is None else start + self.budget * (0.5 if views else 1.0)
        # PostgreSQL answers the queries a chunk at a time, as the budget reaches them:
        # answering all of them first spent much of a small budget on queries never sent
        pg = psycopg.connect(self.pg_dsn, autocommit=True)
        expected: list[Outcome] = []
        batches: list[tuple[tuple[bool, ...], list[int]]] = []
        pg_batch: dict[tuple[int, ...], Outcome] = {}

        def answer_chunk() -> tuple[list[tuple[tuple[bool, ...], list[int]]], list[int]]:
            lo = len(expected)
            expected.extend(execute(pg, q.sql) for q in queries[lo:lo + self.CHUNK])
            groups: dict[tuple[bool, ...], list[int]] = defaultdict(list)
            chunk_solo: list[int] = []
            for i in range(lo, len(expected)):
                out = expected[i]
                (groups[signature(out)] if out.ok and out.types else chunk_solo).append(i)
            chunk = [(sig, ids[k:k + self.batch]) for sig, ids in groups.items()
                     for k in range(0, len(ids), self.batch)]
            # PostgreSQL's answer to each batch, split by query: what weir's must equal. Not
            # asked of PostgreSQL (planning a UNION ALL of 25 joins takes it seconds): its
            # text cast is its output function but for booleans ('true', not 't')
            pg_batch.update({tuple(ids): Outcome(rows=[(str(i), *as_cast_to_text(row, expected[i].types))
                                                       for i in ids for row in expected[i].rows or []])
                             for _, ids in chunk})
            batches.extend(chunk)
            return chunk, chunk_solo

        sampled = set([i for i, q in enumerate(queries) if q.ordered][: self.solo_sample])
        results: list[Result] = []

        def one(i: int) -> Result:
            return self._result(queries[i], expected[i], self.weir_execute(queries[i].sql))

        def answered(sig: tuple[bool, ...], ids: list[int]) -> dict[int, list[Row] | None]:
            """weir's rows for each query of a batch; a batch weir fails (one refused query
            fails them all) is halved until the failing queries stand alone (None)."""
            w = self.weir_execute(batch_sql([queries[i] for i in ids], ids, sig))
            if w.ok:
                return dict(split_batch(w, ids))
            if len(ids) == 1:
                return {ids[0]: None}
            half = len(ids) // 2
            return answered(sig, ids[:half]) | answered(sig, ids[half:])

        started = 0  # queries in the batches started: the budget stops none before min_checked

        def batch(item: tuple[tuple[bool, ...], list[int]]) -> list[Result]:
            nonlocal started
            sig, ids = item
            with self._lock:
                if deadline is not None and time.monotonic() > deadline and started >= self.min_checked:
                    return []
                started += len(ids)
            if self.log is not None:
                self.log(f"{time.monotonic() - start:6.0f}s batch of {len(ids)}")
            want = pg_batch[tuple(ids)]
            if not want.ok:
                return [one(i) for i in ids]
            got = answered(sig, ids)
            exp = split_batch(want, ids)
            out = []
            for i in ids:
                rows = got[i]
                if rows is None:  # the query's own answer: its error, as it says it alone
                    out.append(one(i))
                    continue
                mine = Outcome(rows=rows)
                if i not in sampled and same_rows(exp[i], rows, False):
                    out.append(Result(queries[i], expected[i], mine, "identical"))
                elif i not in sampled and (known := self.explain(
                        queries[i], Outcome(rows=exp[i], types=expected[i].types), mine)):
                    out.append(Result(queries[i], expected[i], mine, f"known:{known}"))
                else:  # an unexplained difference counts only as the query's own answer
                    out.append(one(i))
            return out

        with ThreadPoolExecutor(self.parallel) as ex:
            while len(expected) < len(queries) and (deadline is None or time.monotonic() < deadline):
                chunk, chunk_solo = answer_chunk()
                for rs in ex.map(batch, chunk):
                    results += rs
                results += ex.map(one, chunk_solo)
        pg.close()
        report = Report(results, unchecked=len(queries) - len(results))
        if views:
            end = None if self.budget is None else start + self.budget
            # views of the queries weir answers as SELECTs: one refused query would make the
            # whole batch's view fail, and its refusal is counted on the SELECT path already
            answered = {r.query.sql for r in results if r.weir.ok}
            # views of VIEW_BATCH queries, not a SELECT batch's 50: under the suite's load
            # a view of 50 took the shared local[1] replica minutes to create, hydrate and
            # read, and every path runs its first view whatever the budget
            several = [(sig, ids[k:k + self.VIEW_BATCH]) for sig, full in batches
                       if len(ids := [i for i in full if queries[i].sql in answered]) > 1
                       for k in range(0, len(ids), self.VIEW_BATCH) if len(ids[k:k + self.VIEW_BATCH]) > 1]
            types = [e.types for e in expected]
            n_index = len(several) if index_batches is None else index_batches
            # both paths at once: much of a view's creation is planning on the coordinator's
            # and the replica's drivers, which a second core runs beside the other's Spark job
            views_end = None if end is None else (
                time.monotonic() + (end - time.monotonic()) * (0.8 if own_views else 1.0))
            with ThreadPoolExecutor(2) as ex:
                paths = [ex.submit(self.check_views, queries, pg_batch, several[:count], types, path=path,
                                   deadline=views_end) for path, count in (("mv", mv_batches), ("index", n_index))]
                for f in paths:
                    report.results += f.result()
            unnamed = [i for i, e in enumerate(expected) if e.ok and "?column?" in e.names][:own_views]
            report.results += self.check_own_views(queries, expected, unnamed, deadline=end)
        report.seconds = time.monotonic() - start
        report.weir_statements = self.statements
        return report

    def check_mvs(self, queries: Sequence[Query], pg_batch: dict[tuple[int, ...], Outcome],
                  batches: Iterable[tuple[tuple[bool, ...], list[int]]],
                  pg_types: Sequence[tuple[int, ...]] = ()) -> list[Result]:
        return self.check_views(queries, pg_batch, batches, pg_types, path="mv")

    def check_views(self, queries: Sequence[Query], pg_batch: dict[tuple[int, ...], Outcome],
                    batches: Iterable[tuple[tuple[bool, ...], list[int]]],
                    pg_types: Sequence[tuple[int, ...]] = (), *, path: str = "mv",
                    deadline: float | None = None) -> list[Result]:
        """Each batch as one materialized view (`path` mv) or one view with a default index
        (`path` index): its contents, split by query, must equal PostgreSQL's answer to each
        query (as the batch's text casts render it)."""
        out: list[Result] = []
        per_query: dict[int, list[Row]] = defaultdict(list)  # PostgreSQL's rows by query
        for answer in pg_batch.values():
            for row in answer.rows or []:
                per_query[int(row[0] or -1)].append(row[1:])
        for n, (sig, ids) in enumerate(batches):
            if n > 0 and deadline is not None and time.monotonic() > deadline:
                break  # (the first batch runs whatever the time: every path is checked once)
            name = f"diff_{path}_{n}"
            kind = "MATERIALIZED VIEW" if path == "mv" else "VIEW"
            self.weir_execute(f"DROP {kind} IF EXISTS {name} CASCADE")
            created = self.weir_execute(f"CREATE {kind} {name} AS "
                                        + batch_sql([queries[i] for i in ids], ids, sig))
            if created.ok and path == "index":
                created = self.weir_execute(f"CREATE DEFAULT INDEX ON {name}")
                if created.ok:  # read the index, not a recomputation of the view beside it
                    self.wait_hydrated(f"{name}_primary_idx")
            w = self.weir_execute(f"SELECT * FROM {name}") if created.ok else created
            self.weir_execute(f"DROP {kind} IF EXISTS {name} CASCADE")
            got = split_batch(w, ids) if w.ok else {}
            for i in ids:
                mine = Outcome(rows=got[i]) if w.ok else w
                types = pg_types[i] if i < len(pg_types) and pg_types[i] else expected_types(sig)
                out.append(self._result(queries[i], Outcome(rows=per_query[i], types=types), mine, path=path))
        return out

    def wait_hydrated(self, index: str) -> None:
        """Until the index is hydrated (a read before would run the view's query on Spark
        beside the index's own hydration, and check the SELECT path a second time)."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            out = self.weir_execute(
                "SELECT bool_and(h.hydrated) FROM mz_internal.mz_hydration_statuses h "
                f"JOIN mz_catalog.mz_indexes i ON h.object_id = i.id WHERE i.name = '{index}'")
            if not out.ok or (out.rows and out.rows[0][0] == "t"):
                return
            time.sleep(0.1)

    def check_own_views(self, queries: Sequence[Query], expected: Sequence[Outcome], ids: Iterable[int],
                        deadline: float | None = None) -> list[Result]:
        """Each query as a materialized view of its own, columns named as the query names
        them: its contents and column names must be PostgreSQL's answer and names, or, where
        two columns share a name, PostgreSQL's refusal of such a view (42701)."""
        out: list[Result] = []
        for n, i in enumerate(ids):
            if deadline is not None and time.monotonic() > deadline:
                break
            name = f"diff_own_{n}"
            want = expected[i]
            if len(set(want.names)) != len(want.names):
                dup = next(x for x in want.names if want.names.count(x) > 1)
                want = Outcome(sqlstate="42701", message=f'column "{dup}" specified more than once')
            self.weir_execute(f"DROP MATERIALIZED VIEW IF EXISTS {name}")
            created = self.weir_execute(f"CREATE MATERIALIZED VIEW {name} AS {queries[i].sql}")
            w = self.weir_execute(f"SELECT * FROM {name}") if created.ok else created
            self.weir_execute(f"DROP MATERIALIZED VIEW IF EXISTS {name}")
            if w.ok and want.ok and w.names != want.names:
                w = Outcome(rows=[("column names", *w.names)])
            out.append(self._result(queries[i], want, w, path="mv"))
        return out


def expected_types(sig: tuple[bool, ...]) -> tuple[int, ...]:
    return tuple(701 if f else 25 for f in sig)
