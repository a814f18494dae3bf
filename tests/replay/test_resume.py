"""A replay killed with SIGKILL and started again with ``--resume`` ends with the same metrics as an uninterrupted
one (DESIGN §6; the journal is hindsight_lab/replay/journal.py)."""

from __future__ import annotations

import pytest

import json
import sys
from pathlib import Path

from hindsight_lab.cli import main
from hindsight_lab.evaluation import load_metrics
from hindsight_lab.replay.journal import JOURNAL_DIR, JOURNAL_FILE

from support import journal_units, kill_midway

N_TASKS, TRIALS = 8, 3  # 24 episodes, ~0.3 s each on a 2-core machine: the kill lands long before the end
KILL_AFTER = 3  # completed units in the journal


def _judged(folder: Path) -> dict:
    """Every judging mode's figures in the saved report, wall-clock ones aside."""
    return load_metrics(folder).comparison.figures()


@pytest.mark.slow
def test_a_killed_replay_resumes_to_the_same_metrics(traces, tmp_path, capsys):
    dataset = traces(N_TASKS, TRIALS)
    # easier merging and promotion, so that L3 rules are promoted and injected (reuse_rate) in so short a replay
    common = [str(dataset), "--no-mlflow", "--systems", "none,dense,bm25,hindsight",
              *(x for kv in ("embedder.model=hashing-256", "dedup.similarity=0.8", "promotion.min_hits=2",
                             "promotion.min_mean_confidence=0.5", "promotion.prior_effect=1") for x in ("--set", kv))]
    assert main(["replay", *common, "--out", str(tmp_path / "whole")]) == 0
    assert not (tmp_path / "whole" / JOURNAL_DIR).exists()  # removed once the report is written

    out = tmp_path / "killed"
    journal = out / JOURNAL_DIR / JOURNAL_FILE
    held, _ = kill_midway([sys.executable, "-m", "hindsight_lab.cli", "replay", *common, "--out", str(out)], journal,
                          KILL_AFTER, timeout=180.0)
    assert KILL_AFTER <= held < N_TASKS * TRIALS and not (out / "metrics.json").exists()

    capsys.readouterr()
    assert main(["replay", *common, "--out", str(out), "--resume", "--top-k", "5"]) == 2  # another replay
    assert "top_k: journal 10, now 5" in capsys.readouterr().err
    assert journal_units(journal) == held  # a refused resume leaves the journal alone

    assert main(["replay", *common, "--out", str(out), "--resume"]) == 0
    assert f"resumed: {held} units taken from the journal" in capsys.readouterr().out
    assert _judged(out) == _judged(tmp_path / "whole")
    assert not (out / JOURNAL_DIR).exists()
    hindsight = _judged(out)["repeat"]["systems"]["hindsight"]
    assert hindsight["promotions"] > 0 and hindsight["reuse_rate"] > 0  # reflection, promotion and rules ran
