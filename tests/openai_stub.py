"""A scripted OpenAI-compatible chat server on 127.0.0.1, for tests that go through a real HTTP client (LiteLLM).

The stub speaks ``POST /v1/chat/completions`` (also ``/chat/completions``) with the OpenAI response shape. It answers
from a queue of :class:`Reply` objects, one per request, in order; when the queue is empty it answers ``default``
(HTTP 500 unless told otherwise). Every request is recorded (parsed JSON body, headers, path), so a test can assert
what was sent: the prompt, ``response_format``, the number of calls.

It can also refuse what a real server refuses, before any scripted answer is used: a request over its context
(``context_tokens``: the prompt's tokens, counted by ``count_tokens``, plus ``max_tokens``) gets the 400 that
llama-cpp-python's server sends (``context_length_exceeded``), and a ``response_format`` it does not take
(``response_formats``: the forms it takes, among ``json_schema``, ``json_object``, ``json_object+schema`` — a
``json_object`` that carries a ``schema``, llama-cpp-python's form — and ``text``) gets a 400 naming it, as vLLM and
older llama.cpp builds answer; ``refusal_status=500`` answers as llama-cpp-python's server does (its request
validation error, wrapped in a 500).

Examples:
    >>> from openai_stub import OpenAIStub, Reply
    >>> with OpenAIStub([Reply(content='{"ok": true}')]) as stub:
    ...     url = stub.base_url            # "http://127.0.0.1:<port>/v1"
    ...     # ... point a client at url; then
    ...     n = len(stub.requests)
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

__all__ = ["OpenAIStub", "Reply", "RecordedRequest", "response_form"]


@dataclass
class Reply:
    """One scripted answer.

    Attributes:
        status: HTTP status code.
        content: ``choices[0].message.content`` of a 200 answer (ignored when ``body`` is given).
        body: the raw body instead of the generated one: a dict/list is sent as JSON, a str as is.
        headers: extra response headers (e.g. ``{"Retry-After": "0"}``).
        delay_s: seconds to wait before answering (interrupted when the stub closes).
        usage: the ``usage`` block of a 200 answer.
        finish_reason: ``choices[0].finish_reason`` of a 200 answer.
    """

    status: int = 200
    content: str | None = None
    body: dict[str, Any] | list[Any] | str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 11, "completion_tokens": 7,
                                                           "total_tokens": 18})
    finish_reason: str = "stop"

    @classmethod
    def error(cls, status: int, message: str = "scripted error", **kwargs: Any) -> "Reply":
        """An OpenAI-style error answer."""
        body = {"error": {"message": message, "type": "server_error" if status >= 500 else "invalid_request_error",
                          "param": None, "code": None}}
        return cls(status=status, body=body, **kwargs)


@dataclass
class RecordedRequest:
    """What the stub received."""

    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it did not parse

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    def message(self, role: str) -> str:
        """The content of the first message with ``role`` ("" if none)."""
        return next((str(m.get("content", "")) for m in self.messages if m.get("role") == role), "")


class OpenAIStub:
    """Context manager running the scripted server in a background thread (port 0: a free port)."""

    def __init__(self, replies: Iterable[Reply] = (), *, default: Reply | None = None, model: str = "stub",
                 context_tokens: int | None = None, count_tokens: Callable[[str], int] | None = None,
                 response_formats: Iterable[str] | None = None, refusal_status: int = 400) -> None:
        self.default = default or Reply.error(500, "stub queue is empty")
        self.model = model
        self.context_tokens = context_tokens
        self.count_tokens = count_tokens or word_tokens
        self.response_formats = None if response_formats is None else frozenset(response_formats)
        self.refusal_status = refusal_status
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Reply] = deque(replies)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -------------------------------------------------------------------------------------------
    def push(self, *replies: Reply) -> "OpenAIStub":
        """Queue more answers."""
        with self._lock:
            self._queue.extend(replies)
        return self

    def reply(self, content: str, **kwargs: Any) -> "OpenAIStub":
        """Queue one 200 answer with ``content``."""
        return self.push(Reply(content=content, **kwargs))

    @property
    def pending(self) -> int:
        """Scripted answers not yet used."""
        with self._lock:
            return len(self._queue)

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the stub is not running: use it as a context manager")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """The ``api_base`` to give an OpenAI-compatible client."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- lifecycle -------------------------------------------------------------------------------------------
    def __enter__(self) -> "OpenAIStub":
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # one request per connection: no keep-alive state to reason about

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                stub._handle(self)

            def do_GET(self) -> None:  # noqa: N802
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="openai-stub", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()  # wakes delayed handlers
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- serving ---------------------------------------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length).decode("utf-8", "replace") if length else ""
        try:
            body: Any = json.loads(raw)
        except json.JSONDecodeError:
            body = raw
        with self._lock:
            self.requests.append(RecordedRequest(h.path, {k.lower(): v for k, v in h.headers.items()}, body))
            reply = self._refusal(body)
            if reply is None:
                reply = self._queue.popleft() if self._queue else self.default
        if not h.path.rstrip("/").endswith("/chat/completions"):
            reply = Reply.error(404, f"unknown path {h.path}")
        if reply.delay_s and self._stop.wait(reply.delay_s):
            return  # closing: drop the connection
        payload = self._payload(reply, body)
        data = payload.encode("utf-8")
        try:
            h.send_response(reply.status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            for key, value in reply.headers.items():
                h.send_header(key, value)
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout): nothing to answer
            pass

    def prompt_tokens(self, request: Any) -> int:
        """The prompt's tokens as this server counts them (the messages' contents, plus 4 per message)."""
        messages = request.get("messages", []) if isinstance(request, dict) else []
        return sum(self.count_tokens(str(m.get("content", ""))) + 4 for m in messages)

    def _refusal(self, request: Any) -> Reply | None:
        """The 400 a real server sends for this request, or None when it would answer it."""
        if not isinstance(request, dict):
            return None
        form = response_form(request)
        if form is not None and self.response_formats is not None and form not in self.response_formats:
            if self.refusal_status == 500:  # llama-cpp-python: pydantic's error, wrapped in a 500
                return Reply.error(500, "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
                                   "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
                                   f"'input': '{form}'}}")
            return Reply.error(self.refusal_status, f"response_format type '{form}' is not supported")
        if self.context_tokens is not None:
            prompt, completion = self.prompt_tokens(request), int(request.get("max_tokens") or 0)
            if prompt + completion > self.context_tokens:
                return Reply(status=400, body={"error": {
                    "message": f"This model's maximum context length is {self.context_tokens} tokens. However, you "
                               f"requested {prompt + completion} tokens ({prompt} in the messages, {completion} in "
                               "the completion). Please reduce the length of the messages or completion.",
                    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
        return None

    def _payload(self, reply: Reply, request: Any) -> str:
        if reply.body is not None:
            return reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
        model = request.get("model", self.model) if isinstance(request, dict) else self.model
        return json.dumps({
            "id": f"chatcmpl-stub-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content or ""},
                         "finish_reason": reply.finish_reason}],
            "usage": reply.usage,
        })


def response_form(request: Any) -> str | None:
    """The ``response_format`` a request asks for: its type, ``json_object+schema`` for a json_object that carries a
    schema; None when it asks for none."""
    fmt = request.get("response_format") if isinstance(request, dict) else None
    if not isinstance(fmt, dict):
        return None
    kind = fmt.get("type")
    return f"{kind}+schema" if kind == "json_object" and "schema" in fmt else kind


_PIECE = re.compile(r"[A-Za-z]+|\d{1,3}|[^\sA-Za-z\d]", re.A)


def word_tokens(text: str) -> int:
    """A tokenizer-like count: runs of letters, groups of up to three digits, and every other non-space character
    each count one (close to what BPE tokenizers give for English and JSON, and never fewer for such text)."""
    return len(_PIECE.findall(text))
