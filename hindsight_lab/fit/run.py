"""``hindsight-lab fit``: learn the rerank weights from judged replays, cross-validated by task, and keep them only
when they beat the base config by more than luck.

1. **Capture.** Each dataset of the spec is replayed once through the base config, every recall kept
   (:func:`~hindsight_lab.sweep.cache.capture`): what a replay stores does not depend on the weights, so the
   candidates and their features are the same under any weights, and a weight vector is scored from the cache
   exactly as a replay would score it (:class:`~hindsight_lab.sweep.evaluate.FastEvaluator`).
2. **Learn** (:mod:`.learn`): weights from the candidates' grades under every judging mode of the spec.
3. **Cross-validate by task.** The queries of all datasets are dealt to folds of whole tasks; each fold's queries
   are scored by weights learnt on the other folds. The gain over the base is read against the luck bar of a
   sweep's selection (:func:`~hindsight_lab.sweep.select.best_of_n_null`): per-task differences sign-flipped. The
   fit exports the learnt weights only when the gain clears the bar; otherwise the base config, and it says so.
4. **Leave one dataset out.** With two or more datasets, each is replayed — a real replay, not the cache — with the
   weights learnt on the others, beside the baselines: the table that says whether the ranker never loses to a plain
   retriever on data it was not fitted on, mode by mode and group by group.

Everything is logged to MLflow (a parent run, a child run per fold and per left-out dataset) unless told not to.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..config import LabConfig
from ..retrieve.rerank import TERMS
from .learn import PairwiseRanker
from .spec import FitSpec
from .table import RankQuery, rank_table

__all__ = ["FitResult", "run_fit", "weighted_config"]

logger = logging.getLogger(__name__)


def weighted_config(base: LabConfig, weights: Mapping[str, float]) -> LabConfig:
    """``base`` with every rerank term's weight set from ``weights`` (0 for a term it does not name); the redundancy
    penalty and every other field stay the base's."""
    return base.with_params({f"retrieval.weights.{t}": round(float(weights.get(t, 0.0)), 6) for t in TERMS})


@dataclass
class FitResult:
    """What a fit found: the weights learnt on every dataset, the config it exports (those weights, or the base when
    they did not clear the luck bar), the cross-validated comparison, and the leave-one-dataset-out table."""

    spec: FitSpec
    weights: dict[str, float]
    fitted: LabConfig
    base: LabConfig
    chosen: str
    cv: dict[str, float]
    folds: list[dict[str, Any]]
    left_out: list[dict[str, Any]] = field(default_factory=list)
    timing: dict[str, float] = field(default_factory=dict)
    dataset_sha256: dict[str, str] = field(default_factory=dict)
    run_id: str | None = None

    @property
    def config(self) -> LabConfig:
        """The config to export."""
        return self.fitted if self.chosen == "fitted" else self.base

    def summary(self) -> str:
        cv = self.cv
        verdict = (f"the fitted weights beat the base by {cv['gain']:+.4f} (luck bar {cv['luck_bar']:+.4f}, "
                   f"p {cv['p_value']:.3f}): exporting them" if self.chosen == "fitted" else
                   f"the fitted weights gain {cv['gain']:+.4f} over the base, not more than luck gives "
                   f"({cv['luck_bar']:+.4f}, p {cv['p_value']:.3f}): exporting the base config unchanged")
        weights = ", ".join(f"{t} {w:.3f}" for t, w in self.weights.items() if w > 0)
        return (f"fit {self.spec.name!r}: {self.spec.folds}-fold by task, {self.spec.metric} per (dataset, mode): "
                f"base {cv['base']:.4f} ± {cv['base_se']:.4f}, fitted {cv['fitted']:.4f} ± {cv['fitted_se']:.4f}; "
                f"{verdict}. Weights learnt on everything: {weights}")


