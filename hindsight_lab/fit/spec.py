"""A fit spec: which judged replays the rerank is learnt from, how it is cross-validated, and the base config it may
replace. Written before the fit runs, like a sweep spec.

Examples:
    >>> spec = FitSpec.model_validate({"name": "demo", "datasets": ["tau-bench-airline-sample"], "folds": 2})
    >>> spec.modes, spec.metric, spec.level
    (['repeat', 'transfer', 'outcome'], 'ndcg@5', 0.05)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..config import LabConfig
from ..errors import ConfigError

__all__ = ["FitSpec", "LureSet", "load_spec"]


class LureSet(BaseModel):
    """Generated lure pairs (:mod:`hindsight_lab.fit.lures`) the ranker also learns from: one unit of the fit, as a
    (dataset, mode) is; its pairs are grouped by seed and pair for the folds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seeds: list[int] = Field(min_length=1)
    """Generator seeds of the pairs learnt from (keep others for testing, as ``hindsight-lab lures --seeds``)."""
    pairs: int = Field(60, ge=1)
    """Pairs per seed."""


class FitSpec(BaseModel):
    """What ``hindsight-lab fit`` learns from and how it decides (``hindsight_lab.fit``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    """The fit's name (its MLflow parent run)."""
    datasets: list[str | list[str]] = Field(min_length=1)
    """Registered dataset or group names, or trace files (relative to the spec); a list is several files replayed as
    one history. Each is one replay the ranker learns from, and, with two or more, one left out in turn."""
    modes: list[str] = ["repeat", "transfer", "outcome"]
    """The judging modes whose queries teach and score the ranker, each (dataset, mode) weighing alike."""
    metric: str = "ndcg@5"
    """The metric of the cross-validated comparison with the base config, per query, averaged per (dataset, mode)."""
    folds: int = Field(5, ge=2)
    """Folds of whole tasks (a task's runs never straddle two), pooled over the datasets."""
    seed: int = 0
    """Seed of the folds and of the luck bar's sign flips."""
    base: str | None = None
    """The config the fit may replace (a YAML file relative to the spec); default the package's default config."""
    C: float = Field(1.0, gt=0)
    """Inverse regularisation of the logistic regression (:class:`~hindsight_lab.fit.learn.PairwiseRanker`)."""
    level: float = Field(0.05, gt=0, lt=1)
    """The fitted weights replace the base only when their cross-validated gain clears the ``1 - level`` quantile
    of the gain luck gives (sign flips of the per-task differences, as a sweep's selection reads it)."""
    top_k: int = Field(10, ge=1)
    """Shared by every system of the replays (the largest k reported)."""
    limit: int | None = Field(None, ge=0)
    """Keep the first N whole tasks of each dataset (quick runs, CI)."""
    lures: LureSet | None = None
    """Generated lure pairs learnt from beside the replays (none by default)."""
    baselines: list[str] = ["dense", "bm25", "dense+ok", "bm25+ok"]
    """Replayed beside each left-out dataset's fitted config, for the comparison table."""
    folder: Path = Field(Path("."), exclude=True)
    """Where relative paths are read from (the spec's folder)."""

    @field_validator("modes")
    @classmethod
    def _known_modes(cls, v: list[str]) -> list[str]:
        from ..metrics.modes import MODES

        bad = [m for m in v if m not in MODES]
        if bad or not v:
            raise ValueError(f"expected judging modes from {list(MODES)} (got {v})")
        return v

    def base_config(self) -> LabConfig:
        """The base config (the package default when none is named)."""
        return LabConfig.from_yaml(self.folder / self.base) if self.base else LabConfig()

    def paths(self, dataset: str | list[str]) -> list[Path]:
        """The trace files of one dataset entry (registered names resolved)."""
        from ..datasets.registry import resolve

        items = dataset if isinstance(dataset, list) else [dataset]
        return [p for item in items for p in resolve(item if not (self.folder / item).is_file()
                                                      else str(self.folder / item))]

    @staticmethod
    def label(dataset: str | list[str]) -> str:
        return dataset if isinstance(dataset, str) else "+".join(Path(d).stem for d in dataset)


def load_spec(path: str | Path, **overrides: Any) -> FitSpec:
    """A fit spec from YAML; errors name the file and the field."""
    import yaml

    from ..errors import invalid_input

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"fit spec {path}: no such file") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"fit spec {path}: not YAML ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"fit spec {path}: expected a mapping of fields, got {type(data).__name__}")
    from pydantic import ValidationError as PydanticError

    try:
        return FitSpec.model_validate({**data, **overrides, "folder": path.parent})
    except PydanticError as exc:
        raise ConfigError(invalid_input(exc, f"fit spec {path}")) from None
