"""Where the values a run passed to its tools came from: said by the user, returned by an earlier tool, or neither.

A tool call's argument is **stated** when every value in it (each string or number, nested ones included) appears,
as a whole word, in what the user said before the call; it is **grounded** when every value appears in what the
user said or what an earlier tool returned. A value that is neither was supplied by the agent itself: a default, an
inference, or an invention. Only the agent's calls count (in traces where the user acts too, the user's calls are
the user's own). Booleans and empty values say nothing of their source and are skipped.

Examples:
    >>> from hindsight_lab.trace.model import Episode
    >>> ep = Episode.model_validate({"episode_id": "e", "instruction": "x", "outcome": "success", "steps": [
    ...     {"type": "message", "role": "user", "content": "Cancel reservation ABC123 please"},
    ...     {"type": "tool_call", "name": "get_reservation", "arguments": {"id": "ABC123"}},
    ...     {"type": "tool_result", "content": '{"flights": ["HAT001"]}'},
    ...     {"type": "tool_call", "name": "cancel",
    ...      "arguments": {"id": "abc123", "flight": "HAT001", "why": "plans"}}]})
    >>> sources = argument_sources(ep)
    >>> sources[("get_reservation", "id")], sources[("cancel", "flight")], sources[("cancel", "why")]
    (Source(stated=True, grounded=True), Source(stated=False, grounded=True), Source(stated=False, grounded=False))
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator

from .model import Episode, MessageStep, ToolCallStep, ToolResultStep


@dataclass(frozen=True, slots=True)
class Source:
    """Whether every value an argument took, over every agent call of its tool, was said by the user before the
    call (``stated``), or said by the user or returned by an earlier tool (``grounded``)."""

    stated: bool
    grounded: bool


def _values(value: Any) -> Iterator[str]:
    """The scalar values in an argument, as lowercase text (integral floats without their ``.0``)."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _values(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _values(v)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, float) and value.is_integer():
        yield str(int(value))
    elif str(value).strip():
        yield str(value).strip().lower()


def _said(value: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text) is not None


def argument_sources(episode: Episode) -> dict[tuple[str, str], Source]:
    """``(tool, argument) → Source`` for every argument the agent passed with a value (module docstring)."""
    user, seen = [], []
    out: dict[tuple[str, str], Source] = {}
    for step in episode.steps:
        if isinstance(step, MessageStep) and step.role == "user":
            user.append(step.content.lower())
            seen.append(step.content.lower())
        elif isinstance(step, ToolResultStep):
            seen.append(step.content.lower())
        elif isinstance(step, ToolCallStep) and step.actor != "user":
            said, shown = "\n".join(user), "\n".join(seen)
            for name, value in step.arguments.items():
                values = list(_values(value))
                if not values:
                    continue
                now = Source(all(_said(v, said) for v in values), all(_said(v, shown) for v in values))
                before = out.get((step.name, name), now)
                out[(step.name, name)] = Source(before.stated and now.stated, before.grounded and now.grounded)
    return out
