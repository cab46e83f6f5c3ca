"""Start and stop real `weir serve` processes for integration tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WeirServer:
    def __init__(self, data_dir: Path, *, extra_args: list[str] | None = None) -> None:
        self.data_dir = data_dir
        self.sql_port = free_port()
        self.http_port = free_port()
        self.extra_args = extra_args or []
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir.parent / f"{data_dir.name}-server.log"
        self.password: str | None = None

    @property
    def dsn(self) -> str:
        pw = f" password='{self.password}'" if self.password else ""
        return f"host=127.0.0.1 port={self.sql_port} user=materialize dbname=materialize{pw}"

    def start(self, *, wait_for_replica: bool = True, timeout: float = 180) -> WeirServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        env = dict(os.environ)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "weir.cli", "serve", "--data-dir", str(self.data_dir.resolve()),
             "--sql-port", str(self.sql_port), "--http-port", str(self.http_port), *self.extra_args],
            # cwd: `python -m` puts it first on sys.path, ahead of PYTHONPATH; a server
            # started from a checkout's root would run that checkout's code whatever
            # PYTHONPATH says (bench/planning.py starts two trees side by side)
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.data_dir)
        deadline = time.time() + timeout
        last: Exception | None = None
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"weir serve exited with {self.proc.returncode}; log:\n{self.log_tail()}")
            try:
                with psycopg.connect(self.dsn, autocommit=True, connect_timeout=2) as conn:
                    if wait_for_replica:  # a Spark job: catalog reads alone now run in process
                        conn.execute("SET enable_system_reads_in_process = off")
                        conn.execute("SELECT count(*) FROM mz_catalog.mz_databases").fetchall()
                    return self
            except Exception as e:  # noqa: BLE001 - retry until ready
                last = e
                time.sleep(0.5)
        raise RuntimeError(f"weir serve not ready after {timeout}s: {last}; log:\n{self.log_tail()}")

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def replica_pids(self) -> list[int]:
        if self.proc is None:
            return []
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid), "-f", "weir.compute.replica"],
                             capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    def replica_pids_of(self, replica_id: str) -> set[int]:
        """This server's processes of one replica (another server's replica may share its id)."""
        if self.proc is None:
            return set()
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid), "-f",
                              f"weir.compute.replica .*--replica-id {replica_id}( |$)"],
                             capture_output=True, text=True)
        return {int(p) for p in out.stdout.split()}

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int | None:
        if self.proc is None:
            return None
        self._replicas = self.replica_pids()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._kill_replicas()
        return self.proc.returncode

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def _kill_replicas(self) -> None:
        """After kill -9 of the server its replicas exit on their own (stdin closes); make
        sure of it so no JVM outlives a test."""
        deadline = time.time() + 10
        for pid in getattr(self, "_replicas", []):
            while time.time() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.2)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def connect(self, **kw: object) -> psycopg.Connection:
        return psycopg.connect(self.dsn, autocommit=True, **kw)  # type: ignore[arg-type]

    def metric(self, name: str, **labels: str) -> float:
        """The value of one sample on /metrics (0 when absent)."""
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/metrics", timeout=10) as r:
            text = r.read().decode()
        want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        for line in text.splitlines():
            key, _, value = line.rpartition(" ")
            if key == (f"{name}{{{want}}}" if want else name):
                return float(value)
        return 0.0


def wait_for_rows(c: psycopg.Connection, sql: str, ok: Callable[[list[tuple[Any, ...]]], bool],
                  timeout: float = 120) -> list[tuple[Any, ...]]:
    """Poll `sql` until `ok(rows)`; raise with the last rows after `timeout` seconds."""
    deadline = time.time() + timeout
    rows: list[tuple[Any, ...]] = []
    while time.time() < deadline:
        rows = c.execute(sql).fetchall()
        if ok(rows):
            return rows
        time.sleep(0.3)
    raise AssertionError(f"{sql}: still {rows}")
