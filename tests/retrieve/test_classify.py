"""The logistic task-type classifier: entity masking, prediction, abstention, and its use by search."""

from __future__ import annotations

from datetime import timedelta

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.retrieve.classify import TaskTypeClassifier, mask_entities
from hindsight_lab.store.memory import InMemoryStore

from support import T0, episode

REFUNDS = ["Refund order 4821 for Alice Chen in Denver, the lamp arrived broken",
           "Give Bob Ruiz from Porto his money back for order 77, the mug was cracked",
           "Please refund the damaged desk on order 5310 for Chloe Berg"]
ADDRESSES = ["Change the delivery address of Alice Chen in Denver to 12 Oak Street",
             "Bob Ruiz moved from Porto; update the shipping address on his account",
             "Update the address for Chloe Berg to her new flat"]


def test_mask_entities_hides_names_numbers_and_emails_but_not_sentence_starts():
    assert mask_entities("Refund order 4821 for Alice Chen (alice@example.com) in Denver.") == \
        "Refund order <num> for <name> <name> (<email>) in <name>."
    assert mask_entities("I want to cancel. My name is Bob.") == "I want to cancel. My name is <name>."


def test_predicts_the_wording_of_a_type_not_its_entities():
    clf = TaskTypeClassifier(max_per_type=10, min_votes=2, min_share=0.4)
    for i, text in enumerate(REFUNDS):
        clf.add(f"r{i}", text, "issue_refund", float(i))
    for i, text in enumerate(ADDRESSES):
        clf.add(f"a{i}", text, "update_address", float(i))
    # the same customer and city as an address change, but a refund request
    label, share = clf.predict("Alice Chen in Denver wants a refund for order 9911")
    assert label == "issue_refund" and share > 0.4
    assert clf.predict("Please update the address of Dmitri Novak")[0] == "update_address"
    # abstains when the winning share is not above min_share
    strict = TaskTypeClassifier(min_share=0.99)
    for i, text in enumerate(REFUNDS + ADDRESSES):
        strict.add(f"x{i}", text, "issue_refund" if i < 3 else "update_address", float(i))
    assert strict.predict("Alice Chen in Denver wants a refund for order 9911")[0] is None


def test_keeps_the_newest_per_type_and_forgets_removed_records():
    clf = TaskTypeClassifier(max_per_type=2, min_votes=2)
    for i, text in enumerate(REFUNDS):
        clf.add(f"r{i}", text, "issue_refund", float(i))
    assert len(clf) == 2 and set(clf._by_type["issue_refund"]) == {"r1", "r2"}  # r0 was the oldest
    assert clf.predict("refund my order")[0] == "issue_refund"  # one type only: no model needed
    clf.remove("r2")
    assert clf.predict("refund my order")[0] is None  # fewer than min_votes examples left
    clf.add("none", "no task type", None, 9.0)
    assert len(clf) == 1


def test_search_uses_the_logistic_classifier_when_configured():
    cfg = LabConfig().with_params({"retrieval.classifier.method": "logistic",
                                   "retrieval.classifier.min_share": 0.4})
    mem = MemorySystem(cfg, store=InMemoryStore(), embedder=HashingEmbedder(dim=256)).open()
    for i, text in enumerate(REFUNDS):
        mem.write_episode(episode(f"r{i}", text, ["lookup_order", "issue_refund"]), now=T0 + timedelta(hours=i))
    for i, text in enumerate(ADDRESSES):
        mem.write_episode(episode(f"a{i}", text, ["update_address"]), now=T0 + timedelta(hours=3 + i))
    res = mem.search("Alice Chen in Denver wants a refund for order 9911", now=T0 + timedelta(days=1))
    assert (res.task_type, res.task_type_source) == ("issue_refund", "inferred")
    assert res.task_type_share > 0.4
    strict = MemorySystem(cfg.with_params({"retrieval.classifier.min_share": 0.99}), store=mem.store,
                          embedder=mem.embedder).open()
    res = strict.search("Alice Chen in Denver wants a refund for order 9911", now=T0 + timedelta(days=1))
    assert (res.task_type, res.task_type_source) == (None, "abstained")  # negative control: too unsure
    assert all(h.scores.task_type == 0.0 for h in res.hits)
