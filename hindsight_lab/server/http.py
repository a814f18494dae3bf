"""The streamable HTTP transport: the MCP endpoint at ``/mcp``, a health endpoint at ``/health``, the bearer-token
check around both, and uvicorn to serve them.

Many clients may call at once (each its own MCP session); their tool calls run in worker threads and meet at the
pool's lock. Request bodies are limited to ``server.max_request_bytes``
(:class:`~hindsight_lab.server.config.ServerConfig`).

Examples:
    >>> app = build_http_app(server, pool, schedule, settings, host="127.0.0.1", token=None)  # doctest: +SKIP
    >>> anyio.run(serve_http, app, "127.0.0.1", 8765)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from .. import __version__
from .auth import BearerAuth
from .config import ServerConfig
from .maintenance import MaintenanceSchedule
from .pool import MemoryPool

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
HEALTH_PATH = "/health"


def build_http_app(server: "MCPServer", pool: MemoryPool, schedule: MaintenanceSchedule, settings: ServerConfig, *,
                   host: str, token: str | None) -> Any:
    """The ASGI app: ``/mcp`` (streamable HTTP, bodies up to ``settings.max_request_bytes``) and ``/health``, behind
    :class:`BearerAuth` when a token is set."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    started = time.monotonic()
    from ..store import is_postgres_url

    url = pool.config.store.url
    store = "postgres" if is_postgres_url(url) else "chroma-server" if url else "embedded"

    async def health(request: Request) -> JSONResponse:
        import anyio

        # the store is probed (a Chroma server's heartbeat, bounded; an embedded folder's database file): a
        # stalled or lost store is "degraded", with why, and HTTP 503, instead of a 200 "ok" while every call hangs
        status, why = await anyio.to_thread.run_sync(pool.health)
        body = {"status": status, "service": "hindsight-lab", "version": __version__, "store": store,
                "namespaces": pool.namespaces(), "uptime_s": round(time.monotonic() - started, 1),
                "maintenance": schedule.status()}
        stats = getattr(pool.embedder_, "stats", None)
        if callable(stats):  # server.batch_embeddings: model passes against calls
            body["embedding"] = stats()
        if why:
            body["reason"] = why
        return JSONResponse(body, status_code=200 if status == "ok" else 503)

    server.custom_route(HEALTH_PATH, methods=["GET"])(health)
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, json_response=True,
                                     max_request_body_size=settings.max_request_bytes, host=host)
    return BearerAuth(app, token) if token else app


async def serve_http(app: Any, host: str, port: int) -> None:
    """Serve until SIGINT/SIGTERM, then return (so the caller closes the store)."""
    import signal

    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="info", access_log=False, lifespan="on")
    # uvicorn shuts down gracefully on a signal, then raises it again under the handler it found; a no-op handler
    # keeps that second delivery from killing the process before the store is flushed and closed
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        await uvicorn.Server(config).serve()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
