"""Choosing a config that holds on tasks nobody tuned on: cross-validated scores, a selection rule that resists
luck, and how much of a sweep's best gain luck alone would give.

A search over configs scores every candidate on the same judged queries. With a few dozen tasks and hundreds of
candidates the best score is mostly the luckiest, so:

- **Folds by task.** The dev queries are split into ``k`` folds of whole tasks (:func:`task_folds`; a task's retries
  never straddle two folds). A candidate's score is its mean over the folds, with the standard error of that mean
  (:func:`cv_scores`).
- **Better than luck, then one standard error toward the base.** A search of N candidates finds one that beats the
  base by luck alone; :func:`best_of_n_null` says by how much: the per-query differences to the base are
  sign-flipped, one flip per task for every candidate at once (which keeps their correlation), and the best CV gain
  is taken, many times. Its mean is the **optimism** of the best of N, set beside the observed gain; the share of
  flips reaching the observed best gain is a p-value for "the best is better than the base at all" (a max-statistic
  permutation test, Westfall & Young 1993). :func:`select` keeps the base config unless the best gain clears the
  null's ``1 - level`` quantile; then, among the candidates that clear it and are within one standard error of the
  best, it takes the one closest to the base config (the smallest change in the searched space). This is the
  one-standard-error rule of Breiman et al. (1984, CART §3.4.3) with "simplest" read as "closest to what runs
  today", behind a guard for multiplicity: a difference the folds cannot tell from luck is not worth a change, and a
  config is never chosen over the base on a lower score.
- **The procedure, validated.** :func:`selection_holdout` runs the whole rule on ``k - 1`` folds and scores its
  choice on the fold left out, for every fold: an estimate of the gain the exported config will show on new tasks.

The objective is fixed before the search (:class:`Objective`: one metric, or a declared weighted combination).

Examples:
    >>> rng = np.random.default_rng(0)
    >>> tasks = np.repeat(np.arange(20), 3)                    # 20 tasks, 3 judged runs each
    >>> noise = rng.normal(0.5, 0.3, size=(60, 200))           # 200 candidates, none better than the base (0)
    >>> folds = task_folds(tasks, 5)
    >>> select(noise, tasks, folds, base=0, distance=np.arange(200) / 200).index
    0
    >>> planted = noise.copy(); planted[:, 7] += 0.3           # candidate 7 really is better
    >>> select(planted, tasks, folds, base=0, distance=np.arange(200) / 200).index
    7
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np


@dataclass(frozen=True)
class Objective:
    """What a search maximises, fixed before it starts: one metric (``{"ndcg@5": 1.0}``) or a declared weighted
    combination (``{"ndcg@5": 0.7, "transfer.ndcg@5": 0.3}``), each metric's per-query value weighted and summed."""

    weights: Mapping[str, float]
    direction: str = "maximize"

    @classmethod
    def of(cls, metric: str | Mapping[str, float], direction: str = "maximize") -> "Objective":
        return cls({metric: 1.0} if isinstance(metric, str) else dict(metric), direction)

    @property
    def metrics(self) -> tuple[str, ...]:
        return tuple(self.weights)

    @property
    def terms(self) -> list[tuple[str, str, float]]:
        """``(judging mode, metric, weight)`` of each term; a metric named without a mode is ``repeat``'s."""
        out = []
        for name, w in self.weights.items():
            mode, _, metric = name.rpartition(".")
            out.append((mode or "repeat", metric, w))
        return out

    @property
    def name(self) -> str:
        if len(self.weights) == 1 and next(iter(self.weights.values())) == 1.0:
            return next(iter(self.weights))
        return " + ".join(f"{w:g}·{m}" for m, w in self.weights.items())

    def combine(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        """The objective's per-query values (higher is better) from each metric's per-query values."""
        out = sum(w * np.asarray(values[m], dtype=np.float64) for m, w in self.weights.items())
        return out if self.direction == "maximize" else -out


def task_folds(groups: Sequence[str], k: int, seed: int = 0) -> np.ndarray:
    """Fold number of each query: whole groups (tasks, conversations) dealt to ``k`` folds in a seeded order, the
    larger groups first so the folds hold about as many queries.

    Examples:
        >>> f = task_folds(["a", "a", "b", "c", "c", "c"], 2)
        >>> len(set(f[:2])), len(set(f[3:]))  # a group stays in one fold
        (1, 1)
    """
    names = sorted(set(groups))
    if k < 2 or len(names) < k:
        raise ValueError(f"{k} folds need at least {k} groups (tasks); got {len(names)}")
    rng = np.random.default_rng(seed)
    size = {g: 0 for g in names}
    for g in groups:
        size[g] += 1
    order = sorted(rng.permutation(names).tolist(), key=lambda g: -size[g])  # stable: ties keep the shuffle
    load, fold_of = np.zeros(k), {}
    for g in order:
        f = int(np.argmin(load))
        fold_of[g] = f
        load[f] += size[g]
    return np.array([fold_of[g] for g in groups])


def fold_weights(folds: np.ndarray) -> np.ndarray:
    """Each query's weight in its fold's score when a fold's score is its queries' mean: ``1 / n_fold``."""
    folds = np.asarray(folds)
    return 1.0 / np.bincount(folds)[folds]


def cv_scores(per_query: np.ndarray, folds: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """``(C, k)``: each candidate's score per fold, from ``per_query`` values ``(Q, C)``: the weighted sum of its
    fold's values (``weights``: :func:`fold_weights` by default, i.e. the fold's mean; an objective that combines
    metrics over different query sets gives each its share)."""
    values = np.asarray(per_query, dtype=np.float64)
    folds = np.asarray(folds)
    w = fold_weights(folds) if weights is None else np.asarray(weights, dtype=np.float64)
    k = int(folds.max()) + 1
    return np.stack([(w[folds == f, None] * values[folds == f]).sum(axis=0) for f in range(k)], axis=1)


def mean_se(fold_scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean over folds and its standard error (sample standard deviation of the fold means over √k)."""
    k = fold_scores.shape[1]
    return fold_scores.mean(axis=1), fold_scores.std(axis=1, ddof=1) / np.sqrt(k)


@dataclass(frozen=True)
class Selection:
    """The choice among candidates: its index, the base's and the best's, every candidate's CV mean and standard
    error, and what the best of N would gain by luck (``null``: draws of the best gain under no real difference)."""

    index: int
    base: int
    best: int
    mean: np.ndarray
    se: np.ndarray
    null: np.ndarray
    level: float
    rule: str = "better than the best of N by luck, then one standard error, closest to the base"

    @property
    def gain(self) -> float:
        """CV gain of the chosen candidate over the base."""
        return float(self.mean[self.index] - self.mean[self.base])

    @property
    def best_gain(self) -> float:
        """CV gain of the best candidate over the base (what a plain argmax would report)."""
        return float(self.mean[self.best] - self.mean[self.base])

    @property
    def optimism(self) -> float:
        """Mean best gain of N candidates that do not differ from the base."""
        return float(self.null.mean())

    @property
    def luck_bar(self) -> float:
        """The gain over the base a candidate must reach: the null's ``1 - level`` quantile."""
        return float(np.quantile(self.null, 1 - self.level))

    @property
    def p_value(self) -> float:
        """Share of null draws whose best gain reaches the observed best gain (with the observed one counted)."""
        return float((1 + np.sum(self.null >= self.best_gain - 1e-12)) / (1 + len(self.null)))


def select(per_query: np.ndarray, groups: Sequence[Any], folds: np.ndarray, *, base: int, distance: np.ndarray,
           level: float = 0.05, n_null: int = 1000, seed: int = 0, weights: np.ndarray | None = None) -> Selection:
    """The choice of the module docstring.

    Args:
        per_query: ``(Q, C)`` the objective's per-query value of each candidate (higher is better).
        groups: ``(Q,)`` the task (or conversation) of each query: the unit of the folds and of the null's flips.
        folds: ``(Q,)`` fold numbers (:func:`task_folds`).
        base: the base config's index (it is one of the candidates).
        distance: ``(C,)`` how far each candidate is from the base config (0 for the base).
        level: the guard's level: the best gain must exceed the null's ``1 - level`` quantile.
        n_null, seed: draws of the null.
        weights: each query's weight in its fold's score (:func:`cv_scores`).
    """
    mean, se = mean_se(cv_scores(per_query, folds, weights))
    null = best_of_n_null(per_query, groups, folds, base, n=n_null, seed=seed, weights=weights)
    best = int(np.argmax(mean))
    luck = float(np.quantile(null, 1 - level))
    bar = max(float(mean[best] - se[best]), float(mean[base]) + luck)
    ok = np.flatnonzero(mean >= bar - 1e-12)
    if not len(ok) or mean[best] - mean[base] <= luck:
        index = base
    else:
        index = int(ok[np.lexsort((-mean[ok], np.asarray(distance)[ok]))[0]])  # closest, then the better one
    return Selection(index, base, best, mean, se, null, level)


def best_of_n_null(per_query: np.ndarray, groups: Sequence[Any], folds: np.ndarray, base: int, *,
                   n: int = 1000, seed: int = 0, weights: np.ndarray | None = None) -> np.ndarray:
    """``n`` draws of the best candidate's CV gain over the base when no candidate differs from it (module
    docstring): per-query differences to the base, sign-flipped per task, scored per fold then averaged."""
    values = np.asarray(per_query, dtype=np.float64)
    diff = values - values[:, [base]]
    _, task = np.unique(np.asarray(groups), return_inverse=True)
    folds = np.asarray(folds)
    k = int(folds.max()) + 1
    weight = (fold_weights(folds) if weights is None else np.asarray(weights, dtype=np.float64)) / k  # CV mean
    flips = np.random.default_rng(seed).choice((-1.0, 1.0), size=(n, int(task.max()) + 1))[:, task]
    return ((flips * weight) @ diff).max(axis=1)


def selection_holdout(per_query: np.ndarray, groups: Sequence[Any], folds: np.ndarray, *, base: int,
                      distance: np.ndarray, level: float = 0.05, n_null: int = 1000, seed: int = 0,
                      weights: np.ndarray | None = None) -> np.ndarray:
    """``(k,)``: for each fold, the gain over the base, on that fold, of what :func:`select` chooses from the
    other folds (folded again by their own fold numbers)."""
    values = np.asarray(per_query, dtype=np.float64)
    groups, folds = np.asarray(groups), np.asarray(folds)
    w = fold_weights(folds) if weights is None else np.asarray(weights, dtype=np.float64)
    k = int(folds.max()) + 1
    out = np.empty(k)
    for f in range(k):
        train = folds != f
        inner = np.unique(folds[train], return_inverse=True)[1]
        chosen = select(values[train], groups[train], inner, base=base, distance=distance, level=level,
                        n_null=n_null, seed=seed, weights=w[train]).index
        held = ~train
        out[f] = float((w[held] * (values[held, chosen] - values[held, base])).sum())
    return out


def distance_to_base(params: Sequence[Mapping[str, Any]], base: Mapping[str, Any],
                     ranges: Mapping[str, tuple[float, float]]) -> np.ndarray:
    """How far each candidate's searched values are from the base config's: the sum over fields of the absolute
    difference over the field's searched range (a categorical field counts 1 when it differs)."""
    out = np.zeros(len(params))
    for i, p in enumerate(params):
        for name, value in p.items():
            ref = base.get(name)
            lo, hi = ranges.get(name, (0.0, 1.0))
            if isinstance(value, (int, float)) and isinstance(ref, (int, float)) and not isinstance(value, bool):
                out[i] += abs(float(value) - float(ref)) / (hi - lo if hi > lo else 1.0)
            else:
                out[i] += float(value != ref)
    return out
