"""Retrieval bookkeeping (DESIGN §3): when each record was last retrieved or had its trigger matched, and its
``debug_trace`` (which tasks retrieved it and how they ended). Held in process and written to the store in
batches; never read by ranking."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any, Iterable

from ..types import Hit, MemoryRecord
from .writes import Writes

#: Pending records written to the store at once when this many have piled up.
FLUSH_AT = 256


class Retrievals:
    """The pending bookkeeping of one memory; ``pending`` overlays the stored records it changed.

    Args:
        writes: the memory's writes (flushes store the records through them, re-indexing nothing).
        limit: entries kept in a record's debug_trace (``retrieval.debug_trace_max``; oldest dropped first).
    """

    def __init__(self, writes: Writes, limit: int) -> None:
        self.writes, self.limit = writes, limit
        self.pending: dict[str, MemoryRecord] = {}

    def current(self, rec: MemoryRecord) -> MemoryRecord:
        """The record with its pending bookkeeping."""
        return self.pending.get(rec.id, rec)

    def _traced(self, rec: MemoryRecord, entry: dict[str, Any]) -> tuple[Any, ...]:
        return (rec.debug_trace + (entry,))[-self.limit:] if self.limit else ()

    def retrieved(self, hits: Iterable[Hit], triggered: Iterable[tuple[str, MemoryRecord | None]], query: str,
                  task_id: str | None, now: datetime) -> None:
        """Note a search: each injected hit was retrieved (rank, query, task), and each rule whose trigger matched
        was triggered, injected or not (that counts for decay)."""
        stamp = now.isoformat()
        for rank, hit in enumerate(hits, 1):
            rec = self.current(hit.record)
            entry = {"at": stamp, "event": "retrieved", "rank": rank, "query": query[:120], "task_id": task_id}
            self.pending[hit.id] = replace(rec, last_retrieved_at=now, debug_trace=self._traced(rec, entry))
        for rid, found in triggered:  # (id, the recalled record or None)
            rec = self.pending.get(rid) or found
            if rec is not None:
                self.pending[rid] = replace(rec, last_triggered_at=now)
        if len(self.pending) >= FLUSH_AT:
            self.flush()

    def outcome(self, records: Iterable[MemoryRecord], outcome: str, task_id: str | None, now: datetime) -> None:
        """Note in each record's debug_trace how a task that used it ended."""
        for rec in records:
            rec = self.current(rec)
            entry = {"at": now.isoformat(), "event": "outcome", "outcome": outcome, "task_id": task_id}
            self.pending[rec.id] = replace(rec, debug_trace=self._traced(rec, entry))
        self.flush()

    def flush(self) -> None:
        """Store the pending bookkeeping."""
        if not self.pending:
            return
        by_bucket: dict[Any, list[MemoryRecord]] = {}
        for rec in self.pending.values():
            bucket = self.writes.index.bucket_of(rec.id)
            if bucket is not None:
                by_bucket.setdefault(bucket, []).append(rec)
        for bucket, recs in by_bucket.items():
            self.writes.annotate(bucket, recs)
        self.pending.clear()
