"""The recall paths merged into one candidate set, and the rerank features of each candidate (DESIGN §3).

The paths: ``vector`` (nearest records by embedding), ``keyword`` (best BM25 matches,
:mod:`~hindsight_lab.retrieve.lexical`), ``task_type`` (newest records of the query's task_type), ``trigger``
(rules whose trigger matches the query) and, with ``retrieval.step_rules``, ``step`` (checkable rules guarding a
step that most of the query's nearest past runs reached, :class:`~.paths.StepIndex`). Rules found by ``trigger`` or
``step`` are guaranteed a place (``retrieval.max_triggered``).

``recall`` is the part of a search that reads the store and the :class:`~.index.RecallIndex`;
:mod:`~hindsight_lab.retrieve.features` turns its candidates into the matrix the pure rerank scores. The sweep's
cached evaluator stores exactly these two things per query.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..config import RetrievalConfig
from ..types import RECALLED, Bucket, Kind, MemoryRecord
from .classify import learns_from
from .index import RecallIndex, stored_request
from .paths import infer_task_type, vote_shares


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
    type_probs: dict[str, float] = field(default_factory=dict)  # the classifier's probability of every type
    intents: list[str | None] | None = None  # retrieval.classifier.intent: the type of each candidate's request
    confidence_within: str = "all"  # retrieval.confidence_within: what the confidence feature compares
    intent_match: str = "same"  # retrieval.classifier.intent_match: what the task-type feature asks of intents
    type_match: str = "exact"  # retrieval.type_match: what the task-type feature asks of a type
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
            if self.intents is not None:  # a record added after the requests were typed (a flagged rival)
                self.intents.append(None)

    def __contains__(self, record_id: str) -> bool:
        return record_id in self._pos

    def record(self, record_id: str) -> MemoryRecord:
        """The candidate record with this id (it must be one)."""
        return self.records[self._pos[record_id]]

    def add_paths(self, record_id: str, paths: list[str]) -> None:
        """More paths that found a candidate already in the set."""
        self.paths[self._pos[record_id]].extend(paths)

    def __len__(self) -> int:
        return len(self.records)

    @property
    def forced(self) -> np.ndarray:
        """Rules guaranteed a place: those whose trigger fired or whose step the nearest past runs reached."""
        return np.array(["trigger" in p or "step" in p for p in self.paths], dtype=bool)

    def matrix(self) -> np.ndarray:
        return np.stack(self.embeddings) if self.embeddings else np.zeros((0, 1), dtype=np.float32)


def recall(store: Any, index: RecallIndex, q: np.ndarray, query: str, cfg: RetrievalConfig, *,
           task_type: str | None, domain: str | None, overlay: Mapping[str, MemoryRecord] | None = None,
           keywords: bool = True) -> Candidates:
    """Run the vector, keyword, task-type and trigger paths; infer the query's task_type when not given.

    ``overlay`` replaces stored records by newer in-process versions (pending bookkeeping). Without ``keywords``
    there is no keyword path and every lexical feature is 0. The index's classifier infers the task type when
    ``retrieval.classifier.method`` is ``logistic`` or ``embedding``; else the ``knn`` vote of the vector path's
    episodes and the index's retired successes (:class:`~.index.RetiredVoters`) decides.
    """
    overlay = overlay or {}
    out = Candidates(confidence_within=cfg.confidence_within, intent_match=cfg.classifier.intent_match,
                     type_match=cfg.type_match)
    lexical = index.lexical if keywords else None
    bm25 = lexical.scores(query) if lexical is not None else np.zeros(0)
    best = float(bm25.max()) if len(bm25) else 0.0
    scale = best if cfg.lexical_scale == "best" or lexical is None else lexical.self_score(query)

    def add(rec: MemoryRecord, emb: np.ndarray, sim: float, path: str) -> None:
        lex = min(lexical.score_of(bm25, rec.id) / scale, 1.0) if lexical is not None and scale > 0 else 0.0
        out.add(overlay.get(rec.id, rec), emb, sim, lex, path, domain)

    votes = _vector_path(store, index, q, cfg, add)
    out.task_type = task_type
    if task_type is not None:
        out.type_probs = {task_type: 1.0}
    else:
        _infer_task_type(out, index, q, query, cfg, votes)

    # the keyword, task-type and trigger paths: one store read per bucket for all of their new records
    wanted: list[tuple[str, Bucket, str]] = []  # (record id, bucket, path)
    if lexical is not None and best > 0:
        wanted += [(rid, Bucket(b), "keyword") for rid, b in lexical.top(bm25, cfg.path_depth)]
    if out.task_type is not None:
        wanted += [(rid, Bucket(b), "task_type") for rid, b in index.task_types.newest(out.task_type, cfg.path_depth)]
    out.triggered = index.triggers.match(query, out.task_type, domain)
    wanted += [(rid, Bucket.RULE, "trigger") for rid in out.triggered]
    if cfg.step_rules:
        fired = index.steps.match(_nearest_runs(out, cfg.top_k), domain=domain)
        stepped = [rid for rid in fired if rid not in out.triggered]
        out.triggered += stepped
        wanted += [(rid, Bucket.RULE, "step") for rid in stepped]
    paths_of: dict[str, list[str]] = {}
    by_bucket: dict[Bucket, list[str]] = {}
    for rid, bucket, path in wanted:
        if rid in out:
            out.add_paths(rid, [path])
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
                out.add_paths(rec.id, more)
    if cfg.classifier.intent and out.task_type is not None and cfg.classifier.method in ("logistic", "embedding"):
        _request_types(out, index)
    return out


def _nearest_runs(out: Candidates, n: int) -> list[tuple[tuple[str, ...], float]]:
    """The tools and similarity of the ``n`` episodes the vector path found nearest to the query."""
    runs = [(tuple((r.attrs or {}).get("tools", ())), sim) for r, sim, paths in
            zip(out.records, out.similarity, out.paths) if r.kind is Kind.EPISODE and "vector" in paths]
    return sorted(runs, key=lambda run: -run[1])[:n]


def _request_types(out: Candidates, index: RecallIndex) -> None:
    """The type the classifier gives each candidate episode's own request (rules and candidates: None). An episode
    whose run derived the query's type matches it whatever its request says, so its request is not typed (None)."""
    episodes = [i for i, r in enumerate(out.records) if r.kind is Kind.EPISODE and r.task_type != out.task_type]
    types = index.classifier.intents([stored_request(out.records[i]) for i in episodes])
    out.intents = [None] * len(out.records)
    for i, t in zip(episodes, types):
        out.intents[i] = t


