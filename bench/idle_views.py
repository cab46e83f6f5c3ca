"""What idle materialized views cost (issues 28/29, benchmark): a fresh `weir serve`, one
table, then N views over it that nothing changes; for each N, the CPU the coordinator and the
replica (its Python process and its JVM) spend per second of wall time over a quiet
interval. A view whose inputs do not change still has its upper advanced every second.

    .venv/bin/python bench/idle_views.py [--views 0 5 20] [--seconds 30]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import load_avg, start_weir  # noqa: E402
from tests.integration.server import WeirServer  # noqa: E402


def _role(p: psutil.Process) -> str:
    cmd = " ".join(p.cmdline())
    if "java" in p.name() or "SparkSubmit" in cmd:
        return "replica JVM"
    if "weir.compute.replica" in cmd:
        return "replica Python"
    if "serve" in cmd:
        return "coordinator"
    return "other"


def _cpu(root: psutil.Process) -> dict[str, float]:
    out: dict[str, float] = {}
    for p in [root, *root.children(recursive=True)]:
        try:
            t = p.cpu_times()
            out[_role(p)] = out.get(_role(p), 0.0) + t.user + t.system
        except psutil.Error:
            pass
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--views", type=int, nargs="+", default=[0, 5, 20])
    ap.add_argument("--seconds", type=float, default=30)
    args = ap.parse_args()
    print(f"load average at start: {load_avg()}", flush=True)
    weir = start_weir(WeirServer(Path(tempfile.mkdtemp(prefix="weir-idle-")) / "data"))
    try:
        root = psutil.Process(weir.proc.pid)
        with weir.connect() as c:
            c.execute("CREATE TABLE idle_t (a int, b int)")
            c.execute("INSERT INTO idle_t VALUES (1, 2)")
            made = 0
            for n in sorted(args.views):
                while made < n:
                    c.execute(f"CREATE MATERIALIZED VIEW idle_mv{made} AS SELECT a, sum(b) FROM idle_t GROUP BY a")
                    made += 1
                if made:
                    c.execute(f"SELECT * FROM idle_mv{made - 1}").fetchall()  # hydrated
                time.sleep(5)
                before, t0 = _cpu(root), time.monotonic()
                time.sleep(args.seconds)
                after, wall = _cpu(root), time.monotonic() - t0
                per = {k: (after.get(k, 0.0) - before.get(k, 0.0)) / wall for k in after}
                parts = ", ".join(f"{k} {v:.2f}" for k, v in sorted(per.items()) if k != "other")
                print(f"{n:3d} idle views: {sum(per.values()):.2f} cores ({parts}); load {load_avg()}", flush=True)
    finally:
        weir.stop()


if __name__ == "__main__":
    main()
