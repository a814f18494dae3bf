"""Flagged pairs at recall time: the partner of a recalled flagged rule is recalled too, and each flagged rule is
injected with a mark naming its rival and quoting it, so the agent sees both sides and decides in context.

A flagged record carries ``attrs["conflicts_with"]``: ``[{"id", "kind", "content", "at"}]`` (written by the conflict
pass). The mark is part of the injected line, so the token budget counts it.

Examples:
    >>> from hindsight_lab.types import Kind, MemoryRecord
    >>> a = MemoryRecord("rule-aaaaaa111111", Kind.RULE, "Call A before B.", attrs={"conflicts_with": [
    ...     {"id": "rule-bbbbbb222222", "kind": "order", "content": "Call B before A."}]})
    >>> shown_records([a], {"rule-bbbbbb222222": "rule"}.get)[0].content
    'Call A before B. [conflicts with [L3#bbbbbb]: "Call B before A." Both kept: decide from the task.]'
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..types import Bucket, MemoryRecord

_LAYER = {Bucket.RULE: "L3", Bucket.CANDIDATE: "L2"}
MAX_QUOTE = 160


def partners(rec: MemoryRecord) -> list[Mapping[str, Any]]:
    """The conflict links of a record (empty for most)."""
    links = rec.attrs.get("conflicts_with") if rec.attrs else None
    return list(links) if isinstance(links, list) else []


def tag_of(record_id: str, bucket: str) -> str:
    """The injection tag a record in ``bucket`` has, e.g. ``[L3#a1b2c3]``."""
    return f"[{_LAYER.get(bucket, 'L2')}#{record_id.rsplit('-', 1)[-1][:6]}]"


def mark(rec: MemoryRecord, bucket_of: Callable[[str], str | None]) -> str:
    """`` [conflicts with [L3#…]: "…" Both kept: decide from the task.]`` for each rival still recalled."""
    parts = []
    for link in partners(rec):
        bucket = bucket_of(str(link.get("id")))
        if bucket not in _LAYER:
            continue  # superseded, archived or deleted since the pass
        quote = " ".join(str(link.get("content", "")).split())
        quote = quote if len(quote) <= MAX_QUOTE else quote[: MAX_QUOTE - 1] + "…"
        parts.append(f'{tag_of(str(link["id"]), bucket)}: "{quote}"')
    return f" [conflicts with {'; '.join(parts)} Both kept: decide from the task.]" if parts else ""


def shown_records(records: Sequence[MemoryRecord], bucket_of: Callable[[str], str | None]) -> list[MemoryRecord]:
    """Copies to render: flagged records get their mark appended to the content; the others are returned as is."""
    out = []
    for rec in records:
        extra = mark(rec, bucket_of) if partners(rec) else ""
        out.append(replace(rec, content=rec.content.rstrip() + extra) if extra else rec)
    return out


def add_partners(cands: Any, store: Any, bucket_of: Callable[[str], str | None], q: np.ndarray,
                 domain: str | None, overlay: Mapping[str, MemoryRecord] | None = None) -> None:
    """Add to the recall candidates the rivals of every flagged candidate (path ``conflict``)."""
    wanted: dict[str, list[str]] = {}
    for rec in list(cands.records):
        for link in partners(rec):
            pid = str(link.get("id"))
            bucket = bucket_of(pid)
            if bucket in _LAYER and pid not in cands and pid not in wanted.get(bucket, []):
                wanted.setdefault(bucket, []).append(pid)
    overlay = overlay or {}
    for bucket, ids in wanted.items():
        for rec, emb in store.get(bucket, ids):
            cands.add(overlay.get(rec.id, rec), emb, float(emb @ q), 0.0, "conflict", domain)
