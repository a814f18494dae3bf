"""Ranking metrics (DESIGN §6): pure functions of one query's judged list, then aggregation.

A query's list is its **grades in rank order, as injected** (after ``top_k`` and the token budget), produced by
:meth:`hindsight_lab.metrics.judging.Judgements.judge_list`. Grades are 0, 1 or 2; binary metrics count grade 2 as
relevant; ``ndcg`` uses the grade itself as the gain. Ranks are 1-based below.

Per-query functions return floats; :func:`evaluate` returns ``{metric: {query_id: value}}`` and :func:`aggregate`
averages it. :func:`evaluate_run` takes the usual dict-of-dicts ``qrels`` and ``run`` instead.

Examples:
    >>> grades = [0, 2, 1]
    >>> hit_at_k(grades, 1), hit_at_k(grades, 3), mrr(grades)
    (0.0, 1.0, 0.5)
    >>> per_query = evaluate({"q": grades}, {"q": [2, 2, 1]}, {"q": 2}, metrics=("recall@3", "fill@5"))
    >>> per_query
    {'recall@3': {'q': 0.5}, 'fill@5': {'q': 3.0}}
    >>> aggregate(per_query)
    {'recall@3': 0.5, 'fill@5': 3.0}
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Iterable, Literal, Mapping, Sequence

from .judging import RELEVANT

__all__ = [
    "DEFAULT_METRICS", "HitRate", "aggregate", "evaluate", "evaluate_run", "fill_at_k", "hit_at_k", "hit_rate",
    "mrr", "ndcg_at_k", "oracle_hit", "parse_metric", "precision_at_k", "r_precision", "recall_at_k",
]

DEFAULT_METRICS: tuple[str, ...] = ("ndcg@5", "ndcg@10", "hit@1", "hit@3", "hit@5", "precision@5", "recall@5",
                                    "recall@10", "mrr", "fill@10")


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")


def _n_hits(grades: Sequence[float], k: int) -> int:
    return sum(1 for g in grades[:k] if g >= RELEVANT)


def hit_at_k(grades: Sequence[float], k: int) -> float:
    """``1`` if a grade-2 record is among the first ``k``, else ``0``.

    Examples:
        >>> hit_at_k([1, 0, 2], 2), hit_at_k([1, 0, 2], 3), hit_at_k([], 5)
        (0.0, 1.0, 0.0)
    """
    _check_k(k)
    return 1.0 if _n_hits(grades, k) else 0.0


def precision_at_k(grades: Sequence[float], k: int, over: Literal["k", "filled"] = "k") -> float:
    """Share of relevant (grade-2) records among the first ``k``.

    ``over="k"`` (DESIGN §6): ``hits@k / k`` — empty slots count as misses.
    ``over="filled"`` (the replay issue's "precision@k over filled slots"): ``hits@k / min(k, len(grades))``,
    and 0 for an empty list.

    Examples:
        >>> precision_at_k([2, 0], 4), precision_at_k([2, 0], 4, over="filled"), precision_at_k([], 3, "filled")
        (0.25, 0.5, 0.0)
    """
    _check_k(k)
    if over == "k":
        return _n_hits(grades, k) / k
    if over == "filled":
        filled = min(k, len(grades))
        return _n_hits(grades, k) / filled if filled else 0.0
    raise ValueError(f"over must be 'k' or 'filled', got {over!r}")


def recall_at_k(grades: Sequence[float], k: int, n_relevant: int,
                credits: Sequence[int] | None = None) -> float:
    """``(relevant source episodes credited in the first k) / n_relevant``; 0 when ``n_relevant`` is 0.

    ``n_relevant`` is the number of grade-2 earlier episodes. ``credits[i]`` is how many distinct grade-2 source
    episodes record ``i`` newly credited (:attr:`JudgedList.relevant_credits`: a grade-2 rule built from three
    relevant episodes credits 3). Without ``credits``, each grade-2 record counts 1 (episode records).

    Examples:
        >>> recall_at_k([2, 0, 2], 2, 4), recall_at_k([2, 0, 2], 3, 4), recall_at_k([2, 0], 2, 4, credits=[3, 0])
        (0.25, 0.5, 0.75)
    """
    _check_k(k)
    if n_relevant < 0:
        raise ValueError(f"n_relevant must be >= 0, got {n_relevant}")
    if credits is None:
        found = _n_hits(grades, k)
    else:
        if len(credits) != len(grades):
            raise ValueError(f"credits has {len(credits)} entries but the list has {len(grades)} records")
        found = sum(credits[:k])
    if n_relevant == 0:
        return 0.0
    if found > n_relevant:
        raise ValueError(f"{found} relevant sources credited but n_relevant is {n_relevant}; the list credits a "
                         "source twice or n_relevant is wrong (grade lists with Judgements.judge_list)")
    return found / n_relevant


def mrr(grades: Sequence[float], k: int | None = None) -> float:
    """Reciprocal rank ``1 / rank`` of the first grade-2 record (within the first ``k`` if given), else 0.

    Examples:
        >>> mrr([0, 1, 2]), mrr([0, 1, 2], k=2), mrr([])
        (0.3333333333333333, 0.0, 0.0)
    """
    if k is not None:
        _check_k(k)
    for rank, g in enumerate(grades[:k] if k is not None else grades, start=1):
        if g >= RELEVANT:
            return 1.0 / rank
    return 0.0


def _dcg(gains: Iterable[float]) -> float:
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))


def ndcg_at_k(grades: Sequence[float], k: int, ideal: Sequence[float]) -> float:
    """``DCG@k / IDCG@k`` with ``DCG@k = sum_{r=1..k} grade_r / log2(r + 1)``; 0 when ``IDCG@k`` is 0.

    The ideal list is the best ``k`` of ``ideal`` — the grades of all earlier episodes
    (:meth:`Judgements.ideal`), whatever any system stored — sorted descending.

    Examples:
        >>> round(ndcg_at_k([0, 2], 2, [2, 1, 0]), 4)   # (2/log2 3) / (2 + 1/log2 3) = 1.2619 / 2.6309
        0.4796
    """
    _check_k(k)
    idcg = _dcg(sorted(ideal, reverse=True)[:k])
    if idcg <= 0:
        return 0.0
    return _dcg(grades[:k]) / idcg


def fill_at_k(grades: Sequence[float], k: int) -> float:
    """Number of the first ``k`` slots that were filled: ``min(k, len(grades))`` (a count, not a share).

    Examples:
        >>> fill_at_k([0, 0, 1], 5), fill_at_k([0, 0, 1], 2)
        (3.0, 2.0)
    """
    _check_k(k)
    return float(min(k, len(grades)))


def r_precision(grades: Sequence[float], n_relevant_in_store: int, cap: int = 3) -> float:
    """Of the first ``m = min(cap, n)`` slots, the share that are relevant (grade 2); 0 when ``m`` is 0.

    ``n`` is the number of the query's own relevant (grade-2) memories in the store at query time
    (:meth:`Judgements.n_store_relevant`), so a system is not asked for more than it could have returned.

    Examples:
        >>> r_precision([2, 0, 2, 2], 5), r_precision([2, 0, 2, 2], 1), r_precision([2], 0)
        (0.6666666666666666, 1.0, 0.0)
    """
    _check_k(cap)
    if n_relevant_in_store < 0:
        raise ValueError(f"n_relevant_in_store must be >= 0, got {n_relevant_in_store}")
    m = min(cap, n_relevant_in_store)
    return _n_hits(grades, m) / m if m else 0.0


@dataclass(frozen=True, slots=True)
class HitRate:
    """Micro-averaged share of injected memories that are relevant (grade >= 1).

    Attributes:
        rate: ``relevant / injected`` over the queries that injected something (0 when none did).
        relevant: Relevant injected memories, summed over queries.
        injected: Injected memories, summed over queries.
        queries: Queries that injected something.
        empty_queries: Queries that injected nothing (reported beside the rate, not in it).
    """

    rate: float
    relevant: int
    injected: int
    queries: int
    empty_queries: int


def hit_rate(injected_grades_per_query: Mapping[str, Sequence[float]]) -> HitRate:
    """``sum_q #{grade >= 1} / sum_q len(list_q)`` over queries with a non-empty list (DESIGN §6 ``hit_rate``).

    Examples:
        >>> hit_rate({"a": [2, 0], "b": [1, 1, 0], "c": []})   # (1 + 2) / (2 + 3)
        HitRate(rate=0.6, relevant=3, injected=5, queries=2, empty_queries=1)
    """
    relevant = injected = queries = empty = 0
    for grades in injected_grades_per_query.values():
        if not grades:
            empty += 1
            continue
        queries += 1
        injected += len(grades)
        relevant += sum(1 for g in grades if g >= 1)
    return HitRate(relevant / injected if injected else 0.0, relevant, injected, queries, empty)


def oracle_hit(store_has_grade2: bool) -> float:
    """``1`` if the system's own store held an unarchived grade-2 record at query time
    (:meth:`Judgements.store_has_relevant`), else ``0``; its mean is the share of such queries.

    Examples:
        >>> oracle_hit(True), oracle_hit(False)
        (1.0, 0.0)
    """
    return 1.0 if store_has_grade2 else 0.0


_NEEDS_K = {"hit", "precision", "precision_filled", "recall", "ndcg", "fill"}
_OPTIONAL_K = {"mrr", "r_precision"}
_NAME = re.compile(r"^([a-z_]+)(?:@(\d+))?$")


def parse_metric(name: str) -> tuple[str, int | None]:
    """Split ``"ndcg@5"`` into ``("ndcg", 5)``.

    Known names: ``hit@k``, ``precision@k`` (over k), ``precision_filled@k`` (over filled slots), ``recall@k``,
    ``ndcg@k``, ``fill@k``, ``mrr`` / ``mrr@k``, ``r_precision`` / ``r_precision@cap`` (cap defaults to 3).

    Examples:
        >>> parse_metric("ndcg@5"), parse_metric("mrr")
        (('ndcg', 5), ('mrr', None))
    """
    m = _NAME.match(name.strip().lower()) if isinstance(name, str) else None
    if m is None or m.group(1) not in _NEEDS_K | _OPTIONAL_K:
        raise ValueError(f"unknown metric {name!r}; expected one of hit@k, precision@k, precision_filled@k, "
                         "recall@k, ndcg@k, fill@k, mrr[@k], r_precision[@cap]")
    base, k = m.group(1), (int(m.group(2)) if m.group(2) else None)
    if base in _NEEDS_K and k is None:
        raise ValueError(f"metric {name!r} needs a cutoff, e.g. {base}@5")
    if k is not None and k < 1:
        raise ValueError(f"metric {name!r}: the cutoff must be >= 1")
    return base, k


def evaluate(runs_grades: Mapping[str, Sequence[float]], ideals: Mapping[str, Sequence[float]] | None,
             n_relevant: Mapping[str, int], metrics: Sequence[str] = DEFAULT_METRICS, *,
             credits: Mapping[str, Sequence[int]] | None = None,
             n_store_relevant: Mapping[str, int] | None = None) -> dict[str, dict[str, float]]:
    """Per-query values of each metric: ``{metric: {query_id: value}}``.

    The **query set is the keys of** ``n_relevant`` (the judgements' query set, the same for every system); a
    query missing from ``runs_grades`` is scored as an empty list.

    Args:
        runs_grades: Each query's grades in rank order, as injected.
        ideals: Each query's earlier-episode grades (:meth:`Judgements.ideal`); needed for ``ndcg``.
        n_relevant: Grade-2 earlier episodes per query (recall's denominator).
        metrics: Names as in :func:`parse_metric`.
        credits: Per query, :attr:`JudgedList.relevant_credits` (recall); default one per grade-2 record.
        n_store_relevant: Per query, grade-2 records in the store at query time; needed for ``r_precision``.

    Raises:
        ValueError: an unknown metric, a run query outside the query set, or a missing ``ideals`` /
            ``n_store_relevant`` entry that a requested metric needs.
    """
    parsed = [(m, *parse_metric(m)) for m in metrics]
    extra = [q for q in runs_grades if q not in n_relevant]
    if extra:
        raise ValueError(f"{len(extra)} run queries have no judgements (not in n_relevant), e.g. {extra[:3]}")
    out: dict[str, dict[str, float]] = {m: {} for m, _, _ in parsed}
    for q, nrel in n_relevant.items():
        grades = list(runs_grades.get(q, ()))
        for name, base, k in parsed:
            if base == "hit":
                v = hit_at_k(grades, k)
            elif base == "precision":
                v = precision_at_k(grades, k, "k")
            elif base == "precision_filled":
                v = precision_at_k(grades, k, "filled")
            elif base == "recall":
                cr = None if credits is None or q not in credits else credits[q]
                v = recall_at_k(grades, k, nrel, cr)
            elif base == "ndcg":
                if ideals is None or q not in ideals:
                    raise ValueError(f"{name} needs the ideal grades of query {q!r}: pass ideals")
                v = ndcg_at_k(grades, k, ideals[q])
            elif base == "fill":
                v = fill_at_k(grades, k)
            elif base == "mrr":
                v = mrr(grades, k)
            else:  # r_precision
                if n_store_relevant is None or q not in n_store_relevant:
                    raise ValueError(f"{name} needs the store's relevant count of query {q!r}: pass "
                                     "n_store_relevant (Judgements.n_store_relevant)")
                v = r_precision(grades, n_store_relevant[q], cap=k or 3)
            out[name][q] = v
    return out


def evaluate_run(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                 metrics: Sequence[str] = DEFAULT_METRICS) -> dict[str, dict[str, float]]:
    """:func:`evaluate` on dict-of-dicts: ``qrels = {query_id: {memory_id: grade}}``,
    ``run = {query_id: {memory_id: score}}`` (higher is better).

    Each run list is ranked by score descending, ties by memory id; unlisted memories have grade 0. The query set
    is the qrels queries with at least one grade-2 memory; the ideal is the best grades in ``qrels[q]``. No
    derived-record crediting is applied here (use :class:`Judgements` for that).

    Examples:
        >>> evaluate_run({"q": {"a": 2, "b": 1}}, {"q": {"b": 0.9, "a": 0.5, "z": 0.1}}, ["mrr", "hit@1"])
        {'mrr': {'q': 0.5}, 'hit@1': {'q': 0.0}}
    """
    queries = {q: lab for q, lab in qrels.items() if any(v >= RELEVANT for v in lab.values())}
    grades = {}
    for q, scores in run.items():
        if q not in queries:
            continue
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        grades[q] = [queries[q].get(mid, 0) for mid, _ in ranked]
    ideals = {q: sorted(lab.values(), reverse=True) for q, lab in queries.items()}
    n_rel = {q: sum(1 for v in lab.values() if v >= RELEVANT) for q, lab in queries.items()}
    return evaluate(grades, ideals, n_rel, metrics)


def aggregate(per_query: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Mean over queries of each metric: ``{metric: mean_q value}``.

    Raises:
        ValueError: a metric with no queries (an empty query set is a failure, DESIGN §6) or a NaN value.

    Examples:
        >>> aggregate({"hit@3": {"a": 1.0, "b": 0.0}})
        {'hit@3': 0.5}
    """
    out: dict[str, float] = {}
    for metric, values in per_query.items():
        if not values:
            raise ValueError(f"{metric}: no queries to average (empty query set)")
        for q, v in values.items():
            if v != v:
                raise ValueError(f"{metric} is NaN for query {q!r}")
        out[metric] = math.fsum(values.values()) / len(values)
    return out
