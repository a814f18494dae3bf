"""The weighted rerank (DESIGN §3) as one pure function, shared by ``search`` and the sweep's cached evaluator.

    score_i = w1·semantic_i + w2·lexical_i + w3·task_type_i + w4·confidence_i + w5·recency_i − w6·redundancy_i

``redundancy_i`` is the highest similarity of candidate i to a candidate already selected (greedy, MMR-style), so
the score of a candidate depends on what was picked before it. Triggered rules (``forced``) are guaranteed a place,
up to ``max_forced``, whatever their score.

:func:`rerank_many` runs the greedy selection for many weight vectors (configs) at once, vectorised over configs;
:func:`rerank` is the one-config view ``search`` uses. Both are the same code, so a config scored by the sweep's
evaluator selects exactly what ``search`` would.

Examples:
    >>> import numpy as np
    >>> feats = np.array([[0.9, 0.5, 1, 0.5, 1.0], [0.8, 1.0, 0, 0.5, 1.0]])
    >>> res = rerank(feats, np.eye(2), (0.2, 0.2, 0.3, 0.3, 0.1, 0.1), top_k=2)
    >>> res.order, round(float(res.terms[0, -1]), 3)
    ([0, 1], 0.83)
    >>> many = rerank_many(feats, np.eye(2), [(0.2, 0.2, 0.3, 0.3, 0.1, 0.1), (0, 1, 0, 0, 0, 0)], top_k=1)
    >>> many.order.tolist()
    [[0], [1]]
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


@dataclass(frozen=True, slots=True)
class RerankBatch:
    """The selections of many configs over one candidate set, one row per config, best first.

    ``order``: ``(C, top_k)`` candidate indices, ``-1`` after the last selected one; ``redundancy`` and ``total``:
    the same shape, each selection's redundancy at selection time and total score (0 where ``order`` is -1).
    """

    order: np.ndarray
    redundancy: np.ndarray
    total: np.ndarray

    @property
    def count(self) -> np.ndarray:
        """How many candidates each config selected."""
        return (self.order >= 0).sum(axis=1)


def recency(age_days: np.ndarray | float, half_life_days: float) -> np.ndarray:
    """``0.5 ** (age / half_life)``, with negative ages (clock skew) treated as 0."""
    return np.power(0.5, np.maximum(np.asarray(age_days, dtype=np.float64), 0.0) / half_life_days)


def base_scores(features: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``(C, n)`` weighted feature sums, column by column in :data:`FEATURES` order (so one config and a row of many
    give bit-identical scores). ``features`` is ``(n, 5)``, or ``(C, n, 5)`` when a feature differs by config."""
    out = features[..., 0] * weights[:, 0:1]
    for j in range(1, len(FEATURES)):
        out = out + features[..., j] * weights[:, j:j + 1]
    return np.broadcast_to(out, (weights.shape[0], features.shape[-2])).copy()


def enough_at(score: float | None) -> float:
    """``retrieval.enough_score`` as the rerank's ``enough`` threshold (``inf``: off)."""
    return float("inf") if score is None else float(score)


def _per_config(value: float | Sequence[float] | np.ndarray, c: int, dtype: type = np.float64) -> np.ndarray:
    return np.broadcast_to(np.asarray(value, dtype=dtype), (c,))


