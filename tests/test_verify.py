"""Rules verified by later outcomes (hindsight_lab.memory.verify): confidence from the runs that reach a rule's step,
promotion in different tasks, lucky rules never promoted, and no judging label read on the way."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.memory.verify import counts, helps_probability, paired_runs, pairs
from hindsight_lab.store.memory import InMemoryStore
from hindsight_lab.types import Kind
from support import REPO, T0

CHECK = {"kind": "order", "tools": ["verify_identity", "issue_refund"]}


def _mem(hashing, **params) -> MemorySystem:
    """A memory with the uniform prior alone (``promotion.prior_effect: 1``), so that a few runs make a worked example;
    the default, sceptical prior is tested on its own below."""
    cfg = LabConfig().with_params({"promotion.prior_effect": 1.0, **params})
    return MemorySystem(cfg, store=InMemoryStore(), embedder=hashing, clock=lambda: T0).open()


def _run(i: int, customer: str, *, follow: bool, ok: bool, task_type: str | None = None,
         task_id: str | None = None) -> dict:
    tools = ["lookup_order", "verify_identity", "issue_refund"] if follow else ["lookup_order", "issue_refund"]
    steps = [{"type": "tool_call", "name": t, "arguments": {"customer_id": customer}} for t in tools]
    return {"episode_id": f"run-{i}", "instruction": f"Refund the order of customer {customer}", "steps": steps,
            "outcome": "success" if ok else "failure", "task_type": task_type, "task_id": task_id,
            "started_at": (T0 + timedelta(hours=i)).isoformat()}


def _rule(mem: MemorySystem) -> None:
    mem.write("Before issue_refund, call verify_identity.", confidence=0.55, counter_examples=["digital goods"],
              source_episode_ids=["seed"], check=CHECK)


def test_the_probability_that_following_helps_matches_sampling() -> None:
    rng = np.random.default_rng(0)
    for c in ({"fo": 3, "fx": 2, "io": 1, "ix": 4}, {"fo": 0, "fx": 4, "io": 2, "ix": 2}):
        f = rng.beta(1 + c["fo"], 1 + c["fx"], 200_000)
        i = rng.beta(1 + c["io"], 1 + c["ix"], 200_000)
        assert helps_probability(c) == pytest.approx((f > i).mean(), abs=0.01)


def test_a_rule_is_confirmed_by_its_followers_success_and_promoted_in_different_tasks(hashing) -> None:
    mem = _mem(hashing)
    _rule(mem)
    (cand,) = mem.records(Kind.CANDIDATE)
    assert cand.confidence == 0.55  # no run reached its step yet: the reflector's proposal
    mem.write_episode(_run(0, "C100", follow=True, ok=True))
    (cand,) = mem.records(Kind.CANDIDATE)  # a follower succeeded: two tasks, P(helps) 2/3 — not yet
    assert counts(cand) == {"fo": 1, "fx": 0, "io": 0, "ix": 0} and 0.55 < cand.confidence < 0.7
    mem.write_episode(_run(1, "C200", follow=False, ok=False))
    (rule,) = mem.records(Kind.RULE)  # and one that ignored it failed: three tasks, P(helps) 5/6 — promoted
    assert counts(rule) == {"fo": 1, "fx": 0, "io": 0, "ix": 1} and rule.confidence == pytest.approx(5 / 6)
    assert rule.attrs["promoted_at"] and not mem.records(Kind.CANDIDATE)
    assert mem.reflection_stats()["promotions"] == 1  # counted though no reflection wrote it
    # a run that never reached the step says nothing of the rule
    mem.write_episode({"episode_id": "run-9", "instruction": "Where is my parcel", "outcome": "failure",
                       "steps": [{"type": "tool_call", "name": "track_parcel", "arguments": {}}]})
    assert counts(mem.records(Kind.RULE)[0]) == counts(rule)


def test_retries_of_one_task_count_once(hashing) -> None:
    mem = _mem(hashing)
    _rule(mem)
    # the same customer, retried four times: confirmations, but of one task (with the rule's source: two)
    mem.write_episodes([_run(i, "C100", follow=i % 2 == 0, ok=i % 2 == 0) for i in range(4)])
    (cand,) = mem.records(Kind.CANDIDATE)
    assert cand.confidence > 0.7 and not mem.records(Kind.RULE)
    # negative control: counted by episode, the same runs promote it
    mem2 = _mem(hashing, **{"promotion.distinct": "episodes"})
    _rule(mem2)
    mem2.write_episodes([_run(i, "C100", follow=i % 2 == 0, ok=i % 2 == 0) for i in range(4)])
    assert mem2.records(Kind.RULE)


def test_within_task_evidence_ignores_followers_that_were_only_in_easier_tasks(hashing) -> None:
    # every run of an easy customer follows the rule and succeeds, every run of a hard one ignores it and fails
    runs = [_run(i, f"C{i % 8}", follow=i % 8 < 4, ok=i % 8 < 4) for i in range(16)]
    pooled = _mem(hashing)
    _rule(pooled)
    pooled.write_episodes(runs)
    assert pooled.records(Kind.RULE)  # pooled over runs, the rule looks sure
    within = _mem(hashing, **{"promotion.evidence": "within_task"})
    _rule(within)
    within.write_episodes(runs)
    (cand,) = within.records(Kind.CANDIDATE)  # no task has a run that followed it and one that did not
    assert pairs(cand) == (0, 0, []) and cand.confidence == 0.55 and not within.records(Kind.RULE)
    assert len(paired_runs(cand)) == 16


def test_within_task_evidence_promotes_a_rule_that_tells_runs_of_one_task_apart(hashing) -> None:
    mem = _mem(hashing, **{"promotion.evidence": "within_task"})
    _rule(mem)
    # three customers: a run that ignored the rule failed, then a retry that followed it succeeded
    mem.write_episodes([_run(2 * k + j, f"C{k}00", follow=j == 1, ok=j == 1) for k in range(2) for j in range(2)])
    (cand,) = mem.records(Kind.CANDIDATE)
    assert pairs(cand)[:2] == (2, 0) and cand.confidence == pytest.approx(0.875)  # two tasks: not yet
    mem.write_episodes([_run(4 + j, "C900", follow=j == 1, ok=j == 1) for j in range(2)])
    (rule,) = mem.records(Kind.RULE)
    assert pairs(rule)[:2] == (3, 0) and rule.confidence == pytest.approx(0.9375)
    # a pair that disagrees (the follower failed, the one that ignored it succeeded) weakens it
    mem.write_episodes([_run(6 + j, "C950", follow=j == 0, ok=j == 1) for j in range(2)])
    (rule,) = mem.records(Kind.RULE)
    assert pairs(rule)[:2] == (3, 1) and rule.confidence == pytest.approx(0.8125)


def test_a_lucky_order_is_weakened_by_the_runs_that_follow_it(hashing) -> None:
    mem = _mem(hashing)
    mem.write("Before issue_refund, call lookup_order only.", confidence=0.6, counter_examples=["x"],
              source_episode_ids=["lucky"], check={"kind": "order", "tools": ["lookup_order", "issue_refund"]})
    mem.write_episodes([_run(i, f"C{i}00", follow=False, ok=False) for i in range(1, 6)])
    (cand,) = mem.records(Kind.CANDIDATE)
    assert counts(cand)["fx"] == 5 and cand.confidence < 0.3 and not mem.records(Kind.RULE)


@pytest.mark.parametrize("evidence", ["runs", "within_task"])
def test_the_evidence_path_reads_no_judging_label(hashing, evidence) -> None:
    # the same runs with their ground-truth task types and task ids shuffled: the same evidence, confidences, rules
    runs = [_run(i, f"C{i % 3}00", follow=i % 2 == 0, ok=i % 2 == 0) for i in range(9)]  # both kinds per task
    shuffled = [dict(r, task_type=t, task_id=k) for r, t, k in
                zip(runs, ["a", "b", "c"] * 3, [f"task-{(i * 7) % 9}" for i in range(9)])]

    def state(episodes: list[dict]) -> list:
        mem = _mem(hashing, **{"promotion.evidence": evidence})
        _rule(mem)
        mem.write_episodes(episodes)
        return sorted((r.kind.value, r.content, round(r.confidence, 12), json.dumps(counts(r)), pairs(r))
                      for r in mem.records(Kind.CANDIDATE) + mem.records(Kind.RULE))

    assert state(runs) == state(shuffled)
    assert any(row[-1][0] for row in state(runs)) == (evidence == "within_task")  # pairs only where read


@pytest.mark.slow
def test_no_lucky_rule_reaches_l3_on_the_synthetic_lucky_scenario(minilm, tmp_path: Path) -> None:
    from hindsight_lab.datasets import load
    from hindsight_lab.replay.engine import run_episodes
    from hindsight_lab.replay.systems import build_systems

    episodes, _ = load(REPO / "datasets" / "synthetic" / "lucky.jsonl")
    lucky = {e.episode_id for e in episodes if (e.meta or {}).get("lucky")}
    assert lucky
    (system,) = build_systems(["hindsight"], config=LabConfig(), embedder=minilm, top_k=10, token_budget=600,
                              root=str(tmp_path))
    try:
        run_episodes(episodes, [system])
        rules = system.mem.records(Kind.RULE) + [r for r in system.mem.records(archived=True) if r.kind is Kind.RULE]
        candidates = system.mem.records(Kind.CANDIDATE)
    finally:
        system.close()
    assert candidates or rules  # it did reflect
    assert not [r.id for r in rules if set(r.source_episode_ids) & lucky]


@pytest.mark.parametrize("same_check", [True, False])
def test_rules_with_the_same_check_merge_whatever_their_wording_and_task_type(hashing, same_check) -> None:
    mem = _mem(hashing, **{"dedup.same_check": same_check})
    mem.write("For refund tasks, call lookup_order → verify_identity → issue_refund in this order.",
              task_type="issue_refund", confidence=0.5, counter_examples=["digital goods"],
              source_episode_ids=["e1"], check=CHECK)
    mem.write("Before issue_refund, call verify_identity first.", task_type="issue_refund+ship_replacement",
              confidence=0.5, counter_examples=["gift cards"], source_episode_ids=["e2"], check=CHECK)
    mem.write("Before issue_refund, call lookup_order first.", task_type="issue_refund", confidence=0.5,
              counter_examples=["gift cards"], source_episode_ids=["e3"],
              check={"kind": "order", "tools": ["lookup_order", "issue_refund"]})  # another claim: kept apart
    cands = sorted(mem.records(Kind.CANDIDATE), key=lambda r: -r.hit_count)
    if same_check:  # the same verifiable claim: one candidate with both sources
        assert [c.hit_count for c in cands] == [2, 1]
        assert set(cands[0].source_episode_ids) == {"e1", "e2"} and cands[0].content.startswith("For refund")
    else:  # unlike texts, other task types: apart, as before
        assert [c.hit_count for c in cands] == [1, 1, 1]


def test_one_customer_with_two_requests_counts_as_two_tasks(hashing) -> None:
    # runs about the same customer are one task only if, when they succeeded, they changed the same things: a
    # success that also sent a voucher did another request of that customer (tau2 telecom: one customer, many faults)
    def run(i: int, extra: list[str]) -> dict:
        out = _run(i, "C100", follow=True, ok=True)
        out["steps"] += [{"type": "tool_call", "name": t, "arguments": {"customer_id": "C100"}} for t in extra]
        return out

    mem = _mem(hashing)
    _rule(mem)
    mem.write_episodes([run(0, []), run(1, ["send_voucher"])])
    (rule,) = mem.records(Kind.RULE)  # the seed and two requests: three tasks, P(helps) 3/4
    assert counts(rule) == {"fo": 2, "fx": 0, "io": 0, "ix": 0} and rule.confidence == pytest.approx(3 / 4)
    # negative control: two successes that changed the same things are retries of one request
    mem2 = _mem(hashing)
    _rule(mem2)
    mem2.write_episodes([run(0, ["send_voucher"]), run(1, ["send_voucher"])])
    assert not mem2.records(Kind.RULE) and mem2.records(Kind.CANDIDATE)[0].confidence == pytest.approx(3 / 4)


def test_the_default_prior_on_no_effect_needs_more_evidence_than_three_tasks(hashing) -> None:
    # the default puts 0.9 of the prior on "following the rule changes nothing": one follower that succeeded and one
    # run that ignored it and failed (three tasks with the seed) promote under the uniform prior, not under this one
    mem = _mem(hashing, **{"promotion.prior_effect": 0.1})
    _rule(mem)
    mem.write_episodes([_run(0, "C100", follow=True, ok=True), _run(1, "C200", follow=False, ok=False)])
    (cand,) = mem.records(Kind.CANDIDATE)
    assert cand.confidence == pytest.approx(helps_probability(counts(cand), 0.1)) and cand.confidence < 0.2
    assert helps_probability(counts(cand), 1.0) == pytest.approx(5 / 6)
    # four followers that succeeded and four runs that ignored it and failed, in different tasks: promoted
    mem.write_episodes([_run(i, f"C{i}00", follow=i % 2 == 0, ok=i % 2 == 0) for i in range(2, 8)])
    (rule,) = mem.records(Kind.RULE)
    assert counts(rule) == {"fo": 4, "fx": 0, "io": 0, "ix": 4} and rule.confidence > 0.7


def test_the_no_effect_part_of_the_prior_is_the_one_rate_model() -> None:
    from scipy.integrate import dblquad, quad

    c = {"fo": 3, "fx": 1, "io": 1, "ix": 3}
    like = lambda f, i: f ** 3 * (1 - f) * i * (1 - i) ** 3  # noqa: E731
    effect = dblquad(like, 0, 1, 0, 1)[0]
    helps = dblquad(lambda f, i: like(f, i) * (f > i), 0, 1, 0, 1, epsabs=1e-12)[0]
    no_effect = quad(lambda p: p ** 4 * (1 - p) ** 4, 0, 1)[0]
    for prior in (0.1, 0.5):
        expected = prior * helps / (prior * effect + (1 - prior) * no_effect)
        assert helps_probability(c, prior) == pytest.approx(expected, rel=1e-3)
    assert helps_probability(c, 1.0) == pytest.approx(helps / effect, rel=1e-3)
