"""MemorySystem orchestration on the dict-backed store with the hashing embedder (no meaning needed here)."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest


from hindsight_lab import Kind, LabConfig, MemoryNotFound, MemorySystem, StoreError, ValidationError
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.store.memory import InMemoryStore
from hindsight_lab.trace.summary import derive_task_type, summarise
from hindsight_lab.trace import Episode
from support import T0, episode


def test_episode_record_summary_task_type_and_confidence(mem):
    ep = Episode.model_validate({
        "episode_id": "e1", "task_id": "t1", "task_type": "GROUND-TRUTH", "domain": "airline",
        "instruction": "Cancel my trip to Rome", "outcome": "failure", "failure_cause": "strategy",
        "steps": [{"type": "tool_call", "name": "get_reservation_details", "arguments": {"id": "R1"}},
                  {"type": "tool_call", "name": "cancel_reservation", "arguments": {"id": "R1"}},
                  {"type": "tool_result", "content": "", "error": "cannot cancel: basic economy"}]})
    rec = mem.write_episode(ep)
    assert rec.kind is Kind.EPISODE and rec.layer.value == "L2"
    assert rec.task_type == "cancel_reservation"  # from the tools called, never the ground-truth label
    assert rec.confidence == mem.config_.episode.failure_confidence and rec.outcome == "failure"
    assert rec.key == "Cancel my trip to Rome\nTools: get_reservation_details cancel_reservation"  # request + tools
    assert rec.source_episode_ids == ("e1",) and rec.task_id == "t1"
    alone = MemorySystem(LabConfig().with_params({"episode.key": "instruction"}), store=InMemoryStore(),
                         embedder=HashingEmbedder(dim=256), clock=lambda: T0)
    assert alone.write_episode(ep).key == "Cancel my trip to Rome"
    assert "get_reservation_details → cancel_reservation" in rec.content
    assert "error at cancel_reservation: cannot cancel" in rec.content and "failure (strategy)" in rec.content
    assert mem.write_episode(ep, task_type="cancel").task_type == "cancel"  # the caller may know it
    assert len(mem.records(Kind.EPISODE)) == 1  # the same episode_id replaces its record


def test_derive_task_type_and_bounded_summary():
    ro = ("get", "search", "think")
    ep = Episode.model_validate(episode("e", "x" * 5000, ["getUser", "think", "book_reservation", "send_certificate",
                                                         "book_reservation"]))
    assert derive_task_type(ep, ro) == "book_reservation+send_certificate"
    assert derive_task_type(Episode.model_validate(episode("e", "x", ["get_user", "search_flights"])), ro) == \
        "read_only"
    assert derive_task_type(Episode.model_validate(episode("e", "x", [])), ro) is None
    assert len(summarise(ep, 200)) <= 200


def test_same_task_type_guard_on_dedup(mem):
    a = mem.write("Ask for the order number first", task_type="refund")
    b = mem.write("Ask for the order number first", task_type="exchange")
    c = mem.write("Ask for the order number first")
    assert (a.action, b.action, c.action) == ("created", "created", "merged")
    loose = MemorySystem(LabConfig().with_params({"dedup.same_task_type": False}), store=InMemoryStore(),
                         embedder=HashingEmbedder(dim=256))
    loose.write("Ask for the order number first", task_type="refund")
    assert loose.write("Ask for the order number first", task_type="exchange").action == "merged"


def test_task_type_given_inferred_or_off(mem):
    for i in range(3):
        mem.write_episode(episode(f"e{i}", f"refund the order number {i}", ["refund_order"]))
    mem.write_episode(episode("x", "change the delivery address", ["update_address"]))
    assert mem.search("refund the order number 9").task_type_source == "inferred"
    given = mem.search("refund the order number 9", task_type="update_address")
    assert (given.task_type, given.task_type_source) == ("update_address", "given")
    hit = next(h for h in given.hits if h.record.task_type == "update_address")
    assert "task_type" in hit.paths and hit.scores.task_type == 1.0  # the task-type path brings it in
    assert hit.paths == ("task_type",)  # neither meaning nor words would have found it
    other = mem.search("refund the order number 9", task_type="refund_order")
    assert hit.id not in {h.id for h in other.hits}  # negative control: another given type leaves it out
    assert all(h.scores.task_type == 1.0 for h in other.hits if h.record.task_type == "refund_order")
    off = MemorySystem(LabConfig().with_params({"retrieval.classifier.enabled": False}), store=mem.store,
                       embedder=mem.embedder)
    res = off.search("refund the order number 9")
    assert res.task_type is None and res.task_type_source == "off"
    assert all(h.scores.task_type == 0.0 for h in res.hits)


@pytest.mark.parametrize("method", ["knn", "logistic"])
def test_classifier_learns_from_successes_only_when_asked(method):
    """Three failed bookings that skipped the hold (type ``confirm_booking``) and one success that held first
    (``confirm_booking+hold_slot``): learning from every run infers the failures' truncated type, learning from
    successes infers what the task needed."""
    def infer(learn_from: str) -> str | None:
        cfg = LabConfig().with_params({"retrieval.classifier.method": method, "retrieval.classifier.min_votes": 1,
                                       "retrieval.classifier.min_share": 0.0,
                                       "retrieval.classifier.learn_from": learn_from})
        m = MemorySystem(cfg, store=InMemoryStore(), embedder=HashingEmbedder(dim=256), clock=lambda: T0)
        for i in range(3):
            m.write_episode(episode(f"f{i}", f"book a table for {i + 2} tonight", ["confirm_booking"], "failure"))
        m.write_episode(episode("s", "reserve a quiet table for two", ["hold_slot", "confirm_booking"]))
        m.write_episode(episode("r", "refund the order", ["issue_refund"]))
        return m.search("book a table for 4 tonight").task_type

    assert infer("all") == "confirm_booking"
    assert infer("successes") == "confirm_booking+hold_slot"


@pytest.mark.parametrize("method", ["knn", "logistic"])
@pytest.mark.parametrize("cause, learnt", [("external", "confirm_booking"), ("strategy", "confirm_booking+hold_slot"),
                                           (None, "confirm_booking+hold_slot")])
def test_not_strategy_learns_from_the_runs_an_outage_failed_as_from_successes(method, cause, learnt):
    """The same three failed bookings, failed by an outage (``failure_cause: external``), by the agent's choice, or
    for no recorded cause: ``learn_from: not_strategy`` learns from the first as ``all`` does, and from the others
    as ``successes`` does."""
    cfg = LabConfig().with_params({"retrieval.classifier.method": method, "retrieval.classifier.min_votes": 1,
                                   "retrieval.classifier.min_share": 0.0,
                                   "retrieval.classifier.learn_from": "not_strategy"})
    m = MemorySystem(cfg, store=InMemoryStore(), embedder=HashingEmbedder(dim=256), clock=lambda: T0)
    for i in range(3):
        m.write_episode(episode(f"f{i}", f"book a table for {i + 2} tonight", ["confirm_booking"], "failure",
                                failure_cause=cause))
    m.write_episode(episode("s", "reserve a quiet table for two", ["hold_slot", "confirm_booking"]))
    m.write_episode(episode("r", "refund the order", ["issue_refund"]))
    assert m.search("book a table for 4 tonight").task_type == learnt


def test_classifier_forgets_an_episode_rewritten_as_a_failure():
    cfg = LabConfig().with_params({"retrieval.classifier.method": "logistic", "retrieval.classifier.min_votes": 1,
                                   "retrieval.classifier.learn_from": "successes"})
    m = MemorySystem(cfg, store=InMemoryStore(), embedder=HashingEmbedder(dim=256), clock=lambda: T0)
    m.write_episode(episode("a", "refund the order", ["issue_refund"]))
    m.write_episode(episode("b", "move my address", ["update_address"]))
    assert len(m.index_.classifier) == 2
    m.write_episode(episode("b", "move my address", ["update_address"], "failure"))  # same id: replaced
    assert len(m.index_.classifier) == 1


def test_domain_filter_and_top_k(mem):
    for i, dom in enumerate(["air", "air", "retail", None]):
        mem.write_episode(episode(f"e{i}", f"refund the ticket {i}", ["refund"], domain=dom))
    res = mem.search("refund the ticket", domain="air", top_k=10)
    assert {h.record.domain for h in res.hits} == {"air", None}
    assert len(mem.search("refund the ticket", top_k=2).hits) == 2
    with pytest.raises(ValidationError, match="top_k"):
        mem.search("refund", top_k=0)
    with pytest.raises(ValidationError, match="query"):
        mem.search("   ")


def test_working_memory_is_injected_first_and_destroyed(mem):
    mem.write_episode(episode("e1", "refund the ticket", ["refund"]))
    with mem.working_memory("task-9") as wm:
        wm["order"] = "#42 paid by card"
        res = mem.search("refund the ticket")
        assert res.working and "order: #42 paid by card" in res.injection.state
        assert "[L1#" in res.injection.text and mem.stats()["working"] == 1
        with pytest.raises(StoreError, match="task-9"):
            with mem.working_memory("another"):
                pass
    assert len(wm) == 0 and mem.stats()["working"] == 0
    after = mem.search("refund the ticket")
    assert after.working == [] and after.injection.state == ""


def test_debug_trace_records_retrievals_and_outcomes_but_never_ranking(mem):
    rec = mem.write_episode(episode("e1", "refund the ticket", ["refund"]))
    first = mem.search("refund the ticket", task_id="q1", now=T0 + timedelta(days=1))
    mem.record_outcome(first.ids, "success", task_id="q1")
    trace = mem.get(rec.id).debug_trace
    assert [e["event"] for e in trace] == ["retrieved", "outcome"] and trace[0]["task_id"] == "q1"
    assert mem.get(rec.id).last_retrieved_at == T0 + timedelta(days=1)
    second = mem.search("refund the ticket", now=T0 + timedelta(days=1))
    assert [h.scores for h in second.hits] == [h.scores for h in first.hits]


def test_retrieval_bookkeeping_waits_for_its_batch_across_a_change_and_lands_on_the_changed_record(mem):
    # a search leaves bookkeeping pending; a write then changes the record it stamped (a duplicate merges in). The
    # write does not write the bookkeeping first: it stays pending over the changed record, what later searches see
    # is the change, and the batch's flush stores both
    first = mem.write("Call verify_identity before issue_refund", confidence=0.6).record
    assert mem.search("verify identity before a refund", task_id="q1", now=T0 + timedelta(days=1)).ids == [first.id]
    merged = mem.write("Call verify_identity before issue_refund", confidence=0.8)
    assert merged.action == "merged" and merged.record.hit_count == 2
    stored = mem.store.get("candidate", [first.id])[0][0]
    assert stored.hit_count == 2 and stored.debug_trace == () and stored.last_retrieved_at is None  # not yet written
    current = mem.get(first.id)  # the stored record with its pending bookkeeping
    assert current.hit_count == 2 and current.last_retrieved_at == T0 + timedelta(days=1)
    assert [h.record.hit_count for h in mem.search("verify identity before a refund").hits] == [2]
    mem.flush()
    stored = mem.store.get("candidate", [first.id])[0][0]
    assert stored.hit_count == 2 and [e["task_id"] for e in stored.debug_trace][:1] == ["q1"]
    assert stored.confidence == pytest.approx(0.7) and stored.last_retrieved_at is not None


def test_get_many_reads_each_bucket_once_in_the_order_asked(mem):
    ep = mem.write_episode(episode("e1", "refund the ticket", ["refund"]))
    a = mem.write("Call verify_identity before issue_refund", confidence=0.6).record
    b = mem.write("Call lookup_order before cancel_order", confidence=0.6).record
    mem.search("verify identity before a refund", task_id="q1", now=T0 + timedelta(days=1))
    reads = []
    real_get = mem.store.get
    mem.store.get = lambda bucket, ids: reads.append((str(bucket), list(ids))) or real_get(bucket, ids)
    got = mem.get_many([b.id, ep.id, a.id, b.id])
    assert [r.id for r in got] == [b.id, ep.id, a.id, b.id]
    assert sorted(reads) == [("candidate", [b.id, a.id]), ("episode", [ep.id])]
    assert got[2].last_retrieved_at == T0 + timedelta(days=1)  # with its pending bookkeeping, as get() gives it
    assert [mem.get(r.id) for r in got] == got
    with pytest.raises(MemoryNotFound, match="'nope'"):
        mem.get_many([a.id, "nope"])


def test_bad_episode_input_names_the_field(mem):
    with pytest.raises(ValidationError, match=r"write_episodes\[0\].*outcome"):
        mem.write_episode({"episode_id": "e", "instruction": "x", "steps": [], "outcome": "won"})
    assert mem.stats()["episodes"] == 0


def test_l3_write_requires_counter_examples(mem):
    with pytest.raises(ValidationError, match="counter_examples"):
        mem.write("Always do X", layer="L3")
    assert mem.stats()["rules"] == 0


def test_a_search_takes_the_query_embedding_its_caller_has(mem):
    mem.write("Call verify_identity before issue_refund", confidence=0.8)
    mem.write("Call lookup_order before cancel_order", confidence=0.8)
    query = "refund after verifying the identity"
    given = mem.search(query, query_embedding=mem.embedder.embed([query])[0])
    assert [(h.id, h.scores) for h in given.hits] == [(h.id, h.scores) for h in mem.search(query).hits]
    other = mem.search(query, query_embedding=mem.embedder.embed(["cancel the order after looking it up"])[0])
    semantic = lambda res: {h.record.content[5:17]: h.scores.semantic for h in res.hits}  # noqa: E731
    assert semantic(other)["verify_ident"] < semantic(given)["verify_ident"]  # the vector given is the one used
    with pytest.raises(ValidationError, match="query_embedding: expected 256 numbers"):
        mem.search(query, query_embedding=np.zeros(8))


def test_lexical_scale_reads_a_weak_best_match_as_weak():
    """``retrieval.lexical_scale``: over the best score in the store, the best of weak keyword matches scores 1;
    over the query's own score, it scores what share of the query it matches, and a retry worded like the query
    scores near 1 (below it by the key's ``Tools:`` line, which the query does not have)."""
    texts = ["cancel my flight to Seattle", "book a hotel room in Paris", "add a bag to my reservation"]
    query = "upgrade my seat to business class on the Seattle flight"
    lexical = {}
    for scale in ("best", "query"):
        cfg = LabConfig.model_validate({"retrieval": {"lexical_scale": scale}})
        m = MemorySystem(cfg, store=InMemoryStore(), embedder=HashingEmbedder(dim=256), clock=lambda: T0)
        for i, text in enumerate(texts):
            m.write_episode(episode(f"e{i}", text, ["get_reservation"]))
        lexical[scale] = {h.record.source_episode_ids[0]: h.scores.lexical for h in m.search(query, top_k=3).hits}
        m.write_episode(episode("retry", query, ["get_reservation"]))
        lexical[scale]["retry"] = next(h.scores.lexical for h in m.search(query, top_k=4).hits
                                       if h.record.source_episode_ids[0] == "retry")
    assert lexical["best"]["e0"] == 1.0 and 0 < lexical["query"]["e0"] < 0.5
    assert 0.8 < lexical["query"]["retry"] < 1.0 and lexical["best"]["retry"] == 1.0


def test_stored_sources_follow_every_write_merge_archive_and_delete_without_a_scan(mem):
    def scanned() -> list[tuple[str, tuple[str, ...]]]:
        return sorted((r.id, r.source_episode_ids) for r in mem.records())

    for i in range(6):  # failures of one task type: the heuristic reflector writes candidates from them
        mem.reflect(episode(f"e{i}", f"Cancel reservation R{i}", ["get_reservation_details", "cancel_reservation"],
                            outcome="failure", task_id=f"t{i % 2}", failure_cause="strategy"))
    mem.write("Check the fare class before a cancellation", task_type="cancel_reservation",
              source_episode_ids=["e0", "e1"])
    assert sorted(mem.stored_sources()) == scanned() and len(scanned()) > 6
    victim = mem.records(Kind.EPISODE)[0]
    mem.delete(victim.id)
    assert victim.id not in dict(mem.stored_sources()) and sorted(mem.stored_sources()) == scanned()
    report = mem.maintain(T0 + timedelta(days=400))  # a year on: decay archives what nothing confirmed
    assert report.archived, report
    assert sorted(mem.stored_sources()) == scanned()
    reopened = MemorySystem(LabConfig(), store=mem.store, embedder=mem.embedder, clock=lambda: T0)
    assert sorted(reopened.stored_sources()) == scanned()  # rebuilt from the store at open
