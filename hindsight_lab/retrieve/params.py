"""The rerank's parameters, named as in the config: :class:`RerankParams` is the one road from
``LabConfig.retrieval`` to a score, and :class:`ParamBatch` holds many configs' parameters as arrays.

Every field keeps its config name (``retrieval.<field>``, ``retrieval.weights.<term>``), so the sweep's fast fields
are exactly :meth:`RerankParams.config_fields`: a config field added here and read by the rerank is scored from
the sweep's cache with no other change.

Examples:
    >>> from hindsight_lab.config import RetrievalConfig
    >>> p = RerankParams.from_config(RetrievalConfig())
    >>> p.weights["semantic"], p.max_triggered, p.enough_score
    (0.5, 2, None)
    >>> batch = ParamBatch.stack([p, p])
    >>> batch.weight_matrix(("lexical", "semantic")).tolist()
    [[0.2, 0.5], [0.2, 0.5]]
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping, Sequence

import numpy as np

#: The scalar fields of ``RetrievalConfig`` the rerank and the budget read, under their config names.
SCALARS: tuple[str, ...] = ("min_score", "min_relative_score", "enough_score", "max_triggered",
                            "recency_half_life_days", "token_budget")


@dataclass(frozen=True)
class RerankParams:
    """What one config gives the rerank and the budget (see ``RetrievalConfig`` for each field's meaning).

    ``weights`` maps each term of :data:`~hindsight_lab.retrieve.rerank.TERMS` and the penalty
    (:data:`~hindsight_lab.retrieve.rerank.PENALTY`) to its weight, by the names of ``retrieval.weights``.
    """

    weights: Mapping[str, float]
    min_score: float = float("-inf")
    min_relative_score: float = 0.0
    enough_score: float | None = None
    max_triggered: int = 0
    recency_half_life_days: float = 14.0
    token_budget: int = 600

    @classmethod
    def from_config(cls, retrieval: Any) -> "RerankParams":
        """The parameters of ``cfg.retrieval`` (a ``RetrievalConfig``)."""
        weights = {name: float(getattr(retrieval.weights, name)) for name in type(retrieval.weights).model_fields}
        return cls(weights, **{name: getattr(retrieval, name) for name in SCALARS})

    @staticmethod
    def config_fields() -> tuple[str, ...]:
        """The dotted config fields these parameters come from (``retrieval.weights.*`` for every weight)."""
        return ("retrieval.weights.*",) + tuple(f"retrieval.{name}" for name in SCALARS)


@dataclass(frozen=True)
class ParamBatch:
    """The parameters of ``C`` configs as arrays, one entry per config, under the same names."""

    weights: Mapping[str, np.ndarray]
    min_score: np.ndarray
    min_relative_score: np.ndarray
    enough_score: np.ndarray  # +inf where off
    max_triggered: np.ndarray
    recency_half_life_days: np.ndarray
    token_budget: np.ndarray

    @classmethod
    def stack(cls, params: Sequence[RerankParams]) -> "ParamBatch":
        names = list(params[0].weights) if params else []
        enough = [float("inf") if p.enough_score is None else float(p.enough_score) for p in params]
        return cls({n: np.array([p.weights[n] for p in params], dtype=np.float64) for n in names},
                   np.array([p.min_score for p in params], dtype=np.float64),
                   np.array([p.min_relative_score for p in params], dtype=np.float64),
                   np.array(enough, dtype=np.float64),
                   np.array([p.max_triggered for p in params], dtype=np.int64),
                   np.array([p.recency_half_life_days for p in params], dtype=np.float64),
                   np.array([p.token_budget for p in params], dtype=np.int64))

    @classmethod
    def of(cls, params: RerankParams) -> "ParamBatch":
        return cls.stack([params])

    def __len__(self) -> int:
        return len(self.min_score)

    def weight_matrix(self, names: Sequence[str]) -> np.ndarray:
        """``(C, len(names))``: each config's weight of each named term; a name no weight has is an error."""
        missing = [n for n in names if n not in self.weights]
        if missing:
            raise KeyError(f"no weight for rerank term(s) {missing}; the weights are {sorted(self.weights)}")
        return np.column_stack([self.weights[n] for n in names]) if names else np.zeros((len(self), 0))

    def take(self, idx: slice | np.ndarray) -> "ParamBatch":
        """The configs at ``idx``."""
        return ParamBatch(**{f.name: ({n: w[idx] for n, w in self.weights.items()} if f.name == "weights"
                                      else getattr(self, f.name)[idx]) for f in fields(self)})
