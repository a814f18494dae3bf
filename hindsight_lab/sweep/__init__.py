"""Sweeps over LabConfig fields (rerank weights first): a cached, vectorised evaluator over one replay, samplers,
MLflow parent and child runs, and the choice of the best config on dev, reported on test (DESIGN §7); in one
process, or shared by processes and machines through Optuna's RDB storage (:mod:`.shared`)."""

from .cache import ReplayCache, capture, load_episode_data
from .evaluate import FAST_FIELDS, Evaluation, FastEvaluator, param_batch
from .run import SweepResult, run_sweep, split_queries
from .shared import StudyOptions
from .spec import SweepSpec

__all__ = ["FAST_FIELDS", "Evaluation", "FastEvaluator", "ReplayCache", "StudyOptions", "SweepResult", "SweepSpec",
           "param_batch", "capture", "load_episode_data", "run_sweep", "split_queries"]
