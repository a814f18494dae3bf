"""Shared by the server tests: the scenario every transport must pass (all four tools, two namespaces, bad inputs),
run by the official MCP client against a real ``hindsight-lab serve``."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

import pytest

from hindsight_lab.retrieve.rerank import COLUMNS

# every rerank term, the penalty and the total (a hit's score broken down by term, DESIGN §3)
SCORE_TERMS = set(COLUMNS)
assert {"semantic", "lexical", "task_type", "confidence", "recency", "redundancy", "total"} <= SCORE_TERMS

SUCCESS = {"episode_id": "ep-ok-1", "instruction": "Refund order 5512 for Ana Silva",
           "steps": [{"type": "message", "role": "user", "content": "Refund order 5512 for Ana Silva"},
                     {"type": "tool_call", "name": "verify_identity", "arguments": {"user": "ana"}},
                     {"type": "tool_result", "content": "verified"},
                     {"type": "tool_call", "name": "issue_refund", "arguments": {"order": 5512}},
                     {"type": "tool_result", "content": "refunded"}],
           "outcome": "success", "started_at": "2026-03-01T10:00:00Z"}
FAILURE = {"episode_id": "ep-fail-1", "instruction": "Refund order 7731 for Bo Chen",
           "steps": [{"type": "message", "role": "user", "content": "Refund order 7731 for Bo Chen"},
                     {"type": "tool_call", "name": "issue_refund", "arguments": {"order": 7731}},
                     {"type": "tool_result", "content": "", "error": "identity not verified"}],
           "outcome": "failure", "failure_cause": "strategy", "started_at": "2026-03-01T11:00:00Z"}


def namespace() -> str:
    """A fresh namespace (the session's Chroma server is shared by many tests)."""
    return "t" + uuid.uuid4().hex[:10]


def ok(result: Any) -> dict[str, Any]:
    """The structured content of a successful tool call."""
    assert not result.is_error, result.content[0].text
    assert result.structured_content is not None
    return result.structured_content


def ids(found: dict[str, Any]) -> list[str]:
    return [h["record"]["id"] for h in found["hits"]]


async def exercise_tools(client: Any, prefix: str, ns_a: str, ns_b: str, max_content_chars: int) -> None:
    """Every tool, two namespaces, and bad inputs that come back as tool errors while the server stays up."""
    tool = {name: f"{prefix}memory_{name}" for name in ("write", "search", "reflect", "feedback")}
    listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(listed) == set(tool.values())
    assert all(t.output_schema for t in listed.values()), "every tool has a structured output"
    assert all("namespace" in t.input_schema["properties"] for t in listed.values())

    async def call(name: str, **args: Any) -> dict[str, Any]:
        return ok(await client.call_tool(tool[name], args))

    # write: an L3 rule with a trigger, and an L2 candidate, in namespace A
    rule = await call("write", content="Call verify_identity before issue_refund on any order", layer="L3",
                      task_type="issue_refund", domain="retail", confidence=0.8,
                      counter_examples=["gift cards are refunded as store credit"], trigger={"any": ["refund"]},
                      source_episode_id="ep-0", namespace=ns_a)
    assert (rule["action"], rule["namespace"], rule["record"]["layer"]) == ("created", ns_a, "L3")
    assert rule["record"]["source_episode_ids"] == ["ep-0"]
    rule_id = rule["record"]["id"]
    cand = await call("write", content="Export the quarterly sales table before building the revenue chart",
                      confidence=0.6, namespace=ns_a)
    assert cand["record"]["kind"] == "candidate"
    cand_id = cand["record"]["id"]

    # search: the triggered rule has its place, its recall paths and score breakdown, and is in the injection block
    query = "A customer wants a refund for order 9911"
    found = await call("search", query=query, namespace=ns_a)
    hit = next(h for h in found["hits"] if h["record"]["id"] == rule_id)
    assert "trigger" in hit["paths"] and hit["forced"] and set(hit["scores"]) == SCORE_TERMS
    assert hit["record"]["tag"] in found["injection"]["rules"] and found["injection"]["tokens"] > 0
    assert found["injection"]["text"].startswith("## General rules")

    # namespace B holds none of A's memories, and A none of B's
    assert (await call("search", query=query, namespace=ns_b))["hits"] == []
    b_id = (await call("write", content="Confirm the shipping address before dispatching a replacement parcel",
                       namespace=ns_b))["record"]["id"]
    assert ids(await call("search", query="replacement parcel shipping address", namespace=ns_b)) == [b_id]
    assert b_id not in ids(await call("search", query="replacement parcel shipping address", namespace=ns_a))

    # reflect: a routine success is stored without reflection; a strategy failure is reflected on, and the
    # success (a related earlier episode) gives the rule its counter-example
    routine = await call("reflect", episode=SUCCESS, namespace=ns_a)
    assert (routine["reflected"], routine["episode_record"]["kind"], routine["write"]) == (False, "episode", None)
    failed = await call("reflect", episode=FAILURE, namespace=ns_a)
    assert failed["reflected"] and failed["reason"] == "strategy_failure", failed
    assert failed["reflection"] is not None and failed["write"]["action"] in ("created", "merged", "confirmed")
    assert "verify_identity" in failed["reflection"]["reusable_rule"]
    episode_hit = await call("search", query="Refund order 7731 for Bo Chen", namespace=ns_a)
    assert failed["episode_record"]["id"] in ids(episode_hit)

    # feedback: up raises confidence; a down lowers it; the second down deletes
    up = await call("feedback", memory_id=rule_id, signal="up", namespace=ns_a)
    assert not up["deleted"] and up["record"]["confidence"] == pytest.approx(0.9) and up["record"]["ups"] == 1
    down = await call("feedback", memory_id=cand_id, signal="down", namespace=ns_a)
    assert not down["deleted"] and down["record"]["downs"] == 1
    gone = await call("feedback", memory_id=cand_id, signal="correction", text="not our process", namespace=ns_a)
    assert gone["deleted"] and gone["record"] is None
    assert cand_id not in ids(await call("search", query="quarterly sales table revenue chart", namespace=ns_a))

    # bad input: a tool error naming the field; nothing stored; the server stays up
    no_outcome = {k: v for k, v in FAILURE.items() if k != "outcome"}
    bad: dict[str, tuple[str, dict[str, Any], list[str]]] = {
        "missing field": ("write", {"layer": "L2", "namespace": ns_a}, ["content", "Field required"]),
        "oversize content": ("write", {"content": "x" * (max_content_chars + 1), "namespace": ns_a},
                             ["content", f"{max_content_chars + 1} characters", "server.max_content_chars"]),
        "unknown memory id": ("feedback", {"memory_id": cand_id, "signal": "up", "namespace": ns_a},
                              ["no memory with id", cand_id]),
        "confidence out of range": ("write", {"content": "Always check the fare rules first", "confidence": 1.7,
                                              "namespace": ns_a}, ["confidence"]),
        "L3 without counter-examples": ("write", {"content": "Always check the fare rules first", "layer": "L3",
                                                  "namespace": ns_a}, ["counter_examples"]),
        "bad namespace": ("search", {"query": "refund", "namespace": "no spaces here"}, ["namespace"]),
        "episode without outcome": ("reflect", {"episode": no_outcome, "namespace": ns_a}, ["outcome"]),
        "unknown signal": ("feedback", {"memory_id": rule_id, "signal": "maybe", "namespace": ns_a}, ["signal"]),
        "top_k over the limit": ("search", {"query": "refund", "top_k": 100_000}, ["top_k", "server.max_top_k"]),
        "empty query": ("search", {"query": "   ", "namespace": ns_a}, ["query"]),
    }
    for what, (name, args, words) in bad.items():
        res = await client.call_tool(tool[name], args)
        text = " ".join(getattr(c, "text", "") for c in res.content)
        assert res.is_error, f"{what}: expected a tool error, got {res.structured_content}"
        assert all(w in text for w in words), f"{what}: {text}"
    after = await call("search", query=query, namespace=ns_a)
    assert rule_id in ids(after)
    assert "fare rules" not in after["injection"]["text"]


@pytest.fixture
def helpers() -> SimpleNamespace:
    """``exercise_tools``, ``ok``, ``ids`` and ``namespace`` for the test modules (a conftest is not importable)."""
    return SimpleNamespace(exercise_tools=exercise_tools, ok=ok, ids=ids, namespace=namespace)
