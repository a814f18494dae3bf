"""The judging modes in a replay's report: every mode judged the same way for every system, side by side; the
success-only baselines; n/a where a mode has no query; the per-mode tables, CSV files and MLflow metrics."""

from __future__ import annotations

import json

import pytest

from hindsight_lab.datasets import load
from hindsight_lab.metrics.modes import judge_mode
from hindsight_lab.replay.runner import run_replay
from hindsight_lab.tracking import replay_metrics

SYSTEMS = ["none", "dense", "bm25", "dense+ok", "bm25+ok", "hindsight"]


@pytest.mark.slow
def test_every_mode_is_reported_side_by_side(traces, minilm, tmp_path) -> None:
    path = traces(10, 3)
    report = run_replay(path, systems=SYSTEMS, embedder=minilm)
    episodes, _ = load(path)
    result = report.result
    for mode in ("repeat", "transfer", "outcome"):  # every mode alike in the typed report
        cell = result.mode(mode)
        assert cell.queries == len(judge_mode(episodes, mode).query_ids) > 0
        assert set(cell.systems) == set(SYSTEMS) and set(cell.tests) == set(SYSTEMS) - {"hindsight"}
        for name in ("dense", "bm25", "hindsight"):
            low, high = cell.interval(name, "ndcg@5")[1:]
            assert low <= cell.value(name, "ndcg@5") <= high
        assert cell.value("none", "ndcg@5") == 0.0
        assert report.table(mode=mode).shape[0] == len(SYSTEMS)
        groups = report.group_table(mode=mode)
        assert set(groups.index) == set(report.mode(mode).frame()["group"])
        best = groups[["dense", "bm25"]].max(axis=1)
        assert (groups["margin"] - (groups["hindsight"] - best)).abs().max() < 1e-12
    import matplotlib
    import matplotlib.pyplot as plt

    before, open_figures = matplotlib.get_backend(), plt.get_fignums()
    matplotlib.use("svg")  # stands for a notebook's inline backend: anything but Agg
    try:
        out = report.save(tmp_path / "report")
        # writing the PNG files leaves a notebook's backend and figures alone (no switch to Agg, none left open)
        assert matplotlib.get_backend() == "svg" and plt.get_fignums() == open_figures
    finally:
        matplotlib.use(before)
    assert len(list(out.glob("*.png"))) == 4
    assert {p.name for p in out.glob("episodes*.csv")} == {"episodes.csv", "episodes_transfer.csv",
                                                           "episodes_outcome.csv"}
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["schema_version"] == 2 and saved["modes"]["transfer"]["queries"] > 0
    assert set(saved["modes"]) == {"repeat", "transfer", "outcome"} and "systems" not in saved
    logged = replay_metrics(result)
    # (MLflow refuses "+" in a name: dense+ok logs as dense_ok)
    assert "transfer.hindsight.ndcg_at_5" in logged and "outcome.dense_ok.ndcg_at_5.ci_low" in logged
    assert logged["transfer.queries"] == result.mode("transfer").queries
    assert logged == replay_metrics(saved)  # the typed report and its metrics.json log alike


def test_the_success_only_baselines_never_inject_a_failure(traces, minilm) -> None:
    path = traces(10, 3)
    episodes, _ = load(path)
    failed = {e.episode_id for e in episodes if e.outcome != "success"}
    report = run_replay(path, systems=["dense", "dense+ok", "bm25+ok"], embedder=minilm)
    injected = {(r.system, s) for r in report.run.queries for i in r.injected for s in i.source_episode_ids}
    assert not {s for name, s in injected if name.endswith("+ok")} & failed
    assert {s for name, s in injected if name == "dense"} & failed  # negative control: dense keeps everything


@pytest.mark.slow
def test_a_mode_without_queries_is_not_applicable(minilm) -> None:
    from hindsight_lab.datasets.registry import resolve

    report = run_replay(resolve(["locomo-sample"]), systems=["dense", "hindsight"], embedder=minilm)
    modes = report.metrics["modes"]
    assert {m: modes[m] for m in ("transfer", "outcome")} == {"transfer": {"queries": 0, "status": "n/a"},
                                                              "outcome": {"queries": 0, "status": "n/a"}}
    assert report.comparison.absent_modes() == ["transfer", "outcome"]
    assert report.modes() == ["repeat"]
    with pytest.raises(ValueError, match="'transfer' has no queries in this replay"):
        report.table(mode="transfer")
