"""One replay of a config whose every recall is kept: the candidates and features the sweep's evaluator re-scores.

What a replay stores does not depend on what was recalled (DESIGN §6; checked by
:meth:`~hindsight_lab.replay.systems.Hindsight.recall_changes_state`), so each query's candidate set is the same
whatever the rerank weights are. Re-scoring those candidates with other weights therefore gives exactly what a full
replay with those weights would inject.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..config import LabConfig
from ..errors import ConfigError
from ..metrics import Judgements
from ..retrieve.inject import HEADERS, SECTIONS
from ..retrieve.result import CandidateSet
from ..trace import Episode


@dataclass(frozen=True)
class EpisodeData:
    """A loaded episode dataset, its judgements, and what identifies it (``metrics.json``'s ``dataset`` block)."""

    episodes: list[Episode]
    judgements: Judgements
    info: dict[str, Any]


@dataclass(frozen=True)
class CachedQuery:
    """One judged query: its candidates, their (memory id, source episodes), and what its metrics need."""

    query_id: str
    group: str
    order: int
    candidates: CandidateSet
    items: list[tuple[str, tuple[str, ...]]]
    ideal: list[int]
    n_relevant: int
    n_store_relevant: int


@dataclass
class ReplayCache:
    """Every judged query of one replay of ``config``, with the shared top_k, budget and header costs."""

    queries: list[CachedQuery]
    judgements: Judgements
    config: LabConfig
    top_k: int
    header_tokens: np.ndarray
    dataset: dict[str, Any]
    timing: dict[str, float] = field(default_factory=dict)

    @property
    def query_ids(self) -> list[str]:
        return [q.query_id for q in self.queries]

    @property
    def groups(self) -> dict[str, str]:
        return {q.query_id: q.group for q in self.queries}


def load_episode_data(path: str | Path | Sequence[str | Path], *, format: str = "auto", limit: int | None = None,
                      skip_invalid: bool = False) -> EpisodeData:
    """Load an episode dataset — one file, or several as one history (any format but LoCoMo's conversations) —
    and judge it."""
    from ..datasets import detect_format
    from ..datasets.combine import load_history

    paths = [Path(path)] if isinstance(path, (str, Path)) else [Path(p) for p in path]
    if any((detect_format(p) if format == "auto" else format) == "locomo" for p in paths):
        raise ConfigError(f"{paths[0]}: sweeps replay episode datasets; LoCoMo conversations are not supported yet")
    episodes, info = load_history(paths, format=format, strict=not skip_invalid, limit_tasks=limit)
    judgements = Judgements.from_episodes(episodes)
    info = {**info, "n_episodes": len(episodes), "limit": limit}
    return EpisodeData(episodes, judgements, info)


def capture(data: EpisodeData, config: LabConfig, *, embedder: Any, top_k: int = 10, token_budget: int | None = None,
            show_progress: bool = False, workdir: str | Path | None = None) -> ReplayCache:
    """Replay ``data`` through one ``hindsight`` system on ``config`` and keep every judged recall.

    Args:
        data: from :func:`load_episode_data`.
        config: the config whose stored state (dedup, promotion, triggers, decay, recall paths) is cached.
        embedder: a loaded embedder (wrap it in a :class:`~hindsight_lab.embed.PrefetchedEmbedder` to share batch
            embeddings between several captures).
        top_k, token_budget: shared by every config scored from this cache.
    """
    from ..embed import TokenCounter
    from ..replay.engine import run_episodes
    from ..replay.systems import build_systems

    budget = token_budget or config.retrieval.token_budget
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hindsight-sweep-") as tmp:
        systems = build_systems(["hindsight"], config=config, embedder=embedder, top_k=top_k, token_budget=budget,
                                root=str(workdir or tmp), capture=True)
        try:
            run = run_episodes(data.episodes, systems, query_ids=set(data.judgements.query_ids),
                               show_progress=show_progress)
            captured: Sequence[CandidateSet] = systems[0].captured  # type: ignore[attr-defined]
            replayed = systems[0].mem.config_  # type: ignore[attr-defined]
        finally:
            for s in systems:
                s.close()
    judgements = data.judgements
    kmax = max(top_k, 10)
    queries = []
    for rec in run.queries:
        cands = captured[rec.order]
        queries.append(CachedQuery(
            rec.query_id, rec.group or rec.query_id, rec.order, cands,
            [(r.id, tuple(r.source_episode_ids)) for r in cands.records],
            judgements.ideal(rec.query_id, kmax), judgements.n_relevant(rec.query_id),
            judgements.n_store_relevant(rec.query_id, rec.stored or [])))
    count = TokenCounter.for_embedder(embedder).count
    header = np.array([count(HEADERS[s]) for s in SECTIONS], dtype=np.int64)
    info = dict(data.info, top_k=top_k, token_budget=budget)
    return ReplayCache(queries, judgements, replayed, top_k, header, info,
                       {"replay_s": time.perf_counter() - start})
