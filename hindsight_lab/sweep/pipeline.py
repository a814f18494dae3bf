"""The phases every sweep goes through, in one process or shared by many (:mod:`.shared`): the setup (the base
config, the embedder, the datasets split and prefetched, the seeded terms), and the end (the choice among the trials,
the comparison with the test split scored once, the result, MLflow). Between them the trials are scored: in this
process (:func:`~.run.run_sweep`) or by the workers of a study (:mod:`.workers`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..config import LabConfig
from .choose import choose
from .compare import compare
from .live_runs import LiveRunStore
from .mlflow_log import log_sweep
from .result import SweepResult
from .samplers import ListSampler, make_sampler
from .seeded import SeededTerm
from .spec import SEEDED_TERMS, SweepSpec
from .trials import SweepData, best_trial, budgeted, dataset_hash, load_datasets


@dataclass
class Setup:
    """What scoring a trial needs, built once per process: the base config, the datasets (each with its split,
    prefetched embedder, design and cached evaluators), the seeded terms, and the seconds spent so far."""

    spec: SweepSpec
    base: LabConfig
    datasets: list[SweepData]
    seeded: list[SeededTerm]
    timing: dict[str, float] = field(default_factory=dict)
    show_progress: bool = False

    @property
    def folds(self) -> str:
        return "/".join(str(int(d.design.folds.max()) + 1) for d in self.datasets if d.design is not None)


def prepare(spec: SweepSpec, *, embedder: Any = None, live_runs: LiveRunStore | None = None,
            show_progress: bool = False) -> Setup:
    """Load what the trials are scored on (the embedder of the base config unless one is given)."""
    timing = {"load_s": 0.0, "capture_s": 0.0, "eval_s": 0.0, "select_s": 0.0, "baselines_s": 0.0, "mlflow_s": 0.0}
    base = spec.base_config()
    t0 = time.perf_counter()
    if embedder is None:
        from ..embed import embedder_for

        embedder = embedder_for(base.embedder)
    datasets = load_datasets(spec, base, embedder)
    timing["load_s"] = time.perf_counter() - t0
    n_folds = max(int(d.design.folds.max()) + 1 for d in datasets if d.design is not None)
    objective = spec.objective.build()
    seeded = [t for mode, term in SEEDED_TERMS.items()
              if (t := term.build(getattr(spec, mode), objective, embedder=datasets[0].embedder, seed=spec.seed,
                                  top_k=spec.top_k, store=live_runs, show_progress=show_progress,
                                  folds=n_folds)) is not None]
    return Setup(spec, base, datasets, seeded, timing, show_progress)


def trial_count(spec: SweepSpec, trials: int | None) -> int:
    """The trials to run: ``trials`` or the spec's, no more than a grid or list holds."""
    n = trials or spec.trials
    sampler = make_sampler(spec) if spec.sampler in ("grid", "list") else None
    return min(n, len(sampler)) if isinstance(sampler, ListSampler) else n


def header(setup: Setup, n_trials: int) -> str:
    """The sweep's first line: trials, sampler, fields, objective, folds, the splits and the seeded terms."""
    spec, datasets = setup.spec, setup.datasets
    return (f"sweep {spec.name!r}: {n_trials} trials ({spec.sampler}) over {', '.join(spec.fields)}; objective "
            f"{spec.objective.direction} {spec.objective.label}, {setup.folds}-fold by task on "
            f"{sum(len(d.split['dev']) for d in datasets)} dev queries; "
            f"{sum(len(d.split['test']) for d in datasets)} test queries kept for the end"
            + "".join(f"; {t.MODE} on seeds {t.seeds} (test seeds {t.test_seeds})" for t in setup.seeded))


def progress(rows: Sequence[Mapping[str, Any]], spec: SweepSpec, n_trials: int, here: str = "") -> str | None:
    """The progress line after a batch (None before any valid trial)."""
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        return None
    best = best_trial(ok, spec)
    return (f"  {len(rows)}/{n_trials} trials{here}, best cross-validated {spec.objective.label} "
            f"{best['cv.mean']:.4f} ± {best['cv.se']:.4f} (trial {best['number']})")


def finish(setup: Setup, rows: list[dict[str, Any]], configs: Mapping[int, LabConfig], items: Mapping[int, np.ndarray],
           *, baselines: bool = True, mlflow: bool = True, tracking_uri: str | None = None,
           study: Mapping[str, Any] | None = None) -> SweepResult:
    """Choose among the scored trials, compare the choice with the base, the best and the baselines (the test split
    scored once), and log it all to MLflow unless told not to (one parent run)."""
    import pandas as pd

    spec, base, datasets, timing = setup.spec, setup.base, setup.datasets, setup.timing
    table = pd.DataFrame(rows)
    ok_rows = [r for r in rows if r["status"] == "ok"]
    best = best_trial(ok_rows, spec)["number"] if ok_rows else None
    t = time.perf_counter()
    choice = choose(spec, base, ok_rows, items, datasets, timing, setup.show_progress, setup.seeded)
    timing["select_s"] = time.perf_counter() - t
    chosen_cfg = configs[choice.chosen] if choice.chosen is not None else base.with_params(budgeted({}, spec))
    named = {"base": base.with_params(budgeted({}, spec))}
    if choice.chosen is not None:
        named["chosen"] = chosen_cfg
    if best is not None and best != choice.chosen:
        named["best"] = configs[best]
    comparison, intervals = compare(spec, named, datasets, timing, baselines, setup.seeded)
    result = SweepResult(spec, table, best, configs.get(best) if best is not None else None, comparison, intervals,
                         timing, dataset_hash(datasets), chosen=choice.chosen, chosen_config=chosen_cfg,
                         selection=choice.summary, study=dict(study or {}))
    if mlflow:
        t = time.perf_counter()
        log_sweep(result, configs, datasets, tracking_uri=tracking_uri)
        timing["mlflow_s"] = time.perf_counter() - t
    return result
