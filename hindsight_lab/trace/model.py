"""The trace format (DESIGN §5): one :class:`Episode` per JSONL line, as pydantic models.

These are the validated input format, so they are pydantic models (the hot-path records in ``types.py`` are
dataclasses). ``task_type`` here is a ground-truth label used only for judging: it never reaches memory.

Examples:
    >>> ep = Episode.model_validate({"episode_id": "e1", "instruction": "refund order 42",
    ...     "steps": [{"type": "tool_call", "name": "refund", "arguments": {"order": 42}}], "outcome": "success"})
    >>> ep.tool_names()
    ['refund']
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MessageStep(_Model):
    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system"]
    content: str


class ToolCallStep(_Model):
    """One tool call; ``actor`` is who made it, when the trace says: the agent (``"assistant"``) or, in traces
    where the user acts too (tau2-bench telecom: the user toggles data on the phone), the user."""

    type: Literal["tool_call"] = "tool_call"
    name: str = Field(min_length=1)
    arguments: dict[str, Any] = {}
    id: str | None = None
    actor: Literal["assistant", "user"] | None = None


class ToolResultStep(_Model):
    type: Literal["tool_result"] = "tool_result"
    id: str | None = None
    content: str = ""
    error: str | None = None


class ThoughtStep(_Model):
    type: Literal["thought"] = "thought"
    content: str


class ReflectionStep(_Model):
    """Hindsight the recorded agent wrote after this episode (written to memory after it, never a query)."""

    type: Literal["reflection"] = "reflection"
    content: str


TraceStep = Annotated[Union[MessageStep, ToolCallStep, ToolResultStep, ThoughtStep, ReflectionStep],
                      Field(discriminator="type")]


class FeedbackItem(_Model):
    signal: Literal["up", "down", "correction"]
    text: str = ""


class Episode(_Model):
    """One recorded task run."""

    episode_id: str = Field(min_length=1)
    task_id: str | None = None
    task_type: str | None = None
    domain: str | None = None
    started_at: datetime | None = None
    instruction: str = Field(min_length=1)
    steps: list[TraceStep]
    outcome: Literal["success", "failure", "partial"]
    reward: float | None = Field(None, allow_inf_nan=False)
    failure_cause: Literal["strategy", "external", "unknown"] | None = None
    feedback: list[FeedbackItem] | None = None
    final_answer: str | None = None
    relevant_episode_ids: list[str] | None = None
    meta: dict[str, Any] | None = None

    @field_validator("episode_id", "instruction")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():  # the instruction is the recall query: a blank one cannot be searched for
            raise ValueError("must not be empty or whitespace")
        return v

    @field_validator("started_at", mode="before")
    @classmethod
    def _iso_only(cls, v: object) -> object:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            raise ValueError("expected an ISO-8601 timestamp string, got a number")
        return v

    @field_validator("started_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        if v is not None and v.tzinfo is None:
            v = v.replace(tzinfo=timezone.utc)
        return v

    def tool_calls(self) -> list[ToolCallStep]:
        return [s for s in self.steps if isinstance(s, ToolCallStep)]

    def tool_names(self) -> list[str]:
        """Names of the tools called, in order."""
        return [s.name for s in self.tool_calls()]

    def reflections(self) -> list[str]:
        return [s.content for s in self.steps if isinstance(s, ReflectionStep)]

    def errors(self) -> list[tuple[int, str]]:
        """``(step index, error text)`` of every tool result that carried an error."""
        return [(i, s.error) for i, s in enumerate(self.steps) if isinstance(s, ToolResultStep) and s.error]
