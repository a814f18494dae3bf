"""The choice of a sweep's config (:mod:`.select` applied to the trials): the base config and every valid trial are
the candidates, scored by the objective on the dev queries folded by task; the rule keeps the base unless a trial
beats it by more than the best of N would by luck.

Every search over configs goes through it: the samplers of a sweep spec, and the ``list`` sampler for configs
found any other way (``configs:`` in the spec, or :func:`~.run.run_sweep` on such a spec from Python). Any config
field may differ between candidates: fast fields are scored from one cached replay, the others through one replay
per group of candidates that share them (:mod:`.trials`), and a seeded term by running its environment (the live
environment, the lures) with each candidate (:mod:`.seeded`). The objective is the spec's, declared before the search.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..config import LabConfig
from .seeded import SeededTerm
from .select import distance_to_base, select, selection_holdout
from .spec import SweepSpec
from .trials import SweepData, budgeted, joint_design, joint_groups, score_batch


@dataclass
class Choice:
    """The chosen trial (None: the base config is kept) and what the choice rests on (``summary``)."""

    chosen: int | None
    summary: dict[str, Any] = field(default_factory=dict)


def base_params(spec: SweepSpec, base: LabConfig) -> dict[str, Any]:
    """The base config's values of the searched fields."""
    flat = base.with_params(budgeted({}, spec)).flat()
    return {f: flat.get(f) for f in spec.fields}


def choose(spec: SweepSpec, base: LabConfig, ok_rows: Sequence[Mapping[str, Any]], items: Mapping[int, np.ndarray],
           datasets: Sequence[SweepData], timing: dict[str, float], show_progress: bool,
           seeded: Sequence[SeededTerm] = ()) -> Choice:
    """Score the base config as a candidate, then choose among it and the valid trials (module docstring)."""
    base_vals = base_params(spec, base)
    scored = score_batch(spec, base, [(-1, base_vals)], datasets, timing, show_progress, seeded)
    if -1 not in scored.items:
        raise ValueError(f"the base config cannot be scored: {scored.rows[0].get('error')}")
    numbers = [int(r["number"]) for r in ok_rows]
    values = np.column_stack([scored.items[-1], *(items[n] for n in numbers)])
    sign = 1.0 if spec.objective.direction == "maximize" else -1.0
    # a trial of the list sampler sets only some of the fields: the others keep the base config's value
    params = [base_vals] + [{f: r.get(f, base_vals[f]) for f in spec.fields} for r in ok_rows]
    distance = distance_to_base(params, base_vals, spec.ranges)
    folds, weights = joint_design(datasets, seeded)
    groups = joint_groups(datasets, seeded)
    s = spec.selection
    sel = select(sign * values, groups, folds, base=0, distance=distance, level=s.level, n_null=s.null_draws,
                 seed=spec.seed, weights=weights)
    held = selection_holdout(sign * values, groups, folds, base=0, distance=distance, level=s.level,
                             n_null=s.null_draws, seed=spec.seed, weights=weights)
    label = ["base", *numbers]
    summary = {
        "rule": sel.rule, "objective": f"{spec.objective.direction} {spec.objective.label}",
        "folds": int(folds.max()) + 1, "candidates": len(label), "chosen": label[sel.index],
        "best": label[sel.best], "base_cv": float(sign * sel.mean[0]), "base_se": float(sel.se[0]),
        "chosen_cv": float(sign * sel.mean[sel.index]), "chosen_se": float(sel.se[sel.index]),
        "best_cv": float(sign * sel.mean[sel.best]), "best_se": float(sel.se[sel.best]),
        "chosen_gain": sel.gain, "best_gain": sel.best_gain, "optimism": sel.optimism, "luck_bar": sel.luck_bar,
        "p_value": sel.p_value, "level": s.level, "holdout_gain": float(held.mean()),
        "holdout_gain_by_fold": [float(v) for v in held]}
    return Choice(None if sel.index == 0 else numbers[sel.index - 1], summary)
