"""The weighted rerank (DESIGN §3) as one pure function, shared by ``search`` and the sweep's cached evaluator.

    score_i = w1·semantic_i + w2·lexical_i + w3·task_type_i + w4·confidence_i + w5·recency_i − w6·redundancy_i

``redundancy_i`` is the highest similarity of candidate i to a candidate already selected (greedy, MMR-style), so
the score of a candidate depends on what was picked before it. Triggered rules (``forced``) are guaranteed a place,
up to ``max_forced``, whatever their score.

Examples:
    >>> import numpy as np
    >>> feats = np.array([[0.9, 0.5, 1, 0.5, 1.0], [0.8, 1.0, 0, 0.5, 1.0]])
    >>> res = rerank(feats, np.eye(2), (0.2, 0.2, 0.3, 0.3, 0.1, 0.1), top_k=2)
    >>> res.order, round(float(res.terms[0, -1]), 3)
    ([0, 1], 0.83)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: Column order of the feature matrix and of the weight vector's first five entries.
FEATURES: tuple[str, ...] = ("semantic", "lexical", "task_type", "confidence", "recency")
#: Column order of :attr:`RerankResult.terms`.
TERMS: tuple[str, ...] = FEATURES + ("redundancy", "total")


@dataclass(frozen=True, slots=True)
class RerankResult:
    """``order``: selected candidate indices, best first. ``terms``: one row per selected candidate with the raw
    features, the redundancy at selection time, and the total score (columns :data:`TERMS`)."""

    order: list[int]
    terms: np.ndarray


def recency(age_days: np.ndarray | float, half_life_days: float) -> np.ndarray:
    """``0.5 ** (age / half_life)``, with negative ages (clock skew) treated as 0."""
    return np.power(0.5, np.maximum(np.asarray(age_days, dtype=np.float64), 0.0) / half_life_days)


def rerank(features: np.ndarray, similarity: np.ndarray, weights: Sequence[float], *, top_k: int,
           min_score: float = float("-inf"), forced: np.ndarray | None = None, max_forced: int = 0,
           min_relative: float = 0.0) -> RerankResult:
    """Greedy weighted rerank with a redundancy penalty and guaranteed places for forced candidates.

    Args:
        features: ``(n, 5)`` matrix, columns :data:`FEATURES`, each already in [0, 1].
        similarity: ``(n, n)`` pairwise cosine similarity of the candidates (negative values count as 0).
        weights: ``(w1, …, w6)``: one per feature, then the redundancy penalty.
        top_k: most candidates selected.
        min_score: candidates whose total (after redundancy) falls below it are not selected, unless forced.
        forced: boolean mask of candidates guaranteed a place (triggered rules).
        max_forced: how many forced candidates are guaranteed at most (best base score first).
        min_relative: early stop — once something is selected, candidates whose total falls below this fraction of
            the first selected total are not selected, unless forced (0 turns it off).

    Returns:
        The selection sorted by total score (descending, stable), with per-term rows.
    """
    feats = np.asarray(features, dtype=np.float64).reshape(-1, len(FEATURES))
    n = feats.shape[0]
    w = np.asarray(weights, dtype=np.float64)
    if n == 0 or top_k <= 0:
        return RerankResult([], np.zeros((0, len(TERMS))))
    nf = len(FEATURES)
    base = feats @ w[:nf]
    sim = np.clip(np.asarray(similarity, dtype=np.float64).reshape(n, n), 0.0, None)
    must = np.zeros(n, dtype=bool)
    if forced is not None and max_forced > 0:
        forced_idx = np.flatnonzero(np.asarray(forced, dtype=bool))
        forced_idx = forced_idx[np.argsort(-base[forced_idx], kind="stable")][:max_forced]
        must[forced_idx] = True

    redundancy = np.zeros(n)
    available = np.ones(n, dtype=bool)
    picked: list[tuple[int, float, float]] = []
    while len(picked) < top_k and available.any():
        adjusted = base - w[nf] * redundancy
        must_left = must & available
        if top_k - len(picked) <= must_left.sum():
            pool = must_left  # the remaining slots belong to the forced candidates
        else:
            floor = max(min_score, min_relative * picked[0][2]) if picked and min_relative > 0 else min_score
            pool = available & ((adjusted >= floor) | must)
        if not pool.any():
            break
        cand = np.flatnonzero(pool)
        best = int(cand[np.argmax(adjusted[cand])])  # argmax: first of ties, i.e. input order
        picked.append((best, float(redundancy[best]), float(adjusted[best])))
        available[best] = False
        redundancy = np.maximum(redundancy, sim[best])

    picked.sort(key=lambda p: -p[2])  # stable: greedy order among equal totals
    order = [p[0] for p in picked]
    terms = np.column_stack([feats[order], [p[1] for p in picked], [p[2] for p in picked]]) if order \
        else np.zeros((0, len(TERMS)))
    return RerankResult(order, terms)
