"""Clustering rule embeddings with HDBSCAN, and the pairs the contradiction checks compare.

A pair is compared when both rules fall in one cluster (each rule with at most ``cluster_pairs`` of its most
similar cluster members) or when one is among the other's ``neighbours`` nearest rules, whatever the clusters —
so a rule HDBSCAN labels noise is still compared with its nearest neighbours. Pairs below ``min_similarity``
(cosine) are never compared.

Examples:
    >>> import numpy as np
    >>> x = np.array([[1, 0], [0.99, 0.14], [0, 1], [0.1, 0.99]], dtype=np.float32)
    >>> labels = cluster_embeddings(x)
    >>> bool(labels[0] == labels[1] != labels[2] == labels[3])
    True
    >>> [(p.i, p.j, p.source) for p in candidate_pairs(x, labels, neighbours=1, min_similarity=0.5)]
    [(0, 1, 'cluster'), (2, 3, 'cluster')]
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from ..errors import MissingDependencyError

logger = logging.getLogger(__name__)

_BLOCK = 1024


@dataclass(frozen=True, slots=True)
class Pair:
    """Rows ``i < j`` to compare, their cosine similarity, and why: ``cluster`` (same cluster), ``neighbour``
    (nearest neighbours in different clusters) or ``noise`` (nearest neighbours, one of them labelled noise)."""

    i: int
    j: int
    similarity: float
    source: str


def normalise(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def cluster_embeddings(x: np.ndarray, *, metric: str = "cosine", min_cluster_size: int = 2, min_samples: int = 1,
                       cluster_selection_epsilon: float = 0.0) -> np.ndarray:
    """HDBSCAN labels of the rows of ``x`` (-1: noise). Cosine goes through ``algorithm="generic"``; euclidean runs
    on L2-normalised vectors (the same neighbourhoods, faster trees). Fewer rows than ``min_cluster_size`` are all
    noise."""
    n = len(x)
    if n < max(2, min_cluster_size):
        return np.full(n, -1, dtype=np.int64)
    try:
        import hdbscan
    except ImportError as exc:  # pragma: no cover - a hard dependency
        raise MissingDependencyError("conflict clustering needs hdbscan: pip install hdbscan") from exc
    data = normalise(x).astype(np.float64)
    kwargs = dict(min_cluster_size=min_cluster_size, min_samples=min(min_samples, n - 1),
                  cluster_selection_epsilon=cluster_selection_epsilon, core_dist_n_jobs=1)
    if metric == "cosine":
        model = hdbscan.HDBSCAN(metric="cosine", algorithm="generic", **kwargs)
    elif metric == "euclidean":
        model = hdbscan.HDBSCAN(metric="euclidean", **kwargs)
    else:
        from ..errors import ConfigError

        raise ConfigError(f"conflicts.metric: expected 'cosine' or 'euclidean', got {metric!r}")
    return np.asarray(model.fit_predict(data), dtype=np.int64)


def candidate_pairs(x: np.ndarray, labels: np.ndarray, *, cluster_pairs: int = 20, neighbours: int = 5,
                    min_similarity: float = 0.5, groups: np.ndarray | None = None,
                    steps: np.ndarray | None = None) -> list[Pair]:
    """The pairs to compare (``i < j``, sorted), each once with its strongest reason (cluster first).

    Args:
        x: embeddings, one row per rule.
        labels: HDBSCAN labels of the rows.
        cluster_pairs: per rule, its most similar members of the same cluster.
        neighbours: per rule, its nearest rules whatever the cluster (noise included).
        min_similarity: pairs below this cosine are dropped.
        groups: optional integer group of each row (e.g. its task type's code, -1 for none); rows of two
            different non-negative groups are never paired, unless ``steps`` pairs them.
        steps: optional integer code of the step each row's check guards (-1 for none); two rows guarding the same
            step may be paired whatever their groups.
    """
    v = normalise(x)
    n = len(v)
    if n < 2:
        return []
    groups = np.asarray(groups) if groups is not None else None
    steps = np.asarray(steps) if steps is not None and groups is not None else None
    keys: list[np.ndarray] = []
    sims: list[np.ndarray] = []
    for lo in range(0, n, _BLOCK):
        rows = np.arange(lo, min(lo + _BLOCK, n))
        sim = v[rows] @ v.T
        sim[np.arange(len(rows)), rows] = -np.inf
        if groups is not None:
            g = groups[rows][:, None]
            apart = (g >= 0) & (groups[None, :] >= 0) & (g != groups[None, :])
            if steps is not None:
                st = steps[rows][:, None]
                apart &= ~((st >= 0) & (st == steps[None, :]))
            sim[apart] = -np.inf
        for want, same_cluster in ((cluster_pairs, True), (neighbours, False)):
            if want <= 0:
                continue
            s = sim
            if same_cluster:
                lab = labels[rows][:, None]
                s = np.where((lab < 0) | (labels[None, :] != lab), -np.inf, sim)
            k = min(want, n - 1)
            top = np.argpartition(-s, k - 1, axis=1)[:, :k]
            val = np.take_along_axis(s, top, axis=1)
            ok = np.isfinite(val) & (val >= min_similarity)
            r = np.broadcast_to(rows[:, None], top.shape)[ok]
            c = top[ok]
            keys.append(np.minimum(r, c).astype(np.int64) * n + np.maximum(r, c))
            sims.append(val[ok])
    if not keys:
        return []
    key = np.concatenate(keys)
    sim_all = np.concatenate(sims)
    key, first = np.unique(key, return_index=True)
    out = []
    for kk, value in zip(key.tolist(), sim_all[first].tolist()):
        i, j = divmod(kk, n)
        if labels[i] >= 0 and labels[i] == labels[j]:
            source = "cluster"
        else:
            source = "noise" if labels[i] < 0 or labels[j] < 0 else "neighbour"
        out.append(Pair(i, j, float(value), source))
    return out
