"""Per-query ranking metrics on hand-computed fixtures, edge cases, evaluate/aggregate, and cross-checks against
scikit-learn's ndcg_score and an independent set-based re-implementation of MRR / recall / hit / precision."""

from __future__ import annotations

import math
import random

import pytest

from hindsight_lab.metrics.judging import JudgedEpisode, Judgements
from hindsight_lab.metrics.ranking import (
    aggregate,
    evaluate,
    evaluate_run,
    fill_at_k,
    hit_at_k,
    hit_rate,
    mrr,
    ndcg_at_k,
    oracle_hit,
    parse_metric,
    precision_at_k,
    r_precision,
    recall_at_k,
)

L = [0, 2, 1, 2, 0]  # the running fixture: ranks 1..5


# -- hand-computed values -----------------------------------------------------------------------------------------
def test_hit_at_k():
    # first grade 2 is at rank 2
    assert [hit_at_k(L, k) for k in (1, 2, 5, 50)] == [0.0, 1.0, 1.0, 1.0]
    assert hit_at_k([1, 1, 1], 3) == 0.0  # grade 1 is not a hit (binary metrics count grade 2)


def test_precision_at_k():
    # grade-2 hits in the first k: k=1 -> 0, k=2 -> 1, k=4 -> 2, k=10 -> 2
    assert precision_at_k(L, 1) == 0.0
    assert precision_at_k(L, 2) == 0.5       # 1 / 2
    assert precision_at_k(L, 4) == 0.5       # 2 / 4
    assert precision_at_k(L, 10) == 0.2      # 2 / 10: empty slots are misses
    assert precision_at_k(L, 10, over="filled") == 0.4   # 2 / min(10, 5)
    assert precision_at_k(L, 4, over="filled") == 0.5    # list longer than k: same as over k
    with pytest.raises(ValueError, match="over must be"):
        precision_at_k(L, 4, over="slots")


def test_recall_at_k():
    # 3 grade-2 earlier episodes
    assert recall_at_k(L, 1, 3) == 0.0
    assert recall_at_k(L, 2, 3) == pytest.approx(1 / 3)
    assert recall_at_k(L, 5, 3) == pytest.approx(2 / 3)
    # a grade-2 rule at rank 2 credited 2 sources; the grade-2 episode at rank 4 credited 1 -> 3/3
    assert recall_at_k(L, 5, 3, credits=[0, 2, 0, 1, 0]) == 1.0
    assert recall_at_k(L, 3, 3, credits=[0, 2, 0, 1, 0]) == pytest.approx(2 / 3)


def test_recall_errors():
    with pytest.raises(ValueError, match="credited but n_relevant is 1"):
        recall_at_k([2, 2], 2, 1)
    with pytest.raises(ValueError, match="credits has 1 entries"):
        recall_at_k([2, 2], 2, 5, credits=[1])
    with pytest.raises(ValueError, match="n_relevant must be"):
        recall_at_k([2], 1, -1)


def test_mrr():
    assert mrr(L) == 0.5                  # first grade 2 at rank 2
    assert mrr([0, 0, 0, 2]) == 0.25
    assert mrr([0, 0, 0, 2], k=3) == 0.0
    assert mrr([1, 1]) == 0.0


def test_ndcg_at_k_hand_computed():
    ideal = [2, 2, 2, 1, 0, 0]            # earlier-episode grades: 3 twos and a one
    # DCG@3 of L = 0/log2(2) + 2/log2(3) + 1/log2(4) = 1.26186 + 0.5 = 1.76186
    # IDCG@3     = 2/1 + 2/log2(3) + 2/2 = 2 + 1.26186 + 1 = 4.26186
    assert ndcg_at_k(L, 3, ideal) == pytest.approx(1.761859507 / 4.261859507)
    # DCG@5 = 1.76186 + 2/log2(5) + 0 = 1.76186 + 0.86135 = 2.62321
    # IDCG@5 = 4.26186 + 1/log2(5) + 0 = 4.26186 + 0.43068 = 4.69254
    assert ndcg_at_k(L, 5, ideal) == pytest.approx(2.623212 / 4.692536, rel=1e-6)
    assert ndcg_at_k([2, 2, 2, 1], 4, ideal) == pytest.approx(1.0)
    # the ideal is whatever any system stored: a perfect-but-short list is not 1
    # DCG = 2, IDCG@3 = 4.26186
    assert ndcg_at_k([2], 3, ideal) == pytest.approx(2 / 4.261859507)


