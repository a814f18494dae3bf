"""Synthetic episodes in the trace format, and the pieces every scenario builds them from: the clock, the wording of
an instruction, background runs."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping, Sequence

from ...trace import Episode
from .names import draw_entities
from .tasks import TASK_TYPES, TRAP_TYPES, TaskType

START = datetime(2025, 3, 3, 9, 0, tzinfo=timezone.utc)
"""The generator's clock starts here; group ``i`` starts ``i * GROUP_DAYS`` days later."""

OUTAGES = ("upstream timeout (504)", "rate limited, try later (429)", "service unavailable (503)")
"""What the last tool of a background run answers in an outage (``failure_cause="external"``)."""


def _reference(task: TaskType, ents: Mapping[str, str]) -> dict[str, str]:
    return {"order": {"order_id": ents["oid"]}, "account": {"email": ents["email"]},
            "booking": {"booking": ents["ref"]}}[task.context]


def build_episode(episode_id: str, task: TaskType, instruction: str, ents: Mapping[str, str], *,
                  calls: Sequence[str], started_at: datetime, task_id: str | None = None,
                  error_at: str | None = None, error: str | None = None, failure_cause: str | None = None,
                  outcome: str | None = None, reflection: str | None = None,
                  relevant: Sequence[str] | None = None, meta: Mapping[str, Any] | None = None) -> Episode:
    """A trace-format episode: the user's message, the read call, then ``calls`` in order.

    When ``error_at`` names one of ``calls``, that call returns ``error`` and the run stops there (outcome
    ``failure`` unless given). ``reflection`` adds a ``reflection`` step (hindsight the recorded agent wrote).

    Examples:
        >>> t = TASK_TYPES["refund"]
        >>> ep = build_episode("e1", t, "Refund order 1", draw_entities(random.Random(0)), calls=t.steps,
        ...                    started_at=START)
        >>> ep.tool_names(), ep.outcome
        (['lookup_order', 'verify_identity', 'issue_refund'], 'success')
    """
    ref = _reference(task, ents)
    steps: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": instruction},
                                   {"type": "tool_call", "name": task.read, "arguments": ref},
                                   {"type": "tool_result", "content": f"found {next(iter(ref.values()))}"}]
    failed = False
    for tool in calls:
        steps.append({"type": "tool_call", "name": tool, "arguments": ref})
        if tool == error_at:
            steps.append({"type": "tool_result", "content": "", "error": error or task.error})
            failed = True
            break
        steps.append({"type": "tool_result", "content": "ok"})
    steps.append({"type": "message", "role": "assistant",
                  "content": "I could not complete the request." if failed else "Done."})
    if reflection:
        steps.append({"type": "reflection", "content": reflection})
    return Episode.model_validate({
        "episode_id": episode_id, "task_id": task_id or episode_id, "task_type": task.name,
        "domain": "support", "started_at": started_at.isoformat(), "instruction": instruction, "steps": steps,
        "outcome": outcome or ("failure" if failed else "success"),
        "failure_cause": failure_cause if (failed or outcome == "failure") else None,
        "relevant_episode_ids": list(relevant) if relevant is not None else None, "meta": dict(meta or {})})


def phrase(rng: random.Random, task: TaskType, ents: Mapping[str, str], style: str) -> str:
    """An instruction of ``task`` for these entities: a ``canonical`` or a ``paraphrase`` template (one draw)."""
    pool = task.canonical if style == "canonical" or not task.paraphrase else task.paraphrase
    return rng.choice(pool).format(**ents)


def background(rng: random.Random, group: str, t0: datetime, span_h: float, per_type: int,
               types: Sequence[str] | None = None) -> list[Episode]:
    """``per_type`` episodes of every task type (half canonical, half paraphrased wording), mostly successful;
    a failure is an outage at the last step (``external``), so every run calls the task's full tool set."""
    out = []
    for name in types or TASK_TYPES:
        task = TASK_TYPES[name]
        for j in range(per_type):
            ents = draw_entities(rng)
            style = "canonical" if (j + rng.randint(0, 1)) % 2 == 0 else "paraphrase"
            outage = task.name in TRAP_TYPES and rng.random() < 0.15
            at = t0 + minutes(rng, span_h)
            eid = f"{group}-bg-{name}-{j}"
            out.append(build_episode(
                eid, task, phrase(rng, task, ents, style), ents, calls=task.steps,
                started_at=at, error_at=task.steps[-1] if outage else None,
                error=rng.choice(OUTAGES) if outage else None, failure_cause="external" if outage else None,
                meta={"scenario": group.split("-")[0], "group": group, "role": "background"}))
    return out


def minutes(rng: random.Random, hours: float) -> timedelta:
    """A random offset within ``hours``, in whole minutes (timestamps stay short and exact)."""
    return timedelta(minutes=rng.randint(0, int(hours * 60)))


def by_time(eps: list[Episode]) -> list[Episode]:
    """Episodes in replay order: by ``started_at``, then id."""
    return sorted(eps, key=lambda e: (e.started_at, e.episode_id))
