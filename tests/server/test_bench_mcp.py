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