def test_ndcg_edge_cases():
    assert ndcg_at_k([], 5, [2, 1]) == 0.0
    assert ndcg_at_k([2, 1], 5, []) == 0.0          # no relevant earlier episode
    assert ndcg_at_k([0, 0], 5, [0, 0, 0]) == 0.0
    # k larger than both lists: DCG = 2 + 1/log2 3; IDCG the same
    assert ndcg_at_k([2, 1], 50, [1, 2]) == pytest.approx(1.0)


def test_fill_at_k():
    assert fill_at_k(L, 3) == 3.0
    assert fill_at_k(L, 10) == 5.0
    assert fill_at_k([], 10) == 0.0


def test_r_precision():
    # n = 5 in store -> first min(3, 5) = 3 slots: [0, 2, 1] -> 1/3
    assert r_precision(L, 5) == pytest.approx(1 / 3)
    # n = 2 -> first 2 slots [0, 2] -> 1/2
    assert r_precision(L, 2) == 0.5
    assert r_precision(L, 0) == 0.0
    assert r_precision([], 3) == 0.0
    # cap parameter: first min(4, 9) = 4 slots [0, 2, 1, 2] -> 2/4
    assert r_precision(L, 9, cap=4) == 0.5


@pytest.mark.parametrize("fn", [lambda k: hit_at_k(L, k), lambda k: precision_at_k(L, k),
                                lambda k: recall_at_k(L, k, 3), lambda k: ndcg_at_k(L, k, [2]),
                                lambda k: fill_at_k(L, k), lambda k: mrr(L, k)])
@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_bad_k_rejected(fn, k):
    with pytest.raises(ValueError, match="k must be a positive int"):
        fn(k)


def test_empty_list_scores_zero_everywhere():
    assert (hit_at_k([], 3), precision_at_k([], 3), recall_at_k([], 3, 2), mrr([]), fill_at_k([], 3)) == \
        (0.0, 0.0, 0.0, 0.0, 0.0)


def test_hit_rate_micro_average():
    # relevant = grade >= 1: a -> 1 of 2, b -> 3 of 3, c -> 0 of 1; d, e injected nothing
    hr = hit_rate({"a": [2, 0], "b": [1, 2, 1], "c": [0], "d": [], "e": []})
    assert hr.rate == pytest.approx(4 / 6)    # micro: (1 + 3 + 0) / (2 + 3 + 1), not mean(1/2, 1, 0) = 0.5
    assert (hr.relevant, hr.injected, hr.queries, hr.empty_queries) == (4, 6, 3, 2)
    nothing = hit_rate({"a": [], "b": []})
    assert (nothing.rate, nothing.queries, nothing.empty_queries) == (0.0, 0, 2)


def test_oracle_hit():
    assert oracle_hit(True) == 1.0 and oracle_hit(False) == 0.0


# -- names, evaluate, aggregate -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name, parsed", [("ndcg@5", ("ndcg", 5)), ("HIT@3", ("hit", 3)), ("mrr", ("mrr", None)),
                                          ("mrr@10", ("mrr", 10)), ("r_precision", ("r_precision", None)),
                                          ("precision_filled@5", ("precision_filled", 5))])
def test_parse_metric(name, parsed):
    assert parse_metric(name) == parsed


@pytest.mark.parametrize("name, match", [("ndcg", "needs a cutoff"), ("map@5", "unknown metric"),
                                         ("hit@0", "cutoff must be"), ("hit@x", "unknown metric")])
def test_parse_metric_errors(name, match):
    with pytest.raises(ValueError, match=match):
        parse_metric(name)


