"""The weighted rerank (DESIGN §3) as one pure function, shared by ``search`` and the sweep's cached evaluator.

    score_i = Σ_t w_t·feature_t,i − w_redundancy·redundancy_i,   t over :data:`TERMS`

with the terms ``semantic``, ``lexical``, ``task_type``, ``task_type_p``, ``confidence``, ``recency``, ``episode``
and ``fused`` (each in [0, 1], computed by
:mod:`~hindsight_lab.retrieve.features`) and the weights of ``retrieval.weights``, under the same names.
``redundancy_i`` is the highest similarity of candidate i to a candidate already selected (greedy, MMR-style), so
the score of a candidate depends on what was picked before it. Triggered rules (``forced``) are guaranteed a place,
up to ``max_triggered``, whatever their score.

:func:`rerank_many` runs the greedy selection for many configs at once, vectorised over configs; :func:`rerank` is
the one-config view ``search`` uses. Both are the same code, so a config scored by the sweep's evaluator selects
exactly what ``search`` would. A new term is a name here, a weight in the config and a feature in
:mod:`~hindsight_lab.retrieve.features`.

Examples:
    >>> import numpy as np
    >>> from hindsight_lab.retrieve.params import ParamBatch, RerankParams
    >>> feats = np.array([[0.9, 0.5, 1, 0, 0.5, 1.0, 1, 1], [0.8, 1.0, 0, 0, 0.5, 1.0, 1, 1]])  # columns: TERMS
    >>> w = dict(semantic=0.2, lexical=0.2, task_type=0.3, task_type_p=0, confidence=0.3, recency=0.1, episode=0,
    ...          fused=0, redundancy=0.1)
    >>> res = rerank(feats, np.eye(2), RerankParams(w), top_k=2)
    >>> res.order, round(float(res.terms[0, COLUMNS.index("total")]), 3)
    ([0, 1], 0.83)
    >>> lexical_only = dict.fromkeys(w, 0.0) | {"lexical": 1.0}
    >>> many = rerank_many(feats, np.eye(2), ParamBatch.stack([RerankParams(w), RerankParams(lexical_only)]), top_k=1)
    >>> many.order.tolist()
    [[0], [1]]
"""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np

from .features import FEATURES
from .params import ParamBatch, RerankParams

#: The weighted terms, each the name of a feature and of its weight: the features of
#: :data:`~hindsight_lab.retrieve.features.FEATURES`, in their order (a term is defined there, and weighted by
#: ``retrieval.weights.<name>``: nothing else names it).
TERMS: tuple[str, ...] = tuple(FEATURES)
#: The penalty's name (its weight is ``retrieval.weights.redundancy``).
PENALTY = "redundancy"
#: Column order of :attr:`RerankResult.terms` and of a hit's :class:`~hindsight_lab.types.ScoreTerms`.
COLUMNS: tuple[str, ...] = TERMS + (PENALTY, "total")


@dataclass(frozen=True, slots=True)
class RerankResult:
    """``order``: selected candidate indices, best first. ``terms``: one row per selected candidate with the raw
    features, the redundancy at selection time, and the total score (columns :data:`COLUMNS`)."""

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


def base_scores(features: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``(C, n)`` weighted feature sums, column by column in :data:`TERMS` order (so one config and a row of many
    give bit-identical scores). ``features`` is ``(n, T)``, or ``(C, n, T)`` when a feature differs by config;
    ``weights`` is ``(C, T)``."""
    out = features[..., 0] * weights[:, 0:1]
    for j in range(1, len(TERMS)):
        out = out + features[..., j] * weights[:, j:j + 1]
    return np.broadcast_to(out, (weights.shape[0], features.shape[-2])).copy()


def rerank_many(features: np.ndarray, similarity: np.ndarray, params: ParamBatch, *, top_k: int,
                forced: np.ndarray | None = None) -> RerankBatch:
    """Greedy weighted rerank with a redundancy penalty and guaranteed places for forced candidates, for ``C``
    configs at once.

    Args:
        features: ``(n, T)`` matrix, columns :data:`TERMS`, each already in [0, 1]; or ``(C, n, T)``.
        similarity: ``(n, n)`` pairwise cosine similarity of the candidates (negative values count as 0).
        params: the ``C`` configs' parameters, by their config names: the weight of each term and of
            :data:`PENALTY`; ``min_score`` (candidates whose total, after redundancy, falls below it are not
            selected unless forced); ``max_triggered`` (how many forced candidates are guaranteed at most, best base
            score first); ``min_relative_score`` (early stop: once something is selected, candidates whose total
            falls below this fraction of the first selected total are not selected unless forced; 0 is off);
            ``enough_score`` (early stop on a sure first pick: when the first selected total is at least this,
            only forced candidates follow it; ``inf`` is off).
        top_k: most candidates selected.
        forced: ``(n,)`` boolean mask of candidates guaranteed a place (triggered rules).

    Returns:
        Each config's selection sorted by total score (descending, stable: greedy order among equal totals).
    """
    w = params.weight_matrix(TERMS + (PENALTY,))
    penalty = w[:, len(TERMS):]
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
    must = _guaranteed(base, forced, params.max_triggered)
    floor0, rel, sure_at = params.min_score, params.min_relative_score, params.enough_score

    rows = np.arange(c)
    redundancy = np.zeros((c, n))
    available = np.ones((c, n), dtype=bool)
    active = np.ones(c, dtype=bool)
    for step in range(min(k, n)):
        adjusted = base - penalty * redundancy
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


def _guaranteed(base: np.ndarray, forced: np.ndarray | None, cap: np.ndarray) -> np.ndarray:
    """``(C, n)``: the forced candidates each config guarantees a place, at most ``cap`` of them, best base first."""
    c, n = base.shape
    must = np.zeros((c, n), dtype=bool)
    if forced is not None:
        forced_idx = np.flatnonzero(np.asarray(forced, dtype=bool))
        if forced_idx.size:
            by_base = np.argsort(-base[:, forced_idx], axis=1, kind="stable")
            rank = np.empty_like(by_base)
            np.put_along_axis(rank, by_base, np.arange(forced_idx.size)[None, :].repeat(c, 0), axis=1)
            must[:, forced_idx] = rank < np.asarray(cap, dtype=np.int64)[:, None]
    return must


def rerank(features: np.ndarray, similarity: np.ndarray, params: RerankParams, *, top_k: int,
           forced: np.ndarray | None = None) -> RerankResult:
    """One config of :func:`rerank_many`, with per-term rows.

    Returns:
        The selection sorted by total score (descending, stable), with the raw features, the redundancy at
        selection time and the total of each selected candidate (columns :data:`COLUMNS`).
    """
    feats = np.asarray(features, dtype=np.float64).reshape(-1, len(TERMS))
    batch = rerank_many(feats, similarity, ParamBatch.of(params), top_k=top_k, forced=forced)
    n = int(batch.count[0])
    order = [int(i) for i in batch.order[0, :n]]
    terms = np.column_stack([feats[order], batch.redundancy[0, :n], batch.total[0, :n]]) if order \
        else np.zeros((0, len(COLUMNS)))
    return RerankResult(order, terms)
