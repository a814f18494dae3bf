"""Replay tests: a synthetic trace writer."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

import pytest

_TOOLS = {
    "refund": ["lookup_order", "check_policy", "issue_refund"],
    "booking": ["search_flights", "check_seat", "book_flight"],
    "cancel": ["lookup_booking", "check_fare_rules", "cancel_booking"],
    "address": ["lookup_user", "verify_identity", "update_address"],
    "baggage": ["lookup_booking", "check_allowance", "add_bag"],
}
_ASKS = {"refund": "refund my order for the broken {x}", "booking": "book a flight to {x} next week",
         "cancel": "cancel my reservation to {x}", "address": "change my shipping address to {x} street",
         "baggage": "add a checked bag to my trip to {x}"}
_PLACES = ["Paris", "Berlin", "Tokyo", "Denver", "Austin", "Lima", "Oslo", "Rome", "Cairo", "Seoul"]


def write_traces(path: Path, n_tasks: int, trials: int, seed: int = 0) -> Path:
    """A JSONL trace file: ``n_tasks`` tasks of five task types, each tried ``trials`` times (trial by trial), with
    strategy failures (tools skipped or reversed) that trigger reflection, one hour apart."""
    rng = random.Random(seed)
    t0 = datetime(2024, 3, 1, tzinfo=timezone.utc)
    tasks = []
    for t in range(n_tasks):
        kind = list(_TOOLS)[t % len(_TOOLS)]
        tasks.append((f"task-{t:03d}", kind, _ASKS[kind].format(x=f"{rng.choice(_PLACES)} {t}")))
    with path.open("w", encoding="utf-8") as fh:
        for trial in range(trials):
            for i, (task_id, kind, ask) in enumerate(tasks):
                ok = rng.random() < 0.6
                tools = list(_TOOLS[kind]) if ok else (_TOOLS[kind][::-1] if rng.random() < 0.5 else _TOOLS[kind][1:])
                steps: list[dict] = [{"type": "message", "role": "user", "content": ask}]
                for name in tools:
                    steps += [{"type": "tool_call", "name": name, "arguments": {"q": ask[:20]}, "id": None},
                              {"type": "tool_result", "id": None, "content": "ok" if ok else "denied",
                               "error": None if ok else f"{name} refused"}]
                fh.write(json.dumps({
                    "episode_id": f"{task_id}-t{trial}", "task_id": task_id, "task_type": kind, "domain": "airline",
                    "started_at": (t0 + timedelta(hours=trial * n_tasks + i)).isoformat(), "instruction": ask,
                    "steps": steps, "outcome": "success" if ok else "failure",
                    "failure_cause": None if ok else "strategy"}) + "\n")
    return path


@pytest.fixture
def traces(tmp_path: Path) -> Callable[..., Path]:
    """``traces(n_tasks, trials)`` writes :func:`write_traces` into tmp_path and returns the file."""
    def make(n_tasks: int, trials: int, seed: int = 0) -> Path:
        return write_traces(tmp_path / f"traces-{n_tasks}x{trials}-{seed}.jsonl", n_tasks, trials, seed)
    return make
