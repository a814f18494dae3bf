"""The lift of promoted rules (hindsight_lab.rule_stats.lift): only runs after the promotion, per source agent, an
interval over whole tasks and a null that shuffles outcomes within each task; and the line the CLI prints."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from hindsight_lab.cli.replay import _lift_line
from hindsight_lab.rule_stats.lift import Run, lift_report, pooled_lift
from hindsight_lab.trace import Episode
from hindsight_lab.trace.checks import Check
from hindsight_lab.tracking import replay_metrics
from hindsight_lab.types import Kind, MemoryRecord
from support import T0

CHECK = Check(("get_order", "refund"))
FOLLOW, SKIP = ("get_order", "refund"), ("refund",)


def _runs(pattern: list[tuple[tuple[str, ...], bool]], source: str = "a", start: int = 0) -> list[Run]:
    return [Run(f"{source}{start + i}", f"t{(start + i) // 2}", source, start + i, tools, ok)
            for i, (tools, ok) in enumerate(pattern)]


def test_only_runs_after_the_promotion_are_compared() -> None:
    runs = _runs([(FOLLOW, False), (SKIP, True), (FOLLOW, True), (SKIP, False)])
    assert pooled_lift([(CHECK, 1)], runs) == (1.0, 2)   # the two runs that confirmed it are left out
    assert pooled_lift([(CHECK, -1)], runs)[0] == pytest.approx(0.0)
    assert pooled_lift([(CHECK, 3)], runs)[1] == 0 and np.isnan(pooled_lift([(CHECK, 3)], runs)[0])


def test_runs_that_never_reach_the_guarded_step_say_nothing() -> None:
    runs = _runs([(FOLLOW, True), (SKIP, False), (("get_order",), False), (("search",), True)])
    assert pooled_lift([(CHECK, -1)], runs) == (1.0, 2)


def test_agents_are_compared_with_themselves_not_with_each_other() -> None:
    # agent a always follows and succeeds, agent b never follows and fails: pooled across agents that would be a
    # lift of 1 that only says a is the better agent; within each agent nothing is compared
    runs = _runs([(FOLLOW, True)] * 4, "a") + _runs([(SKIP, False)] * 4, "b", start=4)
    lift, compared = pooled_lift([(CHECK, -1)], runs)
    assert compared == 0 and np.isnan(lift)


def _episodes(outcomes: list[tuple[tuple[str, ...], bool]]) -> list[Episode]:
    return [Episode.model_validate({
        "episode_id": f"e{i}", "task_id": f"task-{i // 2}", "instruction": "Refund my order",
        "outcome": "success" if ok else "failure",
        "steps": [{"type": "tool_call", "name": t, "arguments": {}} for t in tools]})
        for i, (tools, ok) in enumerate(outcomes)]


def _rule(promoted_after: int) -> MemoryRecord:
    return MemoryRecord(id="rule-1", kind=Kind.RULE, content="Call get_order before refund.", confidence=0.9,
                        attrs={"check": CHECK.to_dict(),
                               "promoted_at": (T0 + timedelta(hours=promoted_after)).isoformat()})


def test_a_rule_that_predicts_success_is_told_from_luck() -> None:
    # 12 tasks after the promotion, two runs each: the one that followed the rule succeeded, the other failed
    pattern = [(FOLLOW, True), (SKIP, False)] * 12
    eps = _episodes([(FOLLOW, True)] + pattern)
    times = [T0 + timedelta(hours=i) for i in range(len(eps))]
    out = lift_report([_rule(0)], eps, times, n=400)
    assert out["promoted"] == 1 and out["rules"][0]["promoted_after_episode"] == 0
    assert out["lift"] == 1.0 and out["runs_compared"] == 24 and out["ci"] == [1.0, 1.0]
    assert out["p_value"] < 0.01 and out["null_p95"] < 1.0
    assert "+1.000 [1.000, 1.000] over 24 runs" in _lift_line("hindsight", out)
    logged = replay_metrics({"systems": {}, "lift": {"hindsight": out}})
    assert logged["lift.hindsight.lift"] == 1.0 and logged["lift.hindsight.ci_low"] == 1.0
    assert logged["lift.hindsight.runs_compared"] == 24 and logged["lift.hindsight.p_value"] < 0.01


def test_a_lift_the_tasks_difficulty_explains_is_told_apart() -> None:
    # _episodes pairs runs into tasks: in 6 easy tasks both runs followed the rule and succeeded, in 6 hard ones
    # both skipped it and failed. Followers succeed, the others fail (lift 1), but within a task nothing tells the
    # runs apart: every shuffle gives the same lift, so the null's mean is the whole lift and nothing is left for it
    eps = _episodes([(FOLLOW, True), (FOLLOW, True), (SKIP, False), (SKIP, False)] * 6)
    out = lift_report([_rule(-1)], eps, [T0 + timedelta(hours=i) for i in range(len(eps))], n=200)
    assert out["lift"] == 1.0 and out["null_mean"] == pytest.approx(1.0) and out["p_value"] == 1.0
    assert "+1.000 from the tasks' difficulty alone, p 1.00" in _lift_line("hindsight", out)
    assert replay_metrics({"systems": {}, "lift": {"hindsight": out}})["lift.hindsight.null_mean"] == 1.0
    # within each task the follower succeeded and the other failed: the difficulty explains none of it
    paired = lift_report([_rule(-1)], _episodes([(FOLLOW, True), (SKIP, False)] * 12),
                         [T0 + timedelta(hours=i) for i in range(24)], n=400)
    assert paired["lift"] == 1.0 and abs(paired["null_mean"]) < 0.15


def test_success_unrelated_to_the_rule_is_not_called_a_lift() -> None:
    rng = np.random.default_rng(3)
    pattern = [(FOLLOW if i % 2 else SKIP, bool(rng.random() < 0.5)) for i in range(40)]
    eps = _episodes(pattern)
    times = [T0 + timedelta(hours=i) for i in range(len(eps))]
    out = lift_report([_rule(-1)], eps, times, n=400)
    assert out["p_value"] > 0.05 and out["ci"][0] < 0 < out["ci"][1]


def test_no_promoted_rule_no_comparison() -> None:
    eps = _episodes([(FOLLOW, True), (SKIP, False)])
    unpromoted = MemoryRecord(id="rule-2", kind=Kind.RULE, content="x", attrs={"check": CHECK.to_dict()})
    out = lift_report([unpromoted], eps, [T0, T0 + timedelta(hours=1)])
    assert out["promoted"] == 0 and out["runs_compared"] == 0 and out["lift"] is None and "ci" not in out
    assert "lift n/a" in _lift_line("hindsight", out)
    logged = replay_metrics({"systems": {}, "lift": {"hindsight": out}})
    assert {k: v for k, v in logged.items() if k.startswith("lift.")} == {
        "lift.hindsight.promoted": 0.0, "lift.hindsight.distinct": 0.0, "lift.hindsight.runs_compared": 0.0}


def _rule_from(rule_id: str, first_source: str, tools: tuple[str, ...], promoted_after: int) -> MemoryRecord:
    return MemoryRecord(id=rule_id, kind=Kind.RULE, content=f"Call {tools[0]} before {tools[-1]}.", confidence=0.9,
                        source_episode_ids=[first_source],
                        attrs={"check": Check(tools).to_dict(),
                               "promoted_at": (T0 + timedelta(hours=promoted_after)).isoformat()})


def test_a_promoted_rule_is_counted_where_it_applies_after_its_promotion() -> None:
    # e0..e7: the rule is promoted at e1; e2, e4 and e6 reach its step (refund), e3, e5 and e7 never do
    eps = _episodes([(FOLLOW, True), (FOLLOW, True), (FOLLOW, True), (("search",), True),
                     (SKIP, False), (("search",), True), (FOLLOW, True), (("search",), True)])
    times = [T0 + timedelta(hours=i) for i in range(len(eps))]
    rule = _rule_from("rule-x", "e0", FOLLOW, 1)
    injected = {"e1": {"e0"}, "e2": {"e0"}, "e3": {"e0"}, "e4": set(), "e6": set(), "e7": {"e0"}}
    row = lift_report([rule], eps, times, n=50, injected=injected)["rules"][0]
    # applies: e2, e4, e6 (after the promotion, reaching refund, queried); e1 came at the promotion, e5 was no
    # query, e3 and e7 never reached refund, so injecting there does not count
    assert (row["applies"], row["injected_where_applies"]) == (3, 1)
    out = lift_report([rule], eps, times, n=50, injected=injected | {"e4": {"e0"}})
    assert out["rules"][0]["injected_where_applies"] == 2 and out["injected_where_apply"] == 1.0
    assert lift_report([rule], eps, times, n=50, injected=injected)["injected_where_apply"] == 0.0
    # another rule injected in its place does not count for it
    assert lift_report([rule], eps, times, n=50, injected={k: {"e9"} for k in injected}
                       )["rules"][0]["injected_where_applies"] == 0
    assert "injected_where_apply" not in lift_report([rule], eps, times, n=50)


def test_rules_with_the_same_check_are_one_distinct_rule() -> None:
    eps = _episodes([(FOLLOW, True), (SKIP, False), (("a", "b"), True), (("a", "b"), True)])
    times = [T0 + timedelta(hours=i) for i in range(len(eps))]
    twins = [_rule_from("r1", "e0", FOLLOW, 0), _rule_from("r2", "e1", FOLLOW, 1)]
    out = lift_report(twins + [_rule_from("r3", "e2", ("a", "b"), 2)], eps, times, n=50, injected={"e3": set()})
    assert out["promoted"] == 3 and out["distinct"] == 2
    assert out["injected_where_apply"] == 0.0  # r3 applies to e3 and was not injected; r1 and r2 apply to none
    line = _lift_line("hindsight", out)
    assert "3 promoted rule(s) with a check (2 distinct; 0.00 of those that applied" in line


def test_a_rule_verified_within_tasks_says_how_many_of_its_pairs_join_different_tasks() -> None:
    # e0/e1 are runs of task-0 and e2/e3 of task-1 (the dataset's labels), but all four name the same customer, so
    # the memory's instance signatures pair every follower with every run that skipped the step
    eps = _episodes([(FOLLOW, True), (SKIP, False), (FOLLOW, True), (SKIP, False)])
    times = [T0 + timedelta(hours=i) for i in range(len(eps))]
    paired = {f"e{i}": [code, ["c100"]] for i, code in enumerate(["fo", "ix", "fo", "ix"])}
    rule = _rule(0)
    rule = MemoryRecord(id=rule.id, kind=rule.kind, content=rule.content, confidence=rule.confidence,
                        attrs={**rule.attrs, "paired": paired})
    out = lift_report([rule], eps, times, n=50)
    assert (out["rules"][0]["pairs"], out["rules"][0]["pairs_across_tasks"]) == (4, 2)  # e0–e3 and e1–e2 across
    assert "2 of the 4 pairs of runs they were verified by join different tasks" in _lift_line("hindsight", out)
    # told apart by their identifiers, the runs of the two tasks no longer pair across them
    paired.update(e2=["fo", ["c200"]], e3=["ix", ["c200"]])
    rule = MemoryRecord(id=rule.id, kind=rule.kind, content=rule.content, confidence=rule.confidence,
                        attrs={**rule.attrs, "paired": paired})
    assert lift_report([rule], eps, times, n=50)["rules"][0]["pairs_across_tasks"] == 0
    # a rule verified by every run has no pairs to report
    assert "pairs" not in lift_report([_rule(0)], eps, times, n=50)["rules"][0]
