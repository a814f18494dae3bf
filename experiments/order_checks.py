"""How many two-tool order rules the recorded outcomes of a dataset would support, and how many of those say more than
"this kind of task is easier": the room the promotion bar leaves for the reflector.

For every ordered pair of tools (A, B) seen in the runs, the check "before B, call A" is scored the way
``hindsight_lab.memory.verify`` scores a rule, but on every run of the dataset at once (in hindsight, no time order):
runs that reached B and followed the check or not, succeeded or not, with the posterior ``P(followed helps)`` under
the same Beta(1, 1) priors. A check passes the promotion bar when that posterior is above 0.7 (``promotion.
min_mean_confidence``), a run that followed it succeeded, and the runs that confirmed it come from at least three
tasks (``promotion.min_hits``; told apart here by the dataset's task id). Checks that pass are then tested within
tasks: the share of passing checks whose lift survives a null that shuffles outcomes among the runs of each task
(``hindsight_lab.rule_stats.lift``), i.e. that says something beyond which tasks are easy::

    python experiments/order_checks.py tau-bench-airline-dev
    python experiments/order_checks.py tau2-telecom-cross-dev [--state-changing] [--top 15]

``--state-changing`` keeps only checks whose step B changes state (not one of ``episode.read_only_prefixes``), the
steps a rule guards in the reflector. The p-values are per check, with no correction for the number tested.
Measured on the development splits (``--shuffles 500`` on tau-bench, 200 on telecom):

| dataset | runs (successes) | checks that pass the bar | with a lift above the within-task null, p < 0.05 |
|---|---|---|---|
| tau-bench airline | 120 (36) | 19 | 2 |
| the same, step changes state | | 6 | 1 |
| tau2 telecom, gpt-4.1 then fine-tuned | 80 (48) | 271 | 59 |
| the same, step changes state | | 159 | 32 |

What passes on tau-bench is mostly "the runs that did more succeeded more". An example is "before
search_direct_flight, call update_reservation_flights" (p 0.006). Few of these checks say anything beyond that.
On telecom, whole families pass and survive the null: before reboot_device, call get_bills_for_customer,
make_payment, send_payment_request or resume_line. Within one task, the run that dealt with the unpaid bill first
succeeded. There the outcomes support far more promotable checks than the 4 the heuristic reflector gets promoted
on this replay. Few checks are supported on tau-bench.
"""

from __future__ import annotations

import argparse
import itertools
from collections import Counter

import numpy as np

from hindsight_lab.config import LabConfig
from hindsight_lab.datasets.combine import load_history
from hindsight_lab.datasets.registry import resolve
from hindsight_lab.memory.verify import helps_probability
from hindsight_lab.rule_stats.lift import Run, null_lifts, pooled_lift, runs_of
from hindsight_lab.trace.checks import Check


def passing_checks(runs: list[Run], *, state_changing: bool, read_only: tuple[str, ...]) -> list[tuple]:
    """``(posterior, check, counts, tasks confirming)`` of every two-tool check that passes the promotion bar."""
    tools = sorted({t for r in runs for t in r.tools})
    out = []
    for a, b in itertools.permutations(tools, 2):
        if state_changing and b.lower().startswith(read_only):
            continue
        check = Check((a, b))
        counts: Counter[str] = Counter()
        confirming = set()
        for r in runs:
            if check.reaches(r.tools):
                code = ("f" if check.followed(r.tools) else "i") + ("o" if r.success else "x")
                counts[code] += 1
                if code in ("fo", "ix"):
                    confirming.add(r.task)
        p = helps_probability(counts)
        if p > 0.7 and counts["fo"] and len(confirming) >= 3:
            out.append((p, check, dict(counts), len(confirming)))
    return sorted(out, key=lambda row: -row[0])


def within_task_p(check: Check, runs: list[Run], n: int) -> float:
    """One-sided p of the check's lift against the replay's null (:func:`~hindsight_lab.rule_stats.lift.null_lifts`:
    outcomes shuffled among each task's runs)."""
    observed, compared = pooled_lift([(check, -1)], runs)
    if not compared:
        return float("nan")
    null = null_lifts([(check, -1)], runs, 0, n)
    null = null[~np.isnan(null)]
    return float((1 + np.sum(null >= observed - 1e-12)) / (1 + len(null)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", nargs="+", help="trace files or registered dataset / group names")
    parser.add_argument("--state-changing", action="store_true", help="only checks whose step changes state")
    parser.add_argument("--top", type=int, default=10, help="passing checks to print")
    parser.add_argument("--shuffles", type=int, default=500, help="shuffles of the within-task null per check")
    args = parser.parse_args()
    episodes, info = load_history(resolve(args.dataset))
    runs = runs_of(episodes, outside_failures=False)
    read_only = tuple(LabConfig().episode.read_only_prefixes)
    passing = passing_checks(runs, state_changing=args.state_changing, read_only=read_only)
    ps = [within_task_p(check, runs, args.shuffles) for _, check, _, _ in passing]
    print(f"{info['name']}: {len(runs)} runs ({sum(r.success for r in runs)} successes); "
          f"{len(passing)} checks pass the promotion bar, {sum(p < 0.05 for p in ps)} with a lift above the "
          "within-task null (p < 0.05)")
    for (post, check, counts, tasks), p in list(zip(passing, ps))[:args.top]:
        print(f"  P(helps) {post:.3f}  p {p:.3f}  {' -> '.join(check.tools)}  {counts}  confirmed in {tasks} tasks")


if __name__ == "__main__":
    main()
