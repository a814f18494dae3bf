"""The LiteLLM contradiction judge through LiteLLM's real HTTP path against the scripted stub (tests/openai_stub.py):
answers, unreadable answers and provider faults (which keep the offline verdict), and the same retry handling as
the reflection LLM."""

from __future__ import annotations

import json

import numpy as np
import pytest
from openai_stub import Reply

from hindsight_lab import LabConfig
from hindsight_lab.cli import main
from hindsight_lab.conflicts.llm import LiteLLMJudge, parse_answer
from hindsight_lab.conflicts.scan import make_judge, scan
from hindsight_lab.errors import ReflectorError
from hindsight_lab.types import Kind, MemoryRecord

A = "Call lookup_order before issue_refund."
B = "Call issue_refund first, then lookup_order."
KEY_ENV = "HINDSIGHT_TEST_JUDGE_KEY"


@pytest.fixture
def judge(stub, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-judge-test")
    sleeps: list[float] = []
    j = LiteLLMJudge("openai/stub", api_base=stub.base_url, api_key_env=KEY_ENV, timeout_s=5.0, max_retries=2,
                     backoff_s=0.25, sleep=sleeps.append)
    j.sleeps = sleeps  # type: ignore[attr-defined]
    return j


def _answer(conflict: bool, kind: str | None = "order", reason: str = "opposite orders") -> Reply:
    return Reply(content=json.dumps({"conflict": conflict, "kind": kind, "reason": reason}))


@pytest.mark.slow
def test_the_models_verdict_is_used_and_the_request_carries_both_rules(judge, stub):
    stub.push(_answer(True))
    v = judge.judge(A, B, "refund")
    assert (v.conflict, v.kind, v.reason, v.source) == (True, "order", "opposite orders", "litellm")
    req = stub.requests[0]
    assert A in req.message("user") and B in req.message("user") and "refund" in req.message("user")
    assert req.body["response_format"] == {"type": "json_object"} and req.headers["authorization"].endswith("test")
    stub.push(_answer(False, None, "a refinement"))
    assert judge.judge(A, "Call lookup_order before issue_refund and log it.").conflict is False
    assert judge.usage_summary()["calls"] == 2 and judge.usage_summary()["pairs"] == 2
    assert "sk-judge-test" not in json.dumps(judge.describe())


@pytest.mark.parametrize("content", ["not json at all", '{"conflict": "maybe"}', "[1, 2]", ""])
def test_an_unreadable_answer_keeps_the_offline_verdict(judge, stub, content):
    stub.push(Reply(content=content))
    v = judge.judge(A, B)
    assert v.conflict is True and v.kind == "order"  # what the offline detector says
    assert v.source.startswith("offline (judge answer unreadable")


def test_a_server_error_is_retried_with_backoff(judge, stub):
    stub.push(Reply.error(500), Reply.error(503), _answer(False, None, "compatible"))
    v = judge.judge(A, B)
    assert v.source == "litellm" and v.conflict is False
    assert len(stub.requests) == 3 and judge.sleeps == [0.25, 0.5]
    assert judge.calls[-1]["attempts"] == 3 and judge.calls[-1]["status"] == "ok"


def test_a_client_error_is_not_retried_and_the_pass_goes_on(judge, stub):
    stub.push(Reply.error(401, "bad key"))
    v = judge.judge(A, B)
    assert len(stub.requests) == 1 and judge.sleeps == []
    assert v.conflict is True and v.source.startswith("offline (judge failed: AuthenticationError")
    stub.push(_answer(True))
    assert judge.judge(A, B).source == "litellm"  # the next pair is judged again


def test_retries_run_out_then_the_offline_verdict_stands(judge, stub):
    stub.push(*[Reply.error(500)] * 3)
    v = judge.judge(A, "Give delay times in local time.")
    assert len(stub.requests) == 3 and v.conflict is False and v.source.startswith("offline (judge failed")


def test_an_unset_key_variable_is_an_error(stub, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ReflectorError, match=f"conflicts.llm.api_key_env names the environment variable '{KEY_ENV}'"):
        LiteLLMJudge("openai/stub", api_base=stub.base_url, api_key_env=KEY_ENV).judge(A, B)
    assert stub.requests == []


def test_parse_answer():
    assert parse_answer('```json\n{"conflict": true, "kind": "tool", "reason": "x"}\n```').kind == "tool"
    assert parse_answer('{"conflict": true, "kind": "weird"}').kind is None
    assert parse_answer('{"conflict": false, "kind": "order"}').kind is None
    assert parse_answer('{"kind": "order"}') is None


def test_the_pass_uses_the_configured_judge(stub, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-judge-test")
    cfg = LabConfig().with_params({"conflicts.judge": "litellm", "conflicts.llm.model": "openai/stub",
                                   "conflicts.llm.api_base": stub.base_url, "conflicts.llm.max_retries": 0,
                                   "conflicts.llm.api_key_env": KEY_ENV})
    recs = [MemoryRecord("r1", Kind.RULE, A), MemoryRecord("r2", Kind.RULE, B)]
    stub.push(_answer(False, None, "the model disagrees"))
    plan = scan(recs, ["rule", "rule"], np.array([[1.0, 0.0], [0.9, 0.1]]), cfg)
    assert plan.judge["name"] == "litellm" and isinstance(make_judge(cfg), LiteLLMJudge)
    assert [(p.verdict.conflict, p.verdict.source) for p in plan.pairs] == [(False, "litellm")]
    assert plan.flags == [] and plan.supersessions == []


def test_cli_judges_pairs_with_the_llm(stub, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-judge-test")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"id": "p1", "task_type": "refund", "rule_a": A, "rule_b": B, "conflict": True,
                                 "kind": "order"}) + "\n", encoding="utf-8")
    stub.push(_answer(True))
    assert main(["conflicts", "--pairs", str(pairs), "--judge", "litellm", "--model", "openai/stub",
                 "--api-base", stub.base_url, "--set", f"conflicts.llm.api_key_env={KEY_ENV}",
                 "--predictions", str(tmp_path / "pred.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "precision 1.000, recall 1.000" in out and "'calls': 1" in out
    row = json.loads((tmp_path / "pred.jsonl").read_text())
    assert row["source"] == "litellm" and row["predicted"] is True
