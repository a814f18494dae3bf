"""Who may talk to the HTTP server: loopback by default, a bearer token for anything else.

- The token lives in an environment variable that the server's settings name (``server.token_env``, default
  ``HINDSIGHT_MCP_TOKEN``); the config never holds it and nothing logs it.
- A bind to a non-loopback address without a token is refused (:func:`check_bind`).
- With a token, :class:`BearerAuth` checks ``Authorization: Bearer <token>`` on every HTTP request, the health
  endpoint included, and answers 401 otherwise.

Examples:
    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, False)
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
from typing import Any, Awaitable, Callable

from ..errors import ConfigError

logger = logging.getLogger(__name__)

MIN_TOKEN_CHARS = 16

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server reachable from this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def read_token(env_name: str) -> str | None:
    """The bearer token from ``$env_name`` (None when unset or empty); a short one is refused."""
    token = os.environ.get(env_name, "").strip()
    if not token:
        return None
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(f"${env_name} holds a bearer token of {len(token)} characters; use a random secret of at "
                          f"least {MIN_TOKEN_CHARS}, e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))'")
    return token


def check_bind(host: str, token: str | None, env_name: str) -> None:
    """Refuse a non-loopback bind without a bearer token."""
    if token is None and not is_loopback(host):
        raise ConfigError(f"--host {host}: refusing to bind a non-loopback address without a bearer token; set "
                          f"${env_name} (server.token_env) to a secret of at least {MIN_TOKEN_CHARS} characters, or "
                          "bind 127.0.0.1")


class BearerAuth:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>`` (compared in constant time)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], token: str) -> None:
        self.app = app
        self._expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        client = (scope.get("client") or ("?",))[0]
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        logger.info("401: %s %s from %s without a valid bearer token", scope.get("method", ""), scope.get("path"),
                    client)
        body = json.dumps({"error": "unauthorized",
                           "detail": "missing or invalid bearer token (Authorization: Bearer <token>)"}).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"www-authenticate", b'Bearer realm="hindsight-lab"')]})
        await send({"type": "http.response.body", "body": body})

    def _authorized(self, scope: Scope) -> bool:
        got = next((v for k, v in scope.get("headers") or [] if k == b"authorization"), b"")
        scheme, _, credentials = got.strip().partition(b" ")
        # RFC 9110 §11.1: the scheme is case-insensitive ("bearer" is "Bearer"); the token is compared in
        # constant time whatever the scheme said, so a wrong scheme costs as much as a wrong token.
        token_ok = hmac.compare_digest(credentials.strip(), self._expected)
        return scheme.lower() == b"bearer" and token_ok
