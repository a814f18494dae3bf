"""Maintenance of one memory (DESIGN §2.6, article §7): decay and archive on the memory's clock, then the conflict
pass, whose :class:`~hindsight_lab.conflicts.scan.ConflictPlan` is applied here:

- **merge**: the survivor is updated (hits, confidence, provenance; ``attrs.merged_from``), the others deleted; a
  candidate that the merge makes promotable is promoted to L3.
- **supersede**: the old rule is archived with ``attrs.superseded_by`` (the successor's id), ``superseded_at``,
  ``conflict_kind`` and ``conflict_reason``; the successor lists it in ``attrs.supersedes``.
- **flag**: both records get ``attrs.conflicts_with`` (the rival's id, kind and text); links the pass no longer
  finds are removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..retrieve.marks import partners
from ..types import Bucket, Kind, MemoryRecord
from .decay import age_rule, l2_due_for_archive
from .writes import Writes

if TYPE_CHECKING:
    import pandas as pd

    from ..conflicts.scan import ConflictPlan


@dataclass(frozen=True, slots=True)
class MaintenanceReport:
    """What :meth:`MemorySystem.maintain` did: ids archived and decayed (DESIGN §2.6), and from the conflict pass
    duplicates merged ``(id, survivor)``, rules superseded ``(old, successor, kind)`` and pairs flagged as
    conflicting ``(a, b, kind)``; ``conflicts`` is the pass's plan (clusters, judged pairs), None when it is off."""

    now: datetime
    archived: list[str] = field(default_factory=list)
    decayed: list[str] = field(default_factory=list)
    merged: list[tuple[str, str]] = field(default_factory=list)
    superseded: list[tuple[str, str, str]] = field(default_factory=list)
    flagged: list[tuple[str, str, str]] = field(default_factory=list)
    conflicts: Any = None

    def to_frame(self) -> "pd.DataFrame":
        """One row per action: id, action (archived, decayed, merged, superseded, flagged), other id, kind."""
        import pandas as pd

        rows = [{"id": i, "action": "archived", "other": "", "kind": ""} for i in self.archived]
        rows += [{"id": i, "action": "decayed", "other": "", "kind": ""} for i in self.decayed]
        rows += [{"id": i, "action": "merged", "other": into, "kind": ""} for i, into in self.merged]
        rows += [{"id": i, "action": "superseded", "other": by, "kind": k} for i, by, k in self.superseded]
        rows += [{"id": a, "action": "flagged", "other": b, "kind": k} for a, b, k in self.flagged]
        return pd.DataFrame(rows, columns=["id", "action", "other", "kind"])


def maintain(writes: Writes, now: datetime) -> MaintenanceReport:
    """Decay and archive on ``now``'s clock, then the conflict pass (``conflicts.enabled``)."""
    store, config = writes.store, writes.config
    cfg = config.decay
    report = MaintenanceReport(now)
    to_archive: dict[Bucket, list[str]] = {Bucket.EPISODE: [], Bucket.CANDIDATE: [], Bucket.RULE: []}
    if cfg.archive_unretrieved:
        for bucket in (Bucket.EPISODE, Bucket.CANDIDATE):
            to_archive[bucket] = [r.id for r in store.scan(bucket) if l2_due_for_archive(r, now, cfg)]
    decayed = []
    for rec in store.scan(Bucket.RULE):
        aged = age_rule(rec, now, cfg)
        if aged == "archive":
            to_archive[Bucket.RULE].append(rec.id)
        elif aged is not None:
            decayed.append(aged)
    if decayed:
        store.update(Bucket.RULE, decayed)
        report.decayed.extend(r.id for r in decayed)
    for bucket, ids in to_archive.items():
        if ids:
            writes.archive(bucket, ids)
            report.archived.extend(ids)
    if config.conflicts.enabled:
        report = _resolve_conflicts(writes, now, report)
    return report


