"""The `weir` command: `weir serve` runs the server with embedded defaults; `weir status`
and `weir hydration` ask a running one."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import ssl
import sys
from pathlib import Path
from typing import Any

log = logging.getLogger("weir")


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="weir", description="weir: a streaming SQL database on Apache Spark")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the weir server")
    s.add_argument("--data-dir", default=os.environ.get("WEIR_DATA_DIR", "weir-data"))
    s.add_argument("--host", default=os.environ.get("WEIR_HOST", "127.0.0.1"),
                   help="address to listen on (default 127.0.0.1)")
    s.add_argument("--sql-port", type=int, default=_env_int("WEIR_SQL_PORT", 6875))
    s.add_argument("--http-port", type=int, default=_env_int("WEIR_HTTP_PORT", 6876))
    s.add_argument("--catalog-url", default=os.environ.get("WEIR_CATALOG_URL"),
                   help="SQLAlchemy URL of the catalog (default: SQLite in the data directory)")
    s.add_argument("--auth", choices=["trust", "password", "scram-sha-256"],
                   default=os.environ.get("WEIR_AUTH", "trust"),
                   help="authentication for non-loopback clients (loopback is trusted unless "
                        "--no-loopback-trust)")
    s.add_argument("--no-loopback-trust", action="store_true",
                   help="apply --auth to loopback clients too")
    s.add_argument("--tls-cert", default=os.environ.get("WEIR_TLS_CERT"))
    s.add_argument("--tls-key", default=os.environ.get("WEIR_TLS_KEY"))
    s.add_argument("--log-level", default=os.environ.get("WEIR_LOG_LEVEL", "info"))
    s.add_argument("--replica-sizes", default=os.environ.get("WEIR_REPLICA_SIZES"),
                   help='JSON file {"sizes": {NAME: {"master", "workers", "driver_memory", '
                        '"spark_conf"}}} adding or overriding cluster replica sizes')
    s.add_argument("--replica-heartbeat-timeout", type=float,
                   default=float(os.environ.get("WEIR_REPLICA_HEARTBEAT_TIMEOUT", "30")),
                   help="seconds without a heartbeat before a replica is replaced by a new incarnation "
                        "(0: never)")
    s.add_argument("--replica-kill-grace", type=float,
                   default=float(os.environ.get("WEIR_REPLICA_KILL_GRACE", "0")),
                   help="seconds a replaced, unresponsive replica process is left before SIGKILL")
    st = sub.add_parser("status", help="ask a running server for its health")
    st.add_argument("--http-port", type=int, default=_env_int("WEIR_HTTP_PORT", 6876))
    h = sub.add_parser("hydration", help="show how far indexes and materialized views have hydrated",
                       description="Per index and materialized view and per replica: hydrated or "
                                   "not, and a progress bar per plan node of those still hydrating.")
    h.add_argument("object", nargs="?",
                   help="only this index or materialized view (name, schema.name or id like u12), "
                        "with its plan nodes even once hydrated")
    h.add_argument("--watch", action="store_true",
                   help="refresh until every displayed object is hydrated, then exit 0")
    h.add_argument("--interval", type=float, default=1.0, help="seconds between refreshes (default 1)")
    h.add_argument("--host", default="127.0.0.1", help="server address (default 127.0.0.1)")
    h.add_argument("--port", type=int, default=_env_int("WEIR_SQL_PORT", 6875),
                   help="SQL port (default $WEIR_SQL_PORT or 6875)")
    h.add_argument("--user", default="materialize")
    h.add_argument("--database", default="materialize")
    return p


def _replica_sizes(path: str | None) -> dict[str, Any]:
    """The "sizes" of a size-map file (see weir.compute.sizes), {} without one."""
    from weir.compute.sizes import size_map

    if not path:
        return {}
    sizes = json.loads(Path(path).read_text()).get("sizes") or {}
    size_map({"sizes": sizes})  # a malformed entry fails here, not when a replica starts
    return dict(sizes)


async def serve(args: argparse.Namespace) -> int:
    from weir.adapter.coordinator import Coordinator, ServerConfig
    from weir.http import metrics
    from weir.http.server import HttpServer
    from weir.pgwire.server import PgServer

    config = ServerConfig(
        data_dir=Path(args.data_dir), host=args.host, sql_port=args.sql_port, http_port=args.http_port,
        catalog_url=args.catalog_url, auth=args.auth, auth_loopback_trust=not args.no_loopback_trust,
        tls_cert=args.tls_cert, tls_key=args.tls_key, replica_sizes=_replica_sizes(args.replica_sizes),
        replica_heartbeat_timeout=args.replica_heartbeat_timeout, replica_kill_grace=args.replica_kill_grace,
    )
    tls = None
    if config.tls_cert and config.tls_key:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(config.tls_cert, config.tls_key)
    coord = Coordinator(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await coord.start()
    metrics.bind(coord)
    pg = PgServer(coord, config.host, config.sql_port, tls=tls, metrics=metrics.pgwire_metric)
    await pg.start()
    http = HttpServer(config.host, config.http_port, lambda: {
        "status": "ok", "sessions": len(coord.sessions), "replicas_online": coord.ready_replica_ids()})
    await http.start()
    log.info("weir is ready: SQL on %s:%d (psql -h %s -p %d -U materialize materialize), HTTP on %d",
             config.host, pg.port, config.host, pg.port, http.port)
    await stop.wait()
    log.info("shutting down")
    await pg.stop()
    await http.stop()
    await coord.stop()
    return 0


def status(args: argparse.Namespace) -> int:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{args.http_port}/health", timeout=5) as r:
            print(r.read().decode().strip())
            return 0
    except OSError as e:
        print(f"weir is not reachable on port {args.http_port}: {e}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "status":
        return status(args)
    if args.command == "hydration":
        from weir.hydration_cli import run  # a SQL client: rich and psycopg, none of the server

        return run(args)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)-5s %(name)s: %(message)s", stream=sys.stderr)
    for noisy in ("py4j", "pyiceberg", "sqlglot"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # two writers of one shard (replicas) both try to delete superseded metadata files
    logging.getLogger("pyiceberg.catalog").setLevel(logging.ERROR)
    try:
        return asyncio.run(serve(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
