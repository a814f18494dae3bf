"""Adapters from recorded traces into the trace format (DESIGN §5), and :func:`load`, which picks one.

Formats: ``jsonl`` (the project's own, :mod:`.jsonl`), ``tau-bench`` (historical trajectories,
:mod:`.tau_bench`), ``tau2-bench`` (tau2-bench simulation files, :mod:`.tau2_bench`), ``reflexion-hotpotqa``
(Reflexion's HotpotQA text logs, :mod:`.reflexion`) and ``locomo`` (LoCoMo conversations, :mod:`.locomo`).
LoCoMo is a conversation dataset, not a trace of episodes: its turns are memories and its questions are the queries,
replayed one conversation at a time (DESIGN §6). :func:`load` therefore refuses it and points to
:func:`read_locomo`, so that no caller can replay its turns as queries by accident.

Examples:
    >>> episodes, stats = load("traces.jsonl", strict=False)  # doctest: +SKIP
    >>> episodes, _ = load("../shared/datasets/tau-bench/gpt-4o-airline.dev.json", limit_tasks=3)  # doctest: +SKIP
    >>> episodes, _ = load("../shared/datasets/tau2-bench/telecom_gpt-4.1.json")  # doctest: +SKIP
    >>> conversations = read_locomo("../shared/datasets/locomo/locomo10.dev.json")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import ConfigError, TraceFormatError
from ..trace import Episode
from .jsonl import DEFAULT_MAX_LINE_BYTES, ReadStats, load_episodes, read_jsonl, write_jsonl
from ..jsonio.limits import DEFAULT_LIMITS, ReadLimits, check_instruction
from ..jsonio.reading import check_limit, read_text
from .locomo import LocomoConversation, LocomoQuestion, LocomoTurn, read_locomo, turn_to_episode
from .locomo_counts import describe_locomo
from .reflexion import ReflexionCounts, describe_reflexion, read_reflexion_hotpotqa
from .tau2_bench import read_tau2_bench
from .tau_bench import read_tau_bench

__all__ = ["CONVERSATION_FORMATS", "DEFAULT_MAX_LINE_BYTES", "FORMATS", "LocomoConversation", "LocomoQuestion",
           "LocomoTurn", "ReadStats", "ReflexionCounts", "describe_locomo", "describe_reflexion", "detect_format",
           "load", "load_episodes", "read_jsonl", "read_locomo", "read_reflexion_hotpotqa", "read_tau2_bench",
           "read_tau_bench", "turn_to_episode", "write_jsonl"]

FORMATS = ("jsonl", "tau-bench", "tau2-bench", "reflexion-hotpotqa", "locomo")
"""The formats :func:`detect_format` recognises; :func:`load` reads every one but ``locomo`` (see
:data:`CONVERSATION_FORMATS`)."""

CONVERSATION_FORMATS = ("locomo",)
"""Formats of conversations with questions, not episodes: read with :func:`read_locomo`, never by :func:`load`."""

_SNIFF_BYTES = 1024 * 1024
_SNIFF_MAX = 64 * 1024 * 1024
_OBJECT_MAX = 256 * 1024 * 1024
_TEXT_HEAD_BYTES = 4096
_REFLEXION_HEAD = re.compile(r"^BEGIN TRIAL \d+\s*$", re.MULTILINE)


def _head(path: Path) -> str:
    with path.open("rb") as fh:
        return fh.read(_TEXT_HEAD_BYTES).decode("utf-8-sig", errors="ignore")


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
            except RecursionError:
                raise _too_deep(path) from None
            except json.JSONDecodeError:
                if n >= size or n >= _SNIFF_MAX:
                    return None
                n *= 4


def _too_deep(path: Path) -> TraceFormatError:
    return TraceFormatError(f"nested deeper than the JSON parser allows (the limit is {DEFAULT_LIMITS.max_depth} "
                            "levels)", path=str(path), reason="too_deep")


def _is_tau2(path: Path) -> bool:
    """Whether a file of at most 256 MiB is a JSON object with ``simulations`` and ``tasks`` at its top level."""
    if path.stat().st_size > _OBJECT_MAX:
        return False
    try:
        data = json.loads(path.read_bytes().decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False
    except RecursionError:
        raise _too_deep(path) from None
    return isinstance(data, dict) and {"simulations", "tasks"} <= data.keys()


def detect_format(path: str | Path) -> str | None:
    """``"jsonl"``, ``"tau-bench"``, ``"tau2-bench"``, ``"reflexion-hotpotqa"``, ``"locomo"`` or None, from the file.

    ``jsonl``: a ``.jsonl`` file whose first non-blank line is an object with ``episode_id``. ``tau-bench``: a JSON
    list whose first item has ``traj``, ``info`` and ``task_id``. ``tau2-bench``: a JSON object (of at most 256 MiB,
    parsed whole) with ``simulations`` and ``tasks``. ``locomo``: a JSON list whose first item has ``sample_id``,
    ``conversation`` and ``qa``. ``reflexion-hotpotqa``: a text file with a ``BEGIN TRIAL n`` line in its first 4 KiB.

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
        except (json.JSONDecodeError, RecursionError):  # the JSONL reader names the line and the cause
            return None
        return "jsonl" if isinstance(first, dict) and "episode_id" in first else None
    head = _head(path).lstrip()
    if head.startswith("{"):
        return "tau2-bench" if _is_tau2(path) else None
    if head and not head.startswith("["):  # text, not a JSON list
        return "reflexion-hotpotqa" if _REFLEXION_HEAD.search(head) else None
    item = _first_item(path)
    if isinstance(item, dict) and {"traj", "info", "task_id"} <= item.keys():
        return "tau-bench"
    if isinstance(item, dict) and {"sample_id", "conversation", "qa"} <= item.keys():
        return "locomo"
    return None


