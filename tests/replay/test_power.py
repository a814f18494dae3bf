"""The power simulation: histories of a known within-task lift, read by the ceiling's ideal memory and lift test."""

from __future__ import annotations

import numpy as np
import pytest

from hindsight_lab.replay.ceiling import Bar
from hindsight_lab.replay.power import simulate_power, simulated_history


def test_a_history_has_the_asked_shape_and_effect() -> None:
    runs = simulated_history(np.random.default_rng(0), tasks=3000, runs=2, lift=0.4)
    assert len(runs) == 6000 and [r.order for r in runs] == list(range(6000))
    assert [r.task for r in runs[:3]] == ["t0", "t1", "t2"] and runs[3000].task == "t0"  # trial by trial
    followed = np.array(["x" in r.tools for r in runs])
    success = np.array([r.success for r in runs])
    assert abs(followed.mean() - 0.5) < 0.02
    assert abs((success[followed].mean() - success[~followed].mean()) - 0.4) < 0.05


def test_a_large_lift_clears_the_null_and_no_lift_seldom_does() -> None:
    strong = simulate_power(tasks=100, runs=4, lift=0.5, histories=10, shuffles=100, seed=1)
    assert strong["promoted"] == 10 and strong["cleared"] >= 9 and strong["mean_lift"] > 0.3
    none = simulate_power(tasks=100, runs=4, lift=0.0, histories=40, shuffles=100, seed=1)
    assert none["cleared"] <= 6 and abs(none["mean_lift"]) < 0.1  # near the test's 5 % level (4 of 40 here)
    # more data, more power: the same +0.10 lift on ten times the tasks clears the null far more often
    small = simulate_power(tasks=30, runs=4, lift=0.1, histories=20, shuffles=100, seed=2)
    large = simulate_power(tasks=300, runs=4, lift=0.1, histories=20, shuffles=100, seed=2)
    assert large["cleared"] >= small["cleared"] + 8


def test_the_sceptical_prior_keeps_a_rule_without_effect_from_being_promoted_when_checked_after_every_run() -> None:
    # checked after every run, the uniform prior's bar is crossed by chance in most long histories; with 0.9 of the
    # prior on no effect, Ville's inequality bounds it by 0.048 for independent pairs (a few more here: pairs of one
    # task share runs)
    uniform = simulate_power(tasks=100, runs=4, lift=0.0, bar=Bar(prior_effect=1.0), histories=40, shuffles=0, seed=3)
    sceptical = simulate_power(tasks=100, runs=4, lift=0.0, histories=40, shuffles=0, seed=3)
    assert uniform["promoted"] >= 20 and sceptical["promoted"] <= 4
    # and a real effect is still promoted
    assert simulate_power(tasks=100, runs=4, lift=0.3, histories=10, shuffles=0, seed=3)["promoted"] >= 8


@pytest.mark.parametrize("evidence", ["within_task", "runs"])
def test_each_evidence_reads_the_bar_calibrated_under_the_default_prior(evidence: str) -> None:
    # the memory's default evidence (``runs``: every run, by the two success rates) is checked after every run too:
    # under the uniform prior a rule without effect crosses the bar in most histories, under the default in few
    uniform = simulate_power(tasks=100, runs=4, lift=0.0, bar=Bar(prior_effect=1.0), evidence=evidence,
                             histories=40, shuffles=0, seed=4)
    sceptical = simulate_power(tasks=100, runs=4, lift=0.0, evidence=evidence, histories=40, shuffles=0, seed=4)
    assert uniform["promoted"] >= 20 and sceptical["promoted"] <= 4, (uniform, sceptical)
    with pytest.raises(ValueError, match="evidence"):
        simulate_power(tasks=3, runs=1, lift=0.0, evidence="pairs", histories=1, shuffles=0)
