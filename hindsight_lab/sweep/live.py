"""The live environment as a term of a sweep's objective (``live.final_quarter``): every candidate config runs the
live environment (:mod:`hindsight_lab.replay.live`) on the spec's dev seeds, and a seed is a unit of the
cross-validation as a task is for a replay.

A replay measures recall against judged labels; the live environment measures what recall does for an agent that
acts on it — first-attempt success once memory has had time to fill. A config chosen on replays alone cannot see the
second, so a spec may declare both in its objective, e.g. ``{ndcg@5: 1, transfer.ndcg@5: 1, live.final_quarter: 1}``.

How the term enters the selection (:mod:`.select`): each dev seed is an item of its own group (sign flips of the
best-of-N null flip a seed as a whole), the seeds are dealt to the same number of folds as the replays' tasks, and a
fold's score adds ``weight × (mean of its seeds)`` to the replays' part (which is the mean over the replayed
datasets). The test seeds are run once, at the end, for the configs compared and for the ``none``, ``dense`` and
``bm25`` systems in the same environment. A run is deterministic given its seed and config, so each
``(config, seed)`` is run once per sweep; with a :class:`~.live_runs.LiveRunStore` (``hindsight-lab sweep`` keeps
one by default) each run is also kept on disk as soon as it is made, and a sweep run again takes it from there.

Examples:
    >>> live_metric_names()
    ['final_quarter', 'first_quarter', 'success']
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from .live_runs import LiveRunStore
from .select import Objective, task_folds

if TYPE_CHECKING:
    from ..config import LabConfig

#: The judging-mode prefix of a live term in an objective (``live.final_quarter``).
MODE = "live"
#: A live metric by name → the key of :meth:`~hindsight_lab.replay.live.report.LiveReport.summary` it reads:
#: first-attempt success in the final and in the first quarter of the run, and over the whole run.
METRICS: dict[str, str] = {"final_quarter": "final_window", "first_quarter": "first_window", "success": "success"}
#: The systems the comparison runs beside the configs, in the same environment.
BASELINES: tuple[str, ...] = ("none", "dense", "bm25")


def live_metric_names() -> list[str]:
    return sorted(METRICS)


class LiveSpec(BaseModel):
    """The live environment as part of the objective (:mod:`hindsight_lab.sweep.live`): every candidate runs it on
    the dev ``seeds``; the ``test_seeds`` are run once, at the end, for the configs compared and the baselines."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seeds: list[int] = Field(min_length=2)
    """Dev seeds of the environment, one run each per candidate: the units its cross-validation folds."""
    test_seeds: list[int] = []
    """Seeds kept out of the search (none of the dev seeds)."""
    tasks: int = Field(240, ge=8)
    """Tasks per run (retries come on top), as ``hindsight-lab live --tasks``."""
    workers: int = Field(1, ge=1)
    """Runs made at once, each in a process of its own with its own copy of the embedding model (a run is
    deterministic given its config and seed, so the figures do not depend on it)."""

    @model_validator(mode="after")
    def _apart(self) -> "LiveSpec":
        both = sorted(set(self.seeds) & set(self.test_seeds))
        if both:
            raise ValueError(f"seeds {both} are both dev and test seeds")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError("seeds: a seed is listed twice")
        return self


