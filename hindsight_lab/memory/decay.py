"""Decay and archive rules (DESIGN §2.6, article §7.3) as pure functions of a record, the clock and the config.

- An L2 record (episode or candidate) not retrieved for ``l2_archive_days`` (counted from ``last_retrieved_at``,
  else ``created_at``) is archived: kept, never recalled.
- An L3 rule is aged from the later of ``last_triggered_at`` and ``last_confirmed_at`` (else ``created_at``): at each
  of ``l3_decay_days`` its confidence is multiplied by ``l3_decay_factor`` (once per threshold, remembered in
  ``decay_steps``, reset when the rule is confirmed), and at ``l3_archive_days`` it is archived.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from ..config import DecayConfig
from ..types import MemoryRecord

_DAY = timedelta(days=1)


def l2_due_for_archive(rec: MemoryRecord, now: datetime, cfg: DecayConfig) -> bool:
    return cfg.archive_unretrieved and (now - (rec.last_retrieved_at or rec.created_at)) / _DAY >= cfg.l2_archive_days


def rule_age_days(rec: MemoryRecord, now: datetime) -> float:
    ref = max((t for t in (rec.last_triggered_at, rec.last_confirmed_at) if t is not None), default=rec.created_at)
    return (now - ref) / _DAY


def age_rule(rec: MemoryRecord, now: datetime, cfg: DecayConfig) -> MemoryRecord | str | None:
    """``"archive"``, a decayed copy of the rule, or None when nothing is due.

    Examples:
        >>> from datetime import datetime, timezone
        >>> from hindsight_lab.types import Kind
        >>> t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
        >>> rule = MemoryRecord(id="rule-1", kind=Kind.RULE, content="x", confidence=1.0, created_at=t0)
        >>> age_rule(rule, t0 + timedelta(days=180), DecayConfig()).confidence
        0.6400000000000001
    """
    age = rule_age_days(rec, now)
    if age >= cfg.l3_archive_days:
        return "archive"
    due = sum(age >= d for d in cfg.l3_decay_days)
    if due > rec.decay_steps:
        return replace(rec, decay_steps=due, confidence=rec.confidence * cfg.l3_decay_factor ** (due - rec.decay_steps))
    return None
