"""Seeded environments as terms of a sweep's objective: the live environment (:mod:`.live`, ``live.final_quarter``)
and the lexical lures (:mod:`.lures`, ``lures.right_first``). Each is run by every candidate config on the spec's
dev seeds, and a seed is a unit of the cross-validation as a task is for a replay.

How such a term enters the selection (:mod:`.select`): each dev seed is an item of its own group (sign flips of the
best-of-N null flip a seed as a whole), the seeds are dealt to the same number of folds as the replays' tasks, and a
fold's score adds ``weight × (mean of its seeds)`` to the replays' part (which is the mean over the replayed
datasets). The test seeds are run once, at the end, for the configs compared and for the term's baselines in the
same environment. A run is deterministic given its seed and config, so each ``(config, seed)`` is run once per
sweep; with a :class:`~.live_runs.LiveRunStore` (``hindsight-lab sweep`` keeps one by default) each run is also kept
on disk as soon as it is made, and a sweep run again takes it from there.

A term is a subclass of :class:`SeededTerm` naming its ``MODE`` (the objective's prefix), its ``METRICS`` (metric
name → key of a system's run summary), its ``BASELINES`` and its ``runner`` (a module-level function, so that a
worker process can run it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from .live_runs import LiveRunStore
from .select import Objective, task_folds

if TYPE_CHECKING:
    from ..config import LabConfig

#: A run: ``(config, seed, systems, size, top_k, embedder or None) → {system: summary}``.
Runner = Callable[["LabConfig", int, tuple[str, ...], int, int, Any], dict[str, dict[str, Any]]]


class SeededSpec(BaseModel):
    """A seeded environment in a sweep spec: every candidate runs it on the dev ``seeds``; the ``test_seeds`` are
    run once, at the end, for the configs compared and the baselines."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seeds: list[int] = Field(min_length=2)
    """Dev seeds of the environment, one run each per candidate: the units its cross-validation folds."""
    test_seeds: list[int] = []
    """Seeds kept out of the search (none of the dev seeds)."""
    workers: int = Field(1, ge=1)
    """Runs made at once, each in a process of its own with its own copy of the embedding model (a run is
    deterministic given its config and seed, so the figures do not depend on it)."""

    @property
    def size(self) -> int:
        """How much one run does (the live environment's tasks, the lures' pairs)."""
        raise NotImplementedError

    @model_validator(mode="after")
    def _apart(self) -> "SeededSpec":
        both = sorted(set(self.seeds) & set(self.test_seeds))
        if both:
            raise ValueError(f"seeds {both} are both dev and test seeds")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError("seeds: a seed is listed twice")
        return self