def test_evaluate_per_query_then_aggregate():
    runs = {"q1": [0, 2, 1], "q2": [2]}          # q3 returned nothing: scored as an empty list
    ideals = {"q1": [2, 2, 1], "q2": [2], "q3": [2, 1]}
    n_rel = {"q1": 2, "q2": 1, "q3": 1}
    per_q = evaluate(runs, ideals, n_rel, ["hit@1", "recall@3", "mrr", "precision@2", "precision_filled@2",
                                           "fill@2", "ndcg@1", "r_precision"],
                     n_store_relevant={"q1": 1, "q2": 4, "q3": 0})
    assert per_q["hit@1"] == {"q1": 0.0, "q2": 1.0, "q3": 0.0}
    assert per_q["recall@3"] == {"q1": 0.5, "q2": 1.0, "q3": 0.0}
    assert per_q["mrr"] == {"q1": 0.5, "q2": 1.0, "q3": 0.0}
    assert per_q["precision@2"] == {"q1": 0.5, "q2": 0.5, "q3": 0.0}
    assert per_q["precision_filled@2"] == {"q1": 0.5, "q2": 1.0, "q3": 0.0}
    assert per_q["fill@2"] == {"q1": 2.0, "q2": 1.0, "q3": 0.0}
    assert per_q["ndcg@1"] == {"q1": 0.0, "q2": 1.0, "q3": 0.0}
    # r_precision: q1 first min(3,1)=1 slot [0] -> 0; q2 first min(3,4)=3 slots, only [2] filled -> 1/3;
    # q3 n=0 -> 0
    assert per_q["r_precision"] == {"q1": 0.0, "q2": pytest.approx(1 / 3), "q3": 0.0}
    agg = aggregate(per_q)
    assert agg["mrr"] == pytest.approx(0.5)         # (0.5 + 1 + 0) / 3
    assert agg["recall@3"] == pytest.approx(0.5)    # (0.5 + 1 + 0) / 3
    assert agg["fill@2"] == pytest.approx(1.0)      # (2 + 1 + 0) / 3


def test_evaluate_uses_credits_for_recall():
    per_q = evaluate({"q": [2, 0]}, None, {"q": 4}, ["recall@2"], credits={"q": [3, 0]})
    assert per_q == {"recall@2": {"q": 0.75}}


def test_evaluate_errors():
    with pytest.raises(ValueError, match="have no judgements"):
        evaluate({"zz": [2]}, {}, {"q": 1}, ["hit@1"])
    with pytest.raises(ValueError, match="needs the ideal grades"):
        evaluate({"q": [2]}, None, {"q": 1}, ["ndcg@5"])
    with pytest.raises(ValueError, match="n_store_relevant"):
        evaluate({"q": [2]}, None, {"q": 1}, ["r_precision"])


def test_aggregate_errors():
    with pytest.raises(ValueError, match="empty query set"):
        aggregate({"hit@1": {}})
    with pytest.raises(ValueError, match="NaN for query 'q2'"):
        aggregate({"hit@1": {"q1": 1.0, "q2": float("nan")}})


def test_evaluate_run_dict_of_dicts():
    qrels = {"q1": {"a": 2, "b": 1, "c": 2}, "q2": {"a": 1}}   # q2 has no grade 2: not a query
    run = {"q1": {"b": 0.9, "a": 0.5, "x": 0.5, "c": 0.1}, "q2": {"a": 1.0}}
    # ranked: b (1), a (2; ties by id: a < x), x (0), c (2)
    per_q = evaluate_run(qrels, run, ["mrr", "recall@2", "ndcg@2"])
    assert set(per_q["mrr"]) == {"q1"}
    assert per_q["mrr"]["q1"] == 0.5
    assert per_q["recall@2"]["q1"] == 0.5
    # DCG@2 = 1 + 2/log2 3 = 2.26186; IDCG@2 = 2 + 2/log2 3 = 3.26186
    assert per_q["ndcg@2"]["q1"] == pytest.approx(2.261859507 / 3.261859507)


