"""The pure rerank on tiny hand-computed fixtures."""

from __future__ import annotations

import numpy as np
import pytest

from hindsight_lab.retrieve.params import ParamBatch, RerankParams
from hindsight_lab.retrieve.features import recency
from hindsight_lab.retrieve.rerank import COLUMNS, PENALTY, TERMS, rerank, rerank_many

W = dict(semantic=0.2, lexical=0.0, task_type=0.3, confidence=0.3, recency=0.1, redundancy=0.1)


def P(weights: dict[str, float] = W, **kw: float) -> RerankParams:
    """Parameters with the weights given by name, 0 for any other term (no score floor unless given)."""
    return RerankParams({n: weights.get(n, 0.0) for n in TERMS + (PENALTY,)}, **kw)


def named(*rows: dict[str, float]) -> np.ndarray:
    """Feature rows given by term name, 0 for any other term."""
    return np.array([[r.get(n, 0.0) for n in TERMS] for r in rows]).reshape(len(rows), len(TERMS))


def f(*rows: list[float]) -> np.ndarray:
    """Feature rows written as (semantic, task_type, confidence, recency), with a lexical feature of 0."""
    return named(*(dict(semantic=r[0], task_type=r[1], confidence=r[2], recency=r[3]) for r in rows))


def test_weighted_sum_by_hand():
    feats = f([0.5, 0.0, 0.9, 1.0],    # 0.1 + 0 + 0.27 + 0.1 = 0.47
              [0.9, 1.0, 0.5, 0.5])    # 0.18 + 0.3 + 0.15 + 0.05 = 0.68
    res = rerank(feats, np.eye(2), P(), top_k=2)
    assert res.order == [1, 0]
    assert res.terms[:, COLUMNS.index("total")] == pytest.approx([0.68, 0.47])
    assert res.terms[0, :len(TERMS)] == pytest.approx(feats[1])


def test_lexical_term_can_outrank_semantic():
    feats = named(dict(semantic=0.6, lexical=0.1, confidence=0.5, recency=1.0),  # a paraphrase: few shared words
                  dict(semantic=0.5, lexical=1.0, confidence=0.5, recency=1.0))  # shares the rare words of the query
    assert rerank(feats, np.eye(2), P(), top_k=2).order == [0, 1]  # lexical weight 0: meaning wins
    res = rerank(feats, np.eye(2), P(dict(semantic=0.5, lexical=0.3)), top_k=2)
    assert res.order == [1, 0]
    assert res.terms[:, COLUMNS.index("total")] == pytest.approx([0.55, 0.33])


def test_redundancy_penalty_is_greedy():
    feats = f([0.9, 1, 0.8, 1.0], [0.89, 1, 0.8, 1.0], [0.6, 1, 0.8, 1.0])
    sim = np.array([[1.0, 0.99, 0.1], [0.99, 1.0, 0.1], [0.1, 0.1, 1.0]])
    res = rerank(feats, sim, P(W | dict(redundancy=0.5)), top_k=2)
    # item 1 is nearly a copy of item 0: 0.858 - 0.5*0.99 < 0.80 - 0.5*0.1
    assert res.order == [0, 2]
    assert res.terms[1, COLUMNS.index("redundancy")] == pytest.approx(0.1)
    # negative control: without the penalty the near-copy wins the second slot
    assert rerank(feats, sim, P(W | dict(redundancy=0.0)), top_k=2).order == [0, 1]


def test_forced_candidates_keep_their_place_and_min_score():
    feats = f([0.9, 1, 0.9, 1.0], [0.8, 1, 0.9, 1.0], [0.7, 1, 0.9, 1.0], [0.0, 0, 0.1, 0.0])
    forced = np.array([False, False, False, True])
    res = rerank(feats, np.eye(4), P(max_triggered=2), top_k=2, forced=forced)
    assert res.order == [0, 3]  # the forced one takes the last slot, sorted by its (low) total
    assert 3 not in rerank(feats, np.eye(4), P(), top_k=2).order  # negative control
    assert rerank(feats, np.eye(4), P(max_triggered=0), top_k=2, forced=forced).order == [0, 1]
    # min_score drops weak candidates but never a forced one
    res = rerank(feats, np.eye(4), P(min_score=0.7, max_triggered=1), top_k=4, forced=forced)
    assert set(res.order) == {0, 1, 2, 3}
    assert rerank(feats, np.eye(4), P(min_score=0.7), top_k=4).order == [0, 1, 2]
    assert rerank(feats, np.eye(4), P(min_score=0.9), top_k=4).order == []


