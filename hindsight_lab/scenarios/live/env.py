"""The live environment: the task stream, the tool order each task requires and when that changes, and the seeded
chance events of every attempt (shared by every system)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from ...datasets.synthetic import START, TASK_TYPES, TRAP_TYPES, build_episode, draw_entities
from ...trace import Episode
from .agent import Plan

FLIP_TYPE = "booking"
"""The task type whose required order flips at the policy change."""

_RETRY_NOTES = (" Trying again.", " Second request.", " Still not done, please retry.", " Retry.")


@dataclass(frozen=True)
class LiveTask:
    """One task of the stream: its type, words, time and how many retries its user will make."""

    index: int
    task_type: str
    instruction: str
    entities: dict[str, str]
    at: datetime
    patience: int


@dataclass(frozen=True)
class Draws:
    """The chance events of one attempt (shared by every system)."""

    explore: bool
    order: float
    lucky: bool


@dataclass
class LiveEnv:
    """The task stream and the rules of the world.

    Args:
        n_tasks: tasks in the stream.
        seed: everything is a pure function of the seed.
        types: task types drawn from (all have a prerequisite).
        tasks_per_day: spacing on the clock (tasks are evenly spaced from :data:`START`).
        policy_change_at: share of the run after which :data:`FLIP_TYPE`'s order flips (None: never).
        p_explore: chance per attempt that the agent ignores memory and tries a random order.
        p_lucky: chance per attempt that a wrong order succeeds anyway.
        p_retry: chance that a task's user retries after a failure at all; then 1–``max_retries`` times.
        max_retries: most retries of one task.
    """

    n_tasks: int
    seed: int = 0
    types: tuple[str, ...] = TRAP_TYPES
    tasks_per_day: int = 6
    policy_change_at: float | None = 0.5
    p_explore: float = 0.25
    p_lucky: float = 0.1
    p_retry: float = 0.5
    max_retries: int = 4

    def tasks(self) -> list[LiveTask]:
        """The task stream (canonical and paraphrased wording, fresh customers)."""
        rng = random.Random(f"hindsight-live/{self.seed}/tasks")
        step = timedelta(days=1) / self.tasks_per_day
        out = []
        for i in range(self.n_tasks):
            name = rng.choice(self.types)
            task = TASK_TYPES[name]
            ents = draw_entities(rng)
            pool = task.canonical if rng.random() < 0.5 else task.paraphrase
            patience = rng.randint(1, self.max_retries) if rng.random() < self.p_retry else 0
            out.append(LiveTask(i, name, rng.choice(pool).format(**ents), ents, START + i * step, patience))
        return out

    @property
    def policy_changed(self) -> datetime | None:
        """When the order of :data:`FLIP_TYPE` flips."""
        if self.policy_change_at is None:
            return None
        return START + timedelta(days=1) / self.tasks_per_day * int(self.n_tasks * self.policy_change_at)

    def required(self, task_type: str, at: datetime) -> tuple[str, ...]:
        """The order of state-changing calls that succeeds for this task type at this time."""
        steps = TASK_TYPES[task_type].steps
        changed = self.policy_changed
        return steps[::-1] if task_type == FLIP_TYPE and changed is not None and at >= changed else steps

    @staticmethod
    def instruction(task: LiveTask, attempt: int) -> str:
        """What the user says at an attempt: a retry repeats the task with a short note (a near-duplicate)."""
        return task.instruction + (_RETRY_NOTES[(task.index + attempt) % len(_RETRY_NOTES)] if attempt else "")

    @staticmethod
    def time(task: LiveTask, attempt: int) -> datetime:
        return task.at + timedelta(minutes=10 * attempt)

    def draws(self, index: int, attempt: int) -> Draws:
        rng = random.Random(f"hindsight-live/{self.seed}/{index}/{attempt}")
        explore, order, lucky = rng.random(), rng.random(), rng.random()
        return Draws(explore < self.p_explore, order, lucky < self.p_lucky)

    def execute(self, task: LiveTask, attempt: int, plan: Plan, episode_id: str, draws: Draws
                ) -> tuple[Episode, bool]:
        """Run the plan: the episode (with the error where the order broke) and whether it was a lucky success."""
        tt = TASK_TYPES[task.task_type]
        at = self.time(task, attempt)
        required = self.required(task.task_type, at)
        right = tuple(plan.calls) == required
        lucky = not right and draws.lucky
        error_at = error = None
        if not right and not lucky:
            wrong = next((i for i, c in enumerate(plan.calls) if i >= len(required) or c != required[i]),
                         len(plan.calls) - 1)
            error_at = plan.calls[wrong]
            error = tt.error if error_at == tt.steps[-1] else f"{error_at} refused (code S-{len(error_at) * 37})"
        meta = {"scenario": "live", "attempt": attempt, "plan": plan.source, "lucky": lucky,
                "required": list(required)}
        ep = build_episode(episode_id, tt, self.instruction(task, attempt), task.entities, calls=plan.calls,
                           started_at=at, task_id=f"live-{task.index:04d}", error_at=error_at, error=error,
                           failure_cause="strategy", meta=meta)
        return ep, lucky
