"""How much data a promoted rule's lift needs: the rule ceiling's test on simulated histories of known effect.

A history has ``tasks`` tasks, each of a difficulty drawn uniformly from ``difficulty``, and ``runs`` runs of each,
replayed trial by trial (every task once, then every task again), as tau-bench's are. Each run follows one rule
with probability ½ and succeeds with its task's difficulty plus half the rule's true within-task ``lift`` when it
followed the rule, minus half when it did not. An ideal memory promotes the rule as soon as the runs so far support
it (:func:`~.ceiling.promoted_after`, the promotion bar as ``promotion.evidence: within_task`` reads it, or as
``runs``, the default, does), and its
lift is read on the later runs against the within-task null (:func:`~.ceiling.forward_lift`), as a replay reads a
promoted rule's.

Over many histories this gives two rates: how often the bar promotes the rule, and how often its lift then clears
the null's 95th percentile. With ``lift=0`` the first is the bar's false-promotion rate and the second the test's
false-positive rate; with a real lift the second is the test's power on data of that shape.

Examples:
    >>> p = simulate_power(tasks=30, runs=4, lift=0.0, histories=4, shuffles=50, seed=0)
    >>> sorted(p), p["histories"]
    (['cleared', 'histories', 'mean_lift', 'promoted'], 4)
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

import numpy as np

from .ceiling import Bar, forward_lift, promoted_after
from .lift import Run, RunTest

#: The simulated rule: "call ``x`` (before ``y``)"; a run that followed it called both.
_RULE = RunTest(lambda r: True, lambda r: "x" in r.tools)


def simulated_history(rng: np.random.Generator, *, tasks: int, runs: int, lift: float,
                      difficulty: tuple[float, float] = (0.2, 0.8)) -> list[Run]:
    """One history of the module's shape, trial by trial, one source agent."""
    base = rng.uniform(*difficulty, size=tasks)
    out: list[Run] = []
    for trial in range(runs):
        for t in range(tasks):
            followed = bool(rng.random() < 0.5)
            chance = base[t] + (lift / 2 if followed else -lift / 2)
            out.append(Run(f"t{t}-r{trial}", f"t{t}", "agent", len(out), ("x", "y") if followed else ("y",),
                           bool(rng.random() < chance)))
    return out


def simulate_power(*, tasks: int, runs: int, lift: float, bar: Bar = Bar(), evidence: str = "within_task",
                   histories: int = 40, shuffles: int = 200, seed: int = 0) -> dict[str, Any]:
    """Over ``histories`` simulated histories (module docstring): in how many the promotion ``bar``, reading
    ``evidence`` as ``promotion.evidence`` does (:func:`~.ceiling.promoted_after`), ``promoted`` the rule, in how
    many its lift on the later runs ``cleared`` the null's 95th percentile (``shuffles`` shuffles; 0 reads no lift,
    only the bar), and the mean of those lifts."""
    rng = np.random.default_rng(seed)
    promoted = cleared = 0
    lifts = []
    for _ in range(histories):
        history = simulated_history(rng, tasks=tasks, runs=runs, lift=lift)
        after = promoted_after(history, _RULE, bar, evidence)
        if after is None:
            continue
        promoted += 1
        if not shuffles:
            continue  # the bar alone
        read = forward_lift(history, [(_RULE, after)], n=shuffles, seed=int(rng.integers(1 << 31)))
        if read["lift"] is not None:
            lifts.append(read["lift"])
            cleared += read["lift"] > read["null_p95"]
    return {"histories": histories, "promoted": promoted, "cleared": cleared,
            "mean_lift": float(np.mean(lifts)) if lifts else None}


def lift_power(runs: Sequence[Run], bar: Bar = Bar(), *, evidence: str = "runs", lift: float = 0.1,
               histories: int = 40, shuffles: int = 100, seed: int = 0) -> dict[str, Any]:
    """The ``lift_power`` block of a replay's ``metrics.json``: :func:`simulate_power` at the replay's own shape —
    its number of tasks and the median number of runs of a task (``runs``: the replayed runs, failures of an
    outside cause left out, as the lift leaves them out) — for a rule with a true within-task ``lift``, promoted
    by ``bar`` reading ``evidence`` as ``promotion.evidence`` does.

    It answers, before any rule is read, whether data of this size can show such a lift at all: ``cleared`` of
    ``histories`` is the lift test's power here. The simulated histories have one source agent and task
    difficulties drawn from [0.2, 0.8] (module docstring); the replay's own agents and tasks may differ.

    Examples:
        >>> runs = [Run(f"{t}{i}", t, "", 0, (), True) for t in "abcde" for i in range(3)]
        >>> runs.append(Run("f0", "f", "", 0, (), True))
        >>> p = lift_power(runs, histories=2, shuffles=0)
        >>> p["tasks"], p["runs"], p["lift"], p["histories"]
        (6, 3, 0.1, 2)
    """
    per_task = Counter(r.task for r in runs)
    tasks = len(per_task)
    k = int(np.median(list(per_task.values()))) if per_task else 0
    out: dict[str, Any] = {"tasks": tasks, "runs": k, "lift": lift, "min_confidence": bar.min_confidence,
                           "min_tasks": bar.min_tasks, "prior_effect": bar.prior_effect, "evidence": evidence}
    if tasks and k:
        out.update(simulate_power(tasks=tasks, runs=k, lift=lift, bar=bar, evidence=evidence, histories=histories,
                                  shuffles=shuffles, seed=seed))
    return out
