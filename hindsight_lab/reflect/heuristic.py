"""The offline heuristic reflector: deterministic rules from the compressed trajectory and related earlier episodes.

It never invents text: every rule names the tools and errors of the traces it saw.

- A **failure with an error**: the tool that failed, its error and what preceded it, and — when related episodes of
  the same task_type succeeded — the path they took.
- A **failure without an error**: the path that did not complete the task, against the successful path of related
  episodes (of the same task_type; else, when it changed state, a related success that took the same last step —
  where a task type is a whole set of tools, as in tau2 telecom, few runs share one; else any related success that
  went on to change state).
- A **success**: the tool order that worked for its task_type.

A failure's rule that learns from a successful path is worded by the step its check guards ("Before X, call A → B
first."), so that failures of other task types at the same step propose the same rule. Its check's tools before the
step are the ones that told success from failure among the runs at hand (the episode and its related ones that
reached the step), else the ones closest to the step. A success's rule names its whole order, and its check asks
for that whole order: a check of a few prerequisites would be followed by runs that take the steps in another order,
so the correct runs would confirm a wrong order that a lucky run proposed.

Counter-examples come from related episodes where the rule did not hold: the same order that still failed, another
order that also worked, or the task types of related runs of another type, each named once ("not for X tasks"; an
example request of that type would repeat in every injection of the rule what the episodes beside it say, at about a
hundred tokens a rule). Without any, the reflection is rejected by validation (``empty_counter_examples``) and never
promoted. Confidence grows with the related episodes that support the rule (successful alternatives, earlier runs
that failed the same way) and shrinks with those that contradict it. A trigger is attached when a state-changing
tool's verb appears in the instruction (for a light verb, the noun it takes: ``make_payment`` fires on "payment"). A
rule that asks for a tool order (the path that worked, or the one successful similar runs took) carries it as a check
(:mod:`hindsight_lab.trace.checks`), so later runs can verify it.

Examples:
    >>> from hindsight_lab.config import LabConfig
    >>> r = HeuristicReflector.from_config(LabConfig().reflect)
    >>> r.describe()["name"]
    'heuristic'
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Sequence

from ..config import ReflectConfig, ReflectionRulesConfig
from ..retrieve.paths import normalise
from .compress import CompressedEpisode
from .registry import register
from .schema import Reflection, Rejection, validate_reflection

_MAX_COUNTER = 3
CHECK_BEFORE = 2
"""How many of the tools called before a rule's step its check verifies (the ones closest to the step)."""


def _path(ep: CompressedEpisode) -> tuple[str, ...]:
    """Tools in order of first use, up to the last state-changing call (what came after did not shape the outcome);
    the whole sequence when nothing changed state."""
    tools = ep.tools
    changing = set(ep.state_changing)
    last = max((i for i, t in enumerate(tools) if t in changing), default=len(tools) - 1)
    return tuple(dict.fromkeys(tools[: last + 1]))


def _arrow(path: Sequence[str]) -> str:
    return " → ".join(path) if path else "no tool"


_ID = re.compile(r"\b(?=[\w-]*\d)[\w-]+\b")


def _generalise(text: str) -> str:
    """Replace run-specific identifiers and numbers (``HAT229``, ``gift_card_81903``, ``305``) by ``<id>`` so the
    same failure in two runs yields the same rule."""
    return _ID.sub("<id>", text)


def _order_check(path: Sequence[str], changing: set[str], before: int = CHECK_BEFORE,
                 runs: Sequence[CompressedEpisode] = ()) -> dict[str, Any]:
    """The rule's checkable form (:mod:`hindsight_lab.trace.checks`): the path's last state-changing tool is the
    step it guards, and up to ``before`` of the tools the path called before it the order it checks.

    Which ones: the prerequisites that told success from failure in ``runs`` (the episode and its related ones)
    that reached the step — a run that called the tool before the step succeeded more often than one that did not
    (:func:`_contrast`) — in path order; when no tool did, the tools closest to the step. None when nothing changed
    state or nothing precedes the step."""
    guarded = _guarded_step(path, changing)
    if guarded is None:
        return {}
    target, prior = guarded
    contrast = {t: _contrast(t, target, runs) for t in prior}
    telling = sorted((t for t in prior if contrast[t] > 0), key=lambda t: -contrast[t])[:before]
    chosen = [t for t in prior if t in telling] or list(prior[-before:])
    return {"check": {"kind": "order", "tools": [*chosen, target]}}


def _path_check(path: Sequence[str], changing: set[str]) -> dict[str, Any]:
    """A success rule's checkable form: its whole order, up to the path's last state-changing tool.

    The rule's text asks for the whole order ("call A → B → C in this order"), so its check must too: a check
    of the telling prerequisites alone (:func:`_order_check`) is followed by runs that take the steps in another
    order, and a rule drawn from a lucky success in the wrong order would be confirmed by every correct run.
    None when nothing changed state or nothing precedes the step."""
    guarded = _guarded_step(path, changing)
    if guarded is None:
        return {}
    target, prior = guarded
    return {"check": {"kind": "order", "tools": [*prior, target]}}


