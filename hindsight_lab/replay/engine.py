"""The replay engine (DESIGN §6): recorded episodes walked in order through several memory systems side by side.

For each episode, on the replay clock: every system recalls with the instruction as query (and the injected list is
recorded), then every system writes the episode (``hindsight`` also reflects where a trigger fires). Nothing about
an episode is in any store before its own recall. ``maintain`` runs at each day boundary of the clock.

Conversation datasets (LoCoMo) are replayed one conversation at a time, each in fresh stores: the turns are written
as they come and are never queries; the questions are asked after their conversation and are never written.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterable, Sequence

from ..trace import Episode
from .systems import Injected, ReplaySystem

logger = logging.getLogger(__name__)

CLOCK_START = datetime(2024, 1, 1, tzinfo=timezone.utc)


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
    timing: dict[str, float] = field(default_factory=dict)
    clock: str = "started_at"


def replay_clock(episodes: Sequence[Episode]) -> tuple[list[datetime], str]:
    """Each episode's time: its ``started_at``, else one hour per episode from a fixed start."""
    if all(ep.started_at is not None for ep in episodes):
        return [ep.started_at for ep in episodes], "started_at"  # type: ignore[misc]
    return [CLOCK_START + timedelta(hours=i) for i in range(len(episodes))], "one hour per episode"


def run_episodes(episodes: Sequence[Episode], systems: Sequence[ReplaySystem], *,
                 query_ids: set[str] | None = None, show_progress: bool = False) -> ReplayRun:
    """Replay a sequence of episodes (the adapter's documented order) through every system.

    Args:
        episodes: in replay order.
        systems: fresh systems, one store each.
        query_ids: the episodes whose recall is recorded (the judged query set); None records every episode.
        show_progress: a tqdm bar over episodes.
    """
    times, clock = replay_clock(episodes)
    run = ReplayRun([s.name for s in systems], clock=clock)
    spent = {s.name: 0.0 for s in systems}
    t0 = time.perf_counter()
    day = None
    for order, (ep, now) in enumerate(_progress(list(zip(episodes, times)), show_progress, "replay")):
        if day is not None and now.date() != day:
            for s in systems:
                s.maintain(now)
        day = now.date()
        judged = query_ids is None or ep.episode_id in query_ids
        for s in systems:
            start = time.perf_counter()
            injected = s.recall(ep.instruction, now)
            latency = time.perf_counter() - start
            if judged:
                run.queries.append(QueryRecord(s.name, ep.episode_id, order, injected,
                                               s.stored() if query_ids is not None else None, latency, now,
                                               ep.task_id or ep.episode_id))
            spent[s.name] += latency
        for s in systems:
            start = time.perf_counter()
            s.observe(ep, now)
            spent[s.name] += time.perf_counter() - start
            run.memory.append({"system": s.name, "order": order, "at": now, **s.counts()})
        run.outcomes.append({"order": order, "episode_id": ep.episode_id, "task_id": ep.task_id,
                             "outcome": ep.outcome, "at": now})
    run.timing = {"total_s": time.perf_counter() - t0, **{f"{k}_s": v for k, v in spent.items()}}
    _reflection_stats(run, systems)
    return run


def run_conversations(conversations: Iterable[Any], make_systems: Callable[[], Sequence[ReplaySystem]], *,
                      to_episode: Callable[[Any], Episode], show_progress: bool = False) -> ReplayRun:
    """Replay conversations one at a time, each in fresh systems: write every turn, then ask every question.

    ``conversations`` items need ``sample_id``, ``turns`` and ``questions`` (each question with ``index`` and
    ``question``); query ids are ``"<sample_id>#q<index>"``.
    """
    run: ReplayRun | None = None
    t0 = time.perf_counter()
    for conv in _progress(list(conversations), show_progress, "conversations"):
        systems = list(make_systems())
        run = run or ReplayRun([s.name for s in systems], clock="session dates")
        last = None
        for order, turn in enumerate(conv.turns):
            ep = to_episode(turn)
            last = ep.started_at
            for s in systems:
                s.observe(ep, ep.started_at)
        now = (last or CLOCK_START) + timedelta(minutes=1)
        for s in systems:
            stored = s.stored()
            for q in conv.questions:
                start = time.perf_counter()
                injected = s.recall(q.question, now)
                run.queries.append(QueryRecord(s.name, f"{conv.sample_id}#q{q.index}", q.index, injected, stored,
                                               time.perf_counter() - start, now, conv.sample_id))
            run.memory.append({"system": s.name, "conversation": conv.sample_id, "at": now, **s.counts()})
        _reflection_stats(run, systems)
        for s in systems:
            s.close()
    if run is None:
        raise ValueError("no conversation to replay")
    run.timing = {"total_s": time.perf_counter() - t0}
    return run


def _reflection_stats(run: ReplayRun, systems: Sequence[ReplaySystem]) -> None:
    for s in systems:
        mem = getattr(s, "mem", None)
        if mem is not None:
            stats = mem.reflection_stats()
            prev = run.reflection.get(s.name)
            if prev is None:
                run.reflection[s.name] = stats
            else:  # several conversations: add the counts up
                for key in ("episodes", "reflections", "promotions"):
                    prev[key] += stats[key]
                prev["trigger_rate"] = prev["reflections"] / prev["episodes"] if prev["episodes"] else 0.0
                for key in ("decisions", "rejections", "writes"):
                    for k, v in stats[key].items():
                        prev[key][k] = prev[key].get(k, 0) + v


def _progress(items: list[Any], show: bool, desc: str) -> Iterable[Any]:
    if not show:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, leave=False)
