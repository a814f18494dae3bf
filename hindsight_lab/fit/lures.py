"""The lexical lures as training data for the fit: every generated pair (:mod:`hindsight_lab.scenarios.lures`) replayed
on a fresh hindsight store, its recall kept, in one :class:`~hindsight_lab.sweep.cache.ReplayCache`.

A lure is a stored run about the same customer as the query that asked for another kind of task, worded so that
``bm25`` ranks it first. The replays teach a ranker to trust the words a query shares with a memory; the lures teach
where that trust ends. Each pair's query is judged by explicit relevance (DESIGN §6): the right memory is its one
relevant episode (grade 2), the lure and the background 0, so its nDCG is 1 when the right memory comes first. The
pairs are replayed exactly as ``hindsight-lab lures`` replays them (the background, the right memory and the lure
in time order, then the query), so a weight vector scored from this cache scores what that command would.

Examples:
    >>> cache = lure_cache([0], pairs=2, embedder=None)  # doctest: +SKIP
    >>> len(cache.queries)  # doctest: +SKIP
    2
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..config import LabConfig
from ..metrics.judging import JudgedEpisode, Judgements
from ..sweep.cache import CachedQuery, ModeJudging, ReplayCache

__all__ = ["lure_cache"]


def _renamed(pairs: Sequence[Any], seed: int) -> list[Any]:
    """The pairs of one seed with every episode id prefixed by the seed (ids repeat across seeds)."""
    from ..scenarios.lures import LurePair

    def rename(ep: Any) -> Any:
        return ep.model_copy(update={"episode_id": f"s{seed}-{ep.episode_id}",
                                     "task_id": f"s{seed}-{ep.task_id}" if ep.task_id else None})

    return [LurePair(rename(p.query), rename(p.right), rename(p.lure), tuple(rename(b) for b in p.background))
            for p in pairs]


def lure_cache(seeds: Sequence[int], *, pairs: int, embedder: Any, config: LabConfig | None = None,
               top_k: int = 10) -> ReplayCache:
    """Every pair of every seed replayed through one fresh ``hindsight`` system each, the query's recall kept."""
    from ..datasets.synthetic import generate
    from ..embed import TokenCounter, embedder_for
    from ..replay.runner import prefetch
    from ..scenarios.lures import replay_pair, lure_pairs
    from ..replay.systems import build_systems
    from ..retrieve.inject import HEADERS, SECTIONS

    cfg = config or LabConfig()
    budget = cfg.retrieval.token_budget
    all_pairs = [(seed, p) for seed in seeds for p in _renamed(lure_pairs(generate("lures", n=pairs, seed=seed)),
                                                               seed)]
    episodes = [e for _, p in all_pairs for e in (*p.memories, p.query)]
    emb, _ = prefetch(embedder or embedder_for(cfg.embedder), episodes, (), cfg, summaries=False)
    judged, queries = [], []
    for seed, pair in all_pairs:
        for ep in pair.memories:
            judged.append(JudgedEpisode(ep.episode_id, None, None, (), len(judged)))
        judged.append(JudgedEpisode(pair.query.episode_id, None, None, (pair.right.episode_id,), len(judged)))
        system = build_systems(["hindsight"], config=cfg, embedder=emb, top_k=top_k, token_budget=budget,
                               capture=True)[0]
        try:
            replay_pair(pair, [system])
            cands = system.captured[-1]  # type: ignore[attr-defined]
            replayed = system.mem.config_  # type: ignore[attr-defined]
        finally:
            system.close()
        group = f"lures:{seed}:{(pair.query.meta or {}).get('group', pair.query.episode_id)}"
        queries.append((pair, group, cands, [(e.episode_id, (e.episode_id,)) for e in pair.memories]))
    judgements = Judgements.from_episodes(judged)
    kmax = max(top_k, 10)
    cached = [CachedQuery(pair.query.episode_id, group, i, cands, [(r.id, tuple(r.source_episode_ids))
                                                                   for r in cands.records],
                          {"repeat": ModeJudging(judgements.ideal(pair.query.episode_id, kmax),
                                                 judgements.n_relevant(pair.query.episode_id),
                                                 judgements.n_store_relevant(pair.query.episode_id, stored))})
              for i, (pair, group, cands, stored) in enumerate(queries)]
    count = TokenCounter.for_embedder(emb).count
    header = np.array([count(HEADERS[s]) for s in SECTIONS], dtype=np.int64)
    info = {"name": "lures", "format": "generated", "sha256": f"lures seeds {list(seeds)} × {pairs} pairs",
            "top_k": top_k, "token_budget": budget}
    return ReplayCache(cached, judgements, replayed, top_k, header, info)
