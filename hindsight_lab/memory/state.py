"""The in-process state of an open memory — the recall index, the rules' checks, the evidence against stored
successes, the trigger state — and how it comes to be: read back from the copy the store keeps (:mod:`.snapshot`)
and caught up from the change log, or built from every record; saved again every ``store.snapshot_every`` changed
records and at close, where the store keeps one (Postgres).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

from ..config import LabConfig
from ..errors import StoreError
from ..retrieve.index import RecallIndex, is_retired
from ..types import BUCKETS, Bucket, Kind, MemoryRecord
from . import snapshot
from .evidence import Contradictions

logger = logging.getLogger(__name__)


class MemoryState:
    """One open memory's in-process state.

    Args:
        store: the open store.
        config: the memory's config.
        embed: texts → embeddings (the classifier's).

    The state is made at construction: read back (:attr:`saved`) or empty, to be filled by :meth:`start`.
    """

    def __init__(self, store: Any, config: LabConfig, embed: Callable[[list[str]], Any]) -> None:
        self.store, self.config = store, config
        self.functions = {"embed": embed, "load_archived": lambda ids: store.get(Bucket.ARCHIVE, ids)}
        self.saved = snapshot.load(store, config, self.functions) if config.store.snapshot_every else None
        ep = config.episode
        self.index = self.saved.index if self.saved else RecallIndex(
            config.retrieval.classifier, embed, self.functions["load_archived"])
        self.contradictions = self.saved.contradictions if self.saved else Contradictions(
            ep.retire_contradicted_after, ep.retire_significance)
        self._saved_changes = 0

    @property
    def seen(self) -> int | None:
        """The change number the state holds when it was read back (None: built from the records)."""
        return self.saved.seq if self.saved else None

    def start(self, writes: Any, feed: Any, reflection: Any) -> None:
        """Fill the state: the saved one's checks and trigger state and the changes after it, or every record."""
        self.writes, self.feed, self.reflection = writes, feed, reflection
        if self.saved is not None:
            writes.checked, reflection.policy.state = self.saved.checked, self.saved.triggers
            feed.catch_up()
            return
        episodes = []
        for bucket in BUCKETS:
            for rec in self.store.scan(bucket):
                writes.track(rec, bucket)
                if rec.kind is Kind.EPISODE:
                    episodes.append(rec)
        self.observe(sorted(episodes, key=lambda r: (r.created_at, r.id)))

    def observe(self, episodes: Sequence[MemoryRecord]) -> None:
        """Episode records new to this memory (oldest first): the evidence (live and retired ones) and the trigger
        state learn them."""
        prefixes = self.config.episode.read_only_prefixes
        for rec in episodes:
            if not rec.archived or is_retired(rec):
                self.contradictions.observe_record(rec, prefixes)  # state only: acted on at write
        self.reflection.observe_stored(episodes)

    def save_if_due(self, *, at_close: bool = False) -> None:
        """Save the state once ``store.snapshot_every`` records changed since the last save, or at close after any
        change (a store that keeps none, or a read-only one: never); the caller holds the write lock."""
        every, changed = self.config.store.snapshot_every, self.writes.changes - self._saved_changes
        if not every or not changed or (changed < every and not at_close) or self.config.store.read_only \
                or not callable(getattr(self.store, "save_snapshot", None)):
            return
        self.feed.catch_up()  # the stamp: every change up to it is in the state, none after it
        state = snapshot.State(self.feed.seen, self.index, self.writes.checked, self.contradictions,
                               self.reflection.policy.state)
        snapshot.save(self.store, self.config, state, self.functions)
        self._saved_changes = self.writes.changes

    def save_at_close(self) -> None:
        """Save what changed since the last save before the store closes (a failure is logged: the next open
        rebuilds from the records)."""
        if self.writes.changes > self._saved_changes and callable(getattr(self.store, "save_snapshot", None)):
            try:
                with self.feed.writing():
                    self.save_if_due(at_close=True)
            except StoreError as exc:
                logger.warning("the memory's state was not saved at close: %s", exc)
