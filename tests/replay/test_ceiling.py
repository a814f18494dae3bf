"""The rule ceiling: how many tool-level rules recorded traces support within tasks."""

from __future__ import annotations

import pytest

from hindsight_lab.config import LabConfig
from hindsight_lab.replay.ceiling import Support, rule_ceiling, within_task_support
from hindsight_lab.replay.lift import Run
from hindsight_lab.replay.runner import run_replay
from hindsight_lab.sweep.cache import load_episode_data


def _run(eid: str, task: str, tools: tuple[str, ...], ok: bool) -> Run:
    return Run(eid, task, "", 0, tools, ok)


def _before(a: str, b: str):
    return (lambda r: b in r.tools), (lambda r: a in r.tools[:r.tools.index(b)])


def test_only_pairs_of_one_task_count_and_the_follower_decides_agreement() -> None:
    runs = [_run("a1", "a", ("get", "pay"), True), _run("b1", "b", ("pay",), False),  # followers and not, two tasks
            _run("c1", "c", ("get", "pay"), False), _run("c2", "c", ("pay",), True),  # one task: disagrees
            _run("d1", "d", ("get", "pay"), True), _run("d2", "d", ("pay",), False),  # agrees
            _run("d3", "d", ("get", "pay"), True), _run("d4", "d", ("pay",), True)]  # same outcome: says nothing
    s = within_task_support(runs, *_before("get", "pay"))
    assert (s.agree, s.disagree, s.tasks) == (2, 1, 1)  # d1–d2, d3–d2 agree; c1–c2 disagrees; a and b never pair


def test_a_rule_that_only_marks_one_agents_habit_compares_nothing() -> None:
    # one run of each agent per task: agent b always verifies and succeeds, agent a never does and fails
    runs = [Run(f"{t}{agent}", t, agent, 0, ("verify", "pay") if agent == "b" else ("pay",), agent == "b")
            for t in ("t1", "t2", "t3", "t4") for agent in ("a", "b")]
    s = within_task_support(runs, *_before("verify", "pay"))
    assert (s.agree, s.tasks) == (4, 4) and s.probability > 0.9 and not s.compared
    # once agent a verifies in one task, its runs can be compared
    runs[0] = Run("t1a", "t1", "a", 0, ("verify", "pay"), False)
    assert within_task_support(runs, *_before("verify", "pay")).compared


def test_the_probability_is_the_beta_posterior_that_pairs_agree_more_often_than_not() -> None:
    from scipy.stats import beta

    for agree, disagree in [(0, 0), (3, 0), (4, 1), (2, 5), (10, 7)]:
        expected = 1 - beta.cdf(0.5, 1 + agree, 1 + disagree)
        assert Support(agree, disagree, 1).probability == pytest.approx(expected, abs=1e-12)


def test_traces_whose_failures_skip_a_step_support_order_rules_and_traces_without_contrast_none(traces) -> None:
    episodes = load_episode_data(traces(20, 4, seed=2)).episodes
    ceiling = rule_ceiling(episodes)
    assert ceiling["tasks"] == 20 and 0 < ceiling["tasks_with_both_outcomes"] <= 20
    order = ceiling["forms"]["order"]
    assert order["supported"] >= 1 and order["examples"][0]["probability"] > 0.7
    assert order["examples"][0]["tasks"] >= 3
    # the same runs with each task's outcome made the same for all of its runs: nothing tells followers apart
    same = [ep.model_copy(update={"outcome": "success" if int(ep.task_id[-3:]) % 2 else "failure"})
            for ep in episodes]
    flat = rule_ceiling(same)
    assert flat["tasks_with_both_outcomes"] == 0
    assert all(cell["supported"] == 0 for cell in flat["forms"].values())


def test_a_replay_reports_the_ceiling_beside_the_lift(traces) -> None:
    report = run_replay(traces(20, 4, seed=2), systems=["hindsight"],
                        config=LabConfig().with_params({"embedder.model": "hashing-256"}))
    ceiling = report.metrics["rule_ceiling"]
    assert set(ceiling["forms"]) == {"order", "call", "avoid"}
    assert ceiling == rule_ceiling(load_episode_data(traces(20, 4, seed=2)).episodes)
