"""`MemorySystem`: write, search, feedback, maintain — orchestration only.

The pieces it wires together live elsewhere: the store (``store/``), the embedder and token counter (``embed/``),
the recall paths, rerank and injection (``retrieve/``), the episode summary (``summary.py``) and the config.

Examples:
    >>> from hindsight_lab import LabConfig, MemorySystem
    >>> mem = MemorySystem(LabConfig().with_params({"store.path": "/tmp/hl-doc"}))  # doctest: +SKIP
    >>> mem.write("Check the fare rules before refunding", confidence=0.8)  # doctest: +SKIP
    >>> mem.search("refund a ticket").to_frame()  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from .config import LabConfig
from .conflicts.inject import add_partners, shown_records
from .decay import age_rule, l2_due_for_archive
from .evidence import Contradictions, RetiredVoters
from .errors import MemoryNotFound, StoreError, ValidationError
from .inputs import parse_memory_input
from .protocols import BUCKETS
from .reflect.pipeline import PENDING, ReflectionOutcome, ReflectionPipeline
from .retrieve.inject import SECTIONS, fit_budget, render, render_line, section_of
from .retrieve.classify import TaskTypeClassifier, learns_from
from .retrieve.lexical import LexicalIndex
from .retrieve.paths import TaskTypeIndex, TriggerIndex
from .retrieve.recall import RECALLED_BUCKETS, Candidates, ages_days, features, recall
from .retrieve.rerank import enough_at, rerank
from .retrieve.result import CandidateSet, SearchResult
from .summary import episode_key, summarise
from .trace import Episode
from .types import Hit, Kind, MemoryRecord, ScoreTerms, WriteResult, new_id, utcnow
from .working import WorkingMemory

if TYPE_CHECKING:
    import pandas as pd

logger = logging.getLogger(__name__)

_FLUSH_AT = 256


def _decision_attrs(decision: Any) -> dict[str, Any]:
    """What an episode record keeps of its trigger decision: the reason, and while a reflection is asked for,
    ``reflected`` (the trigger state rebuilt from the store counts it) and ``reflection: pending``."""
    if decision is None:
        return {}
    asked = decision.reason if decision.reflect else None
    return {"decision": decision.reason, "reflected": asked, "reflection": PENDING if asked else None}


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


class MemorySystem:
    """Layered hindsight memory on a store.

    Args:
        config: the :class:`LabConfig`; defaults everywhere when None.
        store: a store implementing :class:`~hindsight_lab.protocols.Store`; by default a Chroma store built
            from ``config.store`` (embedded at ``store.path``, or the server at ``store.url``).
        embedder: an :class:`~hindsight_lab.protocols.Embedder`; by default built from ``config.embedder``.
        reflector: a :class:`~hindsight_lab.protocols.Reflector`; by default the one ``config.reflect`` names.
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
        """Open the store and rebuild the in-process indexes. Called by the first operation if needed."""
        from .embed import TokenCounter, embedder_for
        from .store.chroma import ChromaStore

        self.config_ = self.config or LabConfig()
        if self.embedder is None:
            self.embedder = embedder_for(self.config_.embedder)
        if self.store is None:
            self.store = ChromaStore.from_config(self.config_.store)
        self.tokens_ = TokenCounter.for_embedder(self.embedder)
        self.store.open(self.embedder.name(), verify=verify_model)
        self._pending: dict[str, MemoryRecord] = {}
        self._working: WorkingMemory | None = None
        if self.reflector is None:
            from .reflect.registry import make_reflector

            self.reflector = make_reflector(self.config_.reflect)
        self._reflection = ReflectionPipeline(self, self.reflector)
        self._rebuild_indexes()
        return self

    def _rebuild_indexes(self) -> None:
        self._task_types = TaskTypeIndex()
        self._triggers = TriggerIndex()
        self._lexical = LexicalIndex()
        c = self.config_.retrieval.classifier
        self._classifier = TaskTypeClassifier(c.max_per_type, c.min_votes, c.min_share, method=(
            "embedding" if c.method == "embedding" else "logistic"), embed=lambda texts: self.embedder.embed(texts),
            describe_weight=c.describe_weight)
        self._bucket_of: dict[str, str] = {}
        self._counts: dict[str, int] = {b: 0 for b in BUCKETS}
        self._episode_ids: dict[str, str] = {}
        ep = self.config_.episode
        self._contradictions = Contradictions(ep.retire_contradicted_after, ep.retire_significance)
        self._retired = RetiredVoters(lambda ids: self.store.get("archive", ids))
        episodes = []
        for bucket in BUCKETS:
            for rec in self.store.scan(bucket):
                self._index(rec, bucket)
                if rec.kind is Kind.EPISODE:
                    episodes.append(rec)
        prefixes = ep.read_only_prefixes
        live_or_retired = [r for r in episodes if not r.archived or (r.attrs or {}).get("retired_by")]
        for rec in sorted(live_or_retired, key=lambda r: (r.created_at, r.id)):
            self._contradictions.observe_record(rec, prefixes)  # state only: its verdicts were acted on at write
        self._reflection.observe_stored(episodes)

    def _index(self, rec: MemoryRecord, bucket: str) -> None:
        old = self._bucket_of.get(rec.id)
        if old != bucket:
            if old is not None:
                self._counts[old] -= 1
            self._counts[bucket] += 1
        self._bucket_of[rec.id] = bucket
        retired = bool((rec.attrs or {}).get("retired_by"))
        if bucket == "archive":
            if not retired:
                self._contradictions.remove(rec.id)
            self._task_types.remove(rec.id)
            self._triggers.remove(rec.id)
            self._lexical.remove(rec.id)
            if not retired:
                self._classifier.remove(rec.id)
                return
            self._retired.add(rec.id)  # a retired success still shows how its kind of task is worded
        else:
            self._retired.remove(rec.id)
            self._task_types.add(rec.id, rec.task_type, rec.created_at.timestamp(), bucket)
            self._lexical.add(rec.id, rec.embed_text, bucket)
        if rec.kind is Kind.EPISODE:  # without a task_type (not learnt from) the classifier forgets the record
            learnt = learns_from(self.config_.retrieval.classifier.learn_from, rec.outcome)
            self._classifier.add(rec.id, rec.embed_text, rec.task_type if learnt else None,
                                 rec.created_at.timestamp(), tools=(rec.attrs or {}).get("tools", ()))
        if bucket == "archive":
            return
        if rec.kind is Kind.RULE:
            self._triggers.add(rec.id, rec.trigger, rec.domain)
        if rec.kind is Kind.EPISODE and rec.source_episode_ids:
            self._episode_ids[rec.source_episode_ids[0]] = rec.id

    def _unindex(self, record_id: str) -> None:
        old = self._bucket_of.pop(record_id, None)
        if old is not None:
            self._counts[old] -= 1
        self._contradictions.remove(record_id)
        self._retired.remove(record_id)
        self._task_types.remove(record_id)
        self._triggers.remove(record_id)
        self._lexical.remove(record_id)
        self._classifier.remove(record_id)

    def _ready(self) -> None:
        if not hasattr(self, "config_"):
            self.open()

    def _now(self, now: datetime | None) -> datetime:
        return now or (self.clock() if self.clock else utcnow())

    def flush(self) -> None:
        """Persist pending retrieval bookkeeping (last_retrieved_at, debug_trace)."""
        if getattr(self, "_pending", None):
            by_bucket: dict[str, list[MemoryRecord]] = {}
            for rec in self._pending.values():
                bucket = self._bucket_of.get(rec.id)
                if bucket is not None:
                    by_bucket.setdefault(bucket, []).append(rec)
            for bucket, recs in by_bucket.items():
                self.store.update(bucket, recs)
            self._pending.clear()

    def close(self) -> None:
        if hasattr(self, "config_"):
            self.flush()
            self.store.close()
            del self.config_

    def __enter__(self) -> "MemorySystem":
        self._ready()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ reads
    def get(self, memory_id: str) -> MemoryRecord:
        """The record with this id (archived ones included); :class:`MemoryNotFound` otherwise."""
        self._ready()
        return self._get(memory_id)[0]

    def _get(self, memory_id: str) -> tuple[MemoryRecord, np.ndarray, str]:
        bucket = self._bucket_of.get(memory_id)
        found = self.store.get(bucket, [memory_id]) if bucket else []
        if not found:
            raise MemoryNotFound(f"no memory with id {memory_id!r}")
        rec, emb = found[0]
        return self._pending.get(memory_id, rec), emb, bucket

    def stored_episode(self, episode_id: str) -> MemoryRecord | None:
        """The stored record of the episode ``episode_id`` (archived ones included), or None."""
        self._ready()
        rid = self._episode_ids.get(episode_id)
        for bucket in ("episode", "archive") if rid else ():
            found = self.store.get(bucket, [rid])
            if found:
                return found[0][0]
        return None

    def derived_from(self, episode_id: str) -> bool:
        """Whether a candidate or rule (archived ones included) has ``episode_id`` among its sources."""
        self._ready()
        return any(rec.kind is not Kind.EPISODE and episode_id in rec.source_episode_ids
                   for bucket in ("candidate", "rule", "archive") for rec in self.store.scan(bucket))

    def nearest_episodes(self, text: str, k: int, *, before: datetime | None = None) -> list[MemoryRecord]:
        """The ``k`` stored episode records nearest to ``text`` by embedding (created no later than ``before``).

        The window of nearest records widens (doubling) until ``k`` of them pass the time filter or it holds the
        whole store, so later episodes already stored (a run done again on its own store) change nothing."""
        self._ready()
        total = self._counts["episode"]
        if k <= 0 or not total:
            return []
        query, n = self.embedder.embed_query(text), min(total, k + 1 if before else k)
        while True:
            found = [r for r, _, _ in self.store.query("episode", query, n) if before is None or r.created_at <= before]
            if len(found) >= k or n >= total:
                return found[:k]
            n = min(total, 2 * n)

    def records(self, kind: Kind | str | None = None, *, archived: bool = False) -> list[MemoryRecord]:
        """All records of a kind (or every kind), optionally only the archived ones."""
        self._ready()
        self.flush()
        kind = Kind(kind) if kind is not None else None
        buckets = ["archive"] if archived else [b for b in RECALLED_BUCKETS if kind is None or b == kind.value]
        out = [r for b in buckets for r in self.store.scan(b)]
        return [r for r in out if kind is None or r.kind is kind]

    def stats(self) -> dict[str, Any]:
        """Counts per bucket and layer, task types, triggers, the embedding model."""
        self._ready()
        self.flush()
        counts = {b: self.store.count(b) for b in BUCKETS}
        return {"episodes": counts["episode"], "candidates": counts["candidate"], "rules": counts["rule"],
                "archived": counts["archive"], "L2": counts["episode"] + counts["candidate"], "L3": counts["rule"],
                "task_types": dict(sorted(self._task_types.types().items())), "triggers": len(self._triggers),
                "working": len(self._working) if self._working else 0, "embedding_model": self.embedder.name()}

    # ------------------------------------------------------------------ episode writes (L2, never merged)
    def write_episode(self, episode: Episode | dict[str, Any], *, task_type: str | None = None,
                      now: datetime | None = None) -> MemoryRecord:
        """Write one finished episode as one L2 episode record (no LLM). See :meth:`write_episodes`."""
        return self.write_episodes([episode], task_types=[task_type], now=now)[0]

    def write_episodes(self, episodes: Sequence[Episode | dict[str, Any]], *,
                       task_types: Sequence[str | None] | None = None, now: datetime | None = None
                       ) -> list[MemoryRecord]:
        """Write finished episodes, one L2 record each, embedded in one batch.

        The record's task_type is derived from the tools the agent called (:func:`derive_task_type`) unless the
        caller knows it (``task_types``); the episode's ground-truth ``task_type`` is never read. Writing the same
        ``episode_id`` again replaces its record. ``created_at`` is the episode's ``started_at`` when set.
        """
        self._ready()
        eps = [self._as_episode(e, i) for i, e in enumerate(episodes)]
        given = list(task_types) if task_types is not None else [None] * len(eps)
        return self._write_episode_records(eps, given, self._now(now))

    def _write_episode_records(self, eps: Sequence[Episode], given: Sequence[str | None], now: datetime,
                               compressed: Sequence[Any] | None = None,
                               decisions: Sequence[Any] | None = None) -> list[MemoryRecord]:
        from .reflect.compress import compress

        cfg = self.config_.episode
        records = []
        for i, (ep, tt) in enumerate(zip(eps, given)):
            comp = compressed[i] if compressed is not None else compress(
                ep, self.config_.reflect.compress, cfg.read_only_prefixes, task_type=tt)
            conf = {"success": cfg.success_confidence, "partial": cfg.partial_confidence,
                    "failure": cfg.failure_confidence}[ep.outcome]
            attrs = {"tools": list(comp.tools), "calls": list(comp.calls), "n_steps": comp.n_steps,
                     "user_turns": comp.user_turns,
                     "errors": [list(e) for e in comp.errors], "error_calls": list(comp.error_calls),
                     "failure_cause": ep.failure_cause,
                     **_decision_attrs(decisions[i] if decisions is not None else None)}
            records.append(MemoryRecord(
                id=self._episode_ids.get(ep.episode_id) or self.new_id(Kind.EPISODE), kind=Kind.EPISODE,
                content=summarise(ep, cfg.summary_max_chars), key=episode_key(ep, cfg.key),
                task_type=comp.task_type, domain=ep.domain, confidence=conf, outcome=ep.outcome, task_id=ep.task_id,
                source_episode_ids=(ep.episode_id,), created_at=ep.started_at or now,
                embedding_model=self.embedder.name(), attrs={k: v for k, v in attrs.items() if v}))
        if not records:
            return []
        embeddings = self.embedder.embed([r.embed_text for r in records])
        self.store.upsert("episode", records, embeddings)
        for rec in records:
            self._index(rec, "episode")
        for rec in records:  # later evidence for or against stored successes (lucky ones, changed rules)
            verdict = self._contradictions.observe_record(rec, cfg.read_only_prefixes)
            if verdict.retire:
                by = list(self._contradictions.refusals_of[verdict.retire[0]])
                self._archive("episode", verdict.retire, attrs={"retired_by": by})
                logger.info("retired %d contradicted successes (refused again: %s)", len(verdict.retire), by)
            if verdict.reinstate:
                self._move("archive", "episode", verdict.reinstate,  # a later success passed the refused step
                           lambda r, by=rec.id: replace(r, archived=False, attrs={
                               **{k: v for k, v in r.attrs.items() if k != "retired_by"}, "reinstated_by": by}))
                logger.info("reinstated %d successes (%s passed the refused step)", len(verdict.reinstate), rec.id)
        return records

    @staticmethod
    def _as_episode(data: Episode | dict[str, Any], position: int) -> Episode:
        if isinstance(data, Episode):
            return data
        from pydantic import ValidationError as PydanticError

        from .inputs import describe

        try:
            return Episode.model_validate(data)
        except PydanticError as exc:
            raise ValidationError(describe(exc, f"write_episodes[{position}]")) from None

    # ------------------------------------------------------------------ rule writes (dedup, merge, promotion)
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
        self._ready()
        now = self._now(fields.pop("now", None))
        item = parse_memory_input({"content": content, **fields})
        if item.layer == "L3" and self.config_.promotion.require_counter_examples and not item.counter_examples:
            raise ValidationError("write: counter_examples: an L3 rule needs at least one counter-example")
        self.flush()
        emb = self.embedder.embed([item.content])[0]
        incoming = MemoryRecord(
            id=self.new_id(Kind.RULE if item.layer == "L3" else Kind.CANDIDATE),
            kind=Kind.RULE if item.layer == "L3" else Kind.CANDIDATE, content=item.content,
            task_type=item.task_type, domain=item.domain, confidence=item.confidence,
            counter_examples=tuple(item.counter_examples),
            trigger=item.trigger.to_trigger() if item.trigger else None,
            source_episode_ids=tuple(dict.fromkeys(item.source_episode_ids)), created_at=now,
            last_confirmed_at=now, embedding_model=self.embedder.name())
        rule = self._nearest_match("rule", incoming, emb)
        if rule is not None:
            return WriteResult("confirmed", self._merge_into(rule, incoming, "rule", now))
        if incoming.kind is Kind.RULE:
            self._put("rule", incoming, emb)
            return WriteResult("created", incoming)
        candidate = self._nearest_match("candidate", incoming, emb)
        if candidate is None:
            self._put("candidate", incoming, emb)
            return WriteResult("created", incoming)
        merged = self._merge_into(candidate, incoming, "candidate", now)
        if self._promotable(merged):
            return WriteResult("merged", self._promote(merged, candidate[1], now), promoted=True)
        return WriteResult("merged", merged)

    def _nearest_match(self, bucket: str, rec: MemoryRecord, emb: np.ndarray
                       ) -> tuple[MemoryRecord, np.ndarray] | None:
        cfg = self.config_.dedup
        if not self._counts[bucket]:
            return None
        for other, sim, other_emb in self.store.query(bucket, emb, 5):
            if sim < cfg.similarity:
                break
            if cfg.same_task_type and None not in (rec.task_type, other.task_type) \
                    and rec.task_type != other.task_type:
                continue
            if self._contradicts(rec, other):
                continue  # opposite orders embed close together: never merge them (issue 6)
            return other, other_emb
        return None

    def _contradicts(self, a: MemoryRecord, b: MemoryRecord) -> bool:
        c = self.config_.conflicts
        if not c.block_contradicting_merge:
            return False
        from .conflicts.detect import OfflineDetector

        return OfflineDetector(min_overlap=c.min_overlap).judge(a.content, b.content).conflict

    def _merge_into(self, target: tuple[MemoryRecord, np.ndarray], new: MemoryRecord, bucket: str,
                    now: datetime) -> MemoryRecord:
        old = target[0]
        hits = old.hit_count + new.hit_count
        merged = replace(
            old, hit_count=hits,
            confidence=(old.confidence * old.hit_count + new.confidence * new.hit_count) / hits,
            source_episode_ids=tuple(dict.fromkeys(old.source_episode_ids + new.source_episode_ids)),
            counter_examples=tuple(dict.fromkeys(old.counter_examples + new.counter_examples)),
            trigger=old.trigger or new.trigger, task_type=old.task_type or new.task_type,
            domain=old.domain or new.domain, last_confirmed_at=now, decay_steps=0)
        self.store.update(bucket, [merged])
        self._index(merged, bucket)
        return merged

    def _promotable(self, rec: MemoryRecord) -> bool:
        p = self.config_.promotion
        return (len(set(rec.source_episode_ids)) >= p.min_hits and rec.confidence > p.min_mean_confidence
                and (bool(rec.counter_examples) or not p.require_counter_examples))

    def _promote(self, cand: MemoryRecord, emb: np.ndarray, now: datetime) -> MemoryRecord:
        """Move a candidate to L3, merging it into an equivalent rule when there is one."""
        as_rule = replace(cand, kind=Kind.RULE, last_confirmed_at=now)
        match = self._nearest_match("rule", as_rule, emb)
        if match is not None:
            result = self._merge_into(match, as_rule, "rule", now)
        else:
            self._put("rule", as_rule, emb)
            result = as_rule
        self.store.delete("candidate", [cand.id])
        if result.id != cand.id:
            self._unindex(cand.id)
        logger.info("promoted %s to L3 as %s", cand.id, result.id)
        return result

    def _put(self, bucket: str, rec: MemoryRecord, emb: np.ndarray) -> None:
        self.store.upsert(bucket, [rec], emb[None, :])
        self._index(rec, bucket)

    # ------------------------------------------------------------------ reflection (DESIGN §4)
    def set_reflector(self, reflector: Any) -> None:
        """Swap the reflector of an open memory (e.g. a wrapper that records or replays answers)."""
        self._ready()
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
        self._ready()
        eps = [self._as_episode(e, i) for i, e in enumerate(episodes)]
        given = list(task_types) if task_types is not None else [None] * len(eps)
        self.flush()
        return self._reflection.run(eps, given, self._now(now))

    def reflection_stats(self) -> dict[str, Any]:
        """Trigger rate and counts per decision reason, rejection reason, write action; promotions."""
        self._ready()
        return self._reflection.stats.as_dict()

    # ------------------------------------------------------------------ search
    def search(self, query: str, *, task_type: str | None = None, domain: str | None = None,
               top_k: int | None = None, now: datetime | None = None, task_id: str | None = None,
               explain: bool = False) -> SearchResult:
        """Three-path recall, weighted rerank, token budget (DESIGN §3).

        Args:
            query: what the agent sees at task start.
            task_type: the query's task_type if the caller knows it; else the classifier infers it or abstains.
            domain: keep only records of this domain (or of none).
            top_k: overrides ``retrieval.top_k``.
            now: the clock for recency and bookkeeping.
            task_id: recorded in the debug_trace of every injected record.
            explain: also return every candidate with its features (``SearchResult.candidates``).
        """
        self._ready()
        if not isinstance(query, str) or not query.strip():
            raise ValidationError(f"search: query: must be a non-empty string (got {query!r})")
        cfg = self.config_.retrieval
        k = cfg.top_k if top_k is None else int(top_k)
        if k < 1:
            raise ValidationError(f"search: top_k: must be at least 1 (got {top_k!r})")
        now = self._now(now)
        q = self.embedder.embed_query(query)
        cands = recall(self.store, self._counts, self._task_types, self._triggers, q, query, cfg,
                       task_type=task_type, domain=domain, overlay=self._pending, lexical=self._lexical,
                       classifier=self._classifier, extra_votes=self._retired.votes(q)
                       if task_type is None and cfg.classifier.method == "knn" else None)
        add_partners(cands, self.store, self._bucket_of, q, domain, self._pending)  # flagged rivals come along
        shown = shown_records(cands.records, self._bucket_of.get)  # flagged records carry their conflict mark
        embs = cands.matrix()
        forced = cands.forced
        feats = features(cands, now, cfg.recency_half_life_days)
        # einsum, not the @ of a threaded BLAS: its spinning worker threads slowed the next query encoding ~2x on
        # a busy 2-core machine (bench profile); the matrix is at most a few dozen rows
        sim = np.einsum("ik,jk->ij", embs, embs)
        ranked = rerank(feats, sim, cfg.weights.vector(), top_k=k, min_score=cfg.min_score, forced=forced,
                        max_forced=cfg.max_triggered, min_relative=cfg.min_relative_score,
                        enough=enough_at(cfg.enough_score))

        working = self._working.records() if self._working else []
        ordered = working + [shown[i] for i in ranked.order]
        must = [True] * len(working) + [bool(forced[i]) for i in ranked.order]
        kept, line_tokens = fit_budget(ordered, must, cfg.token_budget, self.tokens_.count)
        kept_set = set(kept)
        hits = [Hit(cands.records[i], tuple(cands.paths[i]), ScoreTerms(*map(float, ranked.terms[pos])),
                    forced=bool(forced[i]), tokens=line_tokens[pos + len(working)])
                for pos, i in enumerate(ranked.order) if pos + len(working) in kept_set]
        injection = render([ordered[j] for j in kept], self.tokens_.count, [line_tokens[j] for j in kept])
        if cfg.track_retrievals:
            self._track(hits, cands, query, task_id, now)
        detail = self._candidate_set(cands, feats, sim, now) if explain else None
        return SearchResult(query, cands.task_type, cands.task_type_source, float(cands.task_type_share), hits,
                            injection, working=[ordered[j] for j in kept if j < len(working)],
                            n_candidates=len(cands), candidates=detail)

    def _candidate_set(self, cands: Candidates, feats: np.ndarray, sim: np.ndarray, now: datetime) -> CandidateSet:
        count = self.tokens_.count
        shown = shown_records(cands.records, self._bucket_of.get)  # line tokens as injected (conflict marks)
        return CandidateSet(list(cands.records), [tuple(p) for p in cands.paths], feats, ages_days(cands, now), sim,
                            cands.forced, np.array([count(render_line(r)) for r in shown], dtype=np.int64),
                            np.array([SECTIONS.index(section_of(r)) for r in cands.records], dtype=np.int64))

    def _track(self, hits: list[Hit], cands: Candidates, query: str, task_id: str | None, now: datetime) -> None:
        limit = self.config_.retrieval.debug_trace_max
        stamp = now.isoformat()
        for rank, hit in enumerate(hits, 1):
            rec = self._pending.get(hit.id, hit.record)
            entry = {"at": stamp, "event": "retrieved", "rank": rank, "query": query[:120], "task_id": task_id}
            self._pending[hit.id] = replace(rec, last_retrieved_at=now,
                                            debug_trace=(rec.debug_trace + (entry,))[-limit:] if limit else ())
        for rid in cands.triggered:  # a matched trigger counts for decay whether or not the rule was injected
            rec = self._pending.get(rid) or (cands.records[cands._pos[rid]] if rid in cands else None)
            if rec is not None:
                self._pending[rid] = replace(rec, last_triggered_at=now)
        if len(self._pending) >= _FLUSH_AT:
            self.flush()

    def record_outcome(self, memory_ids: Iterable[str], outcome: str, *, task_id: str | None = None,
                       now: datetime | None = None) -> None:
        """Note in each memory's debug_trace how a task that used it ended (never read by ranking)."""
        self._ready()
        now = self._now(now)
        limit = self.config_.retrieval.debug_trace_max
        for mid in memory_ids:
            rec = self._get(mid)[0]
            entry = {"at": now.isoformat(), "event": "outcome", "outcome": outcome, "task_id": task_id}
            self._pending[mid] = replace(rec, debug_trace=(rec.debug_trace + (entry,))[-limit:] if limit else ())
        self.flush()

    # ------------------------------------------------------------------ working memory (L1)
    @contextmanager
    def working_memory(self, task_id: str) -> Iterator[WorkingMemory]:
        """L1 working memory for one task: injected first in every search inside the block, destroyed after."""
        self._ready()
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
        self._ready()
        signals = {"up": "up", "+1": "up", 1: "up", "down": "down", "-1": "down", -1: "down",
                   "correction": "down"}
        kind = signals.get(signal.strip().lower() if isinstance(signal, str) else signal)
        if kind is None:
            raise ValidationError(f"feedback: signal: expected 'up', 'down', 'correction', +1 or -1 (got {signal!r})")
        self.flush()
        rec, _, bucket = self._get(memory_id)
        cfg = self.config_.feedback
        notes = rec.feedback_notes + ((f"{kind}: {text}",) if text else ())
        if kind == "up":
            new = replace(rec, ups=rec.ups + 1, confidence=min(1.0, rec.confidence + cfg.up_step),
                          feedback_notes=notes)
        elif rec.downs + 1 >= cfg.delete_after_downs:
            self.store.delete(bucket, [memory_id])
            self._unindex(memory_id)
            logger.info("deleted %s after %d downs", memory_id, rec.downs + 1)
            return None
        else:
            new = replace(rec, downs=rec.downs + 1, confidence=max(0.0, rec.confidence - cfg.down_step),
                          feedback_notes=notes)
        self.store.update(bucket, [new])
        return new

    def maintain(self, now: datetime | None = None) -> MaintenanceReport:
        """Decay and archive on the given clock (DESIGN §2.6), then the conflict pass (``conflicts.enabled``)."""
        self._ready()
        now = self._now(now)
        self.flush()
        cfg = self.config_.decay
        report = MaintenanceReport(now)
        to_archive: dict[str, list[str]] = {"episode": [], "candidate": [], "rule": []}
        if cfg.archive_unretrieved:
            for bucket in ("episode", "candidate"):
                to_archive[bucket] = [r.id for r in self.store.scan(bucket) if l2_due_for_archive(r, now, cfg)]
        decayed = []
        for rec in self.store.scan("rule"):
            aged = age_rule(rec, now, cfg)
            if aged == "archive":
                to_archive["rule"].append(rec.id)
            elif aged is not None:
                decayed.append(aged)
        if decayed:
            self.store.update("rule", decayed)
            report.decayed.extend(r.id for r in decayed)
        for bucket, ids in to_archive.items():
            if ids:
                self._archive(bucket, ids)
                report.archived.extend(ids)
        if self.config_.conflicts.enabled:
            report = self._resolve_conflicts(now, report)
        return report

    def _resolve_conflicts(self, now: datetime, report: MaintenanceReport) -> MaintenanceReport:
        """The conflict pass (article §7.2, :mod:`hindsight_lab.conflicts`): cluster rules and candidates, merge
        duplicates, archive superseded rules with a pointer to their successor, flag close contradictions."""
        from .conflicts.apply import apply_plan
        from .conflicts.scan import read_store, scan

        plan = scan(*read_store(self.store), self.config_)
        done = apply_plan(self, plan, now)
        return replace(report, merged=done.merged, superseded=done.superseded, flagged=done.flagged, conflicts=plan)

    def _archive(self, bucket: str, ids: list[str], attrs: dict[str, Any] | None = None) -> None:
        self._move(bucket, "archive", ids,
                   lambda r: replace(r, archived=True, attrs={**r.attrs, **attrs} if attrs else r.attrs))

    def _move(self, source: str, target: str, ids: list[str], change: Callable[[MemoryRecord], MemoryRecord]
              ) -> None:
        """Move records between buckets with their vectors, changed by ``change`` on the way."""
        pairs = self.store.get(source, ids)
        recs = [change(r) for r, _ in pairs]
        self.store.upsert(target, recs, np.stack([e for _, e in pairs]))
        self.store.delete(source, [r.id for r in recs])
        for rec in recs:
            self._index(rec, target)

    def put_records(self, records: Sequence[MemoryRecord], embeddings: np.ndarray) -> None:
        """Store records exactly as given, with their vectors: no dedup, no merge, archived ones to the archive.
        For import and migration (:mod:`hindsight_lab.manage`); an existing id in the same bucket is replaced."""
        self._ready()
        self.flush()
        by_bucket: dict[str, list[int]] = {}
        for i, rec in enumerate(records):
            by_bucket.setdefault("archive" if rec.archived else rec.kind.value, []).append(i)
        emb = np.asarray(embeddings, dtype=np.float32)
        for bucket, rows in by_bucket.items():
            self.store.upsert(bucket, [records[i] for i in rows], emb[rows])
            for i in rows:
                self._index(records[i], bucket)

    def delete(self, memory_id: str) -> MemoryRecord:
        """Delete a record (archived ones included) and return it; :class:`MemoryNotFound` if there is none."""
        self._ready()
        self.flush()
        rec, _, bucket = self._get(memory_id)
        self.store.delete(bucket, [memory_id])
        self._unindex(memory_id)
        return rec

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
        for bucket in BUCKETS:
            recs = [replace(r, embedding_model=name) for r in self.store.scan(bucket)]
            embs = self.embedder.embed([r.embed_text for r in recs]) if recs else np.zeros((0, 1), np.float32)
            self.store.rebuild(bucket, recs, embs, name)
            done[bucket] = len(recs)
        self.store.open(name)
        self._classifier.forget_vectors()  # the embedding classifier re-learns in the new model's space
        return done
