"""What a sweep returns (:class:`SweepResult`), and the splits every figure is given for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..config import LabConfig
from .spec import SweepSpec

if TYPE_CHECKING:
    import pandas as pd

SPLITS = ("dev", "test")


@dataclass
class SweepResult:
    """A finished sweep: every trial's figures, the choice, and the comparison table.

    Attributes:
        trials: one row per trial: ``number``, ``status`` (ok | invalid), ``error``, ``group``, the swept fields,
            ``dev.<metric>`` (means over the dev queries, averaged over datasets), and the objective cross-validated
            by task on dev: ``cv.mean``, ``cv.se`` and ``cv.fold<k>``. The test split is not scored per trial.
        best: number of the best trial by ``cv.mean`` (None when no trial was valid); ties go to the trial that
            injects fewer tokens (median on dev), then to the first. What a plain argmax would export.
        best_config: its config.
        comparison: rows ``base`` (the spec's base config), ``chosen`` (when a trial was chosen over it), ``best``
            (when it is not the chosen one) and the baselines; columns ``dev.<metric>``, ``test.<metric>``: the test
            split, scored here once.
        intervals: ``{row: {split: {metric: [mean, low, high]}}}``: bootstrap 95 % intervals (resampling whole tasks)
            of the headline metrics of the configs compared (one dataset; with several, none).
        timing: seconds spent loading, capturing (replays), evaluating, choosing, on baselines, logging to MLflow.
        chosen: the trial the selection rule chose (None: the base config is kept, the usual outcome when nothing
            beats it by more than luck).
        chosen_config: the config to export: the chosen trial's, else the base config.
        selection: what the choice rests on (:mod:`.choose`): CV means and standard errors of base, chosen and best,
            their gains over the base, the optimism of the best of N and the bar luck sets, the p-value, and the
            gain of the rule itself on folds it did not see (``holdout_gain``).
        parent_run_id: the MLflow parent run (None without MLflow).
        study: a sweep shared through a study (:mod:`.shared`): its name, storage (no password), the processes
            this command ran, the trials they told, the trials retried after a worker was lost, and who made the
            choice (empty for a sweep in one process).
    """

    spec: SweepSpec
    trials: "pd.DataFrame"
    best: int | None
    best_config: LabConfig | None
    comparison: "pd.DataFrame"
    intervals: dict[str, Any]
    timing: dict[str, float]
    dataset_sha256: str = ""
    chosen: int | None = None
    chosen_config: LabConfig | None = None
    selection: dict[str, Any] = field(default_factory=dict)
    parent_run_id: str | None = None
    best_run_id: str | None = None
    chosen_run_id: str | None = None
    study: dict[str, Any] = field(default_factory=dict)

    @property
    def objective(self) -> str:
        """The trial table's column the search maximises (or minimises): the cross-validated objective."""
        return "cv.mean"

    def top(self, n: int = 5) -> "pd.DataFrame":
        """The ``n`` best valid trials by the cross-validated objective (then fewer tokens, then number)."""
        ok = self.trials[self.trials["status"] == "ok"]
        return ok.sort_values([self.objective, "dev.tokens_median", "number"],
                              ascending=[self.spec.objective.direction == "minimize", True, True],
                              kind="stable").head(n)