def _vector_path(store: Any, index: RecallIndex, q: np.ndarray, cfg: RetrievalConfig,
                 add: Any) -> list[tuple[str | None, float]]:
    """Nearest records of each recalled bucket (``path_depth`` each, above ``min_similarity``); returns the
    ``knn`` votes (task type, similarity) of the nearest episodes that teach the classifier."""
    votes: list[tuple[str | None, float]] = []
    for bucket in RECALLED:
        n = index.count(bucket)
        if not n:
            continue
        want = max(cfg.path_depth, cfg.classifier.k) if bucket is Bucket.EPISODE else cfg.path_depth
        for rank, (rec, sim, emb) in enumerate(store.query(bucket, q, min(want, n))):
            cause = (rec.attrs or {}).get("failure_cause")
            if bucket is Bucket.EPISODE and learns_from(cfg.classifier.learn_from, rec.outcome, cause):
                votes.append((rec.task_type, sim))
            if rank < cfg.path_depth and sim >= cfg.min_similarity:
                add(rec, emb, sim, "vector")
    return votes


def _infer_task_type(out: Candidates, index: RecallIndex, q: np.ndarray, query: str, cfg: RetrievalConfig,
                     votes: list[tuple[str | None, float]]) -> None:
    c = cfg.classifier
    if not c.enabled:
        out.task_type_source, out.task_type_share = "off", 0.0
        return
    if c.method in ("logistic", "embedding"):
        task_type, share, out.type_probs = index.classifier.predict_with_probabilities(query)
    else:
        extra = index.retired_votes(q)
        if extra:
            votes = sorted(votes + list(extra), key=lambda v: -v[1])
        task_type, share = infer_task_type(votes, k=c.k, min_votes=c.min_votes, min_share=c.min_share)
        out.type_probs = vote_shares(votes, k=c.k)
    out.task_type = task_type
    out.task_type_source, out.task_type_share = ("inferred" if task_type else "abstained"), share
