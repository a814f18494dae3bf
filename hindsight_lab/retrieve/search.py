"""One search (DESIGN §3): the four recall paths, flagged rivals and their marks, the features, the pure rerank,
the token budget and the rendered injection block.

:func:`search` reads the store and the :class:`~.index.RecallIndex` and changes nothing; the memory keeps the
retrieval bookkeeping of what it returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..config import RetrievalConfig
from ..errors import ValidationError
from ..trace.checks import Check
from ..types import Hit, Kind, MemoryRecord, ScoreTerms
from .features import feature_matrix, raw_features
from .index import RecallIndex
from .inject import SECTIONS, fit_budget, render, render_line, section_of
from .marks import add_partners, shown_records
from .params import ParamBatch, RerankParams
from .recall import Candidates, recall
from .rerank import COLUMNS, rerank
from .result import CandidateSet, SearchResult


def covered(records: Sequence[MemoryRecord]) -> np.ndarray:
    """``(n, n)``: row ``i``, column ``j`` is 1 when record ``i`` is an L3 rule with a check and episode ``j``
    followed it and succeeded — the episode says what the rule says — else 0. Taken as a similarity, it makes the
    rerank's redundancy penalty (row: the selected record, column: a candidate) spend the budget on what is new once
    the rule is chosen. One way only: a rule is short and carries the lesson, so an episode chosen first does not
    push out the rule that covers it.

    Examples:
        >>> from hindsight_lab.types import Kind
        >>> rule = MemoryRecord("rule-1", Kind.RULE, "Before pay, call get.",
        ...                     attrs={"check": {"tools": ["get", "pay"]}})
        >>> ok = MemoryRecord("epis-1", Kind.EPISODE, "…", outcome="success", attrs={"tools": ["get", "pay"]})
        >>> bad = MemoryRecord("epis-2", Kind.EPISODE, "…", outcome="failure", attrs={"tools": ["get", "pay"]})
        >>> covered([rule, ok, bad]).tolist()
        [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    n = len(records)
    out = np.zeros((n, n))
    checks = [(i, Check.of((r.attrs or {}).get("check"))) for i, r in enumerate(records) if r.kind is Kind.RULE]
    checks = [(i, c) for i, c in checks if c is not None]
    if not checks:
        return out
    for j, rec in enumerate(records):
        if rec.kind is Kind.EPISODE and rec.outcome == "success":
            tools = list((rec.attrs or {}).get("tools", ()))
            for i, check in checks:
                if check.followed(tools):
                    out[i, j] = 1.0
    return out


@dataclass(frozen=True)
class Searcher:
    """What a search reads: the open store, its recall index, the embedder and the token counter."""

    store: Any
    index: RecallIndex
    embedder: Any
    count: Callable[[str], int]

    def search(self, query: str, cfg: RetrievalConfig, *, top_k: int, now: datetime, task_type: str | None = None,
               domain: str | None = None, working: Sequence[MemoryRecord] = (),
               overlay: Mapping[str, MemoryRecord] | None = None, explain: bool = False,
               query_embedding: np.ndarray | None = None) -> tuple[SearchResult, Candidates]:
        """Recall, rerank and fit to the budget; ``working`` (L1) records are injected first. Returns the result
        and the recall candidates (their ``triggered`` rules count for decay whether injected or not)."""
        q = self._embedded(query, cfg, task_type) if query_embedding is None else self._checked(query_embedding)
        cands = recall(self.store, self.index, q, query, cfg, task_type=task_type, domain=domain, overlay=overlay)
        add_partners(cands, self.store, self.index.bucket_of, q, domain, overlay)  # flagged rivals come along
        shown = shown_records(cands.records, self.index.bucket_of)  # flagged records carry their conflict mark
        embs = cands.matrix()
        forced = cands.forced
        params = RerankParams.from_config(cfg)
        raw = raw_features(cands, now)
        feats = feature_matrix(raw, ParamBatch.of(params))
        # einsum, not the @ of a threaded BLAS: its spinning worker threads slowed the next query encoding ~2x on
        # a busy 2-core machine (bench profile); the matrix is at most a few dozen rows
        sim = np.maximum(np.einsum("ik,jk->ij", embs, embs), covered(cands.records))
        ranked = rerank(feats, sim, params, top_k=top_k, forced=forced)

        working = list(working)
        ordered = working + [shown[i] for i in ranked.order]
        must = [True] * len(working) + [bool(forced[i]) for i in ranked.order]
        kept, line_tokens = fit_budget(ordered, must, cfg.token_budget, self.count)
        kept_set = set(kept)
        hits = [Hit(cands.records[i], tuple(cands.paths[i]), ScoreTerms(dict(zip(COLUMNS, ranked.terms[pos]))),
                    forced=bool(forced[i]), tokens=line_tokens[pos + len(working)])
                for pos, i in enumerate(ranked.order) if pos + len(working) in kept_set]
        injection = render([ordered[j] for j in kept], self.count, [line_tokens[j] for j in kept])
        detail = self._candidate_set(cands, raw, sim) if explain else None
        result = SearchResult(query, cands.task_type, cands.task_type_source, float(cands.task_type_share), hits,
                              injection, working=[ordered[j] for j in kept if j < len(working)],
                              n_candidates=len(cands), candidates=detail)
        return result, cands

    def _embedded(self, query: str, cfg: RetrievalConfig, task_type: str | None) -> np.ndarray:
        """The query's embedding; when the classifier will type the query by its masked text, that text is
        embedded in the same encoder pass (an embedder without ``embed_query_with`` leaves it to the classifier)."""
        both = getattr(self.embedder, "embed_query_with", None)
        typed = task_type is None and cfg.classifier.enabled and cfg.classifier.method == "embedding"
        masked = self.index.classifier.query_text(query) if typed and both is not None else None
        if masked is None:
            return self.embedder.embed_query(query)
        q, (vector,) = both(query, [masked])
        self.index.classifier.remember_query(masked, vector)
        return q

    def _checked(self, q: np.ndarray) -> np.ndarray:
        vec = np.asarray(q, dtype=np.float32).ravel()
        if vec.shape != (self.embedder.dim,):
            raise ValidationError(f"search: query_embedding: expected {self.embedder.dim} numbers, the dimension "
                                  f"of {self.embedder.name()} (got shape {np.shape(q)})")
        return vec

    def _candidate_set(self, cands: Candidates, raw: Mapping[str, np.ndarray], sim: np.ndarray) -> CandidateSet:
        shown = shown_records(cands.records, self.index.bucket_of)  # line tokens as injected (conflict marks)
        return CandidateSet(list(cands.records), [tuple(p) for p in cands.paths], dict(raw), sim, cands.forced,
                            np.array([self.count(render_line(r)) for r in shown], dtype=np.int64),
                            np.array([SECTIONS.index(section_of(r)) for r in cands.records], dtype=np.int64),
                            cands.task_type, float(cands.task_type_share))
