"""Reading helpers shared by the adapters (and by the other readers of JSON Lines files: ``memories import``, the
labelled conflict pairs); every one bounds what it parses (:mod:`.limits`) and names the file in its errors.

Examples:
    >>> check_limit(3, "limit_tasks")
    >>> check_limit(-1, "limit_tasks")
    Traceback (most recent call last):
    ...
    hindsight_lab.errors.ConfigError: limit_tasks: expected a non-negative integer or None (got -1)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ..errors import ConfigError, TraceFormatError
from .limits import DEFAULT_LIMITS, ReadLimits, loads

__all__ = ["Fields", "check_limit", "json_lines", "read_json", "read_json_list", "read_text"]


def check_limit(value: int | None, name: str) -> None:
    """A reader's ``limit_tasks`` / ``limit_conversations`` argument: None or a non-negative integer (not a bool).

    Raises:
        ConfigError: anything else, naming the argument.
    """
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ConfigError(f"{name}: expected a non-negative integer or None (got {value!r})")


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
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise TraceFormatError(f"no such {what} file", path=name) from None
    except UnicodeDecodeError as exc:
        raise TraceFormatError(f"not UTF-8 text ({exc.reason})", path=name) from None
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
            raise self.error(f"cannot build an episode: {err['msg']}",
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

