"""A memory server in a child process, and an MCP client for it: what ``bench --mcp``, the agent-loop notebook and
the tests use to talk to a real ``hindsight-lab serve`` over streamable HTTP.

Examples:
    >>> with ServeProcess("experiments/configs/default.yaml", "memory-store") as srv:  # doctest: +SKIP
    ...     async with http_client(srv.url) as client:
    ...         result = await client.call_tool("hindsight_memory_search", {"query": "refund"})
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Sequence

from ..errors import HindsightLabError
from .http import HEALTH_PATH, MCP_PATH


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_command(config: str | Path, store: str | Path, *args: str) -> list[str]:
    """``hindsight-lab serve`` with this interpreter (the console script next to it, else ``-m``)."""
    script = Path(sys.executable).with_name("hindsight-lab")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "hindsight_lab.cli"]
    return [*head, "serve", "--config", str(config), "--store", str(store), *args]


def get_health(base_url: str, token: str | None = None, timeout: float = 2.0) -> dict[str, Any]:
    """The health endpoint's JSON (raises ``urllib.error.URLError`` / ``HTTPError`` when it does not answer)."""
    req = urllib.request.Request(base_url + HEALTH_PATH,
                                 headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


class ServeProcess:
    """``hindsight-lab serve --transport http`` on a free loopback port; ready once ``/health`` answers.

    Args:
        config: the config YAML.
        store: store folder or Chroma server URL.
        extra: more ``serve`` arguments (e.g. ``["--set", "server.tool_prefix=x_"]``).
        env: environment of the child (default: this process's).
        token: the bearer token, for the health check while starting.
        log: file for the child's stderr (default: a temporary file; its tail is shown when the start fails).
    """

    def __init__(self, config: str | Path, store: str | Path, *, extra: Sequence[str] = (),
                 env: dict[str, str] | None = None, token: str | None = None, log: str | Path | None = None,
                 port: int | None = None) -> None:
        self.config, self.store, self.extra, self.env, self.token = config, store, list(extra), env, token
        self.port = port
        self.log = Path(log) if log else None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        return self.base_url + MCP_PATH

    def start(self, timeout: float = 180.0) -> "ServeProcess":
        """Start the child and wait until its health endpoint answers (the model is loaded by then)."""
        self.port = self.port or free_port()
        if self.log is None:
            fd, name = tempfile.mkstemp(prefix="hindsight-serve-", suffix=".log")
            os.close(fd)
            self.log = Path(name)
        cmd = serve_command(self.config, self.store, "--transport", "http", "--port", str(self.port), *self.extra)
        self._log = self.log.open("w")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self._log, stdin=subprocess.DEVNULL,
                                     env=self.env if self.env is not None else dict(os.environ))
        deadline = time.monotonic() + timeout
        while True:
            try:
                get_health(self.base_url, self.token, timeout=1.0)
                return self
            except (OSError, ValueError):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise HindsightLabError(f"the memory server did not start (exit code {self.proc.returncode}); "
                                            f"its log ends with:\n{self.log_tail()}") from None
                time.sleep(0.2)

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log and self.log.exists() else ""

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, wait (the store is flushed and closed), then kill; the exit code."""
        proc = getattr(self, "proc", None)
        if proc is None:
            return None
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._log.close()
        return proc.returncode

    def __enter__(self) -> "ServeProcess":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@asynccontextmanager
async def http_client(url: str, token: str | None = None) -> AsyncIterator[Any]:
    """An official ``mcp.Client`` session over streamable HTTP, with the bearer token when given."""
    import httpx2  # the SDK's HTTP client; passing our own is how the SDK takes extra headers
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


def structured(result: Any) -> dict[str, Any]:
    """A tool result's structured content; a tool error raises :class:`HindsightLabError` with its message."""
    if result.is_error:
        raise HindsightLabError(" ".join(getattr(c, "text", "") for c in result.content))
    return dict(result.structured_content or {})
