"""Every change to what a store holds, with the recall index and the evidence kept in step: episode records (L2,
never merged), rule writes with dedup, merge and promotion (DESIGN §2.3–2.4), and moves between buckets.

The merge itself is one rule, :meth:`~hindsight_lab.types.MemoryRecord.merged_with`, shared with the conflict pass.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime
from typing import Any, Callable, Sequence

import numpy as np

from .. import crashpoints
from ..config import LabConfig
from ..trace.checks import Check
from ..reflect.pipeline import PENDING
from ..retrieve.index import RecallIndex, is_retired
from ..trace import Episode
from ..trace.summary import distinct_tasks, episode_key, instance_signature, is_read_only, summarise
from ..types import Bucket, Kind, MemoryRecord, WriteResult
from . import verify
from .evidence import Contradictions

logger = logging.getLogger(__name__)


def decision_attrs(decision: Any) -> dict[str, Any]:
    """What an episode record keeps of its trigger decision: the reason, and while a reflection is asked for,
    ``reflected`` (the trigger state rebuilt from the store counts it) and ``reflection: pending``."""
    if decision is None:
        return {}
    asked = decision.reason if decision.reflect else None
    return {"decision": decision.reason, "reflected": asked, "reflection": PENDING if asked else None}


class Writes:
    """Writes to one open store.

    Args:
        config: the memory's config.
        store: the open :class:`~hindsight_lab.protocols.Store`.
        index: the store's :class:`~hindsight_lab.retrieve.index.RecallIndex`.
        embedder: embeds what is written.
        new_id: makes the id of a new record from its kind.
        contradictions: the later evidence against stored successes (:mod:`.evidence`).
    """

    def __init__(self, config: LabConfig, store: Any, index: RecallIndex, embedder: Any,
                 new_id: Callable[[Kind], str], contradictions: Contradictions) -> None:
        self.config, self.store, self.index, self.embedder = config, store, index, embedder
        self.new_id, self.contradictions = new_id, contradictions
        self.checked: dict[str, set[str]] = {}  # a guarded step (tool) -> the candidates and rules checking it
        self.promotions = 0  # candidates moved to L3 since open, by a reflection's write or by later evidence
        self.changes = 0  # records tracked or forgotten since open (when to save the memory's state)
        self.on_stored: Callable[[MemoryRecord], None] = lambda rec: None
        """Called with every record as it is now stored (a put, update, annotation or move): the memory puts its
        pending retrieval bookkeeping onto it (:meth:`~.retrievals.Retrievals.rebase`), so that bookkeeping need
        not be written before a change."""

    # ------------------------------------------------------------------ buckets
    def track(self, rec: MemoryRecord, bucket: Bucket | str) -> None:
        """Keep the index (and the evidence) in step with a record stored in ``bucket``."""
        self.changes += 1
        if bucket == Bucket.ARCHIVE and not is_retired(rec):
            self.contradictions.remove(rec.id)
        self.index.add(rec, bucket)
        self._forget_check(rec.id)
        check = Check.of((rec.attrs or {}).get("check")) if bucket in (Bucket.CANDIDATE, Bucket.RULE) else None
        if check is not None:
            self.checked.setdefault(check.target, set()).add(rec.id)

    def _forget_check(self, record_id: str) -> None:
        for ids in self.checked.values():
            ids.discard(record_id)

    def put(self, bucket: Bucket | str, records: Sequence[MemoryRecord], embeddings: np.ndarray) -> None:
        """Store records with their vectors as given (no dedup)."""
        self.store.upsert(bucket, records, embeddings)
        for rec in records:
            self.track(rec, bucket)
        self._stored(records)

    def update(self, bucket: Bucket | str, records: Sequence[MemoryRecord]) -> None:
        """Store changed records (their vectors kept) and re-index them."""
        self.store.update(bucket, records)
        for rec in records:
            self.track(rec, bucket)
        self._stored(records)

    def annotate(self, bucket: Bucket | str, records: Sequence[MemoryRecord]) -> None:
        """Store changes that no index reads (bookkeeping: reflection state, retrieval stamps, debug traces)."""
        self.store.update(bucket, records)
        self._stored(records)

    def _stored(self, records: Sequence[MemoryRecord]) -> None:
        for rec in records:
            self.on_stored(rec)

    def delete(self, bucket: Bucket | str, ids: Sequence[str]) -> None:
        self.store.delete(bucket, ids)
        for rid in ids:
            self.forget(rid)

    def forget(self, record_id: str) -> None:
        """A record left the store: out of the index and the evidence."""
        self.changes += 1
        self.contradictions.remove(record_id)
        self.index.remove(record_id)
        self._forget_check(record_id)

    def move(self, source: Bucket | str, target: Bucket | str, ids: Sequence[str],
             change: Callable[[MemoryRecord], MemoryRecord]) -> None:
        """Move records between buckets with their vectors, changed by ``change`` on the way."""
        pairs = self.store.get(source, ids)
        recs = [change(r) for r, _ in pairs]
        self.store.upsert(target, recs, np.stack([e for _, e in pairs]))
        self.store.delete(source, [r.id for r in recs])
        for rec in recs:
            self.track(rec, target)
        self._stored(recs)

    def archive(self, bucket: Bucket | str, ids: Sequence[str], attrs: dict[str, Any] | None = None) -> None:
        """Move records to the archive (kept, never recalled), adding ``attrs``."""
        self.move(bucket, Bucket.ARCHIVE, ids,
                  lambda r: replace(r, archived=True, attrs={**r.attrs, **attrs} if attrs else r.attrs))

    # ------------------------------------------------------------------ episodes (L2, never merged)
    def episode_records(self, eps: Sequence[Episode], given: Sequence[str | None], now: datetime,
                        compressed: Sequence[Any] | None = None,
                        decisions: Sequence[Any] | None = None) -> list[MemoryRecord]:
        """One L2 record per episode, embedded in one batch; then the evidence they bring against stored successes.

        The record's task_type is derived from the tools the agent called unless the caller knows it (``given``);
        writing an episode id again replaces its record; ``created_at`` is the episode's ``started_at`` when set.
        """
        records = [self._episode_record(ep, tt, now, compressed[i] if compressed is not None else None,
                                        decisions[i] if decisions is not None else None)
                   for i, (ep, tt) in enumerate(zip(eps, given))]
        if not records:
            return []
        self.put(Bucket.EPISODE, records, self.embedder.embed([r.embed_text for r in records]))
        for rec in records:
            self._weigh_evidence(rec)
            if self.config.promotion.verify:
                self._verify_rules(rec, now)
        return records

    def _episode_record(self, ep: Episode, task_type: str | None, now: datetime, comp: Any,
                        decision: Any) -> MemoryRecord:
        from ..reflect.compress import compress

        cfg = self.config.episode
        if comp is None:
            comp = compress(ep, self.config.reflect.compress, cfg.read_only_prefixes, task_type=task_type)
        conf = {"success": cfg.success_confidence, "partial": cfg.partial_confidence,
                "failure": cfg.failure_confidence}[ep.outcome]
        attrs = {"tools": list(comp.tools), "calls": list(comp.calls), "n_steps": comp.n_steps,
                 "user_turns": comp.user_turns, "errors": [list(e) for e in comp.errors],
                 "error_calls": list(comp.error_calls), "failure_cause": ep.failure_cause,
                 "instance": list(instance_signature(ep)), **decision_attrs(decision)}
        return MemoryRecord(
            id=self.index.record_of_episode(ep.episode_id) or self.new_id(Kind.EPISODE), kind=Kind.EPISODE,
            content=summarise(ep, cfg.summary_max_chars), key=episode_key(ep, cfg.key), task_type=comp.task_type,
            domain=ep.domain, confidence=conf, outcome=ep.outcome, task_id=ep.task_id,
            source_episode_ids=(ep.episode_id,), created_at=ep.started_at or now,
            embedding_model=self.embedder.name(), attrs={k: v for k, v in attrs.items() if v})

    def _weigh_evidence(self, rec: MemoryRecord) -> None:
        """Later evidence for or against stored successes (lucky ones, changed rules): retire or reinstate."""
        verdict = self.contradictions.observe_record(rec, self.config.episode.read_only_prefixes)
        if verdict.retire:
            by = list(self.contradictions.refusals_of[verdict.retire[0]])
            self.archive(Bucket.EPISODE, verdict.retire, attrs={"retired_by": by})
            logger.info("retired %d contradicted successes (refused again: %s)", len(verdict.retire), by)
        if verdict.reinstate:
            self.move(Bucket.ARCHIVE, Bucket.EPISODE, verdict.reinstate,  # a later success passed the refused step
                      lambda r, by=rec.id: replace(r, archived=False, attrs={
                          **{k: v for k, v in r.attrs.items() if k != "retired_by"}, "reinstated_by": by}))
            logger.info("reinstated %d successes (%s passed the refused step)", len(verdict.reinstate), rec.id)

    # ------------------------------------------------------------------ rules (dedup, merge, promotion)
    def rule(self, incoming: MemoryRecord, emb: np.ndarray, now: datetime) -> WriteResult:
        """Write a rule (DESIGN §2.3): one within ``dedup.similarity`` of an L3 rule confirms it; else one within it
        of the nearest candidate merges into that candidate, which is promoted when it qualifies; else it is new."""
        if self._pairing["within_task"]:
            incoming = self._with_sources(incoming)
        rule = self.nearest_match(Bucket.RULE, incoming, emb)
        if rule is not None:
            return WriteResult("confirmed", self._merge_into(rule[0], incoming, Bucket.RULE, now))
        if incoming.kind is Kind.RULE:
            self.put(Bucket.RULE, [incoming], emb[None, :])
            return WriteResult("created", incoming)
        candidate = self.nearest_match(Bucket.CANDIDATE, incoming, emb)
        if candidate is None:
            self.put(Bucket.CANDIDATE, [incoming], emb[None, :])
            crashpoints.reached("reflect.candidate_written")
            return WriteResult("created", incoming)
        merged = self._merge_into(candidate[0], incoming, Bucket.CANDIDATE, now)
        if self.promotable(merged):
            return WriteResult("merged", self.promote(merged, candidate[1], now), promoted=True)
        return WriteResult("merged", merged)

    def _with_sources(self, rec: MemoryRecord) -> MemoryRecord:
        """A ``within_task`` rule with the runs it was proposed from among its pairs (:func:`.verify.observed`)."""
        for eid in rec.source_episode_ids:
            episode = self.stored_episode(eid)
            new = verify.observed(rec, episode, **self._pairing) if episode is not None else None
            rec = new or rec
        return rec

    def stored_episode(self, episode_id: str) -> MemoryRecord | None:
        """The stored record of an episode (archived since, or not), else None."""
        rid = self.index.record_of_episode(episode_id)
        for bucket in (Bucket.EPISODE, Bucket.ARCHIVE) if rid else ():
            found = self.store.get(bucket, [rid])
            if found:
                return found[0][0]
        return None

    def nearest_match(self, bucket: Bucket, rec: MemoryRecord, emb: np.ndarray
                      ) -> tuple[MemoryRecord, np.ndarray] | None:
        """The record of ``bucket`` that ``rec`` duplicates: one with the same check (``dedup.same_check``), else the
        nearest within ``dedup.similarity``, of the same task_type where both have one (``dedup.same_task_type``);
        never one it contradicts."""
        cfg = self.config.dedup
        if not self.index.count(bucket):
            return None
        same = self._same_check(bucket, rec) if cfg.same_check else None
        if same is not None:
            return same
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

    def _same_check(self, bucket: Bucket, rec: MemoryRecord) -> tuple[MemoryRecord, np.ndarray] | None:
        """The first record (by id) of ``bucket`` whose check is ``rec``'s, and that it does not contradict."""
        check = Check.of((rec.attrs or {}).get("check"))
        if check is None:
            return None
        ids = sorted(rid for rid in self.checked.get(check.target, ()) if self.index.bucket_of(rid) == bucket)
        for other, emb in self.store.get(bucket, ids):
            if Check.of((other.attrs or {}).get("check")) == check and not self._contradicts(rec, other):
                return other, emb
        return None

    def _contradicts(self, a: MemoryRecord, b: MemoryRecord) -> bool:
        c = self.config.conflicts
        if not c.block_contradicting_merge:
            return False
        from ..conflicts.detect import OfflineDetector

        return OfflineDetector(min_overlap=c.min_overlap).judge(a.content, b.content).conflict

    def _merge_into(self, target: MemoryRecord, new: MemoryRecord, bucket: Bucket, now: datetime) -> MemoryRecord:
        merged = verify.settle(target.merged_with(new, confirmed_at=now), **self._pairing)  # evidence decides
        self.update(bucket, [merged])
        crashpoints.reached("reflect.candidate_merged")
        return merged

    def promotable(self, rec: MemoryRecord) -> bool:
        """Confirmed in ``promotion.min_hits`` different tasks (the episodes it was proposed from and the later runs
        that confirmed it, :mod:`.verify`), confidence above the bar, and counter-examples (article §3.3, §8.5); a
        rule verified by later runs needs one of them to have followed it and succeeded."""
        p = self.config.promotion
        if rec.confidence <= p.min_mean_confidence or (p.require_counter_examples and not rec.counter_examples):
            return False
        if verify.evidence(rec) and not verify.counts(rec)["fo"]:
            return False  # verified, but no later run that followed it succeeded: never shown to work
        return self.confirmations(rec) >= p.min_hits

    @property
    def _pairing(self) -> dict[str, Any]:
        """How verification reads evidence (``promotion.evidence``), as :mod:`.verify` takes it."""
        p = self.config.promotion
        return {"within_task": p.evidence == "within_task", "overlap": p.same_task_overlap,
                "prior_effect": p.prior_effect}

    def confirmations(self, rec: MemoryRecord) -> int:
        """How many different tasks (or episodes, ``promotion.distinct``) confirmed the record: those it was
        proposed from and the later runs that confirmed it, or (``promotion.evidence: within_task``) the runs of its
        agreeing pairs."""
        if self._pairing["within_task"]:
            episodes = verify.confirming(rec, True, self.config.promotion.same_task_overlap)
        else:
            episodes = list(dict.fromkeys([*rec.source_episode_ids, *verify.confirming(rec)]))
        if self.config.promotion.distinct == "episodes":
            return len(episodes)
        return distinct_tasks([self._task(e) for e in episodes], self.config.promotion.same_task_overlap)

    def _task(self, episode_id: str) -> tuple[tuple[str, ...], frozenset[str] | None]:
        """What an episode was about and, for a success, what it changed (:func:`~hindsight_lab.trace.summary.
        distinct_tasks`): its stored signature (its own id when it has none or is not stored: a task of its own) and
        its state-changing tools."""
        rec = self.stored_episode(episode_id)
        if rec is None:
            return (f"episode:{episode_id}",), None
        attrs = rec.attrs or {}
        sig = tuple(attrs.get("instance") or ()) or (f"episode:{episode_id}",)
        if rec.outcome != "success":
            return sig, None
        read_only = self.config.episode.read_only_prefixes
        return sig, frozenset(t for t in attrs.get("tools", ()) if not is_read_only(t, read_only))

    def _verify_rules(self, episode: MemoryRecord, now: datetime) -> None:
        """The later evidence an episode brings to the candidates and rules that check a step it reached."""
        reached = set((episode.attrs or {}).get("tools", ()))
        ids = sorted({rid for tool in reached for rid in self.checked.get(tool, ())})
        by_bucket: dict[Bucket, list[str]] = {}
        for rid in ids:
            bucket = self.index.bucket_of(rid)
            if bucket in (Bucket.CANDIDATE, Bucket.RULE):
                by_bucket.setdefault(bucket, []).append(rid)
        for bucket, rids in sorted(by_bucket.items()):
            for rec, emb in self.store.get(bucket, rids):
                new = verify.observed(rec, episode, **self._pairing)
                if new is None:
                    continue
                self.update(bucket, [new])
                if bucket is Bucket.CANDIDATE and self.promotable(new):
                    self.promote(new, emb, now)

    def promote(self, cand: MemoryRecord, emb: np.ndarray, now: datetime) -> MemoryRecord:
        """Move a candidate to L3 (``attrs.promoted_at``), merging it into an equivalent rule when there is one."""
        as_rule = replace(cand, kind=Kind.RULE, last_confirmed_at=now,
                          attrs={**cand.attrs, "promoted_at": now.isoformat()})
        match = self.nearest_match(Bucket.RULE, as_rule, emb)
        if match is not None:  # the rule keeps the candidate's id: a rerun after a kill here sees the merge done
            as_rule = replace(as_rule, attrs={**as_rule.attrs, "promoted_from": {cand.id: now.isoformat()}})
            result = self._merge_into(match[0], as_rule, Bucket.RULE, now)
        else:
            self.put(Bucket.RULE, [as_rule], emb[None, :])
            result = as_rule
        crashpoints.reached("reflect.rule_promoted")
        self.store.delete(Bucket.CANDIDATE, [cand.id])
        if result.id != cand.id:
            self.forget(cand.id)
        self.promotions += 1
        logger.info("promoted %s to L3 as %s", cand.id, result.id)
        return result
