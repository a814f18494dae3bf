"""Validation of what callers hand to :meth:`MemorySystem.write` (and, later, the MCP tools).

Invalid input raises :class:`~hindsight_lab.errors.ValidationError` naming the field, before anything is stored.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, field_validator
from pydantic import ValidationError as _PydanticError

from ..errors import ValidationError, invalid_input
from ..trace.checks import Check
from ..retrieve.paths import validate_trigger
from ..types import Trigger


class TriggerInput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    any: list[StrictStr] = []
    all: list[StrictStr] = []
    task_types: list[StrictStr] = []

    def to_trigger(self) -> Trigger:
        return Trigger(any=tuple(self.any), all=tuple(self.all), task_types=tuple(self.task_types))


class MemoryInput(BaseModel):
    """A rule to write: an L2 candidate (``layer="L2"``) or an L3 rule (``layer="L3"``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    content: StrictStr = Field(min_length=1, max_length=20_000)
    layer: Literal["L2", "L3"] = "L2"
    task_type: StrictStr | None = None
    domain: StrictStr | None = None
    confidence: StrictFloat | StrictInt = 0.5
    counter_examples: list[StrictStr] = []
    trigger: TriggerInput | None = None
    source_episode_ids: list[StrictStr] = []
    check: dict[str, Any] | None = None
    """The rule's checkable form, ``{"kind": "order", "tools": [...]}`` (:mod:`hindsight_lab.trace.checks`)."""

    @field_validator("content")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty or whitespace")
        return v.strip()

    @field_validator("confidence")
    @classmethod
    def _unit(cls, v: float) -> float:
        if not 0.0 <= float(v) <= 1.0:
            raise ValueError("must be between 0 and 1")
        return float(v)

    @field_validator("counter_examples")
    @classmethod
    def _strip(cls, v: list[str]) -> list[str]:
        return [c.strip() for c in v if c.strip()]

    @field_validator("trigger")
    @classmethod
    def _usable(cls, v: TriggerInput | None) -> TriggerInput | None:
        if v is not None:
            validate_trigger(v.to_trigger())
        return v

    @field_validator("check")
    @classmethod
    def _checkable(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        return Check.from_dict(v).to_dict() if v is not None else None


def parse_memory_input(data: dict[str, Any]) -> MemoryInput:
    """Validate, turning pydantic's error into one that names every bad field."""
    if hasattr(data.get("layer"), "value"):
        data = {**data, "layer": data["layer"].value}
    if isinstance(data.get("trigger"), Trigger):
        data = {**data, "trigger": data["trigger"].to_dict()}
    for key in ("counter_examples", "source_episode_ids"):
        if isinstance(data.get(key), tuple):
            data = {**data, key: list(data[key])}
    try:
        return MemoryInput.model_validate(data)
    except _PydanticError as exc:
        raise ValidationError(invalid_input(exc, "write")) from None
