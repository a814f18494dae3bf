"""Adapters from recorded traces into the trace format (DESIGN §5), and :func:`load`, which picks one.

Formats: ``jsonl`` (the project's own, :mod:`.jsonl`) and ``tau-bench`` (historical trajectories,
:mod:`.tau_bench`).

Examples:
    >>> episodes, stats = load("traces.jsonl", strict=False)  # doctest: +SKIP
    >>> episodes, _ = load("../shared/datasets/tau-bench/gpt-4o-airline.dev.json", limit_tasks=3)  # doctest: +SKIP
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError, TraceFormatError
from ..trace import Episode
from .jsonl import DEFAULT_MAX_LINE_BYTES, ReadStats, load_episodes, read_jsonl, write_jsonl
from .tau_bench import read_tau_bench

__all__ = ["DEFAULT_MAX_LINE_BYTES", "FORMATS", "ReadStats", "detect_format", "load", "load_episodes",
           "read_jsonl", "read_tau_bench", "write_jsonl"]

FORMATS = ("jsonl", "tau-bench")
"""The formats :func:`load` reads."""

_SNIFF_BYTES = 1024 * 1024
_SNIFF_MAX = 64 * 1024 * 1024


def _first_line(path: Path) -> str | None:
    with path.open("rb") as fh:
        while True:
            raw = fh.readline(_SNIFF_BYTES)
            if not raw:
                return None
            if raw.strip():
                return raw.decode("utf-8-sig", errors="replace")


def _first_item(path: Path) -> Any:
    """The first element of a JSON list, decoding only as much of the file as it needs (None if not a list)."""
    decoder = json.JSONDecoder()
    size, n = path.stat().st_size, _SNIFF_BYTES
    with path.open("rb") as fh:
        while True:
            fh.seek(0)
            text = fh.read(n).decode("utf-8-sig", errors="ignore")
            start = len(text) - len(text.lstrip())
            if not text[start:start + 1] == "[":
                return None
            body = text[start + 1:]
            at = len(body) - len(body.lstrip())
            try:
                return decoder.raw_decode(body, at)[0]
            except json.JSONDecodeError:
                if n >= size or n >= _SNIFF_MAX:
                    return None
                n *= 4


def detect_format(path: str | Path) -> str | None:
    """``"jsonl"``, ``"tau-bench"`` or None, from the file itself.

    ``jsonl``: a ``.jsonl`` file whose first non-blank line is an object with ``episode_id``. ``tau-bench``: a JSON
    list whose first item has ``traj``, ``info`` and ``task_id``.

    Examples:
        >>> detect_format("../shared/datasets/tau-bench/gpt-4o-airline.dev.json")  # doctest: +SKIP
        'tau-bench'
    """
    path = Path(path)
    if not path.is_file():
        return None
    if path.suffix.lower() == ".jsonl":
        line = _first_line(path)
        try:
            first = json.loads(line) if line is not None else None
        except json.JSONDecodeError:
            return None
        return "jsonl" if isinstance(first, dict) and "episode_id" in first else None
    item = _first_item(path)
    if isinstance(item, dict) and {"traj", "info", "task_id"} <= item.keys():
        return "tau-bench"
    return None


def load(path: str | Path, format: str = "auto", *, strict: bool = True, limit_tasks: int | None = None,
         domain: str | None = None, **kw: Any) -> tuple[list[Episode], ReadStats | None]:
    """Read a trace file of any supported format: ``(episodes, ReadStats)`` for jsonl, ``(episodes, None)`` else.

    Args:
        path: the file.
        format: ``"auto"`` (:func:`detect_format`; a ``.jsonl`` file it cannot place is read as jsonl, so its
            first bad line is reported), ``"jsonl"`` or ``"tau-bench"``.
        strict: jsonl only: raise on the first invalid line (else skip and count it).
        limit_tasks: keep the episodes of the first N task_ids (all their attempts), in file order.
        domain: tau-bench only: the domain when the data does not say.
        **kw: passed on to :func:`load_episodes` (``max_line_bytes``, ``max_errors``).

    Raises:
        ConfigError: an unknown ``format``.
        TraceFormatError: the format cannot be detected, or the file is invalid in it.
    """
    path = Path(path)
    fmt = format.lower().replace("_", "-") if isinstance(format, str) else format
    if fmt not in (*FORMATS, "auto"):
        raise ConfigError(f"format: unknown trace format {format!r}; expected 'auto' or one of {list(FORMATS)}")
    if fmt == "auto":
        if not path.exists():
            raise TraceFormatError("no such trace file", path=str(path))
        fmt = detect_format(path) or ("jsonl" if path.suffix.lower() == ".jsonl" else None)
        if fmt is None:
            raise TraceFormatError("cannot tell the trace format: expected a .jsonl file of episodes (one object "
                                   "with episode_id per line) or a tau-bench JSON list of {task_id, trial, reward, "
                                   f"info, traj}}; pass format= one of {list(FORMATS)}", path=str(path))
    if fmt == "jsonl":
        episodes, stats = load_episodes(path, strict=strict, **kw)
        if limit_tasks is not None:
            keep = list(dict.fromkeys(e.task_id or e.episode_id for e in episodes))[:limit_tasks]
            episodes = [e for e in episodes if (e.task_id or e.episode_id) in set(keep)]
        return episodes, stats
    return read_tau_bench(path, domain=domain, limit_tasks=limit_tasks), None
