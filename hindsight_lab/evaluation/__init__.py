"""The evaluation core: :func:`compare` scores every system of a replay under every judging mode and returns a typed
:class:`Comparison` (one :class:`ModeReport` per mode); :class:`ReplayMetrics` is that with the replay's own facts,
what ``metrics.json`` holds (versioned: :data:`SCHEMA_VERSION`), and :func:`load_metrics` reads a saved one of any
version."""

from hindsight_lab.evaluation.compare import METRICS, compare
from hindsight_lab.evaluation.report import (HEADLINE, SCHEMA_VERSION, Comparison, ModeReport, NoQueriesError,
                                             ReplayMetrics, episodes_file, load_metrics)

__all__ = ["HEADLINE", "METRICS", "SCHEMA_VERSION", "Comparison", "ModeReport", "NoQueriesError", "ReplayMetrics",
           "compare", "episodes_file", "load_metrics"]