def _resolve_conflicts(writes: Writes, now: datetime, report: MaintenanceReport) -> MaintenanceReport:
    """The conflict pass (article §7.2, :mod:`hindsight_lab.conflicts`): cluster rules and candidates, merge
    duplicates, archive superseded rules with a pointer to their successor, flag close contradictions."""
    from ..conflicts.scan import read_store, scan

    plan = scan(*read_store(writes.store), writes.config)
    done = apply_plan(writes, plan, now)
    return replace(report, merged=done.merged, superseded=done.superseded, flagged=done.flagged, conflicts=plan)


@dataclass
class Applied:
    """What the pass changed: ``(loser, survivor)``, ``(old, new, kind)``, ``(a, b, kind)``, promoted ids."""

    merged: list[tuple[str, str]] = field(default_factory=list)
    superseded: list[tuple[str, str, str]] = field(default_factory=list)
    flagged: list[tuple[str, str, str]] = field(default_factory=list)
    promoted: list[str] = field(default_factory=list)


def _with_attrs(rec: MemoryRecord, **changes: Any) -> MemoryRecord:
    """``None`` removes a key. (A cleared list stays as ``[]``: a store's ``update`` merges metadata, so an attrs
    that became empty would not overwrite the stored one.)"""
    attrs = {k: v for k, v in {**rec.attrs, **changes}.items() if v is not None}
    return replace(rec, attrs=attrs)


def apply_plan(writes: Writes, plan: ConflictPlan, now: datetime) -> Applied:
    """Merge, supersede and flag as planned; every change goes through ``writes`` (store, index and evidence)."""
    out = Applied()
    stamp = now.isoformat()
    updates: dict[str, MemoryRecord] = {}
    gone: set[str] = set()

    def current(record_id: str) -> MemoryRecord:
        return updates.get(record_id) or plan.record(record_id)

    for m in plan.merges:
        updates[m.record.id] = m.record
        for loser in m.losers:
            writes.delete(plan.bucket(loser), [loser])
            gone.add(loser)
            out.merged.append((loser, m.record.id))

    for s in plan.supersessions:
        old = _with_attrs(current(s.old), superseded_by=s.new, superseded_at=stamp, conflict_kind=s.verdict.kind,
                          conflict_reason=s.verdict.reason, conflicts_with=None)
        new = current(s.new)
        updates[s.new] = _with_attrs(new, supersedes=list(dict.fromkeys([*new.attrs.get("supersedes", []), s.old])))
        bucket = plan.bucket(s.old)
        writes.annotate(bucket, [old])  # archived next, with its vector: the archive indexes it
        updates.pop(s.old, None)
        writes.archive(bucket, [s.old])
        gone.add(s.old)
        out.superseded.append((s.old, s.new, s.verdict.kind or ""))

    want: dict[str, list[dict[str, Any]]] = {}
    for f in plan.flags:
        for me, other in ((f.a, f.b), (f.b, f.a)):
            want.setdefault(me, []).append({"id": other, "kind": f.verdict.kind, "content": current(other).content,
                                            "reason": f.verdict.reason, "at": stamp})
        out.flagged.append((f.a, f.b, f.verdict.kind or ""))
    for rec in plan.records:
        if rec.id in gone:
            continue
        cur = current(rec.id)
        have = partners(cur)
        links = want.get(rec.id, [])
        if {(str(x.get("id")), x.get("kind")) for x in have} != {(x["id"], x["kind"]) for x in links}:
            updates[rec.id] = _with_attrs(cur, conflicts_with=links)

    by_bucket: dict[str, list[MemoryRecord]] = {}
    for rid, rec in updates.items():
        by_bucket.setdefault(plan.bucket(rid), []).append(rec)
    for bucket, recs in by_bucket.items():
        writes.update(bucket, recs)

    index = {r.id: i for i, r in enumerate(plan.records)}
    for m in plan.merges:
        rec = updates.get(m.record.id)
        if rec is not None and m.record.id not in gone and rec.kind is Kind.CANDIDATE and writes.promotable(rec):
            promoted = writes.promote(rec, plan.embeddings[index[rec.id]], now)
            out.promoted.append(promoted.id)
    return out
