"""The selection rule (hindsight_lab.sweep.select): folds by task, the best of N against luck, the base config kept
when nothing really beats it, a planted better config found when one exists."""

from __future__ import annotations

import numpy as np
import pytest

from hindsight_lab.sweep.select import (Objective, best_of_n_null, cv_scores, distance_to_base, mean_se, select,
                                        selection_holdout, task_folds)


def _sweep_like(seed: int, n_tasks: int = 21, runs: int = 3, n: int = 300, effect: float = 0.0,
                planted: int = 123) -> tuple[np.ndarray, np.ndarray]:
    """Per-query scores of ``n`` configs that mostly agree (a shared query effect plus small config noise, as
    rerank configs do), config 0 the base; ``planted`` is better by ``effect`` on every query."""
    rng = np.random.default_rng(seed)
    tasks = np.repeat(np.arange(n_tasks), runs)
    query = rng.uniform(0, 1, size=len(tasks))[:, None]
    values = np.clip(query + rng.normal(0, 0.15, size=(len(tasks), n)), 0, 1)
    if effect:
        values[:, planted] = np.clip(values[:, planted] + effect, 0, 1)
    return values, tasks


def test_folds_keep_tasks_whole_and_balanced() -> None:
    tasks = np.repeat(np.arange(21), 3)
    folds = task_folds(tasks, 5, seed=3)
    for t in range(21):
        assert len(set(folds[tasks == t])) == 1
    assert sorted(np.bincount(folds)) in ([12, 12, 12, 12, 15], [9, 12, 12, 15, 15])
    with pytest.raises(ValueError, match="need at least 5 groups"):
        task_folds(["a", "b"], 5)


def test_the_base_config_is_kept_when_every_trial_is_noise() -> None:
    # 60 sweeps of 300 configs that do not differ from the base: the argmax always "gains" by luck; the rule keeps
    # the base unless the best gain is beyond what the best of 300 reaches by luck 95 % of the time
    kept, gains = 0, []
    for seed in range(60):
        values, tasks = _sweep_like(seed)
        folds = task_folds(tasks, 5, seed=seed)
        sel = select(values, tasks, folds, base=0, distance=np.linspace(0, 1, values.shape[1]), seed=seed)
        gains.append(sel.best_gain)
        kept += sel.index == 0
        assert sel.gain >= 0  # never a config whose CV score is below the base's
        if sel.index == 0:
            assert sel.best_gain <= sel.luck_bar and sel.p_value > 0.05
    assert np.median(gains) > 0.02  # negative control: a plain argmax would export a "better" config, by luck
    assert kept >= 54, f"the base was kept in {kept} of 60 noise sweeps (the guard's level is 5 %)"


def test_a_planted_better_config_is_found() -> None:
    # the same sweeps with config 123 better by 0.12 on every query of 21 tasks: detectable on a dev split
    found = 0
    for seed in range(20):
        values, tasks = _sweep_like(seed, effect=0.12)
        folds = task_folds(tasks, 5, seed=seed)
        sel = select(values, tasks, folds, base=0, distance=np.linspace(0, 1, values.shape[1]), seed=seed)
        assert sel.best == 123  # the argmax finds it too: the rule must not lose it
        found += sel.index == 123 and sel.gain > sel.luck_bar and sel.p_value < 0.05
    assert found >= 18, f"the planted config was chosen in {found} of 20 sweeps"


def test_the_closest_candidate_within_one_standard_error_wins() -> None:
    values, tasks = _sweep_like(0, effect=0.12)
    values[:, 5] = values[:, 123] - 0.004  # nearly as good, much closer to the base
    folds = task_folds(tasks, 5)
    distance = np.linspace(0, 1, values.shape[1])
    sel = select(values, tasks, folds, base=0, distance=distance)
    assert sel.best == 123 and sel.index == 5


