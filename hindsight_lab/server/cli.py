"""``hindsight-lab serve``: the MCP memory server on stdio or streamable HTTP.

The config file says how memory behaves (an exported :class:`~hindsight_lab.config.LabConfig`, loaded unchanged);
``--store`` says where it lives: a folder (embedded Chroma), a Chroma server URL, or a Postgres URL
(``postgresql://USER@HOST:5432/DB``, the password from ``PGPASSWORD``). One server process writes a store (a
namespace, on Postgres, which enforces it). Logs go to stderr (stdout is the stdio transport's channel); the token
is never logged.

Examples:
    hindsight-lab serve --config experiments/configs/default.yaml --store memory-store
    HINDSIGHT_MCP_TOKEN=... hindsight-lab serve --config tuned.yaml --store http://chroma:8000 --transport http \\
        --host 0.0.0.0 --port 8765
    PGPASSWORD=... hindsight-lab serve --config tuned.yaml --store postgresql://hindsight@db:5432/hindsight
"""

from __future__ import annotations

import argparse
import logging
import sys
from urllib.parse import urlsplit, urlunsplit

logger = logging.getLogger(__name__)


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` options; the command body is :func:`run_serve_cli`."""
    parser.add_argument("--config", required=True, help="LabConfig YAML file (e.g. one written by export)")
    parser.add_argument("--store", required=True, help="folder of an embedded Chroma store, a Chroma server URL, "
                        "or a Postgres URL (postgresql://USER@HOST:5432/DB, postgresql+embedded:///FOLDER)")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                        help="stdio for one local client (default), http (streamable HTTP at /mcp) for many")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1; any other "
                        "needs a bearer token in the variable server.token_env names)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help="dotted config override (repeatable)")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="log level on stderr (default INFO)")
    parser.set_defaults(func=run_serve_cli)


def _redact(store: str) -> str:
    """A store URL without user:password."""
    if "://" not in store:
        return store
    parts = urlsplit(store)
    host = parts.hostname or ""
    return urlunsplit(parts._replace(netloc=host + (f":{parts.port}" if parts.port else "")))


def run_serve_cli(args: argparse.Namespace) -> int:
    """Load the config, check the bind, open the store, serve until the transport ends."""
    from ..cliargs import load_config
    from .auth import check_bind, read_token

    logging.basicConfig(stream=sys.stderr, level=args.log_level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cfg = load_config(args)
    cfg = cfg.with_params({"store.url": args.store} if "://" in args.store else {"store.path": args.store})
    token = None
    if args.transport == "http":
        token = read_token(cfg.server.token_env)
        check_bind(args.host, token, cfg.server.token_env)  # before anything heavy is loaded

    import anyio

    from ..store import is_postgres_url
    from ..store.pgconn import public_url
    from .app import build_server, tool_names
    from .maintenance import MaintenanceSchedule, alongside
    from .pool import MemoryPool

    pool = MemoryPool(cfg).open()
    try:
        server = build_server(pool)
        schedule = MaintenanceSchedule(pool, cfg.server.maintenance_interval_s)
        where = (f"Postgres store {public_url(args.store)}" if is_postgres_url(cfg.store.url)
                 else f"Chroma server {_redact(args.store)}" if cfg.store.url else f"embedded store {args.store}")
        logger.info("serving %s over %s; model %s; namespace %r; tools %s; maintenance every %s s", where,
                    args.transport if args.transport == "stdio" else f"http://{args.host}:{args.port}/mcp",
                    cfg.embedder.model, pool.default_namespace, ", ".join(tool_names(cfg.server.tool_prefix).values()),
                    cfg.server.maintenance_interval_s or "- (off)")
        if args.transport == "http":
            from .http import build_http_app, serve_http

            logger.info("bearer token: %s", f"required (from ${cfg.server.token_env})" if token else "not configured")
            app = build_http_app(server, pool, schedule, host=args.host, token=token)
            anyio.run(alongside, schedule, lambda: serve_http(app, args.host, args.port))
        else:
            anyio.run(alongside, schedule, lambda: _stdio_until_signal(server))
    finally:
        pool.close()
        logger.info("store closed")
    return 0


async def _stdio_until_signal(server: object) -> None:
    """The stdio transport until its input closes, or SIGTERM/SIGINT (then the store still closes cleanly)."""
    import signal

    import anyio

    async with anyio.create_task_group() as tg:
        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(watch)
        await server.run_stdio_async()  # type: ignore[attr-defined]
        tg.cancel_scope.cancel()
