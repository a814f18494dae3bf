"""Later evidence against stored successes: lucky successes and rules of the world that changed (article §7–§8).

A stored success says "these tools, in this order, worked". A later run **contradicts** it when it called the same
tools in the same order up to a state-changing step, and was refused at that step, which the success had passed.
When such refusals come in a row at one step — no run passed that step with the same tools before it in between —
and the run is too long to be chance at that step, every stored success that passed it is retired: archived (kept,
never recalled) with the refusals that retired it. "Too long" is at least ``episode.retire_contradicted_after``
refusals, and long enough that a run like it would come by chance, at the refusal rate the step had before, with a
probability below ``episode.retire_significance`` over as many tries as the step has had: a step that never refused
turns after 2 or 3 refusals, one that often refuses (a flaky tool) needs a long run. A success that passes the step
again resets the count and brings back the successes retired there: the step works again.

Only refusals count: a failure without an error step, an error at a read-only tool (usually a wrong argument) and an
``external`` failure (an outage) contradict nothing. What counts is read from what the runs did (their tool names,
their first error, their outcome), never from labels or from what was retrieved.

:class:`Contradictions` keeps, in process, the tool prefixes that stored successes passed (one hash per prefix
length) and the refusals in a row per prefix; the memory feeds it every episode record in time order (when a store
is opened, retired ones included, and on every write), archives what it retires and restores what it reinstates.

Examples:
    >>> led = Contradictions(retire_after=2)
    >>> led.observe("s1", ("search", "hold", "confirm"), "success", None)
    Verdict(retire=[], reinstate=[])
    >>> led.observe("f1", ("search", "hold"), "failure", 1).retire  # refused at hold, which s1 passed
    []
    >>> led.observe("f2", ("search", "hold"), "failure", 1).retire  # after one pass, 2 could be chance
    []
    >>> led.observe("f3", ("search", "hold"), "failure", 1).retire
    ['s1']
    >>> led.observe("s2", ("search", "hold", "confirm"), "success", None).reinstate  # hold works again
    ['s1']
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence

from ..trace.summary import is_read_only


@dataclass
class _Step:
    """One prefix (tools up to and including a step): the successes that passed it, the refusals since the last
    pass, and the successes those refusals retired."""

    tools: tuple[str, ...]
    passed: set[str] = field(default_factory=set)
    refusals: list[str] = field(default_factory=list)
    retired: set[str] = field(default_factory=set)
    passes: int = 0  # every run that passed it
    refused_before: int = 0  # refusals before the current run of refusals

    def needed(self, minimum: int, significance: float) -> int:
        """Refusals in a row that count as a change: at least ``minimum``, and enough that a run that long would
        come by chance, at the refusal rate seen here before it, with a probability below ``significance`` over
        as many tries as the step has had (a step that often refuses needs a longer run)."""
        tries = self.passes + self.refused_before
        rate = (self.refused_before + 1) / (tries + 2)
        return max(minimum, math.ceil(math.log(max(tries, 1) / significance) / -math.log(rate)))


class Verdict(NamedTuple):
    """What one observed run changes: successes to retire, and retired successes to bring back."""

    retire: list[str]
    reinstate: list[str]


class Contradictions:
    """Which stored successes later runs have contradicted (see the module docstring).

    Args:
        retire_after: the fewest refusals in a row at one step that retire the successes that passed it (0: never).
        significance: see :meth:`_Step.needed`.
    """

    def __init__(self, retire_after: int, significance: float = 0.05) -> None:
        self.retire_after, self.significance = retire_after, significance
        self._steps: dict[int, list[_Step]] = {}  # hash of a prefix → the prefixes with that hash
        self._passed: dict[str, list[_Step]] = {}  # active success id → the steps it passed
        self._retired_at: dict[str, _Step] = {}  # retired success id → the step where it was refused
        self._runs: dict[str, tuple[tuple[str, ...], frozenset[int]]] = {}  # success id → (tools, errors_at)
        self.refusals_of: dict[str, tuple[str, ...]] = {}
        """Retired success id → the ids of the refusals that retired it."""

    def __len__(self) -> int:
        return len(self._passed)

    def __setstate__(self, state: dict) -> None:
        """Unpickled (a saved memory state): the steps are keyed again by this process's hashes of their prefixes
        (string hashes differ between processes)."""
        self.__dict__.update(state)
        steps: dict[int, list[_Step]] = {}
        for bucket in state["_steps"].values():
            for step in bucket:
                steps.setdefault(hash(step.tools), []).append(step)
        self._steps = steps

    def _step(self, tools: tuple[str, ...], create: bool) -> _Step | None:
        bucket = self._steps.get(hash(tools))
        found = next((s for s in bucket or () if s.tools == tools), None)
        if found is None and create:
            found = _Step(tools)
            self._steps.setdefault(hash(tools), []).append(found)
        return found

    def observe(self, record_id: str, tools: tuple[str, ...], outcome: str | None, refused_at: int | None,
                errors_at: frozenset[int] = frozenset()) -> Verdict:
        """Take one episode record; records come in time order.

        A success passes every step up to its first error: the refusals counted at those steps start again from
        zero, and the successes retired at them come back (the step works again: :attr:`Verdict.reinstate`).
        A refusal at a step that active successes passed counts; once the run of refusals there is long enough
        (:meth:`_Step.needed`) they are retired (:attr:`Verdict.retire`).

        Args:
            record_id: the episode record's id.
            tools: the tool names it called, in order.
            outcome: ``success``, ``failure`` or ``partial``.
            refused_at: for a failure that counts as a refusal, the index in ``tools`` of the refused
                state-changing call; None otherwise.
            errors_at: indexes of calls that answered with an error in a success (it did not pass those).
        """
        if self.retire_after <= 0:
            return Verdict([], [])
        if outcome == "success":
            self.remove(record_id)
            self._runs[record_id] = (tuple(tools), frozenset(errors_at))
            back: set[str] = set()
            for step in self._register(record_id):
                step.passes += 1
                step.refused_before += len(step.refusals)
                step.refusals.clear()
                back |= step.retired
                step.retired.clear()
            for rid in sorted(back):
                del self._retired_at[rid]
                self.refusals_of.pop(rid, None)
                self._register(rid)
            return Verdict([], sorted(back))
        if outcome != "failure" or refused_at is None or refused_at >= len(tools):
            return Verdict([], [])
        step = self._step(tools[: refused_at + 1], create=False)
        if step is None or not step.passed:
            return Verdict([], [])
        step.refusals.append(record_id)
        if len(step.refusals) < step.needed(self.retire_after, self.significance):
            return Verdict([], [])
        retired = sorted(step.passed)
        for rid in retired:
            self._unregister(rid)
            self._retired_at[rid] = step
            self.refusals_of[rid] = tuple(step.refusals)
            step.retired.add(rid)
        return Verdict(retired, [])

    def _register(self, record_id: str) -> list[_Step]:
        tools, errors_at = self._runs[record_id]
        steps = []
        for i in range(len(tools)):
            if i in errors_at:
                break
            step = self._step(tools[: i + 1], create=True)
            assert step is not None
            step.passed.add(record_id)
            steps.append(step)
        self._passed[record_id] = steps
        return steps

    def _unregister(self, record_id: str) -> None:
        for step in self._passed.pop(record_id, ()):
            step.passed.discard(record_id)

    def observe_record(self, rec: Any, read_only_prefixes: Sequence[str]) -> Verdict:
        """:meth:`observe` for a stored episode record (its ``attrs``: ``tools``, ``error_calls``,
        ``failure_cause``); records written before ``error_calls`` was kept locate an error by its tool name."""
        a = rec.attrs or {}
        tools = tuple(a.get("tools", ()))
        if "error_calls" in a:
            errors_at = [int(i) for i in a["error_calls"]]
        else:
            errors_at = [tools.index(e[1]) for e in a.get("errors", ()) if len(e) > 1 and e[1] in tools]
        refused_at = None
        if rec.outcome == "failure" and a.get("failure_cause") != "external":
            refused_at = next((i for i in errors_at if i < len(tools)
                               and not is_read_only(tools[i], read_only_prefixes)), None)
        return self.observe(rec.id, tools, rec.outcome, refused_at, frozenset(errors_at))

    def remove(self, record_id: str) -> None:
        """Forget a run (deleted, rewritten, or archived for another reason)."""
        self._unregister(record_id)
        step = self._retired_at.pop(record_id, None)
        if step is not None:
            step.retired.discard(record_id)
        self._runs.pop(record_id, None)
        self.refusals_of.pop(record_id, None)
