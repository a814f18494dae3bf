"""The LiteLLM reflector through LiteLLM's real HTTP path, against the scripted stub server (tests/openai_stub.py).

Every call goes model="openai/stub" → LiteLLM → the openai SDK → httpx → 127.0.0.1. Backoff waits are recorded by an
injected sleep, so the file runs in seconds; only the timeout tests wait for real (budgets of 0.5–1 s). The stub
answers like a real server where the reflector must adapt: a 400 for a prompt over its context, a 400 for a
``response_format`` it does not take, slow answers, answers without the fields the system knows.
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from typing import Any

import pytest
from openai_stub import OpenAIStub, Reply, response_form

from hindsight_lab.config import LLMReflectorConfig, ReflectConfig, ReflectionRulesConfig
from hindsight_lab.errors import ConfigError, ReflectorError
from hindsight_lab.reflect import prompts, registry
from hindsight_lab.reflect.budget import count_tokens
from hindsight_lab.reflect.compress import CompressedEpisode
from hindsight_lab.reflect.llm import LiteLLMReflector
from hindsight_lab.reflect.schema import Reflection, Rejection, validate_reflection

KEY_ENV = "HINDSIGHT_TEST_REFLECTOR_KEY"
KEY = "sk-test-5f1c0ffee"


def _ep(eid: str, instruction: str = "Refund order 42, the kettle arrived broken", outcome: str = "failure",
        tools: tuple[str, ...] = ("issue_refund",), error: str | None = "refund rejected: order is shipped"
        ) -> CompressedEpisode:
    calls = tuple(f"{t}(order_id=42)" for t in tools)
    errors = ((2, tools[0], error),) if error else ()
    return CompressedEpisode(episode_id=eid, task_id=f"task-{eid}", domain="retail", instruction=instruction,
                             task_type="+".join(sorted(tools)), outcome=outcome,
                             failure_cause="strategy" if outcome == "failure" else None, tools=tools, calls=calls,
                             decisions=(f"before {tools[0]}: the user wants money back",), errors=errors,
                             final_answer=None, feedback=(), n_steps=2 * len(tools))


def _good(eid: str | None = None, **over: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "task_type": "issue_refund", "outcome": "failure",
        "key_decision": "Called issue_refund at step 1 without reading the order status.",
        "why_it_worked_or_failed": "Shipped orders need a return before a refund.",
        "reusable_rule": f"Call get_order before issue_refund and open a return for shipped orders ({eid or 'x'})",
        "confidence": 0.7,
        "counter_examples": ["Digital goods have no shipping status and can be refunded directly."],
        "trigger": {"any": ["refund", "money back"], "all": [], "task_types": ["issue_refund"]},
    }
    if eid is not None:
        out["episode_id"] = eid
    out.update(over)
    return out


def _ok(eid: str | None = None, **over: Any) -> Reply:
    return Reply(content=json.dumps(_good(eid, **over)))


@pytest.fixture
def make(stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A factory of reflectors pointed at the stub; ``sleeps`` records every backoff wait."""
    monkeypatch.setenv(KEY_ENV, KEY)

    def factory(**kwargs: Any) -> LiteLLMReflector:
        sleeps: list[float] = []
        args: dict[str, Any] = dict(model="openai/stub", api_base=stub.base_url, api_key_env=KEY_ENV,
                                    timeout_s=5.0, max_retries=2, backoff_s=0.25, batch_size=4,
                                    context_tokens=16384, sleep=sleeps.append)
        args.update(kwargs)
        r = LiteLLMReflector(**args)
        r.sleeps = sleeps  # type: ignore[attr-defined]
        return r
    return factory


def _still_works(r: LiteLLMReflector, stub: OpenAIStub) -> None:
    """After a fault, the same reflector keeps working: the next call is accepted."""
    stub.push(_ok())
    before = len(stub.requests)
    out = r.reflect(_ep("after"), [])
    assert isinstance(out, Reflection), out
    assert out.episode_id == "after"
    assert len(stub.requests) == before + 1


