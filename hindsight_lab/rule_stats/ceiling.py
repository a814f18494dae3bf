"""What recorded traces can support: how many rules of a checkable form predict success **within** a task.

A promoted rule's lift is tested against a null that shuffles outcomes among the runs of each task
(:mod:`.lift`): a rule passes only if, among runs of one task, those that follow it succeed more often. Whether a
dataset holds such rules at all can be read from the traces alone, before any memory runs. For every rule of a
form — ``order`` (one tool before another: the :class:`~hindsight_lab.trace.checks.Check` a reflector writes, with
one prerequisite), and forms no check expresses yet, ``call`` (call a tool at all), ``avoid`` (never call it),
``stated`` and ``grounded`` (pass a tool's argument a value the user said, or one the user said or a tool returned:
:mod:`hindsight_lab.trace.arguments`) — the pairs of runs of one task that the rule tells apart are counted: one run
followed it and the other did not, and one succeeded and the other failed. The pair **agrees** when the run that
followed succeeded. A rule is **supported** when it clears the promotion bar as the memory reads it (:class:`Bar`):
``P(θ > ½)`` for the chance ``θ`` that a pair agrees, under the memory's prior (``promotion.prior_effect``), is above
``promotion.min_mean_confidence``, and its agreeing pairs come from at least ``promotion.min_hits`` tasks. The lift
compares runs of one source agent, so a supported rule must also have, in some source, runs that followed it and runs
that did not: in a cross-agent replay with one run of each agent per
task, a rule that only marks the better agent's habits has agreeing pairs but nothing to compare.

The count is an optimistic ceiling: every rule of the form is tried on the whole dataset at once, where a memory
sees runs one at a time and only the rules its reflector proposes. Many tries pass by chance, so each form also
says how many pass with the outcomes shuffled within tasks. A dataset with no more supported rules of a form than
chance gives cannot give promoted rules of that form a lift above the within-task null, however good the
reflector. Each form's ``forward`` replays an ideal memory, which sees the runs in order (:func:`rule_ceiling`).
Tasks are told apart by the dataset's task ids: this is judging-side analysis, never read by a memory.

Examples:
    >>> from hindsight_lab.rule_stats.lift import Run
    >>> runs = [Run(f"{t}{i}", t, "", 0, tools, ok) for t in ("a", "b", "c")
    ...         for i, (tools, ok) in enumerate([(("get", "pay"), True), (("pay",), False)])]
    >>> rule = within_task_support(runs, lambda r: "pay" in r.tools, lambda r: "get" in r.tools[:r.tools.index("pay")])
    >>> rule.agree, rule.disagree, rule.tasks, round(rule.probability(), 3), round(rule.probability(0.1), 3)
    (3, 0, 3, 0.938, 0.17)
    >>> rule.passes(Bar(prior_effect=1.0)), rule.passes(Bar())  # three pairs clear a uniform prior, not a sceptical one
    (True, False)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import permutations
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..memory.verify import CODES, CONFIRMS, agree_probability, helps_probability, pair_vote, run_code
from ..trace.arguments import Source, argument_sources
from ..trace.checks import Check
from .lift import (Run, RunTest, against_null, lift_over_time, null_lifts, pooled_lift, runs_of,
                   within_task_shuffles)

#: The rule forms counted, in report order; ``order`` is the only one a rule's check can express today.
FORMS: tuple[str, ...] = ("order", "call", "avoid", "stated", "grounded")


@dataclass(frozen=True)
class Bar:
    """The promotion bar (``promotion.*``): a confidence above ``min_confidence`` under a prior of ``prior_effect``
    on an effect (:mod:`hindsight_lab.memory.verify`), confirmed in ``min_tasks`` tasks or more."""

    min_confidence: float = 0.7
    min_tasks: int = 3
    prior_effect: float = 0.1

    @classmethod
    def of(cls, promotion: Any) -> "Bar":
        """The bar of a ``promotion`` config section."""
        return cls(promotion.min_mean_confidence, promotion.min_hits, promotion.prior_effect)


@dataclass(frozen=True)
class Support:
    """A rule's within-task evidence: agreeing and disagreeing pairs, the tasks of the agreeing ones, and whether
    some source agent has runs that followed it and runs that did not (``compared``: the lift compares runs of one
    source, so a rule that only marks one agent's habits compares nothing)."""

    agree: int
    disagree: int
    tasks: int
    compared: bool = True

    def probability(self, prior_effect: float = 1.0) -> float:
        """``P(θ > ½)`` under a prior of ``prior_effect`` on an effect (what ``promotion.evidence: within_task``
        reads, :func:`~hindsight_lab.memory.verify.agree_probability`)."""
        return agree_probability(self.agree, self.disagree, prior_effect)

    def passes(self, bar: Bar) -> bool:
        """Whether the rule is supported: it clears ``bar``, and some source has runs to compare."""
        return (self.tasks >= bar.min_tasks and self.compared
                and self.probability(bar.prior_effect) > bar.min_confidence)


class _Tally:
    """A rule's within-task pairs, counted as the runs it applies to arrive (each with whether it followed it)."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
        self.sources: dict[str, set[bool]] = defaultdict(set)
        self.agree = self.disagree = 0
        self.tasks: set[str] = set()

    def add(self, run: Run, followed: bool) -> None:
        row = (followed, run.success)
        for other in self.rows[run.task]:
            vote = pair_vote(other, row)
            self.agree, self.disagree = self.agree + (vote > 0), self.disagree + (vote < 0)
            if vote > 0:
                self.tasks.add(run.task)
        self.rows[run.task].append(row)
        self.sources[run.source].add(followed)

    @property
    def support(self) -> Support:
        return Support(self.agree, self.disagree, len(self.tasks), any(len(v) == 2 for v in self.sources.values()))


def within_task_support(runs: Sequence[Run], applies: Callable[[Run], bool],
                        followed: Callable[[Run], bool]) -> Support:
    """Count the pairs of runs of one task, both of which the rule ``applies`` to, that it tells apart (one
    ``followed`` it, one succeeded)."""
    return _Marks.of(runs, RunTest(applies, followed)).support(_outcomes(runs))


def _outcomes(runs: Sequence[Run]) -> np.ndarray:
    """Whether each run succeeded, as the flags :meth:`_Marks.support` reads."""
    return np.fromiter((r.success for r in runs), dtype=bool, count=len(runs))


@dataclass(frozen=True)
class _Marks:
    """A rule over a whole history, as counts can read it: the runs it applies to (``index``), the task of each
    (numbered), whether each followed it, and whether some source has runs that followed it and runs that did not.
    :meth:`support` counts its within-task pairs for any outcomes (the real ones or a shuffle) at once: in a task
    with ``a`` followers that succeeded and ``d`` others that failed, ``a·d`` pairs agree (as :class:`_Tally` finds
    them pair by pair)."""

    index: np.ndarray
    cell: np.ndarray
    tasks: int
    compared: bool

    @classmethod
    def of(cls, runs: Sequence[Run], test: RunTest) -> "_Marks":
        index = [i for i, r in enumerate(runs) if test.applies(r)]
        followed = [test.followed(runs[i]) for i in index]
        task_no: dict[str, int] = {}
        tasks = [task_no.setdefault(runs[i].task, len(task_no)) for i in index]
        by_source: dict[str, set[bool]] = defaultdict(set)
        for i, f in zip(index, followed):
            by_source[runs[i].source].add(f)
        cell = 4 * np.array(tasks, dtype=np.int64) + 2 * np.array(followed, dtype=np.int64)
        return cls(np.array(index, dtype=np.int64), cell, len(task_no), any(len(v) == 2 for v in by_source.values()))

    def support(self, success: np.ndarray) -> Support:
        """The rule's :class:`Support` when the runs ended as ``success`` says (one flag per run of the history)."""
        if not len(self.index):
            return Support(0, 0, 0, self.compared)
        counts = np.bincount(self.cell + success[self.index], minlength=4 * self.tasks).reshape(self.tasks, 4)
        agree = counts[:, 3] * counts[:, 0]  # followed and succeeded × did not follow and failed
        disagree = counts[:, 2] * counts[:, 1]
        return Support(int(agree.sum()), int(disagree.sum()), int(np.count_nonzero(agree)), self.compared)


def _rules(runs: Sequence[Run], sources: Mapping[str, Mapping[tuple[str, str], Source]]
           ) -> list[tuple[str, str, RunTest]]:
    """Every rule of every form over the tools and arguments of ``runs``: (form, text, test). ``sources``: episode id
    → where its argument values came from (:func:`~hindsight_lab.trace.arguments.argument_sources`)."""
    tools = sorted({t for r in runs for t in r.tools})
    out = [("order", f"Before {b}, call {a} first.", RunTest.of(Check((a, b)))) for a, b in permutations(tools, 2)]
    for t in tools:
        out.append(("call", f"Call {t}.", RunTest(lambda r: True, lambda r, t=t: t in r.tools)))
        out.append(("avoid", f"Never call {t}.", RunTest(lambda r: True, lambda r, t=t: t not in r.tools)))
    for tool, arg in sorted({key for r in runs for key in sources[r.episode_id]}):
        def applies(r: Run, key: tuple[str, str] = (tool, arg)) -> bool:
            return key in sources[r.episode_id]
        out.append(("stated", f"Call {tool} with the {arg} the user stated.",
                    RunTest(applies, lambda r, key=(tool, arg): sources[r.episode_id][key].stated)))
        out.append(("grounded", f"Call {tool} with a {arg} the user stated or a tool returned.",
                    RunTest(applies, lambda r, key=(tool, arg): sources[r.episode_id][key].grounded)))
    return out


def promoted_after(runs: Sequence[Run], test: RunTest, bar: Bar = Bar(), evidence: str = "within_task"
                   ) -> int | None:
    """The order of the run after which an ideal memory would promote the rule — the first run by which the runs so
    far clear ``bar`` — or None. ``evidence`` is what the bar reads, as ``promotion.evidence`` says: ``within_task``,
    the pairs of runs of one task the rule tells apart (the module's test); ``runs``, every run, by the success
    rates of those that followed it and of those that did not (:func:`~hindsight_lab.memory.verify.
    helps_probability`), confirmed in ``bar.min_tasks`` tasks and by a follower that succeeded, as the memory asks."""
    if evidence not in ("within_task", "runs"):
        raise ValueError(f"evidence: expected 'within_task' or 'runs', got {evidence!r}")
    tally = _Tally()
    codes = dict.fromkeys(CODES, 0)
    confirming: set[str] = set()
    for run in runs:
        if not test.applies(run):
            continue
        followed = test.followed(run)
        if evidence == "within_task":
            tally.add(run, followed)
            if tally.support.passes(bar):
                return run.order
            continue
        code = run_code(followed, run.success)
        codes[code] += 1
        if code in CONFIRMS:
            confirming.add(run.task)
        if (codes["fo"] and len(confirming) >= bar.min_tasks
                and helps_probability(codes, bar.prior_effect) > bar.min_confidence):
            return run.order
    return None


def forward_lift(runs: Sequence[Run], promoted: Sequence[tuple[RunTest, int]], *, seed: int = 0,
                 n: int = 1000) -> dict[str, Any]:
    """The pooled lift of ``promoted`` rules (each with the order of its promotion) on the runs after their
    promotion, with the lift's null (:func:`~.lift.null_lifts`): what a replay's lift block would read; and
    ``over_time``, the same lift as the history grows (:func:`~.lift.lift_over_time`)."""
    lift, compared = pooled_lift(promoted, runs)
    out: dict[str, Any] = {"promoted": len(promoted), "lift": lift if compared else None, "runs_compared": compared}
    if compared:
        out.update(against_null(lift, null_lifts(promoted, runs, seed, n)))
        out["over_time"] = lift_over_time(promoted, runs)
    return out


def rule_ceiling(episodes: Sequence[Any], bar: Bar = Bar(), *, examples: int = 3, shuffles: int = 100,
                 seed: int = 0) -> dict[str, Any]:
    """The ``rule_ceiling`` block of a replay's ``metrics.json``: per form, how many rules were tried and how many
    are supported within tasks (module docstring), with the best ``examples``; and how many tasks have both a
    success and a failure (only those can tell a rule's followers from the others). Failures of an outside cause
    are left out, as in the lift.

    Each form also says how many rules chance alone supports: the same count over ``shuffles`` shuffles of the
    outcomes among the runs of each task (the lift's null, :func:`~.lift.within_task_shuffles`), as ``chance_mean``,
    ``chance_p95`` and ``p_value`` (the share of shuffles, one added to each side, that support as many rules or
    more). Hundreds of rules are tried, so some pass by chance: a count no higher than chance's says the traces
    hold no rule of that form, only noise that looks like one.

    And each form's ``forward`` replays an ideal memory, which sees the runs in order: every rule of the form is
    proposed from the first run and promoted as soon as the runs so far support it (:func:`promoted_after`); its
    lift is then read on the later runs only, against the lift's null (:func:`forward_lift`). Still optimistic
    (every rule proposed at once, no reflector to miss one), but honest about time: a rule is judged on runs it
    has not seen, as a replay's lift judges promoted rules."""
    runs = runs_of(episodes, outside_failures=False)
    sources = {ep.episode_id: argument_sources(ep) for ep in episodes}
    tests = _rules(runs, sources)
    rules = [(form, text, _Marks.of(runs, test)) for form, text, test in tests]

    def supported(runs: Sequence[Run]) -> dict[str, list[tuple[float, str, Support]]]:
        found: dict[str, list[tuple[float, str, Support]]] = {form: [] for form in FORMS}
        success = _outcomes(runs)
        for form, text, marks in rules:
            s = marks.support(success)
            if s.passes(bar):
                found[form].append((s.probability(bar.prior_effect), text, s))
        return found

    found = supported(runs)
    counts = [supported(shuffled) for shuffled in within_task_shuffles(runs, seed, shuffles)]
    outcomes: dict[str, set[bool]] = defaultdict(set)
    for r in runs:
        outcomes[r.task].add(r.success)
    forms = {}
    for form in FORMS:
        best = sorted(found[form], key=lambda x: (-x[0], x[1]))[:examples]
        null = np.array([len(c[form]) for c in counts], dtype=float)
        forms[form] = {"tried": sum(f == form for f, _, _ in rules), "supported": len(found[form]),
                       "examples": [{"rule": text, "agree": s.agree, "disagree": s.disagree, "tasks": s.tasks,
                                     "probability": round(p, 4)} for p, text, s in best]}
        if shuffles:
            forms[form].update(chance_mean=float(null.mean()), chance_p95=float(np.percentile(null, 95)),
                               p_value=float((1 + np.sum(null >= len(found[form]))) / (1 + shuffles)))
        promoted = [(test, after) for f, _, test in tests if f == form
                    if (after := promoted_after(runs, test, bar)) is not None]
        forms[form]["forward"] = forward_lift(runs, promoted, seed=seed)
    return {"tasks": len(outcomes), "tasks_with_both_outcomes": sum(len(v) == 2 for v in outcomes.values()),
            "min_confidence": bar.min_confidence, "min_tasks": bar.min_tasks, "prior_effect": bar.prior_effect,
            "shuffles": shuffles, "forms": forms}
