"""What a live run did: :class:`LiveReport`, with its summaries per system."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
