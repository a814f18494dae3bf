"""One pure function from what the systems injected and how each judging mode judges it to the typed report:
:func:`compare`. Every system is scored with the same judgements; intervals resample whole groups; every other
system is tested against the reference by a paired randomization test.

Examples:
    >>> from datetime import datetime
    >>> from types import SimpleNamespace as NS
    >>> from hindsight_lab.metrics import Judgements
    >>> judged = Judgements({"q": {"a": 2}}, {"a": 0, "q": 1}, ["a", "q"])
    >>> hit = NS(memory_id="m", source_episode_ids=("a",), kind="episode", tokens=12)
    >>> queries = [NS(system=s, query_id="q", order=1, injected=inj, stored=None, latency_s=0.0,
    ...               at=datetime(2024, 1, 1), group="t") for s, inj in (("bm25", []), ("hindsight", [hit]))]
    >>> c = compare(queries, {"repeat": judged}, systems=["bm25", "hindsight"], n_resamples=10)
    >>> c.mode("repeat").value("hindsight", "ndcg@5"), c.mode("repeat").value("bm25", "ndcg@5"), c.absent_modes()
    (1.0, 0.0, ['transfer', 'outcome'])
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..metrics import Judgements, aggregate, bootstrap_ci, evaluate, hit_rate, paired_randomization_test
from ..metrics.modes import MODES
from .report import HEADLINE, Comparison, ModeReport

#: Every metric a replay computes per query (and whose mean each system's summary holds).
METRICS: tuple[str, ...] = ("ndcg@3", "ndcg@5", "ndcg@10", "hit@3", "hit@5", "hit@10", "recall@3", "recall@5",
                            "recall@10", "precision@5", "precision_filled@5", "mrr", "fill@10", "r_precision")


def compare(queries: Sequence[Any], judgements: Mapping[str, Judgements], *, systems: Sequence[str],
            reference: str = "hindsight", metrics: Sequence[str] = METRICS, seed: int = 0, n_resamples: int = 2000,
            sources: Mapping[str, str] | None = None,
            extra: Mapping[str, Mapping[str, Any]] | None = None) -> Comparison:
    """Score every system in every judging mode.

    Args:
        queries: what each system injected for each query (:class:`~hindsight_lab.replay.records.QueryRecord`
            shape: ``system``, ``query_id``, ``order``, ``injected`` items with ``tokens``, ``stored``,
            ``latency_s``, ``at``, ``group``).
        judgements: judging mode → its :class:`~hindsight_lab.metrics.Judgements`; a mode left out, or without
            queries, is n/a in the report.
        systems: the systems to score, in the order the report lists them.
        reference: the system every other is tested against.
        metrics: the per-query metrics (:data:`METRICS`); intervals and tests cover the headline ones.
        seed, n_resamples: of the group bootstrap and the randomization tests.
        sources: episode id → the file it came from: a ``source`` column in the rows, and per-source figures
            when there are several files.
        extra: system → figures added to its summary in every mode (a reflecting system's reflection counts).

    Returns:
        A :class:`~hindsight_lab.evaluation.report.Comparison` with one report per mode of
        :data:`~hindsight_lab.metrics.modes.MODES`.
    """
    unknown = [m for m in judgements if m not in MODES]
    if unknown:
        raise ValueError(f"unknown judging mode(s) {', '.join(unknown)}; expected {', '.join(MODES)}")
    by_system: dict[str, list[Any]] = {}
    for rec in queries:
        by_system.setdefault(rec.system, []).append(rec)
    modes = {}
    for mode in MODES:
        judged = judgements.get(mode)
        if judged is None or not judged.query_ids:
            modes[mode] = ModeReport(mode)
            continue
        modes[mode] = _score(mode, by_system, judged, systems=systems, metrics=metrics, reference=reference,
                             seed=seed, n_resamples=n_resamples, sources=sources or {}, extra=extra or {})
    return Comparison(modes, reference, seed, n_resamples)


def _score(mode: str, by_system: Mapping[str, Sequence[Any]], judgements: Judgements, *, systems: Sequence[str],
           metrics: Sequence[str], reference: str, seed: int, n_resamples: int, sources: Mapping[str, str],
           extra: Mapping[str, Mapping[str, Any]]) -> ModeReport:
    qset = list(judgements.query_ids)
    n_rel = {q: judgements.n_relevant(q) for q in qset}
    kmax = max(int(m.split("@")[1]) for m in metrics if "@" in m)
    ideals = {q: judgements.ideal(q, kmax) for q in qset}
    summaries: dict[str, Any] = {}
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    groups: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    for name in systems:
        recs = [r for r in by_system.get(name, []) if r.query_id in n_rel]
        per_query[name], summaries[name], tokens = _score_system(name, recs, judgements, qset, n_rel, ideals,
                                                                 metrics, extra.get(name, {}))
        for r in recs:
            groups[r.query_id] = r.group or r.query_id
            row = {"system": name, "query_id": r.query_id, "order": r.order, "at": r.at, "group": r.group,
                   "injected": len(r.injected), "tokens": tokens[r.query_id], "latency_ms": r.latency_s * 1000,
                   "kinds": "+".join(i.kind for i in r.injected)}
            if sources:
                row["source"] = sources.get(r.query_id, "")
            row.update({m: per_query[name][m][r.query_id] for m in per_query[name]})
            rows.append(row)
    intervals = {name: {m: tuple(bootstrap_ci(per_query[name][m], groups, n_resamples=n_resamples, seed=seed))
                        for m in HEADLINE if m in per_query[name]} for name in per_query}
    tests: dict[str, dict[str, float]] = {}
    if reference in per_query:
        for name in per_query:
            if name != reference:
                tests[name] = {m: paired_randomization_test(per_query[name][m], per_query[reference][m], groups,
                                                            seed=seed)
                               for m in HEADLINE if m in per_query[name]}
    return ModeReport(mode, len(qset), len(set(groups.values())), summaries, intervals, tests,
                      _by_source(per_query, qset, sources, rows), tuple(rows))


def _score_system(name: str, recs: Sequence[Any], judgements: Judgements, qset: Sequence[str],
                  n_rel: Mapping[str, int], ideals: Mapping[str, list[int]], metrics: Sequence[str],
                  extra: Mapping[str, Any]) -> tuple[dict[str, dict[str, float]], dict[str, Any], dict[str, int]]:
    """One system's per-query values, its summary and its injected tokens per query."""
    grades, credits, store_rel, injected_grades, tokens, oracle = {}, {}, {}, {}, {}, {}
    for r in recs:
        judged = judgements.judge_list(r.query_id, r.injected)
        grades[r.query_id], credits[r.query_id] = list(judged.grades), list(judged.relevant_credits)
        injected_grades[r.query_id] = list(judged.grades)
        stored = r.stored or []
        store_rel[r.query_id] = judgements.n_store_relevant(r.query_id, stored)
        oracle[r.query_id] = float(store_rel[r.query_id] > 0)
        tokens[r.query_id] = sum(i.tokens for i in r.injected)
    values = evaluate(grades, ideals, n_rel, metrics, credits=credits, n_store_relevant=store_rel)
    values["oracle_hit@10"] = {q: oracle.get(q, 0.0) for q in qset}
    summary = aggregate(values)
    rate = hit_rate(injected_grades)
    tok = np.array([tokens.get(q, 0) for q in qset], dtype=float)
    summary.update(hit_rate=rate.rate, empty_queries=rate.empty_queries, queries=len(qset),
                   tokens_median=float(np.median(tok)), tokens_p95=float(np.percentile(tok, 95)),
                   latency_p50_ms=float(np.median([r.latency_s for r in recs]) * 1000) if recs else 0.0)
    summary.update(extra)
    bad = [m for m, v in summary.items() if isinstance(v, float) and math.isnan(v)]
    if bad:
        raise ValueError(f"system {name!r}: NaN metrics {bad}")
    return values, summary, tokens


def _by_source(per_query: Mapping[str, Mapping[str, Mapping[str, float]]], qset: Sequence[str],
               sources: Mapping[str, str], rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{source: {system: {metric: mean, "tokens_median": …, "queries": n}}}`` for every source file of the
    replayed episodes (``sources`` maps every episode, queries or not), when there are several; a source none of
    whose episodes is a query has ``{"queries": 0}`` per system. Empty for one source."""
    by: dict[str, list[str]] = {src: [] for src in dict.fromkeys(sources.values())}
    if len(by) < 2:
        return {}
    for q in qset:
        by.setdefault(sources.get(q, ""), []).append(q)
    tokens = {(r["system"], r["query_id"]): r["tokens"] for r in rows}
    out: dict[str, dict[str, Any]] = {}
    for source, qs in by.items():
        out[source] = {}
        for name, values in per_query.items():
            cell: dict[str, Any] = {}
            if qs:
                cell = {m: float(np.mean([values[m][q] for q in qs])) for m in HEADLINE if m in values}
                cell["tokens_median"] = float(np.median([tokens.get((name, q), 0) for q in qs]))
            cell["queries"] = len(qs)
            out[source][name] = cell
    return out
