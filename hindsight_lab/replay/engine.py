"""The replay engine (DESIGN §6): recorded episodes walked in order through several memory systems side by side.

For each episode, on the replay clock: every system recalls with the instruction as query (and the injected list is
recorded), then every system writes the episode (``hindsight`` also reflects where a trigger fires). Nothing about
an episode is in any store before its own recall. ``maintain`` runs at each day boundary of the clock.

Conversation datasets (LoCoMo) are replayed one conversation at a time, each in fresh stores: the turns are written
as they come and are never queries; the questions are asked after their conversation and are never written.

Both can journal each completed unit (an episode, a conversation) and resume from a journal after a kill
(:mod:`hindsight_lab.replay.journal`).
"""

from __future__ import annotations

import copy
import logging
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import HindsightLabError
from ..trace import Episode
from .journal import Journal, as_json
from .journal_reflector import JournalingReflector
from .records import QueryRecord, ReplayRun
from .systems import Injected, ReplaySystem
from .units import StoredCodec, decode_query, decode_row, encode_query, encode_row

logger = logging.getLogger(__name__)

CLOCK_START = datetime(2024, 1, 1, tzinfo=timezone.utc)


def replay_clock(episodes: Sequence[Episode]) -> tuple[list[datetime], str]:
    """Each episode's time: its ``started_at``, else one hour per episode from a fixed start."""
    if all(ep.started_at is not None for ep in episodes):
        return [ep.started_at for ep in episodes], "started_at"  # type: ignore[misc]
    return [CLOCK_START + timedelta(hours=i) for i in range(len(episodes))], "one hour per episode"


def run_episodes(episodes: Sequence[Episode], systems: Sequence[ReplaySystem], *,
                 query_ids: set[str] | None = None, show_progress: bool = False,
                 journal: Journal | None = None) -> ReplayRun:
    """Replay a sequence of episodes (the adapter's documented order) through every system.

    With a ``journal`` every completed episode is appended to it as one unit, and the units it already holds (a
    resumed replay) are not replayed again: their records come from the journal, and the systems' state is
    re-derived by writing those episodes again in order — maintenance at the same day boundaries, the reflector
    answering from the journal — without recalling, since what a replay stores does not depend on what was
    recalled (DESIGN §6). Where a recall can change later state (:meth:`~hindsight_lab.replay.systems.Hindsight.
    recall_changes_state`; an unknown system is assumed to), it is repeated too, and a warning is logged if it
    returns something else than the journal holds. After re-deriving, every system's memory counts and reflection
    counters must equal the journal's.

    Args:
        episodes: in replay order.
        systems: fresh systems, one store each.
        query_ids: the episodes whose recall is recorded (the judged query set); None records every episode.
        show_progress: a tqdm bar over episodes.
        journal: an open :class:`~hindsight_lab.replay.journal.Journal` (its ``units`` are the completed
            episodes of a resumed replay).

    Raises:
        HindsightLabError: the journal's units are not a prefix of these episodes, or re-deriving did not
            reproduce what the journal recorded.
    """
    times, clock = replay_clock(episodes)
    run = ReplayRun([s.name for s in systems], clock=clock)
    done = journal.units if journal is not None else []
    _check_prefix(done, [ep.episode_id for ep in episodes])
    rederive = bool(done) and len(done) < len(episodes)
    span = max(times) - min(times) if times else timedelta(0)
    recall_again = {s.name: bool(getattr(s, "recall_changes_state", lambda _: True)(span)) for s in systems}
    reflectors = _journal_reflectors(systems) if journal is not None else {}
    codec = StoredCodec()
    spent = {s.name: 0.0 for s in systems}
    t0 = time.perf_counter()
    day = None
    for order, (ep, now) in enumerate(_progress(list(zip(episodes, times)), show_progress, "replay")):
        if order < len(done):
            restored = _restore_episode_unit(run, done[order], codec)
            if rederive:
                day = _maintain(systems, day, now)
                _rederive(ep, now, systems, done[order], restored, reflectors, recall_again)
                if order == len(done) - 1:
                    _verify(systems, done[order])
            continue
        day = _maintain(systems, day, now)
        queries, rows, outcome = _replay_episode(ep, order, now, systems, query_ids, spent)
        run.queries.extend(queries)
        run.memory.extend(rows)
        run.outcomes.append(outcome)
        if journal is not None:
            journal.append({"unit": order, "id": ep.episode_id,
                            "queries": [encode_query(q, codec) for q in queries],
                            "memory": [encode_row(r) for r in rows], "outcome": encode_row(outcome),
                            "reflections": {n: r.take() for n, r in reflectors.items()},
                            "reflection_stats": _collect_reflection_stats(systems)})
    run.timing = {"total_s": time.perf_counter() - t0, **{f"{k}_s": v for k, v in spent.items()},
                  "resumed_units": len(done)}
    if done and not rederive:  # every episode came from the journal: so do the final reflection counters
        _add_reflection_stats(run, done[-1]["reflection_stats"])
    else:
        _add_reflection_stats(run, _collect_reflection_stats(systems))
        run.rules = _collect_rules(systems)
    return run


