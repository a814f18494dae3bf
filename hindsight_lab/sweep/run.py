"""Running a sweep: trials from the sampler, grouped by the fields that need a replay, scored by the cached
evaluator on the dev split (cross-validated by task), the config to export chosen by a rule that resists luck
(:mod:`.select`), the test split scored once at the end, everything logged to MLflow (DESIGN §7).

With a study (:class:`~.shared.StudyOptions`: ``hindsight-lab sweep --storage URL --workers N``) the trials are
asked and told through Optuna's RDB storage instead, by this process, the workers it starts and any other command
that joins the same study; the choice, the comparison and MLflow still run once, at the end (:mod:`.shared`).

Examples:
    >>> from hindsight_lab.sweep import SweepSpec, run_sweep  # doctest: +SKIP
    >>> result = run_sweep(SweepSpec.from_yaml("experiments/rerank_weights.yaml"), trials=50)  # doctest: +SKIP
    >>> result.trials.sort_values("cv.mean").tail()  # doctest: +SKIP
    >>> result.chosen_config, result.selection["optimism"]  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..config import LabConfig
from ..errors import ConfigError
from .mlflow_log import git_commit, log_sweep, with_provenance
from .pipeline import finish, header, prepare, progress, trial_count
from .result import SPLITS, SweepResult
from .live_runs import LiveRunStore
from .samplers import make_sampler
from .spec import SweepSpec
from .trials import dataset_hash, score_batch, split_queries

if TYPE_CHECKING:
    from .shared import StudyOptions

__all__ = ["SPLITS", "SweepResult", "dataset_hash", "git_commit", "log_sweep", "run_sweep", "split_queries",
           "with_provenance"]

logger = logging.getLogger(__name__)


def run_sweep(spec: SweepSpec, *, trials: int | None = None, embedder: Any = None, mlflow: bool = True,
              tracking_uri: str | None = None, baselines: bool = True, show_progress: bool = False,
              echo: Callable[[str], None] | None = None, live_runs: LiveRunStore | None = None,
              study: "StudyOptions | None" = None) -> SweepResult:
    """Run ``spec`` (``trials`` overrides its count), choose the config to export (:mod:`.select`), compare it with
    the base config and the baselines on dev and, once, on test; log it all to MLflow unless told not to.
    ``live_runs`` keeps the runs of the live environment and of the lures on disk, so a sweep run again after a stop
    does not redo them. With ``study``, the trials are shared through Optuna's RDB storage (:mod:`.shared`)."""
    say = echo or (lambda _msg: None)
    n_trials = trials or spec.trials
    if n_trials < 1:
        raise ConfigError(f"trials: must be at least 1 (got {n_trials})")
    if study is not None:
        from .shared import run_shared

        return run_shared(spec, study, trials=n_trials, embedder=embedder, mlflow=mlflow, tracking_uri=tracking_uri,
                          baselines=baselines, show_progress=show_progress, echo=say, live_runs=live_runs)
    setup = prepare(spec, embedder=embedder, live_runs=live_runs, show_progress=show_progress)
    sampler = make_sampler(spec)
    n_trials = trial_count(spec, n_trials)  # a grid or list has no more trials than it lists
    say(header(setup, n_trials))

    rows: list[dict[str, Any]] = []
    configs: dict[int, LabConfig] = {}
    items: dict[int, np.ndarray] = {}
    while len(rows) < n_trials:
        batch = sampler.ask(min(spec.batch_size, n_trials - len(rows)))
        if not batch:
            break  # a grid or list ran out
        scored = score_batch(spec, setup.base, batch, setup.datasets, setup.timing, show_progress, setup.seeded)
        for (number, _), cfg, row in zip(batch, scored.configs, scored.rows):
            sampler.tell(number, row.get("cv.mean") if row["status"] == "ok" else None)
            if cfg is not None:
                configs[number] = cfg
            rows.append(row)
        items.update(scored.items)
        line = progress(rows, spec, n_trials)
        if line:
            say(line)
    return finish(setup, rows, configs, items, baselines=baselines, mlflow=mlflow, tracking_uri=tracking_uri)
