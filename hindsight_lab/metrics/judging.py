"""Relevance judgements for a replay (DESIGN §6, "Judging"), independent of any memory system.

One :class:`Judgements` object is built per replay from the episodes in replay order and shared by every system, so
all systems are scored against the same query set and the same ideal lists.

Rules, for a query episode ``q`` and an *earlier* episode ``e`` (``e.order < q.order``):

* ``grade(q, e) = 2`` if both have the same non-null ``task_id``;
  ``1`` if both have the same non-null ground-truth ``task_type``; else ``0`` (null never matches null).
* When ``q`` has ``relevant_episode_ids`` (not ``None``), they override the rule: listed earlier episodes are 2,
  every other episode 0. An *empty* list is an explicit "nothing is relevant".
* A returned record is graded through its source episodes (an episode record has one source: its episode). Its
  grade is the **lower median** of its sources' grades, i.e. the largest ``g`` such that strictly more than half
  of its (distinct) sources have grade ``>= g``; ties round down (``[2, 0] -> 0``, ``[2, 1] -> 1``,
  ``[2, 2, 0] -> 2``). Sources that are not earlier episodes (unknown ids, later episodes, the query itself) are 0.
* **Crediting.** The list is walked in rank order with a set of *credited* source episodes. For each record, a
  source already in that set counts as grade 0 (it stays in the denominator of the majority). When the record's
  grade ``g`` is above 0, its not-yet-credited sources with grade ``>= g`` (the majority that earned ``g``) join
  the set. So a repeated record, or a rule whose relevant sources were already injected as episodes, earns 0,
  and each source earns relevance at most once per list. Credited grade-2 sources of grade-2 records are what
  ``recall@k`` counts (:attr:`JudgedList.relevant_credits`).

Examples:
    >>> eps = [JudgedEpisode("a", "t1", "x", None, 0), JudgedEpisode("b", "t2", "x", None, 1),
    ...        JudgedEpisode("c", "t1", "y", None, 2)]
    >>> j = Judgements.from_episodes(eps)
    >>> j.query_ids
    ('c',)
    >>> j.grade_list("c", [("m1", ("b",)), ("m2", ("a",)), ("m3", ("a", "b"))])
    [0, 2, 0]
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

logger = logging.getLogger(__name__)

__all__ = ["JudgedEpisode", "JudgedList", "Judgements", "grade", "majority_grade"]

RELEVANT = 2
"""The grade that binary metrics count as relevant."""

_GRADES = (0, 1, 2)


@dataclass(frozen=True, slots=True)
class JudgedEpisode:
    """What judging needs to know about one episode.

    Attributes:
        episode_id: Unique id.
        task_id: Same underlying task across attempts, or ``None``.
        task_type: Ground-truth task type (judging only), or ``None``.
        relevant_ids: Explicit relevance labels of this episode as a query (``relevant_episode_ids``), or ``None``
            for the default rule.
        order: Position in replay order; ``e`` is earlier than ``q`` iff ``e.order < q.order``.
        outcome: The episode's recorded outcome (``success``, ``failure``, ``partial``), or ``None``; read by the
            ``outcome`` judging mode (:mod:`~hindsight_lab.metrics.modes`).

    Examples:
        >>> JudgedEpisode("e1", "t1", None, None, 0).task_id
        't1'
    """

    episode_id: str
    task_id: str | None
    task_type: str | None
    relevant_ids: frozenset[str] | None
    order: int
    outcome: str | None = None

    @classmethod
    def from_episode(cls, ep: Any, order: int) -> "JudgedEpisode":
        """From a :class:`hindsight_lab.trace.Episode` (or anything with the same attributes).

        Examples:
            >>> from types import SimpleNamespace as NS
            >>> JudgedEpisode.from_episode(NS(episode_id="e", task_id=None, task_type="x",
            ...                                relevant_episode_ids=["d"]), 3).relevant_ids
            frozenset({'d'})
        """
        rel = getattr(ep, "relevant_episode_ids", None)
        return cls(ep.episode_id, ep.task_id, ep.task_type, None if rel is None else frozenset(rel), order,
                   getattr(ep, "outcome", None))


def grade(query_ep: JudgedEpisode, earlier_ep: JudgedEpisode) -> int:
    """Grade of ``earlier_ep`` toward the query ``query_ep`` (does not check the order).

    ``2`` if ``query_ep.relevant_ids`` is given and lists ``earlier_ep``; ``0`` if it is given and does not.
    Otherwise ``2`` for the same non-null ``task_id``, ``1`` for the same non-null ``task_type``, else ``0``.

    Examples:
        >>> q = JudgedEpisode("q", "t1", "x", None, 5)
        >>> grade(q, JudgedEpisode("a", "t1", "y", None, 0)), grade(q, JudgedEpisode("b", "t2", "x", None, 1))
        (2, 1)
        >>> grade(JudgedEpisode("q", None, None, None, 5), JudgedEpisode("a", None, None, None, 0))
        0
    """
    if query_ep.relevant_ids is not None:
        return RELEVANT if earlier_ep.episode_id in query_ep.relevant_ids else 0
    if query_ep.task_id is not None and query_ep.task_id == earlier_ep.task_id:
        return 2
    if query_ep.task_type is not None and query_ep.task_type == earlier_ep.task_type:
        return 1
    return 0


def majority_grade(source_grades: Sequence[int]) -> int:
    """Largest ``g`` such that strictly more than half of ``source_grades`` are ``>= g`` (the lower median).

    An empty sequence has grade 0.

    Examples:
        >>> majority_grade([2, 0]), majority_grade([2, 1]), majority_grade([2, 2, 0]), majority_grade([1, 2, 0])
        (0, 1, 2, 1)
    """
    n = len(source_grades)
    if n == 0:
        return 0
    return sorted(source_grades)[(n - 1) // 2]


@dataclass(frozen=True, slots=True)
class JudgedList:
    """A returned list, judged for one query.

    Attributes:
        grades: Grade of each record, in rank order (after crediting).
        relevant_credits: For each rank, how many grade-2 source episodes that record newly credited (0 unless
            its grade is 2). ``sum(relevant_credits[:k])`` is the numerator of ``recall@k``.
    """

    grades: tuple[int, ...]
    relevant_credits: tuple[int, ...]


def _item_parts(item: Any) -> tuple[Any, tuple[str, ...]]:
    if isinstance(item, tuple) and len(item) == 2:
        if isinstance(item[1], str):
            raise TypeError(f"source_episode_ids of {item[0]!r} must be a tuple of ids, got the string "
                            f"{item[1]!r}; write ({item[0]!r}, ({item[1]!r},))")
        return item[0], tuple(item[1])
    mid = getattr(item, "memory_id", None) or getattr(item, "id", None)
    srcs = getattr(item, "source_episode_ids", None)
    if srcs is None and getattr(item, "record", None) is not None:  # a Hit
        srcs = item.record.source_episode_ids
    if srcs is None:
        raise TypeError(f"expected (memory_id, source_episode_ids) or an object with source_episode_ids, "
                        f"got {type(item).__name__}")
    return mid, tuple(srcs)


class Judgements:
    """The grades of every earlier episode toward each query, for one replay.

    Build with :meth:`from_episodes` (traces) or :meth:`from_qrels` (explicit labels, e.g. LoCoMo evidence turns).
    Only non-zero grades are stored; every other earlier candidate is 0.

    Attributes:
        query_ids: The query set: every query with at least one earlier grade-2 episode, in replay order.

    Examples:
        >>> j = Judgements.from_qrels({"q1": {"t3": 2}, "q2": {}}, {"q1": ["t1", "t2", "t3"], "q2": ["t1"]})
        >>> j.query_ids, j.ideal("q1", 2), j.n_relevant("q1")
        (('q1',), [2, 0], 1)
    """

    def __init__(self, grades: Mapping[str, Mapping[str, int]], n_candidates: Mapping[str, int],
                 order: Sequence[str]) -> None:
        self._grades = {q: dict(g) for q, g in grades.items()}
        self._n_candidates = dict(n_candidates)
        self._order = tuple(order)
        self.query_ids: tuple[str, ...] = tuple(
            q for q in self._order if any(v == RELEVANT for v in self._grades.get(q, {}).values()))

    # -- construction -----------------------------------------------------------------------------------------
    @classmethod
    def from_episodes(cls, episodes: Iterable[Any]) -> "Judgements":
        """Judge every episode against every earlier one.

        Args:
            episodes: :class:`JudgedEpisode` values (their ``order`` is used), or Episode-like objects in replay
                order (their position is the order). Episode ids must be unique.

        Cost is linear in the number of non-zero grades (episodes are indexed by task_id and task_type).

        Raises:
            ValueError: duplicate episode ids or duplicate ``order`` values.
        """
        eps = [e if isinstance(e, JudgedEpisode) else JudgedEpisode.from_episode(e, i)
               for i, e in enumerate(episodes)]
        ids = [e.episode_id for e in eps]
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
            raise ValueError(f"episode ids must be unique within a replay; duplicated: {dup}")
        orders = [e.order for e in eps]
        if len(set(orders)) != len(orders):
            raise ValueError("JudgedEpisode.order values must be distinct (they define 'earlier')")
        eps.sort(key=lambda e: e.order)
        by_task: dict[str, list[JudgedEpisode]] = defaultdict(list)
        by_type: dict[str, list[JudgedEpisode]] = defaultdict(list)
        by_id = {e.episode_id: e for e in eps}
        grades: dict[str, dict[str, int]] = {}
        n_cand: dict[str, int] = {}
        for i, q in enumerate(eps):  # by_task / by_type hold exactly the earlier episodes here
            g: dict[str, int] = {}
            if q.relevant_ids is not None:
                for rid in q.relevant_ids:
                    e = by_id.get(rid)
                    if e is not None and e.order < q.order:
                        g[rid] = RELEVANT
            else:
                if q.task_type is not None:
                    for e in by_type.get(q.task_type, ()):
                        g[e.episode_id] = 1
                if q.task_id is not None:
                    for e in by_task.get(q.task_id, ()):
                        g[e.episode_id] = 2
            grades[q.episode_id] = g
            n_cand[q.episode_id] = i
            if q.task_id is not None:
                by_task[q.task_id].append(q)
            if q.task_type is not None:
                by_type[q.task_type].append(q)
        return cls(grades, n_cand, [e.episode_id for e in eps])

    @classmethod
    def from_qrels(cls, qrels: Mapping[str, Mapping[str, int]],
                   candidates_per_query: Mapping[str, Iterable[str]] | None = None) -> "Judgements":
        """From explicit labels ``{query_id: {source_id: grade}}`` (LoCoMo: evidence turns are 2, others 0).

        Args:
            qrels: Grades in ``{0, 1, 2}``; unlisted sources are 0.
            candidates_per_query: The sources each query may retrieve (for LoCoMo, the conversation's turns).
                Labelled sources outside it are dropped with a warning (they can never be retrieved and are not
                earlier episodes). ``None``: every labelled source is a candidate, and the candidate count (used
                only to pad :meth:`ideal` with zeros) is the number of labelled sources.

        The query set is the queries with at least one grade-2 source left.

        Raises:
            ValueError: a grade outside ``{0, 1, 2}``, or a query of ``qrels`` missing from
                ``candidates_per_query`` (queries only in ``candidates_per_query`` are judged with no labels).
        """
        grades: dict[str, dict[str, int]] = {}
        n_cand: dict[str, int] = {}
        dropped = 0
        for q, labels in qrels.items():
            for sid, v in labels.items():
                if isinstance(v, bool) or v not in _GRADES:
                    raise ValueError(f"qrels[{q!r}][{sid!r}] = {v!r}: expected a grade in {_GRADES}")
            if candidates_per_query is None:
                cand = None
                n_cand[q] = len(labels)
            else:
                if q not in candidates_per_query:
                    raise ValueError(f"query {q!r} is in qrels but not in candidates_per_query; "
                                     f"give its candidate sources (an empty list if it has none)")
                cand = set(candidates_per_query[q])
                n_cand[q] = len(cand)
            kept = {s: v for s, v in labels.items() if v > 0 and (cand is None or s in cand)}
            dropped += sum(1 for s, v in labels.items() if v > 0 and cand is not None and s not in cand)
            grades[q] = kept
        if candidates_per_query is not None:
            for q, cand in candidates_per_query.items():
                if q not in grades:
                    grades[q] = {}
                    n_cand[q] = len(set(cand))
        if dropped:
            logger.warning("dropped %d labelled sources that are not among their query's candidates", dropped)
        return cls(grades, n_cand, list(grades))

    # -- lookups ----------------------------------------------------------------------------------------------
    def _g(self, query_id: str) -> dict[str, int]:
        try:
            return self._grades[query_id]
        except KeyError:
            raise KeyError(f"no judgements for query {query_id!r}; judge the replay's own episodes or qrels") \
                from None

    def grades(self, query_id: str) -> Mapping[str, int]:
        """Non-zero grades of the earlier episodes toward ``query_id`` (every other candidate is 0)."""
        return dict(self._g(query_id))

    def n_relevant(self, query_id: str) -> int:
        """Number of grade-2 earlier episodes: the denominator of ``recall@k``."""
        return sum(1 for v in self._g(query_id).values() if v == RELEVANT)

    def n_candidates(self, query_id: str) -> int:
        """Number of earlier episodes (candidates) of ``query_id``."""
        self._g(query_id)
        return self._n_candidates[query_id]

    def ideal(self, query_id: str, k: int) -> list[int]:
        """Best ``k`` grades among the earlier episodes, descending (padded with 0 up to the candidate count).

        This is the ideal list of ``ndcg@k``, whatever any system stored.
        """
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        best = sorted(self._g(query_id).values(), reverse=True)[:k]
        pad = max(0, min(k, self._n_candidates[query_id]) - len(best))
        return best + [0] * pad

    def to_qrels(self, query_ids: Iterable[str] | None = None) -> dict[str, dict[str, int]]:
        """``{query_id: {episode_id: grade}}`` (non-zero grades) for the query set, or the given queries."""
        qs = self.query_ids if query_ids is None else query_ids
        return {q: dict(self._g(q)) for q in qs}

    # -- grading a returned list ------------------------------------------------------------------------------
    def record_grade(self, query_id: str, source_episode_ids: Iterable[str]) -> int:
        """Majority grade of one record toward ``query_id``, with no crediting (see :func:`majority_grade`)."""
        g = self._g(query_id)
        return majority_grade([g.get(s, 0) for s in dict.fromkeys(source_episode_ids)])

    def judge_list(self, query_id: str, returned: Sequence[Any]) -> JudgedList:
        """Grade a returned list in rank order, crediting each source episode at most once (module docstring).

        Args:
            query_id: The query.
            returned: ``(memory_id, source_episode_ids)`` pairs, or objects with ``source_episode_ids`` (e.g.
                the replay's ``Injected``), in rank order as injected.
        """
        g = self._g(query_id)
        credited: set[str] = set()
        grades: list[int] = []
        credits: list[int] = []
        for item in returned:
            _, sources = _item_parts(item)
            srcs = list(dict.fromkeys(sources))
            sg = [0 if s in credited else g.get(s, 0) for s in srcs]
            rg = majority_grade(sg)
            new_rel = 0
            if rg > 0:
                for s, v in zip(srcs, sg):
                    if v >= rg:
                        credited.add(s)
                        new_rel += rg == RELEVANT and v == RELEVANT
            grades.append(rg)
            credits.append(new_rel)
        return JudgedList(tuple(grades), tuple(credits))

    def grade_list(self, query_id: str, returned: Sequence[Any]) -> list[int]:
        """Grades of a returned list in rank order (:meth:`judge_list` without the recall credits)."""
        return list(self.judge_list(query_id, returned).grades)

    def store_has_relevant(self, query_id: str, stored: Iterable[Any]) -> bool:
        """Whether any stored record has (majority) grade 2 toward the query — the input of ``oracle hit``.

        Args:
            stored: ``(memory_id, source_episode_ids)`` of every unarchived record at query time.
        """
        return any(self.record_grade(query_id, _item_parts(it)[1]) == RELEVANT for it in stored)

    def n_store_relevant(self, query_id: str, stored: Iterable[Any]) -> int:
        """Number of stored records with (majority) grade 2 toward the query (``n`` of ``r_precision``)."""
        return sum(self.record_grade(query_id, _item_parts(it)[1]) == RELEVANT for it in stored)

    def __repr__(self) -> str:
        return f"Judgements(episodes={len(self._order)}, queries={len(self.query_ids)})"
