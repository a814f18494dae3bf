"""Flagged rivals at recall time: the partner joins the candidates, the injected line carries the mark."""

from __future__ import annotations

import numpy as np

from hindsight_lab.retrieve.marks import add_partners, mark, shown_records
from hindsight_lab.retrieve.recall import Candidates
from hindsight_lab.store.memory import InMemoryStore
from hindsight_lab.types import Kind, MemoryRecord


def _flagged(rid: str, rival: str, text: str, rival_text: str) -> MemoryRecord:
    return MemoryRecord(rid, Kind.RULE, text, attrs={"conflicts_with": [{"id": rival, "kind": "order",
                                                                         "content": rival_text}]})


def test_the_rival_of_a_recalled_flagged_rule_joins_the_candidates():
    a = _flagged("rule-aaaaaa000001", "rule-bbbbbb000002", "A before B.", "B before A.")
    b = _flagged("rule-bbbbbb000002", "rule-aaaaaa000001", "B before A.", "A before B.")
    other = MemoryRecord("rule-cccccc000003", Kind.RULE, "Log every refund.")
    store = InMemoryStore()
    store.open("test")
    store.upsert("rule", [a, b, other], np.eye(3, dtype=np.float32))
    cands = Candidates()
    cands.add(a, np.eye(3, dtype=np.float32)[0], 1.0, 0.5, "vector", None)
    q = np.array([0.6, 0.8, 0.0], dtype=np.float32)
    add_partners(cands, store, {a.id: "rule", b.id: "rule", other.id: "rule"}.get, q, None)
    assert [r.id for r in cands.records] == [a.id, b.id] and cands.paths[1] == ["conflict"]
    assert cands.similarity[1] == np.float32(0.8) and cands.lexical[1] == 0.0
    # negative control: a rival that is gone (archived, deleted) is not fetched
    cands2 = Candidates()
    cands2.add(a, np.eye(3, dtype=np.float32)[0], 1.0, 0.5, "vector", None)
    add_partners(cands2, store, {a.id: "rule", b.id: "archive"}.get, q, None)
    assert [r.id for r in cands2.records] == [a.id]


def test_the_mark_names_and_quotes_the_active_rival_only():
    a = _flagged("rule-aaaaaa000001", "rule-bbbbbb000002", "A before B.", "B before A." + " x" * 200)
    assert mark(a, {"rule-bbbbbb000002": "candidate"}.get).startswith(' [conflicts with [L2#bbbbbb]: "B before A.')
    assert len(mark(a, {"rule-bbbbbb000002": "rule"}.get)) < 260  # the quote is bounded
    assert mark(a, {}.get) == ""
    plain = MemoryRecord("rule-x", Kind.RULE, "Log every refund.")
    shown = shown_records([plain, a], {"rule-bbbbbb000002": "rule"}.get)
    assert shown[0] is plain and shown[1].content.startswith("A before B. [conflicts with [L3#bbbbbb]")
    assert a.content == "A before B."  # the record itself is untouched
