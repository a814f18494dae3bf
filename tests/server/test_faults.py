"""Faults an operator meets, against a real `chroma run` and real `hindsight-lab serve` processes, with the official
MCP client (issue 16): a stalled store, a killed store, two writers on one embedded folder, a writer killed with
its lock held.

Regression tests: with the Chroma server stopped (SIGSTOP), every tool call of every client waited 150 s and more and
`/health` answered 200 "ok"; with it killed the tool error said only "Error executing tool …"; two `serve` processes
on one folder both started and silently diverged.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import anyio
import pytest

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.errors import StoreError
from hindsight_lab.server.config import ServerConfig, served_yaml
from hindsight_lab.server.process import ServeProcess, free_port, get_health, http_client, serve_command
from hindsight_lab.store.lock import LOCK_NAME, holder

TIMEOUT_S = 3.0
CLIENTS = 8


def _chroma(folder: Path) -> tuple[subprocess.Popen, str]:
    exe = Path(sys.executable).with_name("chroma")
    port = free_port()
    proc = subprocess.Popen([str(exe), "run", "--path", str(folder), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1).read()
            return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("chroma run did not start")
            time.sleep(0.2)


@pytest.fixture
def stallable(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A `chroma run` of our own (the test stops it) and a memory server on it with 3 s store bounds."""
    proc, url = _chroma(tmp_path / "chroma")
    cfg = LabConfig().with_params({"embedder.model": "hashing-256", "store.timeout_s": TIMEOUT_S})
    served_yaml(cfg, ServerConfig(lock_wait_s=TIMEOUT_S), tmp_path / "config.yaml")
    srv = ServeProcess(tmp_path / "config.yaml", url, log=tmp_path / "server.log").start()
    try:
        yield {"chroma": proc, "url": url, "srv": srv}
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
        proc.wait()
        srv.stop()


def _health(srv: ServeProcess) -> tuple[int, dict[str, Any]]:
    try:
        return 200, get_health(srv.base_url, timeout=10)
    except urllib.error.HTTPError as exc:
        import json

        return exc.code, json.loads(exc.read())


async def _timed_calls(url: str, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[float, bool, str]]:
    """Each call from its own client, all at once: (seconds, is_error, text)."""
    out: list[tuple[float, bool, str]] = [(0.0, False, "")] * len(calls)

    async def one(i: int, tool: str, args: dict[str, Any]) -> None:
        async with http_client(url) as client:
            start = time.monotonic()
            res = await client.call_tool(tool, args)
            out[i] = (time.monotonic() - start, res.is_error, res.content[0].text if res.content else "")

    with anyio.fail_after(TIMEOUT_S * 5):  # an unbounded store (the old behaviour) fails here instead of hanging
        async with anyio.create_task_group() as tg:
            for i, (tool, args) in enumerate(calls):
                tg.start_soon(one, i, tool, args)
    return out


def _calls(n: int) -> list[tuple[str, dict[str, Any]]]:
    namespaces = [None, "team-a", "team-b"]
    out = []
    for i in range(n):
        args: dict[str, Any] = {"query": f"refund order {i}"}
        if namespaces[i % 3]:
            args["namespace"] = namespaces[i % 3]
        tool = "hindsight_memory_search" if i % 2 else "hindsight_memory_write"
        if tool == "hindsight_memory_write":
            args = {"content": f"Call verify_identity before issue_refund on order {i}", **(
                {"namespace": args["namespace"]} if "namespace" in args else {})}
        out.append((tool, args))
    return out