def _guarded_step(path: Sequence[str], changing: set[str]) -> tuple[str, list[str]] | None:
    """The step a rule drawn from ``path`` guards, its last state-changing tool, and the tools called before it;
    None when nothing changed state or nothing precedes the step."""
    target = next((t for t in reversed(path) if t in changing), None)
    if target is None or path.index(target) == 0:
        return None
    return target, list(path[:path.index(target)])


def _step_rule(check: dict[str, Any]) -> str:
    """A rule about the step its check guards: "Before X, call A → B first."."""
    *prior, target = check["check"]["tools"]
    return f"Before {target}, call {_arrow(prior)} first."


def _contrast(tool: str, target: str, runs: Sequence[CompressedEpisode]) -> float:
    """How much more often the ``runs`` that reached ``target`` succeeded when they had called ``tool`` before it
    than when they had not, each rate with one success and one failure added (Laplace): 0 without evidence."""
    counts = {True: [0, 0], False: [0, 0]}
    for r in runs:
        if target in r.tools:
            followed = tool in r.tools[:r.tools.index(target)]
            counts[followed][r.outcome == "success"] += 1
    (fx, fo), (ix, io) = counts[True], counts[False]
    if not (fo + fx) or not (io + ix):
        return 0.0
    return (fo + 1) / (fo + fx + 2) - (io + 1) / (io + ix + 2)


def _changing(ep: CompressedEpisode, related: Sequence[CompressedEpisode]) -> set[str]:
    """Tools that changed state in the episode or its related ones (the same names, the same reading)."""
    return set(ep.state_changing).union(*(r.state_changing for r in related))


LIGHT_VERBS = frozenset({"make", "do", "have", "take", "give", "get", "put", "set", "go", "keep", "let"})
"""English light verbs (Jespersen's term): their meaning comes from the noun they take ("make a payment", "take a
seat"), so alone they match requests about anything ("make sure", "make a call")."""


def _telling_word(tool: str) -> str | None:
    """The word of a tool's name a request that needs the tool would use: its verb (``cancel_reservation``:
    ``cancel``), or for a light verb (:data:`LIGHT_VERBS`) the noun it takes (``make_payment``: ``payment``).

    Examples:
        >>> _telling_word("cancel_reservation"), _telling_word("make_payment"), _telling_word("make")
        ('cancel', 'payment', None)
    """
    parts = [p for p in re.split(r"[_\W]+", tool.lower()) if p]
    if not parts:
        return None
    if parts[0] not in LIGHT_VERBS:
        return parts[0]
    return parts[1] if len(parts) > 1 else None