# -- (a) the happy path and what was sent ---------------------------------------------------------------------------
@pytest.mark.slow
def test_valid_reflection_is_accepted_and_the_request_carries_prompt_schema_and_key(make, stub):
    r = make(max_tokens=321, temperature=0.3)
    episode = _ep("e-main", instruction="I want my money back for order 77, the toaster arrived broken")
    related = [_ep("e-rel-1", instruction="Refund the e-book from order 12", outcome="success", error=None),
               _ep("e-rel-2", instruction="Cancel pending order 90 and refund", tools=("cancel_order",))]
    stub.push(Reply(content=json.dumps(_good()), usage={"prompt_tokens": 123, "completion_tokens": 45,
                                                        "total_tokens": 168}))
    out = r.reflect(episode, related)

    assert isinstance(out, Reflection), out
    assert out.episode_id == "e-main"
    assert out.outcome == "failure" and out.confidence == 0.7
    assert out.reusable_rule.startswith("Call get_order before issue_refund")
    assert out.counter_examples == ["Digital goods have no shipping status and can be refunded directly."]
    assert out.trigger == {"any": ["refund", "money back"], "all": [], "task_types": ["issue_refund"]}

    assert len(stub.requests) == 1
    req = stub.requests[0]
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.body["model"] == "stub"
    assert req.body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "reflection", "schema": prompts.REFLECTION_JSON_SCHEMA}}
    assert req.body["max_tokens"] == 321 and req.body["temperature"] == 0.3
    system, user = req.message("system"), req.message("user")
    assert prompts.GOOD_EXAMPLE in system and prompts.BAD_EXAMPLE in system  # the worked example
    assert '"counter_examples"' in system and "be careful" in system
    assert episode.to_text(2000) in user
    assert related[0].to_text(500, brief=True) in user and related[1].to_text(500, brief=True) in user
    assert "final answer" not in user.split("Related earlier episodes")[1]

    assert r.calls == [{"model": "openai/stub", "prompt_tokens": 123, "completion_tokens": 45, "cost_usd": None,
                        "latency_s": r.calls[0]["latency_s"], "attempts": 1, "status": "ok", "batch_size": 1,
                        "output": "json_schema", "episode_ids": [episode.episode_id],
                        "prompt_tokens_estimated": count_tokens("openai/stub", req.messages)}]
    assert 0 < r.calls[0]["latency_s"] < 5
    summary = r.usage_summary()
    assert summary["calls"] == 1 and summary["prompt_tokens"] == 123 and summary["completion_tokens"] == 45
    assert summary["cost_usd"] is None and summary["calls_without_cost"] == 1  # "stub" has no known price
    assert KEY not in json.dumps(r.describe())


@pytest.mark.slow
def test_json_mode_off_sends_no_response_format(make, stub):
    r = make(json_mode=False)
    stub.push(_ok())
    assert isinstance(r.reflect(_ep("e1"), []), Reflection)
    assert "response_format" not in stub.requests[0].body


# -- (b)-(d), (i): parsing and validation -----------------------------------------------------------------------------
@pytest.mark.parametrize("content, reason", [
    ("Sure! Here is my reflection: the agent should have checked the order.", "invalid_json"),
    ('{"task_type": "issue_refund", "outcome": ', "invalid_json"),
    (json.dumps({k: v for k, v in _good().items() if k != "counter_examples"}), "missing_field"),
    (json.dumps(_good(counter_examples=[])), "empty_counter_examples"),
    (json.dumps(_good(confidence=1.4)), "confidence_out_of_range"),
    (json.dumps(_good(confidence="high")), "wrong_type"),
    (json.dumps(_good(reusable_rule="Be careful")), "rule_too_generic"),
])
def test_bad_answers_are_rejected_with_their_reason(make, stub, content, reason):
    r = make()
    stub.push(Reply(content=content))
    out = r.reflect(_ep("e1"), [])
    assert isinstance(out, Rejection)
    assert (out.reason, out.episode_id) == (reason, "e1")
    assert r.calls[-1]["status"] == "ok"  # the HTTP call itself worked
    _still_works(r, stub)