def load(path: str | Path, format: str = "auto", *, strict: bool = True, limit_tasks: int | None = None,
         domain: str | None = None, limits: ReadLimits = DEFAULT_LIMITS, **kw: Any
         ) -> tuple[list[Episode], ReadStats | None]:
    """Read a trace file of any supported format: ``(episodes, ReadStats)`` for jsonl, ``(episodes, None)`` else.

    Args:
        path: the file.
        format: ``"auto"`` (:func:`detect_format`; a ``.jsonl`` file it cannot place is read as jsonl, so its
            first bad line is reported), ``"jsonl"``, ``"tau-bench"``, ``"tau2-bench"`` or
            ``"reflexion-hotpotqa"``. A LoCoMo file (``"locomo"``, given or detected) is refused: read it with
            :func:`read_locomo`.
        strict: jsonl only: raise on the first invalid line (else skip and count it).
        limit_tasks: keep the episodes of the first N task_ids (all their attempts), in the order the format's
            reader gives them (file order for jsonl).
        domain: tau-bench only: the domain when the data does not say.
        limits: nesting and size bounds (:mod:`.limits`); a file over them is invalid input (jsonl in lenient
            mode: the line is skipped and counted, ``too_deep`` / ``too_large``).
        **kw: passed on to :func:`load_episodes` (``max_line_bytes``, ``max_errors``).

    Raises:
        ConfigError: an unknown ``format``, a ``limit_tasks`` that is not a count, or a conversation dataset
            (LoCoMo), which holds no episodes to load.
        TraceFormatError: the format cannot be detected, or the file is invalid in it.
    """
    check_limit(limit_tasks, "limit_tasks")  # once, for every format, before anything is read
    path = Path(path)
    fmt = format.lower().replace("_", "-") if isinstance(format, str) else format
    if fmt not in (*FORMATS, "auto"):
        raise ConfigError(f"format: unknown trace format {format!r}; expected 'auto' or one of {list(FORMATS)}")
    if fmt == "auto":
        if not path.exists():
            raise TraceFormatError("no such trace file", path=str(path))
        fmt = detect_format(path) or ("jsonl" if path.suffix.lower() == ".jsonl" else None)
        if fmt is None:
            return _read_likeliest(path, strict=strict, limit_tasks=limit_tasks, domain=domain, limits=limits)
    return _read(path, fmt, strict=strict, limit_tasks=limit_tasks, domain=domain, limits=limits, **kw)


