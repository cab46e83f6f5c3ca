"""A throwaway real PostgreSQL server for tests (catalog backend, wire comparisons).

Usage in a test module:

    from tests.pg_server import pg_server  # noqa: F401  (session-scoped fixture)

    def test_x(pg_server):
        url = pg_server.create_database("t1")   # postgresql+psycopg://...
        dsn = pg_server.dsn("t1")               # libpq/psycopg conninfo

The fixture skips (with the reason) when PostgreSQL binaries are missing or the
server cannot start. It runs initdb + pg_ctl on a free port with trust auth,
its data and unix-socket directory in a private temp dir; as root it runs them
as the `postgres` user, since initdb refuses to run as root.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SUPERUSER = "postgres"


def find_pg_bin() -> Path | None:
    """The newest PostgreSQL server bin dir (Debian layout, $PG_BIN, or PATH)."""
    env = os.environ.get("PG_BIN")
    if env and (Path(env) / "initdb").exists():
        return Path(env)
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                  key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0)
    for d in reversed(dirs):
        if (Path(d) / "initdb").exists() and (Path(d) / "pg_ctl").exists():
            return Path(d)
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    bin_dir: Path
    base: Path
    port: int
    run_as: str | None  # OS user the server runs as (None: the current user)
    host: str = "127.0.0.1"
    user: str = SUPERUSER

    @property
    def data_dir(self) -> Path:
        return self.base / "data"

    @property
    def socket_dir(self) -> Path:
        return self.base / "sock"

    @property
    def version(self) -> str:
        return self._run([str(self.bin_dir / "postgres"), "--version"]).stdout.strip()

    def _run(self, argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        if self.run_as:
            argv = ["runuser", "-u", self.run_as, "--", *argv]
        return subprocess.run(argv, capture_output=True, text=True, check=check, timeout=120)

    def start(self) -> None:
        self._run([str(self.bin_dir / "initdb"), "-D", str(self.data_dir), "-U", self.user,
                   "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"])
        opts = (f"-p {self.port} -k {self.socket_dir} -c listen_addresses={self.host} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                "-c max_connections=200 -c timezone=UTC")  # weir's only zone (Debian's initdb picks Etc/UTC)
        self._run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-o", opts,
                   "-l", str(self.base / "server.log"), "-w", "-t", "60", "start"])

    def stop(self) -> None:
        self._run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "immediate",
                   "-w", "stop"], check=False)

    def log(self) -> str:
        p = self.base / "server.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host={self.host} port={self.port} user={self.user} dbname={dbname}"

    def url(self, dbname: str = "postgres", driver: str = "psycopg") -> str:
        """SQLAlchemy URL, e.g. postgresql+psycopg://postgres@127.0.0.1:5433/db."""
        return f"postgresql+{driver}://{self.user}@{self.host}:{self.port}/{dbname}"

    def execute(self, sql: str, dbname: str = "postgres") -> None:
        """Run one statement in autocommit mode (CREATE DATABASE etc.)."""
        import psycopg

        with psycopg.connect(self.dsn(dbname), autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]

    def create_database(self, name: str) -> str:
        """A fresh database (dropped first if it exists); returns its SQLAlchemy URL."""
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def start_pg_server() -> PgServer:
    """Start a server or raise RuntimeError saying why it cannot."""
    bin_dir = find_pg_bin()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL server binaries (initdb, pg_ctl) not found")
    run_as = None
    base = Path(tempfile.mkdtemp(prefix="weir-pg-"))
    if os.geteuid() == 0:
        try:
            pw = pwd.getpwnam(SUPERUSER)
        except KeyError:
            raise RuntimeError("running as root and there is no 'postgres' OS user") from None
        if shutil.which("runuser") is None:
            raise RuntimeError("running as root and runuser is missing")
        run_as = SUPERUSER
        os.chmod(base, 0o755)
        os.chown(base, pw.pw_uid, pw.pw_gid)
    server = PgServer(bin_dir, base, free_port(), run_as)
    for d in (server.socket_dir,):
        d.mkdir()
        if run_as:
            os.chown(d, pw.pw_uid, pw.pw_gid)
    try:
        server.start()
    except subprocess.CalledProcessError as e:
        log = server.log()
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {e.stderr or e.stdout} {log}") from e
    return server


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A running PostgreSQL for the whole test session (skips if unavailable)."""
    try:
        server = start_pg_server()
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        pytest.skip(f"no PostgreSQL server: {e}")
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.base, ignore_errors=True)
