"""Run the MCP memory server on a loaded config until its transport ends: the library entry point behind
``hindsight-lab serve`` (:mod:`hindsight_lab.cli.serve` parses the options and calls :func:`run_server`).

The config says how memory behaves (an exported :class:`~hindsight_lab.config.LabConfig`, loaded unchanged) and
where it lives (``store.path``: embedded Chroma, or ``store.url``: a Chroma server); the settings
(:class:`~hindsight_lab.server.config.ServerConfig`) say how the server runs. One server process writes a
store. Logs go to stderr (stdout is the stdio transport's channel); the token is never logged.

Examples:
    >>> cfg = LabConfig.from_yaml("experiments/configs/default.yaml")  # doctest: +SKIP
    >>> cfg = cfg.with_params({"store.path": "memory-store"})  # doctest: +SKIP
    >>> run_server(cfg, "memory-store", transport="stdio")  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Literal

from ..redact import mask_secrets

if TYPE_CHECKING:
    from ..config import LabConfig
    from .config import ServerConfig

logger = logging.getLogger(__name__)


def run_server(cfg: "LabConfig", store: str, settings: "ServerConfig | None" = None, *,
               transport: Literal["stdio", "http"] = "stdio", host: str = "127.0.0.1", port: int = 8765) -> None:
    """Check the bind, open the store ``cfg`` names (``store`` is how the log names it), serve until the transport
    ends, then close the store.

    Raises:
        ConfigError: an HTTP bind beyond the loopback without a bearer token (checked before anything heavy loads).
    """
    from .auth import check_bind, read_token
    from .config import ServerConfig

    settings = settings if settings is not None else ServerConfig()
    token = None
    if transport == "http":
        token = read_token(settings.token_env)
        check_bind(host, token, settings.token_env)  # before anything heavy is loaded

    import anyio

    from ..store import is_postgres_url
    from ..store.pgconn import public_url
    from .app import build_server, tool_names
    from .maintenance import MaintenanceSchedule, alongside
    from .pool import MemoryPool

    pool = MemoryPool(cfg, settings).open()
    try:
        server = build_server(pool, settings)
        schedule = MaintenanceSchedule(pool, settings.maintenance_interval_s)
        where = (f"Postgres store {public_url(store)}" if is_postgres_url(cfg.store.url)
                 else f"Chroma server {mask_secrets(store)}" if cfg.store.url else f"embedded store {store}")
        logger.info("serving %s over %s; model %s; namespace %r; tools %s; maintenance every %s s", where,
                    transport if transport == "stdio" else f"http://{host}:{port}/mcp",
                    cfg.embedder.model, pool.default_namespace, ", ".join(tool_names(settings.tool_prefix).values()),
                    settings.maintenance_interval_s or "- (off)")
        if transport == "http":
            from .http import build_http_app, serve_http

            logger.info("bearer token: %s", f"required (from ${settings.token_env})" if token else "not configured")
            app = build_http_app(server, pool, schedule, settings, host=host, token=token)
            anyio.run(alongside, schedule, lambda: serve_http(app, host, port))
        else:
            anyio.run(alongside, schedule, lambda: _stdio_until_signal(server))
    finally:
        pool.close()
        logger.info("store closed")


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
