"""``hindsight-lab serve`` over stdio: the CLI spawned by the official MCP client (``stdio_client``)."""

from __future__ import annotations

import pytest

import os
import sys
from pathlib import Path

import anyio

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.server.config import ServerConfig, served_yaml


@pytest.mark.slow
def test_stdio_server_serves_every_tool_and_namespace_and_survives_bad_input(tmp_path: Path, helpers) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    # the hashing embedder: this test is about the transport and the tools, not about ranking quality; and another
    # tool-name prefix than the default (the file's server: section), against clashes with other servers
    cfg = LabConfig().with_params({"embedder.model": "hashing-256"})
    settings = ServerConfig(tool_prefix="team_")
    served_yaml(cfg, settings, tmp_path / "config.yaml")
    store = tmp_path / "store"
    script = Path(sys.executable).with_name("hindsight-lab")
    assert script.exists(), "the hindsight-lab console script is installed next to the test interpreter"
    params = StdioServerParameters(command=str(script), cwd=str(tmp_path),
                                   args=["serve", "--config", str(tmp_path / "config.yaml"), "--store", str(store)],
                                   env={"HINDSIGHT_LAB_HOME": os.environ["HINDSIGHT_LAB_HOME"]})
    ns_a, ns_b = helpers.namespace(), helpers.namespace()

    log = tmp_path / "server-stderr.log"

    async def session() -> None:
        with log.open("w") as errlog:  # the server's stderr: its logs (stdout is the protocol)
            async with Client(stdio_client(params, errlog=errlog)) as client:
                assert "team_memory_search" in (client.instructions or "")
                await helpers.exercise_tools(client, "team_", ns_a, ns_b, settings.max_content_chars)

    anyio.run(session)
    logged = log.read_text()
    assert "over stdio" in logged and "store closed" in logged, logged[-3000:]

    # the client closed the server's stdin: the server closed the store, and what it wrote is there
    with MemorySystem(cfg.with_params({"store.path": str(store), "store.namespace": ns_a})) as mem:
        stats = mem.stats()
    assert (stats["episodes"], stats["rules"]) == (2, 1) and stats["candidates"] >= 1, stats
