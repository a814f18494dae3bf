"""Bounded calls to a Chroma server: a timeout on every request, bounded retries of what a retry can fix, errors
that name the cause, and a breaker so that a stalled store costs one timeout, not one per queued call.

Without it a stalled server (SIGSTOP, a stuck disk, a long GC pause) hung every tool call of every client for as
long as it lasted, since chromadb's HTTP client has no timeout; a killed one answered "Error executing tool" with no
cause. With it:

* every HTTP request to the server is bounded by ``store.timeout_s`` (default 10 s), retries included;
* a refused or reset connection (the server restarting) is retried with backoff (``store.retries``) while that
  budget lasts; a timeout is not retried — waiting again for a stalled server doubles the wait for nothing;
* a failure raises :class:`~hindsight_lab.errors.StoreError` naming the URL (user and password masked) and the
  cause ("timed out after 10.0 s", "unreachable: connection refused");
* after a timeout the breaker is open for ``_COOLDOWN_S``: calls fail at once with the same cause instead of each
  waiting out its own timeout; the first call after the cooldown tries the server again, and a success closes it.

Embedded stores (a folder) need none of this: their calls are local.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Callable, TypeVar
from urllib.parse import urlsplit, urlunsplit

from ..errors import StoreError

__all__ = ["StoreGuard", "probe", "public_url"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
_COOLDOWN_S = 2.0
_BACKOFF_S = 0.2


def public_url(url: str | None) -> str | None:
    """A URL without user and password (for messages and logs).

    Examples:
        >>> public_url("http://admin:s3cret@db.internal:8000/x")
        'http://db.internal:8000/x'
    """
    if not url:
        return url
    parts = urlsplit(url if "://" in url else f"http://{url}")
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _is_timeout(exc: BaseException) -> bool:
    import httpx

    return isinstance(exc, (httpx.TimeoutException, TimeoutError))


def _is_connection(exc: BaseException) -> bool:
    import httpx

    return isinstance(exc, (httpx.NetworkError, httpx.RemoteProtocolError, ConnectionError))


class StoreGuard:
    """The timeout, retries and breaker of one Chroma server client (shared by every namespace on it)."""

    def __init__(self, url: str, *, timeout_s: float = 10.0, retries: int = 2) -> None:
        self.url, self.timeout_s, self.retries = public_url(url), float(timeout_s), int(retries)
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._reason: str | None = None

    def bound(self, client: Any) -> Any:
        """Put the timeout on ``client``'s HTTP session (chromadb keeps it as ``client._server._session``; a test
        with a stalled server fails if a chromadb release moves it)."""
        import httpx

        session = getattr(getattr(client, "_server", None), "_session", None)
        if not isinstance(session, httpx.Client):
            raise StoreError(f"store {self.url}: cannot bound its calls (this chromadb client keeps no httpx "
                             "session where hindsight_lab expects it)")
        session.timeout = httpx.Timeout(self.timeout_s)
        return client

    @property
    def reason(self) -> str | None:
        """Why the store is unavailable (the last failure, while the breaker is open), else None."""
        with self._lock:
            return self._reason if time.monotonic() < self._down_until else None

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()`` within the budget; raises :class:`StoreError` naming the URL and the cause."""
        with self._lock:
            if time.monotonic() < self._down_until:
                raise StoreError(f"store {self.url} unavailable ({self._reason}); {what} not attempted")
        deadline = time.monotonic() + self.timeout_s
        attempt = 0
        while True:
            try:
                result = fn()
            except Exception as exc:  # noqa: BLE001 (a transport fault becomes a StoreError naming it)
                if not (_is_timeout(exc) or _is_connection(exc)):
                    raise  # the server answered: its error (no such collection, …) is the caller's to handle
                if _is_connection(exc) and attempt < self.retries and time.monotonic() + _BACKOFF_S < deadline:
                    attempt += 1
                    time.sleep(_BACKOFF_S * attempt)
                    continue
                raise self._failed(what, exc) from None
            with self._lock:
                self._down_until, self._reason = 0.0, None
            return result

    def _failed(self, what: str, exc: BaseException) -> StoreError:
        reason = f"timed out after {self.timeout_s:g} s" if _is_timeout(exc) else f"unreachable: {exc}"
        with self._lock:
            self._down_until, self._reason = time.monotonic() + _COOLDOWN_S, reason
        logger.warning("store %s: %s failed: %s", self.url, what, reason)
        return StoreError(f"store {self.url} {reason} ({what})")


def probe(url: str, timeout_s: float = 2.0) -> str | None:
    """Why the Chroma server at ``url`` does not answer its heartbeat within ``timeout_s`` (None: it does)."""
    base = url if "://" in url else f"http://{url}"
    try:
        with urllib.request.urlopen(f"{base.rstrip('/')}/api/v2/heartbeat", timeout=timeout_s) as resp:
            resp.read()
        return None
    except TimeoutError:
        return f"store {public_url(url)} timed out after {timeout_s:g} s (heartbeat)"
    except (urllib.error.URLError, OSError) as exc:
        return f"store {public_url(url)} unreachable: {getattr(exc, 'reason', exc)}"
