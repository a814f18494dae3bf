"""The comparison table of a sweep: the base config, the chosen one and the best trial from the cached evaluator, with
bootstrap intervals, and the ``none``, ``dense`` and ``bm25`` baselines replayed on the same splits. This is where
the test split is scored: once, at the end, for the configs compared."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..config import LabConfig
from ..evaluation import HEADLINE, METRICS
from .result import SPLITS
from .seeded import SeededTerm
from .spec import SEEDED_TERMS, SweepSpec
from .trials import SweepData, evaluator, group_key

if TYPE_CHECKING:
    import pandas as pd


def compare(spec: SweepSpec, named: dict[str, LabConfig], datasets: Sequence[SweepData],
            timing: dict[str, float], baselines: bool, seeded: Sequence[SeededTerm] = ()
            ) -> tuple["pd.DataFrame", dict[str, Any]]:
    """The ``named`` configs (``base``, ``chosen``, ``best``) from the evaluator, the baselines from a replay; the
    intervals of the named configs. With ``seeded`` terms (the live environment, the lures), every row also has
    ``<split>.<mode>.<metric>`` (the mean over the split's seeds; each term's baselines run side by side in the same
    environment), and its objective each term's part."""
    import pandas as pd

    from ..metrics import bootstrap_ci

    rows: dict[str, dict[str, float]] = {}
    intervals: dict[str, Any] = {}
    for name, cfg in named.items():
        per: dict[str, list[Any]] = {s: [] for s in SPLITS}
        for d in datasets:
            key = group_key({f: v for f, v in cfg.flat().items() if f in spec.replay_fields})
            ev = evaluator(d, key, cfg, spec, timing, False).evaluate([cfg])
            for s in SPLITS:
                if d.split[s]:
                    per[s].append((ev, d.split[s]))
        row: dict[str, float] = {}
        intervals[name] = {}
        for s, items in per.items():
            if not items:
                continue
            frames = [ev.summary(ids) for ev, ids in items]
            for col in frames[0].columns:
                row[f"{s}.{col}"] = float(np.mean([f.loc[0, col] for f in frames]))
            seeded_means = [(term, _seeded_means(term, cfg, s, timing)) for term in seeded]
            for _, means in seeded_means:
                row.update({f"{s}.{k}": v for k, v in means.items()})
            if spec.objective.label not in METRICS:  # a mode's metric or a declared combination: its value too
                row[f"{s}.objective"] = float(np.mean([objective_value(spec, d, cfg, d.split[s], timing)
                                                       for d in datasets if d.split[s]]))
                row[f"{s}.objective"] += sum(term.objective(means) for term, means in seeded_means if means)
            if len(items) == 1:
                ev, ids = items[0]
                intervals[name][s] = {m: list(bootstrap_ci(ev.per_query(0, m, ids), ev.groups, seed=spec.seed))
                                      for m in HEADLINE}
        rows[name] = row
    if baselines:
        t = time.perf_counter()
        rows.update(replay_baselines(spec, datasets))
        for term in seeded:
            for s in SPLITS:
                for name, means in term.baseline_means(named["base"], s).items():
                    rows.setdefault(name, {}).update({f"{s}.{k}": v for k, v in means.items()})
                    if f"{s}.objective" in rows[name]:
                        rows[name][f"{s}.objective"] += term.objective(means)
        timing["baselines_s"] = time.perf_counter() - t
    return pd.DataFrame.from_dict(rows, orient="index"), intervals


def objective_value(spec: SweepSpec, d: SweepData, cfg: LabConfig, ids: Sequence[str],
                    timing: dict[str, float]) -> float:
    """The spec's objective of ``cfg`` on the queries ``ids`` of one dataset, in its own units: each metric's mean
    over the queries of its judging mode among ``ids`` (a mode without any adds nothing), times its weight."""
    key = group_key({f: v for f, v in cfg.flat().items() if f in spec.replay_fields})
    wanted, evaluations = set(ids), {}

    def mean_of(mode: str, metric: str) -> float | None:
        if mode not in evaluations:
            evaluations[mode] = evaluator(d, key, cfg, spec, timing, False, mode).evaluate([cfg])
        ev = evaluations[mode]
        rows = [i for i, q in enumerate(ev.query_ids) if q in wanted]
        return float(ev.values[rows, 0, ev.metrics.index(metric)].mean()) if rows else None

    return _weighted(spec, mean_of)


def _weighted(spec: SweepSpec, mean_of: Callable[[str, str], float | None]) -> float:
    """The objective's weighted sum of ``mean_of(mode, metric)`` over the replays' terms, leaving out a term whose
    mode has no queries (a seeded term is added apart: :meth:`~.seeded.SeededTerm.objective`)."""
    return sum(w * m for mode, metric, w in spec.objective.build().terms
               if mode not in SEEDED_TERMS and (m := mean_of(mode, metric)) is not None)


def _seeded_means(term: SeededTerm, cfg: LabConfig, split: str, timing: dict[str, float]) -> dict[str, float]:
    """``<mode>.<metric>`` of ``cfg`` on the split's seeds of a seeded term (empty without the split's seeds)."""
    t = time.perf_counter()
    out = term.means(cfg, split)
    timing[f"{term.MODE}_s"] = timing.get(f"{term.MODE}_s", 0.0) + time.perf_counter() - t
    return out


def replay_baselines(spec: SweepSpec, datasets: Sequence[SweepData]) -> dict[str, dict[str, float]]:
    """``none``, ``dense`` and ``bm25`` on the same splits (one replay per dataset)."""
    from ..replay.runner import run_replay

    sums: dict[str, dict[str, list[float]]] = {}
    for d, ds in zip(datasets, spec.datasets):
        report = run_replay(d.paths, format=ds.format, systems=["none", "dense", "bm25"], top_k=spec.top_k,
                            token_budget=spec.token_budget, limit=ds.limit, skip_invalid=ds.skip_invalid,
                            embedder=d.embedder, seed=spec.seed)
        frame = report.per_episode
        for name, part in frame.groupby("system"):
            for s in SPLITS:
                sel = part[part["query_id"].isin(d.split[s])]
                if sel.empty:
                    continue
                for m in METRICS:
                    sums.setdefault(str(name), {}).setdefault(f"{s}.{m}", []).append(float(sel[m].mean()))
                sums[str(name)].setdefault(f"{s}.tokens_median", []).append(float(sel["tokens"].median()))
                if spec.objective.label not in METRICS:  # as objective_value, from the replay's mode tables
                    sums[str(name)].setdefault(f"{s}.objective", []).append(
                        _replayed_objective(spec, report, str(name), d.split[s]))
    return {name: {k: float(np.mean(v)) for k, v in cols.items()} for name, cols in sums.items()}


def _replayed_objective(spec: SweepSpec, report: Any, system: str, ids: Sequence[str]) -> float:
    """:func:`objective_value` of a replayed system, from the replay's per-query tables of each judging mode."""

    def mean_of(mode: str, metric: str) -> float | None:
        frame = report.mode(mode).frame() if mode in report.modes() else None
        sel = frame[(frame["system"] == system) & frame["query_id"].isin(ids)] if frame is not None else None
        return float(sel[metric].mean()) if sel is not None and not sel.empty else None

    return _weighted(spec, mean_of)
