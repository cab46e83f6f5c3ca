"""A replica's health as its heartbeat reports it (mz_internal.mz_cluster_replica_metrics):
CPU and resident memory of the replica process and its Spark JVM (psutil), and the JVM's
heap and GC time (read from the JVM by the introspection thread, never by the heartbeat,
so a busy JVM cannot delay heartbeats)."""

from __future__ import annotations

import threading
import time
from typing import Any

import psutil


class ProcessMetrics:
    def __init__(self, jvm_pid: int | None) -> None:
        self._procs = [psutil.Process()]
        if jvm_pid is not None:
            try:
                self._procs.append(psutil.Process(jvm_pid))
            except psutil.Error:
                pass
        self._last: tuple[float, float] | None = None  # (wall time, CPU seconds)
        self._lock = threading.Lock()
        self._jvm: dict[str, int] = {}
        self._beans: tuple[Any, list[Any], int] | None = None  # the JVM's Runtime, GC beans, heap limit

    def _cpu_seconds(self) -> float:
        total = 0.0
        for p in self._procs:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.Error:
                pass
        return total

    def sample(self) -> dict[str, Any]:
        """cpu_nano_cores (CPU used since the last sample, in billionths of a core),
        memory_bytes (resident), heap_bytes, heap_limit, gc_ns (the JVM's, as last read)."""
        now, cpu = time.monotonic(), self._cpu_seconds()
        with self._lock:
            last, self._last = self._last, (now, cpu)
            jvm = dict(self._jvm)
        nano_cores = None
        if last is not None and now > last[0]:
            nano_cores = max(0, int((cpu - last[1]) / (now - last[0]) * 1e9))
        rss = 0
        for p in self._procs:
            try:
                rss += p.memory_info().rss
            except psutil.Error:
                pass
        return {"cpu_nano_cores": nano_cores, "memory_bytes": rss, **jvm}

    def read_jvm(self, spark: Any) -> None:
        """Heap used and its limit, and total GC time, from the JVM. The JVM objects are
        looked up once (each py4j name lookup is a round trip): then one call per figure."""
        if self._beans is None:
            jvm = spark.sparkContext._jvm
            runtime = jvm.java.lang.Runtime.getRuntime()
            beans = jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
            self._beans = (runtime, [beans.get(i) for i in range(beans.size())], int(runtime.maxMemory()))
        runtime, gcs, limit = self._beans
        heap = int(runtime.totalMemory()) - int(runtime.freeMemory())
        gc_ms = sum(max(0, int(b.getCollectionTime())) for b in gcs)
        with self._lock:
            self._jvm = {"heap_bytes": heap, "heap_limit": limit, "gc_ns": gc_ms * 1_000_000}
