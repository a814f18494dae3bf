"""Listing and inspecting a memory: the tables of ``hindsight-lab memories list`` and the whole story of one record
behind ``hindsight-lab inspect`` (both rendered by :mod:`hindsight_lab.cli.memories`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import MemoryNotFound, ValidationError
from ..types import Kind, MemoryRecord
from .export import all_rows, record_to_json

if TYPE_CHECKING:
    import pandas as pd

    from .system import MemorySystem


def list_frame(mem: "MemorySystem", *, layer: str | None = None, kind: str | None = None,
               task_type: str | None = None, archived: str = "active", limit: int | None = None
               ) -> "pd.DataFrame":
    """Records filtered by layer (L2/L3), kind, task_type; ``archived``: ``active``, ``archived`` or ``all``."""
    import pandas as pd

    if layer is not None and layer not in ("L2", "L3"):
        raise ValidationError(f"list: layer: expected L2 or L3 (got {layer!r}); L1 working memory is not stored")
    if kind is not None and kind not in ("episode", "candidate", "rule"):
        raise ValidationError(f"list: kind: expected episode, candidate or rule (got {kind!r})")
    recs = [rec for rec, _ in all_rows(mem, archived != "active")
            if (archived != "archived" or rec.archived) and (archived != "active" or not rec.archived)]
    recs = [r for r in recs if (layer is None or r.layer.value == layer) and (kind is None or r.kind.value == kind)
            and (task_type is None or r.task_type == task_type)]
    rows = [{"id": r.id, "layer": r.layer.value, "kind": r.kind.value, "task_type": r.task_type,
             "confidence": round(r.confidence, 3), "hits": r.hit_count, "archived": r.archived,
             "created_at": r.created_at.strftime("%Y-%m-%d %H:%M"), "flags": _flags(r),
             "content": " ".join(r.content.split())[:80]} for r in recs[:limit]]
    return pd.DataFrame(rows, columns=["id", "layer", "kind", "task_type", "confidence", "hits", "archived",
                                       "created_at", "flags", "content"])


def _flags(rec: MemoryRecord) -> str:
    out = []
    if rec.attrs.get("conflicts_with"):
        out.append(f"conflicts:{len(rec.attrs['conflicts_with'])}")
    if rec.attrs.get("superseded_by"):
        out.append("superseded")
    if rec.attrs.get("merged_from"):
        out.append(f"merged:{len(rec.attrs['merged_from'])}")
    return ",".join(out)


def inspect(mem: "MemorySystem", memory_id: str) -> dict[str, Any]:
    """Everything known about one memory: the record, its provenance (source episodes and how they ended), the
    retrievals and the outcomes of the tasks that used it, feedback, and conflict links (successor chain)."""
    rec = mem.get(memory_id)
    sources = []
    episodes = {r.source_episode_ids[0]: r for r in mem.records(Kind.EPISODE) if r.source_episode_ids}
    episodes.update({r.source_episode_ids[0]: r for r in mem.records(Kind.EPISODE, archived=True)
                     if r.source_episode_ids})
    for eid in rec.source_episode_ids:
        ep = episodes.get(eid)
        sources.append({"episode_id": eid, "memory_id": ep.id if ep else None, "outcome": ep.outcome if ep else None,
                        "task_type": ep.task_type if ep else None,
                        "instruction": " ".join((ep.key or ep.content).split())[:120] if ep else None})
    trace = [dict(e) for e in rec.debug_trace]
    chain, seen, cur = [], {rec.id}, rec
    while cur.attrs.get("superseded_by") and cur.attrs["superseded_by"] not in seen:
        nxt = cur.attrs["superseded_by"]
        seen.add(nxt)
        try:
            cur = mem.get(nxt)
        except MemoryNotFound:
            chain.append({"id": nxt, "state": "deleted"})
            break
        chain.append({"id": cur.id, "state": "archived" if cur.archived else "active",
                      "content": " ".join(cur.content.split())[:120]})
    return {"record": record_to_json(rec),
            "provenance": sources,
            "retrievals": [e for e in trace if e.get("event") == "retrieved"],
            "outcomes": [e for e in trace if e.get("event") == "outcome"],
            "feedback": {"ups": rec.ups, "downs": rec.downs, "notes": list(rec.feedback_notes)},
            "conflicts": {"conflicts_with": list(rec.attrs.get("conflicts_with", [])),
                          "superseded_by": rec.attrs.get("superseded_by"), "successor_chain": chain,
                          "supersedes": list(rec.attrs.get("supersedes", [])),
                          "merged_from": list(rec.attrs.get("merged_from", []))}}
