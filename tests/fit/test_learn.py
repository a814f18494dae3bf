"""The fit's learner and table: weights recovered from planted signals, non-negative by elimination, and grades read
from the judgements as a replay would read them."""

from __future__ import annotations

import numpy as np
import pytest

from hindsight_lab.fit.learn import PairwiseRanker, pair_design
from hindsight_lab.fit.run import weighted_config
from hindsight_lab.fit.table import RankQuery
from hindsight_lab.config import LabConfig
from hindsight_lab.retrieve.rerank import TERMS

LEX, SEM, REC = TERMS.index("lexical"), TERMS.index("semantic"), TERMS.index("recency")


def _queries(rule, n: int = 60, seed: int = 0, dataset: str = "d", mode: str = "repeat") -> list[RankQuery]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        f = rng.uniform(size=(8, len(TERMS)))
        out.append(RankQuery(dataset, mode, f"{dataset}{i}", f"{dataset}:{i}", f, rule(f)))
    return out


def test_the_term_that_decides_the_grade_gets_the_largest_weight() -> None:
    w = PairwiseRanker().fit(_queries(lambda f: (f[:, LEX] > 0.5).astype(float) * 2)).weights_
    assert max(w, key=w.get) == "lexical" and w["lexical"] == 1.0
    assert all(v < 0.3 for t, v in w.items() if t != "lexical")  # negative control: noise terms stay small


def test_a_term_that_predicts_a_worse_candidate_is_dropped_not_given_a_negative_weight() -> None:
    # grade rises with semantic and falls with recency: recency's coefficient would be negative
    w = PairwiseRanker().fit(_queries(lambda f: np.round(2 * np.clip(f[:, SEM] - f[:, REC] + 0.5, 0, 1)))).weights_
    assert w["recency"] == 0.0 and w["semantic"] == 1.0 and min(w.values()) >= 0


def test_each_dataset_and_mode_weighs_alike_whatever_its_size() -> None:
    big = _queries(lambda f: (f[:, LEX] > 0.5).astype(float), n=200, dataset="big")
    small = _queries(lambda f: (f[:, SEM] > 0.5).astype(float), n=20, dataset="small", seed=1)
    x, y, w = pair_design(big + small, np.ones(len(TERMS)))
    n_big = sum(len(np.nonzero(q.grades[:, None] > q.grades[None, :])[0]) for q in big if q.informative)
    half = len(w) // 2
    assert w[:n_big].sum() == pytest.approx(w[n_big:half].sum())  # 200 queries weigh what 20 do
    weights = PairwiseRanker().fit(big + small).weights_
    assert weights["semantic"] > 0.5 and weights["lexical"] > 0.5  # both signals survive


def test_queries_that_teach_no_order_are_refused() -> None:
    flat = [RankQuery("d", "repeat", "q", "d:q", np.ones((3, len(TERMS))), np.zeros(3))]
    with pytest.raises(ValueError, match="no query has candidates of different grades"):
        PairwiseRanker().fit(flat)


def test_weighted_config_sets_every_term_and_keeps_the_rest() -> None:
    base = LabConfig().with_params({"retrieval.weights.redundancy": 0.3, "retrieval.top_k": 7})
    cfg = weighted_config(base, {"lexical": 1.0, "semantic": 0.25})
    w = cfg.retrieval.weights
    assert (w.lexical, w.semantic, w.task_type, w.redundancy, cfg.retrieval.top_k) == (1.0, 0.25, 0.0, 0.3, 7)
