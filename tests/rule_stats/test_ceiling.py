"""The rule ceiling: how many tool-level rules recorded traces support within tasks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hindsight_lab.config import LabConfig
from hindsight_lab.rule_stats.ceiling import Bar, Support, forward_lift, promoted_after, rule_ceiling, within_task_support
from hindsight_lab.rule_stats.lift import Run, RunTest, pooled_lift, runs_of
from hindsight_lab.trace.checks import Check
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
    assert (s.agree, s.tasks) == (4, 4) and s.probability() > 0.9 and not s.compared
    # once agent a verifies in one task, its runs can be compared
    runs[0] = Run("t1a", "t1", "a", 0, ("verify", "pay"), False)
    assert within_task_support(runs, *_before("verify", "pay")).compared


def test_the_probability_is_the_beta_posterior_that_pairs_agree_more_often_than_not() -> None:
    from scipy.stats import beta

    for agree, disagree in [(0, 0), (3, 0), (4, 1), (2, 5), (10, 7)]:
        expected = 1 - beta.cdf(0.5, 1 + agree, 1 + disagree)
        assert Support(agree, disagree, 1).probability() == pytest.approx(expected, abs=1e-12)


def test_the_prior_on_no_effect_weighs_the_uniform_answer_by_the_posterior_of_an_effect() -> None:
    from scipy.integrate import quad

    for agree, disagree in [(0, 0), (3, 0), (8, 0), (4, 1), (2, 5), (12, 3)]:
        for prior in (0.1, 0.5):
            like = lambda t: t ** agree * (1 - t) ** disagree  # noqa: E731
            effect, no_effect = prior * quad(like, 0, 1)[0], (1 - prior) * 0.5 ** (agree + disagree)
            expected = prior * quad(like, 0.5, 1)[0] / (effect + no_effect)
            assert Support(agree, disagree, 1).probability(prior) == pytest.approx(expected, rel=1e-9)
    # the sceptical prior needs many more agreeing pairs to clear the bar
    assert Support(3, 0, 3).passes(Bar(prior_effect=1.0)) and not Support(3, 0, 3).passes(Bar(prior_effect=0.1))
    assert Support(8, 0, 3).passes(Bar(prior_effect=0.1))


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_replay_reports_the_ceiling_beside_the_lift(traces) -> None:
    report = run_replay(traces(20, 4, seed=2), systems=["hindsight"],
                        config=LabConfig().with_params({"embedder.model": "hashing-256"}))
    ceiling = report.metrics["rule_ceiling"]
    assert set(ceiling["forms"]) == {"order", "call", "avoid", "stated", "grounded"}
    assert ceiling == rule_ceiling(load_episode_data(traces(20, 4, seed=2)).episodes)


@pytest.mark.slow
def test_chance_counts_the_rules_shuffled_outcomes_support_and_a_planted_rule_beats_it(traces) -> None:
    import random

    episodes = load_episode_data(traces(20, 4, seed=2)).episodes
    order = rule_ceiling(episodes, shuffles=200)["forms"]["order"]
    assert order["supported"] > order["chance_p95"] and order["p_value"] <= 0.05
    # the same runs with their outcomes shuffled among the runs of each task: what a run did no longer says whether
    # it succeeded, and the count is no more than chance's
    p_values = []
    for seed in range(5):
        rng, by_task = random.Random(seed), {}
        for ep in episodes:
            by_task.setdefault(ep.task_id, []).append(ep.outcome)
        for outcomes in by_task.values():
            rng.shuffle(outcomes)
        noise = [ep.model_copy(update={"outcome": by_task[ep.task_id].pop()}) for ep in episodes]
        cell = rule_ceiling(noise, shuffles=200)["forms"]["order"]
        assert 0 < cell["chance_mean"] and cell["chance_mean"] <= cell["chance_p95"]
        p_values.append(cell["p_value"])
    assert sorted(p_values)[2] > 0.2, p_values
    # without contrast within tasks nothing is supported, by the data or by chance
    flat = rule_ceiling([ep.model_copy(update={"outcome": "success" if int(ep.task_id[-3:]) % 2 else "failure"})
                         for ep in episodes], shuffles=20)["forms"]["order"]
    assert (flat["supported"], flat["chance_mean"], flat["p_value"]) == (0, 0.0, 1.0)
    assert "p_value" not in rule_ceiling(episodes, shuffles=0)["forms"]["order"]


UNIFORM = Bar(prior_effect=1.0)  # a small history: the uniform prior promotes early enough to leave runs to judge


@pytest.mark.slow
def test_an_ideal_memory_promotes_a_rule_at_the_first_run_that_supports_it_and_judges_it_on_later_runs(traces) -> None:
    runs = runs_of(load_episode_data(traces(20, 4, seed=2)).episodes, outside_failures=False)
    tools = sorted({t for r in runs for t in r.tools})
    promoted = []
    for a in tools:
        for b in tools:
            if a == b:
                continue
            test = RunTest.of(Check((a, b)))
            passes = [k for k in range(len(runs))
                      if (s := within_task_support(runs[:k + 1], test.applies, test.followed)).probability(1.0) > 0.7
                      and s.tasks >= 3 and s.compared]
            after = promoted_after(runs, test, UNIFORM)
            assert after == (runs[passes[0]].order if passes else None), (a, b)
            if after is not None:
                promoted.append((test, after))
    assert promoted
    forward = forward_lift(runs, promoted)
    assert forward["promoted"] == len(promoted) and forward["runs_compared"] > 0
    assert forward["lift"] > forward["null_p95"] and forward["p_value"] <= 0.05  # the planted rules hold later on
    assert rule_ceiling(load_episode_data(traces(20, 4, seed=2)).episodes, UNIFORM)["forms"]["order"]["forward"] \
        == forward
    # only runs after a rule's promotion are compared: promoted at the last run, a rule has nothing to judge
    assert forward_lift(runs, [(test, len(runs) - 1) for test, _ in promoted])["runs_compared"] == 0
    # the lift over time: rules join as they are promoted, nothing before the first, the whole lift at the end
    curve = forward["over_time"]
    assert [p["promoted"] for p in curve] == sorted(p["promoted"] for p in curve)
    first = min(after for _, after in promoted)
    assert all(p["lift"] is None and p["promoted"] == 0 for p in curve if p["runs"] <= first)
    assert curve[-1]["promoted"] == len(promoted) and curve[-1]["runs"] == max(r.order for r in runs)
    assert curve[-1]["lift"] == pytest.approx(forward["lift"]) and curve[-1]["runs_compared"] == forward["runs_compared"]
    cut = curve[len(curve) // 2]["runs"]  # a point in the middle is the lift of a history that stopped there
    early = [(t, a) for t, a in promoted if a < cut]
    assert curve[len(curve) // 2]["runs_compared"] == (pooled_lift(early, [r for r in runs if r.order <= cut])[1]
                                                       if early else 0)


def _episode(steps: list[dict], ok: bool = True, eid: str = "e"):
    from hindsight_lab.trace.model import Episode

    return Episode.model_validate({"episode_id": eid, "task_id": eid[0], "instruction": "x", "steps": steps,
                                   "outcome": "success" if ok else "failure"})


def test_argument_sources_read_what_was_said_before_the_call_by_the_agents_calls_only() -> None:
    from hindsight_lab.trace.arguments import Source, argument_sources

    said = {"type": "message", "role": "user", "content": "Book flight HAT12 for 2 bags, cabin: Economy."}
    call = {"type": "tool_call", "name": "book", "arguments": {"flight": "HAT12", "bags": 2.0, "cabin": "economy",
                                                               "insurance": True, "note": ""}}
    sources = argument_sources(_episode([said, call]))
    assert sources == {("book", k): Source(True, True) for k in ("flight", "bags", "cabin")}  # no bool, no empty
    # said only after the call: neither stated nor grounded; a part of a longer word is not the value
    assert argument_sources(_episode([call, said]))[("book", "flight")] == Source(False, False)
    partial = {"type": "message", "role": "user", "content": "Book flight HAT123 for 22 bags"}
    assert argument_sources(_episode([partial, call]))[("book", "bags")] == Source(False, False)
    # every call of the tool must pass a stated value; the user's own calls are not the agent's
    later = {"type": "tool_call", "name": "book", "arguments": {"flight": "HAT99"}}
    assert argument_sources(_episode([said, call, later]))[("book", "flight")] == Source(False, False)
    by_user = {**later, "actor": "user"}
    assert argument_sources(_episode([said, call, by_user]))[("book", "flight")] == Source(True, True)
    # a value a tool returned is grounded, not stated
    result = {"type": "tool_result", "content": "found HAT99"}
    assert argument_sources(_episode([said, result, later]))[("book", "flight")] == Source(False, True)


def test_argument_rules_are_supported_when_runs_that_use_the_users_values_succeed() -> None:
    said = {"type": "message", "role": "user", "content": "Cancel reservation R{t} please"}

    def run(t: int, i: int, stated: bool) -> Any:
        rid = f"R{t}" if stated else f"R{t}X"
        return _episode([{**said, "content": said["content"].format(t=t)},
                         {"type": "tool_call", "name": "cancel", "arguments": {"id": rid}}], ok=stated,
                        eid=f"{'abcdefgh'[t]}{i}")

    episodes = [run(t, i, stated=i % 2 == 0) for i in range(2) for t in range(8)]
    stated = rule_ceiling(episodes, shuffles=0)["forms"]["stated"]
    assert stated["supported"] == 1 and stated["examples"][0]["rule"] == "Call cancel with the id the user stated."
    assert stated["examples"][0]["tasks"] == 8


def test_counting_a_whole_history_at_once_equals_tallying_it_run_by_run() -> None:
    from hindsight_lab.rule_stats.ceiling import _Marks, _Tally

    rng = np.random.default_rng(3)
    for _ in range(50):
        runs = [Run(f"e{i}", f"t{rng.integers(6)}", f"s{rng.integers(3)}", i,
                    tuple(rng.choice(["get", "pay", "check"], size=rng.integers(1, 4))), bool(rng.random() < 0.5))
                for i in range(int(rng.integers(1, 40)))]
        test = RunTest(lambda r: "pay" in r.tools, lambda r: "check" in r.tools)
        tally = _Tally()
        for r in runs:
            if test.applies(r):
                tally.add(r, test.followed(r))
        assert _Marks.of(runs, test).support(np.array([r.success for r in runs])) == tally.support