# -- judged lists are never better than the ideal --------------------------------------------------------------------
def test_judged_lists_never_exceed_the_ideal():
    # property: with crediting, any returned list of episodes and derived records has ndcg <= 1 and recall <= 1
    rng = random.Random(11)
    eps = [JudgedEpisode(f"e{i}", rng.choice(["t1", "t2", "t3", None]), rng.choice(["x", "y", None]), None, i)
           for i in range(30)]
    j = Judgements.from_episodes(eps)
    ids = [e.episode_id for e in eps]
    for q in j.query_ids:
        earlier = ids[:ids.index(q)]
        for _ in range(30):
            returned = [(f"m{n}", tuple(rng.choice(earlier) for _ in range(rng.choice([1, 1, 2, 3]))))
                        for n in range(rng.randint(0, 12))]
            jl = j.judge_list(q, returned)
            for k in (1, 3, 5, 10):
                assert ndcg_at_k(list(jl.grades), k, j.ideal(q, k)) <= 1 + 1e-12
                assert recall_at_k(list(jl.grades), k, j.n_relevant(q), jl.relevant_credits) <= 1


# -- cross-checks against independent implementations ---------------------------------------------------------------
def test_ndcg_matches_sklearn_ndcg_score():
    # sklearn's ideal is the best k of the SAME row's true relevances; passing the full candidate set (every
    # earlier episode, ranked by the system's scores) makes it equal to DESIGN's ideal. sklearn's gain is linear
    # in the relevance (not 2**rel - 1) and its discount is 1/log2(rank + 1), as here.
    np = pytest.importorskip("numpy")
    ndcg_score = pytest.importorskip("sklearn.metrics").ndcg_score
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(200):
        n = int(rng.integers(2, 25))
        true = rng.choice([0, 1, 2], size=n, p=[0.6, 0.25, 0.15])
        if true.sum() == 0:
            continue
        scores = rng.permutation(n).astype(float)       # distinct scores: no tie averaging in sklearn
        ranked = true[np.argsort(-scores)].tolist()
        for k in (1, 3, 5, 10, 30):
            ours = ndcg_at_k(ranked, k, true.tolist())
            theirs = ndcg_score(true[None, :], scores[None, :], k=k)
            assert ours == pytest.approx(theirs, abs=1e-12)
            checked += 1
    assert checked > 500


def _ref_binary(ranked_ids: list[str], relevant: set[str], k: int) -> dict[str, float]:
    """Textbook set-based definitions on ids, written independently of the grade-list code."""
    top = ranked_ids[:k]
    found = set(top) & relevant
    first = next((i for i, m in enumerate(ranked_ids) if m in relevant), None)
    return {"hit": float(bool(found)), "precision": len(found) / k,
            "recall": len(found) / len(relevant) if relevant else 0.0,
            "mrr": 0.0 if first is None else 1.0 / (first + 1)}


def test_binary_metrics_match_set_based_reimplementation():
    rng = random.Random(5)
    for _ in range(300):
        pool = [f"m{i}" for i in range(rng.randint(1, 20))]
        relevant = set(rng.sample(pool, rng.randint(0, len(pool))))
        ranked = rng.sample(pool, rng.randint(0, len(pool)))
        grades = [2 if m in relevant else rng.choice([0, 1]) for m in ranked]
        for k in (1, 2, 5, 10):
            ref = _ref_binary(ranked, relevant, k)
            assert hit_at_k(grades, k) == ref["hit"]
            assert precision_at_k(grades, k) == pytest.approx(ref["precision"])
            assert recall_at_k(grades, k, len(relevant)) == pytest.approx(ref["recall"])
        assert mrr(grades) == pytest.approx(_ref_binary(ranked, relevant, 1)["mrr"])


def test_ndcg_doc_formula_by_hand_loop():
    # one more independent check: explicit loop with math.log2
    grades, ideal, k = [1, 0, 2, 2], [2, 2, 2, 1, 1], 4
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(grades[:k]))
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(ideal, reverse=True)[:k]))
    assert ndcg_at_k(grades, k, ideal) == pytest.approx(dcg / idcg)
