"""hindsight_lab: research and tuning toolkit for reflective ("hindsight") agent memory on Chroma.

Importing the package is cheap: torch, chromadb, mlflow and litellm are imported only when first used.
"""

from __future__ import annotations

import logging

from ._env import set_offline_defaults

set_offline_defaults()  # before any lazy import of the heavy libraries

from .config import LabConfig  # noqa: E402
from .errors import (  # noqa: E402
    ConfigError,
    EmbeddingModelMismatch,
    HindsightLabError,
    MemoryNotFound,
    MissingDependencyError,
    ReflectorError,
    StoreError,
    TraceFormatError,
    ValidationError,
)
from .memory import MaintenanceReport, MemorySystem  # noqa: E402
from .reflect.pipeline import ReflectionOutcome  # noqa: E402
from .retrieve.result import SearchResult  # noqa: E402
from .trace import Episode  # noqa: E402
from .types import Hit, Kind, Layer, MemoryRecord, ScoreTerms, Trigger, WriteResult  # noqa: E402

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "ConfigError", "EmbeddingModelMismatch", "Episode", "Hit", "HindsightLabError", "Kind", "LabConfig", "Layer",
    "MaintenanceReport", "MemoryNotFound", "MemoryRecord", "MemorySystem", "MissingDependencyError",
    "ReflectionOutcome", "ReflectorError", "ScoreTerms", "SearchResult", "StoreError", "TraceFormatError", "Trigger", "ValidationError",
    "WriteResult", "__version__",
]
