"""Record ⇄ Chroma row: flat metadata (JSON for lists and dicts, epoch seconds for datetimes, absent for None)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Mapping

from ..errors import StoreError
from ..types import Kind, MemoryRecord, Trigger

_DATES = ("created_at", "last_confirmed_at", "last_retrieved_at", "last_triggered_at")
_JSON = ("counter_examples", "source_episode_ids", "feedback_notes", "debug_trace", "trigger", "attrs")
_PLAIN = ("task_type", "domain", "confidence", "hit_count", "outcome", "task_id", "key", "ups", "downs",
          "decay_steps", "archived", "embedding_model")


def to_metadata(rec: MemoryRecord) -> dict[str, Any]:
    """Flat metadata for one record (its content goes in the document)."""
    meta: dict[str, Any] = {"kind": rec.kind.value}
    for name in _PLAIN:
        value = getattr(rec, name)
        if value is not None:
            meta[name] = value
    for name in _DATES:
        value = getattr(rec, name)
        if value is not None:
            meta[name] = value.timestamp()
    for name in _JSON:
        value = getattr(rec, name)
        if name == "trigger":
            if value is not None:
                meta[name] = json.dumps(value.to_dict(), ensure_ascii=False)
        elif name == "attrs":
            if value:
                meta[name] = json.dumps(dict(value), ensure_ascii=False)
        elif value:
            meta[name] = json.dumps(list(value), ensure_ascii=False)
    return meta


def from_row(record_id: str, document: str | None, meta: Mapping[str, Any] | None) -> MemoryRecord:
    """Rebuild a record from a Chroma row; a row this package did not write raises :class:`StoreError`."""
    if not meta or "kind" not in meta:
        raise StoreError(f"record {record_id!r} has no hindsight_lab metadata (was it written by another tool?)")
    try:
        kw: dict[str, Any] = {name: meta[name] for name in _PLAIN if name in meta}
        for name in _DATES:
            if name in meta:
                kw[name] = datetime.fromtimestamp(float(meta[name]), tz=timezone.utc)
        for name in ("counter_examples", "source_episode_ids", "feedback_notes"):
            if name in meta:
                kw[name] = tuple(json.loads(meta[name]))
        if "debug_trace" in meta:
            kw["debug_trace"] = tuple(json.loads(meta["debug_trace"]))
        if "attrs" in meta:
            kw["attrs"] = json.loads(meta["attrs"])
        if "trigger" in meta:
            kw["trigger"] = Trigger.from_dict(json.loads(meta["trigger"]))
        return MemoryRecord(id=record_id, kind=Kind(meta["kind"]), content=document or "", **kw)
    except (ValueError, TypeError, KeyError) as exc:
        raise StoreError(f"record {record_id!r} has unreadable metadata: {exc}") from exc
