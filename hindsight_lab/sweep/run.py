"""Running a sweep: trials from the sampler, grouped by the fields that need a replay, scored by the cached
evaluator on the dev split (cross-validated by task), the config to export chosen by a rule that resists luck
(:mod:`.select`), the test split scored once at the end, everything logged to MLflow (DESIGN §7).

Examples:
    >>> from hindsight_lab.sweep import SweepSpec, run_sweep  # doctest: +SKIP
    >>> result = run_sweep(SweepSpec.from_yaml("experiments/rerank_weights.yaml"), trials=50)  # doctest: +SKIP
    >>> result.trials.sort_values("cv.mean").tail()  # doctest: +SKIP
    >>> result.chosen_config, result.selection["optimism"]  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

import numpy as np

from ..config import LabConfig
from ..errors import ConfigError
from .compare import compare
from .mlflow_log import git_commit, log_sweep, with_provenance
from .result import SPLITS, SweepResult
from .live_runs import LiveRunStore
from .samplers import ListSampler, make_sampler
from .spec import SEEDED_TERMS, SweepSpec
from .choose import choose
from .trials import best_trial, budgeted, dataset_hash, load_datasets, score_batch, split_queries

__all__ = ["SPLITS", "SweepResult", "dataset_hash", "git_commit", "log_sweep", "run_sweep", "split_queries",
           "with_provenance"]

logger = logging.getLogger(__name__)


def run_sweep(spec: SweepSpec, *, trials: int | None = None, embedder: Any = None, mlflow: bool = True,
              tracking_uri: str | None = None, baselines: bool = True, show_progress: bool = False,
              echo: Callable[[str], None] | None = None, live_runs: LiveRunStore | None = None) -> SweepResult:
    """Run ``spec`` (``trials`` overrides its count), choose the config to export (:mod:`.select`), compare it with
    the base config and the baselines on dev and, once, on test; log it all to MLflow unless told not to.
    ``live_runs`` keeps the runs of the live environment and of the lures on disk, so a sweep run again after a stop
    does not redo them."""
    import pandas as pd

    say = echo or (lambda _msg: None)
    n_trials = trials or spec.trials
    if n_trials < 1:
        raise ConfigError(f"trials: must be at least 1 (got {n_trials})")
    timing = {"load_s": 0.0, "capture_s": 0.0, "eval_s": 0.0, "select_s": 0.0, "baselines_s": 0.0, "mlflow_s": 0.0}
    base = spec.base_config()
    t0 = time.perf_counter()
    if embedder is None:
        from ..embed import embedder_for

        embedder = embedder_for(base.embedder)
    datasets = load_datasets(spec, base, embedder)
    timing["load_s"] = time.perf_counter() - t0
    folds = "/".join(str(int(d.design.folds.max()) + 1) for d in datasets if d.design is not None)
    n_folds = max(int(d.design.folds.max()) + 1 for d in datasets if d.design is not None)
    objective = spec.objective.build()
    seeded = [t for mode, term in SEEDED_TERMS.items()
              if (t := term.build(getattr(spec, mode), objective, embedder=datasets[0].embedder, seed=spec.seed,
                                  top_k=spec.top_k, store=live_runs, show_progress=show_progress,
                                  folds=n_folds)) is not None]
    sampler = make_sampler(spec)
    if isinstance(sampler, ListSampler):
        n_trials = min(n_trials, len(sampler))  # a grid or list has no more trials than it lists
    say(f"sweep {spec.name!r}: {n_trials} trials ({spec.sampler}) over {', '.join(spec.fields)}; objective "
        f"{spec.objective.direction} {spec.objective.label}, {folds}-fold by task on "
        f"{sum(len(d.split['dev']) for d in datasets)} dev queries; "
        f"{sum(len(d.split['test']) for d in datasets)} test queries kept for the end"
        + "".join(f"; {t.MODE} on seeds {t.seeds} (test seeds {t.test_seeds})" for t in seeded))

    rows: list[dict[str, Any]] = []
    configs: dict[int, LabConfig] = {}
    items: dict[int, np.ndarray] = {}
    while len(rows) < n_trials:
        batch = sampler.ask(min(spec.batch_size, n_trials - len(rows)))
        if not batch:
            break  # a grid or list ran out
        scored = score_batch(spec, base, batch, datasets, timing, show_progress, seeded)
        for (number, _), cfg, row in zip(batch, scored.configs, scored.rows):
            sampler.tell(number, row.get("cv.mean") if row["status"] == "ok" else None)
            if cfg is not None:
                configs[number] = cfg
            rows.append(row)
        items.update(scored.items)
        ok = [r for r in rows if r["status"] == "ok"]
        if ok:
            best_row = best_trial(ok, spec)
            say(f"  {len(rows)}/{n_trials} trials, best cross-validated {spec.objective.label} "
                f"{best_row['cv.mean']:.4f} ± {best_row['cv.se']:.4f} (trial {best_row['number']})")
    table = pd.DataFrame(rows)
    ok_rows = [r for r in rows if r["status"] == "ok"]
    best = best_trial(ok_rows, spec)["number"] if ok_rows else None

    t = time.perf_counter()
    choice = choose(spec, base, ok_rows, items, datasets, timing, show_progress, seeded)
    timing["select_s"] = time.perf_counter() - t
    chosen_cfg = configs[choice.chosen] if choice.chosen is not None else base.with_params(budgeted({}, spec))
    named = {"base": base.with_params(budgeted({}, spec))}
    if choice.chosen is not None:
        named["chosen"] = chosen_cfg
    if best is not None and best != choice.chosen:
        named["best"] = configs[best]
    comparison, intervals = compare(spec, named, datasets, timing, baselines, seeded)
    result = SweepResult(spec, table, best, configs.get(best) if best is not None else None, comparison, intervals,
                         timing, dataset_hash(datasets), chosen=choice.chosen, chosen_config=chosen_cfg,
                         selection=choice.summary)
    if mlflow:
        t = time.perf_counter()
        log_sweep(result, configs, datasets, tracking_uri=tracking_uri)
        timing["mlflow_s"] = time.perf_counter() - t
    return result