def _collect_rules(systems: Sequence[ReplaySystem]) -> dict[str, list[Any]]:
    """Each hindsight system's L3 rules at the end of the replay, archived ones included (a promotion's lift is
    measured on the episodes after it, whatever became of the rule later)."""
    from ..types import Kind

    out = {}
    for s in systems:
        mem = getattr(s, "mem", None)
        if mem is not None:
            out[s.name] = [r for r in mem.records(Kind.RULE) + mem.records(archived=True) if r.kind is Kind.RULE]
    return out


def run_conversations(conversations: Iterable[Any], make_systems: Callable[[], Sequence[ReplaySystem]], *,
                      to_episode: Callable[[Any], Episode], show_progress: bool = False,
                      journal: Journal | None = None) -> ReplayRun:
    """Replay conversations one at a time, each in fresh systems: write every turn, then ask every question.

    ``conversations`` items need ``sample_id``, ``turns`` and ``questions`` (each question with ``index`` and
    ``question``); query ids are ``"<sample_id>#q<index>"``. With a ``journal`` each completed conversation is
    one unit; on resume the conversations it holds are taken from it and not replayed (they ran in their own
    fresh stores, so nothing needs re-deriving).
    """
    run: ReplayRun | None = None
    done = journal.units if journal is not None else []
    convs = list(conversations)
    _check_prefix(done, [c.sample_id for c in convs])
    t0 = time.perf_counter()
    for index, conv in enumerate(_progress(convs, show_progress, "conversations")):
        if index < len(done):
            run = run or ReplayRun(list(done[index]["systems"]), clock="session dates")
            _restore_conversation_unit(run, done[index])
            continue
        systems = list(make_systems())
        run = run or ReplayRun([s.name for s in systems], clock="session dates")
        last = None
        for turn in conv.turns:
            ep = to_episode(turn)
            last = ep.started_at
            for s in systems:
                s.observe(ep, ep.started_at)
        now = (last or CLOCK_START) + timedelta(minutes=1)
        queries, rows = [], []
        for s in systems:
            stored = s.stored()
            for q in conv.questions:
                start = time.perf_counter()
                injected = s.recall(q.question, now)
                queries.append(QueryRecord(s.name, f"{conv.sample_id}#q{q.index}", q.index, injected, stored,
                                           time.perf_counter() - start, now, conv.sample_id))
            rows.append({"system": s.name, "conversation": conv.sample_id, "at": now, **s.counts()})
        stats = _collect_reflection_stats(systems)
        if journal is not None:
            codec = StoredCodec()  # fresh stores per conversation: each unit stands alone
            journal.append({"unit": index, "id": conv.sample_id, "systems": [s.name for s in systems],
                            "queries": [encode_query(q, codec) for q in queries],
                            "memory": [encode_row(r) for r in rows], "reflection_stats": stats})
        run.queries.extend(queries)
        run.memory.extend(rows)
        _add_reflection_stats(run, stats)
        for s in systems:
            s.close()
    if run is None:
        raise ValueError("no conversation to replay")
    run.timing = {"total_s": time.perf_counter() - t0, "resumed_units": len(done)}
    return run


def _replay_episode(ep: Episode, order: int, now: datetime, systems: Sequence[ReplaySystem],
                    query_ids: set[str] | None, spent: dict[str, float]
                    ) -> tuple[list[QueryRecord], list[dict[str, Any]], dict[str, Any]]:
    """One episode: every system recalls (recorded when judged), then every system writes it."""
    judged = query_ids is None or ep.episode_id in query_ids
    queries: list[QueryRecord] = []
    for s in systems:
        start = time.perf_counter()
        injected = s.recall(ep.instruction, now)
        latency = time.perf_counter() - start
        if judged:
            queries.append(QueryRecord(s.name, ep.episode_id, order, injected,
                                       s.stored() if query_ids is not None else None, latency, now,
                                       ep.task_id or ep.episode_id))
        spent[s.name] += latency
    rows = []
    for s in systems:
        start = time.perf_counter()
        s.observe(ep, now)
        spent[s.name] += time.perf_counter() - start
        rows.append({"system": s.name, "order": order, "at": now, **s.counts()})
    outcome = {"order": order, "episode_id": ep.episode_id, "task_id": ep.task_id, "outcome": ep.outcome, "at": now}
    return queries, rows, outcome


# ---------------------------------------------------------------------- resume helpers
def _check_prefix(done: Sequence[Mapping[str, Any]], ids: Sequence[str]) -> None:
    """The journal's units must be the first units of this replay, in order."""
    if len(done) > len(ids):
        raise HindsightLabError(f"resume: the journal holds {len(done)} units but this replay has {len(ids)}")
    for unit, expected in zip(done, ids):
        if unit.get("id") != expected:
            raise HindsightLabError(f"resume: journal unit {unit.get('unit')} is {unit.get('id')!r}, but this "
                                    f"replay's unit there is {expected!r}: the journal belongs to another replay")


