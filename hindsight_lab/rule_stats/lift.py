"""The lift of promoted rules: do the runs that follow a rule succeed more often than those that do not?

Measured only on the episodes that come **after** a rule's promotion (never the runs that confirmed it), among those
that reach the step it guards (:class:`~hindsight_lab.trace.checks.Check`): the success rate of the runs that
followed it minus that of the runs that did not, per source agent (a cross-agent replay mixes agents of different
skill), pooled over rules and sources weighted by the runs compared. The interval resamples whole tasks; the null
shuffles outcomes among the runs of each task, which keeps every task's difficulty and breaks any link between
following a rule and succeeding. The null's mean (``null_mean``) is the lift that the tasks' difficulty alone gives:
when the runs that followed a rule were mostly in tasks that every run got right, a positive lift is no more than
that mean, and its p-value is high.

The recorded agents never saw the rules: the lift says whether a rule **predicts** success, not that following it
causes it. Cause is measured where an agent reads the memory — the live environment
(:mod:`hindsight_lab.scenarios.live`).

Examples:
    >>> from hindsight_lab.trace.checks import Check
    >>> runs = [Run("a", "t1", "x", 0, ("get", "pay"), True), Run("b", "t2", "x", 1, ("pay",), False),
    ...         Run("c", "t3", "x", 2, ("get", "pay"), True), Run("d", "t4", "x", 3, ("pay",), True)]
    >>> pooled_lift([(Check(("get", "pay")), -1)], runs)
    (0.5, 4)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from ..trace.checks import Check

NOTE = ("Measured on recorded runs whose agents never saw the rules: a positive lift says a rule predicts success, "
        "not that following it causes success (the live environment measures cause).")


@dataclass(frozen=True)
class Run:
    """One replayed episode as the lift needs it (judging side: its task id groups resamples and shuffles)."""

    episode_id: str
    task: str
    source: str
    order: int
    tools: tuple[str, ...]
    success: bool


@dataclass(frozen=True)
class RunTest:
    """A rule as the lift tests it on a run: whether it ``applies`` (the run reached the step it guards) and whether
    the run ``followed`` it. A :class:`~hindsight_lab.trace.checks.Check` is one (:meth:`of`); the rule ceiling
    tests forms no check expresses yet (:mod:`.ceiling`)."""

    applies: Callable[[Run], bool]
    followed: Callable[[Run], bool]

    @classmethod
    def of(cls, check: Check) -> "RunTest":
        return cls(lambda r: check.reaches(r.tools), lambda r: check.followed(r.tools))


def pooled_lift(rules: Sequence[tuple[Check | RunTest, int]], runs: Sequence[Run]) -> tuple[float, int]:
    """``(lift, runs compared)``: for each rule (its check, or any :class:`RunTest`, and the order of its promotion)
    and source, the success rate of the later runs that followed it minus of those that reached its step without,
    weighted by how many were compared; ``(nan, 0)`` when no rule had both kinds of later runs in any source."""
    total, weight = 0.0, 0
    for rule, after in rules:
        test = rule if isinstance(rule, RunTest) else RunTest.of(rule)
        by_source: dict[str, tuple[list[bool], list[bool]]] = {}
        for run in runs:
            if run.order > after and test.applies(run):
                followed, ignored = by_source.setdefault(run.source, ([], []))
                (followed if test.followed(run) else ignored).append(run.success)
        for followed, ignored in by_source.values():
            if followed and ignored:
                n = len(followed) + len(ignored)
                total += n * (float(np.mean(followed)) - float(np.mean(ignored)))
                weight += n
    return (total / weight if weight else float("nan")), weight


def lift_over_time(rules: Sequence[tuple[Check | RunTest, int]], runs: Sequence[Run], points: int = 20
                   ) -> list[dict[str, Any]]:
    """The pooled lift as the history grows: at ``points`` cut-offs spread over the runs' orders, the lift
    (:func:`pooled_lift`) of the rules promoted by then, read on the runs after each promotion seen so far. Each
    point is ``{"runs": cut-off order, "promoted": rules promoted by then, "lift": lift or None, "runs_compared": n}``;
    the last is the whole history's lift.

    Examples:
        >>> runs = [Run(f"e{i}", f"t{i % 3}", "a", i, ("x",) if i % 2 else (), i % 2 == 1) for i in range(12)]
        >>> x = RunTest(lambda r: True, lambda r: "x" in r.tools)
        >>> [(p["runs"], p["promoted"], p["lift"]) for p in lift_over_time([(x, 3)], runs, points=3)]
        [(0, 0, None), (6, 1, 1.0), (11, 1, 1.0)]
    """
    if not runs:
        return []
    last = max(r.order for r in runs)
    cuts = sorted({int(round(c)) for c in np.linspace(min(r.order for r in runs), last, max(points, 1))})
    out = []
    for cut in cuts:
        seen = [r for r in runs if r.order <= cut]
        promoted = [(rule, after) for rule, after in rules if after < cut]
        lift, compared = pooled_lift(promoted, seen) if promoted else (float("nan"), 0)
        out.append({"runs": cut, "promoted": len(promoted), "lift": lift if compared else None,
                    "runs_compared": compared})
    return out


def lift_report(rules: Sequence[Any], episodes: Sequence[Any], times: Sequence[datetime], *, seed: int = 0,
                n: int = 1000, injected: Mapping[str, set[str]] | None = None, overlap: float = 0.5
                ) -> dict[str, Any]:
    """The lift block of a replay's ``metrics.json`` for one system's L3 rules (records with ``attrs.check`` and
    ``attrs.promoted_at``) over the replayed ``episodes`` (in replay order, at ``times`` on the replay clock).

    With ``injected`` (query episode id → the rules injected for it, each known by its first source episode), each
    rule also says where it was injected: see :func:`where_applied`.

    A rule verified by pairs of runs of one task (``promotion.evidence: within_task``) also says how many pairs it
    read (``pairs``) and how many of them join runs of *different* tasks by the dataset's task ids
    (``pairs_across_tasks``). The memory tells a task by the identifiers its runs name (``overlap``,
    ``promotion.same_task_overlap``), never by a label; this checks it where the labels exist."""
    runs = runs_of(episodes, outside_failures=False)
    promoted = []
    for rec in rules:
        check, at = Check.of((rec.attrs or {}).get("check")), (rec.attrs or {}).get("promoted_at")
        if check is not None and at:
            promoted.append((rec, check, _order_after(times, datetime.fromisoformat(at))))
    pairs = [(check, after) for _, check, after in promoted]
    lift, compared = pooled_lift(pairs, runs)
    task_of = {e.episode_id: e.task_id or e.episode_id for e in episodes}
    out: dict[str, Any] = {"promoted": len(promoted), "distinct": len({check for _, check, _ in promoted}),
                           "rules": [{"id": rec.id, "rule": rec.content, "check": check.to_dict(),
                                      "promoted_after_episode": after, "confidence": rec.confidence,
                                      **_pairs_across_tasks(rec, task_of, overlap)}
                                     for rec, check, after in promoted],
                           "lift": lift if compared else None, "runs_compared": compared, "note": NOTE}
    if injected is not None:
        rows = [((rec.source_episode_ids[:1] or (rec.id,))[0], check, after) for rec, check, after in promoted]
        for row, (applies, hits) in zip(out["rules"], where_applied(rows, runs_of(episodes), injected)):
            row.update(applies=applies, injected_where_applies=hits)
        judged = [r for r in out["rules"] if r["applies"]]
        out["injected_where_apply"] = (sum(2 * r["injected_where_applies"] >= r["applies"] for r in judged)
                                       / len(judged)) if judged else None
    if compared:
        boot, null = _bootstrap(pairs, runs, seed, n), null_lifts(pairs, runs, seed, n)
        out.update(ci=[float(np.nanpercentile(boot, 2.5)), float(np.nanpercentile(boot, 97.5))],
                   **against_null(lift, null))
    return out


def _pairs_across_tasks(rec: Any, task_of: Mapping[str, str], overlap: float) -> dict[str, int]:
    """``{pairs, pairs_across_tasks}`` of a rule verified within tasks
    (:func:`~hindsight_lab.memory.verify.told_apart`); empty for a rule verified otherwise."""
    from ..memory.verify import paired_runs, told_apart

    if not paired_runs(rec):
        return {}
    told = list(told_apart(rec, overlap))
    return {"pairs": len(told),
            "pairs_across_tasks": sum(task_of.get(a, a) != task_of.get(b, b) for a, b, _ in told)}


def runs_of(episodes: Sequence[Any], *, outside_failures: bool = True) -> list[Run]:
    """The replayed episodes as :class:`Run` s, ``order`` their place in replay order. Without
    ``outside_failures``, failures of an outside cause (``failure_cause: external``) are left out: they say nothing
    of a rule's worth, though a rule applies to them as to any other run."""
    return [Run(e.episode_id, e.task_id or e.episode_id, str((e.meta or {}).get("source_file", "")), i,
                tuple(e.tool_names()), e.outcome == "success") for i, e in enumerate(episodes)
            if outside_failures or not (e.outcome != "success" and e.failure_cause == "external")]


