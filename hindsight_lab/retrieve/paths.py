"""The small in-process indexes behind the task-type and rule-trigger recall paths (DESIGN §3), and the light
task-type classifier.

No path scans a collection: :class:`TaskTypeIndex` keeps ids by task_type (newest first), :class:`TriggerIndex`
keeps compiled triggers of L3 rules, and :class:`StepIndex` the step each checkable L3 rule guards. All are rebuilt
when a store is opened and updated on every write.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Iterable

from ..types import Trigger

_WS = re.compile(r"\s+")
_PUNCT = re.compile(r"[^\w\s]+")


def normalise(text: str) -> str:
    """Lower-case, NFKC, punctuation to spaces, single spaces: the text triggers are matched on."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return _WS.sub(" ", _PUNCT.sub(" ", text)).strip()


class TaskTypeIndex:
    """Ids by task_type, ordered by creation time, across buckets.

    Examples:
        >>> idx = TaskTypeIndex(); idx.add("e1", "refund", 1.0, "episode"); idx.add("e2", "refund", 2.0, "episode")
        >>> idx.newest("refund", 1)
        [('e2', 'episode')]
    """

    def __init__(self) -> None:
        self._by_type: dict[str, list[tuple[float, str, str]]] = defaultdict(list)
        self._of: dict[str, tuple[str, float, str]] = {}

    def add(self, record_id: str, task_type: str | None, created: float, bucket: str) -> None:
        self.remove(record_id)
        if task_type is None:
            return
        bisect.insort(self._by_type[task_type], (created, record_id, bucket))
        self._of[record_id] = (task_type, created, bucket)

    def remove(self, record_id: str) -> None:
        old = self._of.pop(record_id, None)
        if old is not None:
            task_type, created, bucket = old
            entries = self._by_type[task_type]
            pos = bisect.bisect_left(entries, (created, record_id, bucket))
            if pos < len(entries) and entries[pos][1] == record_id:
                entries.pop(pos)

    def newest(self, task_type: str, n: int) -> list[tuple[str, str]]:
        """The ``n`` newest ``(id, bucket)`` of a task_type."""
        entries = self._by_type.get(task_type, [])
        return [(rid, bucket) for _, rid, bucket in reversed(entries[-n:])] if n > 0 else []

    def types(self) -> dict[str, int]:
        return {t: len(v) for t, v in self._by_type.items() if v}

    def __len__(self) -> int:
        return len(self._of)


@dataclass(frozen=True, slots=True)
class _Compiled:
    any: tuple[re.Pattern[str], ...]
    all: tuple[re.Pattern[str], ...]
    task_types: frozenset[str]
    domain: str | None


def _phrase(keyword: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(normalise(keyword)) + r"(?!\w)")


def validate_trigger(trigger: Trigger) -> None:
    """Raise ``ValueError`` for a trigger that could never match or would match everything."""
    words = [k for k in trigger.any + trigger.all]
    if not words:
        raise ValueError("a trigger needs at least one keyword in 'any' or 'all'")
    if any(not normalise(k) for k in words):
        raise ValueError("trigger keywords must contain a letter or digit")


class TriggerIndex:
    """Compiled triggers of L3 rules; :meth:`match` returns the rules whose trigger fires for a query.

    A trigger fires when the normalised query contains one of ``any`` (as a whole word or phrase; an empty
    ``any`` is satisfied), all of ``all``, and, when ``task_types`` is non-empty, the query's task_type is
    known and listed.

    Examples:
        >>> idx = TriggerIndex(); idx.add("r1", Trigger(any=("refund", "price")))
        >>> idx.match("What is the PRICE of the upgrade?", None)
        ['r1']
    """

    def __init__(self) -> None:
        self._rules: dict[str, _Compiled] = {}

    def add(self, rule_id: str, trigger: Trigger | None, domain: str | None = None) -> None:
        self._rules.pop(rule_id, None)
        if trigger is None or not (trigger.any or trigger.all):
            return
        self._rules[rule_id] = _Compiled(tuple(_phrase(k) for k in trigger.any),
                                         tuple(_phrase(k) for k in trigger.all),
                                         frozenset(trigger.task_types), domain)

    def remove(self, rule_id: str) -> None:
        self._rules.pop(rule_id, None)

    def match(self, query: str, task_type: str | None, domain: str | None = None) -> list[str]:
        text = normalise(query)
        out = []
        for rule_id, c in self._rules.items():
            if domain is not None and c.domain not in (None, domain):
                continue
            if c.task_types and task_type not in c.task_types:
                continue
            if c.any and not any(p.search(text) for p in c.any):
                continue
            if all(p.search(text) for p in c.all):
                out.append(rule_id)
        return out

    def __len__(self) -> int:
        return len(self._rules)


