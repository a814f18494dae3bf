"""The offline contradiction detector: the hand-labelled dev pairs, independent pairs written for these tests, and
each cue with a negative control."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight_lab.conflicts.claims import analyse
from hindsight_lab.conflicts.detect import OfflineDetector
from hindsight_lab.conflicts.pairs import judge_pairs, scores
from hindsight_lab.datasets.conflict_pairs import load_pairs
from hindsight_lab.conflicts.text import stem
from support import shared_dataset

HERE = Path(__file__).parent


def test_dev_pairs_precision_and_recall(detector):
    judged = judge_pairs(load_pairs(shared_dataset("conflict-pairs/pairs.dev.jsonl")), detector)
    sc = scores(judged)
    print(f"dev pairs: precision {sc['precision']:.3f} recall {sc['recall']:.3f} {sc['by_kind']}")
    assert sc["n"] == 40
    assert sc["precision"] == 1.0 and sc["recall"] == 1.0, sc


def test_independent_pairs_generalise(detector):
    # 40 pairs written for these tests in other words than the dev set (other verbs, cue words and domains):
    # the detector was not tuned on them pair by pair. Issue 18: 1.000 / 0.950 before the general cues (the miss,
    # "leave X out" against "include X", is found by the exclusion verbs), 1.000 / 1.000 with them.
    sc = scores(judge_pairs(load_pairs(HERE / "extra_pairs.jsonl"), detector))
    assert sc["precision"] == 1.0 and sc["recall"] >= 0.95, sc


def test_construction_pairs(detector):
    # 80 pairs written in issue 18's second round (construction_pairs.jsonl: 40 conflicts, 10 of each kind, in
    # nine domains, the constructions the held-out set was said to hold, and 40 related compatible pairs), the
    # development set of the cues added then: 1.000 / 0.600 before them, 1.000 / 0.850 after. They were tuned on,
    # so they are not held-out figures; the held-out set (test_heldout.py) did not move with them.
    sc = scores(judge_pairs(load_pairs(HERE / "construction_pairs.jsonl"), detector))
    assert sc["n"] == 80 and sum(p.conflict for p in load_pairs(HERE / "construction_pairs.jsonl")) == 40
    assert sc["precision"] == 1.0 and sc["recall"] >= 0.85, sc


def test_verdicts_are_symmetric(detector):
    for p in load_pairs(HERE / "extra_pairs.jsonl"):
        assert detector.judge(p.rule_a, p.rule_b).conflict == detector.judge(p.rule_b, p.rule_a).conflict, p.id


def test_stemmer_is_consistent():
    assert stem("cancellations") == stem("cancelling") == stem("cancel")
    assert stem("confirmation") == stem("confirmed") == stem("confirm")
    assert stem("queries") == stem("query") and stem("status") == "status" and stem("user") != stem("use")


@pytest.mark.parametrize("a, b", [
    ("Call lookup_order before issue_refund.", "Call issue_refund first, then call lookup_order."),
    ("Before exporting the data, lock the account.", "Export the account data, then lock the account."),
    ("Confirm the seat after paying.", "Confirm the seat prior to paying."),
    ("For refund tasks, call a_tool → b_tool → c_tool in this order.",
     "For refund tasks, call a_tool → c_tool → b_tool in this order."),
    ("Call get_order first and send the email afterwards.", "Send the email before calling get_order."),
])
def test_opposite_orders_conflict(detector, a, b):
    v = detector.judge(a, b)
    assert v.conflict and v.kind == "order", v


@pytest.mark.parametrize("a, b", [
    ("Call lookup_order before issue_refund.", "Before issuing the refund, look up the order."),  # paraphrase
    ("Call lookup_order before issue_refund.", "Call verify_identity before issue_refund."),  # other prerequisite
    ("Confirm the seat before paying.", "Confirm the meal before paying."),
])
def test_same_or_unrelated_orders_do_not(detector, a, b):
    assert not detector.judge(a, b).conflict


def test_a_failed_path_claims_no_order_but_its_error_does():
    # Regression: the failed path "lookup → hold" was read as "lookup before hold is wrong", contradicting the new
    # rule (lookup → move → hold) that keeps lookup first.
    fail = ("For x tasks, move_booking failed (hold_slot must now come after move_booking) when called after "
            "lookup_booking → hold_slot; check what move_booking requires before calling it.")
    orders = {(o.first.ident, o.then.ident, o.positive) for o in analyse(fail).orders}
    assert ("move_booking", "hold_slot", True) in orders and ("hold_slot", "move_booking", False) in orders
    assert not any(o[0] == "lookup_booking" for o in orders)
    d = OfflineDetector()
    assert not d.judge(fail, "For x tasks, call lookup_booking → move_booking → hold_slot in this order.").conflict
    assert d.judge(fail, "For x tasks, call lookup_booking → hold_slot → move_booking in this order.").conflict


@pytest.mark.parametrize("a, b, expected", [
    ("Offer a voucher when a flight is cancelled.", "Do not offer vouchers for cancelled flights.", True),
    ("Share the tracking number with customers.", "Never share tracking numbers with customers.", True),
    ("Confirm the currency before computing amounts.", "Skip currency confirmation when computing amounts.", True),
    # negative controls: a negation inside a condition, another object, a shared verb only
    ("Search with search_direct_flight first.", "When no direct flight fits, try search_onestop_flight.", False),
    ("Never share tracking numbers with customers.", "Share the delivery date with customers.", False),
    ("Do not change the passenger names.", "Change the flight dates when the user asks.", False),
    ("Allow up to 5 password attempts.", "Allow no more than 5 password attempts.", False),  # a bound, not a "no"
])
def test_negation(detector, a, b, expected):
    assert detector.judge(a, b).conflict is expected


@pytest.mark.parametrize("a, b, expected", [
    ("Send invoices with the email_document tool.", "Send invoices through the billing_portal tool.", True),
    ("Look up delays with get_flight_status.", "Look up delays with the flight_tracker tool.", True),
    ("Send invoices with email_document.", "Send invoices with email_document after checking the address.", False),
    ("Create labels using create_return_label.", "Track parcels using get_shipment_status.", False),  # other job
    ("Confirm the address with the user.", "Confirm the address with get_user_details.", False),  # user: no tool
])
def test_tools(detector, a, b, expected):
    assert detector.judge(a, b).conflict is expected


@pytest.mark.parametrize("a, b, expected", [
    ("Retry a failed call up to 3 times.", "Never retry a failed call more than once.", True),
    ("Use at most 2 search calls.", "Make at least 5 search calls.", True),
    ("Refunds are allowed within 30 days.", "Refunds are allowed within 14 days.", True),
    ("Economy passengers get one free bag.", "Business class passengers get two free bags.", False),  # other case
    ("Retry up to 3 times.", "Wait 3 seconds between retries.", False),  # other unit
    ("Allow up to 5 attempts.", "Allow no more than 5 attempts.", False),  # same bound
])
def test_quantities(detector, a, b, expected):
    assert detector.judge(a, b).conflict is expected


def test_different_conditions_do_not_conflict(detector):
    assert not detector.judge("Transfer to a human agent if the user is angry.",
                              "Do not transfer to a human agent if the user asks for a refund.").conflict
    assert detector.judge("Transfer to a human agent if the user is angry.",
                          "Do not transfer to a human agent if the user is angry.").conflict
