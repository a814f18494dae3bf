"""The worlds the targets are measured in stay as they are (issue 19): the lure generator's pairs (seeds 0-4, the
seeds of the lure target), the live environment's tasks and chance draws (seeds 0-9, the seeds of the live target),
and what its scripted agent does with a text and what the environment makes of it.

Each is pinned by the sha256 of its seeded output, taken from the code when these tests were written. A config, a
reflector or a rerank may change what a memory injects; none of them may change the questions, so a digest that
moves fails here, and the change has to be argued for (and every figure measured in that world measured again).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import astuple
from itertools import product

from hindsight_lab.datasets.synthetic import TASK_TYPES, TRAP_TYPES, generate
from hindsight_lab.scenarios.live import LiveEnv, plan_calls, read_hints


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def _episodes(episodes) -> list[str]:
    return [ep.model_dump_json(exclude_none=True) for ep in episodes]


def test_the_lure_pairs_of_seeds_0_to_4_are_pinned():
    value = [_episodes(generate("lures", n=60, seed=seed)) for seed in range(5)]
    assert sum(map(len, value)) > 5 * 60 * 3  # every pair: a query, its right memory, a lure and background
    assert _digest(value) == "5c9211f4ca1562bcee493990909efe7cbd611c2dffd8b78077681b1fab03b489"


def test_the_live_tasks_and_draws_of_seeds_0_to_9_are_pinned():
    value = []
    for seed in range(10):
        env = LiveEnv(n_tasks=240, seed=seed)
        tasks = env.tasks()
        value.append([[t.index, t.task_type, t.instruction, t.entities, t.at.isoformat(), t.patience,
                       [astuple(env.draws(t.index, a)) for a in range(t.patience + 1)]] for t in tasks])
        value.append([env.required(name, t.at) for t in tasks for name in TRAP_TYPES])
    assert _digest(value) == "110baba9e8e8b333da4bc09fc0145f617a7f8ad62a1491622c84d03fd5aa109b"


_TEXTS = (
    "",
    "Always call verify_identity before issue_refund.",
    "For booking tasks, call hold_slot → confirm_booking in this order.",
    "confirm_booking first, then hold_slot",
    "Task: refund 4 | tools: lookup_order → issue_refund | error at issue_refund | outcome: failure",
    "Call verify_identity before any state-changing tool.",
    "reset_password only after verify_identity",
)


def test_the_scripted_agent_and_the_environments_verdicts_are_pinned():
    env = LiveEnv(n_tasks=24, seed=3)
    value = [[list(h) for h in read_hints(text)] for text in _TEXTS]
    for name, text, explore, draw in product(TRAP_TYPES, _TEXTS, (False, True), (0.2, 0.8)):
        plan = plan_calls(TASK_TYPES[name], text, explore=explore, order_draw=draw)
        value.append([name, text, explore, draw, list(plan.calls), plan.source])
    for task in env.tasks():
        for attempt in range(task.patience + 1):
            draws = env.draws(task.index, attempt)
            plan = plan_calls(TASK_TYPES[task.task_type], _TEXTS[(task.index + attempt) % len(_TEXTS)],
                              explore=draws.explore, order_draw=draws.order)
            ep, lucky = env.execute(task, attempt, plan, f"e{task.index}-{attempt}", draws)
            value.append([ep.model_dump_json(exclude_none=True), lucky])
    assert _digest(value) == "06c603b5bd43726fc6a7365214e8be21e6d781cce86de371021d1823fc1e57d8"
