"""What the benchmarks share: starting weir, the machine's load, running pgbench."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.integration.server import WeirServer

TPS = re.compile(r"^tps = ([0-9.]+) \(without initial connection time\)", re.M)
FAILED = re.compile(r"^number of failed transactions: (\d+)", re.M)
PROCESSED = re.compile(r"^number of transactions actually processed: (\d+)", re.M)


def load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def start_weir(weir: WeirServer) -> WeirServer:
    """Start a `weir serve` and say how long it took (the JVMs' start is not measured)."""
    t0 = time.monotonic()
    weir.start()
    print(f"weir started in {time.monotonic() - t0:.1f}s (port {weir.sql_port}, data {weir.data_dir})", flush=True)
    return weir


def run_pgbench(argv: list[str], timeout: float, cwd: Path | None = None) -> tuple[float, int, str]:
    """Run pgbench; (tps, failed transactions, output). Raises if pgbench fails."""
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                         env={**os.environ, "PGCONNECT_TIMEOUT": "10"})
    text = out.stdout + out.stderr
    m = TPS.search(text)
    if out.returncode != 0 or m is None:
        raise RuntimeError(f"pgbench {' '.join(argv)} failed (exit {out.returncode}):\n{text}")
    failed = FAILED.search(text)
    return float(m.group(1)), int(failed.group(1)) if failed else 0, text
