"""The bind check, the bearer token on every HTTP request, the container health check, and maintenance on a
schedule inside the server (one token-protected server on loopback, hashing embedder: nothing here is about
ranking)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterator

import anyio
import pytest

from hindsight_lab import ConfigError, LabConfig, MemorySystem
from hindsight_lab.cli import main
from hindsight_lab.server.auth import check_bind, is_loopback
from hindsight_lab.server.process import ServeProcess, get_health, http_client
from hindsight_lab.types import utcnow
from support import REPO

TOKEN = "test-token-" + "k" * 24
ENV = "HINDSIGHT_MCP_TOKEN"
OLD_TASK = "Migrate the legacy billing cron jobs to the new scheduler"
FRESH_RULE = "Snapshot the billing database before migrating any scheduler job"


# ------------------------------------------------------------------ the bind check (no server needed)
@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "memory.example.org"])
def test_non_loopback_bind_without_a_token_is_refused(host: str, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    code = main(["serve", "--config", str(REPO / "experiments/configs/default.yaml"), "--store",
                 str(tmp_path / "store"), "--transport", "http", "--host", host])
    err = capsys.readouterr().err
    assert code == 2
    assert f"--host {host}: refusing to bind a non-loopback address without a bearer token" in err
    assert f"set ${ENV}" in err
    assert not (tmp_path / "store").exists(), "refused before the store was opened"


def test_bind_rules() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.5", "example.org"))
    check_bind("0.0.0.0", TOKEN, ENV)  # with a token: allowed
    check_bind("127.0.0.1", None, ENV)  # loopback: allowed without
    with pytest.raises(ConfigError, match="non-loopback"):
        check_bind("10.0.0.5", None, ENV)


def test_a_short_token_is_refused(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv(ENV, "short")
    code = main(["serve", "--config", str(REPO / "experiments/configs/default.yaml"), "--store",
                 str(tmp_path / "store"), "--transport", "http"])
    err = capsys.readouterr().err
    assert code == 2 and f"${ENV} holds a bearer token of 5 characters" in err
    assert "short" not in err  # the value itself is never shown


# ------------------------------------------------------------------ a token-protected server with a 1 s schedule
@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("guarded")
    cfg = LabConfig().with_params({"embedder.model": "hashing-256"})
    cfg.to_yaml(tmp / "config.yaml")
    store = str(tmp / "store")
    old = utcnow() - timedelta(days=60)
    with MemorySystem(cfg.with_params({"store.path": store})) as mem:
        episode = mem.write_episode({"episode_id": "old-1", "instruction": OLD_TASK, "started_at": old.isoformat(),
                                     "steps": [{"type": "tool_call", "name": "migrate_job", "arguments": {}}],
                                     "outcome": "success"}, now=old)
        fresh = mem.write(FRESH_RULE, confidence=0.8).record
    srv = ServeProcess(tmp / "config.yaml", store, extra=["--set", "server.maintenance_interval_s=1.0"],
                       env={**os.environ, ENV: TOKEN}, token=TOKEN, log=tmp / "server.log").start()
    try:
        yield {"srv": srv, "episode_id": episode.id, "fresh_id": fresh.id}
    finally:
        assert srv.stop() == 0, srv.log_tail()


def _status(url: str, token: str | None = None, method: str = "GET", body: bytes | None = None,
            scheme: str = "Bearer") -> int:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"{scheme} {token}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, method=method, headers=headers),
                                    timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.slow
def test_every_http_request_needs_the_token(guarded: dict[str, Any]) -> None:
    srv = guarded["srv"]
    init = (b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", '
            b'"capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}')
    assert _status(srv.base_url + "/health") == 401
    assert _status(srv.base_url + "/health", "wrong-" + TOKEN) == 401
    assert _status(srv.url, method="POST", body=init) == 401
    assert _status(srv.url, "wrong-" + TOKEN, method="POST", body=init) == 401
    assert _status(srv.base_url + "/nowhere") == 401
    assert _status(srv.base_url + "/health", TOKEN, scheme="Basic") == 401
    # negative control: the same requests with the token get through
    assert _status(srv.base_url + "/health", TOKEN) == 200
    assert _status(srv.url, TOKEN, method="POST", body=init) == 200
    # regression (issue 16): the scheme is case-insensitive (RFC 9110 §11.1); "bearer …" got 401
    assert _status(srv.base_url + "/health", TOKEN, scheme="bearer") == 200
    assert _status(srv.base_url + "/health", TOKEN, scheme="BEARER") == 200


@pytest.mark.slow
def test_the_mcp_client_with_the_token_works(guarded: dict[str, Any]) -> None:
    async def names() -> set[str]:
        async with http_client(guarded["srv"].url, TOKEN) as client:
            return {t.name for t in (await client.list_tools()).tools}

    assert anyio.run(names) == {"hindsight_memory_write", "hindsight_memory_search", "hindsight_memory_reflect",
                                "hindsight_memory_feedback"}


@pytest.mark.slow
def test_maintenance_runs_on_its_schedule(guarded: dict[str, Any]) -> None:
    srv = guarded["srv"]
    assert get_health(srv.base_url, TOKEN)["maintenance"]["interval_s"] == 1.0  # serve --set server.<key>
    deadline = time.monotonic() + 30
    while (health := get_health(srv.base_url, TOKEN))["maintenance"]["runs"] < 1:
        assert time.monotonic() < deadline, health
        time.sleep(0.3)
    assert health["maintenance"]["failures"] == 0
    assert health["maintenance"]["totals"]["default"]["archived"] == 1, health  # the 60-day-old episode

    async def search() -> list[str]:
        async with http_client(srv.url, TOKEN) as client:
            res = await client.call_tool("hindsight_memory_search", {"query": OLD_TASK + " " + FRESH_RULE})
            return [h["record"]["id"] for h in res.structured_content["hits"]]

    found = anyio.run(search)
    assert guarded["episode_id"] not in found  # archived: kept, never recalled
    assert guarded["fresh_id"] in found  # negative control: the fresh rule is neither archived nor decayed


@pytest.mark.slow
def test_container_health_check_command(guarded: dict[str, Any]) -> None:
    cmd = [sys.executable, "-m", "hindsight_lab.cli.healthcheck", guarded["srv"].base_url]
    env = {k: v for k, v in os.environ.items() if k != ENV}
    denied = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert denied.returncode == 1 and "Unauthorized" in denied.stderr
    allowed = subprocess.run(cmd, env={**env, ENV: TOKEN}, capture_output=True, text=True, timeout=60)
    assert allowed.returncode == 0, allowed.stderr
    assert TOKEN not in denied.stderr + allowed.stderr + allowed.stdout


@pytest.mark.slow
def test_the_token_is_never_logged(guarded: dict[str, Any]) -> None:
    srv = guarded["srv"]
    assert _status(srv.base_url + "/health", "wrong-" + TOKEN) == 401
    assert _status(srv.base_url + "/health", TOKEN) == 200
    time.sleep(0.2)
    log = srv.log.read_text()
    assert f"bearer token: required (from ${ENV})" in log
    assert "401: GET /health" in log  # the rejected request was logged ...
    assert TOKEN not in log  # ... and neither the token it carried nor the right one
