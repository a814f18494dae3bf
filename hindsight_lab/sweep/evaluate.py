"""The cached, vectorised evaluator: many rerank configs scored over a :class:`~.cache.ReplayCache` at once.

Per query, :func:`~hindsight_lab.retrieve.rerank.rerank_many` (the rerank ``search`` itself runs) selects for every
config, :func:`~hindsight_lab.retrieve.inject.keep_within_budget` cuts each selection to the budget, and each
distinct injected list is judged once with the replay's judgements and the replay report's metric functions. So a
config's metrics equal those of a full replay of it (``tests/sweep/test_evaluate.py`` checks).

Only the fields in :data:`FAST_FIELDS` — the config fields :class:`~hindsight_lab.retrieve.params.RerankParams`
reads, by name — can differ between the configs of one evaluation; any other field changes what is stored or
recalled and needs its own cache (the sweep groups trials by them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from ..config import LabConfig
from ..metrics import evaluate
from ..evaluation import METRICS
from ..retrieve.features import feature_matrix
from ..retrieve.inject import keep_within_budget
from ..retrieve.params import ParamBatch, RerankParams
from ..retrieve.rerank import rerank_many
from .cache import CachedQuery, ReplayCache

if TYPE_CHECKING:
    import pandas as pd

#: Fields scored from the cache; ``retrieval.weights.*`` is every rerank weight.
FAST_FIELDS: tuple[str, ...] = RerankParams.config_fields()
#: Figures per config besides :data:`~hindsight_lab.evaluation.METRICS`.
EXTRA: tuple[str, ...] = ("tokens_median", "tokens_p95", "hit_rate", "empty_queries")


def is_fast(field: str) -> bool:
    """Whether ``field`` (dotted) can be scored from a cache of another value."""
    return field in FAST_FIELDS or field.startswith("retrieval.weights.")


def param_batch(configs: Sequence[LabConfig]) -> ParamBatch:
    """The rerank and budget parameters of ``configs``, as arrays."""
    return ParamBatch.stack([RerankParams.from_config(c.retrieval) for c in configs])


@dataclass(frozen=True)
class Evaluation:
    """Per-query figures of ``C`` configs: ``values[q, c, m]`` for :attr:`metrics`, and per-list counts."""

    query_ids: list[str]
    groups: dict[str, str]
    metrics: tuple[str, ...]
    values: np.ndarray  # (Q, C, M)
    tokens: np.ndarray  # (Q, C) injected line tokens
    relevant: np.ndarray  # (Q, C) injected records with grade >= 1
    injected: np.ndarray  # (Q, C) injected records

    def mask(self, query_ids: Iterable[str] | None) -> np.ndarray:
        if query_ids is None:
            return np.ones(len(self.query_ids), dtype=bool)
        keep = set(query_ids)
        return np.array([q in keep for q in self.query_ids], dtype=bool)

    def summary(self, query_ids: Iterable[str] | None = None) -> "pd.DataFrame":
        """One row per config: the mean of each metric over the queries (all, or the given split), the median and
        95th percentile of injected tokens, the pooled hit rate and the queries with nothing injected."""
        import pandas as pd

        m = self.mask(query_ids)
        if not m.any():
            raise ValueError("no queries to summarise (empty split)")
        frame = pd.DataFrame(self.values[m].mean(axis=0), columns=list(self.metrics))
        tok = self.tokens[m].astype(np.float64)
        frame["tokens_median"] = np.median(tok, axis=0)
        frame["tokens_p95"] = np.percentile(tok, 95, axis=0)
        inj = self.injected[m].sum(axis=0)
        frame["hit_rate"] = np.where(inj > 0, self.relevant[m].sum(axis=0) / np.maximum(inj, 1), 0.0)
        frame["empty_queries"] = (self.injected[m] == 0).sum(axis=0)
        return frame

    def per_query(self, config: int, metric: str, query_ids: Iterable[str] | None = None) -> dict[str, float]:
        """``{query_id: value}`` of one config (for bootstrap intervals and paired tests)."""
        j = self.metrics.index(metric)
        m = self.mask(query_ids)
        return {q: float(v) for q, v, keep in zip(self.query_ids, self.values[:, config, j], m) if keep}


class FastEvaluator:
    """Scores configs over one cache under one judging mode; judged lists are memoised per query across calls.

    Args:
        cache: from :func:`~.cache.capture`.
        metrics: names as the replay report uses them.
        chunk: configs scored together (bounds memory: about ``chunk × candidates × 8`` bytes per array).
        mode: the judging mode (:mod:`hindsight_lab.metrics.modes`) whose queries and judgements are scored.
    """

    def __init__(self, cache: ReplayCache, metrics: Sequence[str] = METRICS, chunk: int = 512,
                 mode: str = "repeat") -> None:
        self.cache, self.metrics, self.chunk, self.mode = cache, tuple(metrics), int(chunk), mode
        self.queries = cache.mode_queries(mode)
        self.judgements = cache.mode_judgements(mode)
        self._judged: list[dict[tuple[int, ...], tuple[np.ndarray, int, int, int]]] = [{} for _ in self.queries]

    def evaluate(self, configs: Sequence[LabConfig] | ParamBatch) -> Evaluation:
        """Figures of every config (each must equal the cache's config outside :data:`FAST_FIELDS`)."""
        batch = configs if isinstance(configs, ParamBatch) else param_batch(configs)
        q, c, m = len(self.queries), len(batch), len(self.metrics)
        values = np.zeros((q, c, m))
        tokens = np.zeros((q, c), dtype=np.int64)
        relevant = np.zeros((q, c), dtype=np.int64)
        injected = np.zeros((q, c), dtype=np.int64)
        for start in range(0, c, self.chunk):
            part = batch.take(slice(start, start + self.chunk))
            cols = slice(start, start + len(part))
            for qi, query in enumerate(self.queries):
                lists = self.inject(query, part)
                keys, inverse = np.unique(lists, axis=0, return_inverse=True)
                rows = [self._judge(qi, query, tuple(int(i) for i in key if i >= 0)) for key in keys]
                inv = inverse.reshape(-1)
                values[qi, cols] = np.stack([r[0] for r in rows])[inv]
                tokens[qi, cols] = np.array([r[1] for r in rows])[inv]
                relevant[qi, cols] = np.array([r[2] for r in rows])[inv]
                injected[qi, cols] = np.array([r[3] for r in rows])[inv]
        return Evaluation([q.query_id for q in self.queries], self.cache.groups, self.metrics, values, tokens,
                          relevant, injected)

    def inject(self, query: CachedQuery, batch: ParamBatch) -> np.ndarray:
        """``(C, top_k)`` candidate indices each config injects, in rank order, ``-1``-padded."""
        cs = query.candidates
        k = self.cache.top_k
        if len(cs) == 0:
            return np.full((len(batch), k), -1, dtype=np.int64)
        feats = feature_matrix(cs.raw, batch)
        ranked = rerank_many(feats, cs.similarity, batch, top_k=k, forced=cs.forced)
        order = ranked.order
        valid = order >= 0
        idx = np.where(valid, order, 0)
        kept = keep_within_budget(cs.line_tokens[idx], cs.sections[idx], cs.forced[idx] & valid,
                                  self.cache.header_tokens, batch.token_budget, valid)
        # kept records stay in rank order; the others move to the end as -1
        lists = np.where(kept, order, -1)
        shift = np.argsort(~kept, axis=1, kind="stable")
        return np.take_along_axis(lists, shift, axis=1)

    def _judge(self, qi: int, query: CachedQuery, chosen: tuple[int, ...]) -> tuple[np.ndarray, int, int, int]:
        memo = self._judged[qi]
        if chosen not in memo:
            qid, mode = query.query_id, query.judged[self.mode]
            judged = self.judgements.judge_list(qid, [query.items[i] for i in chosen])
            per = evaluate({qid: list(judged.grades)}, {qid: mode.ideal}, {qid: mode.n_relevant}, self.metrics,
                           credits={qid: list(judged.relevant_credits)},
                           n_store_relevant={qid: mode.n_store_relevant})
            vals = np.array([per[name][qid] for name in self.metrics], dtype=np.float64)
            toks = int(query.candidates.line_tokens[list(chosen)].sum()) if chosen else 0
            memo[chosen] = (vals, toks, sum(1 for g in judged.grades if g >= 1), len(chosen))
        return memo[chosen]

