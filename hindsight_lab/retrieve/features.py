"""The per-candidate features the rerank weighs, one per term of :data:`~hindsight_lab.retrieve.rerank.TERMS`,
by name (DESIGN §3).

A feature has two halves: ``raw`` reads what a search found (the recall candidates and the clock) and is what the
sweep's cache keeps per query; ``value`` turns the raw column into the feature in [0, 1] under a config's
parameters (only ``recency`` reads one: its half-life). So a config scored from the cache sees exactly the features
a search with that config would have computed.

Examples:
    >>> from hindsight_lab.retrieve.params import ParamBatch, RerankParams
    >>> raw = {"semantic": np.array([0.9, 1.2]), "lexical": np.array([1.0, 0.0]), "task_type": np.array([1.0, 0.0]),
    ...        "task_type_p": np.array([0.6, 0.2]), "confidence": np.array([0.8, 0.5]),
    ...        "recency": np.array([0.0, 14.0]), "episode": np.array([1.0, 0.0]), "fused": np.array([1.0, 0.5])}
    >>> feature_matrix(raw, ParamBatch.of(RerankParams({}))).tolist()
    [[0.9, 1.0, 1.0, 0.6, 0.8, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.2, 0.5, 0.5, 0.0, 0.5]]
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import numpy as np

from ..types import Kind
from .params import ParamBatch

if TYPE_CHECKING:
    from .recall import Candidates


def recency(age_days: np.ndarray | float, half_life_days: float) -> np.ndarray:
    """``0.5 ** (age / half_life)``, with negative ages (clock skew) treated as 0."""
    return np.power(0.5, np.maximum(np.asarray(age_days, dtype=np.float64), 0.0) / half_life_days)


def _as_is(raw: np.ndarray, params: ParamBatch) -> np.ndarray:
    return raw


def _clipped(raw: np.ndarray, params: ParamBatch) -> np.ndarray:
    return np.clip(raw, 0.0, 1.0)


def _recency(ages: np.ndarray, params: ParamBatch) -> np.ndarray:
    """``0.5 ** (age / half_life)``: one column when every config has the same half-life, else ``(C, n)``."""
    half = params.recency_half_life_days
    if len(half) and np.all(half == half[0]):
        return recency(ages, float(half[0]))
    return recency(ages[None, :], half[:, None])


def confidences(c: "Candidates", now: datetime) -> np.ndarray:
    """Each candidate's confidence; with ``retrieval.confidence_within: task_type``, against the candidates of its
    own stored task type: ``0.5 + confidence - their mean``, clipped to [0, 1] (0.5 without a type).

    Examples:
        >>> from types import SimpleNamespace as R
        >>> c = R(records=[R(confidence=0.8, task_type="a"), R(confidence=0.5, task_type="a"),
        ...                R(confidence=0.8, task_type="b"), R(confidence=0.7, task_type=None)],
        ...       confidence_within="task_type")
        >>> confidences(c, None).round(2).tolist()  # b's success is alone of its type: no lift over a's
        [0.65, 0.35, 0.5, 0.5]
    """
    conf = np.asarray([r.confidence for r in c.records], dtype=np.float64)
    if c.confidence_within == "all":
        return conf
    out = np.full(len(conf), 0.5)
    types = [r.task_type for r in c.records]
    for t in set(types) - {None}:
        idx = [i for i, x in enumerate(types) if x == t]
        out[idx] = np.clip(0.5 + conf[idx] - conf[idx].mean(), 0.0, 1.0)
    return out


def type_matches(c: "Candidates", now: datetime) -> np.ndarray:
    """The task-type feature: 1 when the query has a type and the record's stored type is it, or (with
    ``retrieval.classifier.intent``) the classifier gives the record's own request that type; else 0. With
    ``intent_match: no_conflict``, 1 unless the classifier surely gives the request another type (``intents`` None
    where it abstains, and for records whose request it does not type). With ``retrieval.type_match: contains``, a
    type matches when its tools include all of the query type's (:func:`type_contains`).

    Examples:
        >>> from types import SimpleNamespace as R
        >>> recs = [R(task_type="refund"), R(task_type="cancel"), R(task_type="cancel"), R(task_type=None)]
        >>> c = R(records=recs, task_type="refund", intents=[None, "refund", "cancel", None], intent_match="same",
        ...       type_match="exact")
        >>> type_matches(c, None).tolist()
        [1.0, 1.0, 0.0, 0.0]
        >>> type_matches(R(**{**vars(c), "intent_match": "no_conflict"}), None).tolist()  # only a sure "cancel" is 0
        [1.0, 1.0, 0.0, 1.0]
        >>> wider = R(**{**vars(c), "records": [R(task_type="cancel+refund")], "intents": None})
        >>> contains = R(**{**vars(wider), "type_match": "contains"})
        >>> type_matches(wider, None).tolist(), type_matches(contains, None).tolist()
        ([0.0], [1.0])
    """
    if c.task_type is None:
        return np.zeros(len(c.records))
    intents = c.intents or [None] * len(c.records)
    lenient = c.intent_match == "no_conflict" and c.intents is not None
    if c.type_match == "contains":
        def match(t: str | None) -> bool:
            return type_contains(t, c.task_type)
    else:
        def match(t: str | None) -> bool:
            return t == c.task_type
    return np.asarray([1.0 if match(r.task_type) or match(it) or (lenient and it is None) else 0.0
                       for r, it in zip(c.records, intents)], dtype=np.float64)


def type_contains(task_type: str | None, query_type: str) -> bool:
    """Whether ``task_type`` (a derived type: the state-changing tools of a run, joined with ``+``) includes every
    tool of ``query_type``; ``read_only`` and other one-word types contain only themselves.

    Examples:
        >>> type_contains("cancel_reservation+update_reservation_flights", "update_reservation_flights")
        True
        >>> type_contains("update_reservation_flights", "cancel_reservation+update_reservation_flights")
        False
    """
    return task_type is not None and set(query_type.split("+")) <= set(task_type.split("+"))


def type_overlap(a: str | None, b: str | None) -> float:
    """How much two task types share: the Jaccard overlap of their state-changing tools (a derived type is the set
    of them joined with ``+``), so a composite type partly matches each of its parts; 0 when either is None.

    Examples:
        >>> type_overlap("cancel_reservation", "cancel_reservation")
        1.0
        >>> type_overlap("update_reservation_baggages+update_reservation_flights", "update_reservation_flights")
        0.5
        >>> type_overlap("read_only", "cancel_reservation"), type_overlap(None, "read_only")
        (0.0, 0.0)
    """
    if a is None or b is None:
        return 0.0
    if a == b:
        return 1.0
    x, y = set(a.split("+")), set(b.split("+"))
    return len(x & y) / len(x | y)


def graded_type_matches(c: "Candidates", now: datetime) -> np.ndarray:
    """The graded task-type feature: how well a record's type fits the query's, weighed by how sure the
    classifier is, ``Σ_t P(t | query) · overlap(t, type)`` (:func:`type_overlap`), for the record's stored type or
    (with ``retrieval.classifier.intent``) its request's type, whichever fits better. A guess of share 0.4 counts
    0.4, not 1, and a composite type counts in part; with a type the caller gave, it is the overlap itself.

    Examples:
        >>> from types import SimpleNamespace as R
        >>> c = R(records=[R(task_type="a"), R(task_type="a+b"), R(task_type="c")], type_probs={"a": 0.6, "c": 0.4},
        ...       intents=None)
        >>> graded_type_matches(c, None).round(2).tolist()
        [0.6, 0.3, 0.4]
    """
    probs = c.type_probs
    if not probs:
        return np.zeros(len(c.records))
    fit: dict[str | None, float] = {}

    def of(task_type: str | None) -> float:
        if task_type not in fit:
            fit[task_type] = sum(p * type_overlap(t, task_type) for t, p in probs.items())
        return fit[task_type]

    intents = c.intents or [None] * len(c.records)
    return np.asarray([max(of(r.task_type), of(it)) for r, it in zip(c.records, intents)], dtype=np.float64)


def episodes(c: "Candidates", now: datetime) -> np.ndarray:
    """1 for an episode record (a run as it happened), 0 for a derived one (a candidate or rule a reflection wrote):
    lets a ranker weigh what happened against what was concluded from it."""
    return np.asarray([1.0 if r.kind is Kind.EPISODE else 0.0 for r in c.records], dtype=np.float64)


RRF_K = 60
"""The constant of reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009: ``1 / (k + rank)``, k = 60)."""


def _ranks(values: np.ndarray) -> np.ndarray:
    """1-based rank of each value, highest first (ties in candidate order)."""
    order = np.argsort(-values, kind="stable")
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.arange(1, len(values) + 1)
    return ranks


def fused(c: "Candidates", now: datetime) -> np.ndarray:
    """Reciprocal rank fusion of the two retrievers' orders among the candidates: ``1/(k + rank by cosine)`` plus
    ``1/(k + rank by BM25)`` for a candidate the keywords match at all, over the most a candidate can have
    (``2/(k + 1)``), so in [0, 1]. Rank fusion reads only orders, so it needs no scale between the two scores.

    Examples:
        >>> from types import SimpleNamespace as R
        >>> fused(R(similarity=[0.9, 0.5, 0.7], lexical=[0.0, 2.0, 1.0]), None).round(3).tolist()
        [0.5, 0.984, 0.984]
    """
    sim = np.asarray(c.similarity, dtype=np.float64)
    lex = np.asarray(c.lexical, dtype=np.float64)
    if not len(sim):
        return np.zeros(0)
    score = 1.0 / (RRF_K + _ranks(sim)) + np.where(lex > 0, 1.0 / (RRF_K + _ranks(lex)), 0.0)
    return score / (2.0 / (RRF_K + 1))


@dataclass(frozen=True)
class Feature:
    """One rerank feature: ``raw(candidates, now)`` is cached, ``value(raw, params)`` gives ``(n,)`` or ``(C, n)``."""

    name: str
    raw: Callable[["Candidates", datetime], np.ndarray]
    value: Callable[[np.ndarray, ParamBatch], np.ndarray] = _as_is


def ages_days(c: "Candidates", now: datetime) -> np.ndarray:
    """Each candidate's age in days on ``now``'s clock, from last_confirmed_at, else created_at."""
    return np.asarray([(now - (r.last_confirmed_at or r.created_at)) / timedelta(days=1) for r in c.records],
                      dtype=np.float64)


#: Every feature by name: semantic (cosine to the query, clipped to [0, 1]), lexical (BM25 score over the best in
#: the store or the query's own, ``retrieval.lexical_scale``), task_type (:func:`type_matches`), task_type_p
#: (:func:`graded_type_matches`), confidence (:func:`confidences`), recency (``0.5 ** (age / half_life)`` with the
#: age of :func:`ages_days`), episode (:func:`episodes`) and fused (:func:`fused`, the two retrievers' orders fused).
FEATURES: dict[str, Feature] = {f.name: f for f in (
    Feature("semantic", lambda c, now: np.asarray(c.similarity, dtype=np.float64), _clipped),
    Feature("lexical", lambda c, now: np.asarray(c.lexical, dtype=np.float64)),
    Feature("task_type", type_matches),
    Feature("task_type_p", graded_type_matches),
    Feature("confidence", confidences),
    Feature("recency", ages_days, _recency),
    Feature("episode", episodes),
    Feature("fused", fused),
)}


#: Every term's name, in the order of :data:`FEATURES` (the columns of the rerank's feature matrix).
TERMS: tuple[str, ...] = tuple(FEATURES)


def raw_features(c: "Candidates", now: datetime, names: Sequence[str] = TERMS) -> dict[str, np.ndarray]:
    """``{name: raw column}`` of the candidates, for every term."""
    return {name: FEATURES[name].raw(c, now) for name in names}


def feature_matrix(raw: Mapping[str, np.ndarray], params: ParamBatch, names: Sequence[str] = TERMS) -> np.ndarray:
    """The rerank's feature matrix, columns ``names``: ``(n, T)``, or ``(C, n, T)`` when a feature differs by
    config (recency under several half-lives)."""
    cols = [FEATURES[name].value(np.asarray(raw[name], dtype=np.float64), params) for name in names]
    n = len(raw[names[0]]) if names else 0
    if any(col.ndim == 2 for col in cols):
        shape = (len(params), n)
        return np.stack([np.broadcast_to(col, shape) for col in cols], axis=-1)
    return np.column_stack(cols) if cols and n else np.zeros((n, len(names)))
