"""What went wrong in a call to a LiteLLM provider, and whether another attempt could help.

What LiteLLM 1.x raises here (measured against a stdlib server, ``openai/`` provider): HTTP 500 →
``litellm.InternalServerError``, 503 → ``litellm.ServiceUnavailableError``, 429 → ``litellm.RateLimitError``, a read
timeout → ``litellm.Timeout``, a refused connection → ``litellm.InternalServerError`` (status 500, with
``openai.APIConnectionError`` in its cause chain), a prompt over the model's context → a 400 that names the context
length (``litellm.ContextWindowExceededError`` for the providers LiteLLM maps), and a missing API key →
``litellm.InternalServerError`` (status 500, but no HTTP answer at all) — so faults are classified from the
exception's cause chain and whether an HTTP answer came back, not from the exception class alone. A refused
``response_format`` is any 4xx or 5xx whose message names it: vLLM answers 400, a FastAPI server 422, and
llama-cpp-python's server (0.3.x) a 500 wrapping its request validation error (its request model takes only
``text`` and ``json_object``, the latter with an optional ``schema``).

Retried: HTTP 5xx, 408, 429 (honouring ``Retry-After``) and refused or reset connections. Never retried: a timeout
(against a slow model another attempt only multiplies the wait: the reflection's time budget ends it), a prompt over
the context window (the same prompt fails the same way), a refused ``response_format`` (the caller steps down to a
looser one instead), any other 4xx.
"""

from __future__ import annotations

import dataclasses
import email.utils
import re
import time
from typing import Any, Mapping

from .._env import set_offline_defaults
from ..errors import MissingDependencyError

__all__ = ["Fault", "classify", "litellm_module"]

_RETRY_STATUS = frozenset({408, 429})
_CONTEXT = re.compile(r"context (length|window|size)|maximum context|too many tokens|prompt is too long|"
                      r"context_length_exceeded|exceed\w* .{0,40}(context|max(imum)? (input|sequence))", re.I)
_FORMAT = re.compile(r"response_format|json_schema|response schema|guided", re.I)


def litellm_module() -> Any:
    """Import litellm lazily, after the offline defaults (its import otherwise fetches a cost map)."""
    set_offline_defaults()
    try:
        import litellm
    except ImportError as exc:
        raise MissingDependencyError("the litellm reflector needs the `litellm` package: pip install litellm") from exc
    # LiteLLM prints a "Give Feedback / Get Help" banner to stdout on every exception; the library does not print.
    litellm.suppress_debug_info = True
    return litellm


@dataclasses.dataclass(frozen=True, slots=True)
class Fault:
    """One failed call: ``kind`` the exception class name, ``cause`` one of ``timeout``, ``connection``,
    ``context_window``, ``response_format`` (a 400 about the structured-output request), ``http`` or ``client``."""

    kind: str
    detail: str
    retry: bool
    cause: str = "http"
    retry_after: float | None = None
    status: int | None = None


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in out and len(out) < 10:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def _headers(exc: BaseException) -> Mapping[str, str]:
    for candidate in (getattr(exc, "litellm_response_headers", None),
                      getattr(getattr(exc, "response", None), "headers", None)):
        if candidate:
            return candidate
    return {}


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date); None if absent or unreadable."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    ms = get("retry-after-ms")
    if ms is not None:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(when.timestamp() - time.time(), 0.0)


def _status(exc: BaseException, chain: list[BaseException]) -> int | None:
    """The status of a real HTTP answer, if one came back."""
    import httpx
    import openai

    for e in chain:
        if type(e).__module__.startswith("litellm"):
            continue  # LiteLLM's own exceptions subclass openai.APIStatusError even when nothing was sent
        if isinstance(e, openai.APIStatusError):
            return e.status_code
        if isinstance(e, httpx.HTTPStatusError):
            return e.response.status_code
    if getattr(exc, "litellm_response_headers", None) is not None:
        return getattr(exc, "status_code", None)
    return 429 if isinstance(exc, litellm_module().RateLimitError) else None


def classify(exc: BaseException, secret: str | None) -> Fault:
    """Decide what a failed call was and whether retrying it could help (see the module docstring)."""
    import httpx
    import openai

    kind = type(exc).__name__
    detail = " ".join(str(exc).split())[:500]
    if secret:
        detail = detail.replace(secret, "***")
    chain = _chain(exc)
    if any(isinstance(e, (openai.APITimeoutError, httpx.TimeoutException, TimeoutError)) for e in chain):
        return Fault(kind, detail, retry=False, cause="timeout")
    if any(isinstance(e, httpx.UnsupportedProtocol) for e in chain):  # a malformed api_base: no retry helps
        return Fault(kind, detail, retry=False, cause="client")
    if any(isinstance(e, (openai.APIConnectionError, httpx.TransportError, ConnectionError)) for e in chain):
        return Fault(kind, detail, retry=True, cause="connection")
    status = _status(exc, chain)
    if status is None:
        # No HTTP answer and no transport error: a client-side failure (e.g. missing credentials) that LiteLLM
        # reports as a 500; retrying cannot fix it.
        return Fault(kind, detail, retry=False, cause="client")
    if kind == "ContextWindowExceededError" or (status in (400, 413) and _CONTEXT.search(detail)):
        return Fault(kind, detail, retry=False, cause="context_window", status=status)
    if status >= 400 and status not in _RETRY_STATUS and _FORMAT.search(detail):
        return Fault(kind, detail, retry=False, cause="response_format", status=status)
    retry_after = _retry_after(_headers(exc)) if status in (429, 503) else None
    return Fault(kind, detail, retry=status >= 500 or status in _RETRY_STATUS, retry_after=retry_after,
                 status=status)