def test_fenced_json_with_prose_around_it_is_parsed(make, stub):
    r = make()
    stub.push(Reply(content="Here is the reflection you asked for:\n```json\n" + json.dumps(_good(), indent=2)
                            + "\n```\nLet me know if you need anything else."))
    out = r.reflect(_ep("e1"), [])
    assert isinstance(out, Reflection), out
    assert out.counter_examples


def test_an_answer_cut_at_max_tokens_says_so(make, stub):
    r = make()
    stub.push(Reply(content='{"task_type": "issue_refund", "outcome": "fail', finish_reason="length"))
    out = r.reflect(_ep("e1"), [])
    assert isinstance(out, Rejection) and out.reason == "invalid_json"
    assert "max_tokens" in out.detail


# -- (e)-(g): faults, retries, backoff ---------------------------------------------------------------------------------
def test_http_500_then_success_is_retried_with_backoff(make, stub):
    r = make()
    stub.push(Reply.error(500), _ok())
    out = r.reflect(_ep("e1"), [])
    assert isinstance(out, Reflection), out
    assert len(stub.requests) == 2
    assert r.calls[-1]["attempts"] == 2 and r.calls[-1]["status"] == "ok"
    assert r.sleeps == [0.25]


def test_backoff_doubles_and_5xx_forever_ends_in_reflector_error(make, stub):
    r = make(max_retries=3, backoff_s=0.5)
    stub.push(Reply.error(500), Reply.error(503), Reply.error(502), Reply.error(500))
    out = r.reflect(_ep("e1"), [])
    assert isinstance(out, Rejection) and out.reason == "reflector_error"
    assert "after 4 attempts" in out.detail
    assert r.sleeps == [0.5, 1.0, 2.0]
    assert len(stub.requests) == 4
    assert r.calls[-1]["attempts"] == 4 and r.calls[-1]["status"] == "InternalServerError"
    _still_works(r, stub)


def test_429_with_retry_after_zero_then_success(make, stub):
    r = make()
    stub.push(Reply.error(429, "rate limited", headers={"Retry-After": "0"}), _ok())
    out = r.reflect(_ep("e1"), [])
    assert isinstance(out, Reflection), out
    assert len(stub.requests) == 2 and r.calls[-1]["attempts"] == 2
    assert r.sleeps == []  # Retry-After: 0 is honoured instead of the 0.25 s backoff


def test_retry_after_is_honoured_and_capped(make, stub):
    r = make(max_retry_after_s=5.0, timeout_s=30.0)
    stub.push(Reply.error(429, headers={"Retry-After": "3"}), Reply.error(429, headers={"Retry-After": "600"}),
              _ok())
    assert isinstance(r.reflect(_ep("e1"), []), Reflection)
    assert r.sleeps == [3.0, 5.0]


def test_429_forever_is_a_reflector_error_after_max_retries_plus_one_attempts(make, stub):
    r = make(max_retries=2)
    stub.push(*[Reply.error(429, "slow down", headers={"Retry-After": "0"}) for _ in range(3)])
    out = r.reflect(_ep("e1"), [])
    assert isinstance(out, Rejection) and out.reason == "reflector_error"
    assert "RateLimitError" in out.detail and "slow down" in out.detail
    assert len(stub.requests) == 3
    assert r.calls[-1]["attempts"] == 3 and r.calls[-1]["status"] == "RateLimitError"
    _still_works(r, stub)


def test_a_timeout_is_not_retried_and_ends_the_reflection_within_its_budget(make, stub):
    r = make(timeout_s=0.5, max_retries=3)
    stub.push(Reply(delay_s=10, content="late"), _ok())
    t0 = time.perf_counter()
    out = r.reflect(_ep("e1"), [])
    elapsed = time.perf_counter() - t0
    assert isinstance(out, Rejection) and out.reason == "timed_out"
    assert "Timeout" in out.detail and "0.5 s budget" in out.detail
    assert len(stub.requests) == 1 and r.sleeps == []  # one attempt: another would only double the wait
    assert r.calls[-1]["status"] == "Timeout" and r.calls[-1]["attempts"] == 1
    assert elapsed < 2.0  # the 0.5 s budget, not the stub's 10 s delay
    _still_works(r, stub)


