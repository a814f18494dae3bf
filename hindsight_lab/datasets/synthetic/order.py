"""The scenarios about which order of tool calls is right: ``lucky`` and ``policy``.

- ``lucky``: two runs with the required tool order, a run that skipped the prerequisite and succeeded by chance
  (``meta.lucky``), the same wrong order failing three times after it, then a query; relevant: the two right runs.
- ``policy``: a rule that changes over time. Before ``meta.policy_changed_at`` one order of two tools succeeds,
  after it that order fails and the reverse succeeds; the query comes after the change and its relevant memories
  are the successes under the new policy.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from ...trace import Episode
from .episodes import build_episode, minutes, phrase
from .names import draw_entities
from .tasks import TASK_TYPES, TRAP_TYPES


def lucky(rng: random.Random, i: int, t0: datetime) -> list[Episode]:
    """Group ``i`` of the ``lucky`` scenario, starting at ``t0``."""
    group = f"lucky-{i:03d}"
    task = TASK_TYPES[rng.choice(TRAP_TYPES)]
    meta = {"scenario": "lucky", "group": group, "order": list(task.steps)}
    out, right_ids = [], []
    for j in range(2):
        ents = draw_entities(rng)
        eid = f"{group}-right-{j}"
        right_ids.append(eid)
        out.append(build_episode(eid, task, phrase(rng, task, ents, ("canonical", "paraphrase")[j]), ents,
                                 calls=task.steps, started_at=t0 + timedelta(days=j),
                                 meta={**meta, "role": "right", "lucky": False}))
    wrong = task.steps[-1:]
    ents = draw_entities(rng)
    out.append(build_episode(f"{group}-lucky", task, phrase(rng, task, ents, "canonical"), ents, calls=wrong,
                             started_at=t0 + timedelta(days=2), meta={**meta, "role": "lucky", "lucky": True}))
    for j in range(3):
        ents = draw_entities(rng)
        out.append(build_episode(f"{group}-repeat-{j}", task, phrase(rng, task, ents, "canonical"), ents,
                                 calls=wrong, error_at=wrong[-1], failure_cause="strategy",
                                 started_at=t0 + timedelta(days=3 + j),
                                 meta={**meta, "role": "repeat", "lucky": False}))
    ents = draw_entities(rng)
    out.append(build_episode(f"{group}-query", task, phrase(rng, task, ents, "canonical"), ents, calls=task.steps,
                             started_at=t0 + timedelta(days=7), relevant=right_ids, meta={**meta, "role": "query"}))
    return out


def policy(rng: random.Random, i: int, t0: datetime) -> list[Episode]:
    """Group ``i`` of the ``policy`` scenario, starting at ``t0``."""
    group = f"policy-{i:03d}"
    task = TASK_TYPES[rng.choice([n for n, t in TASK_TYPES.items() if t.flippable])]
    old, new = task.steps, task.steps[::-1]
    changed = t0 + timedelta(days=5)
    meta = {"scenario": "policy", "group": group, "policy_changed_at": changed.isoformat()}
    flip_error = f"{new[-1]} must now come after {new[0]} (policy of {changed.date().isoformat()})"
    plan = [("before", old, None, d) for d in range(4)] + [("after", old, old[-1], 5 + d) for d in range(2)] \
        + [("after", new, None, 7 + d) for d in range(2)]
    out, new_ok = [], []
    for j, (when, calls, err_at, day) in enumerate(plan):
        ents = draw_entities(rng)
        eid = f"{group}-{when}-{j}"
        if when == "after" and err_at is None:
            new_ok.append(eid)
        out.append(build_episode(eid, task, phrase(rng, task, ents, rng.choice(("canonical", "paraphrase"))), ents,
                                 calls=calls, error_at=err_at, error=flip_error, failure_cause="strategy",
                                 started_at=t0 + timedelta(days=day) + minutes(rng, 6),
                                 meta={**meta, "role": f"{when}_change", "policy_version": 1 + (day >= 5),
                                       "order": list(calls)}))
    ents = draw_entities(rng)
    out.append(build_episode(f"{group}-query", task, phrase(rng, task, ents, "canonical"), ents, calls=new,
                             started_at=t0 + timedelta(days=9), relevant=new_ok,
                             meta={**meta, "role": "query", "policy_version": 2, "order": list(new)}))
    return out