def test_empty_and_recency():
    assert rerank(np.zeros((0, len(TERMS))), np.zeros((0, 0)), P(), top_k=5).order == []
    assert recency(np.array([0.0, 14.0, 28.0, -3.0]), 14.0) == pytest.approx([1.0, 0.5, 0.25, 1.0])


def test_min_relative_stops_early_but_keeps_forced():
    feats = f([0.9, 1, 0.9, 1.0], [0.5, 0, 0.5, 0.5], [0.45, 0, 0.5, 0.5], [0.0, 0, 0.1, 0.0])
    # totals 0.85, 0.3, 0.29, 0.03
    assert rerank(feats, np.eye(4), P(), top_k=4).order == [0, 1, 2, 3]  # negative control: no early stop
    assert rerank(feats, np.eye(4), P(min_relative_score=0.3), top_k=4).order == [0, 1, 2]
    assert rerank(feats, np.eye(4), P(min_relative_score=0.5), top_k=4).order == [0]
    forced = np.array([False, False, False, True])
    early = P(min_relative_score=0.5, max_triggered=1)
    assert rerank(feats, np.eye(4), early, top_k=4, forced=forced).order == [0, 3]


def test_enough_injects_a_sure_first_pick_alone_but_keeps_forced():
    feats = f([0.9, 1, 0.9, 1.0], [0.5, 0, 0.5, 0.5], [0.45, 0, 0.5, 0.5], [0.0, 0, 0.1, 0.0])
    # totals 0.85, 0.3, 0.29, 0.03 (as above)
    assert rerank(feats, np.eye(4), P(enough_score=0.9), top_k=4).order == [0, 1, 2, 3]  # first pick not sure enough
    assert rerank(feats, np.eye(4), P(enough_score=0.8), top_k=4).order == [0]
    forced = np.array([False, False, False, True])
    assert rerank(feats, np.eye(4), P(enough_score=0.5, max_triggered=1), top_k=4, forced=forced).order == [0, 3]
    # per config, in one batch: off, sure, not sure
    batch = rerank_many(feats, np.eye(4), ParamBatch.stack([P(), P(enough_score=0.8), P(enough_score=0.9)]), top_k=4)
    assert batch.count.tolist() == [4, 1, 4]


def test_a_chosen_rule_pushes_out_the_episodes_it_covers_but_not_the_reverse():
    from hindsight_lab.retrieve.search import covered
    from hindsight_lab.types import Kind, MemoryRecord

    check = {"kind": "order", "tools": ["verify_identity", "issue_refund"]}
    rule = MemoryRecord("rule-1", Kind.RULE, "Before issue_refund, call verify_identity.", attrs={"check": check})
    follows = dict(kind=Kind.EPISODE, content="…", attrs={"tools": ["verify_identity", "issue_refund"]})
    records = [rule, MemoryRecord("epis-1", outcome="success", **follows),
               MemoryRecord("epis-2", outcome="failure", **follows)]
    sim = np.maximum(np.eye(3), covered(records))
    weights = dict(semantic=1.0, redundancy=1.0)
    red = COLUMNS.index("redundancy")
    # the rule scores first: the success it covers is pushed below the failure it does not cover
    first = rerank(named(dict(semantic=0.9), dict(semantic=0.8), dict(semantic=0.5)), sim, P(weights), top_k=3)
    assert first.order == [0, 2, 1] and first.terms[2, red] == 1.0
    # the covered success scores first: the rule keeps its place, unpenalised
    second = rerank(named(dict(semantic=0.7), dict(semantic=0.9), dict(semantic=0.5)), sim, P(weights), top_k=3)
    assert second.order == [1, 0, 2] and second.terms[1, red] == 0.0
