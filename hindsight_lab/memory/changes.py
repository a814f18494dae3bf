"""What other processes wrote: the in-process state of a memory (the recall index, the rules' checks, the evidence
and the trigger state) brought in step with a store that several processes write.

A store with a change log (Postgres, :mod:`hindsight_lab.store.pgchanges`) tells which records changed since a
counter value; :class:`ChangeFeed` re-reads them and applies each as the memory's own writes do — a record now in a
bucket is tracked there (index, checks), a deleted one forgotten, and an episode record this process has not seen
is observed by the evidence against stored successes and by the trigger rules. The store leaves out the changes
made through it (the memory applied them as it wrote). A store without a change log (Chroma, the dict store: one
writer) needs none.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import Any, Callable, Iterator, Sequence

from ..types import Bucket, Kind, MemoryRecord


class ChangeFeed:
    """The change counter this memory has seen, the way to catch up with the store, and one logical write.

    Args:
        store: the open store; without ``changes_since`` the feed reads nothing, and without ``exclusive`` a write
            takes no lock.
        writes: the memory's :class:`~hindsight_lab.memory.writes.Writes` (``track``, ``forget``, ``index``).
        rebase: puts a changed record under this process's pending retrieval bookkeeping.
        observe: the evidence and trigger state learn new episode records (oldest first).
        seen: the change number the memory's state holds (a saved state's); by default the store's counter now,
            read before the store is scanned at open.
        written: called at the end of each logical write, still under the write lock.
    """

    def __init__(self, store: Any, writes: Any, rebase: Callable[[MemoryRecord], None],
                 observe: Callable[[Sequence[MemoryRecord]], None], *, seen: int | None = None,
                 written: Callable[[], None] | None = None) -> None:
        self.store, self.writes, self.rebase, self.observe = store, writes, rebase, observe
        self.active = callable(getattr(store, "changes_since", None))
        self.seen = seen if seen is not None else store.change_seq() if self.active else 0
        self.written = written
        self._depth = 0

    @contextmanager
    def writing(self) -> Iterator[None]:
        """One logical write: the store's write lock across processes (where it has one), after catching up
        with what the others wrote, so that a dedup check sees every record it could merge with. Re-entrant."""
        if self._depth:
            yield
            return
        exclusive = getattr(self.store, "exclusive", None)
        with exclusive() if exclusive is not None else nullcontext():
            self._depth += 1
            try:
                self.catch_up()
                yield
                if self.written is not None:
                    self.written()
            finally:
                self._depth -= 1

    def catch_up(self) -> int:
        """Apply every change since the last call; returns how many records changed."""
        if not self.active:
            return 0
        writes = self.writes
        seq, changes = self.store.changes_since(self.seen)
        last: dict[str, Bucket | None] = dict(changes)  # in counter order: each record's latest bucket
        by_bucket: dict[Bucket, list[str]] = {}
        for rid, bucket in last.items():
            if bucket is None:
                if writes.index.bucket_of(rid) is not None:
                    writes.forget(rid)
            else:
                by_bucket.setdefault(bucket, []).append(rid)
        new: list[MemoryRecord] = []
        for bucket, ids in by_bucket.items():
            for rec, _ in self.store.get(bucket, ids):
                if rec.kind is Kind.EPISODE and writes.index.bucket_of(rec.id) is None:
                    new.append(rec)
                writes.track(rec, bucket)
                self.rebase(rec)
        if new:
            self.observe(sorted(new, key=lambda r: (r.created_at, r.id)))
        self.seen = seq
        return len(last)
