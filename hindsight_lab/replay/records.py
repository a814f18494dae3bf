"""What a replay records: one :class:`QueryRecord` per system and judged query, gathered in a :class:`ReplayRun`
(written by :mod:`~hindsight_lab.replay.engine`, journaled by :mod:`~hindsight_lab.replay.journal`, judged by
:mod:`~hindsight_lab.replay.report`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .systems import Injected


@dataclass
class QueryRecord:
    """What one system injected for one query, and what its store held then (for oracle hit@k)."""

    system: str
    query_id: str
    order: int
    injected: list[Injected]
    stored: list[tuple[str, tuple[str, ...]]] | None
    latency_s: float
    at: datetime
    group: str | None = None  # task or conversation, for resampling


@dataclass
class ReplayRun:
    """Everything a replay recorded; judged and summarised by :mod:`hindsight_lab.replay.report`."""

    systems: list[str]
    queries: list[QueryRecord] = field(default_factory=list)
    memory: list[dict[str, Any]] = field(default_factory=list)  # per system, per episode: counts by layer
    outcomes: list[dict[str, Any]] = field(default_factory=list)  # per episode: recorded success trend
    reflection: dict[str, dict[str, Any]] = field(default_factory=dict)  # per hindsight system: reflection stats
    rules: dict[str, list[Any]] = field(default_factory=dict)  # per hindsight system: its L3 rules at the end
    lift: dict[str, dict[str, Any]] = field(default_factory=dict)  # per hindsight system: its promoted rules' lift
    rule_ceiling: dict[str, Any] = field(default_factory=dict)  # what rules the traces support within tasks
    lift_power: dict[str, Any] = field(default_factory=dict)  # whether data of this shape can show a rule's lift
    timing: dict[str, float] = field(default_factory=dict)
    clock: str = "started_at"


def rules_injected(run: ReplayRun, system: str) -> dict[str, set[str]]:
    """Query id → the L3 rules ``system`` injected for it, each known by its first source episode (the episode that
    first proposed it, which merges and promotion keep; store ids differ between a replay and its resumption)."""
    return {r.query_id: {(i.source_episode_ids[:1] or (i.memory_id,))[0] for i in r.injected if i.kind == "rule"}
            for r in run.queries if r.system == system}
