"""The power simulation: histories of a known within-task lift, read by the ceiling's ideal memory and lift test."""

from __future__ import annotations

import numpy as np
import pytest

from hindsight_lab.rule_stats.ceiling import Bar
from hindsight_lab.rule_stats.power import simulate_power, simulated_history


def test_a_history_has_the_asked_shape_and_effect() -> None:
    runs = simulated_history(np.random.default_rng(0), tasks=3000, runs=2, lift=0.4)
    assert len(runs) == 6000 and [r.order for r in runs] == list(range(6000))
    assert [r.task for r in runs[:3]] == ["t0", "t1", "t2"] and runs[3000].task == "t0"  # trial by trial
    followed = np.array(["x" in r.tools for r in runs])
    success = np.array([r.success for r in runs])
    assert abs(followed.mean() - 0.5) < 0.02
    assert abs((success[followed].mean() - success[~followed].mean()) - 0.4) < 0.05


@pytest.mark.slow
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


@pytest.mark.slow
def test_lift_power_simulates_the_replays_own_shape_under_the_memorys_bar() -> None:
    from hindsight_lab.rule_stats.lift import Run
    from hindsight_lab.rule_stats.power import lift_power

    # 12 tasks, most run 3 times: the shape is the task count and the median runs of a task
    runs = [Run(f"{t}-{i}", f"t{t}", "", 0, (), True) for t in range(12) for i in range(3 if t < 10 else 1)]
    power = lift_power(runs, Bar(prior_effect=1.0), evidence="within_task", histories=10, shuffles=50, seed=5)
    assert (power["tasks"], power["runs"], power["prior_effect"], power["evidence"]) == (12, 3, 1.0, "within_task")
    assert {k: power[k] for k in ("histories", "promoted", "cleared", "mean_lift")} == simulate_power(
        tasks=12, runs=3, lift=0.1, bar=Bar(prior_effect=1.0), evidence="within_task", histories=10, shuffles=50,
        seed=5)
    # the same lift is far easier to show on more data of a task
    more = [Run(f"{t}-{i}", f"t{t}", "", 0, (), True) for t in range(300) for i in range(4)]
    assert lift_power(more, histories=10, seed=5)["cleared"] > lift_power(runs, histories=10, seed=5)["cleared"]
    assert "histories" not in lift_power([])  # nothing replayed: nothing simulated


@pytest.mark.slow
def test_a_replay_reports_the_power_of_its_lift_test_and_the_cli_prints_it(traces, capsys) -> None:
    from hindsight_lab.cli import main
    from hindsight_lab.rule_stats.lift import runs_of
    from hindsight_lab.rule_stats.power import lift_power
    from hindsight_lab.sweep.cache import load_episode_data

    path = traces(20, 4, seed=2)
    assert main(["replay", str(path), "--systems", "hindsight", "--no-mlflow", "--set", "embedder.model=hashing-256",
                 "--set", "promotion.prior_effect=1"]) == 0
    text = capsys.readouterr().out
    assert ("power: in 40 simulated histories of this shape (20 tasks × 4 runs, one agent, task difficulty "
            "0.2–0.8), a rule with a true lift of +0.10 is promoted in ") in text
    expected = lift_power(runs_of(load_episode_data(path).episodes, outside_failures=False), Bar(prior_effect=1.0))
    assert f"is promoted in {expected['promoted']} and its lift clears the null's 95th percentile in " \
           f"{expected['cleared']}\n" in text
