"""One replay of a config whose every recall is kept: the candidates and features the sweep's evaluator re-scores.

What a replay stores does not depend on what was recalled (DESIGN §6; checked by
:meth:`~hindsight_lab.replay.systems.Hindsight.recall_changes_state`), so each query's candidate set is the same
whatever the rerank weights are. Re-scoring those candidates with other weights therefore gives exactly what a full
replay with those weights would inject.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..config import LabConfig
from ..errors import ConfigError
from ..metrics import Judgements
from ..metrics.modes import MODES, judge_mode
from ..retrieve.inject import HEADERS, SECTIONS
from ..retrieve.result import CandidateSet
from ..trace import Episode


@dataclass(frozen=True)
class EpisodeData:
    """A loaded episode dataset, its judgements (``repeat``; ``modes`` holds every judging mode's), and what
    identifies it (``metrics.json``'s ``dataset`` block)."""

    episodes: list[Episode]
    judgements: Judgements
    info: dict[str, Any]
    modes: dict[str, Judgements] = field(default_factory=dict)

    def mode(self, name: str) -> Judgements:
        """The judgements of a judging mode (:mod:`hindsight_lab.metrics.modes`)."""
        return self.judgements if name == "repeat" else self.modes[name]


@dataclass(frozen=True)
class ModeJudging:
    """What a query's metrics need under one judging mode."""

    ideal: list[int]
    n_relevant: int
    n_store_relevant: int


@dataclass(frozen=True)
class CachedQuery:
    """One judged query: its candidates, their (memory id, source episodes), and what its metrics need under each
    judging mode it is a query of (``judged``; ``repeat`` also as ``ideal``, ``n_relevant``, ``n_store_relevant``)."""

    query_id: str
    group: str
    order: int
    candidates: CandidateSet
    items: list[tuple[str, tuple[str, ...]]]
    judged: dict[str, ModeJudging]

    @property
    def ideal(self) -> list[int]:
        return self.judged["repeat"].ideal

    @property
    def n_relevant(self) -> int:
        return self.judged["repeat"].n_relevant

    @property
    def n_store_relevant(self) -> int:
        return self.judged["repeat"].n_store_relevant


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
    modes: dict[str, Judgements] = field(default_factory=dict)

    def mode_queries(self, mode: str = "repeat") -> list[CachedQuery]:
        """The queries of a judging mode, in replay order."""
        return [q for q in self.queries if mode in q.judged]

    def mode_judgements(self, mode: str = "repeat") -> Judgements:
        return self.judgements if mode == "repeat" else self.modes[mode]

    @property
    def query_ids(self) -> list[str]:
        return [q.query_id for q in self.mode_queries()]

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
    modes = {mode: judge_mode(episodes, mode) for mode in MODES}
    info = {**info, "n_episodes": len(episodes), "limit": limit}
    return EpisodeData(episodes, modes.pop("repeat"), info, modes)


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
    systems = build_systems(["hindsight"], config=config, embedder=embedder, top_k=top_k, token_budget=budget,
                            root=str(workdir) if workdir else None, capture=True)
    try:
        asked = {q for name in ("repeat", *data.modes) for q in data.mode(name).query_ids}
        run = run_episodes(data.episodes, systems, query_ids=asked, show_progress=show_progress)
        captured: Sequence[CandidateSet] = systems[0].captured  # type: ignore[attr-defined]
        replayed = systems[0].mem.config_  # type: ignore[attr-defined]
    finally:
        for s in systems:
            s.close()
    kmax = max(top_k, 10)
    queries = []
    by_mode = {name: (data.mode(name), set(data.mode(name).query_ids)) for name in ("repeat", *data.modes)}
    for rec in run.queries:
        cands = captured[rec.order]
        judged = {name: ModeJudging(j.ideal(rec.query_id, kmax), j.n_relevant(rec.query_id),
                                    j.n_store_relevant(rec.query_id, rec.stored or []))
                  for name, (j, qset) in by_mode.items() if rec.query_id in qset}
        queries.append(CachedQuery(rec.query_id, rec.group or rec.query_id, rec.order, cands,
                                   [(r.id, tuple(r.source_episode_ids)) for r in cands.records], judged))
    count = TokenCounter.for_embedder(embedder).count
    header = np.array([count(HEADERS[s]) for s in SECTIONS], dtype=np.int64)
    info = dict(data.info, top_k=top_k, token_budget=budget)
    return ReplayCache(queries, data.judgements, replayed, top_k, header, info,
                       {"replay_s": time.perf_counter() - start}, dict(data.modes))
