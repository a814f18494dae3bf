"""Sweeps over LabConfig fields (rerank weights first): a cached, vectorised evaluator over one replay, samplers,
MLflow parent and child runs, and the choice of the best config on dev, reported on test (DESIGN §7)."""

from .cache import ReplayCache, capture, load_episode_data
from .evaluate import FAST_FIELDS, Evaluation, FastEvaluator, param_batch
from .run import SweepResult, run_sweep, split_queries
from .spec import SweepSpec

__all__ = ["FAST_FIELDS", "Evaluation", "FastEvaluator", "ReplayCache", "SweepResult", "SweepSpec", "param_batch",
           "capture", "load_episode_data", "run_sweep", "split_queries"]
