"""The live environment as a term of a sweep's objective: spec checks, the selection's arithmetic over seeds, and a
small list sweep whose live figures are those of ``hindsight-lab live`` (the real environment, no stand-in)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hindsight_lab.config import LabConfig
from hindsight_lab.errors import ConfigError
from hindsight_lab.scenarios.live import live_table
from hindsight_lab.sweep import SweepSpec, run_sweep
from hindsight_lab.sweep.live import LiveTerm
from hindsight_lab.sweep.select import cv_scores
from hindsight_lab.sweep.trials import joint_groups

TASKS = 24  # a short stream: the environment's tasks as `hindsight-lab live --tasks 24` makes them


def _spec(**changes) -> dict:
    spec = {"name": "live", "datasets": [{"name": "tau-bench-airline-sample"}], "split": {"test_fraction": 0.4},
            "sampler": "list", "configs": [{}],
            "objective": {"metric": {"ndcg@5": 1.0, "live.final_quarter": 1.0}},
            "live": {"seeds": [0, 1, 2], "test_seeds": [3], "tasks": TASKS}}
    spec.update(changes)
    return spec


@pytest.mark.parametrize("changes, message", [
    ({"live": None}, "'live.final_quarter' needs a live section naming its seeds"),
    ({"objective": {"metric": {"ndcg@5": 1.0, "live.ndcg@5": 1.0}}}, "unknown live metric 'live.ndcg@5'"),
    ({"objective": {"metric": "live.final_quarter"}}, "name at least one replay metric beside the live and lures ones"),
    ({"live": {"seeds": [0, 1, 2], "test_seeds": [2, 5]}}, "seeds \\[2\\] are both dev and test seeds"),
    ({"live": {"seeds": [0]}}, "live.seeds"),
])
def test_a_live_term_is_checked_before_anything_runs(tmp_path: Path, changes: dict, message: str) -> None:
    spec = {k: v for k, v in _spec(**changes).items() if v is not None}
    with pytest.raises(ConfigError, match=message):
        SweepSpec.from_dict(spec, folder=tmp_path)


def test_a_seed_is_a_unit_and_a_fold_adds_the_mean_of_its_seeds(tmp_path: Path) -> None:
    """Six seeds in three folds: each fold's live part is the weight times the mean of its seeds' values, and a seed
    is one group for the sign flips of the best-of-N null."""
    spec = SweepSpec.from_dict(_spec(objective={"metric": {"ndcg@5": 1.0, "live.final_quarter": 0.5}},
                                     live={"seeds": [0, 1, 2, 3, 4, 5], "tasks": TASKS}), folder=tmp_path)
    live = LiveTerm.build(spec.live, spec.objective.build(), embedder=None, folds=3)
    assert live is not None and sorted(np.bincount(live.folds).tolist()) == [2, 2, 2]
    a, b = LabConfig(), LabConfig().with_params({"retrieval.weights.confidence": 0.2})
    for cfg, rates in ((a, [0.5, 0.6, 0.7, 0.8, 0.9, 1.0]), (b, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6])):
        for seed, r in zip(live.seeds, rates):  # runs already made: the cache the sweep fills
            key = (json.dumps(cfg.flat(), sort_keys=True, default=str), seed, ("hindsight",))
            live.runs[key] = {"hindsight": {"final_window": r}}
    values = live.items([a, b])
    assert values.shape == (6, 2) and values[:, 0].tolist() == [0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    folds = cv_scores(values, live.item_folds, live.item_weights)
    for f in range(3):
        seeds = live.folds == f
        assert folds[:, f] == pytest.approx(0.5 * values[seeds].mean(axis=0))
    assert cv_scores(values, live.item_folds, live.item_weights).mean(axis=1) == pytest.approx(
        0.5 * values.mean(axis=0))
    assert list(joint_groups([], [live])) == [f"live:{s}" for s in range(6)]


@pytest.mark.slow
def test_a_sweep_with_a_live_term_scores_each_config_in_the_live_environment(tmp_path: Path, minilm) -> None:
    spec = SweepSpec.from_dict(_spec(configs=[{}, {"retrieval.weights.confidence": 0.2}]), folder=tmp_path)
    result = run_sweep(spec, embedder=minilm, mlflow=False)
    table, comp = result.trials, result.comparison
    assert set(table["status"]) == {"ok"} and result.selection["candidates"] == 3
    # each trial's live figure is what `hindsight-lab live` measures for its config, on the dev seeds
    for number, overrides in enumerate(spec.configs):
        cfg = LabConfig().with_params({"retrieval.top_k": 10, **overrides})
        expected = live_table(["hindsight"], seeds=[0, 1, 2], n_tasks=TASKS, config=cfg, embedder=minilm)
        assert table.loc[table["number"] == number, "dev.live.final_quarter"].item() == pytest.approx(
            expected[expected["seed"] == "mean"]["final_quarter"].item())
    # the test seeds are run once, at the end: the objective adds the live part to the replay's
    base = LabConfig().with_params({"retrieval.top_k": 10})
    held = live_table(["hindsight"], seeds=[3], n_tasks=TASKS, config=base, embedder=minilm)
    assert comp.loc["base", "test.live.final_quarter"] == pytest.approx(held["final_quarter"].item())
    assert comp.loc["base", "test.objective"] == pytest.approx(
        comp.loc["base", "test.ndcg@5"] + comp.loc["base", "test.live.final_quarter"])
    # the baselines run side by side in the same environment
    side = live_table(["none", "dense", "bm25"], seeds=[3], n_tasks=TASKS, config=base, embedder=minilm)
    for name in ("none", "dense", "bm25"):
        assert comp.loc[name, "test.live.final_quarter"] == pytest.approx(
            side[side["system"] == name]["final_quarter"].item())
    assert comp.loc["dense", "test.objective"] == pytest.approx(
        comp.loc["dense", "test.ndcg@5"] + comp.loc["dense", "test.live.final_quarter"])


@pytest.mark.slow
def test_runs_made_in_worker_processes_give_the_same_figures(tmp_path: Path, minilm) -> None:
    """``live.workers``: the runs of several configs and seeds in processes of their own, each loading the model;
    a run is deterministic given its config and seed, so the figures are the ones made in this process."""
    spec = SweepSpec.from_dict(_spec(live={"seeds": [0, 1], "tasks": TASKS, "workers": 2}), folder=tmp_path)
    cfgs = [LabConfig(), LabConfig().with_params({"retrieval.weights.confidence": 0.2})]
    here = LiveTerm.build(spec.live.model_copy(update={"workers": 1}), spec.objective.build(), embedder=minilm,
                          folds=2)
    there = LiveTerm.build(spec.live, spec.objective.build(), embedder=minilm, folds=2)
    assert there.workers == 2
    assert there.items(cfgs).tolist() == here.items(cfgs).tolist()
    assert there.runs == here.runs
