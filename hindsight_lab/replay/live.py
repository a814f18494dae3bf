"""A live environment: tasks with traps, a scripted agent that reads injected memories as text, and memory systems
that each learn from the runs of their own agent.

This module owns the environment (:class:`LiveEnv`: the task stream, the tool order each task requires and when
that changes, the seeded chance events), the agent (:func:`read_hints`, :func:`plan_calls`), the rendering of what
a system injected into the text the agent reads (:func:`injected_text`) and the run loop with its report
(:func:`run_live`, :class:`LiveReport`).

For each task, in order, and for every system: the system recalls with the task's instruction; what it injected is
rendered with the systems' own renderer (:func:`~hindsight_lab.retrieve.inject.render`, the same for every
system, episode summaries and rules alike); the agent reads that text and either follows the first tool order it
finds there (a rule such as "call verify_identity before issue_refund", or the tool path of a run that succeeded)
or, without one, its default path, which skips the task's prerequisite and hits the trap; the environment decides
success or failure; the resulting episode (steps, the error, the outcome, ``failure_cause="strategy"``) is observed
by that system only. A failed task is retried (a near-identical instruction) while its user's patience lasts.

Chance is shared: the draws of attempt ``a`` of task ``i`` (exploring, the order an exploration tries, a lucky
success) are the same for every system, so systems differ only by what their memory made the agent do.

- **Traps shared across task types**: refunds, cancellations, address changes and password resets all need
  ``verify_identity`` first; bookings and reschedules need ``hold_slot`` first. The agent generalises a
  prerequisite it reads about ("X before <some state-changing tool>") to its own task.
- **Lucky successes**: a wrong order succeeds with probability ``p_lucky``; those episodes are marked and any L3 rule
  whose sources include one is reported.
- **A policy change**: after ``policy_change_at`` (a share of the run) the ``booking`` order flips
  (``confirm_booking`` before ``hold_slot``).
- **Near-duplicate retries**: failed tasks come back with the same instruction and a short note.

Examples:
    >>> read_hints("For refund tasks, call lookup_order → verify_identity → issue_refund in this order.")[-1]
    Hint(before='verify_identity', after='issue_refund')
    >>> read_hints("Task: refund 4 | tools: lookup_order → issue_refund | error at issue_refund | outcome: failure")
    []
"""

from __future__ import annotations

import logging
import random
import re
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple, Sequence

from ..datasets.synthetic import (
    READ_ONLY_TOOLS,
    START,
    TASK_TYPES,
    TRAP_TYPES,
    TaskType,
    build_episode,
    draw_entities,
)
from ..trace import Episode

logger = logging.getLogger(__name__)

FLIP_TYPE = "booking"
"""The task type whose required order flips at the policy change."""

ALL_TOOLS: frozenset[str] = frozenset(t for tt in TASK_TYPES.values() for t in tt.tools)
"""Every tool name of the catalogue: the words the agent recognises as tools."""

_RETRY_NOTES = (" Trying again.", " Second request.", " Still not done, please retry.", " Retry.")


# ---------------------------------------------------------------------------------------------------- the agent
class Hint(NamedTuple):
    """``before`` must be called before ``after``; ``after == "*"``: before any state-changing call."""

    before: str
    after: str


_NEGATIVE = re.compile(r"\b(fail\w*|errors?|did not|didn't|not complete|does not hold|refused|rejected|never|"
                       r"don't|do not|avoid|wrong|not for|unsuccessful)\b", re.I)
_FAILED_RUN = re.compile(r"\boutcome:\s*(failure|partial)\b", re.I)
_PAREN = re.compile(r"\(([^()]*)\)")
_CLAUSE = re.compile(r"[;|\n]|(?<=[.!?])\s+")
_LIST_HEADER = re.compile(r"\b(?:does not hold when|exceptions?|counter-?examples?)\s*:", re.I)
_CHAIN = re.compile(r"^\s*(?:→|->|=>|,?\s*then|,?\s*and then)\s*$", re.I)
_BEFORE = re.compile(r"\b(before|then|prior to|first)\b", re.I)
_AFTER = re.compile(r"\bafter\b", re.I)
_FIRST_OF_ALL = re.compile(r"^\s*(?:first\b|before\s+(?![A-Za-z]\w*_))", re.I)


