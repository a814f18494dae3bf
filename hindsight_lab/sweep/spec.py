"""The sweep spec: a YAML file naming the data, the split, the base config, the search space and the objective.

Everything is checked when the spec is loaded, before any replay or MLflow run: unknown fields, values the config
refuses (e.g. a negative weight), empty spaces, unknown metrics and samplers, missing dataset files.

Example (``experiments/rerank_weights.yaml`` is the worked one)::

    name: rerank-weights
    datasets:
      - {name: tau-bench-airline-dev}          # a registered dataset (hindsight-lab datasets list), or
      - {path: traces.jsonl}                   # a file relative to this spec, or several as one history:
      - {paths: [telecom_gpt-4.1.json, telecom_sft-gpt-4.1.json]}
    split: {test_fraction: 0.3, seed: 0}     # queries partitioned by task_id; test is scored once, at the end
    base: {config: configs/default.yaml}     # relative to this file; optional `set:` overrides
    sampler: tpe                             # grid | random | list | tpe
    trials: 200
    seed: 0
    objective: {metric: ndcg@5, direction: maximize}   # or a declared combination, fixed before the search:
                                             # {metric: {ndcg@5: 0.7, transfer.ndcg@5: 0.3}}
    selection: {folds: 5, level: 0.05}       # cross-validation by task on dev, the guard against luck
    live: {seeds: [0, 1, 2, 3, 4], test_seeds: [5, 6]}   # with a live.final_quarter term in the objective
    lures: {seeds: [0, 1, 2, 3, 4], test_seeds: [5, 6]}  # with a lures.right_first term in the objective
    space:
      retrieval.weights.semantic: {low: 0.0, high: 1.0}
      retrieval.min_relative_score: {values: [0.0, 0.6, 0.75]}
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..config import LabConfig, describe_validation_error, read_yaml_mapping
from ..errors import ConfigError
from ..metrics.modes import MODES
from ..evaluation import METRICS
from .evaluate import is_fast
from .live import LiveSpec, LiveTerm
from .lures import LureSpec, LureTerm
from .select import Objective


#: The seeded environments an objective may name (``live.final_quarter``, ``lures.right_first``): the prefix of
#: their metrics is also the spec's section naming their seeds, and their term class scores them.
SEEDED_TERMS = {LiveTerm.MODE: LiveTerm, LureTerm.MODE: LureTerm}


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DatasetSpec(_Strict):
    """One dataset of the sweep: a file (``path``), several files replayed as one history (``paths``), or a
    registered dataset or group (``name``, see ``hindsight-lab datasets list``) — exactly one of them."""

    path: str | None = None
    """Dataset file, relative to the spec file."""
    paths: list[str] | None = Field(None, min_length=1)
    """Several files, relative to the spec file, replayed as one history in this order."""
    name: str | None = None
    """A registered dataset or group name."""
    format: str = "auto"
    limit: int | None = Field(None, ge=1)
    """Keep the first N whole tasks."""
    skip_invalid: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> "DatasetSpec":
        given = [k for k in ("path", "paths", "name") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of path, paths or name (got {given or 'none'})")
        return self

    @property
    def label(self) -> str:
        return self.name or self.path or " + ".join(self.paths or [])

    def files(self, folder: Path) -> list[Path]:
        """The trace files, relative paths from ``folder``.

        Raises:
            ConfigError: a file is missing, or the name is not registered or not on this machine.
        """
        from ..datasets.registry import resolve
        from ..errors import DatasetError

        if self.name is not None:
            try:
                return resolve(self.name)
            except DatasetError as exc:
                raise ConfigError(f"datasets: {exc}") from None
        out = []
        for rel in ([self.path] if self.path is not None else list(self.paths or [])):
            p = Path(rel) if Path(rel).is_absolute() else folder / rel
            if not p.is_file():
                raise ConfigError(f"datasets: file not found: {rel} (relative to the spec's folder)")
            out.append(p)
        return out


class SplitSpec(_Strict):
    test_fraction: float = Field(0.3, ge=0.0, lt=1.0)
    """Share of task_ids whose queries are held out as test (0: no test split)."""
    seed: int = 0


class BaseSpec(_Strict):
    config: str | None = None
    """LabConfig YAML, relative to the spec file (default: LabConfig())."""
    set: dict[str, Any] = {}
    """Dotted overrides applied to it."""


class ObjectiveSpec(_Strict):
    metric: str | dict[str, float] = "ndcg@5"
    """One per-query metric (``ndcg@5``; ``transfer.ndcg@5`` for a judging mode other than ``repeat``), or a
    declared combination ``{metric: weight}``: what the search and the choice maximise, fixed before either."""
    direction: Literal["maximize", "minimize"] = "maximize"

    def build(self) -> Objective:
        return Objective.of(self.metric, self.direction)

    @property
    def label(self) -> str:
        return self.build().name


class SelectionSpec(_Strict):
    """How the exported config is chosen (:mod:`hindsight_lab.sweep.select`)."""

    folds: int = Field(5, ge=2)
    """Folds of whole tasks within the dev split."""
    level: float = Field(0.05, gt=0, lt=1)
    """The best gain must be beyond what the best of N candidates reaches by luck with this probability."""
    null_draws: int = Field(1000, ge=100)
    """Draws of the best-of-N null (sign flips per task)."""


class ParamSpec(_Strict):
    """One dimension: a list of ``values`` (grid, random, tpe), or a range ``low``..``high`` (random, tpe; grid
    needs ``step``), ``log`` for a log-uniform range, ``int`` for integers."""

    values: list[Any] | None = None
    low: float | None = None
    high: float | None = None
    step: float | None = Field(None, gt=0)
    log: bool = False
    int: bool = False

    @model_validator(mode="after")
    def _shape(self) -> "ParamSpec":
        if self.values is not None:
            if self.low is not None or self.high is not None:
                raise ValueError("give either values or low/high, not both")
            if not self.values:
                raise ValueError("values is empty")
        elif self.low is None or self.high is None:
            raise ValueError("give values, or both low and high")
        elif self.low > self.high:
            raise ValueError(f"low {self.low} is above high {self.high}")
        elif self.log and self.low <= 0:
            raise ValueError("a log range needs low > 0")
        return self

    def grid(self) -> list[Any]:
        if self.values is not None:
            return list(self.values)
        if self.step is None:
            raise ValueError("a grid over a range needs step (or give values)")
        n = int(round((self.high - self.low) / self.step)) + 1  # type: ignore[operator]
        vals = [self.low + i * self.step for i in range(n)]  # type: ignore[operator]
        return [int(round(v)) for v in vals] if self.int else [round(v, 12) for v in vals]

    def bounds(self) -> list[Any]:
        """Values that must all be acceptable to the config (the ends of a range, every listed value)."""
        if self.values is not None:
            return list(self.values)
        return [int(self.low), int(self.high)] if self.int else [self.low, self.high]  # type: ignore[arg-type]


class MlflowSpec(_Strict):
    uri: str | None = None
    """Tracking URI (default: the project's store, see ``hindsight_lab.tracking``)."""
    experiment: str = "hindsight-sweeps"
    child_runs: int = Field(50, ge=0)
    """Every trial is a child run up to this many trials; above it only the top ``top_n`` are (every trial is in
    the parent's ``trials.csv``)."""
    top_n: int = Field(20, ge=0)


class SweepSpec(_Strict):
    name: str
    datasets: list[DatasetSpec] = Field(min_length=1)
    split: SplitSpec = SplitSpec()
    base: BaseSpec = BaseSpec()
    sampler: Literal["grid", "random", "list", "tpe"] = "tpe"
    trials: int = Field(100, ge=1)
    seed: int = 0
    batch_size: int = Field(50, ge=1)
    """Trials asked from the sampler at once (TPE): each batch is scored in one vectorised evaluation."""
    objective: ObjectiveSpec = ObjectiveSpec()
    selection: SelectionSpec = SelectionSpec()
    space: dict[str, ParamSpec] = {}
    configs: list[dict[str, Any]] = []
    """The trials of the ``list`` sampler: dotted overrides of the base config, one mapping per trial."""
    top_k: int = Field(10, ge=1)
    token_budget: int | None = Field(None, ge=1)
    """Shared by every trial unless swept (default: the base config's)."""
    live: LiveSpec | None = None
    """The live environment's seeds, when the objective has a ``live.<metric>`` term."""
    lures: LureSpec | None = None
    """The lexical lures' seeds, when the objective has a ``lures.<metric>`` term."""
    mlflow: MlflowSpec = MlflowSpec()

    folder: Path = Field(Path("."), exclude=True)
    """Where relative paths start (the spec file's folder)."""

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_yaml(cls, path: str | Path) -> "SweepSpec":
        data = read_yaml_mapping(path, "sweep spec")
        if data is None:
            raise ConfigError(f"{path}: the sweep spec is empty")
        return cls.from_dict(data, folder=Path(path).parent, source=str(path))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, folder: str | Path = ".", source: str = "sweep spec"
                  ) -> "SweepSpec":
        try:
            spec = cls.model_validate({**data, "folder": Path(folder)})
        except ValidationError as exc:
            message = describe_validation_error(exc, source).replace("invalid config", "invalid sweep spec")
            raise ConfigError(message) from None
        spec.check(source)
        return spec

    # ------------------------------------------------------------------ checks
    def base_config(self) -> LabConfig:
        cfg = LabConfig.from_yaml(self.resolve(self.base.config)) if self.base.config else LabConfig()
        return cfg.with_params(self.base.set) if self.base.set else cfg

    def resolve(self, relative: str) -> Path:
        p = Path(relative)
        return p if p.is_absolute() else self.folder / p

    def check(self, source: str = "sweep spec") -> None:
        """Everything a run would trip over later, named, before anything runs."""
        base = self.base_config()
        known = set(base.flat())
        for name in self.objective.build().metrics:
            mode, _, metric = name.rpartition(".")
            if mode in SEEDED_TERMS:
                term = SEEDED_TERMS[mode]
                if metric not in term.METRICS:
                    raise ConfigError(f"{source}: objective.metric: unknown {mode} metric {name!r}; expected one of "
                                      f"{[f'{mode}.{m}' for m in sorted(term.METRICS)]}")
                if getattr(self, mode) is None:
                    raise ConfigError(f"{source}: objective.metric: {name!r} needs a {mode} section naming its "
                                      f"seeds ({mode}: {{seeds: [0, 1, 2, 3, 4]}})")
                continue
            if metric not in METRICS or (mode and mode not in MODES):
                raise ConfigError(f"{source}: objective.metric: unknown metric {name!r}; expected one of "
                                  f"{list(METRICS)}, optionally after a judging mode ({', '.join(MODES[1:])}), e.g. "
                                  f"'transfer.ndcg@5'")
        if all(name.rpartition(".")[0] in SEEDED_TERMS for name in self.objective.build().metrics):
            raise ConfigError(f"{source}: objective.metric: name at least one replay metric beside the "
                              f"{' and '.join(sorted(SEEDED_TERMS))} ones (e.g. {{ndcg@5: 1.0, live.final_quarter: "
                              f"1.0}}): the datasets' tasks make the folds")
        for ds in self.datasets:
            try:
                ds.files(self.folder)
            except ConfigError as exc:
                raise ConfigError(f"{source}: {exc}") from None
        if self.sampler == "list":
            if not self.configs:
                raise ConfigError(f"{source}: configs: the list sampler needs at least one config")
            fields = {k for c in self.configs for k in c}
        else:
            if not self.space:
                raise ConfigError(f"{source}: space: empty search space (name at least one dotted config field)")
            fields = set(self.space)
        for name in sorted(fields):
            if name not in known:
                close = [k for k in sorted(known) if k.split(".")[-1] == name.split(".")[-1]]
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"{source}: space: unknown config field {name!r}{hint}")
        for name, param in self.space.items():
            if self.sampler == "grid":
                try:
                    param.grid()
                except ValueError as exc:
                    raise ConfigError(f"{source}: space.{name}: {exc}") from None
            for value in param.bounds():
                try:
                    base.with_params({name: value})
                except ConfigError as exc:
                    raise ConfigError(f"{source}: space.{name}: value {value!r} is not allowed: "
                                      f"{str(exc).split(': invalid config: ')[-1]}") from None
        for i, overrides in enumerate(self.configs):
            try:
                base.with_params(overrides)
            except ConfigError as exc:
                raise ConfigError(f"{source}: configs[{i}]: {str(exc).split(': invalid config: ')[-1]}") from None

    # ------------------------------------------------------------------ views
    @property
    def ranges(self) -> dict[str, tuple[float, float]]:
        """Each numeric searched field's range (for the distance of a config to the base)."""
        out = {}
        for name, p in self.space.items():
            vals = [v for v in (p.values or [p.low, p.high]) if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if vals:
                out[name] = (float(min(vals)), float(max(vals)))
        return out

    @property
    def fields(self) -> list[str]:
        if self.sampler == "list":
            return sorted({k for c in self.configs for k in c})
        return list(self.space)

    @property
    def replay_fields(self) -> list[str]:
        """Swept fields that change what is stored or recalled: trials are grouped by their values."""
        return [f for f in self.fields if not is_fast(f)]

    def grid(self) -> list[dict[str, Any]]:
        names = list(self.space)
        return [dict(zip(names, combo)) for combo in itertools.product(*(self.space[n].grid() for n in names))]
