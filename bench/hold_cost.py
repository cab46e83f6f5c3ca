"""What a hold costs (issue 11, benchmark): two tables written side by side at the same
rate (default 100 rows/s each), each with an index; one table and its index are held for
the whole run, the other not. Every minute, and at the end, prints for both: the bytes of
the table's data files in the warehouse, the memory of the index's arrangement history
(`weir_index_history_bytes`), and the hold's `retained_bytes` from mz_hold_lag.

    .venv/bin/python bench/hold_cost.py [--minutes 10] [--rate 100]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import load_avg, start_weir  # noqa: E402
from tests.integration.server import WeirServer  # noqa: E402


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--rate", type=int, default=100, help="rows per second into each table")
    args = ap.parse_args()
    print(f"load average at start: {load_avg()}")
    with tempfile.TemporaryDirectory() as tmp:
        srv = start_weir(WeirServer(Path(tmp) / "data"))
        try:
            with srv.connect() as c:
                ids = {}
                for name in ("held", "free"):
                    c.execute(f"CREATE TABLE hc_{name} (k int, v text)")
                    c.execute(f"CREATE INDEX hc_{name}_i ON hc_{name} (k)")
                    ids[name] = c.execute("SELECT id FROM mz_catalog.mz_tables WHERE name = %s",
                                          (f"hc_{name}",)).fetchone()[0]
                    ids[f"{name}_i"] = c.execute("SELECT id FROM mz_catalog.mz_indexes WHERE name = %s",
                                                 (f"hc_{name}_i",)).fetchone()[0]
                time.sleep(3)  # the indexes hydrate
                c.execute("CREATE HOLD hc_h ON hc_held, hc_held_i WITH (MAX LAG = '1d')")
            stop = threading.Event()
            written = [0]

            def write() -> None:
                """`rate` rows a second into each table, in ten statements a second each; the
                same keys are updated over and over (k cycles over 1,000 values)."""
                per = max(1, args.rate // 10)
                n = 0
                with srv.connect() as w:
                    next_at = time.monotonic()
                    while not stop.is_set():
                        rows = ", ".join(f"({(n + i) % 1000}, 'row {n + i} of the hold cost benchmark')"
                                         for i in range(per))
                        for name in ("held", "free"):
                            w.execute(f"INSERT INTO hc_{name} VALUES {rows}")
                        n += per
                        written[0] = n
                        next_at += 0.1
                        time.sleep(max(0.0, next_at - time.monotonic()))

            writer = threading.Thread(target=write, daemon=True)
            t0 = time.monotonic()
            writer.start()
            warehouse = Path(tmp) / "data" / "warehouse" / "weir"
            print("minute | rows/table | table bytes held / free | index history bytes held / free | "
                  "hold retained_bytes (table, index) | load")
            end = t0 + args.minutes * 60
            while time.monotonic() < end:
                time.sleep(min(60.0, max(0.0, end - time.monotonic())))
                with srv.connect() as c:
                    retained = dict(c.execute(
                        "SELECT object_id, retained_bytes FROM mz_internal.mz_hold_lag").fetchall())
                mem = {k: srv.metric("weir_index_history_bytes", index_id=ids[k]) for k in ("held_i", "free_i")}
                print(f"{(time.monotonic() - t0) / 60:6.1f} | {written[0]:10d} | "
                      f"{_dir_bytes(warehouse / ids['held'] / 'data'):,} / {_dir_bytes(warehouse / ids['free'] / 'data'):,} | "
                      f"{mem['held_i']:,.0f} / {mem['free_i']:,.0f} | "
                      f"{retained.get(ids['held'], 0):,}, {retained.get(ids['held_i'], 0):,} | {load_avg()}",
                      flush=True)
            stop.set()
            writer.join(10)
            elapsed = time.monotonic() - t0
            print(f"wrote {written[0]} rows into each table in {elapsed:.0f} s "
                  f"({written[0] / elapsed:.0f} rows/s each); load average at end: {load_avg()}")
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
