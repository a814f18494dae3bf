"""Uncertainty for headline metrics (DESIGN §6): clustered bootstrap intervals and a paired randomization test.

Both take per-query values ``{query_id: value}`` (one metric, e.g. ``evaluate(...)["ndcg@5"]``) and optional
``groups = {query_id: group}`` (task_id, or conversation id for LoCoMo). Queries of one group are correlated (the
same task retried), so both procedures resample or flip **whole groups**; without ``groups`` each query is its own
group. Both are vectorised numpy and deterministic for a seed (queries and groups are put in a canonical order
first, so dict insertion order does not matter).

Examples:
    >>> per_q = {"q1": 1.0, "q2": 0.0, "q3": 1.0, "q4": 1.0}
    >>> mean, low, high = bootstrap_ci(per_q, {"q1": "t1", "q2": "t1", "q3": "t2", "q4": "t3"}, n_resamples=500)
    >>> mean, low <= mean <= high
    (0.75, True)
    >>> paired_randomization_test(per_q, per_q)
    1.0
"""

from __future__ import annotations

import math
from typing import Hashable, Mapping

import numpy as np

__all__ = ["bootstrap_ci", "paired_randomization_test"]

_CHUNK_ELEMENTS = 2_000_000  # bound on the (resamples x groups) matrix held at once


def _canonical(keys) -> list:
    return sorted(keys, key=lambda k: (type(k).__name__, repr(k)))


def _finite(values: Mapping[Hashable, float], what: str) -> None:
    for q, v in values.items():
        try:
            ok = math.isfinite(v)
        except TypeError:
            raise ValueError(f"{what}: value for query {q!r} is {v!r}, expected a number") from None
        if not ok:
            raise ValueError(f"{what}: value for query {q!r} is {v!r}; per-query values must be finite "
                             "(fix the metric or drop the query from the query set)")


def _group_index(qids: list, groups: Mapping[Hashable, Hashable] | None) -> tuple[np.ndarray, int]:
    """Index of each query's group (groups in canonical order) and the number of groups."""
    if groups is None:
        return np.arange(len(qids)), len(qids)
    missing = [q for q in qids if q not in groups]
    if missing:
        raise ValueError(f"{len(missing)} queries have no group, e.g. {missing[:3]}; give every query a group "
                         "(its task_id or conversation id)")
    nones = [q for q in qids if groups[q] is None]
    if nones:
        raise ValueError(f"query {nones[0]!r} has group None; give it a group of its own (e.g. its query id) "
                         "rather than pooling every unlabelled query into one cluster")
    order = {g: i for i, g in enumerate(_canonical({groups[q] for q in qids}))}
    return np.fromiter((order[groups[q]] for q in qids), dtype=np.intp, count=len(qids)), len(order)