@pytest.mark.slow
def test_a_stalled_store_fails_every_call_within_the_bound_and_health_says_degraded(stallable) -> None:
    srv, url, chroma = stallable["srv"], stallable["url"], stallable["chroma"]
    # open the three namespaces and give each a record while the store is fine (a search of an empty namespace
    # needs no store call)
    warm = anyio.run(_timed_calls, srv.url, [
        ("hindsight_memory_write", {"content": "Call verify_identity before issue_refund", **ns})
        for ns in ({}, {"namespace": "team-a"}, {"namespace": "team-b"})])
    assert not any(err for _, err, _ in warm), warm
    assert _health(srv)[0] == 200

    chroma.send_signal(signal.SIGSTOP)
    started = time.monotonic()
    results = anyio.run(_timed_calls, srv.url, _calls(CLIENTS))
    assert len(results) == CLIENTS
    for seconds, is_error, text in results:
        assert is_error, text
        assert seconds <= TIMEOUT_S + 2.0, (seconds, text)  # nobody waits past the bound
        assert url.split("//")[1] in text or "busy" in text, text  # the cause, naming the store
        assert "timed out" in text or "unavailable" in text or "busy" in text, text
    assert time.monotonic() - started <= TIMEOUT_S + 4.0
    code, health = _health(srv)
    assert code == 503 and health["status"] == "degraded" and url.split("//")[1] in health["reason"], health

    chroma.send_signal(signal.SIGCONT)
    deadline = time.monotonic() + 30
    while True:  # service resumes: no restart of the memory server
        (seconds, is_error, text), = anyio.run(_timed_calls, srv.url, [("hindsight_memory_search",
                                                                        {"query": "refund order 1"})])
        if not is_error:
            break
        assert time.monotonic() < deadline, text
        time.sleep(0.5)
    assert _health(srv)[0] == 200


@pytest.mark.slow
def test_a_killed_store_gives_tool_errors_naming_the_cause(stallable) -> None:
    srv, url, chroma = stallable["srv"], stallable["url"], stallable["chroma"]
    chroma.kill()
    chroma.wait()
    (seconds, is_error, text), = anyio.run(_timed_calls, srv.url, [
        ("hindsight_memory_write", {"content": "Call verify_identity before issue_refund"})])
    assert is_error and "unreachable" in text and url.split("//")[1] in text, text
    assert seconds <= TIMEOUT_S + 2.0  # the SDK's "Error executing tool …:" prefix is now followed by the cause
    code, health = _health(srv)
    assert code == 503 and "unreachable" in health["reason"]


# ------------------------------------------------------------------ one writer per embedded folder
def _hold(folder: Path) -> subprocess.Popen:
    """Another process with the folder open for writing (it prints 'open' once it holds the lock)."""
    code = ("import sys, time\nfrom hindsight_lab import LabConfig, MemorySystem\n"
            f"m = MemorySystem(LabConfig().with_params({{'store.path': {str(folder)!r}, "
            "'embedder.model': 'hashing-64'})).open()\nprint('open', flush=True)\ntime.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "open"
    return proc


@pytest.mark.slow
def test_a_second_writer_is_refused_and_a_reader_is_not(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    other = _hold(folder)
    try:
        cfg = LabConfig().with_params({"store.path": str(folder), "embedder.model": "hashing-64"})
        with pytest.raises(StoreError, match=rf"open for writing by process {other.pid} on .*one process writes"):
            MemorySystem(cfg).open()
        with MemorySystem(cfg.with_params({"store.read_only": True})) as reader:  # read-only opens stay possible
            assert reader.stats()["episodes"] == 0
            with pytest.raises(StoreError, match="read-only"):
                reader.write("Call verify_identity before issue_refund", confidence=0.8)
        # two `serve` processes on one folder: the second refuses at start, naming the holder
        cfg.to_yaml(tmp_path / "config.yaml")
        second = subprocess.run(serve_command(tmp_path / "config.yaml", folder), capture_output=True, text=True,
                                timeout=120, stdin=subprocess.DEVNULL)
        assert second.returncode == 2 and f"open for writing by process {other.pid}" in second.stderr
    finally:
        other.kill()
        other.wait()


@pytest.mark.slow
def test_a_lock_left_by_a_killed_writer_is_taken_over(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    other = _hold(folder)
    other.send_signal(signal.SIGKILL)
    other.wait()
    assert holder(folder)["pid"] == other.pid and (folder / LOCK_NAME).exists()  # the file stays behind
    cfg = LabConfig().with_params({"store.path": str(folder), "embedder.model": "hashing-64"})
    with MemorySystem(cfg) as mem:
        mem.write("Call verify_identity before issue_refund", confidence=0.8)
        assert holder(folder)["pid"] == os.getpid()
    with MemorySystem(cfg) as again:  # released on close, taken again in the same process
        assert again.stats()["candidates"] == 1
