"""The ``strategic`` scenario: a short strategic rule (a ``reflection`` step of one run) that two later queries of
*other* task types need, although their instructions share almost no words with it; relevant: the run with the
rule.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from ...trace import Episode
from .episodes import background, build_episode, by_time, phrase
from .names import draw_entities
from .tasks import TASK_TYPES

STRATEGIC_RULES: dict[str, str] = {
    "verify_identity": "Identity first: verify_identity before touching money or account data.",
    "hold_slot": "Hold the slot first (hold_slot), only then commit to it.",
}
"""Short strategic rules per shared prerequisite (``strategic`` scenario)."""


def strategic(rng: random.Random, i: int, t0: datetime) -> list[Episode]:
    """Group ``i`` of the scenario, starting at ``t0``."""
    group = f"strategic-{i:03d}"
    prereq = rng.choice(sorted(STRATEGIC_RULES))
    users = [n for n, t in TASK_TYPES.items() if t.steps and t.steps[0] == prereq]
    source = TASK_TYPES[rng.choice(users)]
    rule = STRATEGIC_RULES[prereq]
    meta = {"scenario": "strategic", "group": group, "rule": rule}
    ents = draw_entities(rng)
    src = build_episode(f"{group}-rule", source, phrase(rng, source, ents, "canonical"), ents, calls=source.steps,
                        started_at=t0, reflection=rule,
                        meta={**meta, "role": "rule", "applies_to": [n for n in users if n != source.name]})
    bg = background(rng, group, t0 + timedelta(hours=3), 48.0, 1,
                    rng.sample([n for n in TASK_TYPES if n not in users], 3))
    later = [n for n in users if n != source.name] or users
    queries = []
    for j in range(2):
        task = TASK_TYPES[later[j % len(later)]]
        q_ents = draw_entities(rng)
        queries.append(build_episode(f"{group}-query-{j}", task, phrase(rng, task, q_ents, "canonical"), q_ents,
                                     calls=task.steps, started_at=t0 + timedelta(days=3, hours=j),
                                     relevant=[src.episode_id], meta={**meta, "role": "query"}))
    return by_time([src, *bg]) + queries
