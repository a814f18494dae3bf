"""A finished sweep in MLflow (one parent run, child runs for the trials, the artifacts), and the chosen config with
its provenance."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..config import LabConfig, Provenance
from ..evaluation import HEADLINE
from .result import SPLITS, SweepResult
from .spec import SweepSpec
from .trials import SweepData


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def log_sweep(result: SweepResult, configs: Mapping[int, LabConfig], datasets: Sequence[SweepData], *,
              tracking_uri: str | None = None) -> None:
    """One parent run (spec, the choice and its figures, trial table, sensitivity plot, the chosen config) and child
    runs for every trial, or for the top N when there are more than ``mlflow.child_runs`` (the chosen trial always);
    each child run has its dev means and its cross-validated objective (``cv.mean``, ``cv.se``, ``cv.fold<k>``)."""
    from .. import __version__
    from ..tracking import start_run
    from .report import sensitivity_plot

    spec = result.spec
    m = spec.mlflow
    uri = tracking_uri or m.uri
    sha = result.dataset_sha256
    commit = git_commit()
    tags = {"dataset_sha256": sha, "git_commit": commit, "hindsight_lab.version": __version__}
    ok = result.top(len(result.trials))
    logged = ok if len(result.trials) <= m.child_runs else ok.head(m.top_n)
    if result.chosen is not None and result.chosen not in set(logged["number"]):
        import pandas as pd

        logged = pd.concat([logged, ok[ok["number"] == result.chosen]])
    with start_run(m.experiment, tracking_uri=uri, run_name=f"sweep {spec.name}", tags={**tags, "kind": "sweep"}
                   ) as parent:
        result.parent_run_id = parent.run_id
        parent.log_params({"sweep.name": spec.name, "sweep.sampler": spec.sampler, "sweep.trials": len(result.trials),
                           "sweep.seed": spec.seed, "sweep.objective": f"{spec.objective.direction} "
                           f"{spec.objective.label}", "sweep.fields": spec.fields,
                           "sweep.selection": result.selection.get("rule", ""), "sweep.folds": result.selection.get("folds", spec.selection.folds),
                           "sweep.chosen": result.selection.get("chosen", ""),
                           "sweep.test_fraction": spec.split.test_fraction, "sweep.top_k": spec.top_k,
                           "dataset.sha256": sha, "dataset.names": [d.data.info["name"] for d in datasets]})
        if result.study:  # a shared study: its name, storage, and what this command's processes did
            parent.log_params({f"study.{k}": v for k, v in result.study.items()})
        best_run_id = None
        for _, row in logged.iterrows():
            number = int(row["number"])
            worker = {"worker": row["worker"]} if isinstance(row.get("worker"), str) else {}
            with start_run(m.experiment, tracking_uri=uri, run_name=f"trial {number}", parent_run_id=parent.run_id,
                           tags={**tags, "kind": "trial", "trial": number, **worker}) as child:
                cfg = configs[number]
                child.log_params(cfg.flat())
                child.log_metrics({k: float(v) for k, v in row.items()
                                   if isinstance(k, str) and k.split(".")[0] in (*SPLITS, "cv") and _finite(v)})
                child.log_text(cfg.to_yaml(only_behaviour=True), "config.yaml")
                if number == result.best:
                    best_run_id = child.run_id
                if number == result.chosen:
                    result.chosen_run_id = child.run_id
        result.best_run_id = best_run_id or parent.run_id
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            result.trials.to_csv(folder / "trials.csv", index=False)
            result.comparison.to_csv(folder / "comparison.csv")
            (folder / "intervals.json").write_text(json.dumps(result.intervals, indent=2), encoding="utf-8")
            (folder / "spec.yaml").write_text(_spec_yaml(spec), encoding="utf-8")
            sensitivity_plot(result.trials, spec.fields, result.objective, best=result.best,
                             title=f"sweep {spec.name}", path=folder / "sensitivity.png")
            for name in ("trials.csv", "comparison.csv", "intervals.json", "spec.yaml", "sensitivity.png"):
                parent.log_artifact(folder / name)
            (folder / "selection.json").write_text(json.dumps(result.selection, indent=2), encoding="utf-8")
            parent.log_artifact(folder / "selection.json")
            if result.chosen_config is not None:
                exported = with_provenance(result)
                parent.log_text(exported.to_yaml(only_behaviour=True), "best-config.yaml")
        for row in result.comparison.index:
            if row in ("base", "chosen", "best"):
                parent.log_metrics({f"{row}.{k}": v for k, v in result.comparison.loc[row].items() if _finite(v)})
        parent.log_metrics({f"selection.{k}": float(v) for k, v in result.selection.items()
                            if not isinstance(v, (str, list)) and _finite(v)})
        parent.log_metrics({f"timing.{k}": v for k, v in result.timing.items()})


def with_provenance(result: SweepResult) -> LabConfig:
    """The chosen config (the base config when no trial was chosen) with its provenance: run id, dataset hash, dev
    and test headline metrics, the cross-validated gain and the optimism of the best of N, version."""
    from .. import __version__

    assert result.chosen_config is not None
    row = result.comparison.loc["chosen" if result.chosen is not None else "base"]
    metrics = {k: float(row[k]) for k in row.index
               if k.split(".", 1)[-1] in (*HEADLINE, "tokens_median") and _finite(row[k])}
    metrics.update({f"cv.{k}": float(result.selection[k]) for k in ("chosen_gain", "optimism", "p_value")
                    if k in result.selection})
    prov = Provenance(run_id=result.chosen_run_id or result.parent_run_id,
                      dataset_sha256=result.dataset_sha256 or None, metrics=metrics, package_version=__version__)
    return result.chosen_config.model_copy(update={"provenance": prov})


def _finite(v: Any) -> bool:
    try:
        return bool(np.isfinite(float(v)))
    except (TypeError, ValueError):
        return False


def _spec_yaml(spec: SweepSpec) -> str:
    import yaml

    return yaml.safe_dump(spec.model_dump(mode="json", exclude={"folder"}), sort_keys=False)
