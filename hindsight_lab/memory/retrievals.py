"""Retrieval bookkeeping (DESIGN §3): when each record was last retrieved or had its trigger matched, and its
``debug_trace`` (which tasks retrieved it and how they ended). Held in process and written to the store in
batches (:data:`FLUSH_AT` records, or before a read or change that needs it stored); never read by ranking. A
change to a stamped record, made here (:attr:`~.writes.Writes.on_stored`) or by another process (the change
feed), puts the pending bookkeeping onto the changed record (:meth:`Retrievals.rebase`), so searches meanwhile see
the change, and a flush writes the bookkeeping onto the record as the store holds it then, never the copy
searched."""

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

    @property
    def due(self) -> bool:
        """Whether enough has piled up to be written (the memory flushes, under its write lock)."""
        return len(self.pending) >= FLUSH_AT

    def outcome(self, records: Iterable[MemoryRecord], outcome: str, task_id: str | None, now: datetime) -> None:
        """Note in each record's debug_trace how a task that used it ended."""
        for rec in records:
            rec = self.current(rec)
            entry = {"at": now.isoformat(), "event": "outcome", "outcome": outcome, "task_id": task_id}
            self.pending[rec.id] = replace(rec, debug_trace=self._traced(rec, entry))

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
            stored = {r.id: r for r, _ in self.writes.store.get(bucket, [r.id for r in recs])}
            self.writes.annotate(bucket, [self._onto(stored[r.id], r) for r in recs if r.id in stored])
        self.pending.clear()

    def rebase(self, rec: MemoryRecord) -> None:
        """``rec`` changed in the store: its pending bookkeeping now overlays the changed record."""
        if rec.id in self.pending:
            self.pending[rec.id] = self._onto(rec, self.pending[rec.id])

    def _onto(self, stored: MemoryRecord, pending: MemoryRecord) -> MemoryRecord:
        """The bookkeeping of ``pending`` on ``stored``: the later stamps, and the trace entries it added."""
        added = tuple(e for e in pending.debug_trace if e not in stored.debug_trace)
        return replace(stored, last_retrieved_at=_later(stored.last_retrieved_at, pending.last_retrieved_at),
                       last_triggered_at=_later(stored.last_triggered_at, pending.last_triggered_at),
                       debug_trace=(stored.debug_trace + added)[-self.limit:] if self.limit else ())


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    return max(a, b) if a is not None and b is not None else (a or b)
