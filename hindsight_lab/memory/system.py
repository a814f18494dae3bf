"""`MemorySystem`: the lifecycle of one memory and its public verbs — write, search, reflect, feedback, maintain.

The work itself lives in the rooms that own it: writes, dedup, merge and promotion in :mod:`.writes`; decay, archive
and the conflict pass in :mod:`.maintain`; recall, rerank and injection in :mod:`hindsight_lab.retrieve`;
reflection in :mod:`hindsight_lab.reflect`, which reaches this memory only through a narrow port.

Examples:
    >>> from hindsight_lab import LabConfig, MemorySystem
    >>> mem = MemorySystem(LabConfig().with_params({"store.path": "/tmp/hl-doc"}))  # doctest: +SKIP
    >>> mem.write("Check the fare rules before refunding", confidence=0.8)  # doctest: +SKIP
    >>> mem.search("refund a ticket").to_frame()  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from ..config import LabConfig
from ..errors import MemoryNotFound, StoreError, ValidationError, invalid_input
from ..reflect.pipeline import ReflectionPipeline
from ..retrieve.search import Searcher
from ..trace import Episode
from ..types import BUCKETS, RECALLED, Bucket, Kind, MemoryRecord, WriteResult, new_id, utcnow
from .changes import ChangeFeed
from .feedback import SIGNALS, apply_feedback
from .inputs import parse_memory_input
from .maintain import MaintenanceReport, maintain
from .port import ReflectionPort
from .retrievals import Retrievals
from .state import MemoryState
from .working import WorkingMemory
from .writes import Writes

if TYPE_CHECKING:
    from ..reflect.pipeline import ReflectionOutcome
    from ..retrieve.result import SearchResult

logger = logging.getLogger(__name__)


class MemorySystem:
    """Layered hindsight memory on a store.

    Args:
        config: the :class:`LabConfig`; defaults everywhere when None.
        store: a store implementing :class:`~hindsight_lab.protocols.Store`; by default the one ``config.store``
            names (:func:`~hindsight_lab.store.store_for`): Chroma embedded at ``store.path`` or served at
            ``store.url``, or Postgres at a ``postgresql://`` or ``postgresql+embedded://`` ``store.url``.
        embedder: an :class:`~hindsight_lab.protocols.Embedder`; by default built from ``config.embedder``.
        reflector: a :class:`~hindsight_lab.reflect.protocol.Reflector`; by default the one ``config.reflect``
            names.
        clock: returns "now" (UTC) for every operation that does not get ``now=``; inject one for replays/tests.
        ids: makes the id of each new record from its kind (default random, :func:`~hindsight_lab.types.new_id`);
            replays pass a :class:`~hindsight_lab.types.SeededIds` so that a run is reproducible.
    """

    def __init__(self, config: LabConfig | None = None, *, store: Any = None, embedder: Any = None,
                 reflector: Any = None, clock: Callable[[], datetime] | None = None,
                 ids: Callable[[Kind], str] | None = None) -> None:
        self.config = config
        self.store = store
        self.embedder = embedder
        self.reflector = reflector
        self.clock = clock
        self.new_id: Callable[[Kind], str] = ids or new_id

    # ------------------------------------------------------------------ lifecycle
    def open(self, *, verify_model: bool = True) -> "MemorySystem":
        """Open the store and its in-process state (:mod:`.state`: read back from the copy a Postgres store keeps,
        else built from every record). Called by the first operation if needed."""
        from ..embed import TokenCounter, embedder_for
        from ..store import store_for

        self.config_ = cfg = self.config or LabConfig()
        if self.embedder is None:
            self.embedder = embedder_for(cfg.embedder)
        if self.store is None:
            self.store = store_for(cfg.store)
        self.tokens_ = TokenCounter.for_embedder(self.embedder)
        self.store.open(self.embedder.name(), verify=verify_model)
        self._working: WorkingMemory | None = None
        if self.reflector is None:
            from ..reflect.registry import make_reflector

            self.reflector = make_reflector(cfg.reflect)
        self._state = state = MemoryState(self.store, cfg, lambda texts: self.embedder.embed(texts))
        self.index_ = state.index
        self._writes = Writes(cfg, self.store, self.index_, self.embedder, self.new_id, state.contradictions)
        self._retrievals = Retrievals(self._writes, cfg.retrieval.debug_trace_max)
        self._writes.on_stored = self._retrievals.rebase
        self._searcher = Searcher(self.store, self.index_, self.embedder, self.tokens_.count)
        # without a saved state its counter is read before the scan, so no change falls between the two
        self._feed = ChangeFeed(self.store, self._writes, self._retrievals.rebase, state.observe, seen=state.seen,
                                written=state.save_if_due)
        self._writing = self._feed.writing
        self._reflection = ReflectionPipeline(ReflectionPort(self, self._writes, self._writing), self.reflector,
                                              cfg)
        state.start(self._writes, self._feed, self._reflection)
        return self

    def ensure_open(self) -> "MemorySystem":
        """Open the memory if it is not open yet."""
        if not hasattr(self, "config_"):
            self.open()
        return self

    def _now(self, now: datetime | None) -> datetime:
        return now or (self.clock() if self.clock else utcnow())

    def flush(self) -> None:
        """Persist pending retrieval bookkeeping (last_retrieved_at, debug_trace)."""
        if hasattr(self, "config_") and self._retrievals.pending:
            with self._writing():
                self._retrievals.flush()

    def close(self) -> None:
        if hasattr(self, "config_"):
            self.flush()
            self._state.save_at_close()
            self.store.close()
            del self.config_

    def __enter__(self) -> "MemorySystem":
        return self.ensure_open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ reads
    def get(self, memory_id: str) -> MemoryRecord:
        """The record with this id (archived ones included); :class:`MemoryNotFound` otherwise."""
        return self.get_many([memory_id])[0]

    def get_many(self, memory_ids: Sequence[str]) -> list[MemoryRecord]:
        """The records with these ids, in the order given (archived ones included), with one store read per
        bucket; :class:`MemoryNotFound` naming the first id there is no memory with."""
        self.ensure_open()
        by_bucket: dict[Bucket, list[str]] = {}
        for mid in dict.fromkeys(memory_ids):
            bucket = self.index_.bucket_of(mid)
            if bucket is None:
                raise MemoryNotFound(f"no memory with id {mid!r}")
            by_bucket.setdefault(bucket, []).append(mid)
        found = {rec.id: self._retrievals.current(rec) for bucket, ids in by_bucket.items()
                 for rec, _ in self.store.get(bucket, ids)}
        missing = next((mid for mid in memory_ids if mid not in found), None)
        if missing is not None:
            raise MemoryNotFound(f"no memory with id {missing!r}")
        return [found[mid] for mid in memory_ids]

    def _get(self, memory_id: str) -> tuple[MemoryRecord, np.ndarray, Bucket]:
        bucket = self.index_.bucket_of(memory_id)
        found = self.store.get(bucket, [memory_id]) if bucket else []
        if not found:
            raise MemoryNotFound(f"no memory with id {memory_id!r}")
        rec, emb = found[0]
        return self._retrievals.current(rec), emb, bucket

    def stored_episode(self, episode_id: str) -> MemoryRecord | None:
        """The stored record of the episode ``episode_id`` (archived ones included), or None."""
        self.ensure_open()
        return self._writes.stored_episode(episode_id)

    def derived_from(self, episode_id: str) -> bool:
        """Whether a candidate or rule (archived ones included) has ``episode_id`` among its sources."""
        self.ensure_open()
        return any(rec.kind is not Kind.EPISODE and episode_id in rec.source_episode_ids
                   for bucket in (Bucket.CANDIDATE, Bucket.RULE, Bucket.ARCHIVE) for rec in self.store.scan(bucket))

    def nearest_episodes(self, text: str, k: int, *, before: datetime | None = None) -> list[MemoryRecord]:
        """The ``k`` stored episode records nearest to ``text`` by embedding (created no later than ``before``).

        The window of nearest records widens (doubling) until ``k`` of them pass the time filter or it holds the
        whole store, so later episodes already stored (a run done again on its own store) change nothing."""
        self.ensure_open()
        total = self.index_.count(Bucket.EPISODE)
        if k <= 0 or not total:
            return []
        query, n = self.embedder.embed_query(text), min(total, k + 1 if before else k)
        while True:
            found = [r for r, _, _ in self.store.query(Bucket.EPISODE, query, n)
                     if before is None or r.created_at <= before]
            if len(found) >= k or n >= total:
                return found[:k]
            n = min(total, 2 * n)

    def records(self, kind: Kind | str | None = None, *, archived: bool = False) -> list[MemoryRecord]:
        """All records of a kind (or every kind), optionally only the archived ones."""
        self.ensure_open()
        self.flush()
        kind = Kind(kind) if kind is not None else None
        buckets = [Bucket.ARCHIVE] if archived else [b for b in RECALLED if kind is None or b == kind.value]
        out = [r for b in buckets for r in self.store.scan(b)]
        return [r for r in out if kind is None or r.kind is kind]

    def stored_sources(self) -> list[tuple[str, tuple[str, ...]]]:
        """``(memory_id, source_episode_ids)`` of every unarchived record, read from the recall index (no scan
        of the store): what a replay's oracle hit@k counts after every query."""
        self.ensure_open()
        return self.index_.sources()

    def stats(self) -> dict[str, Any]:
        """Counts per bucket and layer, task types, triggers, the embedding model."""
        self.ensure_open()
        counts = {b: self.store.count(b) for b in BUCKETS}
        episodes, candidates, rules = counts[Bucket.EPISODE], counts[Bucket.CANDIDATE], counts[Bucket.RULE]
        return {"episodes": episodes, "candidates": candidates, "rules": rules, "archived": counts[Bucket.ARCHIVE],
                "L2": episodes + candidates, "L3": rules,
                "task_types": dict(sorted(self.index_.task_types.types().items())),
                "triggers": len(self.index_.triggers), "working": len(self._working) if self._working else 0,
                "embedding_model": self.embedder.name()}

    # ------------------------------------------------------------------ writes
    def write_episode(self, episode: Episode | dict[str, Any], *, task_type: str | None = None,
                      now: datetime | None = None) -> MemoryRecord:
        """Write one finished episode as one L2 episode record (no LLM). See :meth:`write_episodes`."""
        return self.write_episodes([episode], task_types=[task_type], now=now)[0]

    def write_episodes(self, episodes: Sequence[Episode | dict[str, Any]], *,
                       task_types: Sequence[str | None] | None = None, now: datetime | None = None
                       ) -> list[MemoryRecord]:
        """Write finished episodes, one L2 record each, embedded in one batch.

        The record's task_type is derived from the tools the agent called
        (:func:`~hindsight_lab.trace.summary.derive_task_type`) unless the caller knows it (``task_types``); the
        episode's ground-truth ``task_type`` is never read. Writing the same ``episode_id`` again replaces its
        record. ``created_at`` is the episode's ``started_at`` when set.
        """
        self.ensure_open()
        eps = [_as_episode(e, i) for i, e in enumerate(episodes)]
        given = list(task_types) if task_types is not None else [None] * len(eps)
        with self._writing():
            known = {e.episode_id for e in eps if self.index_.record_of_episode(e.episode_id)}
            records = self._writes.episode_records(eps, given, self._now(now))
            # earlier episodes for the trigger rules, as a memory opened on the store counts them
            self._reflection.observe_stored([r for r in records if r.source_episode_ids[0] not in known])
            return records

    def write(self, content: str, **fields: Any) -> WriteResult:
        """Write a rule: an L2 candidate (``layer="L2"``, the default) or an L3 rule (``layer="L3"``).

        Dedup on write (DESIGN §2.3), rules first: a rule within ``dedup.similarity`` of an L3 rule confirms it;
        otherwise one within it of the nearest candidate merges into that candidate (``hit_count + 1``,
        confidence = running mean, provenance and counter_examples unioned); otherwise a new record is created.
        A candidate confirmed by ``promotion.min_hits`` different episodes with mean confidence above
        ``promotion.min_mean_confidence`` and counter_examples is promoted to L3 (de-duplicated against L3).

        Keyword fields: layer, task_type, domain, confidence, counter_examples, trigger, source_episode_ids,
        now. Invalid input raises :class:`ValidationError` naming the field; nothing is stored then.
        """
        self.ensure_open()
        now = self._now(fields.pop("now", None))
        item = parse_memory_input({"content": content, **fields})
        if item.layer == "L3" and self.config_.promotion.require_counter_examples and not item.counter_examples:
            raise ValidationError("write: counter_examples: an L3 rule needs at least one counter-example")
        emb = self.embedder.embed([item.content])[0]
        kind = Kind.RULE if item.layer == "L3" else Kind.CANDIDATE
        incoming = MemoryRecord(
            id=self.new_id(kind), kind=kind, content=item.content, task_type=item.task_type, domain=item.domain,
            confidence=item.confidence, counter_examples=tuple(item.counter_examples),
            trigger=item.trigger.to_trigger() if item.trigger else None,
            source_episode_ids=tuple(dict.fromkeys(item.source_episode_ids)), created_at=now,
            last_confirmed_at=now, embedding_model=self.embedder.name(),
            attrs={"check": item.check} if item.check else {})
        with self._writing():
            return self._writes.rule(incoming, emb, now)

    def put_records(self, records: Sequence[MemoryRecord], embeddings: np.ndarray) -> None:
        """Store records exactly as given, with their vectors: no dedup, no merge, archived ones to the archive.
        For import and migration (:mod:`hindsight_lab.memory.transfer`); an existing id in the same bucket is
        replaced."""
        self.ensure_open()
        self.flush()
        by_bucket: dict[Bucket, list[int]] = {}
        for i, rec in enumerate(records):
            by_bucket.setdefault(Bucket.of(rec), []).append(i)
        emb = np.asarray(embeddings, dtype=np.float32)
        with self._writing():
            for bucket, rows in by_bucket.items():
                self._writes.put(bucket, [records[i] for i in rows], emb[rows])

    def delete(self, memory_id: str) -> MemoryRecord:
        """Delete a record (archived ones included) and return it; :class:`MemoryNotFound` if there is none."""
        self.ensure_open()
        self.flush()
        with self._writing():
            rec, _, bucket = self._get(memory_id)
            self._writes.delete(bucket, [memory_id])
        return rec

    # ------------------------------------------------------------------ reflection (DESIGN §4)
    def set_reflector(self, reflector: Any) -> None:
        """Swap the reflector of an open memory (e.g. a wrapper that records or replays answers)."""
        self.ensure_open()
        self.reflector = reflector
        self._reflection.reflector = reflector

    def reflect(self, episode: Episode | dict[str, Any], *, task_type: str | None = None,
                now: datetime | None = None) -> "ReflectionOutcome":
        """Write a finished episode and, where a trigger rule fires, reflect on it.

        Returns the trigger decision and its reason, the episode record written, the reflection or its rejection
        reason, and the candidate write (created / merged / confirmed, and whether it was promoted).
        """
        return self.reflect_many([episode], task_types=[task_type], now=now)[0]

    def reflect_many(self, episodes: Sequence[Episode | dict[str, Any]], *,
                     task_types: Sequence[str | None] | None = None, now: datetime | None = None
                     ) -> list["ReflectionOutcome"]:
        """:meth:`reflect` for several episodes in order; the reflector gets them in one batch."""
        self.ensure_open()
        eps = [_as_episode(e, i) for i, e in enumerate(episodes)]
        given = list(task_types) if task_types is not None else [None] * len(eps)
        return self._reflection.run(eps, given, self._now(now))  # each write under the lock, the reflector not

    def reflection_stats(self) -> dict[str, Any]:
        """Trigger rate and counts per decision reason, rejection reason, write action; promotions (every candidate
        moved to L3 since open: on a reflection's write, or when later runs verified its check)."""
        self.ensure_open()
        return {**self._reflection.stats.as_dict(), "promotions": self._writes.promotions}

    # ------------------------------------------------------------------ search
    def search(self, query: str, *, task_type: str | None = None, domain: str | None = None,
               top_k: int | None = None, now: datetime | None = None, task_id: str | None = None,
               explain: bool = False, query_embedding: np.ndarray | None = None) -> "SearchResult":
        """Four-path recall (vector, keywords, task type, rule triggers), weighted rerank, token budget (DESIGN §3).

        Args:
            query: what the agent sees at task start.
            task_type: the query's task_type if the caller knows it; else the classifier infers it or abstains.
            domain: keep only records of this domain (or of none).
            top_k: overrides ``retrieval.top_k``.
            now: the clock for recency and bookkeeping.
            task_id: recorded in the debug_trace of every injected record.
            explain: also return every candidate with its features (``SearchResult.candidates``).
            query_embedding: the query's embedding by this memory's embedder, when the caller has it already
                (the server embeds concurrent queries together); by default the query is embedded here.
        """
        self.ensure_open()
        if not isinstance(query, str) or not query.strip():
            raise ValidationError(f"search: query: must be a non-empty string (got {query!r})")
        cfg = self.config_.retrieval
        k = cfg.top_k if top_k is None else int(top_k)
        if k < 1:
            raise ValidationError(f"search: top_k: must be at least 1 (got {top_k!r})")
        now = self._now(now)
        self._feed.catch_up()  # what other processes wrote (a store with a change log: Postgres)
        result, cands = self._searcher.search(
            query, cfg, top_k=k, now=now, task_type=task_type, domain=domain,
            working=self._working.records() if self._working else (), overlay=self._retrievals.pending,
            explain=explain, query_embedding=query_embedding)
        if cfg.track_retrievals:
            triggered = [(rid, cands.record(rid) if rid in cands else None) for rid in cands.triggered]
            self._retrievals.retrieved(result.hits, triggered, query, task_id, now)
            if self._retrievals.due:
                self.flush()
        return result

    def record_outcome(self, memory_ids: Iterable[str], outcome: str, *, task_id: str | None = None,
                       now: datetime | None = None) -> None:
        """Note in each memory's debug_trace how a task that used it ended (never read by ranking)."""
        self.ensure_open()
        now = self._now(now)
        self._retrievals.outcome([self._get(mid)[0] for mid in memory_ids], outcome, task_id, now)
        self.flush()

    # ------------------------------------------------------------------ working memory (L1)
    @contextmanager
    def working_memory(self, task_id: str) -> Iterator[WorkingMemory]:
        """L1 working memory for one task: injected first in every search inside the block, destroyed after."""
        self.ensure_open()
        if self._working is not None:
            raise StoreError(f"task {self._working.task_id!r} still holds working memory; end it first")
        self._working = WorkingMemory(task_id)
        try:
            yield self._working
        finally:
            self._working.clear()
            self._working = None

    # ------------------------------------------------------------------ feedback, maintenance, re-embedding
    def feedback(self, memory_id: str, signal: str | int, text: str | None = None, *,
                 now: datetime | None = None) -> MemoryRecord | None:
        """Up raises confidence, down lowers it at once, the ``delete_after_downs``-th down deletes the record
        (then None is returned). ``+1``/``-1`` are aliases; ``"correction"`` is a down with text."""
        self.ensure_open()
        kind = SIGNALS.get(signal.strip().lower() if isinstance(signal, str) else signal)
        if kind is None:
            raise ValidationError(f"feedback: signal: expected 'up', 'down', 'correction', +1 or -1 (got {signal!r})")
        self.flush()
        with self._writing():
            rec, _, bucket = self._get(memory_id)
            return apply_feedback(self._writes, rec, bucket, kind, text, self.config_.feedback)

    def maintain(self, now: datetime | None = None) -> MaintenanceReport:
        """Decay and archive on the given clock (DESIGN §2.6), then the conflict pass (``conflicts.enabled``)."""
        self.ensure_open()
        now = self._now(now)
        self.flush()
        with self._writing():
            return maintain(self._writes, now)

    def reembed(self, embedder: Any = None, *, show_progress: bool = False) -> dict[str, int]:
        """Rebuild every vector with ``embedder`` (default: the configured one) and record the new model.

        Works on a store that refused to open because of an embedding-model mismatch.
        """
        if embedder is not None:
            self.embedder = embedder
        if not hasattr(self, "config_"):
            self.open(verify_model=False)
        self.flush()
        name = self.embedder.name()
        done = {}
        with self._writing():
            for bucket in BUCKETS:
                recs = [replace(r, embedding_model=name) for r in self.store.scan(bucket)]
                embs = self.embedder.embed([r.embed_text for r in recs]) if recs else np.zeros((0, 1), np.float32)
                self.store.rebuild(bucket, recs, embs, name)
                done[str(bucket)] = len(recs)
        self.store.open(name)
        self._writes.embedder = self.embedder  # an embedder given here serves every later write and search
        self._searcher = replace(self._searcher, embedder=self.embedder)
        self.index_.classifier.forget_vectors()  # the embedding classifier re-learns in the new model's space
        return done


def _as_episode(data: Episode | dict[str, Any], position: int) -> Episode:
    if isinstance(data, Episode):
        return data
    from pydantic import ValidationError as PydanticError

    try:
        return Episode.model_validate(data)
    except PydanticError as exc:
        raise ValidationError(invalid_input(exc, f"write_episodes[{position}]")) from None
