"""``hindsight-lab bench --sweep``: how fast the cached evaluator scores rerank configs, against a full replay.

Returns (:func:`run_sweep_bench`; :func:`format_sweep_bench` renders it) the time of one full replay of the default
config (the ``hindsight`` system alone, after the model is loaded), the one replay that fills the cache, the
evaluation of N random weight configs in one vectorised sweep, the MLflow logging of that sweep (separately), and
the per-config speed-up.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

DEFAULT_DATASET = "tau-bench-airline-dev"


def run_sweep_bench(dataset: str | Path, *, fmt: str = "auto", configs: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Time one full replay of the default config, the cache replay and ``configs`` random weight configs."""
    from ..config import LabConfig, WeightsConfig
    from ..datasets.registry import resolve
    from ..embed import make_embedder
    from ..replay.runner import run_replay
    from ..sweep.run import run_sweep
    from ..sweep.spec import SweepSpec

    (dataset,) = [p.resolve() for p in resolve(dataset)]
    cfg = LabConfig()
    t = time.perf_counter()
    embedder = make_embedder(cfg.embedder.model, device=cfg.embedder.device, threads=cfg.embedder.threads)
    embedder.embed(["warm up"])
    load_s = time.perf_counter() - t

    t = time.perf_counter()
    full = run_replay(dataset, format=fmt, systems=["hindsight"], config=cfg, embedder=embedder)
    full_s = time.perf_counter() - t

    with tempfile.TemporaryDirectory(prefix="hindsight-bench-sweep-") as tmp:
        spec = SweepSpec.from_dict({
            "name": "bench", "datasets": [{"path": str(dataset), "format": fmt}], "sampler": "random",
            "trials": configs, "batch_size": configs, "seed": seed,
            "space": {f"retrieval.weights.{w}": {"low": 0.0, "high": 1.0} for w in WeightsConfig.model_fields},
            "mlflow": {"uri": f"sqlite:///{Path(tmp) / 'mlflow.db'}", "experiment": "bench"}}, folder=tmp)
        result = run_sweep(spec, embedder=embedder, baselines=False)
    t = result.timing
    per_config = t["eval_s"] / configs
    return {"dataset": dataset.name, "queries": full.mode("repeat").queries, "configs": configs,
            "model_load_s": load_s, "full_replay_s": full_s, "cache_replay_s": t["capture_s"],
            "evaluation_s": t["eval_s"], "mlflow_s": t["mlflow_s"], "per_config_ms": per_config * 1000,
            "speedup_per_config": full_s / per_config if per_config else float("inf"),
            "speedup_with_cache_amortised": full_s / ((t["capture_s"] + t["eval_s"]) / configs),
            "best_dev_ndcg@5": float(result.trials["dev.ndcg@5"].max()),
            "targets": {"evaluation_s<=60": t["eval_s"] <= 60, "speedup>=100": full_s / per_config >= 100}}


def format_sweep_bench(out: dict[str, Any]) -> str:
    """The figures of :func:`run_sweep_bench` as the text ``bench --sweep`` prints (before the JSON line)."""
    return "\n".join([
        f"sweep evaluator on {out['dataset']} ({out['queries']} queries), {out['configs']} random weight configs",
        f"  full replay of one config   {out['full_replay_s']:8.2f} s  (hindsight alone, model loaded)",
        f"  replay filling the cache    {out['cache_replay_s']:8.2f} s  (once per group of stored-state fields)",
        f"  evaluation of all configs   {out['evaluation_s']:8.2f} s  ({out['per_config_ms']:.2f} ms per config)",
        f"  MLflow logging              {out['mlflow_s']:8.2f} s",
        f"  speed-up per config         {out['speedup_per_config']:8.0f} x  "
        f"({out['speedup_with_cache_amortised']:.0f} x with the cache replay amortised)",
        "  targets: " + ", ".join(f"{k} {'met' if v else 'MISSED'}" for k, v in out["targets"].items())])