def rerank_many(features: np.ndarray, similarity: np.ndarray, weights: np.ndarray | Sequence[Sequence[float]], *,
                top_k: int, min_score: float | np.ndarray = float("-inf"), forced: np.ndarray | None = None,
                max_forced: int | np.ndarray = 0, min_relative: float | np.ndarray = 0.0,
                enough: float | np.ndarray = float("inf")) -> RerankBatch:
    """Greedy weighted rerank with a redundancy penalty and guaranteed places for forced candidates, for ``C``
    configs at once.

    Args:
        features: ``(n, 5)`` matrix, columns :data:`FEATURES`, each already in [0, 1]; or ``(C, n, 5)``.
        similarity: ``(n, n)`` pairwise cosine similarity of the candidates (negative values count as 0).
        weights: ``(C, 6)``: per config, one weight per feature, then the redundancy penalty.
        top_k: most candidates selected.
        min_score: per config (or one for all): candidates whose total (after redundancy) falls below it are not
            selected, unless forced.
        forced: ``(n,)`` boolean mask of candidates guaranteed a place (triggered rules).
        max_forced: per config: how many forced candidates are guaranteed at most (best base score first).
        min_relative: per config: early stop — once something is selected, candidates whose total falls below
            this fraction of the first selected total are not selected, unless forced (0 turns it off).
        enough: per config: early stop on a sure first pick — when the first selected total is at least this,
            nothing else is selected, unless forced (``inf`` turns it off).

    Returns:
        Each config's selection sorted by total score (descending, stable: greedy order among equal totals).
    """
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    nf = len(FEATURES)
    c = w.shape[0]
    feats = np.asarray(features, dtype=np.float64)
    n = feats.shape[-2] if feats.size else 0
    k = max(int(top_k), 0)
    order = np.full((c, k), -1, dtype=np.int64)
    red_at = np.zeros((c, k))
    total = np.zeros((c, k))
    if n == 0 or k == 0:
        return RerankBatch(order, red_at, total)
    base = base_scores(feats, w)
    sim = np.clip(np.asarray(similarity, dtype=np.float64).reshape(n, n), 0.0, None)
    floor0 = _per_config(min_score, c)
    rel = _per_config(min_relative, c)
    sure_at = _per_config(enough, c)
    cap = _per_config(max_forced, c, np.int64)
    must = np.zeros((c, n), dtype=bool)
    if forced is not None:
        forced_idx = np.flatnonzero(np.asarray(forced, dtype=bool))
        if forced_idx.size:
            by_base = np.argsort(-base[:, forced_idx], axis=1, kind="stable")
            rank = np.empty_like(by_base)
            np.put_along_axis(rank, by_base, np.arange(forced_idx.size)[None, :].repeat(c, 0), axis=1)
            must[:, forced_idx] = rank < cap[:, None]

    rows = np.arange(c)
    redundancy = np.zeros((c, n))
    available = np.ones((c, n), dtype=bool)
    active = np.ones(c, dtype=bool)
    for step in range(min(k, n)):
        adjusted = base - w[:, nf:nf + 1] * redundancy
        must_left = must & available
        only_must = (k - step) <= must_left.sum(axis=1)  # the remaining slots belong to the forced candidates
        if step and (rel > 0).any():
            floor = np.where(rel > 0, np.maximum(floor0, rel * total[:, 0]), floor0)
        else:
            floor = floor0
        pool = available & ((adjusted >= floor[:, None]) | must)
        if step:  # the first pick was sure enough: only forced candidates follow it
            pool = np.where((total[:, 0] >= sure_at)[:, None], must_left, pool)
        pool = np.where(only_must[:, None], must_left, pool) & active[:, None]
        active = pool.any(axis=1)
        if not active.any():
            break
        best = np.argmax(np.where(pool, adjusted, -np.inf), axis=1)  # first of ties, i.e. input order
        on = rows[active]
        pick = best[active]
        order[on, step] = pick
        red_at[on, step] = redundancy[on, pick]
        total[on, step] = adjusted[on, pick]
        available[on, pick] = False
        redundancy[on] = np.maximum(redundancy[on], sim[pick])

    ranked = np.argsort(-np.where(order >= 0, total, -np.inf), axis=1, kind="stable")
    return RerankBatch(np.take_along_axis(order, ranked, 1), np.take_along_axis(red_at, ranked, 1),
                       np.take_along_axis(total, ranked, 1))


def rerank(features: np.ndarray, similarity: np.ndarray, weights: Sequence[float], *, top_k: int,
           min_score: float = float("-inf"), forced: np.ndarray | None = None, max_forced: int = 0,
           min_relative: float = 0.0, enough: float = float("inf")) -> RerankResult:
    """One config of :func:`rerank_many` (``weights`` is ``(w1, …, w6)``), with per-term rows.

    Returns:
        The selection sorted by total score (descending, stable), with the raw features, the redundancy at
        selection time and the total of each selected candidate (columns :data:`TERMS`).
    """
    feats = np.asarray(features, dtype=np.float64).reshape(-1, len(FEATURES))
    batch = rerank_many(feats, similarity, np.asarray(weights, dtype=np.float64)[None, :], top_k=top_k,
                        min_score=min_score, forced=forced, max_forced=max_forced, min_relative=min_relative,
                        enough=enough)
    n = int(batch.count[0])
    order = [int(i) for i in batch.order[0, :n]]
    terms = np.column_stack([feats[order], batch.redundancy[0, :n], batch.total[0, :n]]) if order \
        else np.zeros((0, len(TERMS)))
    return RerankResult(order, terms)
