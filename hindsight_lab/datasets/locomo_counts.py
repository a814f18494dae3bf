"""The counts of a LoCoMo read (:mod:`.locomo`): conversations, turns, sessions, questions by category, skipped
questions and evidence that names no turn — what ``datasets`` reports and the adapter's tests check."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

from .locomo import LocomoConversation

__all__ = ["LocomoCounts", "describe_locomo"]


@dataclass(frozen=True)
class LocomoCounts:
    """What :func:`describe_locomo` found (over the conversations given)."""

    conversations: int
    turns: int
    sessions: int
    questions: int
    by_category: dict[int, int]
    skipped_category5: int
    missing_evidence: int
    no_evidence: int
    clock_inversions: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def describe_locomo(conversations: Iterable[LocomoConversation]) -> LocomoCounts:
    """Counts of a LoCoMo read: conversations, turns, questions by category, skipped and missing evidence.

    Examples:
        >>> describe_locomo(read_locomo("locomo10.json")).skipped_category5  # doctest: +SKIP
        446
    """
    convs = list(conversations)
    by_cat = Counter(q.category for c in convs for q in c.questions)
    return LocomoCounts(
        conversations=len(convs), turns=sum(len(c.turns) for c in convs),
        sessions=sum(len({t.session for t in c.turns}) for c in convs),
        questions=sum(len(c.questions) for c in convs), by_category=dict(sorted(by_cat.items())),
        skipped_category5=sum(c.skipped_category5 for c in convs),
        missing_evidence=sum(c.missing_evidence for c in convs), no_evidence=sum(c.no_evidence for c in convs),
        clock_inversions=sum(len(c.clock_inversions) for c in convs))
