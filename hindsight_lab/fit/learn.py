"""The learner: rerank weights fitted by pairwise logistic regression (scikit-learn), weighted as LambdaRank weighs
pairs.

For each query, every pair of candidates with different grades is a training example: the difference of their
feature rows, labelled by which is better (RankNet's pairwise logistic loss, Burges et al. 2005, with a linear
model: the rerank's own weighted sum). Each pair is weighted by how much swapping the two would change the query's
nDCG@k under a reference ranking (LambdaRank's ``|ΔNDCG|``, Burges et al. 2006), so pairs at the top of a list count
more than pairs at its bottom, and every (dataset, judging mode) carries the same total weight, so a large replay or
a mode with many queries does not decide for the others.

The rerank's weights are non-negative (a term is a reason to rank a record higher, DESIGN §3): a term whose
coefficient comes out negative is dropped and the model refitted without it, until every coefficient is positive
(backward elimination). The weights are scaled so the largest is 1.

Examples:
    >>> from hindsight_lab.fit.table import RankQuery
    >>> from hindsight_lab.retrieve.rerank import TERMS
    >>> rng = np.random.default_rng(0)
    >>> qs = []
    >>> for i in range(40):                                  # grade follows the second term (lexical)
    ...     f = rng.uniform(size=(6, len(TERMS)))
    ...     qs.append(RankQuery("d", "repeat", f"q{i}", f"d:{i}", f, (f[:, 1] > 0.6).astype(float)))
    >>> w = PairwiseRanker().fit(qs).weights_
    >>> max(w, key=w.get)
    'lexical'
"""

from __future__ import annotations

from collections import defaultdict
from typing import Mapping, Sequence

import numpy as np

from ..retrieve.rerank import TERMS
from .table import RankQuery

__all__ = ["PairwiseRanker", "pair_design"]


def _positions(scores: np.ndarray) -> np.ndarray:
    """0-based rank of each candidate under ``scores`` (best first, ties in input order)."""
    pos = np.empty(len(scores), dtype=np.int64)
    pos[np.argsort(-scores, kind="stable")] = np.arange(len(scores))
    return pos


def pair_design(queries: Sequence[RankQuery], reference: np.ndarray, *, k: int = 5
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X, y, w)``: for each informative query, each pair of candidates of different grades, both ways round (the
    difference of their rows, label 1 when the first is better), weighted by ``|Δgain · Δdiscount| / IDCG@k`` under
    the ranking ``reference`` (``(T,)`` weights) gives, every (dataset, mode) normalised to the same total."""
    rows: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    units: list[tuple[str, str]] = []
    for q in queries:
        if not q.informative:
            continue
        g = q.grades
        disc = 1.0 / np.log2(_positions(q.features @ reference) + 2.0)
        ideal = np.sort(g)[::-1][:k]
        idcg = float((ideal / np.log2(np.arange(2, len(ideal) + 2))).sum()) or 1.0
        hi, lo = np.nonzero(g[:, None] > g[None, :])
        rows.append(q.features[hi] - q.features[lo])
        weights.append(np.abs((g[hi] - g[lo]) * (disc[hi] - disc[lo])) / idcg)
        units.extend([(q.dataset, q.mode)] * len(hi))
    if not rows:
        return np.zeros((0, len(TERMS))), np.zeros(0), np.zeros(0)
    x, w = np.vstack(rows), np.concatenate(weights)
    total: dict[tuple[str, str], float] = defaultdict(float)
    for unit, wi in zip(units, w):
        total[unit] += wi
    w = w / np.array([total[u] or 1.0 for u in units]) / len(total)
    return np.vstack([x, -x]), np.concatenate([np.ones(len(x)), np.zeros(len(x))]), np.concatenate([w, w])


class PairwiseRanker:
    """Rerank weights from judged candidates (module docstring).

    Args:
        reference: the weights of the ranking the pair weights are read under (default: equal weights).
        C: inverse regularisation strength of the logistic regression.
        k: the depth of the nDCG the pair weights aim at.
        terms: the terms that may get a weight (the others stay 0).
    """

    def __init__(self, reference: Mapping[str, float] | None = None, C: float = 1.0, k: int = 5,
                 terms: Sequence[str] = TERMS) -> None:
        self.reference = reference
        self.C = C
        self.k = k
        self.terms = terms

    def fit(self, queries: Sequence[RankQuery]) -> "PairwiseRanker":
        from sklearn.linear_model import LogisticRegression

        ref = np.array([float((self.reference or {}).get(t, 1.0)) for t in TERMS])
        x, y, w = pair_design(queries, ref, k=self.k)
        if not len(y):
            raise ValueError("fit: no query has candidates of different grades to learn an order from")
        cols = [TERMS.index(t) for t in self.terms]
        coef = np.zeros(len(TERMS))
        while cols:
            model = LogisticRegression(fit_intercept=False, C=self.C, max_iter=5000)
            model.fit(x[:, cols], y, sample_weight=w / w.mean())
            c = model.coef_[0]
            if (c > 0).all():
                coef[cols] = c
                break
            cols = [col for col, v in zip(cols, c) if v > 0]
        if not coef.any():
            raise ValueError("fit: no term predicts a better candidate (every coefficient came out negative)")
        self.coef_ = coef
        self.weights_ = {t: float(v / coef.max()) for t, v in zip(TERMS, coef)}
        return self
