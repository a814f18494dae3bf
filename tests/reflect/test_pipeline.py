"""MemorySystem.reflect: the trigger decision, the heuristic reflection, the candidate write and promotion."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hindsight_lab import Kind, LabConfig, MemorySystem
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.reflect.compress import compress
from hindsight_lab.reflect.heuristic import HeuristicReflector
from hindsight_lab.reflect.pipeline import compressed_from_record
from hindsight_lab.reflect.schema import Rejection
from hindsight_lab.store.memory import InMemoryStore
from hindsight_lab.trace import Episode
from support import T0


def _ep(eid, tools, outcome="success", error_at=None, instruction=None, hours=0, **kw):
    steps = []
    for i, t in enumerate(tools):
        steps.append({"type": "tool_call", "name": t, "arguments": {"order": f"A-{eid}"}})  # a task of its own
        steps.append({"type": "tool_result", "content": "ok" if i != error_at else "",
                      "error": "order already shipped" if i == error_at else None})
    return Episode.model_validate({"episode_id": eid, "instruction": instruction or f"Please cancel order {eid}",
                                   "steps": steps, "outcome": outcome, "started_at": T0 + timedelta(hours=hours),
                                   **kw})


def test_heuristic_rules_name_the_real_tools_and_carry_counter_examples(mem):
    ok = ["get_order", "cancel_order"]
    for i in range(2):
        mem.reflect(_ep(f"s{i}", ok, hours=i))
    third = mem.reflect(_ep("s2", ok, hours=2))
    assert third.decision.reason == "nth_occurrence" and third.reflection is None  # nothing contradicts it yet
    assert third.rejection.reason == "empty_counter_examples"
    fail = mem.reflect(_ep("f1", ["cancel_order"], outcome="failure", error_at=0, hours=3))
    assert fail.decision.reason == "strategy_failure"
    rule = fail.reflection.reusable_rule
    assert "cancel_order" in rule and "order already shipped" in rule and "get_order → cancel_order" in rule
    assert fail.reflection.task_type == "cancel_order" and fail.write.action == "created"
    assert any("without this error" in c for c in fail.reflection.counter_examples)
    assert fail.reflection.trigger == {"any": ["cancel"], "all": [], "task_types": []}
    # what the reflector saw of related episodes came from the store, not the raw traces
    assert set(fail.related) <= {"s0", "s1", "s2"} and fail.related


def test_rejected_reflection_never_becomes_a_candidate(mem):
    class Refuses:
        def reflect(self, ep, related):
            return Rejection("invalid_json", "nope", "", ep.episode_id)

        def reflect_batch(self, items):
            return [self.reflect(e, r) for e, r in items]

    m = MemorySystem(LabConfig(), store=InMemoryStore(), embedder=HashingEmbedder(dim=256), reflector=Refuses())
    out = m.reflect(_ep("f", ["cancel_order"], outcome="failure", error_at=0))
    assert out.decision.reflect and out.rejection.reason == "invalid_json" and out.write is None
    assert m.stats()["candidates"] == 0 and m.stats()["episodes"] == 1
    assert m.reflection_stats()["rejections"] == {"invalid_json": 1}


def _three_failures(mem):
    for i in range(2):
        mem.reflect(_ep(f"s{i}", ["get_order", "cancel_order"], hours=i))
    outs = [mem.reflect(_ep(f"f{i}", ["cancel_order"], outcome="failure", error_at=0, hours=10 + 24 * 8 * i))
            for i in range(3)]
    assert [o.decision.reason for o in outs] == ["strategy_failure"] * 3  # 8 days apart: not a repeat
    assert [o.write.action for o in outs] == ["created", "merged", "merged"]
    return outs


def test_three_different_failures_promote_and_stats_count():
    mem = MemorySystem(LabConfig().with_params({"promotion.verify": False}), store=InMemoryStore(),
                       embedder=HashingEmbedder(dim=256))
    outs = _three_failures(mem)
    assert outs[-1].promoted and mem.stats()["rules"] == 1
    rule = mem.records(Kind.RULE)[0]
    assert set(rule.source_episode_ids) == {"f0", "f1", "f2"} and rule.counter_examples
    stats = mem.reflection_stats()
    assert stats["episodes"] == 5 and stats["promotions"] == 1 and stats["decisions"]["strategy_failure"] == 3
    assert stats["trigger_rate"] == pytest.approx(3 / 5)


def test_a_checked_rule_waits_for_a_run_that_followed_it_and_succeeded():
    # the uniform prior alone: one follower's success is then enough (the default prior asks for more runs,
    # tests/test_verify.py)
    mem = MemorySystem(LabConfig().with_params({"promotion.prior_effect": 1.0}), store=InMemoryStore(),
                       embedder=HashingEmbedder(dim=256))
    outs = _three_failures(mem)  # f1 and f2 skipped get_order and failed: evidence for the rule, not yet proof
    (cand,) = mem.records(Kind.CANDIDATE)
    assert not outs[-1].promoted and mem.stats()["rules"] == 0
    assert cand.attrs["check"] == {"kind": "order", "tools": ["get_order", "cancel_order"]}
    mem.reflect(_ep("s9", ["get_order", "cancel_order"], hours=10 + 24 * 30))  # another task follows it: success
    (rule,) = mem.records(Kind.RULE)
    assert rule.attrs["promoted_at"] and mem.reflection_stats()["promotions"] == 1


def test_repeat_failure_is_skipped_and_trigger_state_survives_reopen(tmp_path):
    cfg = LabConfig().with_params({"store.path": str(tmp_path / "s")})
    emb = HashingEmbedder(dim=64)
    with MemorySystem(cfg, embedder=emb) as mem:
        mem.reflect(_ep("s0", ["get_order", "cancel_order"]))
        assert mem.reflect(_ep("f0", ["cancel_order"], outcome="failure", error_at=0)).reflection is not None
    with MemorySystem(cfg, embedder=emb) as again:  # the state is rebuilt from the stored episode records
        out = again.reflect(_ep("f1", ["cancel_order"], outcome="failure", error_at=0, hours=5))
        assert out.decision.reason == "repeat_failure"


def test_episode_record_keeps_the_compressed_path(mem):
    mem.reflect(_ep("s", ["get_order", "cancel_order"]))
    ep = _ep("f", ["get_order", "cancel_order"], outcome="failure", error_at=1, hours=1)
    rec = mem.reflect(ep).record
    back = compressed_from_record(rec)
    fresh = compress(ep, mem.config_.reflect.compress, mem.config_.episode.read_only_prefixes)
    assert (back.tools, back.errors, back.task_type, back.signature) == \
        (fresh.tools, fresh.errors, fresh.task_type, fresh.signature)
    assert rec.attrs["reflected"] == "strategy_failure"


def test_ground_truth_task_type_never_reaches_memory(mem):
    a = _ep("a", ["get_order", "cancel_order"], task_type="LABEL-ONE")
    b = _ep("a", ["get_order", "cancel_order"], task_type="LABEL-TWO")
    m1 = MemorySystem(LabConfig(), store=InMemoryStore(), embedder=HashingEmbedder(dim=64))
    m2 = MemorySystem(LabConfig(), store=InMemoryStore(), embedder=HashingEmbedder(dim=64))
    r1, r2 = m1.reflect(a).record, m2.reflect(b).record
    assert r1.task_type == r2.task_type == "cancel_order"
    assert (r1.content, r1.attrs) == (r2.content, r2.attrs)


def test_reflector_is_chosen_by_config():
    m = MemorySystem(LabConfig(), store=InMemoryStore(), embedder=HashingEmbedder(dim=64)).open()
    assert isinstance(m.reflector, HeuristicReflector)
    llm = MemorySystem(LabConfig().with_params({"reflect.reflector": "litellm"}), store=InMemoryStore(),
                       embedder=HashingEmbedder(dim=64)).open()
    assert type(llm.reflector).__name__ == "LiteLLMReflector"


def test_rejected_reflection_does_not_block_the_next_failure(mem):
    first = mem.reflect(_ep("f0", ["cancel_order"], outcome="failure", error_at=0))
    assert first.rejection is not None and first.rejection.reason == "empty_counter_examples"  # nothing related
    assert mem.get(first.record.id).attrs.get("reflected") is None
    again = mem.reflect(_ep("f1", ["cancel_order"], outcome="failure", error_at=0, hours=1))
    assert again.decision.reason == "strategy_failure"  # not a repeat: nothing was learnt from f0


def test_compressed_text_keeps_errors_of_long_episodes():
    from hindsight_lab.config import CompressConfig

    tools = [f"get_thing_{i}" for i in range(200)] + ["cancel_order"]
    ep = _ep("long", tools, outcome="failure", error_at=len(tools) - 1)
    text = compress(ep, CompressConfig(max_tool_calls=200), ("get",)).to_text(600)
    assert len(text) <= 600 and "error at step" in text and "order already shipped" in text
    assert "get_thing_0(" in text and "cancel_order(" in text and "…" in text