def _read(path: Path, fmt: str, *, strict: bool, limit_tasks: int | None, domain: str | None, limits: ReadLimits,
          **kw: Any) -> tuple[list[Episode], ReadStats | None]:
    """:func:`load` once the format is known."""
    if fmt in CONVERSATION_FORMATS:
        raise ConfigError(f"format: {path} is LoCoMo, a conversation dataset (turns to remember, questions to ask "
                          "afterwards), not a trace of episodes; read it with "
                          "hindsight_lab.datasets.read_locomo(path) and replay it one conversation at a time "
                          "(hindsight_lab.replay.engine.run_conversations with to_episode=turn_to_episode)")
    if fmt == "jsonl":
        episodes, stats = load_episodes(path, strict=strict, limits=limits, **kw)
        if limit_tasks is not None:
            keep = list(dict.fromkeys(e.task_id or e.episode_id for e in episodes))[:limit_tasks]
            episodes = [e for e in episodes if (e.task_id or e.episode_id) in set(keep)]
        return episodes, stats
    if fmt == "reflexion-hotpotqa":
        episodes = read_reflexion_hotpotqa(path, limit_tasks=limit_tasks)
    elif fmt == "tau2-bench":
        episodes = read_tau2_bench(path, limit_tasks=limit_tasks, limits=limits)
    else:
        episodes = read_tau_bench(path, domain=domain, limit_tasks=limit_tasks, limits=limits)
    for ep in episodes:  # the jsonl reader checks each line as it reads it
        check_instruction(ep.instruction, limits, path=str(path), episode_id=ep.episode_id)
    return episodes, None


_UNKNOWN_FORMAT = ("cannot tell the trace format: expected a .jsonl file of episodes (one object with episode_id per "
                   "line), a tau-bench JSON list of {task_id, trial, reward, info, traj}, a tau2-bench JSON object "
                   "{info, tasks, simulations}, a Reflexion HotpotQA text log (BEGIN TRIAL n …) or a LoCoMo JSON "
                   f"list of {{sample_id, conversation, qa}}; pass format= one of {list(FORMATS)}")


def likeliest_format(path: str | Path) -> tuple[str, str] | None:
    """``(format, why)`` for a file :func:`detect_format` could not place: the format its first bytes announce (a
    JSON object: tau2-bench; a JSON list: LoCoMo when its head names ``sample_id``, else tau-bench), or None."""
    head = _head(Path(path)).lstrip()
    if head.startswith("{"):
        return "tau2-bench", "a JSON object"
    if head.startswith("["):
        if '"sample_id"' in head:
            return "locomo", "a JSON list naming sample_id"
        return "tau-bench", "a JSON list"
    return None


def _read_likeliest(path: Path, **kw: Any) -> tuple[list[Episode], ReadStats | None]:
    """Read a file no format claimed in its likeliest format: a file that is valid there after all (a tau2-bench
    file over the sniffing bound) is read; otherwise that reader's own error, which names the line, byte or field,
    is raised, and not a bare "cannot tell"."""
    likely = likeliest_format(path)
    if likely is None:
        if path.stat().st_size <= _OBJECT_MAX:
            read_text(path)  # text that is not UTF-8: the error names the byte
        raise TraceFormatError(_UNKNOWN_FORMAT, path=str(path))
    fmt, why = likely
    if fmt in CONVERSATION_FORMATS:
        raise TraceFormatError(f"{_UNKNOWN_FORMAT} (it looks like {fmt}, {why}, but is not one)", path=str(path))
    try:
        return _read(path, fmt, **kw)
    except TraceFormatError as exc:
        raise TraceFormatError(f"no format recognised it; read as {fmt}, the likeliest ({why}): {exc.message}; "
                               f"or pass format= one of {list(FORMATS)}", path=exc.path or str(path),
                               line=exc.line, field=exc.field, reason=exc.reason) from None
