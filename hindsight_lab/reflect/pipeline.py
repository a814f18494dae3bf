"""The reflection pipeline behind ``MemorySystem.reflect``: compress → trigger decision → episode record → related
earlier episodes → reflector → validated reflection → candidate write (dedup, merge, promotion)."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from .. import crashpoints
from ..config import LabConfig
from ..errors import ValidationError
from ..types import MemoryRecord, WriteResult
from .compress import CompressedEpisode, compress
from .protocol import MemoryPort
from .schema import Reflection, Rejection
from .triggers import REFLECT_REASONS, TriggerDecision, TriggerPolicy

if TYPE_CHECKING:
    import pandas as pd

    from ..trace import Episode


logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReflectionOutcome:
    """Everything ``reflect`` did for one episode."""

    episode_id: str
    decision: TriggerDecision
    record: MemoryRecord
    compressed: CompressedEpisode
    related: tuple[str, ...] = ()
    reflection: Reflection | None = None
    rejection: Rejection | None = None
    write: WriteResult | None = None

    @property
    def promoted(self) -> bool:
        return bool(self.write and self.write.promoted)

    def as_row(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "task_type": self.compressed.task_type,
                "outcome": self.compressed.outcome, "reflect": self.decision.reflect, "reason": self.decision.reason,
                "accepted": self.reflection is not None,
                "rejection": self.rejection.reason if self.rejection else None,
                "rule": self.reflection.reusable_rule if self.reflection else None,
                "confidence": self.reflection.confidence if self.reflection else None,
                "counter_examples": len(self.reflection.counter_examples) if self.reflection else None,
                "write": self.write.action if self.write else None,
                "memory_id": self.write.record.id if self.write else None, "promoted": self.promoted}


@dataclass
class ReflectionStats:
    """Counts over every reflect call of a MemorySystem (its promotions are counted where they happen, by the memory:
    a candidate also reaches L3 when later runs verify its check, with no reflection involved)."""

    episodes: int = 0
    decisions: Counter = field(default_factory=Counter)
    rejections: Counter = field(default_factory=Counter)
    writes: Counter = field(default_factory=Counter)

    @property
    def reflections(self) -> int:
        return sum(n for r, n in self.decisions.items() if r in REFLECT_REASONS)

    @property
    def trigger_rate(self) -> float:
        return self.reflections / self.episodes if self.episodes else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"episodes": self.episodes, "reflections": self.reflections, "trigger_rate": self.trigger_rate,
                "decisions": dict(self.decisions), "rejections": dict(self.rejections),
                "writes": dict(self.writes)}


def compressed_from_record(rec: MemoryRecord) -> CompressedEpisode:
    """The reflector's view of a stored episode record (what ``write_episode`` kept in ``attrs``)."""
    a = rec.attrs or {}
    return CompressedEpisode(
        episode_id=rec.source_episode_ids[0] if rec.source_episode_ids else rec.id, task_id=rec.task_id,
        domain=rec.domain, instruction=rec.key or rec.content, task_type=rec.task_type,
        outcome=rec.outcome or "partial", failure_cause=a.get("failure_cause"), tools=tuple(a.get("tools", ())),
        calls=tuple(a.get("calls", ())), decisions=(), errors=tuple(tuple(e) for e in a.get("errors", ())),
        final_answer=None, feedback=(), n_steps=int(a.get("n_steps", 0)), started_at=rec.created_at,
        user_turns=int(a.get("user_turns", 0)), error_calls=tuple(int(i) for i in a.get("error_calls", ())))


PENDING = "pending"
"""``attrs.reflection`` of an episode record written before its reflector answered."""


def stored_decision(rec: MemoryRecord) -> TriggerDecision:
    """The trigger decision a stored episode record was written with (``attrs.decision``; records written before
    it was kept: ``attrs.reflected``, the reflecting reason, or none)."""
    a = rec.attrs or {}
    reason = a.get("decision") or a.get("reflected") or a.get("rejected") and "rejected" or "stored"
    return TriggerDecision(reason in REFLECT_REASONS or bool(a.get("reflected")), reason)


