"""A hindsight system's reflector wrapped for the replay journal (:mod:`.journal`): its answers are recorded for each
unit and, on resume, given back from the journal instead of asking the reflector again."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ..errors import HindsightLabError
from .units import decode_answer, encode_answer

__all__ = ["JournalingReflector"]


class JournalingReflector:
    """Wraps a hindsight system's reflector: records its answers for the journal, and on resume answers from the
    journal instead of asking it again.

    So a resumed replay re-derives its stores from exactly the reflections the killed one got — which matters for a
    reflector that is not deterministic (an LLM) and costs nothing for the deterministic heuristic one. The replayed
    answers are checked against the episode they are for.

    Args:
        inner: the reflector (anything with ``reflect_batch``).
        name: the system's name, for messages.
    """

    def __init__(self, inner: Any, name: str) -> None:
        self.inner = inner
        self.name = name
        self.recorded: list[Any] = []
        self._queued: list[Any] | None = None  # a list while replaying a journaled unit

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def reflect(self, episode: Any, related: Sequence[Any]) -> Any:
        return self.reflect_batch([(episode, related)])[0]

    def reflect_batch(self, items: Sequence[tuple[Any, Sequence[Any]]]) -> list[Any]:
        if self._queued is None:
            answers = list(self.inner.reflect_batch(items))
            self.recorded.extend(answers)
            return answers
        if len(self._queued) < len(items):
            raise HindsightLabError(f"resume: system {self.name!r} asked for {len(items)} reflection(s) where the "
                                    f"journal holds {len(self._queued)}: the replay diverged from the journal")
        answers, self._queued = self._queued[:len(items)], self._queued[len(items):]
        for (episode, _), answer in zip(items, answers):
            got = getattr(answer, "episode_id", None)
            want = getattr(episode, "episode_id", None)
            if got is not None and want is not None and got != want:
                raise HindsightLabError(f"resume: system {self.name!r} asked for a reflection on {want!r}; the "
                                        f"journal holds one on {got!r}: the replay diverged from the journal")
        return answers

    def take(self) -> list[dict[str, Any]]:
        """The answers recorded since the last call, encoded, and forget them."""
        out = [encode_answer(a) for a in self.recorded]
        self.recorded.clear()
        return out

    def replay(self, answers: Iterable[Mapping[str, Any]]) -> None:
        """Answer the next requests from these journaled answers, in order, until :meth:`done_replaying`."""
        self._queued = [decode_answer(a) for a in answers]

    def done_replaying(self, episode_id: str) -> None:
        """Back to asking the reflector; every journaled answer must have been used."""
        left, self._queued = self._queued or [], None
        if left:
            raise HindsightLabError(f"resume: re-deriving {episode_id!r}, system {self.name!r} used fewer "
                                    f"reflections than the journal holds ({len(left)} left): the replay diverged "
                                    "from the journal")