@dataclass
class SeededTerm:
    """One seeded environment's part of an objective: its ``(metric, weight)`` terms, the dev and test seeds, the
    fold of each dev seed, and the runs made so far (``(config, seed, systems)`` → each system's summary), also
    kept in ``store`` when there is one."""

    MODE: ClassVar[str] = ""
    METRICS: ClassVar[dict[str, str]] = {}
    BASELINES: ClassVar[tuple[str, ...]] = ()
    runner: ClassVar[Runner]

    terms: list[tuple[str, float]]
    seeds: list[int]
    test_seeds: list[int]
    size: int
    folds: np.ndarray
    embedder: Any
    top_k: int
    workers: int = 1
    store: LiveRunStore | None = None
    show_progress: bool = False
    runs: dict[tuple[str, int, tuple[str, ...]], dict[str, dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def build(cls, spec: SeededSpec | None, objective: Objective, *, embedder: Any, folds: int, seed: int = 0,
              top_k: int = 10, store: LiveRunStore | None = None, show_progress: bool = False
              ) -> "SeededTerm | None":
        """A spec's term (None without its section), its dev seeds dealt to ``folds`` folds (fewer when there are
        fewer seeds) in ``seed``'s order; runs are kept in ``store`` when given, and counted by a tqdm bar with
        ``show_progress``."""
        if spec is None:
            return None
        terms = [(metric, w) for mode, metric, w in objective.terms if mode == cls.MODE]
        seeds = list(spec.seeds)
        k = min(folds, len(seeds))
        fold_of = task_folds([str(s) for s in seeds], k, seed) if k >= 2 else np.zeros(len(seeds), dtype=int)
        return cls(terms, seeds, list(spec.test_seeds), spec.size, np.asarray(fold_of), embedder, top_k,
                   spec.workers, store, show_progress)

    # ------------------------------------------------------------------ runs
    @staticmethod
    def key(cfg: "LabConfig", seed: int, systems: Sequence[str]) -> tuple[str, int, tuple[str, ...]]:
        return json.dumps(cfg.flat(), sort_keys=True, default=str), int(seed), tuple(systems)

    def summary(self, cfg: "LabConfig", seed: int, systems: Sequence[str] = ("hindsight",)) -> dict[str, Any]:
        """Each system's summary on ``seed`` with ``cfg`` as the hindsight config (run once, then kept)."""
        key = self.key(cfg, seed, systems)
        if key not in self.runs and not self._from_store(key):
            self._keep(key, type(self).runner(cfg, int(seed), tuple(systems), self.size, self.top_k, self.embedder))
        return self.runs[key]

    def run_all(self, cfgs: Sequence["LabConfig"], seeds: Sequence[int],
                systems: Sequence[str] = ("hindsight",)) -> None:
        """Make every run of ``cfgs`` × ``seeds`` not made yet (nor kept in the store), ``workers`` at a time."""
        todo = list({self.key(c, s, systems): (c, s) for c in cfgs for s in seeds
                     if self.key(c, s, systems) not in self.runs}.items())
        todo = [(key, run) for key, run in todo if not self._from_store(key)]
        if not todo:
            return
        from tqdm.auto import tqdm

        with tqdm(total=len(todo), desc=f"{self.MODE} runs ({', '.join(systems)})", leave=False,
                  disable=not self.show_progress) as bar:
            if self.workers <= 1 or len(todo) <= 1:
                for _, (cfg, seed) in todo:
                    self.summary(cfg, seed, systems)
                    bar.update()
                return
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            from ..embed.threads import share_cores

            n = min(self.workers, len(todo))
            with share_cores(n), ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn")) as ex:
                futures = {ex.submit(type(self).runner, cfg, int(seed), tuple(systems), self.size, self.top_k, None):
                           key for key, (cfg, seed) in todo}
                failed: BaseException | None = None
                for future in as_completed(futures):  # each run kept as soon as it is made, whatever fails
                    try:
                        self._keep(futures[future], future.result())
                    except Exception as exc:  # noqa: BLE001 - raised below, once the other runs are kept
                        failed = failed or exc
                    bar.update()
                if failed is not None:
                    raise failed

    def _store_key(self, key: tuple[str, int, tuple[str, ...]]) -> str:
        config, seed, systems = key
        return LiveRunStore.key(config, seed=seed, systems=systems, tasks=self.size, top_k=self.top_k,
                                mode=self.MODE)

    def _from_store(self, key: tuple[str, int, tuple[str, ...]]) -> bool:
        """Take the run from the store when it holds it."""
        kept = self.store.get(self._store_key(key)) if self.store is not None else None
        if kept is not None:
            self.runs[key] = kept
        return kept is not None

    def _keep(self, key: tuple[str, int, tuple[str, ...]], summary: dict[str, Any]) -> None:
        self.runs[key] = summary
        if self.store is not None:
            self.store.put(self._store_key(key), summary)

    def values(self, cfg: "LabConfig", metric: str, seeds: Sequence[int], system: str = "hindsight",
               systems: Sequence[str] = ("hindsight",)) -> np.ndarray:
        """``metric`` of ``system`` on each seed."""
        return np.array([float(self.summary(cfg, s, systems)[system][self.METRICS[metric]]) for s in seeds])

    # ------------------------------------------------------------------ the selection's items
    def items(self, cfgs: Sequence["LabConfig"]) -> np.ndarray:
        """``(N, C)``: each term's value on each dev seed (terms one after the other) for each config."""
        if not self.terms:
            return np.zeros((0, len(cfgs)))
        self.run_all(cfgs, self.seeds)
        return np.column_stack([np.concatenate([self.values(cfg, metric, self.seeds) for metric, _ in self.terms])
                                for cfg in cfgs])

    @property
    def item_folds(self) -> np.ndarray:
        return np.tile(self.folds, len(self.terms))

    @property
    def item_weights(self) -> np.ndarray:
        """A term's weight shared by the seeds of each fold: the fold's score adds ``weight × mean of its seeds``."""
        n = np.bincount(self.folds, minlength=int(self.folds.max()) + 1 if len(self.folds) else 0)
        return np.concatenate([np.full(len(self.seeds), w) / n[self.folds] for _, w in self.terms]) \
            if self.terms else np.zeros(0)

    @property
    def item_groups(self) -> np.ndarray:
        """A seed is a group of its own (every term's item of that seed)."""
        return np.array([f"{self.MODE}:{s}" for _ in self.terms for s in self.seeds])

    # ------------------------------------------------------------------ the comparison
    def split_seeds(self, split: str) -> list[int]:
        return self.seeds if split == "dev" else self.test_seeds

    def means(self, cfg: "LabConfig", split: str) -> dict[str, float]:
        """``<mode>.<metric>`` of ``cfg`` averaged over the split's seeds, for every metric (empty without seeds)."""
        seeds = self.split_seeds(split)
        self.run_all([cfg], seeds)
        return {f"{self.MODE}.{m}": float(self.values(cfg, m, seeds).mean()) for m in self.METRICS} if seeds else {}

    def baseline_means(self, cfg: "LabConfig", split: str) -> dict[str, dict[str, float]]:
        """The same for each of the term's ``BASELINES``, run side by side on the split's seeds."""
        seeds = self.split_seeds(split)
        if not seeds or not self.BASELINES:
            return {}
        self.run_all([cfg], seeds, self.BASELINES)
        return {b: {f"{self.MODE}.{m}": float(self.values(cfg, m, seeds, system=b, systems=self.BASELINES).mean())
                    for m in self.METRICS} for b in self.BASELINES}

    def objective(self, means: Mapping[str, float]) -> float:
        """The term's part of the objective from ``<mode>.<metric>`` means."""
        return sum(w * means[f"{self.MODE}.{metric}"] for metric, w in self.terms)
