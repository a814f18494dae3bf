"""When to reflect: rules, never an LLM call (DESIGN §4, article §3.1).

In order, for each finished episode (unless ``every_episode`` is on, an ablation that reflects on all of them):

1. ``single_turn`` (skip): a question answered in one turn without any tool call — nothing to learn about
   strategy.
2. ``external_failure`` (skip): the failure was caused outside the agent (``failure_cause == "external"``, or an
   unknown cause whose every error looks like an outage: timeout, rate limit, 5xx, connection).
3. ``feedback`` (reflect): the episode carries explicit user feedback.
4. failures and partial runs: ``repeat_failure`` (skip) when the same signature (task_type + failing step) was
   reflected on within ``skip_repeat_failure_days``; otherwise ``strategy_failure`` (reflect; ``routine_failure``,
   a skip, when that switch is off).
5. successes: ``deviating_success`` (reflect) when the state-changing tool path differs from the usual successful
   path of its task_type (the most common one among at least two earlier successes); ``nth_occurrence`` (reflect)
   at the n-th occurrence of a task_type not yet reflected on; otherwise ``routine_success`` (skip).

The state (occurrences, usual paths, what was reflected on and when) is rebuilt from stored episode records when a
store is opened, so a restarted server decides as before.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ..config import ReflectTriggersConfig
from .compress import CompressedEpisode

REFLECT_REASONS = ("feedback", "strategy_failure", "deviating_success", "nth_occurrence", "every_episode")
SKIP_REASONS = ("single_turn", "external_failure", "repeat_failure", "routine_failure", "routine_success")
_OUTAGE = re.compile(r"time[d ]?out|rate.?limit|too many requests|\b5\d\d\b|unavailable|connection|network",
                     re.I)


@dataclass(frozen=True, slots=True)
class TriggerDecision:
    """Whether to reflect on an episode, and the rule that decided it."""

    reflect: bool
    reason: str


@dataclass
class TriggerState:
    """What the policy remembers about earlier episodes."""

    occurrences: Counter = field(default_factory=Counter)  # task_type -> episodes seen
    success_paths: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    reflected_types: Counter = field(default_factory=Counter)  # task_type -> reflections (not rejected)
    signatures: dict[str, datetime] = field(default_factory=dict)  # failure signature -> last reflected


class TriggerPolicy:
    """Applies the trigger rules of ``LabConfig.reflect.triggers`` and counts decisions per reason.

    Examples:
        >>> from hindsight_lab.config import LabConfig
        >>> policy = TriggerPolicy(LabConfig().reflect.triggers)
        >>> policy.counts
        Counter()
    """

    def __init__(self, cfg: ReflectTriggersConfig) -> None:
        self.cfg = cfg
        self.state = TriggerState()
        self.counts: Counter = Counter()

    def decide(self, ep: CompressedEpisode, now: datetime) -> TriggerDecision:
        """Decide for one episode (does not change the state: call :meth:`observe` after)."""
        decision = self._decide(ep, now)
        self.counts[decision.reason] += 1
        return decision

    def _decide(self, ep: CompressedEpisode, now: datetime) -> TriggerDecision:
        cfg = self.cfg
        if cfg.every_episode:
            return TriggerDecision(True, "every_episode")
        if cfg.skip_single_turn and ep.single_turn and not ep.feedback:
            return TriggerDecision(False, "single_turn")
        if ep.outcome != "success" and cfg.skip_external_failure and self._external(ep):
            return TriggerDecision(False, "external_failure")
        if cfg.on_feedback and ep.feedback:
            return TriggerDecision(True, "feedback")
        if ep.outcome != "success":
            last = self.state.signatures.get(ep.signature)
            if cfg.skip_repeat_failure_days > 0 and last is not None \
                    and now - last < timedelta(days=cfg.skip_repeat_failure_days):
                return TriggerDecision(False, "repeat_failure")
            if cfg.on_strategy_failure:
                return TriggerDecision(True, "strategy_failure")
            return TriggerDecision(False, "routine_failure")
        key = ep.task_type or "untyped"
        usual = self.usual_path(key)
        if cfg.on_deviating_success and usual is not None and ep.state_changing != usual:
            return TriggerDecision(True, "deviating_success")
        if cfg.nth_occurrence and key not in self.state.reflected_types \
                and self.state.occurrences[key] + 1 >= cfg.nth_occurrence:
            return TriggerDecision(True, "nth_occurrence")
        return TriggerDecision(False, "routine_success")

    @staticmethod
    def _external(ep: CompressedEpisode) -> bool:
        if ep.failure_cause == "external":
            return True
        if ep.failure_cause in (None, "unknown") and ep.errors:
            return all(_OUTAGE.search(err) for _, _, err in ep.errors)
        return False

    def usual_path(self, task_type: str) -> tuple[str, ...] | None:
        """The most common successful state-changing path of a task_type, once seen at least twice."""
        paths = self.state.success_paths.get(task_type)
        if not paths:
            return None
        path, n = paths.most_common(1)[0]
        return path if n >= 2 else None

    def observe(self, ep: CompressedEpisode, now: datetime, reflected: bool) -> None:
        """Record an episode after its decision (and its reflection, if any)."""
        key = ep.task_type or "untyped"
        self.state.occurrences[key] += 1
        if ep.outcome == "success":
            self.state.success_paths[key][ep.state_changing] += 1
        if reflected:
            self.state.reflected_types[key] += 1
            if ep.outcome != "success":
                self.state.signatures[ep.signature] = now

    def forget_reflection(self, ep: CompressedEpisode, now: datetime) -> None:
        """Undo the "reflected on" mark of an episode whose reflection was rejected: nothing was learnt, so the
        next occurrence may be reflected on."""
        key = ep.task_type or "untyped"
        if self.state.reflected_types[key] > 1:
            self.state.reflected_types[key] -= 1
        else:
            self.state.reflected_types.pop(key, None)
        if self.state.signatures.get(ep.signature) == now:
            del self.state.signatures[ep.signature]
