"""What the reflection pipeline talks to: the pluggable :class:`Reflector` and the narrow :class:`MemoryPort` of
the memory it writes into (the memory hands the pipeline a port, never itself)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, Sequence, runtime_checkable

from ..types import MemoryRecord, WriteResult

if TYPE_CHECKING:
    from ..trace import Episode
    from .compress import CompressedEpisode
    from .schema import Reflection, Rejection
    from .triggers import TriggerDecision


@runtime_checkable
class Reflector(Protocol):
    """Turns a compressed episode (plus related earlier ones, the source of counter-examples) into a reflection.

    Implementations never raise for a bad model answer: they return a ``Rejection`` with its reason.
    """

    def reflect(self, episode: "CompressedEpisode", related: Sequence["CompressedEpisode"]
                ) -> "Reflection | Rejection": ...

    def reflect_batch(self, items: Sequence[tuple["CompressedEpisode", Sequence["CompressedEpisode"]]]
                      ) -> list["Reflection | Rejection"]: ...


class MemoryPort(Protocol):
    """The calls the pipeline makes on a memory: what it knows of an episode, the nearest earlier episodes, and
    the writes of episode records and candidate rules."""

    def stored_episode(self, episode_id: str) -> MemoryRecord | None:
        """The stored record of an episode (archived ones included), or None."""

    def derived_from(self, episode_id: str) -> bool:
        """Whether a candidate or rule (archived ones included) has the episode among its sources."""

    def finish_interrupted(self, now: datetime) -> int:
        """Complete the writes a killed run left half done (a promotion); returns how many."""

    def nearest_episodes(self, text: str, k: int, *, before: datetime | None = None) -> list[MemoryRecord]:
        """The ``k`` stored episode records nearest to ``text`` (created no later than ``before``)."""

    def write_episode_records(self, episodes: Sequence["Episode"], task_types: Sequence[str | None],
                              now: datetime, compressed: Sequence["CompressedEpisode"],
                              decisions: Sequence["TriggerDecision"]) -> list[MemoryRecord]:
        """Write one L2 record per episode, keeping its trigger decision."""

    def update_episode_record(self, record: MemoryRecord) -> None:
        """Store a changed episode record (its vector unchanged)."""

    def write_rule(self, content: str, **fields: Any) -> WriteResult:
        """Write a candidate rule (dedup, merge, promotion), as ``MemorySystem.write`` does."""
