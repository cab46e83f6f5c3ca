"""A class-data sharing (CDS) archive of the classes a replica's JVM loads.

Starting a SparkSession loads some 15,000 classes; on a 2-core machine that is most
of a replica's 13 s start, and a replica starts whenever it is created, restarted
after a crash, or its server restarts. An archive of those classes, mapped at
start (and shared between the replicas of a machine), halves it: measured 9.6 s ->
6.0 s to a session and 4.4 s -> 1.7 s for the first query.

Java 17 has no automatic archive, so one is made once per machine and Spark/Java
installation: a short-lived JVM runs a few representative queries with
`-XX:ArchiveClassesAtExit` and writes the archive when it exits cleanly. The JVM
validates an archive before mapping it and ignores one that does not match (another
JDK, other jars), so a stale archive costs the speed-up, never correctness.

`python -m weir.compute.replica.class_archive` makes it if missing (the test
command runs this; a replica starts it in the background when it finds none).
`WEIR_CLASS_ARCHIVE=off` turns it off (bench/replica_start.py compares the two).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

log = logging.getLogger(__name__)

# the JVM's complaints about an archive it will not use (it then starts without one)
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def _cache_dir() -> Path:
    base = os.environ.get("WEIR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "weir")
    return Path(base)


def _installation_key() -> str:
    """What the archive depends on: the JDK and Spark's jars (their paths and versions)."""
    import pyspark

    java = shutil.which("java") or ""
    if os.environ.get("JAVA_HOME"):
        java = os.path.join(os.environ["JAVA_HOME"], "bin", "java")
    java = os.path.realpath(java) if java else ""
    release = Path(java).parent.parent / "release"
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    parts = [java, release.read_text(errors="replace") if release.exists() else "",
             str(jars), pyspark.__version__]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _enabled() -> bool:
    return os.environ.get("WEIR_CLASS_ARCHIVE", "on").lower() not in ("off", "0", "false", "no")


def archive_path() -> Path:
    return _cache_dir() / f"spark-classes-{_installation_key()}.jsa"


def java_options() -> str:
    """Options that map the archive, or "" when there is none yet."""
    if not _enabled():
        return ""
    try:
        path = archive_path()
    except Exception:  # noqa: BLE001 - no archive is only slower
        return ""
    return f"-XX:SharedArchiveFile={path} {_QUIET}" if path.exists() else ""


def build_in_background() -> None:
    """Start making the archive in a separate, low-priority process (returns at once)."""
    try:
        if not _enabled() or archive_path().exists():
            return
        subprocess.Popen([sys.executable, "-m", __name__, "--nice"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    except Exception:  # noqa: BLE001 - no archive is only slower
        log.warning("could not start making the JVM class archive", exc_info=True)


def _exercise(spark: object) -> None:
    """Load the classes a replica uses: SQL planning and codegen, joins, aggregates,
    windows, Arrow in and out."""
    import pyarrow as pa

    s = spark  # type: ignore[assignment]
    df = s.createDataFrame(pa.table({"k": [1, 2, 2], "v": ["a", "b", None]}))  # type: ignore[attr-defined]
    df.createOrReplaceTempView("t")
    for q in ("SELECT k, count(*), max(v) FROM t GROUP BY k",
              "SELECT a.k, b.v FROM t a JOIN t b ON a.k = b.k LEFT JOIN t c ON c.v = a.v",
              "SELECT k, row_number() OVER (PARTITION BY k ORDER BY v) FROM t",
              "SELECT CAST(k AS DECIMAL(38, 10)) / 3, CAST('2024-01-01' AS TIMESTAMP), "
              "explode(array(1, 2)) FROM t WHERE v IS NOT NULL",
              "SELECT count(*) FROM range(1000) UNION ALL SELECT 1"):
        s.sql(q).toArrow()  # type: ignore[attr-defined]


def build(nice: bool = False) -> Path | None:
    """Make the archive unless it exists or another process is making it."""
    target = archive_path()
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_suffix(".lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # another process is making it
        if target.exists():
            return target
        if nice:
            with contextlib.suppress(OSError):
                os.nice(10)
        tmp = target.with_name(f"{target.stem}.{os.getpid()}.tmp")
        _dump(tmp)
        if not tmp.exists():
            log.warning("the JVM wrote no class archive")
            return None
        os.replace(tmp, target)
        return target


def _dump(tmp: Path) -> None:
    from weir.compute.replica.engine import jvm_process, spark_conf, spark_session
    from weir.compute.sizes import DEFAULT_SIZES

    conf = spark_conf(DEFAULT_SIZES["1"], archive=False)
    conf["spark.driver.extraJavaOptions"] += f" -XX:ArchiveClassesAtExit={tmp} {_QUIET}"
    conf["spark.app.name"] = "weir-class-archive"
    spark = spark_session(conf)
    proc = jvm_process(spark)
    try:
        _exercise(spark)
    finally:
        spark.stop()
        if proc is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()  # the JVM exits when its stdin closes, writing the archive
            deadline = time.monotonic() + 120
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    logging.getLogger("py4j").setLevel(logging.WARNING)
    t0 = time.monotonic()
    made = build(nice="--nice" in sys.argv)
    if made is not None:
        log.info("JVM class archive: %s (%.0f s)", made, time.monotonic() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