class ReflectionPipeline:
    """Owns the trigger policy and the reflector of one memory; writes through its :class:`MemoryPort`.

    Args:
        mem: the memory's port.
        reflector: any :class:`~hindsight_lab.reflect.protocol.Reflector`.
        config: the memory's config (``reflect`` and ``episode.read_only_prefixes`` are read).
    """

    def __init__(self, mem: MemoryPort, reflector: Any, config: LabConfig) -> None:
        self.mem = mem
        self.reflector = reflector
        self.config = config
        self.policy = TriggerPolicy(config.reflect.triggers)
        self.stats = ReflectionStats()

    def observe_stored(self, records: Iterable[MemoryRecord]) -> None:
        """Rebuild the trigger state from stored episode records (oldest first)."""
        for rec in sorted(records, key=lambda r: r.created_at):
            self.policy.observe(compressed_from_record(rec), rec.created_at,
                                reflected=bool((rec.attrs or {}).get("reflected")))

    def related(self, ep: "Episode", now: datetime, k: int) -> list[CompressedEpisode]:
        """Nearest earlier episodes by instruction embedding (a fixed rule, not the rerank)."""
        found = self.mem.nearest_episodes(ep.instruction, k + 1, before=now)
        return [compressed_from_record(r) for r in found if ep.episode_id not in r.source_episode_ids][:k]

    def run(self, episodes: Sequence["Episode"], task_types: Sequence[str | None], now: datetime
            ) -> list[ReflectionOutcome]:
        """Decide and write every episode in order; reflections of a run go to the reflector in one batch.

        Within one call the decisions are made before the reflector answers, so an episode is decided as if the
        earlier reflections of the same call were accepted; a rejection is undone afterwards (the next call, or
        the next ``reflect``, may reflect on that signature again). One episode per call is exact.

        **Idempotent.** An episode already stored (by episode id) is not decided again: its stored decision stands,
        and the trigger state, rebuilt from the store when it was opened, already holds it. Its reflection is asked
        again only when it was left pending — the episode record is written ``reflection: pending`` before the
        reflector is asked and marked ``done`` or ``rejected`` after — and no candidate or rule holds it as a
        source yet; a promotion the killed run left half done is finished at the first stored episode. So a run
        that was killed anywhere and run again on the same store ends as an uninterrupted one would (with a
        deterministic reflector; :mod:`hindsight_lab.crashpoints` names the steps a test kills it at).
        """
        mem, cfg = self.mem, self.config
        staged, resumed = [], False
        for ep, tt in zip(episodes, task_types):
            when = ep.started_at or now
            comp = compress(ep, cfg.reflect.compress, cfg.episode.read_only_prefixes, task_type=tt)
            stored = mem.stored_episode(ep.episode_id)
            if stored is None:
                decision = self.policy.decide(comp, when)
                ask = decision.reflect
                related = self.related(ep, when, cfg.reflect.related_k) if ask else []
                record = mem.write_episode_records([ep], [tt], when, [comp], [decision])[0]
                crashpoints.reached("reflect.episode_written")
                self.policy.observe(comp, when, reflected=decision.reflect)
            else:
                if not resumed:  # a rerun over the store of a run that stopped: finish what it left half done
                    mem.finish_interrupted(when)
                    resumed = True
                decision, record = stored_decision(stored), stored
                ask = decision.reflect and (stored.attrs or {}).get("reflection") == PENDING
                if ask and mem.derived_from(ep.episode_id):  # its candidate was written: only the mark is missing
                    record, ask = self._settle(record, "done"), False
                related = self.related(ep, when, cfg.reflect.related_k) if ask else []
            self.stats.episodes += 1
            self.stats.decisions[decision.reason] += 1
            staged.append((ep, comp, decision, ask, related, record, when))
        todo = [(comp, related) for _, comp, _, ask, related, _, _ in staged if ask]
        answers = iter(self.reflector.reflect_batch(todo) if todo else [])
        outcomes = []
        for ep, comp, decision, ask, related, record, when in staged:
            if not ask:
                outcomes.append(ReflectionOutcome(ep.episode_id, decision, record, comp))
                continue
            answer = next(answers)
            rel_ids = tuple(r.episode_id for r in related)
            if isinstance(answer, Rejection):
                self.stats.rejections[answer.reason] += 1
                self.policy.forget_reflection(comp, when)
                record = self._settle(record, "rejected", reflected=None, rejected=answer.reason)
                outcomes.append(ReflectionOutcome(ep.episode_id, decision, record, comp, rel_ids,
                                                  rejection=answer))
                continue
            write = self._write_candidate(ep, answer, when)
            record = self._settle(record, "done")
            crashpoints.reached("reflect.episode_settled")
            self.stats.writes[write.action] += 1
            outcomes.append(ReflectionOutcome(ep.episode_id, decision, record, comp, rel_ids, answer, None, write))
        return outcomes

    def _settle(self, record: MemoryRecord, state: str, **attrs: Any) -> MemoryRecord:
        """Mark an episode record's reflection ``done`` or ``rejected`` (it was written ``pending``)."""
        record = replace(record, attrs={**record.attrs, "reflection": state, **attrs})
        self.mem.update_episode_record(record)
        return record

    def _write_candidate(self, ep: "Episode", refl: Reflection, now: datetime) -> WriteResult:
        fields = dict(task_type=refl.task_type, domain=ep.domain, confidence=refl.confidence,
                      counter_examples=list(refl.counter_examples), source_episode_ids=[ep.episode_id], now=now,
                      **({"check": refl.check} if refl.check else {}))
        if refl.trigger:
            try:
                return self.mem.write_rule(refl.reusable_rule, trigger=refl.trigger, **fields)
            except ValidationError as exc:  # an unusable trigger from a model: keep the rule, drop the trigger
                logger.warning("dropping the trigger of a reflection on %s: %s", ep.episode_id, exc)
        return self.mem.write_rule(refl.reusable_rule, **fields)

    def frame(self, outcomes: Sequence[ReflectionOutcome]) -> "pd.DataFrame":
        import pandas as pd

        return pd.DataFrame([o.as_row() for o in outcomes])
