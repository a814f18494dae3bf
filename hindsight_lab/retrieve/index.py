"""The in-process recall index of one store (DESIGN §3): where each record lives, how many each bucket holds, and
the small indexes behind the keyword, task-type and trigger paths and the task-type classifier.

None of these paths scans a collection: the index is rebuilt from the store when a memory opens and kept in step
by every write (:meth:`RecallIndex.add`, :meth:`RecallIndex.remove`).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from ..trace.checks import Check
from ..trace.summary import key_request
from ..types import BUCKETS, Bucket, Kind, MemoryRecord
from .classify import TaskTypeClassifier, learns_from
from .lexical import LexicalIndex
from .paths import StepIndex, TaskTypeIndex, TriggerIndex


class RetiredVoters:
    """Retired successes still show how their kind of task is worded: the ``knn`` task-type vote counts them as
    neighbours (:func:`~hindsight_lab.retrieve.recall.recall`, ``extra_votes``) although they are never recalled.

    Args:
        load: returns ``(record, embedding)`` pairs of archived records by id (read once, at the first vote after
            a change).
    """

    def __init__(self, load: Callable[[list[str]], list[tuple[Any, np.ndarray]]]) -> None:
        self._load = load
        self._ids: dict[str, None] = {}  # insertion-ordered set
        self._types: list[str | None] = []
        self._matrix: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, record_id: str) -> None:
        if record_id not in self._ids:
            self._ids[record_id] = None
            self._matrix = None

    def remove(self, record_id: str) -> None:
        if self._ids.pop(record_id, 0) is None:
            self._matrix = None

    def votes(self, q: np.ndarray) -> list[tuple[str | None, float]]:
        """``(task_type, cosine similarity to q)`` of every retired success."""
        if not self._ids:
            return []
        if self._matrix is None:
            pairs = {r.id: (r.task_type, e) for r, e in self._load(list(self._ids))}
            self._ids = {i: None for i in self._ids if i in pairs}
            self._types = [pairs[i][0] for i in self._ids]
            self._matrix = np.stack([pairs[i][1] for i in self._ids]) if self._ids else np.zeros((0, len(q)))
        return list(zip(self._types, map(float, self._matrix @ q)))


def is_retired(rec: MemoryRecord) -> bool:
    """An archived success that later refusals retired (:mod:`hindsight_lab.memory.evidence`)."""
    return bool((rec.attrs or {}).get("retired_by"))


def stored_request(rec: MemoryRecord) -> str:
    """The request of an episode record, as the classifier reads it: its key without the ``Tools:`` line, else its
    stored text. A query is a request alone; the tools a run called teach the classifier through its task type's
    description instead (:mod:`hindsight_lab.retrieve.classify`)."""
    return key_request(rec.key) if rec.key else rec.content


class RecallIndex:
    """Everything recall reads besides the store's vectors, for one open store.

    Args:
        classifier: the ``retrieval.classifier`` config section.
        embed: texts → embeddings (the ``embedding`` classifier's features).
        load_archived: ``(record, embedding)`` pairs of archived records by id (the retired voters).
    """

    def __init__(self, classifier: Any, embed: Callable[[list[str]], np.ndarray],
                 load_archived: Callable[[list[str]], list[tuple[Any, np.ndarray]]]) -> None:
        self.learn_from = classifier.learn_from
        self.task_types = TaskTypeIndex()
        self.triggers = TriggerIndex()
        self.steps = StepIndex()
        self.lexical = LexicalIndex()
        self.classifier = TaskTypeClassifier(
            classifier.max_per_type, classifier.min_votes, classifier.min_share,
            method="embedding" if classifier.method == "embedding" else "logistic", embed=embed,
            describe_weight=classifier.describe_weight, instance_blind=classifier.instance_blind,
            contrast=classifier.contrast)
        self.retired = RetiredVoters(load_archived)
        self._bucket_of: dict[str, Bucket] = {}
        self._counts: dict[Bucket, int] = dict.fromkeys(BUCKETS, 0)
        self._episode_ids: dict[str, str] = {}
        self._sources: dict[str, tuple[str, ...]] = {}  # unarchived record -> its source episodes

    def build(self, rows: Iterable[tuple[MemoryRecord, Bucket]]) -> None:
        """Index every stored record (called once, when the store opens)."""
        for rec, bucket in rows:
            self.add(rec, bucket)

    def bucket_of(self, record_id: str) -> Bucket | None:
        """The bucket a record is in, None when the store does not hold it."""
        return self._bucket_of.get(record_id)

    def count(self, bucket: Bucket | str) -> int:
        return self._counts[Bucket(bucket)]

    @property
    def counts(self) -> dict[Bucket, int]:
        return dict(self._counts)

    def sources(self) -> list[tuple[str, tuple[str, ...]]]:
        """``(record id, source_episode_ids)`` of every unarchived record, in the order they were first stored."""
        return list(self._sources.items())

    def record_of_episode(self, episode_id: str) -> str | None:
        """The id of the record written for the episode ``episode_id`` (archived since, or not), else None."""
        return self._episode_ids.get(episode_id)

    def add(self, rec: MemoryRecord, bucket: Bucket | str) -> None:
        """A record was stored in ``bucket`` (first written, changed, or moved there)."""
        bucket = Bucket(bucket)
        old = self._bucket_of.get(rec.id)
        if old != bucket:
            if old is not None:
                self._counts[old] -= 1
            self._counts[bucket] += 1
        self._bucket_of[rec.id] = bucket
        retired = is_retired(rec)
        if bucket is Bucket.ARCHIVE:
            self._sources.pop(rec.id, None)
            self.task_types.remove(rec.id)
            self.triggers.remove(rec.id)
            self.steps.remove(rec.id)
            self.lexical.remove(rec.id)
            if not retired:
                self.classifier.remove(rec.id)
                return
            self.retired.add(rec.id)  # a retired success still shows how its kind of task is worded
        else:
            self.retired.remove(rec.id)
            self._sources[rec.id] = tuple(rec.source_episode_ids)
            self.task_types.add(rec.id, rec.task_type, rec.created_at.timestamp(), bucket)
            self.lexical.add(rec.id, rec.embed_text, bucket)
        if rec.kind is Kind.EPISODE:  # without a task_type (not learnt from) the classifier forgets the record
            learnt = learns_from(self.learn_from, rec.outcome, (rec.attrs or {}).get("failure_cause"))
            self.classifier.add(rec.id, stored_request(rec), rec.task_type if learnt else None,
                                rec.created_at.timestamp(), tools=(rec.attrs or {}).get("tools", ()))
        if bucket is Bucket.ARCHIVE:
            return
        if rec.kind is Kind.RULE:
            self.triggers.add(rec.id, rec.trigger, rec.domain)
            check = Check.of((rec.attrs or {}).get("check"))
            self.steps.add(rec.id, check.target if check else None, rec.domain)
        if rec.kind is Kind.EPISODE and rec.source_episode_ids:
            self._episode_ids[rec.source_episode_ids[0]] = rec.id

    def remove(self, record_id: str) -> None:
        """A record was deleted from the store."""
        old = self._bucket_of.pop(record_id, None)
        if old is not None:
            self._counts[old] -= 1
        self._sources.pop(record_id, None)
        self.retired.remove(record_id)
        self.task_types.remove(record_id)
        self.triggers.remove(record_id)
        self.steps.remove(record_id)
        self.lexical.remove(record_id)
        self.classifier.remove(record_id)

    def retired_votes(self, q: np.ndarray) -> list[tuple[str | None, float]]:
        """The retired successes' votes for the ``knn`` classifier (``(task_type, similarity to q)``)."""
        return self.retired.votes(q)
