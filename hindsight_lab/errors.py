"""Every exception and warning raised by hindsight_lab.

All errors derive from :class:`HindsightLabError`; those that are also a bad value or a missing import derive
from the matching built-in too, so ``except ValueError`` keeps working for callers who do not know this package.
"""

from __future__ import annotations

from typing import Any

from .redact import mask_secrets


class HindsightLabError(Exception):
    """Base class of every error raised by hindsight_lab. Its message never shows a secret: a password inside a
    URL, or a parameter that names one, reads ``***`` (:func:`hindsight_lab.redact.mask_secrets`)."""

    def __str__(self) -> str:
        return mask_secrets(super().__str__())


class ConfigError(HindsightLabError, ValueError):
    """A configuration value (file, override or argument) is invalid; the message names the field."""


class ValidationError(HindsightLabError, ValueError):
    """Input to a memory operation is invalid; the message names the field. Nothing was stored."""


class TraceFormatError(HindsightLabError, ValueError):
    """A trace file is malformed; the message names the file, the line and the field. ``reason`` is a short
    machine name of the problem where a reader counts them (``invalid_json``, ``too_deep``, ``too_large``…)."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None, reason: str | None = None) -> None:
        where = ":".join(str(p) for p in (path, line) if p is not None)
        prefix = f"{where}: " if where else ""
        suffix = f" (field {field!r})" if field else ""
        super().__init__(f"{prefix}{message}{suffix}")
        self.message, self.path, self.line, self.field, self.reason = message, path, line, field, reason


class StoreError(HindsightLabError):
    """The backing store failed or holds something this package cannot read."""


class Busy(StoreError):
    """A call waited longer than its bound for its namespace (another call holds it)."""


class MemoryNotFound(StoreError, KeyError):
    """No memory record has the given id."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "memory not found"


class EmbeddingModelMismatch(StoreError):
    """A collection was built with another embedding model than the one now configured."""


class NothingToDo(HindsightLabError):
    """The input was valid but held nothing to work on: no episode left after skipping invalid lines, or a replay
    whose query set is empty (no episode has an earlier run of its task). The command line exits 3."""


class DatasetError(HindsightLabError):
    """A registered dataset is unknown, not on this machine, or could not be fetched; the message says which and
    what to do."""


class ReflectorError(HindsightLabError):
    """A reflector failed to produce a reflection."""


class MissingDependencyError(HindsightLabError, ImportError):
    """An optional dependency is not installed."""


class HindsightLabWarning(UserWarning):
    """Base class of every warning emitted by hindsight_lab."""


def invalid_input(exc: Any, what: str) -> str:
    """The message of a pydantic ``ValidationError`` about ``what``, one clause per bad field, e.g.
    ``write: invalid input: confidence: must be between 0 and 1 (got 1.7)``."""
    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "<input>"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        parts.append(f"{field}: {msg} (got {err.get('input')!r})")
    return f"{what}: invalid input: " + "; ".join(parts)
