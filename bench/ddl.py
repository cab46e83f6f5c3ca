"""DDL and small-read latency, before and after, side by side.

    .venv/bin/python bench/ddl.py [--baseline REF] [--rounds 20]

Starts two real `weir serve` processes in temp dirs: "before" from a git worktree of REF
(default: a95dc25, the last commit before DDL stopped waiting for the builtin relations'
append and replicas stopped registering their UDFs in every new session) and "after"
from this tree, each with its own `local[1]` replica. On both it creates
`small (id int, name text)` with 5 rows. Then ROUNDS interleaved rounds (before, after,
after, before, ...), each timing, as the client sees it (execute + fetch):

  CREATE VIEW / DROP VIEW                     catalog only
  CREATE TABLE / DROP TABLE                   a shard is created / dropped
  CREATE DEFAULT INDEX ON a view / DROP       a dataflow installed on the replica
  CREATE MATERIALIZED VIEW, its first SELECT  (the first SELECT waits for its hydration)
  DROP MATERIALIZED VIEW
  SELECT ... FROM small WHERE id > k          a slow-path peek: one Spark job
  a catalog join on the Spark path            (enable_system_reads_in_process off):
                                              a peek that binds a dozen builtin inputs

Prints the median and p90 of each, after/before ratios and the load average.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from bench.common import load_avg  # noqa: E402
from bench.planning import start  # noqa: E402
from tests.integration.server import WeirServer  # noqa: E402

BASELINE = "a95dc25"
CATALOG_JOIN = ("SELECT t.name, s.name, count(c.name) FROM mz_catalog.mz_tables t "
                "JOIN mz_catalog.mz_schemas s ON t.schema_id = s.id "
                "JOIN mz_catalog.mz_columns c ON c.id = t.id GROUP BY t.name, s.name")


def timed(conn: psycopg.Connection, sql: str) -> float:
    t0 = time.monotonic()
    cur = conn.execute(sql)  # type: ignore[arg-type]
    if cur.description:
        cur.fetchall()
    return time.monotonic() - t0


def one_round(conn: psycopg.Connection, n: int) -> dict[str, float]:
    """Every operation once; its latency in seconds."""
    out = {}
    out["CREATE VIEW"] = timed(conn, f"CREATE VIEW v{n} AS SELECT id FROM small WHERE id > 1")
    out["CREATE DEFAULT INDEX"] = timed(conn, f"CREATE DEFAULT INDEX ON v{n}")
    out["DROP VIEW (indexed)"] = timed(conn, f"DROP VIEW v{n} CASCADE")
    out["CREATE VIEW (2)"] = timed(conn, f"CREATE VIEW w{n} AS SELECT name FROM small")
    out["DROP VIEW"] = timed(conn, f"DROP VIEW w{n}")
    out["CREATE TABLE"] = timed(conn, f"CREATE TABLE t{n} (a int, b text)")
    out["DROP TABLE"] = timed(conn, f"DROP TABLE t{n}")
    out["CREATE MATERIALIZED VIEW"] = timed(conn, f"CREATE MATERIALIZED VIEW m{n} AS SELECT id, name FROM small")
    out["its first SELECT"] = timed(conn, f"SELECT * FROM m{n}")
    out["DROP MATERIALIZED VIEW"] = timed(conn, f"DROP MATERIALIZED VIEW m{n}")
    out["slow-path SELECT"] = timed(conn, f"SELECT * FROM small WHERE id > {n % 5}")
    out["catalog join (Spark path)"] = timed(conn, CATALOG_JOIN)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default=BASELINE, help="git ref of the 'before' server")
    ap.add_argument("--rounds", type=int, default=20, help="timed rounds per server")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    base = Path(tempfile.mkdtemp(prefix="weir-bench-ddl-"))
    before_tree = base / "before-src"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(before_tree), args.baseline],
                   check=True, capture_output=True)
    servers: dict[str, WeirServer] = {}
    lat: dict[tuple[str, str], list[float]] = {}
    try:
        servers["before"] = start(before_tree, base / "before")
        servers["after"] = start(ROOT, base / "after")
        conns = {side: psycopg.connect(srv.dsn, autocommit=True) for side, srv in servers.items()}
        for c in conns.values():
            c.execute("CREATE TABLE small (id int, name text)")
            c.execute("INSERT INTO small VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')")
            c.execute("SET enable_system_reads_in_process = off")
            one_round(c, 1000)  # warm-up, not timed
        print(f"\nload average before the runs: {load_avg()} (2 cores: other load skews the figures)")
        for rnd in range(args.rounds):
            order = ("before", "after") if rnd % 2 == 0 else ("after", "before")
            for side in order:
                for op, seconds in one_round(conns[side], rnd).items():
                    lat.setdefault((op, side), []).append(seconds)
            print(f"  round {rnd + 1} done", flush=True)
        print(f"load average after the runs: {load_avg()}")
        for c in conns.values():
            c.close()
    finally:
        for srv in servers.values():
            srv.stop()
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before_tree)],
                       capture_output=True)
        shutil.rmtree(base, ignore_errors=True)

    p90: Callable[[list[float]], float] = lambda xs: sorted(xs)[int(0.9 * (len(xs) - 1))]  # noqa: E731
    print(f"\n## latency per statement, ms ({args.rounds} interleaved rounds; before = {args.baseline})")
    print(f"{'statement':28s} {'before p50':>10s} {'after p50':>10s} {'ratio':>6s} {'before p90':>10s} {'after p90':>10s}")
    ops = list(dict.fromkeys(op for op, _ in lat))
    for op in ops:
        b, a = lat[(op, "before")], lat[(op, "after")]
        mb, ma = statistics.median(b) * 1000, statistics.median(a) * 1000
        print(f"{op:28s} {mb:10.1f} {ma:10.1f} {ma / mb:6.2f} {p90(b) * 1000:10.1f} {p90(a) * 1000:10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
