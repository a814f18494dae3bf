"""The live environment as a term of a sweep's objective (``live.final_quarter``): every candidate config runs the
live environment (:mod:`hindsight_lab.scenarios.live`) on the spec's dev seeds, and a seed is a unit of the
cross-validation as a task is for a replay.

A replay measures recall against judged labels; the live environment measures what recall does for an agent that
acts on it — first-attempt success once memory has had time to fill. A config chosen on replays alone cannot see the
second, so a spec may declare both in its objective, e.g. ``{ndcg@5: 1, transfer.ndcg@5: 1, live.final_quarter: 1}``.

How the term enters the selection, and how its runs are kept on disk: :mod:`.seeded`. Its baselines are the
``none``, ``dense`` and ``bm25`` systems, run side by side in the same environment on the test seeds.

Examples:
    >>> live_metric_names()
    ['final_quarter', 'first_quarter', 'success']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from .seeded import SeededSpec, SeededTerm

if TYPE_CHECKING:
    from ..config import LabConfig

#: The judging-mode prefix of a live term in an objective (``live.final_quarter``).
MODE = "live"
#: A live metric by name → the key of :meth:`~hindsight_lab.scenarios.live.report.LiveReport.summary` it reads:
#: first-attempt success in the final and in the first quarter of the run, and over the whole run.
METRICS: dict[str, str] = {"final_quarter": "final_window", "first_quarter": "first_window", "success": "success"}
#: The systems the comparison runs beside the configs, in the same environment.
BASELINES: tuple[str, ...] = ("none", "dense", "bm25")


def live_metric_names() -> list[str]:
    return sorted(METRICS)


class LiveSpec(SeededSpec):
    """The live environment as part of the objective (:mod:`hindsight_lab.sweep.live`): every candidate runs it on
    the dev ``seeds``; the ``test_seeds`` are run once, at the end, for the configs compared and the baselines."""

    tasks: int = Field(240, ge=8)
    """Tasks per run (retries come on top), as ``hindsight-lab live --tasks``."""

    @property
    def size(self) -> int:
        return self.tasks


def _summary(cfg: "LabConfig", seed: int, systems: tuple[str, ...], tasks: int, top_k: int,
             embedder: Any) -> dict[str, Any]:
    """One live run's summary per system (a worker process builds its own embedder: ``embedder`` None)."""
    from ..scenarios.live import run_live

    return run_live(list(systems), n_tasks=tasks, seed=seed, config=cfg, embedder=embedder, top_k=top_k).summary()


class LiveTerm(SeededTerm):
    """The live part of an objective (:class:`~.seeded.SeededTerm`): runs of the live environment."""

    MODE = MODE
    METRICS = METRICS
    BASELINES = BASELINES
    runner = staticmethod(_summary)
