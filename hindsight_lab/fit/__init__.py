"""Learning the rerank from judged replays (``hindsight-lab fit``): a learning-to-rank table from the sweep's replay
caches (:mod:`.table`), weights from a standard learner (:mod:`.learn`: pairwise logistic regression), task-grouped
cross-validation against the base config behind a luck bar, and each dataset left out in turn (:mod:`.run`)."""

from .learn import PairwiseRanker
from .run import FitResult, run_fit, weighted_config
from .spec import FitSpec, load_spec

__all__ = ["FitResult", "FitSpec", "PairwiseRanker", "load_spec", "run_fit", "weighted_config"]
