"""Judging modes (DESIGN §6): what a replay's queries ask of a memory, judged the same way for every system.

- ``repeat`` — today's rules (:meth:`~.judging.Judgements.from_episodes`): a query is a run whose task ran before;
  the earlier runs of its task are grade 2, earlier runs of its ground-truth task type grade 1.
- ``transfer`` — a query is the first run of its task for which an earlier run of the same ground-truth task type
  exists: nothing of its own task is in memory, so only what carries over from other tasks of its kind can help.
  Those earlier same-type runs are grade 2; nothing else is relevant.
- ``outcome`` — a query is a run whose task succeeded before: the earlier successful runs of its task are grade 2
  (what worked), its earlier failed runs and the earlier successful runs of other tasks of its type grade 1.

Every mode reads only the episodes' own fields (task id, ground-truth task type, recorded outcome, replay order),
never a memory system. A mode with no query on a dataset (LoCoMo has no tasks) is reported as n/a.

Examples:
    >>> eps = [JudgedEpisode("a", "t1", "refund", None, 0, "failure"),
    ...        JudgedEpisode("b", "t2", "refund", None, 1, "success"),
    ...        JudgedEpisode("c", "t1", "refund", None, 2, "success"),
    ...        JudgedEpisode("d", "t1", "refund", None, 3, "success")]
    >>> judge_mode(eps, "transfer").to_qrels()              # b: first run of t2, a refund ran before
    {'b': {'a': 2}}
    >>> judge_mode(eps, "outcome").to_qrels()               # d: t1 succeeded before (c); a failed, b is t2
    {'d': {'b': 1, 'a': 1, 'c': 2}}
    >>> judge_mode(eps, "repeat").query_ids
    ('c', 'd')
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from .judging import RELEVANT, JudgedEpisode, Judgements

MODES: tuple[str, ...] = ("repeat", "transfer", "outcome")
"""Every judging mode, the default first."""


def _episodes(episodes: Iterable[Any]) -> list[JudgedEpisode]:
    eps = [e if isinstance(e, JudgedEpisode) else JudgedEpisode.from_episode(e, i) for i, e in enumerate(episodes)]
    return sorted(eps, key=lambda e: e.order)


def judge_mode(episodes: Iterable[Any], mode: str) -> Judgements:
    """The :class:`~.judging.Judgements` of ``episodes`` (in replay order) under ``mode``."""
    if mode == "repeat":
        return Judgements.from_episodes(episodes)
    if mode not in MODES:
        raise ValueError(f"unknown judging mode {mode!r}; expected one of {MODES}")
    eps = _episodes(episodes)
    by_task: dict[str, list[JudgedEpisode]] = defaultdict(list)
    by_type: dict[str, list[JudgedEpisode]] = defaultdict(list)
    grades: dict[str, dict[str, int]] = {}
    for i, q in enumerate(eps):  # by_task / by_type hold exactly the earlier episodes here
        if q.relevant_ids is None and q.task_id is not None:
            own, kind = by_task.get(q.task_id, []), by_type.get(q.task_type, []) if q.task_type else []
            grades[q.episode_id] = _transfer(own, kind) if mode == "transfer" else _outcome(q, own, kind)
        else:
            grades[q.episode_id] = {}
        if q.task_id is not None:
            by_task[q.task_id].append(q)
        if q.task_type is not None:
            by_type[q.task_type].append(q)
    return Judgements(grades, {q.episode_id: i for i, q in enumerate(eps)}, [e.episode_id for e in eps])


def _transfer(own: list[JudgedEpisode], kind: list[JudgedEpisode]) -> dict[str, int]:
    return {} if own else {e.episode_id: RELEVANT for e in kind}


def _outcome(q: JudgedEpisode, own: list[JudgedEpisode], kind: list[JudgedEpisode]) -> dict[str, int]:
    if not any(e.outcome == "success" for e in own):
        return {}
    g = {e.episode_id: 1 for e in kind if e.outcome == "success" and e.task_id != q.task_id}
    g.update({e.episode_id: RELEVANT if e.outcome == "success" else 1 for e in own})
    return g
