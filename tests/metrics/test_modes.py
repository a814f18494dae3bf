"""The judging modes' definitions on hand-made histories (hindsight_lab.metrics.modes)."""

from __future__ import annotations

import pytest

from hindsight_lab.metrics.judging import JudgedEpisode as E
from hindsight_lab.metrics.modes import MODES, judge_mode

HISTORY = [
    E("a1", "A", "refund", None, 0, "failure"),
    E("b1", "B", "refund", None, 1, "success"),
    E("c1", "C", "cancel", None, 2, "success"),
    E("a2", "A", "refund", None, 3, "success"),
    E("d1", "D", "refund", None, 4, "partial"),
    E("a3", "A", "refund", None, 5, "failure"),
    E("e1", "E", "cancel", None, 6, "failure"),
    E("x1", None, "refund", None, 7, "success"),  # no task id: never a query of transfer or outcome
]


def test_repeat_is_todays_rules() -> None:
    j = judge_mode(HISTORY, "repeat")
    assert j.query_ids == ("a2", "a3")
    assert j.grades("a3") == {"a1": 2, "a2": 2, "b1": 1, "d1": 1}


def test_transfer_asks_for_earlier_tasks_of_the_same_type_only() -> None:
    j = judge_mode(HISTORY, "transfer")
    # b1: first run of B, a refund (a1) ran before; d1: first of D, three refunds before; e1: first of E, c1 before
    assert j.query_ids == ("b1", "d1", "e1")
    assert j.grades("b1") == {"a1": 2}
    assert j.grades("d1") == {"a1": 2, "b1": 2, "a2": 2}
    assert j.grades("e1") == {"c1": 2}
    # negative controls: a first run with no earlier task of its type (a1, c1), a retry (a2), no task id (x1)
    for q in ("a1", "c1", "a2", "a3", "x1"):
        assert q not in j.query_ids


def test_outcome_asks_for_what_worked() -> None:
    j = judge_mode(HISTORY, "outcome")
    assert j.query_ids == ("a3",)  # a2 had only a failed run before it; a3 has a successful one (a2)
    # the earlier success of its task is 2; its earlier failure and other refunds that succeeded are 1
    assert j.grades("a3") == {"b1": 1, "a1": 1, "a2": 2}
    assert "d1" not in j.grades("a3")  # a partial run is no success


def test_explicit_labels_and_unknown_modes() -> None:
    labelled = [E("t1", "T", "x", None, 0, "success"), E("q", "T", "x", frozenset({"t1"}), 1, "success")]
    assert judge_mode(labelled, "repeat").query_ids == ("q",)
    for mode in ("transfer", "outcome"):  # explicit relevance labels (LoCoMo) have no task to transfer from
        assert judge_mode(labelled, mode).query_ids == ()
    with pytest.raises(ValueError, match="unknown judging mode 'bogus'"):
        judge_mode(HISTORY, "bogus")
    assert MODES == ("repeat", "transfer", "outcome")
