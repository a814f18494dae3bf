"""Task-type index, trigger index, step index, the task-type vote, and the injection budget."""

from __future__ import annotations

import pytest

from hindsight_lab.retrieve.inject import HEADERS, fit_budget, render, render_line
from hindsight_lab.retrieve.paths import StepIndex, TaskTypeIndex, TriggerIndex, infer_task_type, normalise
from hindsight_lab.types import Kind, MemoryRecord, Trigger


def test_step_index_fires_rules_whose_step_most_of_the_similarity_weight_reached():
    idx = StepIndex()
    idx.add("refund", "issue_refund")
    idx.add("reset", "reset_password")
    idx.add("none", None)  # a rule without a check guards no step
    near = [(("lookup_order", "issue_refund"), 0.9), (("reset_password",), 0.5), (("issue_refund",), 0.2)]
    assert idx.match(near) == ["refund"]  # 1.1 of 1.6 reached issue_refund
    assert idx.match(near[1:]) == ["reset"]  # 0.5 of 0.7: the weight, not the count, decides
    assert idx.match([(("issue_refund",), 0.5), (("search",), 0.5)]) == []  # half is not more than half
    assert idx.match([]) == [] and idx.match([(("issue_refund",), 0.0)]) == []
    idx.add("telecom", "issue_refund", "telecom")  # a rule of one domain fires for that domain or an unknown one
    assert idx.match(near, domain="retail") == ["refund"] and "telecom" in idx.match(near, domain="telecom")
    assert "telecom" in idx.match(near)
    idx.remove("refund")
    idx.remove("telecom")
    assert idx.match(near) == [] and len(idx) == 1


def test_task_type_index_newest_first_and_moves():
    idx = TaskTypeIndex()
    for i, t in enumerate(["a", "b", "a", "a"]):
        idx.add(f"r{i}", t, float(i), "episode")
    assert idx.newest("a", 2) == [("r3", "episode"), ("r2", "episode")]
    idx.add("r3", "b", 3.0, "rule")  # re-typed record moves
    assert idx.newest("a", 5) == [("r2", "episode"), ("r0", "episode")]
    assert idx.newest("b", 5) == [("r3", "rule"), ("r1", "episode")]
    idx.remove("r1")
    assert idx.types() == {"a": 2, "b": 1} and idx.newest("zzz", 3) == []


def test_trigger_matching_words_phrases_all_and_task_types():
    idx = TriggerIndex()
    idx.add("money", Trigger(any=("refund", "money back")))
    idx.add("both", Trigger(all=("seat", "upgrade")))
    idx.add("typed", Trigger(any=("price",), task_types=("billing",)))
    idx.add("domain", Trigger(any=("refund",)), domain="airline")
    assert set(idx.match("I want my MONEY back!", None)) == {"money"}
    assert set(idx.match("Refund, please", None)) == {"money", "domain"}
    assert idx.match("refunded yesterday", None) == []  # whole words only
    assert idx.match("seat please", None) == [] and idx.match("Upgrade my seat", None) == ["both"]
    assert idx.match("what is the price", None) == []  # task_type unknown: a typed trigger does not fire
    assert idx.match("what is the price", "billing") == ["typed"]
    assert idx.match("refund", None, domain="retail") == ["money"]
    idx.remove("money")
    assert idx.match("money back", None) == []


def test_normalise():
    assert normalise("  Last QUARTER's\tEast-China  sales! ") == "last quarter s east china sales"


def test_vote_abstains_when_thin():
    assert infer_task_type([("a", 0.9), ("b", 0.85), ("c", 0.8)], k=3, min_votes=2, min_share=0.5) == \
        (None, pytest.approx(0.9 / 2.55))
    assert infer_task_type([("a", 0.9), (None, 0.9)], k=5, min_votes=1, min_share=0.5)[0] is None
    assert infer_task_type([], k=5, min_votes=1, min_share=0.5) == (None, 0.0)
    assert infer_task_type([("a", 0.5), ("a", 0.5), ("b", 0.9)], k=2, min_votes=2, min_share=0.5)[0] == "a"


def _count(text: str) -> int:
    return len(text.split())


def test_budget_keeps_must_records_and_stops_at_the_first_that_does_not_fit():
    recs = [MemoryRecord(id=f"epis-{i:012x}", kind=Kind.EPISODE, content="word " * n)
            for i, n in enumerate([5, 30, 2])]
    rule = MemoryRecord(id="rule-00000000abcd", kind=Kind.RULE, content="short rule", counter_examples=("x",))
    items = recs + [rule]
    kept, tokens = fit_budget(items, [False, False, False, True], 30, _count)
    header = {k: _count(v) for k, v in HEADERS.items()}
    assert tokens[3] == _count(render_line(rule))
    # rule first (header + line), then episode 0; episode 1 does not fit and ends the block (2 is not tried)
    assert kept == [0, 3]
    block = render([items[i] for i in kept], _count)
    assert block.tokens == header["rules"] + tokens[3] + header["episodes"] + tokens[0] <= 30
    assert "[L3#000000]" in block.rules and "does not hold when: x" in block.rules
    assert block.text.index("General rules") < block.text.index("Similar past tasks")
