"""The lexical lures as a term of a sweep's objective: spec checks, a seed as a unit beside the live term's, and a
small list sweep whose lure figures are those of ``hindsight-lab lures`` (the real replay of each pair, no stand-in)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight_lab.config import LabConfig
from hindsight_lab.errors import ConfigError
from hindsight_lab.scenarios.lures import lure_table
from hindsight_lab.sweep import SweepSpec, run_sweep
from hindsight_lab.sweep.live import LiveTerm
from hindsight_lab.sweep.lures import LureTerm
from hindsight_lab.sweep.trials import joint_groups

PAIRS = 6  # a few generated pairs per seed, as `hindsight-lab lures --pairs 6` makes them


def _spec(**changes) -> dict:
    spec = {"name": "lures", "datasets": [{"name": "tau-bench-airline-sample"}], "split": {"test_fraction": 0.4},
            "sampler": "list", "configs": [{}],
            "objective": {"metric": {"ndcg@5": 1.0, "lures.right_first": 1.0}},
            "lures": {"seeds": [0, 1], "test_seeds": [2], "pairs": PAIRS}}
    spec.update(changes)
    return spec


@pytest.mark.parametrize("changes, message", [
    ({"lures": None}, "'lures.right_first' needs a lures section naming its seeds"),
    ({"objective": {"metric": {"ndcg@5": 1.0, "lures.final_quarter": 1.0}}}, "unknown lures metric"),
    ({"objective": {"metric": {"lures.right_first": 1.0}}}, "name at least one replay metric"),
    ({"lures": {"seeds": [0, 1], "test_seeds": [1]}}, "seeds \\[1\\] are both dev and test seeds"),
    ({"lures": {"seeds": [0, 1], "pairs": 1}}, "lures.pairs"),
])
def test_a_lure_term_is_checked_before_anything_runs(tmp_path: Path, changes: dict, message: str) -> None:
    spec = {k: v for k, v in _spec(**changes).items() if v is not None}
    with pytest.raises(ConfigError, match=message):
        SweepSpec.from_dict(spec, folder=tmp_path)


def test_lure_seeds_and_live_seeds_are_groups_of_their_own(tmp_path: Path) -> None:
    """Both terms in one objective: each seed of each is one group of the best-of-N null, named by its term."""
    spec = SweepSpec.from_dict(_spec(objective={"metric": {"ndcg@5": 1.0, "live.final_quarter": 1.0,
                                                           "lures.right_first": 0.5}},
                                     live={"seeds": [0, 1, 2], "tasks": 24}), folder=tmp_path)
    live = LiveTerm.build(spec.live, spec.objective.build(), embedder=None, folds=2)
    lures = LureTerm.build(spec.lures, spec.objective.build(), embedder=None, folds=2)
    assert live.terms == [("final_quarter", 1.0)] and lures.terms == [("right_first", 0.5)]
    assert list(joint_groups([], [live, lures])) == ["live:0", "live:1", "live:2", "lures:0", "lures:1"]
    assert lures.item_weights.tolist() == [0.5, 0.5]  # one seed per fold: the fold adds 0.5 × its seed's figure


@pytest.mark.slow
def test_a_sweep_with_a_lure_term_scores_each_config_on_the_lures(tmp_path: Path, minilm) -> None:
    spec = SweepSpec.from_dict(_spec(configs=[{}, {"retrieval.weights.task_type": 0.6}]), folder=tmp_path)
    result = run_sweep(spec, embedder=minilm, mlflow=False)
    table, comp = result.trials, result.comparison
    assert set(table["status"]) == {"ok"} and result.selection["candidates"] == 3
    # each trial's lure figure is what `hindsight-lab lures` measures for its config, on the dev seeds
    for number, overrides in enumerate(spec.configs):
        cfg = LabConfig().with_params({"retrieval.top_k": 10, **overrides})
        expected = lure_table(["hindsight"], seeds=[0, 1], n_pairs=PAIRS, config=cfg, embedder=minilm)
        assert table.loc[table["number"] == number, "dev.lures.right_first"].item() == pytest.approx(
            expected[expected["seed"] == "mean"]["right_first"].item())
    # the test seed is replayed once, at the end: the objective adds the lure part to the replay's
    base = LabConfig().with_params({"retrieval.top_k": 10})
    held = lure_table(["dense", "hindsight"], seeds=[2], n_pairs=PAIRS, config=base, embedder=minilm)
    assert comp.loc["base", "test.lures.right_first"] == pytest.approx(
        held[held["system"] == "hindsight"]["right_first"].item())
    assert comp.loc["base", "test.objective"] == pytest.approx(
        comp.loc["base", "test.ndcg@5"] + comp.loc["base", "test.lures.right_first"])
    # the baselines replay the same pairs: dense as `hindsight-lab lures` has it, bm25 never beats its own lure
    assert comp.loc["dense", "test.lures.right_first"] == pytest.approx(
        held[held["system"] == "dense"]["right_first"].item())
    assert comp.loc["bm25", "test.lures.right_first"] == 0.0
    assert comp.loc["dense", "test.objective"] == pytest.approx(
        comp.loc["dense", "test.ndcg@5"] + comp.loc["dense", "test.lures.right_first"])
