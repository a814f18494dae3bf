"""The lexical lures as a term of a sweep's objective (``lures.right_first``): every candidate config replays the
generated lure pairs of each dev seed (:mod:`hindsight_lab.scenarios.lures`, as ``hindsight-lab lures`` does), and a
seed is a unit of the cross-validation as a task is for a replay (:mod:`.seeded`).

A lure is a stored episode about the same customer, order or booking as the query that asks for another kind of
task, worded so that ``bm25`` ranks it first. The replays judge whether earlier runs of a task are found; the lures
judge whether a config is drawn to the wrong one of two memories that share the query's names. A config chosen on
replays alone cannot see the second, so a spec may declare both, e.g. ``{ndcg@5: 1, lures.right_first: 1}``.

``right_first`` is the share of the pairs ``bm25`` lures (injects the lure before the right memory) where the config
injects the right memory first; ``right_first_all_pairs`` the same over every pair. ``bm25`` is replayed beside
every candidate to find its lured pairs; ``none``, ``dense`` and ``bm25`` are the baselines on the test seeds
(``bm25``'s ``right_first`` is 0 by definition).

Examples:
    >>> sorted(LureTerm.METRICS)
    ['right_first', 'right_first_all_pairs']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from .seeded import SeededSpec, SeededTerm

if TYPE_CHECKING:
    from ..config import LabConfig

#: The prefix of a lure term in an objective (``lures.right_first``).
MODE = "lures"
#: The system whose lured pairs the figures are read on.
LURED = "bm25"


class LureSpec(SeededSpec):
    """The lexical lures as part of the objective: every candidate replays each dev seed's pairs; the
    ``test_seeds`` are replayed once, at the end, for the configs compared and the baselines."""

    pairs: int = Field(60, ge=2)
    """Lure pairs generated per seed, as ``hindsight-lab lures --pairs``."""

    @property
    def size(self) -> int:
        return self.pairs


def _summary(cfg: "LabConfig", seed: int, systems: tuple[str, ...], pairs: int, top_k: int,
             embedder: Any) -> dict[str, Any]:
    """One seed's lure figures per system, ``bm25`` replayed beside them (a worker process builds its own
    embedder: ``embedder`` None)."""
    from ..datasets.synthetic import generate
    from ..embed import embedder_for
    from ..scenarios.lures import evaluate_lures, lure_pairs

    names = list(dict.fromkeys([LURED, *systems]))
    report = evaluate_lures(lure_pairs(generate("lures", n=pairs, seed=seed)),
                            embedder=embedder if embedder is not None else embedder_for(cfg.embedder),
                            systems=names, config=cfg, top_k=top_k)
    lured = sum(first == "lure" for first in report.first(LURED).values())
    out = {}
    for system in systems:
        s = report.summary(lured=LURED, system=system)
        out[system] = {"pairs": s["pairs"], "lured": lured,
                       "right_first": s[f"{system}_right_first"],
                       "right_first_all_pairs": s[f"{system}_right_first_all_pairs"]}
    return out


class LureTerm(SeededTerm):
    """The lure part of an objective (:class:`~.seeded.SeededTerm`): replays of the generated lure pairs."""

    MODE = MODE
    METRICS = {"right_first": "right_first", "right_first_all_pairs": "right_first_all_pairs"}
    BASELINES = ("none", "dense", LURED)
    runner = staticmethod(_summary)
