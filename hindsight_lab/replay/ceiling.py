"""What recorded traces can support: how many tool-level rules predict success **within** a task.

A promoted rule's lift is tested against a null that shuffles outcomes among the runs of each task
(:mod:`.lift`): a rule passes only if, among runs of one task, those that follow it succeed more often. Whether a
dataset holds such rules at all can be read from the traces alone, before any memory runs. For every rule of a
form — ``order`` (one tool before another: the :class:`~hindsight_lab.trace.checks.Check` a reflector writes, with
one prerequisite), and two forms no check expresses yet, ``call`` (call a tool at all) and ``avoid`` (never call
it) — the pairs of runs of one task that the rule tells apart are counted: one run followed it and the other did
not, and one succeeded and the other failed. The pair **agrees** when the run that followed succeeded. With a
uniform prior on the chance ``θ`` that a pair agrees, a rule is **supported** when ``P(θ > ½)`` is above the
promotion bar (``promotion.min_mean_confidence``) and its agreeing pairs come from at least ``promotion.min_hits``
tasks. The lift compares runs of one source agent, so a supported rule must also have, in some source, runs that
followed it and runs that did not: in a cross-agent replay with one run of each agent per task, a rule that only
marks the better agent's habits has agreeing pairs but nothing to compare.

The count is an optimistic ceiling: every rule of the form is tried on the whole dataset at once (many tries, some
pass by chance), where a memory sees runs one at a time and only the rules its reflector proposes. A dataset with no
supported rule of a form cannot give promoted rules of that form a lift above the within-task null, however good the
reflector. Tasks are told apart by the dataset's task ids: this is judging-side analysis, never read by a memory.

Examples:
    >>> from hindsight_lab.replay.lift import Run
    >>> runs = [Run(f"{t}{i}", t, "", 0, tools, ok) for t in ("a", "b", "c")
    ...         for i, (tools, ok) in enumerate([(("get", "pay"), True), (("pay",), False)])]
    >>> rule = within_task_support(runs, lambda r: "pay" in r.tools, lambda r: "get" in r.tools[:r.tools.index("pay")])
    >>> rule.agree, rule.disagree, rule.tasks, round(rule.probability, 3)
    (3, 0, 3, 0.938)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations, permutations
from typing import Any, Callable, Sequence

from ..memory.verify import agree_probability, pair_vote
from ..trace.checks import Check
from .lift import Run, runs_of

#: The rule forms counted, in report order; ``order`` is the only one a rule's check can express today.
FORMS: tuple[str, ...] = ("order", "call", "avoid")


@dataclass(frozen=True)
class Support:
    """A rule's within-task evidence: agreeing and disagreeing pairs, the tasks of the agreeing ones, and whether
    some source agent has runs that followed it and runs that did not (``compared``: the lift compares runs of one
    source, so a rule that only marks one agent's habits compares nothing)."""

    agree: int
    disagree: int
    tasks: int
    compared: bool = True

    @property
    def probability(self) -> float:
        """``P(θ > ½)`` for ``θ ~ Beta(1 + agree, 1 + disagree)`` (what ``promotion.evidence: within_task`` reads,
        :func:`~hindsight_lab.memory.verify.agree_probability`)."""
        return agree_probability(self.agree, self.disagree)


def within_task_support(runs: Sequence[Run], applies: Callable[[Run], bool],
                        followed: Callable[[Run], bool]) -> Support:
    """Count the pairs of runs of one task, both of which the rule ``applies`` to, that it tells apart (one
    ``followed`` it, one succeeded)."""
    by_task: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    by_source: dict[str, set[bool]] = defaultdict(set)
    for r in runs:
        if applies(r):
            f = followed(r)
            by_task[r.task].append((f, r.success))
            by_source[r.source].add(f)
    agree = disagree = 0
    tasks = set()
    for task, rows in by_task.items():
        for first, second in combinations(rows, 2):
            vote = pair_vote(first, second)
            if vote > 0:
                agree += 1
                tasks.add(task)
            elif vote < 0:
                disagree += 1
    return Support(agree, disagree, len(tasks), any(len(v) == 2 for v in by_source.values()))


def _rules(tools: Sequence[str]) -> list[tuple[str, str, Callable[[Run], bool], Callable[[Run], bool]]]:
    """Every rule of every form over ``tools``: (form, text, applies, followed)."""
    out: list[tuple[str, str, Callable[[Run], bool], Callable[[Run], bool]]] = []
    for a, b in permutations(tools, 2):
        check = Check((a, b))
        out.append(("order", f"Before {b}, call {a} first.", lambda r, c=check: c.reaches(r.tools),
                    lambda r, c=check: c.followed(r.tools)))
    for t in tools:
        out.append(("call", f"Call {t}.", lambda r: True, lambda r, t=t: t in r.tools))
        out.append(("avoid", f"Never call {t}.", lambda r: True, lambda r, t=t: t not in r.tools))
    return out


def rule_ceiling(episodes: Sequence[Any], *, min_confidence: float = 0.7, min_tasks: int = 3,
                 examples: int = 3) -> dict[str, Any]:
    """The ``rule_ceiling`` block of a replay's ``metrics.json``: per form, how many rules were tried and how many
    are supported within tasks (module docstring), with the best ``examples``; and how many tasks have both a
    success and a failure (only those can tell a rule's followers from the others). Failures of an outside cause
    are left out, as in the lift."""
    runs = runs_of(episodes, outside_failures=False)
    tools = sorted({t for r in runs for t in r.tools})
    found: dict[str, list[tuple[float, str, Support]]] = {form: [] for form in FORMS}
    tried = dict.fromkeys(FORMS, 0)
    for form, text, applies, followed in _rules(tools):
        tried[form] += 1
        s = within_task_support(runs, applies, followed)
        if s.probability > min_confidence and s.tasks >= min_tasks and s.compared:
            found[form].append((s.probability, text, s))
    outcomes: dict[str, set[bool]] = defaultdict(set)
    for r in runs:
        outcomes[r.task].add(r.success)
    forms = {}
    for form in FORMS:
        best = sorted(found[form], key=lambda x: (-x[0], x[1]))[:examples]
        forms[form] = {"tried": tried[form], "supported": len(found[form]),
                       "examples": [{"rule": text, "agree": s.agree, "disagree": s.disagree, "tasks": s.tasks,
                                     "probability": round(p, 4)} for p, text, s in best]}
    return {"tasks": len(outcomes), "tasks_with_both_outcomes": sum(len(v) == 2 for v in outcomes.values()),
            "min_confidence": min_confidence, "min_tasks": min_tasks, "forms": forms}