def where_applied(rules: Sequence[tuple[str, Check, int]], runs: Sequence[Run],
                  injected: Mapping[str, set[str]]) -> list[tuple[int, int]]:
    """For each promoted rule ``(id, check, order of its promotion)``: ``(applies, injected)``, the later queries
    where it applies — runs after its promotion whose own recorded run reached the step it guards — and how many of
    them it was injected for (``injected``: query episode id → ids of the rules injected for it; runs that were no
    query are left out).

    Whether a rule applies is read off the query's own run, after the fact: the system could not know it when it
    recalled, so this measures whether the rule reached the tasks it speaks to, not a decision the system made.

    Examples:
        >>> runs = [Run("a", "t1", "", 0, ("get", "pay"), True), Run("b", "t2", "", 1, ("get", "pay"), True),
        ...         Run("c", "t3", "", 2, ("get",), True), Run("d", "t4", "", 3, ("pay",), False)]
        >>> where_applied([("r1", Check(("get", "pay")), 0)], runs, {"b": {"r1"}, "c": {"r1"}, "d": set()})
        [(2, 1)]
    """
    out = []
    for rid, check, after in rules:
        later = [r for r in runs if r.order > after and r.episode_id in injected and check.reaches(r.tools)]
        out.append((len(later), sum(rid in injected[r.episode_id] for r in later)))
    return out


