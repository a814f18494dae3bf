"""A finished sweep in MLflow (one parent run, child runs for the trials, the artifacts), and the best config with its
provenance."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..config import LabConfig, Provenance
from ..replay.report import HEADLINE
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
    """One parent run (spec, best figures, trial table, sensitivity plot, best config) and child runs for every
    trial, or for the top N when there are more than ``mlflow.child_runs``."""
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
    with start_run(m.experiment, tracking_uri=uri, run_name=f"sweep {spec.name}", tags={**tags, "kind": "sweep"}
                   ) as parent:
        result.parent_run_id = parent.run_id
        parent.log_params({"sweep.name": spec.name, "sweep.sampler": spec.sampler, "sweep.trials": len(result.trials),
                           "sweep.seed": spec.seed, "sweep.objective": f"{spec.objective.direction} "
                           f"dev.{spec.objective.metric}", "sweep.fields": spec.fields,
                           "sweep.test_fraction": spec.split.test_fraction, "sweep.top_k": spec.top_k,
                           "dataset.sha256": sha, "dataset.names": [d.data.info["name"] for d in datasets]})
        best_run_id = None
        for _, row in logged.iterrows():
            number = int(row["number"])
            with start_run(m.experiment, tracking_uri=uri, run_name=f"trial {number}", parent_run_id=parent.run_id,
                           tags={**tags, "kind": "trial", "trial": number}) as child:
                cfg = configs[number]
                child.log_params(cfg.flat())
                child.log_metrics({k: float(v) for k, v in row.items()
                                   if isinstance(k, str) and k.split(".")[0] in SPLITS and _finite(v)})
                child.log_text(cfg.to_yaml(only_behaviour=True), "config.yaml")
                if number == result.best:
                    best_run_id = child.run_id
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
            if result.best_config is not None:
                exported = with_provenance(result)
                parent.log_text(exported.to_yaml(only_behaviour=True), "best-config.yaml")
        if result.best is not None:
            parent.log_metrics({f"best.{k}": v for k, v in result.comparison.loc["best"].items() if _finite(v)})
        parent.log_metrics({f"base.{k}": v for k, v in result.comparison.loc["base"].items() if _finite(v)})
        parent.log_metrics({f"timing.{k}": v for k, v in result.timing.items()})


def with_provenance(result: SweepResult) -> LabConfig:
    """The best config with its provenance: run id, dataset hash, dev and test headline metrics, version."""
    from .. import __version__

    assert result.best_config is not None
    best = result.comparison.loc["best"]
    metrics = {k: float(best[k]) for k in best.index
               if k.split(".", 1)[-1] in (*HEADLINE, "tokens_median") and _finite(best[k])}
    prov = Provenance(run_id=result.best_run_id, dataset_sha256=result.dataset_sha256 or None, metrics=metrics,
                      package_version=__version__)
    return result.best_config.model_copy(update={"provenance": prov})


def _finite(v: Any) -> bool:
    try:
        return bool(np.isfinite(float(v)))
    except (TypeError, ValueError):
        return False


def _spec_yaml(spec: SweepSpec) -> str:
    import yaml

    return yaml.safe_dump(spec.model_dump(mode="json", exclude={"folder"}), sort_keys=False)