def _short(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


@register("heuristic")
class HeuristicReflector:
    """Offline, deterministic reflector (the default)."""

    def __init__(self, rules: ReflectionRulesConfig | None = None) -> None:
        self.rules = rules

    @classmethod
    def from_config(cls, cfg: ReflectConfig) -> "HeuristicReflector":
        return cls(rules=cfg.rules)

    def describe(self) -> dict[str, Any]:
        return {"name": "heuristic", "args": {}}

    def reflect_batch(self, items: Sequence[tuple[CompressedEpisode, Sequence[CompressedEpisode]]]
                      ) -> list[Reflection | Rejection]:
        return [self.reflect(ep, related) for ep, related in items]

    def reflect(self, ep: CompressedEpisode, related: Sequence[CompressedEpisode]) -> Reflection | Rejection:
        tt = ep.task_type or "untyped"
        same = [r for r in related if (r.task_type or "untyped") == tt and r.episode_id != ep.episode_id]
        others = [r for r in related if (r.task_type or "untyped") != tt]
        succ_paths = Counter(_path(r) for r in same if r.outcome == "success")
        if ep.outcome == "success":
            draft = self._success(ep, tt, same, succ_paths)
        else:
            draft = self._failure(ep, tt, same, related, succ_paths)
        if "nothing" in draft:
            return Rejection("nothing_to_learn", draft["nothing"], "", ep.episode_id)
        counter = draft.pop("counter")
        scope = dict.fromkeys(f"not for {r.task_type or 'untyped'} tasks" for r in others)
        counter += list(scope)[: max(0, _MAX_COUNTER - len(counter))]
        draft.update(task_type=tt, outcome=ep.outcome, counter_examples=counter[:_MAX_COUNTER],
                     confidence=round(min(0.95, max(0.2, draft["confidence"])), 3))
        trigger = self._trigger(ep)
        if trigger:
            draft["trigger"] = trigger
        return validate_reflection(draft, self.rules or ReflectionRulesConfig(), episode_id=ep.episode_id)

    # ------------------------------------------------------------------ rule drafts
    @staticmethod
    def _success(ep: CompressedEpisode, tt: str, same: list[CompressedEpisode], succ_paths: Counter
                 ) -> dict[str, Any]:
        path = _path(ep)
        support = succ_paths.get(path, 0)
        failed_same_path = [r for r in same if r.outcome != "success" and _path(r) == path]
        other_ok = [(p, n) for p, n in succ_paths.most_common() if p != path]
        counter = [f"{r.episode_id} followed the same order and still failed"
                   + (f" ({_short(r.errors[0][2], 50)})" if r.errors else "") for r in failed_same_path]
        counter += [f"another run succeeded with {_arrow(p)}" for p, _ in other_ok]
        return {"key_decision": f"called {_arrow(path)} in this order",
                "why_it_worked_or_failed": f"the {tt} task completed after {_arrow(path)}"
                                           + (f"; {support} similar run(s) succeeded the same way" if support else ""),
                "reusable_rule": f"For {tt} tasks, call {_arrow(path)} in this order.",
                "confidence": 0.55 + 0.1 * support - 0.1 * len(failed_same_path), "counter": counter,
                **_path_check(path, set(ep.state_changing))}

    @staticmethod
    def _failure(ep: CompressedEpisode, tt: str, same: list[CompressedEpisode],
                 related: Sequence[CompressedEpisode], succ_paths: Counter) -> dict[str, Any]:
        path = _path(ep)
        alt, alt_n = next(((p, n) for p, n in succ_paths.most_common() if p != path), (None, 0))
        if alt is None and not ep.state_changing:  # it stopped short: learn from a related run that changed state
            alt = next((_path(r) for r in related if r.outcome == "success" and r.state_changing
                        and _path(r) != path), None)
            alt_n = 1 if alt else 0
        elif alt is None:  # no success of its type: related successes that took the same last step
            step = ep.state_changing[-1]
            reached = Counter(_path(r) for r in related if r.outcome == "success" and step in r.state_changing
                              and _path(r) != path)
            alt, alt_n = next(iter(reached.most_common(1)), (None, 0))
        if not path and alt is None:
            return {"nothing": "no tool call to learn from, and no related run that succeeded"}
        if ep.errors:
            step, tool, err = ep.errors[0]
            before = [t for t in path[: path.index(tool)]] if tool in path else []
            prep = _arrow(before[-2:]) if before else "no preparation"
            worked = [r for r in same if r.outcome == "success" and tool in r.tools and not r.errors]
            repeats = [r for r in same if r.outcome != "success" and r.errors and r.errors[0][1] == tool]
            counter = [f"{r.episode_id} called {tool} without this error" for r in worked]
            rule = f"For {tt} tasks, {tool} failed ({_short(_generalise(err), 60)}) when called after {prep}"
            rule += f"; successful similar runs called {_arrow(alt)}." if alt else \
                f"; check what {tool} requires before calling it."
            return {"key_decision": f"called {tool} at step {step}",
                    "why_it_worked_or_failed": f"{tool} returned the error: {_short(err, 120)}",
                    "reusable_rule": rule, "counter": counter,
                    "confidence": (0.5 + 0.1 * alt_n if alt else 0.45) + 0.05 * len(repeats),
                    **_order_check(alt or (), _changing(ep, related), runs=[ep, *related])}
        same_path_ok = [r for r in same if r.outcome == "success" and _path(r) == path]
        counter = [f"{r.episode_id} followed the same order and succeeded" for r in same_path_ok]
        check = _order_check(alt or (), _changing(ep, related), runs=[ep, *related])
        if alt and check:
            rule = _step_rule(check)
        elif alt:
            rule = f"For {tt} tasks, {_arrow(path)} did not complete the task; successful similar runs called " \
                   f"{_arrow(alt)}."
        else:
            target = ep.state_changing[-1] if ep.state_changing else (path[-1] if path else "the last step")
            rule = f"For {tt} tasks, {_arrow(path)} ended in failure; verify the arguments of " \
                   f"{target} against the request before calling it."
        return {"key_decision": f"stopped after {path[-1] if path else 'no tool call'}",
                "why_it_worked_or_failed": "the final state did not match what the user asked for",
                "reusable_rule": rule,
                "confidence": (0.5 + 0.1 * alt_n - 0.1 * len(same_path_ok)) if alt else 0.4, "counter": counter,
                **check}

    @staticmethod
    def _trigger(ep: CompressedEpisode) -> dict[str, list[str]] | None:
        words = set(normalise(ep.instruction).split())
        found = []
        for tool in ep.state_changing:
            word = _telling_word(tool)
            if word and word in words and word not in found:
                found.append(word)
        return {"any": found, "all": [], "task_types": []} if found else None