class _Scorer:
    """Per-query metric values of weight vectors, from each dataset's cache (one evaluator per dataset and mode)."""

    def __init__(self, caches: Mapping[str, Any], modes: Sequence[str], metric: str, base: LabConfig) -> None:
        from ..sweep.evaluate import FastEvaluator

        self.base, self.metric = base, metric
        self.evaluators = {(name, mode): FastEvaluator(cache, metrics=(metric,), mode=mode)
                           for name, cache in caches.items() for mode in modes
                           if mode == "repeat" or mode in cache.modes}

    def items(self) -> list[tuple[str, str, str]]:
        return [(name, mode, q.query_id) for (name, mode), ev in self.evaluators.items() for q in ev.queries]

    def values(self, configs: Sequence[LabConfig]) -> dict[tuple[str, str, str], np.ndarray]:
        out: dict[tuple[str, str, str], np.ndarray] = {}
        for (name, mode), ev in self.evaluators.items():
            if not ev.queries:
                continue
            evaluation = ev.evaluate(list(configs))
            for qi, qid in enumerate(evaluation.query_ids):
                out[(name, mode, qid)] = evaluation.values[qi, :, 0]
        return out


def run_fit(spec: FitSpec, *, embedder: Any = None, mlflow: bool = True, tracking_uri: str | None = None,
            left_out: bool = True, show_progress: bool = False, echo: Callable[[str], None] | None = None
            ) -> FitResult:
    """Run ``spec`` (module docstring); ``left_out=False`` skips the leave-one-dataset-out replays."""
    say = echo or (lambda _msg: None)
    timing: dict[str, float] = {}
    base = spec.base_config()
    t0 = time.perf_counter()
    caches, embedder = _capture(spec, base, embedder, show_progress)
    timing["capture_s"] = time.perf_counter() - t0
    say(f"fit {spec.name!r}: captured {len(caches)} replay(s) in {timing['capture_s']:.0f} s")
    table = rank_table(caches, spec.modes, base)
    scorer = _Scorer(caches, spec.modes, spec.metric, base)
    t0 = time.perf_counter()
    cv, folds = _cross_validate(spec, base, table, scorer)
    timing["cv_s"] = time.perf_counter() - t0
    weights = _learner(spec, base).fit(table).weights_
    fitted = weighted_config(base, weights)
    chosen = "fitted" if cv["gain"] > cv["luck_bar"] else "base"
    result = FitResult(spec, weights, fitted, base, chosen, cv, folds, timing=timing,
                       dataset_sha256={name: c.dataset.get("sha256", "") for name, c in caches.items()})
    say(result.summary())
    if left_out and len(spec.datasets) > 1:
        t0 = time.perf_counter()
        result.left_out = _leave_one_out(spec, base, table, embedder, show_progress, say)
        timing["left_out_s"] = time.perf_counter() - t0
    if mlflow:
        from .tracking import log_fit

        result.run_id = log_fit(result, tracking_uri=tracking_uri)
    return result


def _learner(spec: FitSpec, base: LabConfig) -> PairwiseRanker:
    return PairwiseRanker(reference=dict(base.retrieval.weights.model_dump()), C=spec.C,
                          k=int(spec.metric.partition("@")[2] or 5))


def _capture(spec: FitSpec, base: LabConfig, embedder: Any, show_progress: bool) -> tuple[dict[str, Any], Any]:
    """Every dataset replayed once through ``base`` with its recalls kept, sharing one prefetched embedder."""
    from ..embed import embedder_for
    from ..replay.runner import prefetch
    from ..replay.systems import BASELINE_KEY
    from ..sweep.cache import capture, load_episode_data

    data = {spec.label(d): load_episode_data(spec.paths(d), limit=spec.limit) for d in spec.datasets}
    embedder = embedder or embedder_for(base.embedder)
    embedder = prefetch(embedder, [ep for d in data.values() for ep in d.episodes], [], base,
                        keys=(BASELINE_KEY,))[0]
    caches = {name: capture(d, base, embedder=embedder, top_k=spec.top_k, show_progress=show_progress)
              for name, d in data.items()}
    if spec.lures is not None:
        from .lures import lure_cache

        caches["lures"] = lure_cache(spec.lures.seeds, pairs=spec.lures.pairs, embedder=embedder, config=base,
                                     top_k=spec.top_k)
    return caches, embedder


