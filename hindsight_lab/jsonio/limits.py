"""Bounds on what a trace file may hold, checked by every reader before anything is written.

A hostile or broken file must come back as invalid input that names the file, the line and the field — never as a
``RecursionError`` from the JSON parser, and never as a request that costs gigabytes to embed. Every reader (the
JSONL reader, ``memories import``, the whole-file adapters tau-bench, tau2-bench, LoCoMo, Reflexion, and
``detect_format``) applies one :class:`ReadLimits`:

* ``max_depth``: nesting of JSON objects and lists, counted from the top value (an episode of the development
  data nests at most 11 deep; a file 10,000 deep would crash the parser);
* ``max_string_chars``: one string value (a tool result, a message, a turn; the longest in the development data
  is 23,318 characters);
* ``max_instruction_chars``: an episode's instruction, the text every memory search embeds.

Examples:
    >>> check_value({"a": [[1]]}, ReadLimits(max_depth=2), path="t.json")
    Traceback (most recent call last):
    ...
    hindsight_lab.errors.TraceFormatError: t.json: nested deeper than 2 levels (field 'a.0')
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import TraceFormatError

__all__ = ["DEFAULT_LIMITS", "ReadLimits", "check_instruction", "check_value", "loads"]


@dataclass(frozen=True)
class ReadLimits:
    """The bounds (see the module docstring); a reader given none uses :data:`DEFAULT_LIMITS`."""

    max_depth: int = 100
    max_string_chars: int = 1_000_000
    max_instruction_chars: int = 20_000


DEFAULT_LIMITS = ReadLimits()


def loads(text: str, limits: ReadLimits = DEFAULT_LIMITS, *, path: str | None = None, line: int | None = None
          ) -> Any:
    """``json.loads`` whose result is within ``limits``.

    Raises:
        TraceFormatError: invalid JSON (``reason`` ``invalid_json``), or nesting or a string over the limits
            (``too_deep``, ``too_large``); the error's ``reason`` says which.
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise _error(f"nested deeper than {limits.max_depth} levels", "too_deep", path, line) from None
    except json.JSONDecodeError as exc:
        end = "the end of the line (truncated?)" if line is not None else "the end of the file (truncated?)"
        where = end if exc.pos >= len(text.rstrip()) else f"column {exc.colno}"
        err = _error(f"invalid JSON: {exc.msg} at {where}", "invalid_json", path, line if line else exc.lineno)
        raise err from None
    check_value(value, limits, path=path, line=line)
    return value


def check_value(value: Any, limits: ReadLimits = DEFAULT_LIMITS, *, path: str | None = None,
                line: int | None = None) -> None:
    """Walk a parsed JSON value (iteratively, so depth itself cannot overflow) and check it against ``limits``.

    Raises:
        TraceFormatError: the first place nested deeper than ``max_depth`` or holding a string longer than
            ``max_string_chars``, named by its JSON path.
    """
    stack: list[tuple[Any, int, tuple[str, ...]]] = [(value, 1, ())]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, str):
            if len(item) > limits.max_string_chars:
                raise _error(f"a string of {len(item):,} characters is over the limit of "
                             f"{limits.max_string_chars:,}", "too_large", path, line, ".".join(where) or None)
            continue
        children = item.items() if isinstance(item, dict) else enumerate(item) if isinstance(item, list) else ()
        for key, child in children:
            if isinstance(child, (dict, list)) and depth + 1 > limits.max_depth:
                raise _error(f"nested deeper than {limits.max_depth} levels", "too_deep", path, line,
                             ".".join((*where, str(key))))
            stack.append((child, depth + 1, (*where, str(key))))


def check_instruction(text: str, limits: ReadLimits = DEFAULT_LIMITS, *, path: str | None = None,
                      line: int | None = None, episode_id: str | None = None) -> None:
    """An instruction within ``max_instruction_chars`` (every search embeds it).

    Raises:
        TraceFormatError: it is longer (``reason`` ``too_large``, field ``instruction``).
    """
    if len(text) > limits.max_instruction_chars:
        who = f"episode {episode_id!r}: " if episode_id else ""
        raise _error(f"{who}an instruction of {len(text):,} characters is over the limit of "
                     f"{limits.max_instruction_chars:,}", "too_large", path, line, "instruction")


def _error(message: str, reason: str, path: str | None, line: int | None, field: str | None = None
           ) -> TraceFormatError:
    return TraceFormatError(message, path=path, line=line, field=field, reason=reason)
