"""A fit as MLflow runs: the parent holds the spec, the cross-validated comparison, the learnt weights and the
exported config; one child run per fold (its learnt weights and both scores) and per left-out dataset (each mode's
figures beside the best baseline)."""

from __future__ import annotations

from typing import Any

EXPERIMENT = "hindsight-fit"


def log_fit(result: Any, *, tracking_uri: str | None = None, experiment: str = EXPERIMENT) -> str:
    """Log ``result`` (a :class:`~hindsight_lab.fit.run.FitResult`); returns the parent run's id."""
    from .. import __version__
    from ..tracking import metric_key, start_run

    spec = result.spec
    tags = {"hindsight_lab.kind": "fit", "hindsight_lab.version": __version__, "fit.chosen": result.chosen}
    with start_run(experiment, tracking_uri=tracking_uri, run_name=f"fit {spec.name}", tags=tags) as parent:
        parent.log_params({**{f"fit.{k}": v for k, v in spec.model_dump(mode="json").items()},
                           **{f"dataset.{n}.sha256": sha for n, sha in result.dataset_sha256.items()}})
        parent.log_metrics({**{f"cv.{k}": v for k, v in result.cv.items()},
                            **{f"weights.{t}": w for t, w in result.weights.items()},
                            **{f"timing.{k}": v for k, v in result.timing.items()}})
        parent.log_text(result.fitted.to_yaml(only_behaviour=True), "fitted-config.yaml")
        parent.log_text(result.config.to_yaml(only_behaviour=True), "best-config.yaml")
        for row in result.folds:
            with start_run(experiment, tracking_uri=tracking_uri, run_name=f"fold {row['fold']}",
                           parent_run_id=parent.run_id, tags={"hindsight_lab.kind": "fit-fold"}) as child:
                child.log_params({"fold": row["fold"], "queries": row["queries"]})
                child.log_metrics({f"cv.{spec.metric}.base": row["base"], f"cv.{spec.metric}.fitted": row["fitted"],
                                   **{f"weights.{t}": w for t, w in row["weights"].items()}})
        for name in dict.fromkeys(r["dataset"] for r in result.left_out):
            rows = [r for r in result.left_out if r["dataset"] == name]
            with start_run(experiment, tracking_uri=tracking_uri, run_name=f"left out {name}",
                           parent_run_id=parent.run_id, tags={"hindsight_lab.kind": "fit-left-out"}) as child:
                child.log_params({"dataset": name, **{f"weights.{t}": w for t, w in rows[0]["weights"].items()}})
                metrics: dict[str, Any] = {}
                for r in rows:
                    for key in ("hindsight", "best", "margin", "groups_ahead", "groups_behind"):
                        metrics[metric_key(f"{r['mode']}.{key}")] = r[key]
                child.log_metrics(metrics)
        return parent.run_id
