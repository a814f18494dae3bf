"""Compression first (article §3.4, §8.1): an episode → the compact trajectory a reflector sees.

Kept: the instruction, the tool-call sequence with abbreviated arguments, the decision points (the thought or
assistant message right before each state-changing call), the errors with the step that raised them, the final
answer, explicit feedback, and the outcome. Deterministic, and bounded by ``LabConfig.reflect.compress``. The raw trace
never reaches a reflector; neither does the dataset's ground-truth task_type.

Examples:
    >>> from hindsight_lab.config import LabConfig
    >>> from hindsight_lab.trace import Episode
    >>> ep = Episode.model_validate({"episode_id": "e1", "instruction": "Refund order 42", "outcome": "failure",
    ...     "steps": [{"type": "tool_call", "name": "issue_refund", "arguments": {"order": 42}},
    ...               {"type": "tool_result", "content": "", "error": "order shipped"}]})
    >>> c = compress(ep, LabConfig().reflect.compress, LabConfig().episode.read_only_prefixes)
    >>> c.calls, c.errors, c.signature
    (('issue_refund(order=42)',), ((2, 'issue_refund', 'order shipped'),), 'issue_refund@issue_refund')
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Sequence

from ..config import CompressConfig
from ..trace.summary import derive_task_type, is_read_only
from ..trace import Episode, MessageStep, ThoughtStep, ToolCallStep, ToolResultStep


def _clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: max(limit - 1, 1)] + "…"


def _value(v: Any, limit: int) -> str:
    return _clip(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True), limit)


@dataclass(frozen=True, slots=True)
class CompressedEpisode:
    """The reflector's view of one episode. Steps are numbered from 1 in the original trace."""

    episode_id: str
    task_id: str | None
    domain: str | None
    instruction: str
    task_type: str | None  # derived from the tools called (summary.derive_task_type), never ground truth
    outcome: str
    failure_cause: str | None
    tools: tuple[str, ...]  # names in call order
    calls: tuple[str, ...]  # "name(arg=value, …)" abbreviated, possibly with a "…(n more)…" gap marker
    decisions: tuple[str, ...]  # "before <tool>: <thought>"
    errors: tuple[tuple[int, str, str], ...]  # (step number, tool that raised it, error text)
    final_answer: str | None
    feedback: tuple[str, ...]
    n_steps: int
    started_at: datetime | None = None
    user_turns: int = 0  # user messages in the trace
    error_calls: tuple[int, ...] = ()  # index in ``tools`` of each call that answered with an error (every error)

    @property
    def single_turn(self) -> bool:
        """A question answered without any tool call in at most one user turn."""
        return not self.tools and self.user_turns <= 1

    @property
    def signature(self) -> str:
        """Failure signature: ``task_type@failing step`` (the first error's tool, else the last tool called)."""
        step = self.errors[0][1] if self.errors else (self.tools[-1] if self.tools else "no_tool")
        return f"{self.task_type or 'untyped'}@{step}"

    @property
    def state_changing(self) -> tuple[str, ...]:
        """The tool path that matters for comparing runs: the task_type's tools in call order."""
        parts = set((self.task_type or "").split("+"))
        return tuple(t for t in self.tools if t in parts)

    def to_text(self, max_chars: int = 2000, *, brief: bool = False) -> str:
        """A bounded plain-text rendering (what an LLM reflector reads).

        The outcome, errors, decisions, final answer and feedback are kept whole where they fit; the tool-call line
        gets the room left and loses calls from its middle first, so a long episode never loses its errors.
        ``brief`` leaves out the decisions, final answer and feedback (how a related episode is shown: what it was
        asked, what it called, where it failed, how it ended).
        """
        head = [f"episode {self.episode_id}" + (f" (task {self.task_id})" if self.task_id else ""),
                f"instruction: {self.instruction}",
                f"task_type (from tools used): {self.task_type or 'none'}",
                f"outcome: {self.outcome}" + (f" ({self.failure_cause})" if self.failure_cause else "")]
        tail = [f"error at step {n} ({tool}): {err}" for n, tool, err in self.errors]
        if not brief:
            tail += [f"decision: {d}" for d in self.decisions]
            tail += [f"final answer: {self.final_answer}"] if self.final_answer else []
            tail += [f"user feedback: {f}" for f in self.feedback]
        fixed = "\n".join(head + tail)
        room = max_chars - len(fixed) - len("\ntool calls: ")
        calls = list(self.calls)
        line = " → ".join(calls) if calls else "none"
        while len(line) > room and len(calls) > 2:  # drop from the middle, keep the first and last calls
            del calls[len(calls) // 2]
            line = " → ".join(calls[: len(calls) // 2] + ["…"] + calls[len(calls) // 2:])
        text = "\n".join(head + ["tool calls: " + line] + tail)
        return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def compress(episode: Episode, cfg: CompressConfig, read_only_prefixes: Sequence[str],
             task_type: str | None = None) -> CompressedEpisode:
    """Compress one episode (``task_type`` overrides the derived one when the caller knows it)."""
    calls: list[str] = []
    tools: list[str] = []
    decisions: list[str] = []
    errors: list[tuple[int, str, str]] = []
    error_calls: list[int] = []
    last_thought: str | None = None
    last_tool = "step"
    for n, step in enumerate(episode.steps, 1):
        if isinstance(step, ToolCallStep):
            args = ", ".join(f"{k}={_value(v, cfg.max_arg_chars)}" for k, v in step.arguments.items())
            calls.append(f"{step.name}({args})")
            tools.append(step.name)
            if last_thought and not is_read_only(step.name, read_only_prefixes):
                decisions.append(f"before {step.name}: {_clip(last_thought, 160)}")
            last_thought, last_tool = None, step.name
        elif isinstance(step, ToolResultStep) and step.error:
            if tools and (not error_calls or error_calls[-1] != len(tools) - 1):
                error_calls.append(len(tools) - 1)
            if len(errors) < cfg.max_errors:
                errors.append((n, last_tool, _clip(step.error, 200)))
        elif isinstance(step, ThoughtStep) or (isinstance(step, MessageStep) and step.role == "assistant"):
            last_thought = step.content
    if len(calls) > cfg.max_tool_calls:
        head = cfg.max_tool_calls // 2
        tail = cfg.max_tool_calls - head
        calls = calls[:head] + [f"…({len(calls) - cfg.max_tool_calls} more calls)…"] + calls[-tail:]
    feedback = tuple(_clip(f"{f.signal}: {f.text}", 200) for f in (episode.feedback or []))
    return CompressedEpisode(
        episode_id=episode.episode_id, task_id=episode.task_id, domain=episode.domain,
        instruction=_clip(episode.instruction, 500),
        task_type=task_type if task_type is not None else derive_task_type(episode, read_only_prefixes),
        outcome=episode.outcome, failure_cause=episode.failure_cause, tools=tuple(tools), calls=tuple(calls),
        decisions=tuple(decisions[:10]), errors=tuple(errors),
        final_answer=_clip(episode.final_answer, 200) if episode.final_answer else None, feedback=feedback,
        n_steps=len(episode.steps), started_at=episode.started_at, error_calls=tuple(error_calls),
        user_turns=sum(1 for s in episode.steps if isinstance(s, MessageStep) and s.role == "user"))
