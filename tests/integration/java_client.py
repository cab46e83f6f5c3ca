"""Java test programs run against weir through pgjdbc (Debian's libpostgresql-jdbc-java):
compiled once per module with javac against the driver's jar."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

JAVA_DIR = Path(__file__).parent / "java"
JAR_CANDIDATES = [os.environ.get("WEIR_PGJDBC_JAR", ""), "/usr/share/java/postgresql.jar"]


def compile_program(tmp_path_factory: pytest.TempPathFactory, name: str) -> list[str]:
    """The java command line (without arguments) of java/NAME.java, compiled; skips the
    test when there is no JDK or no pgjdbc."""
    java, javac = shutil.which("java"), shutil.which("javac")
    if java is None or javac is None:
        pytest.skip("java and javac (a JDK) are needed for the pgjdbc tests")
    jar = next((p for p in JAR_CANDIDATES if p and Path(p).is_file()), None)
    if jar is None:
        pytest.skip("pgjdbc is not installed (Debian: libpostgresql-jdbc-java gives "
                    "/usr/share/java/postgresql.jar; or set WEIR_PGJDBC_JAR)")
    source = JAVA_DIR / f"{name}.java"
    out = tmp_path_factory.mktemp(name)
    shutil.copy(source, out / source.name)
    p = subprocess.run([javac, "-cp", jar, "-d", str(out), str(out / source.name)],
                       capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, f"javac failed:\n{p.stdout}\n{p.stderr}"
    return [java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", f"{jar}{os.pathsep}{out}", name]
