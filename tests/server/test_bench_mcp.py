"""``hindsight-lab bench --mcp``: 8 concurrent MCP clients x 200 mixed operations against a real server on an
embedded store, then the store checked record by record (hashing embedder: the figures are about the server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight_lab.cli import main
from hindsight_lab.bench.mcp import lost_writes


@pytest.mark.slow  # ~1-2 min on 2 shared cores: 1600 operations, each a Chroma write or search behind one lock
def test_eight_clients_two_hundred_operations_each_lose_nothing(tmp_path: Path, capsys) -> None:
    out = tmp_path / "mcp.json"
    assert main(["bench", "--mcp", "--clients", "8", "--ops", "200", "--set", "embedder.model=hashing-256",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    figures = json.loads(out.read_text())
    assert figures["operations"] == 1600 and figures["clients"] == 8
    assert figures["errors"] == 0, figures["error_samples"]
    assert figures["lost_writes"] == 0, figures["lost_samples"]
    assert figures["merged"] == 0  # the rules are dissimilar: every acknowledged write is its own record
    assert figures["expected_records"] == figures["writes_acked"] + figures["episodes_acked"] > 500
    assert figures["stored_records"] == figures["expected_records"]
    assert figures["server_exit_code"] == 0
    # every search, write and episode embedded through the server's batching embedder (one warm-up call too)
    emb = figures["embedding"]
    assert emb["texts"] >= emb["calls"] > figures["operations"] - figures["latency_ms"]["feedback"]["n"]
    assert emb["passes"] <= emb["calls"] and emb["mean_batch"] == pytest.approx(emb["texts"] / emb["passes"])
    for op in ("all", "write", "search", "feedback", "reflect"):
        lat = figures["latency_ms"][op]
        assert lat["n"] > 0 and 0 < lat["p50"] <= lat["p95"] <= lat["max"], (op, lat)
    assert "errors 0" in printed and "lost writes 0" in printed and "p95" in printed


def test_a_missing_record_counts_as_a_lost_write() -> None:
    # negative control for the check above: an acknowledged id that the store does not hold is reported
    acked = {("ns-a", "rule-1"), ("ns-a", "rule-2"), ("ns-b", "epis-1")}
    assert lost_writes(acked, {"ns-a": {"rule-1", "rule-2"}, "ns-b": {"epis-1", "epis-9"}}) == []
    assert lost_writes(acked, {"ns-a": {"rule-1"}, "ns-b": {"epis-1"}}) == ["ns-a/rule-2"]
    assert lost_writes(acked, {"ns-a": {"rule-1", "rule-2"}, "ns-b": set()}) == ["ns-b/epis-1"]


@pytest.mark.postgres
@pytest.mark.slow  # two servers start (a few seconds each), then 4 x 40 operations and their probes
def test_two_server_processes_on_one_postgres_lose_nothing_and_see_each_others_writes(postgres_url, tmp_path,
                                                                                      capsys) -> None:
    out = tmp_path / "mcp.json"
    assert main(["bench", "--mcp", "--clients", "4", "--ops", "40", "--servers", "2", "--store", postgres_url,
                 "--set", "embedder.model=hashing-256", "--out", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["servers"] == 2 and figures["store"] == "postgres" and figures["operations"] == 160
    assert figures["errors"] == 0, figures["error_samples"]
    assert figures["lost_writes"] == 0 and figures["stored_records"] == figures["expected_records"]
    # every write acknowledged by one server is found by a search through the other right after
    assert figures["probes"] == figures["writes_acked"] > 0 and figures["found_elsewhere"] == figures["probes"]
    assert "found by a search through another server at once" in capsys.readouterr().out


def test_several_servers_need_a_store_several_processes_may_write(tmp_path) -> None:
    from hindsight_lab import LabConfig
    from hindsight_lab.bench.mcp import run_mcp_bench
    from hindsight_lab.errors import ConfigError

    with pytest.raises(ConfigError, match="--servers 2: several server processes need .*postgresql"):
        run_mcp_bench(LabConfig(), servers=2, store=str(tmp_path / "folder"))


def test_compare_needs_postgres_and_several_servers(tmp_path) -> None:
    from hindsight_lab import LabConfig
    from hindsight_lab.bench.mcp import run_mcp_comparison
    from hindsight_lab.errors import ConfigError

    with pytest.raises(ConfigError, match="--compare runs Chroma against Postgres"):
        run_mcp_comparison(LabConfig(), store=str(tmp_path / "folder"), servers=2)
    with pytest.raises(ConfigError, match="--servers 1"):
        run_mcp_comparison(LabConfig(), store="postgresql://h@127.0.0.1/db", servers=1)


@pytest.mark.postgres
@pytest.mark.slow  # four server processes start, one setup after the other
def test_compare_runs_chroma_then_postgres_with_one_and_two_servers(postgres_url, tmp_path, capsys) -> None:
    out = tmp_path / "mcp.json"
    assert main(["bench", "--mcp", "--compare", "--servers", "2", "--clients", "2", "--ops", "15", "--store",
                 postgres_url, "--set", "embedder.model=hashing-256", "--out", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert [(r["store"], r["servers"]) for r in figures["setups"]] == [("embedded", 1), ("postgres", 1),
                                                                        ("postgres", 2)]
    assert all(r["errors"] == 0 and r["lost_writes"] == 0 and r["operations"] == 30 for r in figures["setups"])
    best = max(r["throughput_ops_s"] for r in figures["setups"][1:])
    assert figures["best_postgres_vs_chroma"] == pytest.approx(best / figures["setups"][0]["throughput_ops_s"])
    assert "best Postgres setup:" in capsys.readouterr().out