def _cross_validate(spec: FitSpec, base: LabConfig, table: Sequence[RankQuery], scorer: _Scorer
                    ) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Out-of-fold scores of the learnt weights beside the base's, fold by fold, and the luck bar."""
    from ..sweep.select import best_of_n_null, cv_scores, mean_se, task_folds

    items = scorer.items()
    group_of = {(q.dataset, q.mode, q.query_id): q.group for q in table}
    groups = [group_of[i] for i in items]
    folds = task_folds(groups, spec.folds, spec.seed)
    fold_of_group = dict(zip(groups, folds))
    base_values = scorer.values([base])
    values = np.zeros((len(items), 2))
    values[:, 0] = [base_values[i][0] for i in items]
    rows = []
    for f in range(spec.folds):
        train = [q for q in table if fold_of_group.get(q.group) != f]
        weights = _learner(spec, base).fit(train).weights_
        scored = scorer.values([weighted_config(base, weights)])
        held = [n for n, i in enumerate(items) if folds[n] == f]
        for n in held:
            values[n, 1] = scored[items[n]][0]
        rows.append({"fold": f, "queries": len(held), "weights": weights})
    unit = [(d, m) for d, m, _ in items]
    per_unit = {u: unit.count(u) for u in set(unit)}
    share = np.array([1.0 / (len(per_unit) * per_unit[u]) for u in unit])
    weight = share / np.array([share[folds == folds[n]].sum() for n in range(len(items))])
    scores = cv_scores(values, folds, weight)
    mean, se = mean_se(scores)
    null = best_of_n_null(values, groups, folds, 0, seed=spec.seed, weights=weight)
    gain = float(mean[1] - mean[0])
    for row, (b, fitted) in zip(rows, scores.T):
        row.update(base=float(b), fitted=float(fitted))
    cv = {"base": float(mean[0]), "base_se": float(se[0]), "fitted": float(mean[1]), "fitted_se": float(se[1]),
          "gain": gain, "luck_bar": float(np.quantile(null, 1 - spec.level)),
          "p_value": float((1 + np.sum(null >= gain - 1e-12)) / (1 + len(null))), "queries": float(len(items))}
    return cv, rows


def _leave_one_out(spec: FitSpec, base: LabConfig, table: Sequence[RankQuery], embedder: Any,
                   show_progress: bool, say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Each dataset replayed with the weights learnt on the others, beside the baselines: one row per mode."""
    from ..replay.runner import run_replay

    rows: list[dict[str, Any]] = []
    for dataset in spec.datasets:
        name = spec.label(dataset)
        weights = _learner(spec, base).fit([q for q in table if q.dataset != name]).weights_
        report = run_replay(spec.paths(dataset), systems=[*spec.baselines, "hindsight"],
                            config=weighted_config(base, weights), embedder=embedder, top_k=spec.top_k,
                            limit=spec.limit, show_progress=show_progress)
        for mode in spec.modes:
            if mode not in report.modes():
                continue
            part = report.mode(mode)
            score = {s: float(part.value(s, spec.metric)) for s in part.systems}
            rivals = part.rivals()
            best = max(rivals, key=score.__getitem__)
            groups = part.margins(spec.metric, baselines=rivals)
            rows.append({"dataset": name, "mode": mode, "queries": part.queries, "hindsight": score["hindsight"],
                         "best_baseline": best, "best": score[best], "margin": score["hindsight"] - score[best],
                         "groups_ahead": int((groups.margin > 0).sum()),
                         "groups_behind": int((groups.margin < 0).sum()), "weights": weights})
        say(f"  left out {name}: " + "; ".join(f"{r['mode']} {r['hindsight']:.3f} vs {r['best_baseline']} "
                                              f"{r['best']:.3f} ({r['margin']:+.3f}, groups +{r['groups_ahead']}"
                                              f"/-{r['groups_behind']})" for r in rows if r["dataset"] == name))
    return rows
