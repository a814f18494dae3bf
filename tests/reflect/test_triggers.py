"""Trigger rules (DESIGN §4): each rule, its switch, and its reason."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hindsight_lab.config import LabConfig
from hindsight_lab.reflect.compress import CompressedEpisode
from hindsight_lab.reflect.triggers import TriggerPolicy
from support import T0


def _ep(eid="e", tools=("get_order", "refund_order"), outcome="success", task_type="refund_order",
        errors=(), cause=None, feedback=()):
    return CompressedEpisode(episode_id=eid, task_id=None, domain=None, instruction="refund order 1",
                             task_type=task_type, outcome=outcome, failure_cause=cause, tools=tuple(tools),
                             calls=tuple(tools), decisions=(), errors=tuple(errors), final_answer=None,
                             feedback=tuple(feedback), n_steps=len(tools))


def _policy(**overrides):
    cfg = LabConfig().with_params({f"reflect.triggers.{k}": v for k, v in overrides.items()})
    return TriggerPolicy(cfg.reflect.triggers)


def _run(policy, ep, when=T0):
    d = policy.decide(ep, when)
    policy.observe(ep, when, d.reflect)
    return d


def test_single_turn_and_external_failures_are_never_reflected():
    p = _policy()
    assert _run(p, _ep(tools=(), task_type=None)).reason == "single_turn"
    assert _run(p, _ep(outcome="failure", cause="external")).reason == "external_failure"
    outage = _ep(outcome="failure", errors=((2, "refund_order", "HTTP 503 service unavailable"),))
    assert _run(p, outage).reason == "external_failure"
    # negative control: an error that is the agent's doing is a strategy failure
    wrong = _ep(eid="w", outcome="failure", errors=((2, "refund_order", "order already shipped"),))
    assert _run(p, wrong).reflect and p.counts["strategy_failure"] == 1
    assert _run(_policy(skip_single_turn=False, nth_occurrence=1), _ep(tools=(), task_type=None)).reflect


def test_repeat_failure_signature_is_skipped_within_the_window():
    p = _policy(skip_repeat_failure_days=7)
    err = ((2, "refund_order", "order already shipped"),)
    assert _run(p, _ep("a", outcome="failure", errors=err), T0).reason == "strategy_failure"
    assert _run(p, _ep("b", outcome="failure", errors=err), T0 + timedelta(days=3)).reason == "repeat_failure"
    assert _run(p, _ep("c", outcome="failure", errors=err), T0 + timedelta(days=8)).reason == "strategy_failure"
    other = ((2, "get_order", "not found"),)  # another failing step is another signature
    assert _run(p, _ep("d", outcome="failure", errors=other), T0 + timedelta(days=9)).reflect
    off = _policy(skip_repeat_failure_days=0)
    _run(off, _ep("a", outcome="failure", errors=err))
    assert _run(off, _ep("b", outcome="failure", errors=err)).reflect


def test_nth_occurrence_of_an_unreflected_task_type():
    p = _policy(nth_occurrence=3, on_deviating_success=False)
    reasons = [_run(p, _ep(str(i))).reason for i in range(5)]
    assert reasons == ["routine_success", "routine_success", "nth_occurrence", "routine_success",
                       "routine_success"]
    assert [_run(_policy(nth_occurrence=0), _ep(str(i))).reflect for i in range(4)] == [False] * 4


def test_deviating_success_and_feedback():
    p = _policy(nth_occurrence=0)
    for i in range(2):
        _run(p, _ep(str(i), tools=("get_order", "refund_order")))
    assert _run(p, _ep("same", tools=("get_order", "refund_order"))).reason == "routine_success"
    dev = _ep("dev", tools=("get_customer", "get_order", "refund_order"), task_type="refund_order")
    assert _run(p, dev).reason == "routine_success"  # same state-changing path, different reads
    other = _ep("x", tools=("get_order", "create_return"), task_type="refund_order")
    assert _run(p, other).reason == "deviating_success"
    assert _run(p, _ep("fb", feedback=("down: wrong order",))).reason == "feedback"
    assert not _run(_policy(on_feedback=False, nth_occurrence=0), _ep("fb", feedback=("x",))).reflect


def test_switches_turn_rules_off():
    assert _run(_policy(on_strategy_failure=False), _ep(outcome="failure")).reason == "routine_failure"
    with pytest.raises(Exception, match="nth_occurrence"):
        _policy(nth_occurrence=-1)