def _clauses(line: str) -> list[str]:
    """Parenthesised parts (innermost first) become clauses of their own; the rest is split at ``;``, ``|`` and
    sentence ends."""
    parts: list[str] = []
    while True:
        inner = _PAREN.findall(line)
        if not inner:
            break
        parts += inner
        line = _PAREN.sub(" ", line)
    return [c for part in [line, *parts] for c in _CLAUSE.split(_LIST_HEADER.sub(";", part)) if c.strip()]


def _pairs(clause: str, tools: frozenset[str]) -> list[Hint]:
    found = [(m.start(), m.end(), m.group(0)) for m in re.finditer(r"[A-Za-z][\w]*", clause) if m.group(0) in tools]
    out: list[Hint] = []
    chain: list[str] = []
    for k, (start, end, name) in enumerate(found):
        if k == 0:
            chain = [name]
        else:
            between = clause[found[k - 1][1]:start]
            if _CHAIN.match(between):
                chain.append(name)
            else:
                out += _chain_pairs(chain)
                chain = [name]
                prev = found[k - 1][2]
                if _AFTER.search(between):
                    out.append(Hint(name, prev))
                elif _BEFORE.search(between):
                    out.append(Hint(prev, name))
        if _FIRST_OF_ALL.match(clause[end:]) and name not in READ_ONLY_TOOLS:
            out.append(Hint(name, "*"))
    return out + _chain_pairs(chain)


def _chain_pairs(chain: list[str]) -> list[Hint]:
    return [Hint(a, b) for i, a in enumerate(chain) for b in chain[i + 1:] if a != b]


def read_hints(text: str, tools: frozenset[str] = ALL_TOOLS) -> list[Hint]:
    """Every tool order a text states, in text order; the same reading for every system's memories.

    A clause states an order with an arrow chain (``a → b → c``), ``a before b``, ``a then b`` or ``b after a``;
    ``a first`` / ``a before <something that is not a tool>`` says that ``a`` comes before any state change.
    Clauses that speak of failure (``failed``, ``error``, ``does not hold``, ``not for`` …) state nothing, and the
    tool path of a run whose ``outcome:`` is a failure is not a hint: only orders that worked, or are prescribed,
    count. Parenthesised parts (e.g. a rule's counter-examples) are read as clauses of their own, and a list
    header such as ``does not hold when:`` only separates the items after it, each read on its own.

    Examples:
        >>> read_hints("Identity first: verify_identity before touching money.")
        [Hint(before='verify_identity', after='*')]
        >>> read_hints("issue_refund after verify_identity")
        [Hint(before='verify_identity', after='issue_refund')]
        >>> read_hints("x failed (does not hold when: another run succeeded with hold_slot → confirm_booking)")
        [Hint(before='hold_slot', after='confirm_booking')]
    """
    out: list[Hint] = []
    for line in text.splitlines() or [text]:
        failed_run = bool(_FAILED_RUN.search(line))
        for clause in _clauses(line):
            if _NEGATIVE.search(clause) or (failed_run and re.match(r"\s*tools:", clause)):
                continue
            out += _pairs(clause, tools)
    return out


class Plan(NamedTuple):
    """The state-changing calls the agent will make, and why."""

    calls: tuple[str, ...]
    source: str  # "hint", "explore" or "default"
    hint: Hint | None = None


