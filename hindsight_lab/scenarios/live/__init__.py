"""A live environment: tasks with traps, a scripted agent that reads injected memories as text, and memory systems
that each learn from the runs of their own agent.

This package owns the environment (:mod:`.env`, :class:`LiveEnv`: the task stream, the tool order each task
requires and when that changes, the seeded chance events), the agent (:mod:`.agent`, :func:`read_hints`,
:func:`plan_calls`), the rendering of what a system injected into the text the agent reads (:func:`injected_text`)
and the run loop (:mod:`.run`, :func:`run_live`) with its report (:mod:`.report`, :class:`LiveReport`).

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

from .agent import ALL_TOOLS, Hint, Plan, plan_calls, read_hints
from .env import FLIP_TYPE, Draws, LiveEnv, LiveTask
from .report import LiveReport
from .run import injected_records, injected_text, live_table, run_live

__all__ = ["ALL_TOOLS", "FLIP_TYPE", "Draws", "Hint", "LiveEnv", "LiveReport", "LiveTask", "Plan", "injected_records",
           "injected_text", "live_table", "plan_calls", "read_hints", "run_live"]
