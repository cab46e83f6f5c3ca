"""How long a replica process takes to start: spawned -> listening for the compute
protocol (SparkSession up, UDFs made) -> first peek answered, with the class archive of
weir.compute.replica.class_archive (as weir starts replicas) and without it
(`WEIR_CLASS_ARCHIVE=off`), interleaved.

Prints the medians and the load average.

    .venv/bin/python bench/replica_start.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import load_avg  # noqa: E402
from weir.compute import protocol as P  # noqa: E402
from weir.compute.replica import class_archive  # noqa: E402

ARGS = ["--listen", "127.0.0.1:0", "--replica-id", "bench", "--size", "1", "--exit-on-stdin-eof"]
WAYS = {
    "archive": ([sys.executable, "-m", "weir.compute.replica", *ARGS], {}),
    "no-archive": ([sys.executable, "-m", "weir.compute.replica", *ARGS], {"WEIR_CLASS_ARCHIVE": "off"}),
}


async def _first_peek(host: str, port: int) -> None:
    """Hello -> CreateInstance -> InstanceCreated, then a one-row peek to its PeekDone."""
    reader, raw = await asyncio.open_connection(host, port)
    writer = P.MessageWriter(raw)
    try:
        await P.read_message(reader)  # Hello
        await writer.send({"type": P.CREATE_INSTANCE, "replica_id": "bench", "incarnation": 1})
        await writer.send({"type": P.PEEK, "peek_id": "p1", "sql": "SELECT 1 AS a", "inputs": [],
                           "timestamp": 1})
        while True:
            msg = await P.read_message(reader)
            if msg is None:
                raise RuntimeError("the replica closed the connection")
            if msg.body.get("type") in (P.PEEK_DONE, P.PEEK_RESPONSE, P.ERROR):
                return
    finally:
        writer.close()


def one(way: str) -> tuple[float, float]:
    cmd, extra = WAYS[way]
    env = {**os.environ, **extra, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode()
            if line.startswith("WEIR_REPLICA_LISTENING"):
                _, host, port = line.split()
                break
        else:
            raise RuntimeError(f"{way}: the replica exited ({proc.wait()})")
        listening = time.perf_counter() - t0
        asyncio.run(_first_peek(host, int(port)))
        return listening, time.perf_counter() - t0
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(f"load average at start: {load_avg()}")
    made = class_archive.build()
    print(f"class archive: {made}")
    got: dict[str, list[tuple[float, float]]] = {w: [] for w in WAYS}
    for r in range(args.rounds):
        for way in WAYS:
            got[way].append(one(way))
            print(f"round {r + 1} {way:>10}: listening {got[way][-1][0]:.2f} s, "
                  f"first peek {got[way][-1][1]:.2f} s", flush=True)
    print(f"load average at end: {load_avg()}")
    for way, runs in got.items():
        print(f"{way:>10}: median listening {statistics.median(r[0] for r in runs):.2f} s, "
              f"median first peek answered {statistics.median(r[1] for r in runs):.2f} s "
              f"({len(runs)} runs)")


if __name__ == "__main__":
    main()