def plan_calls(task: TaskType, text: str, *, explore: bool, order_draw: float) -> Plan:
    """What the scripted agent does for ``task`` after reading ``text``.

    - ``explore`` (a seeded draw, the same for every system): it ignores memory and tries both of its tools in a
      random order (``order_draw < 0.5``: prerequisite first).
    - else the first hint in ``text`` about its own tools gives their order; a hint that its prerequisite comes
      before some other state-changing tool (or before ``"*"``) means: prerequisite first.
    - else its default path: the main action alone, which skips the prerequisite (the trap).

    Examples:
        >>> t = TASK_TYPES["password_reset"]
        >>> p = plan_calls(t, "call lookup_order → verify_identity → issue_refund", explore=False, order_draw=0.9)
        >>> p.calls, p.source, p.hint
        (('verify_identity', 'reset_password'), 'hint', Hint(before='verify_identity', after='issue_refund'))
        >>> plan_calls(t, "", explore=False, order_draw=0.9).calls
        ('reset_password',)
    """
    pre, act = task.steps
    if explore:
        return Plan((pre, act) if order_draw < 0.5 else (act, pre), "explore")
    own = {pre, act}
    for hint in read_hints(text):
        if hint.before in own and hint.after in own:
            return Plan((hint.before, hint.after), "hint", hint)
        if hint.before == pre and (hint.after == "*" or (hint.after not in READ_ONLY_TOOLS and hint.after != pre)):
            return Plan((pre, act), "hint", hint)
    return Plan((act,), "default")


# ---------------------------------------------------------------------------------------------------- environment
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


# ---------------------------------------------------------------------------------------------------- rendering
def injected_records(system: Any, injected: Sequence[Any]) -> list[Any]:
    """The memory records behind a system's injected list, in its order.

    :class:`~hindsight_lab.replay.systems.Injected` carries ids, not text, so the records are looked up in the
    system itself: a ``hindsight`` system's memory (``system.mem.get``), a store-everything baseline's
    ``records``; a system without memory injects nothing.
    """
    if not injected:
        return []
    mem = getattr(system, "mem", None)
    if mem is not None:
        return [mem.get(i.memory_id) for i in injected]
    by_id = {r.id: r for r in getattr(system, "records", [])}
    return [by_id[i.memory_id] for i in injected]


def injected_text(system: Any, injected: Sequence[Any], count: Any) -> str:
    """The injection block exactly as the systems render it (:func:`~hindsight_lab.retrieve.inject.render`):
    rules as general rules first, then similar past tasks, each line with its tag."""
    from ..retrieve.inject import render

    records = injected_records(system, injected)
    if not records:
        return ""
    return render(records, count, [i.tokens for i in injected]).text