def test_the_null_is_the_best_gain_of_configs_equal_to_the_base() -> None:
    values, tasks = _sweep_like(1, n=50)
    folds = task_folds(tasks, 5)
    same = np.repeat(values[:, [0]], 50, axis=1)  # every config identical to the base: no gain, ever
    assert np.all(best_of_n_null(same, tasks, folds, 0, n=200) == 0)
    null = best_of_n_null(values, tasks, folds, 0, n=200)
    assert null.shape == (200,) and np.all(null >= 0)  # the base itself is among the candidates


def test_selection_holdout_estimates_the_gain_on_new_tasks() -> None:
    values, tasks = _sweep_like(2, effect=0.12)
    folds = task_folds(tasks, 5)
    held = selection_holdout(values, tasks, folds, base=0, distance=np.linspace(0, 1, values.shape[1]), n_null=300)
    assert held.shape == (5,) and held.mean() > 0.05
    noise, tasks = _sweep_like(3)
    held = selection_holdout(noise, tasks, task_folds(tasks, 5), base=0, distance=np.linspace(0, 1, 300), n_null=300)
    assert np.all(held == 0)  # nothing chosen over the base, so nothing gained or lost


def test_objective_is_declared_before_the_search() -> None:
    one = Objective.of("ndcg@5")
    assert one.name == "ndcg@5" and one.metrics == ("ndcg@5",)
    mix = Objective.of({"ndcg@5": 0.7, "transfer.ndcg@5": 0.3})
    vals = mix.combine({"ndcg@5": np.array([1.0, 0.0]), "transfer.ndcg@5": np.array([0.0, 1.0])})
    assert vals.tolist() == pytest.approx([0.7, 0.3]) and "0.7·ndcg@5" in mix.name
    assert Objective.of("tokens_median", "minimize").combine({"tokens_median": np.array([100.0])})[0] == -100.0


def test_distance_to_base_is_scaled_by_the_searched_range() -> None:
    d = distance_to_base([{"w": 0.5, "m": "a"}, {"w": 1.0, "m": "b"}], {"w": 0.5, "m": "a"},
                         {"w": (0.0, 1.0)})
    assert d.tolist() == [0.0, 1.5]


def test_the_sensitivity_plot_written_to_a_file_leaves_the_backend_alone(tmp_path) -> None:
    import matplotlib
    import matplotlib.pyplot as plt
    import pandas as pd

    from hindsight_lab.sweep.report import sensitivity_plot

    trials = pd.DataFrame({"number": [0, 1, 2], "status": ["ok", "ok", "failed"], "w.a": [0.1, 0.5, 0.9],
                           "cv.mean": [0.4, 0.6, None]})
    before, open_figures = matplotlib.get_backend(), plt.get_fignums()
    matplotlib.use("svg")  # stands for a notebook's inline backend: anything but Agg
    try:
        sensitivity_plot(trials, ["w.a"], "cv.mean", best=1, title="t", path=tmp_path / "s.png")
        assert matplotlib.get_backend() == "svg" and plt.get_fignums() == open_figures
    finally:
        matplotlib.use(before)
    assert (tmp_path / "s.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("best, words", [("base", "best (the base: no trial scores higher) 0.6000"),
                                         (7, "best (trial 7) 0.6300")])
def test_the_choice_in_words_names_the_best_candidate(best, words) -> None:
    from hindsight_lab.cli.sweep import selection_text

    sel = {"chosen": "base", "rule": "r", "folds": 5, "candidates": 9, "objective": "maximize ndcg@5",
           "base_cv": 0.6, "base_se": 0.05, "chosen_cv": 0.6, "chosen_se": 0.05, "best": best,
           "best_cv": 0.6 if best == "base" else 0.63, "best_se": 0.05, "best_gain": 0.0 if best == "base" else 0.03,
           "optimism": 0.05, "level": 0.05, "luck_bar": 0.12, "p_value": 0.8, "holdout_gain": 0.0,
           "holdout_gain_by_fold": [0.0] * 5}
    text = selection_text(sel)
    assert words in text and text.startswith("chosen: base (r; 5 folds, 9 candidates)")
    assert "best gain +0.0" in text and "95% of such draws stay below +0.1200" in text
