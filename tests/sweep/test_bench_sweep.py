"""`hindsight-lab bench --sweep` runs end to end on a small dataset and reports consistent figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight_lab.cli import main

FLOODS = Path(__file__).resolve().parents[2] / "datasets" / "synthetic" / "floods.jsonl"


@pytest.mark.slow
def test_bench_sweep_prints_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--sweep", "--sweep-dataset", str(FLOODS), "--sweep-configs", "40"]) == 0
    out = capsys.readouterr().out
    import json

    figures = json.loads(out.strip().splitlines()[-1])
    assert figures["configs"] == 40 and figures["queries"] == 30
    assert figures["full_replay_s"] > 0 and figures["evaluation_s"] > 0
    assert figures["speedup_per_config"] == pytest.approx(figures["full_replay_s"] / (figures["evaluation_s"] / 40))
    assert "speed-up per config" in out and "MLflow logging" in out
