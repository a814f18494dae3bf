"""Behaviour users rely on, on real Chroma (embedded, and a `chroma run` server) and on Postgres + pgvector (the
session's embedded PostgreSQL), with the real MiniLM.

Every test that claims a feature has a negative control next to it.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from hindsight_lab import (ConfigError, EmbeddingModelMismatch, Kind, LabConfig, MemoryNotFound, MemorySystem,
                           ValidationError)
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.retrieve.paths import normalise

from support import T0, episode as _episode


SALES = [  # what the agent did: read the sales database, build a report
    ("s1", "Compile the monthly revenue report for the Shanghai region"),
    ("s2", "Summarise Q2 turnover per product line for Beijing stores"),
    ("s3", "Produce the annual sales totals for the Guangzhou branch"),
    ("s4", "Report how much the Chengdu outlets sold in September"),
]
COMPLAINTS = [  # look up the customer, open a ticket, apologise
    ("c1", "Handle an East China customer complaint about last quarter's late delivery"),
    ("c2", "A shopper is angry that her parcel arrived damaged; resolve the complaint"),
    ("c3", "Respond to a complaint about rude staff at the Hangzhou store"),
    ("c4", "Customer complains the refund from last month never arrived"),
]


def _lure_store(mem: MemorySystem) -> dict[str, str]:
    ids = {}
    for i, (eid, text) in enumerate(SALES):
        ids[eid] = mem.write_episode(_episode(eid, text, ["query_sales_db", "build_report"]),
                                     now=T0 + timedelta(hours=i)).id
    for i, (eid, text) in enumerate(COMPLAINTS):
        ids[eid] = mem.write_episode(_episode(eid, text, ["lookup_customer", "create_ticket", "send_apology"]),
                                     now=T0 + timedelta(hours=i)).id
    return ids


@pytest.mark.slow
def test_lexical_lure_loses_to_the_right_task_type(make_mem):
    mem = make_mem()
    ids = _lure_store(mem)
    query = "pull last quarter's East China sales figures"
    words = set(normalise(query).split())
    # the lure shares more words with the query than any sales memory does: a lexical matcher prefers it
    assert len(words & set(normalise(COMPLAINTS[0][1]).split())) > max(
        len(words & set(normalise(text).split())) for _, text in SALES)

    res = mem.search(query, now=T0 + timedelta(days=1))
    assert res.task_type == "build_report" and res.task_type_source == "inferred"
    ranks = {h.id: r for r, h in enumerate(res.hits)}
    sales_ranks = [ranks[ids[e]] for e, _ in SALES if ids[e] in ranks]
    assert sales_ranks, "no sales memory recalled"
    assert min(sales_ranks) < ranks.get(ids["c1"], len(res.hits)), res.to_frame()
    assert res.hits[0].record.task_type == "build_report"

    # negative control: the same store answers a complaint query with the complaint memory first
    ctrl = mem.search("handle a customer's complaint about a late delivery in East China",
                      now=T0 + timedelta(days=1))
    assert ctrl.hits[0].id == ids["c1"]


@pytest.mark.slow
def test_near_duplicates_merge_related_rules_stay_apart_episodes_never_merge(make_mem):
    mem = make_mem()
    base = "Always confirm the booking reference with the customer before cancelling a reservation"
    variants = [base, base + ".", base.lower(), base + "!", "Rule: " + base, base.replace("Always", "always,"),
                base + " .", base.upper(), base.replace("the customer", "the customer,"), base + "..",
                base.replace("cancelling", "canceling"), base + ", please", base + " !",
                "Note: " + base, base.replace("before", "before,")]
    assert len(set(variants)) == 15
    actions = [mem.write(v, confidence=0.6, source_episode_ids=[f"ep{i}"]).action for i, v in enumerate(variants)]
    assert actions == ["created"] + ["merged"] * 14
    related = mem.write("Always confirm the passenger's date of birth before changing a reservation",
                        confidence=0.6)
    assert related.action == "created"  # negative control: related but different stays separate

    cands = mem.records(Kind.CANDIDATE)
    assert len(cands) == 2
    merged = next(c for c in cands if c.id != related.record.id)
    assert merged.hit_count == 15 and len(merged.source_episode_ids) == 15
    assert merged.confidence == pytest.approx(0.6)
    assert mem.records(Kind.RULE) == []  # no counter_examples: never promoted

    a = mem.write_episode(_episode("run-1", "Cancel reservation ABC123", ["cancel_reservation"], task_id="t1"))
    b = mem.write_episode(_episode("run-2", "Cancel reservation ABC123", ["cancel_reservation"], task_id="t1"))
    assert a.id != b.id and len(mem.records(Kind.EPISODE)) == 2


RULE = "Check the fare conditions with get_fare_rules before promising a refund on a cancelled flight"


def test_promotion_needs_three_different_episodes_confidence_and_counter_examples(make_mem):
    mem = make_mem()
    ce = ["Fully refundable fares need no fare-rule check"]
    r1 = mem.write(RULE, confidence=0.8, counter_examples=ce, source_episode_ids=["e1"])
    r2 = mem.write(RULE + ".", confidence=0.9, counter_examples=ce, source_episode_ids=["e2"])
    assert (r2.action, r2.promoted, r2.record.kind) == ("merged", False, Kind.CANDIDATE)
    assert mem.records(Kind.RULE) == []
    r3 = mem.write(RULE, confidence=0.75, counter_examples=ce, source_episode_ids=["e3"])
    assert r3.promoted and r3.record.kind is Kind.RULE and r3.record.id == r1.record.id
    assert r3.record.confidence == pytest.approx((0.8 + 0.9 + 0.75) / 3)
    assert [r.id for r in mem.records(Kind.RULE)] == [r1.record.id] and mem.records(Kind.CANDIDATE) == []
    # a fourth confirmation confirms the L3 rule instead of creating a candidate
    r4 = mem.write(RULE, confidence=0.8, counter_examples=ce, source_episode_ids=["e4"])
    assert r4.action == "confirmed" and r4.record.hit_count == 4 and mem.records(Kind.CANDIDATE) == []


def test_same_episode_thrice_or_no_counter_examples_or_low_confidence_is_never_promoted(make_mem):
    mem = make_mem()
    ce = ["Fully refundable fares need no fare-rule check"]
    for _ in range(3):
        res = mem.write(RULE, confidence=0.9, counter_examples=ce, source_episode_ids=["same-episode"])
    assert not res.promoted and res.record.hit_count == 3 and len(res.record.source_episode_ids) == 1
    other = "Escalate to a human agent when the customer mentions a lawyer"
    for i in range(4):
        res = mem.write(other, confidence=0.95, source_episode_ids=[f"e{i}"])
    assert not res.promoted and res.record.kind is Kind.CANDIDATE  # empty counter_examples
    low = "Offer a travel voucher when a flight is delayed by more than three hours"
    for i, conf in enumerate((0.7, 0.7, 0.7)):
        res = mem.write(low, confidence=conf, counter_examples=["not for basic economy"], source_episode_ids=[f"x{i}"])
    assert not res.promoted  # mean 0.7 is not above 0.7
    assert mem.records(Kind.RULE) == []


def test_triggered_rule_is_guaranteed_a_place(make_mem):
    mem = make_mem(**{"retrieval.top_k": 3})
    for i in range(6):
        mem.write_episode(_episode(f"r{i}", f"Customer {i} wants a refund for the cancelled flight to Paris",
                                   ["get_reservation_details", "cancel_reservation"]),
                          now=T0 + timedelta(hours=i))
    short = mem.write("Read tariff clause 7.3 aloud first", layer="L3", confidence=0.5,
                      counter_examples=["group bookings"], trigger={"any": ["refund", "money back"]}, now=T0)
    silent = mem.write("Quote baggage allowance table B", layer="L3", confidence=0.5,
                       counter_examples=["infants"], trigger={"any": ["baggage"]}, now=T0)
    query = "The customer asks for a refund of the cancelled Paris flight"
    res = mem.search(query, now=T0 + timedelta(days=1))
    hit = next((h for h in res.hits if h.id == short.record.id), None)
    assert hit is not None and hit.forced and "trigger" in hit.paths
    # it is there only because of its trigger: below min_similarity and outscored by every other hit
    sim = float(mem.embedder.embed_query(query) @ mem.embedder.embed([short.record.content])[0])
    assert sim < mem.config_.retrieval.min_similarity
    assert hit.scores.total < min(h.scores.total for h in res.hits if h.id != short.record.id)
    assert len(res.hits) == 3
    # negative control: a rule whose trigger does not match is not forced in
    assert silent.record.id not in res.ids


def test_two_downs_delete_and_up_raises(make_mem):
    mem = make_mem()
    rec = mem.write("Verify the passenger count before booking", confidence=0.6).record
    up = mem.feedback(rec.id, "up")
    assert up.confidence == pytest.approx(0.7) and up.ups == 1
    down = mem.feedback(rec.id, -1, "it was wrong for group bookings")
    assert down.confidence == pytest.approx(0.5) and down.downs == 1 and mem.get(rec.id).downs == 1
    assert mem.feedback(rec.id, "down") is None
    with pytest.raises(MemoryNotFound, match=rec.id):
        mem.get(rec.id)
    with pytest.raises(ValidationError, match="signal"):
        mem.feedback(up.id, "sideways")


def test_a_checkable_rule_reaches_requests_whose_nearest_runs_reach_its_step(make_mem):
    # The rule is worded in tool names, the requests in a customer's words: no trigger, no shared word. With
    # retrieval.step_rules it fires when most of the request's nearest past runs reached the step it guards.
    check = {"kind": "order", "tools": ["lookup_customer", "create_ticket"]}
    for step_rules in (True, False):
        mem = make_mem(retrieval__step_rules=step_rules)
        _lure_store(mem)  # complaint runs reach create_ticket, sales runs never do
        rule = mem.write("Before create_ticket, call lookup_customer first.", layer="L3", confidence=0.9,
                         counter_examples=["the ticket is already open"], check=check, now=T0).record
        complaint = mem.search("My parcel came broken and nobody answers, this is unacceptable",
                               now=T0 + timedelta(days=1))
        hit = next((h for h in complaint.hits if h.id == rule.id), None)
        if step_rules:
            assert hit is not None and "step" in hit.paths and hit.forced
        else:  # negative control: off, the same rule is not injected for the same request
            assert hit is None
        sales = mem.search("How much did the Shenzhen stores sell in May?", now=T0 + timedelta(days=1))
        assert rule.id not in {h.id for h in sales.hits}  # negative control: those runs never reached the step


def test_decay_schedule_on_an_injected_clock(make_mem):
    # Found by the instruction: the day-20 search must recall `used` and not `ep` (with the tool names in the key,
    # `update_reservation_flights` and `update_reservation_seat` bring `ep` over min_similarity too).
    mem = make_mem(episode__key="instruction")
    rule = mem.write("Look up the loyalty tier before offering compensation", layer="L3", confidence=1.0,
                     counter_examples=["basic members"], now=T0).record
    trig = mem.write("Ask for the booking code when a passenger mentions a seat upgrade", layer="L3",
                     confidence=1.0, counter_examples=["walk-ins"], trigger={"any": ["upgrade"]}, now=T0).record
    ep = mem.write_episode(_episode("old", "Rebook a missed connection", ["update_reservation_flights"]), now=T0)
    used = mem.write_episode(_episode("used", "Change the seat on booking QX1", ["update_reservation_seat"]), now=T0)

    def conf(rid):
        return mem.get(rid).confidence

    assert mem.maintain(T0 + timedelta(days=29)).archived == []
    mem.search("Change the seat on booking QX1", now=T0 + timedelta(days=20))  # `used` is retrieved on day 20
    report = mem.maintain(T0 + timedelta(days=30))
    assert ep.id in report.archived and used.id not in report.archived
    assert mem.maintain(T0 + timedelta(days=50)).archived == [used.id]
    mem.search("I want a seat upgrade", now=T0 + timedelta(days=100))  # `trig` is triggered on day 100
    assert conf(rule.id) == pytest.approx(1.0)
    assert mem.maintain(T0 + timedelta(days=89)).decayed == []
    assert rule.id in mem.maintain(T0 + timedelta(days=90)).decayed and conf(rule.id) == pytest.approx(0.8)
    mem.maintain(T0 + timedelta(days=179))
    assert conf(rule.id) == pytest.approx(0.8)
    mem.maintain(T0 + timedelta(days=180))
    assert conf(rule.id) == pytest.approx(0.64)
    assert conf(trig.id) == pytest.approx(1.0)  # triggered on day 100: only 80 days old
    assert mem.maintain(T0 + timedelta(days=269)).archived == []
    assert rule.id in mem.maintain(T0 + timedelta(days=270)).archived
    archived = mem.records(archived=True)
    assert {r.id for r in archived} == {ep.id, used.id, rule.id} and all(r.archived for r in archived)
    assert rule.id not in {r.id for r in mem.records(Kind.RULE)}
    res = mem.search("offer compensation to a loyalty member", now=T0 + timedelta(days=271))
    assert rule.id not in res.ids  # archived: kept, never recalled


def test_embedding_model_mismatch_and_reembed(make_mem, minilm):
    mem = make_mem()
    rec = mem.write("Check the visa rules for the destination country", confidence=0.7).record
    mem.close()
    cfg = mem.config
    with pytest.raises(EmbeddingModelMismatch, match="all-MiniLM-L6-v2.*reembed"):
        MemorySystem(cfg, embedder=HashingEmbedder(dim=64)).open()
    fixed = MemorySystem(cfg, embedder=HashingEmbedder(dim=64))
    assert fixed.reembed()["candidate"] == 1
    assert fixed.get(rec.id).embedding_model == "hashing-64"
    assert fixed.search("visa rules for the destination country").ids == [rec.id]
    fixed.close()
    MemorySystem(cfg, embedder=HashingEmbedder(dim=64)).open().close()  # now opens cleanly
    with pytest.raises(EmbeddingModelMismatch):  # and the old model is the one refused
        MemorySystem(cfg, embedder=minilm).open()


TAG = re.compile(r"^- \[(L[123])#[0-9a-f]{6}\] ", re.M)


def test_injection_block_has_source_tags_and_respects_the_budget(make_mem):
    mem = make_mem(**{"retrieval.top_k": 10})
    for i in range(10):
        mem.write_episode(_episode(f"b{i}", f"Book a flight from Boston to city number {i} for two adults with "
                                   f"one checked bag each and a window seat", ["book_reservation"]))
    mem.write("When booking for two adults, ask for both passengers' dates of birth", layer="L3", confidence=0.8,
              counter_examples=["frequent flyers with stored profiles"], trigger={"any": ["book"]})
    big = mem.search("Book a flight for two adults from Boston")
    tags = TAG.findall(big.injection.text)
    assert len(tags) == len(big.hits) == 10 and "L3" in tags and "L2" in tags
    assert big.tokens == mem.tokens_.count(big.injection.text) <= 600
    small = mem.with_budget = None  # noqa: F841  (keeps flake quiet about the name below)
    mem2 = make_mem(**{"retrieval.top_k": 10, "retrieval.token_budget": 120})
    small = mem2.search("Book a flight for two adults from Boston")
    assert small.tokens <= 120 and 0 < len(small.hits) < len(big.hits)
    assert any(h.forced for h in small.hits)  # the triggered rule keeps its place under a tight budget


def test_persistence_close_reopen_same_records_same_search(make_mem):
    mem = make_mem()
    _lure_store(mem)
    mem.write("Check the sales database before building any report", confidence=0.8,
              counter_examples=["ad-hoc estimates"], trigger={"any": ["sales"]}, source_episode_ids=["s1"])
    when = T0 + timedelta(days=2)
    before = mem.search("pull last quarter's East China sales figures", now=when)
    records = {r.id: r for r in mem.records()}
    cfg = mem.config
    mem.close()
    again = MemorySystem(cfg, embedder=mem.embedder).open()
    after = again.search("pull last quarter's East China sales figures", now=when)
    reopened = {r.id: r for r in again.records()}
    assert set(reopened) == set(records)
    for rid, rec in records.items():  # retrieval bookkeeping changes; what was written does not
        assert (reopened[rid].content, reopened[rid].confidence, reopened[rid].task_type) == \
               (rec.content, rec.confidence, rec.task_type)
    assert after.ids == before.ids
    assert [h.scores.total for h in after.hits] == pytest.approx([h.scores.total for h in before.hits])
    assert again.get(before.ids[0]).last_retrieved_at == when  # bookkeeping was persisted on close
    again.close()


@pytest.mark.parametrize("fields, field", [
    ({"confidence": 1.7}, "confidence"),
    ({"layer": "L7"}, "layer"),
    ({"content": "   "}, "content"),
    ({"confidence": "high"}, "confidence"),
    ({"counter_examples": "not a list"}, "counter_examples"),
    ({"source_episode_ids": [1, 2]}, "source_episode_ids"),
    ({"trigger": {"any": []}}, "trigger"),
    ({"colour": "red"}, "colour"),
])
def test_bad_write_input_names_the_field_and_changes_nothing(make_mem, fields, field):
    mem = make_mem()
    mem.write("Confirm the refund amount with the customer", confidence=0.6)
    before = (mem.stats(), sorted((r.id, r.hit_count) for r in mem.records()))
    args = {"content": "Confirm the refund amount with the customer", **fields}
    with pytest.raises(ValidationError, match=re.escape(field)):
        mem.write(args.pop("content"), **args)
    assert (mem.stats(), sorted((r.id, r.hit_count) for r in mem.records())) == before


def test_unknown_config_key_is_named():
    with pytest.raises(ConfigError, match="retrieval.topk"):
        LabConfig().with_params({"retrieval.topk": 3})
    with pytest.raises(ConfigError, match="retrieval.weights.semantic"):
        LabConfig().with_params({"retrieval.weights.semantic": -1})
