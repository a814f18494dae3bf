"""A learning-to-rank table from judged replays: for each query of each judging mode, its candidates' rerank
features and their grades.

A :class:`~hindsight_lab.sweep.cache.ReplayCache` keeps every recall of one replay: the candidates a search found
and their raw features (:mod:`hindsight_lab.retrieve.features`). Judged under a mode, each candidate has the grade its
record would earn alone in the injected list (:meth:`~hindsight_lab.metrics.Judgements.judge_list`: an episode
record its episode's grade toward the query, a derived record the majority grade of its sources). That is the
training signal a ranker learns from; the features are the rerank's own columns (:data:`~hindsight_lab.retrieve.
rerank.TERMS`), so what is learnt is a weight per term and the rerank ``search`` runs scores with it unchanged.

Examples:
    >>> q = RankQuery("d", "repeat", "q1", "d:t1", np.eye(2, len(TERMS)), np.array([2.0, 0.0]))
    >>> q.n, q.informative
    (2, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..config import LabConfig
from ..retrieve.features import feature_matrix
from ..retrieve.params import ParamBatch, RerankParams
from ..retrieve.rerank import TERMS
from ..sweep.cache import ReplayCache

__all__ = ["RankQuery", "rank_table"]


@dataclass(frozen=True)
class RankQuery:
    """One judged query: its dataset and mode, its group (``dataset:task``, the unit of the folds), its
    candidates' feature matrix ``(n, T)`` (columns :data:`~hindsight_lab.retrieve.rerank.TERMS`) and grades."""

    dataset: str
    mode: str
    query_id: str
    group: str
    features: np.ndarray
    grades: np.ndarray

    @property
    def n(self) -> int:
        return len(self.grades)

    @property
    def informative(self) -> bool:
        """Whether its candidates differ in grade (a query whose candidates are all alike teaches no order)."""
        return self.n > 1 and float(self.grades.max()) > float(self.grades.min())


def rank_table(caches: Mapping[str, ReplayCache], modes: Sequence[str], config: LabConfig | None = None
               ) -> list[RankQuery]:
    """Every query of every cache and mode with its candidates' features (under ``config``'s feature parameters,
    e.g. the recency half-life; default the cache's config) and grades."""
    out: list[RankQuery] = []
    for name, cache in caches.items():
        params = ParamBatch.of(RerankParams.from_config((config or cache.config).retrieval))
        for mode in modes:
            if mode != "repeat" and mode not in cache.modes:
                continue
            judgements = cache.mode_judgements(mode)
            for q in cache.mode_queries(mode):
                cs = q.candidates
                feats = feature_matrix(cs.raw, params, TERMS) if len(cs) else np.zeros((0, len(TERMS)))
                grades = np.array([judgements.judge_list(q.query_id, [item]).grades[0] for item in q.items],
                                  dtype=np.float64)
                out.append(RankQuery(name, mode, q.query_id, f"{name}:{q.group}", feats, grades))
    return out