def test_the_budget_covers_retries_a_slow_retry_gets_only_what_is_left(make, stub):
    # a 500 after 0.6 s, then an answer that would take 10 s: the second attempt has about 0.4 s of the 1 s budget
    r = make(timeout_s=1.0, max_retries=3, backoff_s=0.0)
    stub.push(Reply.error(500, delay_s=0.6), Reply(delay_s=10, content="late"))
    t0 = time.perf_counter()
    out = r.reflect(_ep("e1"), [])
    elapsed = time.perf_counter() - t0
    assert isinstance(out, Rejection) and out.reason == "timed_out"
    assert len(stub.requests) == 2 and r.calls[-1]["attempts"] == 2
    assert elapsed < 2.5  # the budget (1 s) and LiteLLM's overhead, never 0.6 + 10 s
    _still_works(r, stub)


def test_a_batch_call_has_the_budget_of_its_episodes(make, stub):
    r = make(timeout_s=0.4, batch_size=3)
    stub.push(Reply(delay_s=0.8, content=json.dumps({"reflections": [_good(f"b{i}") for i in range(3)]})))
    out = r.reflect_batch([(_ep(f"b{i}"), []) for i in range(3)])
    assert all(isinstance(o, Reflection) for o in out), out  # 0.8 s is within 3 × 0.4 s


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_other_4xx_are_not_retried(make, stub, status):
    r = make()
    stub.push(Reply.error(status, "nope"), _ok())
    out = r.reflect(_ep("e1"), [])
    assert isinstance(out, Rejection) and out.reason == "reflector_error"
    assert "not retried" in out.detail
    assert len(stub.requests) == 1 and r.sleeps == []
    _still_works(r, stub)


@pytest.mark.parametrize("accepts, refusal, sent", [
    (None, 400, ["json_schema", "json_schema"]),                                   # llama.cpp, vLLM, OpenAI
    ({"json_object"}, 400, ["json_schema", "json_object+schema", "json_object", "json_object"]),  # json_object only
    (set(), 400, ["json_schema", "json_object+schema", "json_object", None, None]),  # no structured output at all
    ({"json_object", "json_object+schema"}, 422, ["json_schema", "json_object+schema", "json_object+schema"]),
    # llama-cpp-python's server: a 500 for json_schema (its request validation error), json_object with a schema
    ({"json_object", "json_object+schema"}, 500, ["json_schema", "json_object+schema", "json_object+schema"]),
])
def test_structured_output_steps_down_to_what_the_server_takes_and_remembers_it(monkeypatch, accepts, refusal, sent):
    monkeypatch.setenv(KEY_ENV, KEY)
    with OpenAIStub([_ok(), _ok()], response_formats=accepts, refusal_status=refusal) as stub:
        r = LiteLLMReflector(model="openai/stub", api_base=stub.base_url, api_key_env=KEY_ENV, max_retries=2,
                             sleep=lambda s: None)
        assert isinstance(r.reflect(_ep("e1"), []), Reflection)
        assert isinstance(r.reflect(_ep("e2"), []), Reflection)
        forms = [response_form(req.body) for req in stub.requests]
    assert forms == sent  # a refusal is never retried as it was, a 500 naming response_format included
    assert r.calls[0]["attempts"] == len(sent) - 1 and r.calls[1]["attempts"] == 1
    assert r.calls[1]["output"] == {"json_object+schema": "json_object_schema", None: "text"}.get(sent[-1], sent[-1])
    if "json_object+schema" in sent:
        carried = next(req.body["response_format"] for req in stub.requests if response_form(req.body) == sent[1])
        assert carried == {"type": "json_object", "schema": prompts.REFLECTION_JSON_SCHEMA}


