"""The memory as the reflection pipeline sees it: the narrow :class:`~hindsight_lab.reflect.protocol.MemoryPort`."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Sequence

from ..types import Bucket, MemoryRecord, WriteResult
from .recovery import finish_promotions
from .writes import Writes

if TYPE_CHECKING:
    from ..trace import Episode


class ReflectionPort:
    """Reads through the memory's public verbs (``mem``: a :class:`~.system.MemorySystem`), writes through its
    :class:`~.writes.Writes`, each write as one logical write (``writing``: the memory's write lock, which a
    reflector's call, maybe a slow model's, never holds)."""

    def __init__(self, mem: Any, writes: Writes, writing: Callable[[], ContextManager[None]]) -> None:
        self._mem, self._writes, self._writing = mem, writes, writing

    def stored_episode(self, episode_id: str) -> MemoryRecord | None:
        return self._mem.stored_episode(episode_id)

    def derived_from(self, episode_id: str) -> bool:
        return self._mem.derived_from(episode_id)

    def finish_interrupted(self, now: datetime) -> int:
        with self._writing():
            return finish_promotions(self._writes, now)

    def nearest_episodes(self, text: str, k: int, *, before: datetime | None = None) -> list[MemoryRecord]:
        return self._mem.nearest_episodes(text, k, before=before)

    def write_episode_records(self, episodes: Sequence["Episode"], task_types: Sequence[str | None],
                              now: datetime, compressed: Sequence[Any], decisions: Sequence[Any]
                              ) -> list[MemoryRecord]:
        with self._writing():
            return self._writes.episode_records(episodes, task_types, now, compressed, decisions)

    def update_episode_record(self, record: MemoryRecord) -> None:
        with self._writing():
            self._writes.annotate(Bucket.EPISODE, [record])  # the reflection state: nothing an index reads

    def write_rule(self, content: str, **fields: Any) -> WriteResult:
        return self._mem.write(content, **fields)
