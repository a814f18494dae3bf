"""Applying a :class:`~hindsight_lab.conflicts.scan.ConflictPlan` to a memory (called by
:meth:`MemorySystem.maintain`; a helper of that class, so it uses its store and in-process indexes).

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
from typing import Any

from ..types import Kind, MemoryRecord
from .inject import partners
from .scan import ConflictPlan


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


def apply_plan(mem: Any, plan: ConflictPlan, now: datetime) -> Applied:
    """Merge, supersede and flag as planned; every write goes through ``mem.store`` and ``mem``'s indexes."""
    out = Applied()
    stamp = now.isoformat()
    updates: dict[str, MemoryRecord] = {}
    gone: set[str] = set()

    def current(record_id: str) -> MemoryRecord:
        return updates.get(record_id) or plan.record(record_id)

    for m in plan.merges:
        updates[m.record.id] = m.record
        for loser in m.losers:
            mem.store.delete(plan.bucket(loser), [loser])
            mem._unindex(loser)
            gone.add(loser)
            out.merged.append((loser, m.record.id))

    for s in plan.supersessions:
        old = _with_attrs(current(s.old), superseded_by=s.new, superseded_at=stamp, conflict_kind=s.verdict.kind,
                          conflict_reason=s.verdict.reason, conflicts_with=None)
        new = current(s.new)
        updates[s.new] = _with_attrs(new, supersedes=list(dict.fromkeys([*new.attrs.get("supersedes", []), s.old])))
        bucket = plan.bucket(s.old)
        mem.store.update(bucket, [old])
        updates.pop(s.old, None)
        mem._archive(bucket, [s.old])
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
        mem.store.update(bucket, recs)
        for rec in recs:
            mem._index(rec, bucket)

    index = {r.id: i for i, r in enumerate(plan.records)}
    for m in plan.merges:
        rec = updates.get(m.record.id)
        if rec is not None and m.record.id not in gone and rec.kind is Kind.CANDIDATE and mem._promotable(rec):
            promoted = mem._promote(rec, plan.embeddings[index[rec.id]], now)
            out.promoted.append(promoted.id)
    return out