def _order_after(times: Sequence[datetime], at: datetime) -> int:
    """The order of the last episode at or before ``at`` on the replay clock (the promotion's own episode)."""
    before = [i for i, t in enumerate(times) if t <= at]
    return before[-1] if before else -1


def _bootstrap(pairs: Sequence[tuple[Check | RunTest, int]], runs: Sequence[Run], seed: int, n: int) -> np.ndarray:
    """The pooled lift over ``n`` resamples of whole tasks (each drawn task's runs, all of them)."""
    rng = np.random.default_rng(seed)
    tasks = sorted({r.task for r in runs})
    of = {t: [r for r in runs if r.task == t] for t in tasks}
    out = np.empty(n)
    for i in range(n):
        drawn = [r for t in rng.choice(tasks, size=len(tasks)) for r in of[t]]
        out[i] = pooled_lift(pairs, drawn)[0]
    return out


def null_lifts(pairs: Sequence[tuple[Check | RunTest, int]], runs: Sequence[Run], seed: int, n: int) -> np.ndarray:
    """The pooled lift over ``n`` shuffles of the outcomes among the runs of each task."""
    return np.array([pooled_lift(pairs, shuffled)[0] for shuffled in within_task_shuffles(runs, seed + 1, n)])


def against_null(lift: float, null: np.ndarray) -> dict[str, float]:
    """A lift beside its null's lifts: the null's mean and 95th percentile, and the one-sided p-value (the share of
    null lifts at least as high, one added to each side; lifts of shuffles that compared nothing are left out)."""
    return {"null_mean": float(np.nanmean(null)), "null_p95": float(np.nanpercentile(null, 95)),
            "p_value": float((1 + np.sum(null >= lift - 1e-12)) / (1 + np.sum(~np.isnan(null))))}


def within_task_shuffles(runs: Sequence[Run], seed: int, n: int) -> Iterator[list[Run]]:
    """``n`` copies of ``runs`` with the outcomes shuffled among the runs of each task (seeded): every task keeps
    its difficulty, and any link between what a run did and whether it succeeded is broken."""
    rng = np.random.default_rng(seed)
    by_task: dict[str, list[int]] = {}
    for i, r in enumerate(runs):
        by_task.setdefault(r.task, []).append(i)
    outcomes = np.array([r.success for r in runs])
    for _ in range(n):
        shuffled = outcomes.copy()
        for idx in by_task.values():
            shuffled[idx] = rng.permutation(outcomes[idx])
        yield [Run(r.episode_id, r.task, r.source, r.order, r.tools, bool(s)) for r, s in zip(runs, shuffled)]