def bootstrap_ci(per_query: Mapping[Hashable, float], groups: Mapping[Hashable, Hashable] | None = None, *,
                 n_resamples: int = 2000, seed: int = 0, alpha: float = 0.05) -> tuple[float, float, float]:
    """Mean of ``per_query`` and its percentile bootstrap ``1 - alpha`` interval, resampling whole groups.

    Each resample draws ``G`` groups with replacement from the ``G`` groups and computes the query-level mean of
    the drawn queries, ``sum(values of drawn groups) / count(queries of drawn groups)`` (so the statistic is the
    same mean that is reported). The interval is the ``alpha/2`` and ``1 - alpha/2`` quantiles of the resampled
    means (numpy's default linear interpolation).

    Args:
        per_query: One metric's value per query.
        groups: ``{query_id: group}`` (task_id or conversation); ``None``: each query is a group.
        n_resamples: Bootstrap resamples.
        seed: Seed of the ``numpy.random.Generator``.
        alpha: ``0.05`` gives a 95 % interval.

    Returns:
        ``(mean, low, high)``.

    Raises:
        ValueError: empty input, a NaN/inf value (the message names the query), a query without a group, or an
            invalid ``n_resamples`` / ``alpha``.

    Examples:
        >>> bootstrap_ci({"a": 0.5, "b": 0.5})
        (0.5, 0.5, 0.5)
    """
    if not per_query:
        raise ValueError("bootstrap_ci: no per-query values (empty query set)")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive int, got {n_resamples!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    _finite(per_query, "bootstrap_ci")
    qids = _canonical(per_query)
    x = np.array([per_query[q] for q in qids], dtype=float)
    gidx, n_groups = _group_index(qids, groups)
    sums = np.bincount(gidx, weights=x, minlength=n_groups)
    counts = np.bincount(gidx, minlength=n_groups).astype(float)
    mean = float(math.fsum(x) / len(x))
    rng = np.random.default_rng(seed)
    stats = np.empty(n_resamples)
    chunk = max(1, _CHUNK_ELEMENTS // n_groups)
    for start in range(0, n_resamples, chunk):
        m = min(chunk, n_resamples - start)
        draw = rng.integers(0, n_groups, size=(m, n_groups))
        stats[start:start + m] = sums[draw].sum(axis=1) / counts[draw].sum(axis=1)
    low, high = np.quantile(stats, [alpha / 2, 1 - alpha / 2])
    # The resampled means add the values in another order than fsum; with one group every resample is the whole
    # set and its last bit can land on either side of the mean: the interval must still hold the mean.
    return mean, min(float(low), mean), max(float(high), mean)


def paired_randomization_test(a: Mapping[Hashable, float], b: Mapping[Hashable, float],
                              groups: Mapping[Hashable, Hashable] | None = None, *, n_permutations: int = 10000,
                              seed: int = 0, exact_max_groups: int = 16) -> float:
    """Two-sided paired randomization (sign-flip) test of ``mean(a) == mean(b)`` over the same queries.

    With ``d_q = a_q - b_q`` and ``D_g = sum of d_q over group g``, the statistic is
    ``T(s) = |sum_g s_g D_g| / N`` for signs ``s_g = +-1``; ``T(+1) = |mean(a) - mean(b)|``. Flipping a group's
    sign flips all its queries together (``D_g / N`` is the group's mean difference weighted by its size). Under
    the null of exchangeable systems every sign vector is equally likely, so
    ``p = P(T(s) >= T_obs)`` (with a 1e-9 relative tolerance for float ties):

    * exact over all ``2**G`` sign vectors when ``G <= exact_max_groups``;
    * otherwise Monte Carlo, ``p = (1 + #{T(s_i) >= T_obs}) / (1 + n_permutations)`` with seeded random signs
      (never exactly 0).

    Identical systems give ``p = 1``.

    Args:
        a, b: One metric's per-query values of two systems; the query sets must be equal.
        groups: ``{query_id: group}``; ``None``: each query is a group.
        n_permutations: Monte Carlo sign vectors.
        seed: Seed of the ``numpy.random.Generator`` (Monte Carlo only).
        exact_max_groups: Enumerate exactly up to this many groups.

    Returns:
        The p-value.

    Raises:
        ValueError: different query sets, empty input, a NaN/inf value (naming the query), a query without a
            group, or a non-positive ``n_permutations``.

    Examples:
        >>> paired_randomization_test({"q1": 1.0, "q2": 1.0}, {"q1": 0.0, "q2": 0.0})  # 2 of 4 sign vectors
        0.5
    """
    if set(a) != set(b):
        only_a, only_b = sorted(map(repr, set(a) - set(b)))[:3], sorted(map(repr, set(b) - set(a)))[:3]
        raise ValueError(f"the two systems must be scored on the same queries; only in a: {only_a}, "
                         f"only in b: {only_b}")
    if not a:
        raise ValueError("paired_randomization_test: no per-query values (empty query set)")
    if isinstance(n_permutations, bool) or not isinstance(n_permutations, int) or n_permutations < 1:
        raise ValueError(f"n_permutations must be a positive int, got {n_permutations!r}")
    _finite(a, "paired_randomization_test (a)")
    _finite(b, "paired_randomization_test (b)")
    qids = _canonical(a)
    d = np.array([a[q] for q in qids], dtype=float) - np.array([b[q] for q in qids], dtype=float)
    gidx, n_groups = _group_index(qids, groups)
    dg = np.bincount(gidx, weights=d, minlength=n_groups)
    obs = abs(float(dg.sum()))
    tol = 1e-9 * max(1.0, float(np.abs(dg).sum()))
    if n_groups <= exact_max_groups:
        codes = np.arange(2 ** n_groups, dtype=np.int64)[:, None]
        signs = ((codes >> np.arange(n_groups, dtype=np.int64)) & 1) * 2.0 - 1.0
        return float(np.mean(np.abs(signs @ dg) >= obs - tol))
    rng = np.random.default_rng(seed)
    count = 0
    chunk = max(1, _CHUNK_ELEMENTS // n_groups)
    for start in range(0, n_permutations, chunk):
        m = min(chunk, n_permutations - start)
        signs = rng.integers(0, 2, size=(m, n_groups)) * 2.0 - 1.0
        count += int(np.count_nonzero(np.abs(signs @ dg) >= obs - tol))
    return (1 + count) / (1 + n_permutations)
