"""Memory records, layers, and search hits: the values that flow through the engine.

Records are frozen, slotted dataclasses (they sit on the search hot path); change one with
``dataclasses.replace``. Timestamps are timezone-aware UTC datetimes.
"""

from __future__ import annotations

import enum
import random
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from collections.abc import Iterator, Mapping
from typing import Any


class Layer(str, enum.Enum):
    """Memory layer (DESIGN §1)."""

    L1 = "L1"  # working memory of one task
    L2 = "L2"  # episodic: episodes and candidate rules
    L3 = "L3"  # strategic: promoted rules

    def __str__(self) -> str:
        return self.value


class Kind(str, enum.Enum):
    """What a record is; each kind is its own Chroma collection."""

    EPISODE = "episode"
    CANDIDATE = "candidate"
    RULE = "rule"
    WORKING = "working"

    def __str__(self) -> str:
        return self.value

    @property
    def layer(self) -> Layer:
        return {Kind.EPISODE: Layer.L2, Kind.CANDIDATE: Layer.L2, Kind.RULE: Layer.L3,
                Kind.WORKING: Layer.L1}[self]


class Bucket(enum.StrEnum):
    """Where a record lives in a store: one bucket (a Chroma collection) per stored kind, plus the archive, which
    keeps records of every kind that are never recalled (DESIGN §1)."""

    EPISODE = "episode"
    CANDIDATE = "candidate"
    RULE = "rule"
    ARCHIVE = "archive"

    @classmethod
    def of(cls, record: "MemoryRecord") -> "Bucket":
        """The bucket a record belongs in: the archive when it is archived, else its kind's."""
        return cls.ARCHIVE if record.archived else cls(record.kind.value)


#: Every bucket of a store, in the order stores create and scan them.
BUCKETS: tuple[Bucket, ...] = tuple(Bucket)
#: The buckets recall reads (every one but the archive).
RECALLED: tuple[Bucket, ...] = (Bucket.EPISODE, Bucket.CANDIDATE, Bucket.RULE)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


_ID_PREFIX = {Kind.EPISODE: "epis", Kind.CANDIDATE: "rule", Kind.RULE: "rule", Kind.WORKING: "work"}


def new_id(kind: Kind) -> str:
    """Random id with a prefix, e.g. ``rule-3f2a9c1b0d4e``: ``epis-`` for episodes, ``rule-`` for candidates and
    rules (a candidate keeps its id when promoted), ``work-`` for working memory."""
    return f"{_ID_PREFIX[kind]}-{uuid.uuid4().hex[:12]}"


class SeededIds:
    """Reproducible ids in :func:`new_id`'s format: the same seed gives the same sequence.

    An id is part of a record's injected tag (``[L2#3f2a9c]``), so its characters change the token count and, at the
    edge of the budget, what is injected. Replays give each system its own seeded sequence, so a replay run twice
    (or resumed) makes the same records with the same ids.

    Examples:
        >>> a, b = SeededIds("hindsight"), SeededIds("hindsight")
        >>> a(Kind.EPISODE) == b(Kind.EPISODE), a(Kind.RULE).startswith("rule-")
        (True, True)
    """

    def __init__(self, seed: str | int = 0) -> None:
        self._rng = random.Random(f"hindsight-ids:{seed}")

    def __call__(self, kind: Kind) -> str:
        return f"{_ID_PREFIX[kind]}-{self._rng.getrandbits(48):012x}"