@dataclass
class LiveTerm:
    """The live part of an objective: its ``(metric, weight)`` terms, the dev and test seeds, the fold of each dev
    seed, and the runs made so far (``(config, seed, systems)`` → each system's summary), also kept in ``store``
    when there is one."""

    terms: list[tuple[str, float]]
    seeds: list[int]
    test_seeds: list[int]
    tasks: int
    folds: np.ndarray
    embedder: Any
    top_k: int
    workers: int = 1
    store: LiveRunStore | None = None
    show_progress: bool = False
    runs: dict[tuple[str, int, tuple[str, ...]], dict[str, dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def build(cls, live: LiveSpec | None, objective: Objective, *, embedder: Any, folds: int, seed: int = 0,
              top_k: int = 10, store: LiveRunStore | None = None, show_progress: bool = False
              ) -> "LiveTerm | None":
        """A spec's live term (None without a ``live`` section), its dev seeds dealt to ``folds`` folds (fewer
        when there are fewer seeds) in ``seed``'s order; runs are kept in ``store`` when given, and counted by a
        tqdm bar with ``show_progress``."""
        if live is None:
            return None
        terms = [(metric, w) for mode, metric, w in objective.terms if mode == MODE]
        seeds = list(live.seeds)
        k = min(folds, len(seeds))
        fold_of = task_folds([str(s) for s in seeds], k, seed) if k >= 2 else np.zeros(len(seeds), dtype=int)
        return cls(terms, seeds, list(live.test_seeds), live.tasks, np.asarray(fold_of), embedder, top_k,
                   live.workers, store, show_progress)

    # ------------------------------------------------------------------ runs
    @staticmethod
    def key(cfg: "LabConfig", seed: int, systems: Sequence[str]) -> tuple[str, int, tuple[str, ...]]:
        return json.dumps(cfg.flat(), sort_keys=True, default=str), int(seed), tuple(systems)

    def summary(self, cfg: "LabConfig", seed: int, systems: Sequence[str] = ("hindsight",)) -> dict[str, Any]:
        """Each system's live summary on ``seed`` with ``cfg`` as the hindsight config (run once, then kept)."""
        key = self.key(cfg, seed, systems)
        if key not in self.runs and not self._from_store(key):
            self._keep(key, _summary(cfg, int(seed), tuple(systems), self.tasks, self.top_k, self.embedder))
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

        with tqdm(total=len(todo), desc=f"live runs ({', '.join(systems)})", leave=False,
                  disable=not self.show_progress) as bar:
            if self.workers <= 1 or len(todo) <= 1:
                for _, (cfg, seed) in todo:
                    self.summary(cfg, seed, systems)
                    bar.update()
                return
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            with ProcessPoolExecutor(min(self.workers, len(todo)),
                                     mp_context=multiprocessing.get_context("spawn")) as ex:
                futures = {ex.submit(_summary, cfg, int(seed), tuple(systems), self.tasks, self.top_k, None): key
                           for key, (cfg, seed) in todo}
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
        return LiveRunStore.key(config, seed=seed, systems=systems, tasks=self.tasks, top_k=self.top_k)

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
        return np.array([float(self.summary(cfg, s, systems)[system][METRICS[metric]]) for s in seeds])

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
        return np.array([f"live:{s}" for _ in self.terms for s in self.seeds])

    # ------------------------------------------------------------------ the comparison
    def split_seeds(self, split: str) -> list[int]:
        return self.seeds if split == "dev" else self.test_seeds

    def means(self, cfg: "LabConfig", split: str) -> dict[str, float]:
        """``live.<metric>`` of ``cfg`` averaged over the split's seeds, for every live metric (empty without seeds)."""
        seeds = self.split_seeds(split)
        self.run_all([cfg], seeds)
        return {f"{MODE}.{m}": float(self.values(cfg, m, seeds).mean()) for m in METRICS} if seeds else {}

    def baseline_means(self, cfg: "LabConfig", split: str) -> dict[str, dict[str, float]]:
        """The same for each of :data:`BASELINES`, run side by side on the split's seeds."""
        seeds = self.split_seeds(split)
        if not seeds:
            return {}
        self.run_all([cfg], seeds, BASELINES)
        return {b: {f"{MODE}.{m}": float(self.values(cfg, m, seeds, system=b, systems=BASELINES).mean())
                    for m in METRICS} for b in BASELINES}

    def objective(self, means: Mapping[str, float]) -> float:
        """The live part of the objective from ``live.<metric>`` means."""
        return sum(w * means[f"{MODE}.{metric}"] for metric, w in self.terms)


def _summary(cfg: "LabConfig", seed: int, systems: tuple[str, ...], tasks: int, top_k: int,
             embedder: Any) -> dict[str, Any]:
    """One live run's summary per system (a worker process builds its own embedder: ``embedder`` None)."""
    from ..replay.live import run_live

    return run_live(list(systems), n_tasks=tasks, seed=seed, config=cfg, embedder=embedder, top_k=top_k).summary()
