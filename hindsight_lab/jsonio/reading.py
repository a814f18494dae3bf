"""Reading helpers shared by every reader of JSON and JSON Lines files (the dataset adapters, ``memories import``, the
labelled conflict pairs); every one bounds what it parses (:mod:`.limits`) and names the file in its errors.

Examples:
    >>> check_limit(3, "limit_tasks")
    >>> check_limit(-1, "limit_tasks")
    Traceback (most recent call last):
    ...
    hindsight_lab.errors.ConfigError: limit_tasks: expected a non-negative integer or None (got -1)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from ..errors import ConfigError, TraceFormatError
from .limits import DEFAULT_LIMITS, ReadLimits, loads

__all__ = ["Fields", "check_limit", "dump_line", "escape_line_breaks", "json_lines", "read_json", "read_json_list",
           "read_text", "split_lines"]


def check_limit(value: int | None, name: str) -> None:
    """A reader's ``limit_tasks`` / ``limit_conversations`` argument: None or a non-negative integer (not a bool).

    Raises:
        ConfigError: anything else, naming the argument.
    """
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ConfigError(f"{name}: expected a non-negative integer or None (got {value!r})")


def split_lines(text: str) -> list[str]:
    r"""The lines of a JSON Lines text: split on ``\n`` only (a ``\r`` before it dropped), as the format says.

    Not :meth:`str.splitlines`, which also breaks at U+2028, U+2029 and U+0085: characters that JSON allows raw
    inside a string, so a record holding one would be cut in two.

    Examples:
        >>> split_lines('{"a": "x\u2028y"}\r\n{"b": 1}\n')
        ['{"a": "x\u2028y"}', '{"b": 1}', '']
    """
    return [line.removesuffix("\r") for line in text.split("\n")]


_LINE_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def dump_line(value: Any, **kw: Any) -> str:
    r"""One JSON Lines line (no trailing newline): ``json.dumps(value, ensure_ascii=False, **kw)`` with the line
    breaks that JSON allows raw in a string (U+0085, U+2028, U+2029) written as escapes, so that the line is one line
    for every reader, :meth:`str.splitlines` included. The value read back is the same.

    Examples:
        >>> dump_line({"rule": "ask first\u2028then act"})
        '{"rule": "ask first\\u2028then act"}'
    """
    return escape_line_breaks(json.dumps(value, ensure_ascii=False, **kw))


def escape_line_breaks(text: str) -> str:
    """JSON text with U+0085, U+2028 and U+2029 written as ``\\u`` escapes (they can only stand inside strings)."""
    return text.translate(_LINE_BREAKS)


def read_text(path: Path) -> str:
    """A whole UTF-8 file (a byte-order mark dropped); text that is not UTF-8 raises naming the file and the byte."""
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(f"not UTF-8: {exc.reason} at byte {exc.start}", path=str(path)) from None


def read_json(path: Path, limits: ReadLimits = DEFAULT_LIMITS) -> Any:
    """A whole JSON file within ``limits``; errors name the file (and line)."""
    return loads(read_text(path), limits, path=str(path))


def read_json_list(path: Path, what: str, limits: ReadLimits = DEFAULT_LIMITS) -> list[Any]:
    """A whole JSON file that must hold a list; errors name the file (and line) and say what was expected."""
    data = read_json(path, limits)
    if not isinstance(data, list):
        raise TraceFormatError(f"expected a JSON list of {what}, got {type(data).__name__}", path=str(path))
    return data


def json_lines(path: Path, what: str, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of every non-blank line of a JSONL ``what`` file; a missing file, text that is not
    UTF-8 or a line that is not JSON within ``limits`` raises :class:`TraceFormatError` naming the file (and
    line)."""
    name = str(path)
    try:
        lines = split_lines(path.read_bytes().decode("utf-8-sig"))
    except FileNotFoundError:
        raise TraceFormatError(f"no such {what} file", path=name) from None
    except UnicodeDecodeError as exc:
        raise TraceFormatError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=name) from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        yield n, loads(line, limits, path=name, line=n)


class Fields:
    """Typed access to one part of a whole-file adapter's input (a run, a task, the top level when ``label`` is
    None), raising a :class:`TraceFormatError` that names the file, the part and the field."""

    def __init__(self, path: str, label: str | None = None) -> None:
        self.path, self.label = path, label

    def episode(self, fields: dict[str, Any]) -> Any:
        """The trace-format episode built from ``fields``; a field it refuses is an error at this item."""
        from pydantic import ValidationError as PydanticError

        from ..trace import Episode

        try:
            return Episode.model_validate(fields)
        except PydanticError as exc:
            err = exc.errors()[0]
            raise self.error(f"cannot build an episode: {err['msg'].removeprefix('Value error, ')}",
                             ".".join(str(p) for p in err["loc"]) or None) from None

    def error(self, message: str, field: str | None = None) -> TraceFormatError:
        return TraceFormatError(f"{self.label}: {message}" if self.label else message, path=self.path, field=field)

    def get(self, obj: Any, key: str, types: type | tuple[type, ...], where: str, *, required: bool = True) -> Any:
        """``obj[key]`` if it is one of ``types`` (a bool is never an int); None if absent and not ``required``."""
        value = obj.get(key) if isinstance(obj, dict) else None
        if value is None:
            if required:
                raise self.error("missing required field", f"{where}{key}")
            return None
        kinds = types if isinstance(types, tuple) else (types,)
        if not isinstance(value, kinds) or isinstance(value, bool) and bool not in kinds:
            raise self.error(f"expected {'/'.join(t.__name__ for t in kinds)}, got {type(value).__name__}",
                             f"{where}{key}")
        return value

