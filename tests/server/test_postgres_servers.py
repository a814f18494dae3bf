"""Memory servers on one Postgres store, through the official MCP client (issue 20): a race of near-duplicate writes
through two server processes, a database restarted under load, and a server killed in the middle of its writes."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.server.config import ServerConfig, served_yaml
from hindsight_lab.server.process import ServeProcess, http_client
from hindsight_lab.types import Bucket, Kind
from conftest import start_pgserver, stop_pgserver

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

WRITE, SEARCH = "hindsight_memory_write", "hindsight_memory_search"


def _servers(tmp_path: Path, url: str, namespace: str, n: int, **params: Any) -> list[ServeProcess]:
    cfg = LabConfig().with_params({"embedder.model": "hashing-256", "store.namespace": namespace, **params})
    served_yaml(cfg, ServerConfig(lock_wait_s=30), tmp_path / "config.yaml")
    return [ServeProcess(tmp_path / "config.yaml", url, log=tmp_path / f"server-{i}.log").start() for i in range(n)]


async def _calls(calls: list[tuple[str, str, dict[str, Any]]], limit_s: float = 120
                 ) -> list[tuple[bool, dict[str, Any] | None, str]]:
    """Each ``(server url, tool, arguments)`` from its own client, all at once: (is_error, structured, text)."""
    out: list[Any] = [None] * len(calls)

    async def one(i: int, url: str, tool: str, args: dict[str, Any]) -> None:
        async with http_client(url) as client:
            res = await client.call_tool(tool, args)
            out[i] = (res.is_error, res.structured_content, res.content[0].text if res.content else "")

    with anyio.fail_after(limit_s):
        async with anyio.create_task_group() as tg:
            for i, (url, tool, args) in enumerate(calls):
                tg.start_soon(one, i, url, tool, args)
    return out


def _memory(url: str, namespace: str) -> MemorySystem:
    cfg = LabConfig().with_params({"store.url": url, "store.namespace": namespace, "store.snapshot_every": 0})
    return MemorySystem(cfg, embedder=HashingEmbedder(dim=256)).open()


def test_sixteen_duplicates_through_two_servers_end_in_one_record_and_one_promotion(postgres_url, tmp_path):
    namespace = "r" + uuid.uuid4().hex[:10]
    servers = _servers(tmp_path, postgres_url, namespace, 2)
    try:
        calls = [(servers[i % 2].url, WRITE, {
            "content": "Call lookup_order before issue_refund; shipped orders are refused.", "confidence": 0.8,
            "counter_examples": ["digital goods are never shipped"], "task_type": "refund",
            "source_episode_id": f"episode-{i}"}) for i in range(16)]
        results = anyio.run(_calls, calls)
    finally:
        for srv in servers:
            srv.stop()
    assert not [text for err, _, text in results if err]
    actions = [(res["action"], res["promoted"]) for _, res, _ in results]
    assert sum(action == "created" for action, _ in actions) == 1
    mem = _memory(postgres_url, namespace)
    found = mem.records("candidate") + mem.records("rule")
    assert len(found) == 1, [(r.id, r.kind, r.hit_count) for r in found]
    assert found[0].kind is Kind.RULE and found[0].hit_count == 16 and len(found[0].source_episode_ids) == 16
    assert sum(promoted for _, promoted in actions) == 1  # promoted exactly once
    mem.close()


def test_a_restarted_database_gives_tool_errors_naming_it_then_the_servers_go_on(tmp_path):
    proc, url = start_pgserver(tmp_path / "data")
    namespace = "f" + uuid.uuid4().hex[:10]
    servers = _servers(tmp_path, url, namespace, 2, **{"store.timeout_s": 3, "store.retries": 1})
    try:
        def load(tag: str) -> list[tuple[str, str, dict[str, Any]]]:
            return [(servers[i % 2].url, WRITE if i % 2 else SEARCH,
                     {"content": f"Call verify_identity before issue_refund on order {tag}-{i}"} if i % 2
                     else {"query": f"refund order {tag}-{i}"}) for i in range(8)]

        assert not [text for err, _, text in anyio.run(_calls, load("before")) if err]
        stop_pgserver(proc)
        t0 = time.monotonic()
        during = anyio.run(_calls, load("during"))
        assert all(err for err, _, _ in during)  # every call fails, none hangs ...
        assert all("store postgresql://" in text for _, _, text in during), [t for _, _, t in during]  # ... naming it
        assert time.monotonic() - t0 < 60
        proc, again = start_pgserver(tmp_path / "data")
        assert again == url
        deadline = time.monotonic() + 60
        while True:  # the same server processes, not restarted, answer again
            after = anyio.run(_calls, load("after"))
            if not any(err for err, _, _ in after):
                break
            assert time.monotonic() < deadline, [t for err, _, t in after if err]
            time.sleep(1)
        written = {res["record"]["id"] for err, res, _ in after if res and "record" in res}
        mem = _memory(url, namespace)
        assert written and written <= {r.id for r in mem.records("candidate")}  # (near-duplicates merge)
        mem.close()
    finally:
        for srv in servers:
            srv.stop()
        stop_pgserver(proc)


def test_a_server_killed_during_writes_leaves_nothing_half_written(postgres_url, tmp_path):
    namespace = "k" + uuid.uuid4().hex[:10]
    srv, = _servers(tmp_path, postgres_url, namespace, 1)
    acked: list[str] = []

    async def write_until_killed() -> None:
        async def writer(c: int) -> None:
            try:
                async with http_client(srv.url) as client:
                    for i in range(10_000):
                        res = await client.call_tool(WRITE, {"content": f"Rule {c}-{i}: check the fare of "
                                                             f"booking {c * 100000 + i} first"})
                        if not res.is_error:
                            acked.append(res.structured_content["record"]["id"])
            except Exception:  # noqa: BLE001 - the server is gone: this client stops
                return

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for c in range(4):
                    tg.start_soon(writer, c)
                while len(acked) < 40:
                    await anyio.sleep(0.05)
                srv.proc.kill()  # SIGKILL, in the middle of the writes

    try:
        anyio.run(write_until_killed)
    finally:
        srv.stop()
    mem = _memory(postgres_url, namespace)
    stored = {r.id: r for r in mem.records("candidate")}
    assert set(acked) <= set(stored)  # every acknowledged write is there
    assert all(r.content.startswith("Rule ") and r.content.endswith(" first") for r in stored.values())
    seq, changes = mem.store.changes_since(0)  # the change log agrees with the tables, record by record
    assert {rid for rid, bucket in changes if bucket is Bucket.CANDIDATE} == set(stored)
    assert mem.write("A write after the kill", confidence=0.8).action == "created"  # the write lock is free
    mem.close()
