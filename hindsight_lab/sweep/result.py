"""What a sweep returns (:class:`SweepResult`), and the splits every figure is given for."""

from __future__ import annotations

from dataclasses import dataclass
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
            ``dev.<metric>`` and ``test.<metric>`` (means over the split's queries, averaged over datasets).
        best: number of the best trial on dev (None when no trial was valid); ties on the objective go to the
            trial that injects fewer tokens (median on dev), then to the first.
        best_config: its config.
        comparison: rows ``base`` (the spec's base config), ``best`` and the baselines; columns ``dev.<metric>``,
            ``test.<metric>``.
        intervals: ``{base|best: {split: {metric: [mean, low, high]}}}``: bootstrap 95 % intervals (resampling whole
            tasks) of the headline metrics (one dataset; with several, none).
        timing: seconds spent loading, capturing (replays), evaluating, on baselines, and logging to MLflow.
        parent_run_id: the MLflow parent run (None without MLflow).
    """

    spec: SweepSpec
    trials: "pd.DataFrame"
    best: int | None
    best_config: LabConfig | None
    comparison: "pd.DataFrame"
    intervals: dict[str, Any]
    timing: dict[str, float]
    dataset_sha256: str = ""
    parent_run_id: str | None = None
    best_run_id: str | None = None

    @property
    def objective(self) -> str:
        return f"dev.{self.spec.objective.metric}"

    def top(self, n: int = 5) -> "pd.DataFrame":
        """The ``n`` best valid trials, ordered as the choice is made (objective, then fewer tokens, then number)."""
        ok = self.trials[self.trials["status"] == "ok"]
        return ok.sort_values([self.objective, "dev.tokens_median", "number"],
                              ascending=[self.spec.objective.direction == "minimize", True, True],
                              kind="stable").head(n)