class StepIndex:
    """The step each checkable L3 rule guards (the last tool of its :class:`~hindsight_lab.trace.checks.Check`).

    A rule speaks to the tasks whose runs reach its step. A query has no run yet, but its nearest past runs show
    the steps its kind of task takes: :meth:`match` fires the rules whose step most of them reached, so a rule
    worded in tool names is recalled for a request worded in a customer's words.

    Examples:
        >>> idx = StepIndex(); idx.add("r1", "issue_refund"); idx.add("r2", "reset_password")
        >>> idx.match([(("get_order", "issue_refund"), 0.8), (("issue_refund",), 0.6), (("search",), 0.5)])
        ['r1']
    """

    def __init__(self) -> None:
        self._step: dict[str, tuple[str, str | None]] = {}  # rule id → (step, domain)

    def add(self, rule_id: str, step: str | None, domain: str | None = None) -> None:
        self._step.pop(rule_id, None)
        if step:
            self._step[rule_id] = (step, domain)

    def remove(self, rule_id: str) -> None:
        self._step.pop(rule_id, None)

    def match(self, neighbours: Iterable[tuple[Iterable[str], float]], min_share: float = 0.5,
              domain: str | None = None) -> list[str]:
        """The rules whose step was reached by more than ``min_share`` of the neighbours' similarity weight
        (``neighbours``: each past run's tools and its similarity to the query); with ``domain``, only rules of
        that domain or of none, as for triggers."""
        if not self._step:
            return []
        reached: dict[str, float] = defaultdict(float)
        total = 0.0
        for tools, sim in neighbours:
            w = max(float(sim), 0.0)
            total += w
            for tool in set(tools):
                reached[tool] += w
        if total <= 0:
            return []
        return [rid for rid, (step, of) in self._step.items()
                if reached.get(step, 0.0) / total > min_share and (domain is None or of in (None, domain))]

    def __len__(self) -> int:
        return len(self._step)


def vote_shares(neighbours: Iterable[tuple[str | None, float]], *, k: int) -> dict[str, float]:
    """Each task type's share of the similarity weight of the ``k`` nearest episodes (the ``knn`` classifier's
    probabilities).

    Examples:
        >>> {t: round(p, 3) for t, p in vote_shares([("a", 0.9), ("a", 0.8), ("b", 0.7)], k=3).items()}
        {'a': 0.708, 'b': 0.292}
    """
    weight: dict[str, float] = defaultdict(float)
    total = 0.0
    for task_type, sim in list(neighbours)[:k]:
        w = max(float(sim), 0.0)
        total += w
        if task_type is not None:
            weight[task_type] += w
    return {t: w / total for t, w in weight.items()} if total > 0 else {}


def infer_task_type(neighbours: Iterable[tuple[str | None, float]], *, k: int, min_votes: int,
                    min_share: float) -> tuple[str | None, float]:
    """Similarity-weighted vote of the ``k`` nearest episodes: ``(task_type, share)`` or ``(None, share)`` when
    the vote is too thin (fewer than ``min_votes`` for the winner, or a share not above ``min_share``).

    Examples:
        >>> label, share = infer_task_type([("a", 0.9), ("a", 0.8), ("b", 0.7)], k=3, min_votes=2, min_share=0.5)
        >>> label, round(share, 4)
        ('a', 0.7083)
    """
    top = list(neighbours)[:k]
    shares = vote_shares(top, k=k)
    if not shares:
        return None, 0.0
    votes = Counter(task_type for task_type, _ in top if task_type is not None)
    best = max(shares, key=lambda t: (shares[t], votes[t]))
    share = shares[best]
    if votes[best] < min_votes or share <= min_share:
        return None, share
    return best, share
