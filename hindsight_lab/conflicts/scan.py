"""One conflict pass over L3 rules and L2 candidates: cluster, pair, judge, then plan merges, supersessions and
flags. Pure: it reads records and embeddings and returns a plan; :meth:`MemorySystem.maintain` applies it and
``hindsight-lab conflicts`` only shows it.

Examples:
    >>> from hindsight_lab.config import LabConfig
    >>> from hindsight_lab.types import Kind, MemoryRecord
    >>> import numpy as np
    >>> recs = [MemoryRecord("r1", Kind.RULE, "Call lookup_order before issue_refund."),
    ...         MemoryRecord("r2", Kind.RULE, "Call issue_refund first, then lookup_order.")]
    >>> plan = scan(recs, ["rule", "rule"], np.array([[1.0, 0.0], [0.9, 0.1]]), LabConfig())
    >>> [(f.a, f.b, f.verdict.kind) for f in plan.flags]
    [('r1', 'r2', 'order')]
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..trace.checks import Check
from ..types import Bucket, MemoryRecord
from .cluster import candidate_pairs, cluster_embeddings
from .detect import OfflineDetector, Verdict
from .resolve import decide, later_hits, strength, survivor

if TYPE_CHECKING:
    import pandas as pd

    from ..config import LabConfig

logger = logging.getLogger(__name__)

SCANNED_BUCKETS = (Bucket.RULE, Bucket.CANDIDATE)


@dataclass(frozen=True, slots=True)
class JudgedPair:
    """A compared pair (record ids), its similarity, why it was compared, and the verdict."""

    a: str
    b: str
    similarity: float
    source: str
    verdict: Verdict
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class Merge:
    """``losers`` fold into ``record`` (the survivor, already merged)."""

    record: MemoryRecord
    losers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Supersession:
    """``old`` is archived with a pointer to ``new``."""

    old: str
    new: str
    verdict: Verdict


@dataclass(frozen=True, slots=True)
class Flag:
    """``a`` and ``b`` contradict and are close: both are kept and shown as conflicting."""

    a: str
    b: str
    verdict: Verdict


@dataclass
class ConflictPlan:
    """The outcome of one pass: clusters, judged pairs, and what to merge, supersede and flag."""

    records: list[MemoryRecord]
    buckets: list[str]
    embeddings: np.ndarray
    labels: np.ndarray
    pairs: list[JudgedPair] = field(default_factory=list)
    merges: list[Merge] = field(default_factory=list)
    supersessions: list[Supersession] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    judge: dict[str, Any] = field(default_factory=dict)

    def record(self, record_id: str) -> MemoryRecord:
        return self.records[self._index()[record_id]]

    def bucket(self, record_id: str) -> str:
        return self.buckets[self._index()[record_id]]

    def _index(self) -> dict[str, int]:
        if not hasattr(self, "_pos"):
            self._pos = {r.id: i for i, r in enumerate(self.records)}
        return self._pos

    @property
    def n_clusters(self) -> int:
        return int(self.labels.max()) + 1 if len(self.labels) else 0

    def summary(self) -> dict[str, Any]:
        """Counts: records, clusters, noise, pairs compared (by source), conflicts, merges, supersessions, flags."""
        by_source: dict[str, int] = {}
        for p in self.pairs:
            by_source[p.source] = by_source.get(p.source, 0) + 1
        return {"records": len(self.records), "clusters": self.n_clusters,
                "noise": int((self.labels < 0).sum()), "pairs": len(self.pairs), "pairs_by_source": by_source,
                "conflicts": sum(p.verdict.conflict for p in self.pairs),
                "merged": sum(len(m.losers) for m in self.merges), "superseded": len(self.supersessions),
                "flagged": len(self.flags), "seconds": dict(self.seconds)}

    def clusters_frame(self) -> "pd.DataFrame":
        """One row per cluster (and one for noise): size, task types, two example rules."""
        import pandas as pd

        rows = []
        for label in sorted(set(self.labels.tolist())):
            members = [r for r, lab in zip(self.records, self.labels) if lab == label]
            rows.append({"cluster": int(label) if label >= 0 else "noise", "size": len(members),
                         "task_types": ", ".join(sorted({r.task_type or "-" for r in members})),
                         "examples": " | ".join(_short(r.content, 70) for r in members[:2])})
        return pd.DataFrame(rows, columns=["cluster", "size", "task_types", "examples"])

    def pairs_frame(self, *, conflicts_only: bool = False) -> "pd.DataFrame":
        """One row per compared pair: ids, similarity, source, verdict and what the pass does with it."""
        import pandas as pd

        outcome: dict[tuple[str, str], str] = {}
        for s in self.supersessions:
            outcome[tuple(sorted((s.old, s.new)))] = f"{s.old} superseded by {s.new}"
        for f in self.flags:
            outcome[tuple(sorted((f.a, f.b)))] = "flagged"
        losers = {x: m.record.id for m in self.merges for x in m.losers}
        rows = []
        for p in self.pairs:
            if conflicts_only and not p.verdict.conflict:
                continue
            key = tuple(sorted((p.a, p.b)))
            action = outcome.get(key, "")
            if not action and (losers.get(p.a) == p.b or losers.get(p.b) == p.a):
                action = "merged"
            rows.append({"a": p.a, "b": p.b, "similarity": round(p.similarity, 3), "source": p.source,
                         "conflict": p.verdict.conflict, "kind": p.verdict.kind or "", "action": action,
                         "reason": p.verdict.reason, "rule_a": _short(self.record(p.a).content, 90),
                         "rule_b": _short(self.record(p.b).content, 90)})
        return pd.DataFrame(rows, columns=["a", "b", "similarity", "source", "conflict", "kind", "action", "reason",
                                           "rule_a", "rule_b"])


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def make_judge(cfg: "LabConfig") -> Any:
    """The judge ``conflicts.judge`` names (the LiteLLM judge falls back to the offline detector per pair)."""
    offline = OfflineDetector.from_config(cfg.conflicts)
    if cfg.conflicts.judge == "litellm":
        from .llm import LiteLLMJudge

        return LiteLLMJudge.from_config(cfg.conflicts, fallback=offline)
    return offline


def read_store(store: Any) -> tuple[list[MemoryRecord], list[str], np.ndarray]:
    """Every L3 rule and L2 candidate of a store with its embedding, sorted by id (the pass is deterministic)."""
    rows = [(rec, emb, bucket) for bucket in SCANNED_BUCKETS
            for rec, emb in store.scan(bucket, with_embeddings=True)]
    rows.sort(key=lambda r: r[0].id)
    emb = np.stack([e for _, e, _ in rows]).astype(np.float32) if rows else np.zeros((0, 1), np.float32)
    return [r for r, _, _ in rows], [b for _, _, b in rows], emb


def scan(records: Sequence[MemoryRecord], buckets: Sequence[str], embeddings: np.ndarray, config: "LabConfig", *,
         judge: Any = None) -> ConflictPlan:
    """Cluster, pair and judge ``records`` (rules and candidates), and plan the merges, supersessions and flags.

    Args:
        records: the rules and candidates, with ``buckets`` (``"rule"`` / ``"candidate"``) and ``embeddings``.
        config: ``conflicts`` (clustering, pairing, resolution) and ``dedup`` (what counts as a duplicate).
        judge: anything with ``judge(a, b, task_type) -> Verdict``; default :func:`make_judge`.
    """
    cfg = config.conflicts
    judge = judge or make_judge(config)
    t0 = time.perf_counter()
    x = np.asarray(embeddings, dtype=np.float32)
    labels = cluster_embeddings(x, metric=cfg.metric, min_cluster_size=cfg.min_cluster_size,
                                min_samples=cfg.min_samples, cluster_selection_epsilon=cfg.cluster_selection_epsilon)
    t1 = time.perf_counter()
    groups = steps = None
    if cfg.same_task_type:
        codes: dict[str, int] = {}
        groups = np.array([codes.setdefault(r.task_type, len(codes)) if r.task_type else -1 for r in records])
        steps = _step_codes(records)
    found = candidate_pairs(x, labels, cluster_pairs=cfg.cluster_pairs, neighbours=cfg.neighbours,
                            min_similarity=cfg.min_similarity, groups=groups, steps=steps)
    t2 = time.perf_counter()
    plan = ConflictPlan(list(records), list(buckets), x, labels,
                        judge=getattr(judge, "describe", lambda: {"name": type(judge).__name__})())
    dup_at = config.dedup.similarity
    for p in found:
        a, b = records[p.i], records[p.j]
        verdict = judge.judge(a.content, b.content, a.task_type or b.task_type)
        plan.pairs.append(JudgedPair(a.id, b.id, p.similarity, p.source, verdict, p.similarity >= dup_at))
    t3 = time.perf_counter()
    _plan(plan, cfg)
    plan.seconds = {"cluster": t1 - t0, "pairs": t2 - t1, "judge": t3 - t2, "total": time.perf_counter() - t0}
    return plan


def _step_codes(records: Sequence[MemoryRecord]) -> np.ndarray:
    """Per record, a code of the step its check guards (-1 without a check). Two rules guarding one step are claims
    about what must come before it, which every run reaching that step verifies whatever its task type
    (:mod:`hindsight_lab.memory.verify`), so they are compared even when their task types differ."""
    codes: dict[str, int] = {}
    out = []
    for r in records:
        check = Check.of((r.attrs or {}).get("check"))
        out.append(codes.setdefault(check.target, len(codes)) if check is not None else -1)
    return np.array(out, dtype=np.int64)


def _plan(plan: ConflictPlan, cfg: Any) -> None:
    conflicting = {tuple(sorted((p.a, p.b))) for p in plan.pairs if p.verdict.conflict}
    group = {r.id: r.id for r in plan.records}

    def root(x: str) -> str:
        while group[x] != x:
            group[x] = group[group[x]]
            x = group[x]
        return x

    members: dict[str, list[str]] = {r.id: [r.id] for r in plan.records}
    if cfg.merge_duplicates:
        for p in sorted((p for p in plan.pairs if p.duplicate and not p.verdict.conflict),
                        key=lambda p: (-p.similarity, p.a, p.b)):
            ra, rb = root(p.a), root(p.b)
            if ra == rb or any(tuple(sorted((x, y))) in conflicting for x in members[ra] for y in members[rb]):
                continue
            group[rb] = ra
            members[ra] += members.pop(rb)
    final: dict[str, MemoryRecord] = {}
    for head, ids in members.items():
        recs = [plan.record(i) for i in ids]
        keep = survivor(recs)
        if len(recs) > 1:
            others = sorted((r for r in recs if r.id != keep.id), key=lambda r: r.id)
            merged = keep
            for other in others:
                merged = merged.merged_with(other)  # maintenance confirms nothing: no confirmed_at
            merged_from = list(dict.fromkeys([*keep.attrs.get("merged_from", []), *(r.id for r in others)]))
            merged = replace(merged, attrs={**merged.attrs, "merged_from": merged_from})
            plan.merges.append(Merge(merged, tuple(r.id for r in others)))
            keep = merged
        for i in ids:
            final[i] = keep
    # contradictions between the records that stay, strongest similarity first
    edges: list[tuple[MemoryRecord, MemoryRecord, Verdict]] = []
    seen: set[tuple[str, str]] = set()
    for p in sorted((p for p in plan.pairs if p.verdict.conflict), key=lambda p: (-p.similarity, p.a, p.b)):
        a, b = final[p.a], final[p.b]
        key = tuple(sorted((a.id, b.id)))
        if a.id != b.id and key not in seen:
            seen.add(key)
            edges.append((a, b, p.verdict))
    against: dict[str, float] = {}
    for a, b, verdict in edges:  # later confirmations of a rival reporting a rule failing count against it
        if verdict.refuted == "a":
            against[a.id] = against.get(a.id, 0) + later_hits(b, a)
        elif verdict.refuted == "b":
            against[b.id] = against.get(b.id, 0) + later_hits(a, b)
    successor: dict[str, tuple[str, float, Verdict]] = {}
    flagged: list[Flag] = []
    for a, b, verdict in edges:
        action, x, y = decide(a, b, cfg, against)
        if action == "supersede":
            s = strength(final[y], cfg.evidence_prior, against.get(y, 0))
            if x not in successor or s > successor[x][1]:
                successor[x] = (y, s, verdict)
        else:
            flagged.append(Flag(min(x, y), max(x, y), verdict))
    plan.supersessions = [Supersession(old, new, v) for old, (new, _, v) in sorted(successor.items())]
    gone = set(successor)
    plan.flags = [f for f in flagged if f.a not in gone and f.b not in gone]
