"""Named points inside multi-step writes (the memory's, and a shared sweep's) where a test can make the process die:
fault injection at a chosen step, not a kill timed by luck.

A write that spans several store calls (a candidate written, then its episode marked done; a candidate promoted:
the rule written, then the candidate deleted) can be cut short by a crash between any two of them. Each such gap
calls :func:`reached` with its name; nothing happens unless a test :func:`arm`\\ s that point, in a process of its
own, with an action (by default ``SIGKILL`` to the process itself, the crash nothing can catch). The test then runs
the same command again and checks that the store ends as an uninterrupted run leaves it.

The points (:data:`POINTS`, and :data:`SWEEP_POINTS` for the sweep's):

- ``reflect.episode_written``: an episode's record is stored (``reflection: pending``), its reflection not asked.
- ``reflect.candidate_written``: a new candidate rule is stored, its episode not yet marked ``done``.
- ``reflect.candidate_merged``: a candidate confirmed by this episode is updated, the episode not marked.
- ``reflect.rule_promoted``: a promoted rule is stored in L3, the candidate it came from not yet deleted.
- ``reflect.episode_settled``: the episode is marked ``done`` (the end of one episode's writes).
- ``sweep.asked``: a shared sweep's batch is asked (its trials RUNNING, heartbeats recorded), not yet scored.
- ``sweep.scored``: the batch is scored, not yet kept in the study nor told (a worker lost mid-trial;
  :mod:`hindsight_lab.sweep.workers`).

Examples:
    >>> hits = []
    >>> arm("reflect.candidate_written", action=lambda: hits.append("x"), after=2)
    >>> reached("reflect.candidate_written"); reached("reflect.candidate_written"); hits
    ['x']
    >>> disarm()
"""

from __future__ import annotations

import os
import signal
from typing import Callable

__all__ = ["POINTS", "SWEEP_POINTS", "arm", "disarm", "reached"]

POINTS = ("reflect.episode_written", "reflect.candidate_written", "reflect.candidate_merged",
          "reflect.rule_promoted", "reflect.episode_settled")
SWEEP_POINTS = ("sweep.asked", "sweep.scored")
"""The points of a shared sweep's worker loop (:mod:`hindsight_lab.sweep.workers`); :data:`POINTS` are the memory's."""

_armed: dict[str, list] = {}  # point -> [calls left before the action, action]


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def arm(point: str, *, action: Callable[[], None] = _kill, after: int = 1) -> None:
    """Run ``action`` (default: ``SIGKILL`` this process) the ``after``-th time ``point`` is reached.

    Raises:
        ValueError: an unknown point, or ``after`` below 1.
    """
    if point not in POINTS + SWEEP_POINTS:
        raise ValueError(f"unknown crash point {point!r}; expected one of {list(POINTS + SWEEP_POINTS)}")
    if after < 1:
        raise ValueError(f"after: expected 1 or more (got {after})")
    _armed[point] = [after, action]


def disarm() -> None:
    """Forget every armed point."""
    _armed.clear()


def reached(point: str) -> None:
    """Called by the writes at ``point``; runs the armed action when its count comes up (a no-op otherwise)."""
    entry = _armed.get(point)
    if entry is None:
        return
    entry[0] -= 1
    if entry[0] == 0:
        del _armed[point]
        entry[1]()