def test_a_rule_copied_from_the_prompts_worked_example_is_rejected(make, stub):
    # gemma-3-270m behind llama-cpp-python handed the example back for every episode, schema-valid each time
    r = make()
    copied = json.loads(prompts.GOOD_EXAMPLE)
    stub.push(Reply(content=json.dumps(copied)),
              Reply(content=json.dumps({**copied, "reusable_rule": copied["reusable_rule"].upper() + "  "})))
    for eid in ("e1", "e2"):
        out = r.reflect(_ep(eid), [])
        assert isinstance(out, Rejection) and out.reason == "rule_too_generic", out
        assert "worked example" in out.detail and out.episode_id == eid
    _still_works(r, stub)


def test_a_plain_500_is_still_retried_and_not_taken_for_a_refused_format(make, stub):
    r = make()
    stub.push(Reply.error(500, "CUDA error: out of memory"), _ok())
    assert isinstance(r.reflect(_ep("e1"), []), Reflection)
    assert [response_form(req.body) for req in stub.requests] == ["json_schema", "json_schema"]
    assert r.sleeps == [0.25] and r.calls[-1]["output"] == "json_schema"


def test_output_can_be_fixed(make, stub):
    r = make(output="json_object")
    stub.push(_ok())
    assert isinstance(r.reflect(_ep("e1"), []), Reflection)
    assert stub.requests[0].body["response_format"] == {"type": "json_object"}


# -- the fields the system knows, and the model's context ---------------------------------------------------------
def test_the_system_fills_task_type_outcome_and_episode_id_the_model_leaves_out_or_gets_wrong(make, stub):
    r = make()
    bare = {k: v for k, v in _good().items() if k not in ("task_type", "outcome")}
    stub.push(Reply(content=json.dumps(bare)), Reply(content=json.dumps(_good(task_type="refunds", outcome="success",
                                                                             episode_id="other"))))
    for eid in ("e1", "e2"):
        out = r.reflect(_ep(eid, tools=("get_order", "issue_refund")), [])
        assert isinstance(out, Reflection), out
        assert (out.task_type, out.outcome, out.episode_id) == ("get_order+issue_refund", "failure", eid)
    system = stub.requests[0].message("system")
    assert '"task_type"' not in system and '"outcome"' not in system  # never asked for
    assert set(prompts.REFLECTION_JSON_SCHEMA["required"]) == set(prompts.JUDGEMENT_FIELDS)


def test_an_episode_with_no_derived_task_type_gets_none(make, stub):
    r = make()
    stub.push(Reply(content=json.dumps({k: v for k, v in _good().items() if k != "task_type"})))
    ep = dataclasses.replace(_ep("e1"), task_type=None)
    out = r.reflect(ep, [])
    assert isinstance(out, Reflection) and out.task_type == "none"


def _long_ep(eid: str, n_calls: int = 40) -> CompressedEpisode:
    ep = _ep(eid, instruction="Change my flight " + "and also check the baggage allowance " * 12)
    calls = tuple(f"update_reservation_flights(reservation_id=ZFA04Y, flights=[{i}], cabin=economy, "
                  f"payment_id=credit_card_{i:07d})" for i in range(n_calls))
    return dataclasses.replace(ep, calls=calls, tools=("update_reservation_flights",) * n_calls)


