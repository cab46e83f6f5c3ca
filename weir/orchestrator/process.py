"""Runs replicas as local processes: start, watch, restart with backoff.

Each replica is `python -m weir.compute.replica` in its own process group
(so its Spark JVM can be stopped with it), with stderr and stdout appended to
`<log_dir>/replica-<id>.log`. Every start first asks the caller for a new
incarnation (`on_start`), so the catalog records each life of the replica;
`on_ready` gets the address once the replica prints its LISTENING line, and
`on_exit` how it ended. A replica that stays up for `stable_after` seconds
resets the restart backoff.

`replace_replica` is the liveness policy's lever: the caller saw the replica
stop heartbeating, so a new incarnation starts at once and the old process is
killed after `kill_grace` seconds (0: at once). A process that stopped
answering cannot be trusted to act on SIGTERM, and an orchestrator cut off from
its machine could not kill it at all: epoch fencing, not the kill, is what keeps
such a zombie from writing (a grace period lets tests show that).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import weir

log = logging.getLogger(__name__)

LISTENING = "WEIR_REPLICA_LISTENING"

OnStart = Callable[[], "int | Awaitable[int]"]
OnReady = Callable[[str, int, int], Awaitable[None]]
OnExit = Callable[["int | None", str], "Awaitable[None] | None"]


@dataclass
class ProcessInfo:
    """A snapshot of one managed replica process."""

    replica_id: str
    size: str
    pid: int | None
    incarnation: int | None
    running: bool
    restarts: int
    log_path: Path
    last_exit_code: int | None = None
    last_exit_reason: str | None = None


@dataclass
class _Managed:
    replica_id: str
    size: str
    config: dict[str, Any] | None
    on_start: OnStart
    on_ready: OnReady
    on_exit: OnExit
    log_path: Path
    proc: asyncio.subprocess.Process | None = None
    incarnation: int | None = None
    task: asyncio.Task[None] | None = None
    dropped: bool = False
    restarts: int = 0
    last_exit_code: int | None = None
    last_exit_reason: str | None = None
    first_spawn: asyncio.Future[None] | None = field(default=None, repr=False)
    replace: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    replace_reason: str = ""


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def exit_reason(code: int | None, log_path: Path | None = None) -> str:
    """How a process ended, in words ('oom-killed' when its log shows a Java OOM)."""
    if code is None:
        return "unknown"
    if log_path is not None and _log_mentions_oom(log_path):
        return "oom-killed"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


def _log_mentions_oom(path: Path, tail: int = 65536) -> bool:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - tail))
            text = f.read()
    except OSError:
        return False
    last_start = text.rfind(b"=== weir: starting replica")
    return b"java.lang.OutOfMemoryError" in text[max(0, last_start):]


class ProcessOrchestrator:
    def __init__(self, python_executable: str = sys.executable, log_dir: Path | None = None,
                 *, listen_host: str = "127.0.0.1", ready_timeout: float = 180.0,
                 min_backoff: float = 0.5, max_backoff: float = 30.0, stable_after: float = 60.0,
                 stop_timeout: float = 10.0, kill_grace: float = 0.0,
                 env: dict[str, str] | None = None) -> None:
        self.python = python_executable
        self.log_dir = Path(log_dir) if log_dir is not None else Path("weir-data") / "logs"
        self.listen_host = listen_host
        self.ready_timeout = ready_timeout
        self.min_backoff = min_backoff
        self.max_backoff = max_backoff
        self.stable_after = stable_after
        self.stop_timeout = stop_timeout
        self.kill_grace = kill_grace
        self.env = env
        self._replicas: dict[str, _Managed] = {}
        self._abandoned: set[asyncio.Task[None]] = set()

    # -- public API -------------------------------------------------------

    async def ensure_replica(self, replica_id: str, size: str, on_start: OnStart,
                             on_ready: OnReady, on_exit: OnExit,
                             config: dict[str, Any] | None = None) -> None:
        """Start the replica's process (if not running) and keep it running.

        Returns once the first process is spawned, not when it is ready:
        `on_ready` says that. Idempotent for a replica already managed.
        """
        if replica_id in self._replicas and not self._replicas[replica_id].dropped:
            return
        self.log_dir.mkdir(parents=True, exist_ok=True)
        m = _Managed(replica_id, str(size), config, on_start, on_ready, on_exit,
                     self.log_dir / f"replica-{replica_id}.log")
        m.first_spawn = asyncio.get_running_loop().create_future()
        self._replicas[replica_id] = m
        m.task = asyncio.create_task(self._supervise(m), name=f"replica-{replica_id}")
        await asyncio.shield(m.first_spawn)

    async def drop_replica(self, replica_id: str) -> None:
        """Stop the replica for good: SIGTERM, then SIGKILL (its whole group) after `stop_timeout`."""
        m = self._replicas.pop(replica_id, None)
        if m is None:
            return
        m.dropped = True
        if m.task is not None:
            m.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await m.task
        await self._terminate(m)

    def replace_replica(self, replica_id: str, reason: str) -> bool:
        """Start a new incarnation of a replica whose process stopped answering; the old
        process is killed `kill_grace` seconds later. False if it has no running process."""
        m = self._replicas.get(replica_id)
        if m is None or m.dropped or m.proc is None or m.proc.returncode is not None or m.replace.is_set():
            return False
        m.replace_reason = reason
        m.replace.set()
        return True

    async def stop(self) -> None:
        await asyncio.gather(*(self.drop_replica(r) for r in list(self._replicas)))
        for task in list(self._abandoned):
            task.cancel()

    def pid(self, replica_id: str) -> int | None:
        m = self._replicas.get(replica_id)
        return m.proc.pid if m is not None and m.proc is not None else None

    def processes(self) -> list[ProcessInfo]:
        return [
            ProcessInfo(m.replica_id, m.size, m.proc.pid if m.proc else None, m.incarnation,
                        m.proc is not None and m.proc.returncode is None, m.restarts,
                        m.log_path, m.last_exit_code, m.last_exit_reason)
            for m in self._replicas.values()
        ]

    # -- supervision ------------------------------------------------------

    def _command(self, m: _Managed, incarnation: int) -> list[str]:
        cmd = [self.python, "-m", "weir.compute.replica", "--listen", f"{self.listen_host}:0",
               "--replica-id", m.replica_id, "--size", m.size, "--incarnation", str(incarnation),
               "--exit-on-stdin-eof"]
        if m.config:
            cmd += ["--config", json.dumps(m.config)]
        return cmd

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ if self.env is None else self.env)
        root = str(Path(weir.__file__).resolve().parent.parent)
        paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        if root not in paths:
            env["PYTHONPATH"] = os.pathsep.join([root, *paths])
        env.setdefault("PYSPARK_PYTHON", self.python)
        env.setdefault("PYTHONUNBUFFERED", "1")
        return env

    async def _spawn(self, m: _Managed, incarnation: int) -> asyncio.subprocess.Process:
        with open(m.log_path, "ab") as logf:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            logf.write(f"=== weir: starting replica {m.replica_id} incarnation {incarnation} "
                       f"at {stamp} ===\n".encode())
            logf.flush()
            return await asyncio.create_subprocess_exec(
                *self._command(m, incarnation), stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=logf, env=self._environment(),
                start_new_session=True)

    async def _read_listening(self, m: _Managed, proc: asyncio.subprocess.Process
                              ) -> tuple[str, int] | None:
        assert proc.stdout is not None
        with open(m.log_path, "ab") as logf:
            while True:
                line = await proc.stdout.readline()
                if not line:
                    return None
                parts = line.decode(errors="replace").split()
                if len(parts) == 3 and parts[0] == LISTENING:
                    return parts[1], int(parts[2])
                logf.write(line)
                logf.flush()

    async def _drain_stdout(self, m: _Managed, proc: asyncio.subprocess.Process) -> None:
        """Keep reading stdout (the JVM shares it) so the process never blocks on it."""
        assert proc.stdout is not None
        with open(m.log_path, "ab") as logf:
            while line := await proc.stdout.readline():
                logf.write(line)
                logf.flush()

    async def _supervise(self, m: _Managed) -> None:
        backoff = self.min_backoff
        while not m.dropped:
            try:
                incarnation = int(await _maybe_await(m.on_start()))
                m.incarnation = incarnation
                started = time.monotonic()
                proc = await self._spawn(m, incarnation)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.exception("replica %s: could not start", m.replica_id)
                self._first_spawned(m)
                await self._exited(m, None, f"failed to start: {e}")
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.max_backoff)
                continue
            m.proc = proc
            self._first_spawned(m)
            log.info("replica %s incarnation %d: pid %d", m.replica_id, incarnation, proc.pid)
            drain: asyncio.Task[None] | None = None
            try:
                addr = await asyncio.wait_for(self._read_listening(m, proc), self.ready_timeout)
            except TimeoutError:
                log.error("replica %s did not listen within %.0fs", m.replica_id, self.ready_timeout)
                addr = None
                self._signal_group(proc, signal.SIGKILL)
            try:
                if addr is not None:
                    drain = asyncio.create_task(self._drain_stdout(m, proc))
                    try:
                        await m.on_ready(addr[0], addr[1], incarnation)
                    except asyncio.CancelledError:
                        raise
                    except Exception:
                        log.exception("replica %s: on_ready failed; restarting it", m.replica_id)
                        self._signal_group(proc, signal.SIGKILL)
                code, replaced = await self._wait_or_replace(m, proc)
                if replaced:
                    self._abandon(m, proc, drain)
                    drain = None
                else:
                    self._signal_group(proc, signal.SIGKILL)  # leftovers, e.g. an orphaned JVM
                if drain is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(asyncio.shield(drain), 2.0)
            finally:
                if drain is not None:
                    drain.cancel()
            if m.dropped:
                return
            m.restarts += 1
            reason = m.replace_reason if replaced else exit_reason(code, m.log_path)
            m.replace.clear()
            await self._exited(m, code, reason)
            if time.monotonic() - started >= self.stable_after:
                backoff = self.min_backoff
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.max_backoff)

    async def _wait_or_replace(self, m: _Managed, proc: asyncio.subprocess.Process
                               ) -> tuple[int | None, bool]:
        """Its exit code, or (None, True) once `replace_replica` gave up on it."""
        exited = asyncio.ensure_future(proc.wait())
        replace = asyncio.ensure_future(m.replace.wait())
        try:
            await asyncio.wait({exited, replace}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            replace.cancel()
            if not exited.done():
                exited.cancel()
        if exited.done() and not exited.cancelled():
            return exited.result(), False
        return None, True

    def _abandon(self, m: _Managed, proc: asyncio.subprocess.Process,
                 drain: asyncio.Task[None] | None) -> None:
        """Leave an unresponsive process to be killed after the grace period (its stdout
        still drained, so it never blocks on a full pipe if it wakes up)."""
        log.warning("replica %s incarnation %s (pid %d): %s; starting a new incarnation, killing "
                    "this one in %.0fs", m.replica_id, m.incarnation, proc.pid, m.replace_reason,
                    self.kill_grace)

        async def reap() -> None:
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(proc.wait()), self.kill_grace)
            finally:
                self._signal_group(proc, signal.SIGKILL)
                if drain is not None:
                    drain.cancel()
            with contextlib.suppress(ProcessLookupError):
                await proc.wait()

        task = asyncio.create_task(reap(), name=f"reap-{m.replica_id}-{proc.pid}")
        self._abandoned.add(task)
        task.add_done_callback(self._abandoned.discard)

    def _first_spawned(self, m: _Managed) -> None:
        if m.first_spawn is not None and not m.first_spawn.done():
            m.first_spawn.set_result(None)

    async def _exited(self, m: _Managed, code: int | None, reason: str) -> None:
        m.last_exit_code, m.last_exit_reason = code, reason
        log.warning("replica %s incarnation %s: %s", m.replica_id, m.incarnation, reason)
        try:
            await _maybe_await(m.on_exit(code, reason))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("replica %s: on_exit failed", m.replica_id)

    @staticmethod
    def _signal_group(proc: asyncio.subprocess.Process, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)

    async def _terminate(self, m: _Managed) -> None:
        proc = m.proc
        if proc is None:
            return
        if proc.returncode is None:
            # Only the replica: it stops Spark itself, and its JVM exits with it.
            if proc.stdin is not None:
                proc.stdin.close()
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), self.stop_timeout)
            except TimeoutError:
                log.warning("replica %s ignored SIGTERM; killing it", m.replica_id)
        self._signal_group(proc, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            await proc.wait()
