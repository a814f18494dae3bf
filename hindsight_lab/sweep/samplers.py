"""Where trials come from: a grid, seeded random draws, an explicit list, or Optuna's TPE (model-based).

Every sampler hands out trials in batches (``ask``) and hears back the objective of each (``tell``); only TPE uses
what it hears. A trial is ``(number, params)`` with ``params`` a mapping of dotted config fields.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np

from .spec import ParamSpec, SweepSpec


class Sampler(Protocol):
    def ask(self, n: int) -> list[tuple[int, dict[str, Any]]]: ...

    def tell(self, number: int, value: float | None) -> None: ...


class ListSampler:
    """Trials in a fixed order (the ``grid`` and ``list`` samplers)."""

    def __init__(self, trials: list[dict[str, Any]]) -> None:
        self._trials, self._next = trials, 0

    def __len__(self) -> int:
        return len(self._trials)

    def ask(self, n: int) -> list[tuple[int, dict[str, Any]]]:
        out = [(i, dict(self._trials[i])) for i in range(self._next, min(self._next + n, len(self._trials)))]
        self._next += len(out)
        return out

    def tell(self, number: int, value: float | None) -> None:
        pass


class RandomSampler:
    """Independent seeded draws: uniform (or log-uniform) over ranges, uniform over listed values."""

    def __init__(self, space: dict[str, ParamSpec], seed: int) -> None:
        self.space, self.rng, self._next = space, np.random.default_rng(seed), 0

    def _draw(self, p: ParamSpec) -> Any:
        if p.values is not None:
            return p.values[int(self.rng.integers(len(p.values)))]
        lo, hi = float(p.low), float(p.high)  # type: ignore[arg-type]
        if p.int:
            return int(self.rng.integers(int(lo), int(hi) + 1))
        if p.log:
            return float(math.exp(self.rng.uniform(math.log(lo), math.log(hi))))
        return float(self.rng.uniform(lo, hi))

    def ask(self, n: int) -> list[tuple[int, dict[str, Any]]]:
        out = [(self._next + i, {name: self._draw(p) for name, p in self.space.items()}) for i in range(n)]
        self._next += n
        return out

    def tell(self, number: int, value: float | None) -> None:
        pass


class TPESampler:
    """Optuna's TPE through its ask-and-tell interface; failed trials are told as failed."""

    def __init__(self, space: dict[str, ParamSpec], seed: int, direction: str) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.space = space
        self.study = optuna.create_study(direction=direction, sampler=optuna.samplers.TPESampler(seed=seed))
        self._open: dict[int, Any] = {}

    def ask(self, n: int) -> list[tuple[int, dict[str, Any]]]:
        out = []
        for _ in range(n):
            trial = self.study.ask()
            self._open[trial.number] = trial
            out.append((trial.number, {name: suggest(trial, name, p) for name, p in self.space.items()}))
        return out

    def tell(self, number: int, value: float | None) -> None:
        import optuna

        trial = self._open.pop(number)
        if value is None or not math.isfinite(value):
            self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(trial, value)


def suggest(trial: Any, name: str, p: ParamSpec) -> Any:
    """An Optuna trial's value of one dimension (the TPE sampler's, in one process or in a shared study)."""
    if p.values is not None:
        return trial.suggest_categorical(name, p.values)
    if p.int:
        return trial.suggest_int(name, int(p.low), int(p.high), log=p.log)  # type: ignore[arg-type]
    return trial.suggest_float(name, float(p.low), float(p.high), log=p.log)  # type: ignore[arg-type]


def make_sampler(spec: SweepSpec) -> Sampler:
    if spec.sampler == "grid":
        return ListSampler(spec.grid())
    if spec.sampler == "list":
        return ListSampler([dict(c) for c in spec.configs])
    if spec.sampler == "random":
        return RandomSampler(spec.space, spec.seed)
    return TPESampler(spec.space, spec.seed, spec.objective.direction)