# ---------------------------------------------------------------------------------------------------- the run
@dataclass
class LiveReport:
    """What a live run did.

    Attributes:
        attempts: one row per attempt and system: ``system``, ``task``, ``attempt``, ``task_type``, ``at``,
            ``plan`` (hint / explore / default), ``hint``, ``calls``, ``success``, ``lucky``, ``episode_id``,
            ``injected``.
        memory: per system, after each task: ``L2`` and ``L3`` counts.
        lucky_ids: per system, the episode ids of its lucky successes.
        lucky_in_l3: per system, the L3 rules whose source episodes include a lucky success (id → lucky sources).
        lucky_in_l2: the same for L2 candidate rules (for context).
        retired: per system, the episode ids of the stored successes that later refusals retired
            (:mod:`hindsight_lab.evidence`).
        env: the environment's settings.
    """

    attempts: list[dict[str, Any]] = field(default_factory=list)
    memory: list[dict[str, Any]] = field(default_factory=list)
    lucky_ids: dict[str, list[str]] = field(default_factory=dict)
    lucky_in_l3: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    lucky_in_l2: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    retired: dict[str, list[str]] = field(default_factory=dict)
    env: dict[str, Any] = field(default_factory=dict)

    @property
    def systems(self) -> list[str]:
        return list(dict.fromkeys(r["system"] for r in self.attempts))

    def outcomes(self, system: str, *, first_only: bool = True) -> list[bool]:
        """Success of each task's first attempt (or of every attempt), in order."""
        return [r["success"] for r in self.attempts if r["system"] == system and (r["attempt"] == 0 or not first_only)]

    def success_trend(self, window: int = 30, *, first_only: bool = True) -> "Any":
        """Rolling success rate per system (a DataFrame indexed by task or attempt order)."""
        import pandas as pd

        return pd.DataFrame({s: pd.Series(self.outcomes(s, first_only=first_only), dtype=float)
                             .rolling(window, min_periods=1).mean() for s in self.systems})

    def rate(self, system: str, part: slice = slice(None), *, first_only: bool = True) -> float:
        xs = self.outcomes(system, first_only=first_only)[part]
        return sum(xs) / len(xs) if xs else float("nan")

    def summary(self, window: int | None = None) -> dict[str, dict[str, Any]]:
        """Per system: first-attempt success overall, in the first and the final window (a quarter of the run by
        default), all-attempt success, attempts, L3 rules at the end, lucky successes, lucky L3 rules and the
        successes retired by later refusals."""
        out = {}
        for s in self.systems:
            n = len(self.outcomes(s))
            w = window or max(1, n // 4)
            mem = [m for m in self.memory if m["system"] == s]
            out[s] = {"tasks": n, "success": self.rate(s), "first_window": self.rate(s, slice(0, w)),
                      "final_window": self.rate(s, slice(n - w, n)),
                      "success_all_attempts": self.rate(s, first_only=False),
                      "attempts": len(self.outcomes(s, first_only=False)),
                      "L3_final": mem[-1]["L3"] if mem else 0, "lucky_successes": len(self.lucky_ids.get(s, [])),
                      "lucky_rules_in_L3": len(self.lucky_in_l3.get(s, {})), "retired": len(self.retired.get(s, []))}
        return out

    def layer_counts(self, layer: str = "L3") -> "Any":
        """Records of a layer per system after each task (a task × system DataFrame): L3 rules over time."""
        return self.memory_frame().pivot(index="task", columns="system", values=layer)

    def memory_frame(self) -> "Any":
        import pandas as pd

        return pd.DataFrame(self.memory)


def _retired(system: Any) -> list[str]:
    """Episode ids of the successes the system retired after later refusals (:mod:`hindsight_lab.evidence`)."""
    mem = getattr(system, "mem", None)
    return [] if mem is None else sorted(r.source_episode_ids[0] for r in mem.records(archived=True)
                                         if (r.attrs or {}).get("retired_by") and r.source_episode_ids)


def _lucky_sources(system: Any, lucky: set[str], kind: str) -> dict[str, list[str]]:
    mem = getattr(system, "mem", None)
    if mem is None or not lucky:
        return {}
    return {r.id: sorted(set(r.source_episode_ids) & lucky) for r in mem.records(kind)
            if set(r.source_episode_ids) & lucky}


def run_live(systems_names: Sequence[str], *, n_tasks: int, seed: int = 0, config: Any = None,
             embedder: Any = None, top_k: int = 10, token_budget: int | None = None,
             workdir: str | Path | None = None, show_progress: bool = False, **env_options: Any) -> LiveReport:
    """Run the live environment with every system side by side (each with its own agent and store).

    Args:
        systems_names: replay system names (``none``, ``dense``, ``bm25``, ``hindsight``, …).
        n_tasks: tasks in the stream (retries come on top).
        seed: the environment's seed (:class:`LiveEnv`).
        config: the hindsight :class:`~hindsight_lab.config.LabConfig` (default config when None).
        embedder: shared by every system (default: the config's model).
        top_k: shared by every system; token_budget: shared (default: the config's).
        workdir: where the hindsight stores live (a temporary folder, removed after, when None).
        show_progress: a tqdm bar over tasks.
        **env_options: passed to :class:`LiveEnv` (``p_explore``, ``p_lucky``, ``policy_change_at`` …).

    Examples:
        >>> report = run_live(["none", "hindsight"], n_tasks=40, seed=0, embedder=minilm)  # doctest: +SKIP
        >>> report.summary()["hindsight"]["final_window"]  # doctest: +SKIP
    """
    from ..config import LabConfig
    from ..embed import TokenCounter, embedder_for
    from .systems import build_systems

    cfg = config or LabConfig()
    if embedder is None:
        embedder = embedder_for(cfg.embedder)
    budget = token_budget or cfg.retrieval.token_budget
    env = LiveEnv(n_tasks=n_tasks, seed=seed, **env_options)
    count = TokenCounter.for_embedder(embedder).count
    report = LiveReport(env={"n_tasks": n_tasks, "seed": seed, "policy_changed": env.policy_changed,
                             **{k: getattr(env, k) for k in ("p_explore", "p_lucky", "p_retry", "max_retries",
                                                              "tasks_per_day", "types")}})
    tasks = env.tasks()
    with tempfile.TemporaryDirectory(prefix="hindsight-live-") as tmp:
        systems = build_systems(systems_names, config=cfg, embedder=embedder, top_k=top_k, token_budget=budget,
                                root=str(workdir or tmp))
        try:
            day = None
            for task in _progress(tasks, show_progress):
                if day is not None and task.at.date() != day:
                    for s in systems:
                        s.maintain(task.at)
                day = task.at.date()
                for s in systems:
                    _run_task(env, s, task, count, report)
                    report.memory.append({"system": s.name, "task": task.index, "at": task.at, **s.counts()})
            for s in systems:
                report.retired[s.name] = _retired(s)
                lucky = set(report.lucky_ids.get(s.name, []))
                report.lucky_in_l3[s.name] = _lucky_sources(s, lucky, "rule")
                report.lucky_in_l2[s.name] = _lucky_sources(s, lucky, "candidate")
        finally:
            for s in systems:
                s.close()
    return report


def live_table(systems_names: Sequence[str], *, seeds: Sequence[int], n_tasks: int, config: Any = None,
               embedder: Any = None, top_k: int = 10, show_progress: bool = False, **env_options: Any) -> Any:
    """:func:`run_live` once per seed: a DataFrame with one row per seed and system (first-attempt success overall,
    in the first and the final quarter, all-attempt success, L3 rules at the end, lucky successes, lucky L3 rules,
    successes retired by later refusals) and, with several seeds, one ``mean`` row per system."""
    import pandas as pd

    from ..config import LabConfig
    from ..embed import embedder_for

    cfg = config or LabConfig()
    if embedder is None:
        embedder = embedder_for(cfg.embedder)
    rows = []
    for seed in seeds:
        report = run_live(systems_names, n_tasks=n_tasks, seed=seed, config=cfg, embedder=embedder, top_k=top_k,
                          show_progress=show_progress, **env_options)
        for system, v in report.summary().items():
            rows.append({"seed": seed, "system": system, "success": v["success"], "first_quarter": v["first_window"],
                         "final_quarter": v["final_window"], "all_attempts": v["success_all_attempts"],
                         "L3": v["L3_final"], "lucky": v["lucky_successes"], "lucky_in_L3": v["lucky_rules_in_L3"],
                         "retired": v["retired"]})
    table = pd.DataFrame(rows)
    if len(seeds) > 1:
        mean = table.drop(columns="seed").groupby("system", sort=False).mean().reset_index()
        table = pd.concat([table, mean.assign(seed="mean")], ignore_index=True)
    return table


def _run_task(env: LiveEnv, system: Any, task: LiveTask, count: Any, report: LiveReport) -> None:
    """Every attempt of one task for one system: recall → read → act → observe, until success or patience ends."""
    for attempt in range(task.patience + 1):
        at = env.time(task, attempt)
        injected = system.recall(env.instruction(task, attempt), at)
        text = injected_text(system, injected, count)
        draws = env.draws(task.index, attempt)
        plan = plan_calls(TASK_TYPES[task.task_type], text, explore=draws.explore, order_draw=draws.order)
        eid = f"{system.name}-t{task.index:04d}-a{attempt}"
        episode, lucky = env.execute(task, attempt, plan, eid, draws)
        system.observe(episode, at)
        if lucky:
            report.lucky_ids.setdefault(system.name, []).append(eid)
        ok = episode.outcome == "success"
        report.attempts.append({"system": system.name, "task": task.index, "attempt": attempt,
                                "task_type": task.task_type, "at": at, "plan": plan.source,
                                "hint": tuple(plan.hint) if plan.hint else None, "calls": plan.calls,
                                "success": ok, "lucky": lucky, "episode_id": eid, "injected": len(injected)})
        if ok:
            return


def _progress(items: list[Any], show: bool) -> Any:
    if not show:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc="live", leave=False)
