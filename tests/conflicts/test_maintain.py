"""The conflict pass inside ``MemorySystem.maintain``, on embedded Chroma with the real MiniLM."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from hindsight_lab import Kind, MemoryRecord
from support import T0

OLD = "For refund tasks, call lookup_order → verify_identity → issue_refund in this order."
NEW = "For refund tasks, call lookup_order → issue_refund → verify_identity in this order."
CE = ["digital goods need no identity check"]


@pytest.fixture(params=["embedded"])
def backend(request):  # these behaviours do not depend on the backend: embedded Chroma only (the server: manage)
    return request.param


def _confirm(mem, text, n, *, day, conf=0.9, task_type="refund"):
    out = None
    for i in range(n):
        out = mem.write(text, task_type=task_type, confidence=conf, counter_examples=CE,
                        source_episode_ids=[f"ep-{day}-{i}-{abs(hash(text)) % 997}"], now=T0 + timedelta(days=day))
    return out


def test_opposite_orders_are_not_merged_on_write_but_duplicates_are(make_mem, minilm):
    sim = float(np.dot(*minilm.embed([OLD, NEW])))
    assert sim >= 0.92  # close enough for dedup: only the contradiction check keeps them apart
    mem = make_mem()
    a = mem.write(OLD, task_type="refund", now=T0)
    b = mem.write(NEW, task_type="refund", now=T0)
    assert (a.action, b.action) == ("created", "created") and a.record.id != b.record.id
    assert mem.write(OLD, task_type="refund", now=T0).action == "merged"  # negative control: a true duplicate
    # regression guard: without the check the opposite order was merged into the old rule (policy scenario)
    loose = make_mem(**{"conflicts.block_contradicting_merge": False, "store.namespace": "loose"})
    loose.write(OLD, task_type="refund", now=T0)
    assert loose.write(NEW, task_type="refund", now=T0).action == "merged"


def test_a_clearly_stronger_newer_rule_supersedes_the_old_one(make_mem):
    mem = make_mem()
    old = _confirm(mem, OLD, 1, day=0, conf=0.6).record
    new = _confirm(mem, NEW, 3, day=5).record  # three episodes, promoted to L3
    other = _confirm(mem, "For refund tasks, quote the refund amount to the customer.", 1, day=1).record
    report = mem.maintain(T0 + timedelta(days=6))
    assert report.superseded == [(old.id, new.id, "order")] and report.flagged == []
    frame = report.to_frame()
    assert list(frame.columns) == ["id", "action", "other", "kind"]
    assert frame[frame.action == "superseded"].values.tolist() == [[old.id, "superseded", new.id, "order"]]
    archived = mem.get(old.id)
    assert archived.archived and archived.attrs["superseded_by"] == new.id
    assert archived.attrs["conflict_kind"] == "order"
    assert old.id in mem.get(new.id).attrs["supersedes"]
    assert not mem.get(other.id).archived and "superseded_by" not in mem.get(other.id).attrs  # negative control
    res = mem.search("Refund order 55, the kettle broke", task_type="refund", top_k=10, now=T0 + timedelta(days=6))
    assert new.id in res.ids and old.id not in res.ids
    assert report.conflicts.summary()["superseded"] == 1
    # the pass is idempotent: nothing more to do
    again = mem.maintain(T0 + timedelta(days=6))
    assert (again.superseded, again.flagged, again.merged) == ([], [], [])


def test_close_contradictions_are_flagged_recalled_together_and_marked(make_mem):
    mem = make_mem(**{"retrieval.path_depth": 1})
    a = _confirm(mem, OLD, 2, day=0, conf=0.8).record
    b = _confirm(mem, NEW, 2, day=1, conf=0.8).record
    report = mem.maintain(T0 + timedelta(days=2))
    assert report.superseded == [] and report.flagged == [(*sorted((a.id, b.id)), "order")]
    assert [x["id"] for x in mem.get(a.id).attrs["conflicts_with"]] == [b.id]
    assert [x["id"] for x in mem.get(b.id).attrs["conflicts_with"]] == [a.id]
    res = mem.search("call lookup_order then verify_identity then issue_refund", task_type="other",
                     now=T0 + timedelta(days=2))
    assert a.id in res.ids and b.id in res.ids  # both recalled (path_depth 1: one of them may be only as the rival)
    rules = res.injection.rules
    assert rules.count("[conflicts with [L") == 2 and "decide from the task" in rules
    assert f'"{NEW}"' in rules and f'"{OLD}"' in rules
    # the stored contents are untouched by the mark
    assert mem.get(a.id).content == OLD and "conflicts with" not in res.hits[0].record.content


def test_stale_links_are_removed_and_deleted_rivals_are_not_shown(make_mem):
    mem = make_mem()
    a = _confirm(mem, OLD, 2, day=0, conf=0.8).record
    b = _confirm(mem, NEW, 2, day=1, conf=0.8).record
    mem.maintain(T0 + timedelta(days=2))
    mem.delete(b.id)
    res = mem.search("call lookup_order then verify_identity then issue_refund", task_type="refund",
                     now=T0 + timedelta(days=2))
    assert "conflicts with" not in res.injection.text
    mem.maintain(T0 + timedelta(days=3))
    assert not mem.get(a.id).attrs.get("conflicts_with")


def test_duplicates_that_escaped_dedup_are_merged_but_contradictions_never(make_mem, minilm):
    mem = make_mem()
    texts = ["For booking tasks, call search_availability → hold_slot → confirm_booking in this order.",
             "For booking tasks, call search_availability → hold_slot → confirm_booking in this order!",
             "For booking tasks, call search_availability → confirm_booking → hold_slot in this order."]
    recs = [MemoryRecord(f"rule-imp{i}", Kind.CANDIDATE, t, task_type="booking", confidence=0.6,
                         source_episode_ids=(f"e{i}",), created_at=T0 + timedelta(hours=i),
                         last_confirmed_at=T0 + timedelta(hours=i), embedding_model=minilm.name())
            for i, t in enumerate(texts)]
    mem.put_records(recs, minilm.embed(texts))  # as an import would: no dedup on the way in
    report = mem.maintain(T0 + timedelta(days=1))
    assert report.merged == [("rule-imp1", "rule-imp0")]
    merged = mem.get("rule-imp0")
    assert merged.hit_count == 2 and merged.source_episode_ids == ("e0", "e1")
    assert merged.attrs["merged_from"] == ["rule-imp1"]
    assert mem.get("rule-imp2").kind is Kind.CANDIDATE  # the opposite order stays apart (flagged)
    assert report.flagged == [("rule-imp0", "rule-imp2", "order")]


def test_the_pass_can_be_switched_off(make_mem):
    mem = make_mem(**{"conflicts.enabled": False})
    _confirm(mem, OLD, 1, day=0, conf=0.6)
    _confirm(mem, NEW, 3, day=5)
    report = mem.maintain(T0 + timedelta(days=6))
    assert report.conflicts is None and report.superseded == [] and len(mem.records(Kind.CANDIDATE)) + len(
        mem.records(Kind.RULE)) == 2
