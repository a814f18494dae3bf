"""The ``floods`` scenario: context inflation.

A useful successful run of a task type, then ``retries`` (15) near-identical failed retries of one task, then a
query of that type whose only relevant memory is the useful run.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from ...trace import Episode
from .episodes import background, build_episode, by_time, phrase
from .names import draw_entities
from .tasks import TASK_TYPES, TRAP_TYPES

RETRY_NOTES = ("", " Second try.", " Please retry.", " Trying again.", " Customer still waiting.", " Retry.")
"""What a retry appends to the flooded task's instruction (one drawn per retry)."""


def floods(rng: random.Random, i: int, t0: datetime, *, retries: int = 15) -> list[Episode]:
    """Group ``i`` of the scenario, starting at ``t0``."""
    group = f"floods-{i:03d}"
    task = TASK_TYPES[rng.choice(TRAP_TYPES)]
    meta = {"scenario": "floods", "group": group}
    ents = draw_entities(rng)
    useful = build_episode(f"{group}-useful", task, phrase(rng, task, ents, "paraphrase"), ents, calls=task.steps,
                           started_at=t0, meta={**meta, "role": "useful", "order": list(task.steps)})
    others = [n for n in TRAP_TYPES if n != task.name]
    bg = background(rng, group, t0 + timedelta(hours=2), 20.0, 1, rng.sample(others, 2))
    f_ents = draw_entities(rng)
    base = phrase(rng, task, f_ents, "canonical")
    flood = [build_episode(f"{group}-retry-{k:02d}", task, base + rng.choice(RETRY_NOTES), f_ents,
                           calls=task.steps[-1:], error_at=task.steps[-1], failure_cause="strategy",
                           started_at=t0 + timedelta(days=1, minutes=20 * k), task_id=f"{group}-flooded",
                           meta={**meta, "role": "retry"})
             for k in range(retries)]
    q_ents = draw_entities(rng)
    query = build_episode(f"{group}-query", task, phrase(rng, task, q_ents, "canonical"), q_ents, calls=task.steps,
                          started_at=t0 + timedelta(days=2), relevant=[useful.episode_id],
                          meta={**meta, "role": "query"})
    return by_time([useful, *bg, *flood]) + [query]
