"""The recall paths merged into one candidate set, and the rerank features of each candidate (DESIGN §3).

The paths: ``vector`` (nearest records by embedding), ``keyword`` (best BM25 matches,
:mod:`~hindsight_lab.retrieve.lexical`), ``task_type`` (newest records of the query's task_type) and ``trigger``
(rules whose trigger matches the query).

``recall`` is the part of a search that reads the store; ``features`` turns its candidates into the matrix the pure
rerank scores. The sweep's cached evaluator stores exactly these two things per query.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Mapping

import numpy as np

from ..config import RetrievalConfig
from ..types import MemoryRecord
from .classify import TaskTypeClassifier, learns_from
from .lexical import LexicalIndex
from .paths import TaskTypeIndex, TriggerIndex, infer_task_type
from .rerank import FEATURES, recency

RECALLED_BUCKETS = ("episode", "candidate", "rule")


@dataclass
class Candidates:
    """Records found by any path, with their embeddings, cosine similarity and BM25 score (relative to the best in
    the store) to the query, and the path(s)."""

    records: list[MemoryRecord] = field(default_factory=list)
    embeddings: list[np.ndarray] = field(default_factory=list)
    similarity: list[float] = field(default_factory=list)
    lexical: list[float] = field(default_factory=list)
    paths: list[list[str]] = field(default_factory=list)
    triggered: list[str] = field(default_factory=list)  # every rule whose trigger matched (injected or not)
    task_type: str | None = None
    task_type_source: str = "given"
    task_type_share: float = 1.0
    _pos: dict[str, int] = field(default_factory=dict, repr=False)

    def add(self, rec: MemoryRecord, emb: np.ndarray, sim: float, lexical: float, path: str,
            domain: str | None) -> None:
        if rec.id in self._pos:
            self.paths[self._pos[rec.id]].append(path)
        elif domain is None or rec.domain in (None, domain):
            self._pos[rec.id] = len(self.records)
            self.records.append(rec)
            self.embeddings.append(emb)
            self.similarity.append(sim)
            self.lexical.append(lexical)
            self.paths.append([path])

    def __contains__(self, record_id: str) -> bool:
        return record_id in self._pos

    def __len__(self) -> int:
        return len(self.records)

    @property
    def forced(self) -> np.ndarray:
        return np.array(["trigger" in p for p in self.paths], dtype=bool)

    def matrix(self) -> np.ndarray:
        return np.stack(self.embeddings) if self.embeddings else np.zeros((0, 1), dtype=np.float32)


def recall(store: Any, counts: Mapping[str, int], task_types: TaskTypeIndex, triggers: TriggerIndex,
           q: np.ndarray, query: str, cfg: RetrievalConfig, *, task_type: str | None, domain: str | None,
           overlay: Mapping[str, MemoryRecord] | None = None, lexical: LexicalIndex | None = None,
           classifier: TaskTypeClassifier | None = None,
           extra_votes: list[tuple[str | None, float]] | None = None) -> Candidates:
    """Run the vector, keyword, task-type and trigger paths; infer the query's task_type when not given.

    ``overlay`` replaces stored records by newer in-process versions (pending bookkeeping). Without a ``lexical``
    index there is no keyword path and every lexical feature is 0. ``classifier`` infers the task type when
    ``retrieval.classifier.method`` is ``logistic`` (without one, the ``knn`` vote is used); ``extra_votes``
    (task_type, similarity) join the ``knn`` vote as neighbours that are not recalled (retired successes,
    :mod:`hindsight_lab.evidence`).
    """
    overlay = overlay or {}
    out = Candidates()
    bm25 = lexical.scores(query) if lexical is not None else np.zeros(0)
    best = float(bm25.max()) if len(bm25) else 0.0

    def add(rec: MemoryRecord, emb: np.ndarray, sim: float, path: str) -> None:
        lex = lexical.score_of(bm25, rec.id) / best if lexical is not None and best > 0 else 0.0
        out.add(overlay.get(rec.id, rec), emb, sim, lex, path, domain)

    votes: list[tuple[str | None, float]] = []
    for bucket in RECALLED_BUCKETS:
        n = counts.get(bucket, 0)
        if not n:
            continue
        want = max(cfg.path_depth, cfg.classifier.k) if bucket == "episode" else cfg.path_depth
        for rank, (rec, sim, emb) in enumerate(store.query(bucket, q, min(want, n))):
            if bucket == "episode" and learns_from(cfg.classifier.learn_from, rec.outcome):
                votes.append((rec.task_type, sim))
            if rank < cfg.path_depth and sim >= cfg.min_similarity:
                add(rec, emb, sim, "vector")

    if task_type is None:
        if cfg.classifier.enabled:
            c = cfg.classifier
            if c.method in ("logistic", "embedding") and classifier is not None:
                task_type, share = classifier.predict(query)
            else:
                if extra_votes:
                    votes = sorted(votes + list(extra_votes), key=lambda v: -v[1])
                task_type, share = infer_task_type(votes, k=c.k, min_votes=c.min_votes, min_share=c.min_share)
            out.task_type_source, out.task_type_share = ("inferred" if task_type else "abstained"), share
        else:
            out.task_type_source, out.task_type_share = "off", 0.0
    out.task_type = task_type

    # the keyword, task-type and trigger paths: one store read per bucket for all of their new records
    wanted: list[tuple[str, str, str]] = []  # (record id, bucket, path)
    if lexical is not None and best > 0:
        wanted += [(rid, bucket, "keyword") for rid, bucket in lexical.top(bm25, cfg.path_depth)]
    if task_type is not None:
        wanted += [(rid, bucket, "task_type") for rid, bucket in task_types.newest(task_type, cfg.path_depth)]
    out.triggered = triggers.match(query, task_type, domain)
    wanted += [(rid, "rule", "trigger") for rid in out.triggered]
    paths_of: dict[str, list[str]] = {}
    by_bucket: dict[str, list[str]] = {}
    for rid, bucket, path in wanted:
        if rid in out:
            out.paths[out._pos[rid]].append(path)
        elif rid in paths_of:
            paths_of[rid].append(path)
        else:
            paths_of[rid] = [path]
            by_bucket.setdefault(bucket, []).append(rid)
    for bucket, ids in by_bucket.items():
        for rec, emb in store.get(bucket, ids):
            first, *more = paths_of[rec.id]
            add(rec, emb, float(emb @ q), first)
            if rec.id in out:
                out.paths[out._pos[rec.id]].extend(more)
    return out


def ages_days(c: Candidates, now: datetime) -> np.ndarray:
    """Each candidate's age in days on ``now``'s clock, from last_confirmed_at, else created_at."""
    return np.asarray([(now - (r.last_confirmed_at or r.created_at)) / timedelta(days=1) for r in c.records],
                      dtype=np.float64)


def features(c: Candidates, now: datetime, half_life_days: float) -> np.ndarray:
    """``(n, 5)`` rerank features (columns :data:`~hindsight_lab.retrieve.rerank.FEATURES`): semantic (cosine
    clipped to [0, 1]), lexical (BM25 score over the best in the store), task_type match (0/1), confidence, and
    recency ``0.5 ** (age / half_life)`` with the age of :func:`ages_days`."""
    if not len(c):
        return np.zeros((0, len(FEATURES)))
    return np.column_stack([
        np.clip(np.asarray(c.similarity, dtype=np.float64), 0.0, 1.0),
        np.asarray(c.lexical, dtype=np.float64),
        [1.0 if c.task_type is not None and r.task_type == c.task_type else 0.0 for r in c.records],
        [r.confidence for r in c.records],
        recency(ages_days(c, now), half_life_days)])