def _maintain(systems: Sequence[ReplaySystem], day: Any, now: datetime) -> Any:
    """``maintain`` at each day boundary of the replay clock; returns the new day."""
    if day is not None and now.date() != day:
        for s in systems:
            s.maintain(now)
    return now.date()


def _journal_reflectors(systems: Sequence[ReplaySystem]) -> dict[str, JournalingReflector]:
    out = {}
    for s in systems:
        wrap = getattr(s, "wrap_reflector", None)
        if wrap is not None:
            out[s.name] = wrap(lambda inner, name=s.name: JournalingReflector(inner, name))
    return out


def _restore_episode_unit(run: ReplayRun, unit: Mapping[str, Any], codec: StoredCodec) -> list[QueryRecord]:
    queries = [decode_query(q, codec) for q in unit["queries"]]
    run.queries.extend(queries)
    run.memory.extend(decode_row(r) for r in unit["memory"])
    run.outcomes.append(decode_row(unit["outcome"]))
    return queries


def _restore_conversation_unit(run: ReplayRun, unit: Mapping[str, Any]) -> None:
    codec = StoredCodec()
    run.queries.extend(decode_query(q, codec) for q in unit["queries"])
    run.memory.extend(decode_row(r) for r in unit["memory"])
    _add_reflection_stats(run, unit["reflection_stats"])


def _rederive(ep: Episode, now: datetime, systems: Sequence[ReplaySystem], unit: Mapping[str, Any],
              restored: Sequence[QueryRecord], reflectors: Mapping[str, JournalingReflector],
              recall_again: Mapping[str, bool]) -> None:
    """Bring every system to the state it had after this journaled episode."""
    journaled = {q.system: q for q in restored}
    for s in systems:
        if recall_again[s.name]:  # for its side effects; the journal keeps what the killed run injected
            injected = s.recall(ep.instruction, now)
            if s.name in journaled and _signature(injected) != _signature(journaled[s.name].injected):
                logger.warning("resume: re-deriving %r, system %r recalled something else than the journal holds: "
                               "this replay is not deterministic, so the resumed metrics are those of another "
                               "uninterrupted run, not of the killed one", ep.episode_id, s.name)
    for s in systems:
        rec = reflectors.get(s.name)
        if rec is not None:
            rec.replay(unit["reflections"].get(s.name, []))
        s.observe(ep, now)
        if rec is not None:
            rec.done_replaying(ep.episode_id)


def _signature(injected: Sequence[Injected]) -> list[tuple[str, tuple[str, ...], int]]:
    """What judging reads of an injected list (memory ids are random per store, so they are left out)."""
    return [(i.kind, tuple(i.source_episode_ids), i.tokens) for i in injected]


def _verify(systems: Sequence[ReplaySystem], unit: Mapping[str, Any]) -> None:
    """The re-derived systems must hold what the journal says they held after ``unit``."""
    want = {r["system"]: {k: v for k, v in r.items() if k not in ("system", "order", "at")} for r in unit["memory"]}
    stats = unit.get("reflection_stats") or {}
    got_stats = _collect_reflection_stats(systems)
    for s in systems:
        got = s.counts()
        if got != want.get(s.name, got):
            raise HindsightLabError(f"resume: after re-deriving {unit['id']!r}, system {s.name!r} holds {got}, the "
                                    f"journal {want[s.name]}: the replay is not deterministic; replay without "
                                    "--resume")
        if s.name in stats and as_json(got_stats.get(s.name)) != stats[s.name]:
            raise HindsightLabError(f"resume: after re-deriving {unit['id']!r}, system {s.name!r} has reflection "
                                    f"counters {got_stats.get(s.name)}, the journal {stats[s.name]}")


def _collect_reflection_stats(systems: Sequence[ReplaySystem]) -> dict[str, dict[str, Any]]:
    """Each hindsight system's reflection counters (``MemorySystem.reflection_stats``)."""
    out = {}
    for s in systems:
        mem = getattr(s, "mem", None)
        if mem is not None:
            out[s.name] = mem.reflection_stats()
    return out


def _add_reflection_stats(run: ReplayRun, stats: Mapping[str, Mapping[str, Any]]) -> None:
    """Add counters to the run's (several conversations add up)."""
    for name, new in stats.items():
        new = copy.deepcopy(dict(new))
        prev = run.reflection.get(name)
        if prev is None:
            run.reflection[name] = new
            continue
        for key in ("episodes", "reflections", "promotions"):
            prev[key] += new[key]
        prev["trigger_rate"] = prev["reflections"] / prev["episodes"] if prev["episodes"] else 0.0
        for key in ("decisions", "rejections", "writes"):
            for k, v in new[key].items():
                prev[key][k] = prev[key].get(k, 0) + v


def _progress(items: list[Any], show: bool, desc: str) -> Iterable[Any]:
    if not show:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, leave=False)
