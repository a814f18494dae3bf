"""Streaming reader for the project's JSONL trace format: one :class:`~hindsight_lab.trace.Episode` per line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from pydantic import ValidationError as PydanticError

from ..errors import TraceFormatError
from ..trace import Episode


def read_jsonl(path: str | Path) -> Iterator[Episode]:
    """Yield the episodes of a JSONL trace file, in file order; blank lines are skipped.

    The first invalid line raises :class:`TraceFormatError` naming the file, the line and the field.
    """
    path = Path(path)
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise TraceFormatError(f"not UTF-8 ({exc.reason})", path=str(path), line=lineno) from None
            except json.JSONDecodeError as exc:
                raise TraceFormatError(f"invalid JSON: {exc.msg} at column {exc.colno}", path=str(path),
                                       line=lineno) from None
            if not isinstance(data, dict):
                raise TraceFormatError(f"expected a JSON object, got {type(data).__name__}", path=str(path),
                                       line=lineno)
            try:
                yield Episode.model_validate(data)
            except PydanticError as exc:
                err = exc.errors()[0]
                field = ".".join(str(p) for p in err["loc"]) or None
                raise TraceFormatError(err["msg"], path=str(path), line=lineno, field=field) from None