@dataclass(frozen=True, slots=True)
class Trigger:
    """When a rule must be recalled whatever its similarity (DESIGN §3, path 3).

    Matches when the normalised query contains any of ``any`` (or ``any`` is empty), all of ``all``, and — when
    ``task_types`` is non-empty — the query's task_type is one of them. At least one keyword is required.
    """

    any: tuple[str, ...] = ()
    all: tuple[str, ...] = ()
    task_types: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, list[str]]:
        return {"any": list(self.any), "all": list(self.all), "task_types": list(self.task_types)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Trigger":
        return cls(any=tuple(data.get("any") or ()), all=tuple(data.get("all") or ()),
                   task_types=tuple(data.get("task_types") or ()))


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One stored memory (an L2 episode or candidate, or an L3 rule). See DESIGN §1 for every field."""

    id: str
    kind: Kind
    content: str
    task_type: str | None = None
    domain: str | None = None
    confidence: float = 0.5
    counter_examples: tuple[str, ...] = ()
    hit_count: int = 1
    outcome: str | None = None
    trigger: Trigger | None = None
    source_episode_ids: tuple[str, ...] = ()
    task_id: str | None = None
    key: str | None = None  # text that was embedded, when it differs from content (episodes: the instruction)
    created_at: datetime = field(default_factory=utcnow)
    last_confirmed_at: datetime | None = None
    last_retrieved_at: datetime | None = None
    last_triggered_at: datetime | None = None
    ups: int = 0
    downs: int = 0
    feedback_notes: tuple[str, ...] = ()
    decay_steps: int = 0
    archived: bool = False
    embedding_model: str = ""
    debug_trace: tuple[Mapping[str, Any], ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict)  # kind-specific extras, e.g. an episode's tool path

    @property
    def layer(self) -> Layer:
        return self.kind.layer

    @property
    def embed_text(self) -> str:
        """The text whose embedding represents this record."""
        return self.key or self.content

    @property
    def tag(self) -> str:
        """Source tag used in the injection block, e.g. ``[L3#a1b2c3]``."""
        return f"[{self.layer.value}#{self.id.rsplit('-', 1)[-1][:6]}]"

    def merged_with(self, other: "MemoryRecord", *, confirmed_at: datetime | None = None) -> "MemoryRecord":
        """``other`` folded into this record: the one merge rule, for dedup on write and for the duplicates the
        conflict pass finds.

        Hits add up, confidence is their hit-weighted mean, provenance, counter-examples and feedback notes are
        unioned (order kept), feedback counts add up; trigger, task_type and domain are this record's, else
        ``other``'s. A write confirms: ``confirmed_at`` becomes ``last_confirmed_at`` and the decay steps start
        again. Without it (maintenance confirms nothing) the later of the two confirmation times is kept. Extras
        (``attrs``) are this record's, with the other's keys it lacks; a mapping both have (the runs that verified
        each, ``attrs.evidence``) is united.

        Examples:
            >>> a = MemoryRecord("rule-a", Kind.CANDIDATE, "Check X first", confidence=0.6, source_episode_ids=("e1",))
            >>> b = MemoryRecord("rule-b", Kind.CANDIDATE, "Check X first.", confidence=0.9, source_episode_ids=("e2",))
            >>> m = a.merged_with(b)
            >>> m.id, m.hit_count, round(m.confidence, 2), m.source_episode_ids
            ('rule-a', 2, 0.75, ('e1', 'e2'))
        """
        hits = self.hit_count + other.hit_count
        attrs = {**other.attrs, **self.attrs}
        for key, value in self.attrs.items():
            if isinstance(value, Mapping) and isinstance(other.attrs.get(key), Mapping):
                attrs[key] = {**other.attrs[key], **value}
        if confirmed_at is None:
            stamps = [t for t in (self.last_confirmed_at, other.last_confirmed_at) if t is not None]
            confirmed, decay_steps = (max(stamps) if stamps else None), self.decay_steps
        else:
            confirmed, decay_steps = confirmed_at, 0
        return replace(
            self, hit_count=hits,
            confidence=(self.confidence * self.hit_count + other.confidence * other.hit_count) / hits,
            source_episode_ids=tuple(dict.fromkeys(self.source_episode_ids + other.source_episode_ids)),
            counter_examples=tuple(dict.fromkeys(self.counter_examples + other.counter_examples)),
            trigger=self.trigger or other.trigger, task_type=self.task_type or other.task_type,
            domain=self.domain or other.domain, last_confirmed_at=confirmed, decay_steps=decay_steps,
            ups=self.ups + other.ups, downs=self.downs + other.downs,
            feedback_notes=tuple(dict.fromkeys(self.feedback_notes + other.feedback_notes)), attrs=attrs)


class ScoreTerms(Mapping[str, float]):
    """The rerank score of one hit, by term name (DESIGN §3), in the rerank's column order: each feature, the
    redundancy at selection time, and ``total`` (the weighted sum minus the redundancy penalty). Read a term as
    ``scores["semantic"]`` or ``scores.semantic``.

    Examples:
        >>> s = ScoreTerms({"semantic": 0.9, "redundancy": 0.0, "total": 0.18})
        >>> s.semantic, s["total"], list(s)
        (0.9, 0.18, ['semantic', 'redundancy', 'total'])
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, float]) -> None:
        object.__setattr__(self, "_values", {k: float(v) for k, v in values.items()})

    def __getitem__(self, name: str) -> float:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, name: str) -> float:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"no score term {name!r} (terms: {', '.join(self._values)})") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ScoreTerms is read-only")

    def __repr__(self) -> str:
        return "ScoreTerms(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"

    def as_dict(self) -> dict[str, float]:
        return dict(self._values)


@dataclass(frozen=True, slots=True)
class Hit:
    """A recalled memory with the path(s) that found it, its score terms and its rendered token count."""

    record: MemoryRecord
    paths: tuple[str, ...]
    scores: ScoreTerms
    forced: bool = False  # a triggered rule guaranteed its place
    tokens: int = 0

    @property
    def id(self) -> str:
        return self.record.id


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What :meth:`MemorySystem.write` did: ``created``, ``merged`` (into a candidate), ``confirmed`` (an L3 rule),
    and whether the record it ended in was ``promoted`` to L3 by this write."""

    action: str
    record: MemoryRecord
    promoted: bool = False