def test_prompts_are_shrunk_to_the_models_context_and_every_request_fits(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    with OpenAIStub(default=_ok(), context_tokens=2048) as stub:
        r = LiteLLMReflector(model="openai/stub", api_base=stub.base_url, api_key_env=KEY_ENV, max_tokens=600,
                             context_tokens=2048, max_chars=4000, batch_size=4, sleep=lambda s: None)
        items = [(_long_ep(f"e{i}"), [_long_ep(f"r{i}{j}") for j in range(5)]) for i in range(4)]
        out = r.reflect_batch(items)
        sizes = [stub.prompt_tokens(req.body) + req.body["max_tokens"] for req in stub.requests]
    assert all(isinstance(o, Reflection) for o in out), out
    assert max(sizes) <= 2048, sizes  # none refused by the server for its context
    assert [o.episode_id for o in out] == ["e0", "e1", "e2", "e3"]
    assert len(stub.requests) == 4  # four long episodes do not fit one 2k call: each went alone
    assert all("episode r" not in req.message("user") or "more omitted" in req.message("user")
               or req.message("user").count("episode r") < 5 for req in stub.requests)


def test_an_episode_that_cannot_fit_is_rejected_prompt_too_long_without_a_call(make, stub):
    r = make(max_tokens=700, context_tokens=1024)  # the system prompt alone leaves no room
    out = r.reflect(_long_ep("e1"), [_long_ep("r1")])
    assert isinstance(out, Rejection) and out.reason == "prompt_too_long"
    assert "context of 1024 tokens" in out.detail and "reflect.llm.context_tokens" in out.detail
    assert stub.requests == []


def test_a_servers_context_window_error_is_prompt_too_long_and_not_retried(monkeypatch):
    # the reflector believes the context is 8k; the server runs with 2k and says so
    monkeypatch.setenv(KEY_ENV, KEY)
    with OpenAIStub(default=_ok(), context_tokens=2048) as stub:
        r = LiteLLMReflector(model="openai/stub", api_base=stub.base_url, api_key_env=KEY_ENV, max_tokens=800,
                             context_tokens=8192, max_chars=4000, max_retries=3, sleep=lambda s: None)
        out = r.reflect(_long_ep("e1"), [_long_ep(f"r{j}") for j in range(5)])
        assert isinstance(out, Rejection) and out.reason == "prompt_too_long", out
        assert "maximum context length is 2048" in out.detail
        assert len(stub.requests) == 1


def test_a_tau_bench_episode_with_its_related_episodes_is_well_under_2000_prompt_tokens():
    from support import REPO

    from hindsight_lab.config import LabConfig
    from hindsight_lab.datasets import load
    from hindsight_lab.reflect.budget import count_tokens
    from hindsight_lab.reflect.compress import compress

    cfg = LabConfig()
    episodes, _ = load(REPO / "datasets" / "samples" / "tau-bench" / "gpt-4o-airline.sample.json")
    assert len(episodes) >= 6
    compressed = [compress(e, cfg.reflect.compress, cfg.episode.read_only_prefixes) for e in episodes]
    sizes = [count_tokens("openai/x", prompts.build_messages(c, compressed[max(0, i - cfg.reflect.related_k):i],
                                                             cfg.reflect.compress.max_chars))
             for i, c in enumerate(compressed)]
    assert max(sizes) < 2000, sizes


def test_connection_refused_is_retried_then_rejected(make, stub):
    with OpenAIStub() as gone:
        dead_url = gone.base_url  # a port that is closed once the block ends
    r = make(api_base=dead_url, max_retries=1)
    out = r.reflect(_ep("e1"), [])
    assert isinstance(out, Rejection) and out.reason == "reflector_error"
    assert r.calls[-1]["attempts"] == 2 and r.sleeps == [0.25]


def test_missing_credentials_are_not_retried(make, stub, monkeypatch):
    # LiteLLM reports a missing key as InternalServerError (500) although no HTTP request was made; retrying
    # it would only waste the backoff.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    r = make(api_key_env=None)
    out = r.reflect(_ep("e1"), [])
    assert isinstance(out, Rejection) and out.reason == "reflector_error"
    assert "not retried" in out.detail
    assert stub.requests == [] and r.calls[-1]["attempts"] == 1


def test_an_api_key_env_that_is_not_set_raises_a_clear_error(make, stub, monkeypatch):
    monkeypatch.delenv("HINDSIGHT_TEST_UNSET_KEY", raising=False)
    r = make(api_key_env="HINDSIGHT_TEST_UNSET_KEY")
    with pytest.raises(ReflectorError, match="HINDSIGHT_TEST_UNSET_KEY.*not set"):
        r.reflect(_ep("e1"), [])
    assert stub.requests == []


def test_the_api_key_never_appears_in_a_rejection(make, stub):
    r = make()
    stub.push(Reply.error(401, f"Incorrect API key provided: {KEY}"))
    out = r.reflect(_ep("e1"), [])
    assert isinstance(out, Rejection)
    assert KEY not in out.detail and "***" in out.detail


# -- (h): batches ------------------------------------------------------------------------------------------------------
def test_a_batch_of_four_is_one_call_mapped_back_by_episode_id(make, stub):
    r = make(batch_size=4, max_tokens=200)
    items = [(_ep(f"b{i}", instruction=f"Refund order {i}"), [_ep(f"r{i}", outcome="success", error=None)])
             for i in range(4)]
    answers = [_good(f"b{i}", confidence=0.5 + i / 10) for i in range(4)]
    random.Random(3).shuffle(answers)
    assert [a["episode_id"] for a in answers] != ["b0", "b1", "b2", "b3"]
    stub.push(Reply(content=json.dumps({"reflections": answers})))

    out = r.reflect_batch(items)
    assert len(stub.requests) == 1
    assert all(isinstance(o, Reflection) for o in out), out
    assert [o.episode_id for o in out] == ["b0", "b1", "b2", "b3"]
    assert [o.confidence for o in out] == [0.5, 0.6, 0.7, 0.8]
    assert [o.reusable_rule.endswith(f"(b{i})") for i, o in enumerate(out)] == [True] * 4

    req = stub.requests[0]
    assert req.body["max_tokens"] == 800  # per reflection × batch size
    assert '"reflections"' in req.message("system") and prompts.GOOD_EXAMPLE in req.message("system")
    user = req.message("user")
    for i, (ep, rel) in enumerate(items, 1):
        assert f"Episode {i} of 4 (episode_id: {ep.episode_id})" in user
        assert ep.to_text(2000) in user and rel[0].to_text(500, brief=True) in user
    assert r.calls[-1]["batch_size"] == 4 and r.calls[-1]["attempts"] == 1
    assert r.calls[-1]["episode_ids"] == ["b0", "b1", "b2", "b3"]
    # the schema asks for exactly one reflection per episode, each naming one of them: a grammar-constrained
    # server (llama.cpp) cannot leave an episode out, as gemma-3-270m did with an open-ended list
    listed = req.body["response_format"]["json_schema"]["schema"]["properties"]["reflections"]
    assert listed["minItems"] == listed["maxItems"] == 4
    assert listed["items"]["properties"]["episode_id"]["enum"] == ["b0", "b1", "b2", "b3"]
    assert listed["items"]["required"] == ["episode_id", *prompts.JUDGEMENT_FIELDS]


def test_a_batch_with_one_invalid_item_gives_three_accepted_and_one_rejected(make, stub):
    r = make()
    items = [(_ep(f"b{i}"), []) for i in range(4)]
    answers = [_good("b0"), _good("b1", confidence=1.4), _good("b2"), _good("b3")]
    stub.push(Reply(content=json.dumps({"reflections": answers[::-1]})))
    out = r.reflect_batch(items)
    assert [type(o).__name__ for o in out] == ["Reflection", "Rejection", "Reflection", "Reflection"]
    assert out[1].reason == "confidence_out_of_range" and out[1].episode_id == "b1"
    assert len(stub.requests) == 1
    _still_works(r, stub)


def test_batch_items_without_ids_map_by_position_and_missing_ones_are_rejected(make, stub):
    r = make()
    items = [(_ep(f"b{i}"), []) for i in range(4)]
    answers = [_good(), _good(), _good("b3")]  # no ids for the first two; b2 left out
    stub.push(Reply(content=json.dumps({"reflections": answers})))
    out = r.reflect_batch(items)
    assert [o.episode_id for o in out] == ["b0", "b1", "b2", "b3"]
    assert [type(o).__name__ for o in out] == ["Reflection", "Reflection", "Rejection", "Reflection"]
    assert out[2].reason == "missing_field" and "b2" in out[2].detail


def test_an_unparsable_batch_answer_falls_back_to_one_call_per_episode(make, stub):
    r = make()
    items = [(_ep(f"b{i}"), []) for i in range(3)]
    stub.push(Reply(content="I cannot answer in JSON, sorry."), _ok(), Reply(content="still no json"), _ok())
    out = r.reflect_batch(items)
    assert len(stub.requests) == 4  # the batch call, then one per episode
    assert [type(o).__name__ for o in out] == ["Reflection", "Rejection", "Reflection"]
    assert out[1].reason == "invalid_json" and out[1].episode_id == "b1"
    assert [c["batch_size"] for c in r.calls] == [3, 1, 1, 1]
    assert "reflections" not in stub.requests[1].message("system")  # the single-episode prompt


def test_a_failing_batch_call_rejects_every_item_without_fallback(make, stub):
    r = make(max_retries=1)
    stub.push(Reply.error(500), Reply.error(500))
    out = r.reflect_batch([(_ep(f"b{i}"), []) for i in range(3)])
    assert [o.reason for o in out] == ["reflector_error"] * 3  # type: ignore[union-attr]
    assert [o.episode_id for o in out] == ["b0", "b1", "b2"]
    assert len(stub.requests) == 2
    _still_works(r, stub)


def test_batches_are_chunked_by_batch_size(make, stub):
    r = make(batch_size=2)
    items = [(_ep(f"b{i}"), []) for i in range(5)]
    stub.push(Reply(content=json.dumps({"reflections": [_good("b0"), _good("b1")]})),
              Reply(content=json.dumps({"reflections": [_good("b2"), _good("b3")]})), _ok())
    out = r.reflect_batch(items)
    assert [o.episode_id for o in out] == [f"b{i}" for i in range(5)]
    assert all(isinstance(o, Reflection) for o in out)
    assert len(stub.requests) == 3 and [c["batch_size"] for c in r.calls] == [2, 2, 1]
    assert r.usage_summary()["episodes"] == 5


# -- prompts, registry, config -----------------------------------------------------------------------------------------
def test_the_prompts_worked_examples_pass_and_fail_validation_as_they_claim():
    rules, known = ReflectionRulesConfig(), {"task_type": "issue_refund", "outcome": "failure"}
    assert isinstance(validate_reflection(prompts.GOOD_EXAMPLE, rules, known=known), Reflection)
    assert isinstance(validate_reflection(prompts.BAD_EXAMPLE, rules, known=known), Rejection)
    # negative controls: the good example without its counter-examples is rejected too, and without the known
    # fields it lacks what the system fills in
    assert validate_reflection({**json.loads(prompts.GOOD_EXAMPLE), "counter_examples": []}, rules,
                               known=known).reason == "empty_counter_examples"
    assert validate_reflection(prompts.GOOD_EXAMPLE, rules).reason == "missing_field"


def test_related_episodes_are_bounded_in_the_prompt():
    related = [_ep(f"r{i}", instruction="x" * 400) for i in range(30)]
    text = prompts.render_user(_ep("e1"), related, max_chars=1000)
    assert len(text) < 3500
    assert "more omitted" in text and "episode r0" in text and "episode r29" not in text


def test_registry_builds_the_litellm_reflector_from_config_and_from_its_description():
    assert "litellm" in registry.available()
    cfg = ReflectConfig(reflector="litellm", llm=LLMReflectorConfig(
        model="openai/x", api_base="http://user:secret@127.0.0.1:9/v1?token=abc", api_key_env="MY_KEY",
        max_retries=5, batch_size=3, json_mode=False), rules=ReflectionRulesConfig(min_rule_words=3))
    r = registry.make_reflector(cfg)
    assert isinstance(r, LiteLLMReflector)
    assert (r.model, r.max_retries, r.batch_size, r.json_mode, r.max_chars) == ("openai/x", 5, 3, False, 2000)
    desc = r.describe()
    assert desc["name"] == "litellm"
    assert desc["args"]["api_base"] == "http://127.0.0.1:9/v1"  # no credentials in a run log
    assert "secret" not in json.dumps(desc) and "abc" not in json.dumps(desc)
    again = registry.build(json.loads(json.dumps(desc)))
    assert isinstance(again, LiteLLMReflector) and again.describe() == desc
    with pytest.raises(ConfigError, match="unknown reflector 'nope'"):
        registry.build({"name": "nope", "args": {}})


def test_bad_parameters_are_reported_at_first_use(stub):
    r = LiteLLMReflector(model="openai/stub", api_base=stub.base_url, batch_size=0)
    with pytest.raises(ConfigError, match="batch_size must be an integer >= 1"):
        r.reflect_batch([(_ep("e1"), [])])
