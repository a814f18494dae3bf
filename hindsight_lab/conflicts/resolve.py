"""Resolution of a contradicting pair (article §7.2), and which of several duplicates survives, as pure functions
of records (the merge itself is :meth:`~hindsight_lab.types.MemoryRecord.merged_with`).

A rule's **freshness** is ``last_confirmed_at`` (else ``created_at``). Its **strength** is its confidence shrunk
by how few episodes confirmed it and by the evidence against it that came later: ``confidence · hits / (hits +
evidence_prior + against)``, where ``against`` counts the confirmations of rivals that report this rule's own claim
failing (a failed run that did what it says: ``Verdict.refuted``) since it was last confirmed — all of a rival's
hits when the rival was created after that, else its latest one. A rival that merely advises something else is
weighed by its own strength, not counted against. Of two contradicting rules, the fresher one supersedes the other
when it is fresher by more than ``min_newer_days`` and stronger by at least ``supersede_margin``; otherwise both
are kept and flagged, so both are shown as conflicting and the agent decides in context (article §7.2).

Examples:
    >>> from datetime import datetime, timezone
    >>> from hindsight_lab.config import ConflictsConfig
    >>> from hindsight_lab.types import Kind, MemoryRecord
    >>> t = lambda d: datetime(2026, 1, d, tzinfo=timezone.utc)
    >>> old = MemoryRecord("rule-old", Kind.RULE, "A before B", confidence=0.6, created_at=t(1))
    >>> new = MemoryRecord("rule-new", Kind.RULE, "B before A", confidence=0.9, hit_count=3, created_at=t(9))
    >>> decide(old, new, ConflictsConfig())
    ('supersede', 'rule-old', 'rule-new')
    >>> proven = MemoryRecord("rule-old", Kind.RULE, "A before B", confidence=0.8, hit_count=4, created_at=t(1))
    >>> once = MemoryRecord("rule-new", Kind.RULE, "B before A", confidence=0.65, created_at=t(9))
    >>> decide(proven, once, ConflictsConfig())  # one newer run does not overturn a well-confirmed rule
    ('flag', 'rule-old', 'rule-new')
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Mapping

from ..types import Kind, MemoryRecord


def strength(rec: MemoryRecord, evidence_prior: float = 1.0, against: float = 0.0) -> float:
    """``confidence · hits / (hits + evidence_prior + against)``."""
    hits = max(rec.hit_count, 1)
    return rec.confidence * hits / (hits + evidence_prior + against)


def freshness(rec: MemoryRecord) -> datetime:
    return rec.last_confirmed_at or rec.created_at


def later_hits(rival: MemoryRecord, rec: MemoryRecord) -> int:
    """How many of ``rival``'s confirmations came after ``rec`` was last confirmed (see the module docstring)."""
    if rival.created_at > freshness(rec):
        return max(rival.hit_count, 1)
    return 1 if freshness(rival) > freshness(rec) else 0


def decide(a: MemoryRecord, b: MemoryRecord, cfg: Any, against: Mapping[str, float] | None = None
           ) -> tuple[str, str, str]:
    """``("supersede", old_id, new_id)`` or ``("flag", a_id, b_id)`` for two contradicting rules; ``against``
    holds each rule's count of later confirmations of rivals that report it failing (default: none)."""
    old, new = (a, b) if freshness(a) <= freshness(b) else (b, a)
    against = against or {}
    newer = freshness(new) - freshness(old) > timedelta(days=cfg.min_newer_days)
    stronger = strength(new, cfg.evidence_prior, against.get(new.id, 0)) \
        - strength(old, cfg.evidence_prior, against.get(old.id, 0)) >= cfg.supersede_margin - 1e-12
    if newer and stronger:
        return "supersede", old.id, new.id
    return "flag", a.id, b.id


def survivor(records: list[MemoryRecord]) -> MemoryRecord:
    """Which of several duplicates the others merge into: an L3 rule first, then the most confirmed, the oldest."""
    return min(records, key=lambda r: (r.kind is not Kind.RULE, -r.hit_count, r.created_at, r.id))
