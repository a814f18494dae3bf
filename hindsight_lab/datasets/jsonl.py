"""The project's own trace format on disk (DESIGN §5): one :class:`~hindsight_lab.trace.Episode` per JSONL line.

Reading streams: one line at a time, each read with a bounded ``readline``, so a huge line costs at most
``max_line_bytes`` of memory before it is rejected. Two modes:

* strict (the default): the first invalid line raises :class:`~hindsight_lab.errors.TraceFormatError` as
  ``<file>:<line>: <what> (field 'steps.3.name')``; a file with no episode at all is an error too.
* lenient (``strict=False``, the CLI's ``--skip-invalid``): invalid lines are skipped and counted by reason in a
  :class:`ReadStats`, together with the first few messages.

Blank lines are never an error: they are skipped and counted. An ``episode_id`` seen earlier in the same file is
invalid (field ``episode_id``). :func:`read_jsonl` yields as it reads; a caller that must not write anything when
the file turns out bad uses :func:`load_episodes`, which reads the whole file before returning.

:func:`write_jsonl` writes one compact object per line without null fields; reading it back gives equal episodes,
and writing those again gives the same bytes.

Examples:
    >>> episodes, stats = load_episodes("traces.jsonl", strict=False)  # doctest: +SKIP
    >>> print(stats.summary())  # doctest: +SKIP
    traces.jsonl: read 118 episodes, skipped 2 invalid lines (invalid_json: 1, duplicate_episode_id: 1)
    >>> mem.write_episodes(episodes)  # doctest: +SKIP
    >>> write_jsonl(episodes, "clean.jsonl")  # doctest: +SKIP
    118
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, get_args

from pydantic import ValidationError as PydanticError

from ..errors import TraceFormatError, ValidationError
from ..trace import Episode, TraceStep
from ..jsonio.limits import DEFAULT_LIMITS, ReadLimits, check_instruction, loads
from ..jsonio.reading import escape_line_breaks

logger = logging.getLogger(__name__)

DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
"""Longest line accepted, in bytes without the newline (8 MiB)."""

_SKIP_CHUNK = 64 * 1024
_STEP_TAGS = frozenset(get_args(m.model_fields["type"].annotation)[0] for m in get_args(get_args(TraceStep)[0]))


@dataclass
class ReadStats:
    """What a read did, filled in as it goes.

    Attributes:
        path: the file read.
        lines: physical lines read so far (blank ones included).
        read: episodes yielded.
        blank: blank lines, skipped silently.
        skipped: invalid lines skipped (lenient mode only; strict mode raises on the first).
        by_reason: skipped lines per reason: ``invalid_json``, ``not_utf8``, ``not_object``, ``line_too_long``,
            ``too_deep``, ``too_large`` (over the :mod:`.limits`), ``missing_field``, ``unknown_field``,
            ``wrong_type``, ``invalid_value``, ``duplicate_episode_id``.
        errors: the messages of the first ``max_errors`` skipped lines.
        max_errors: how many messages ``errors`` keeps.
    """

    path: str | None = None
    lines: int = 0
    read: int = 0
    blank: int = 0
    skipped: int = 0
    by_reason: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    max_errors: int = 20

    @property
    def empty(self) -> bool:
        """Whether the file held no episode and no invalid line (empty, or blank lines only)."""
        return self.read == 0 and self.skipped == 0

    def _skip(self, exc: TraceFormatError, reason: str) -> None:
        self.skipped += 1
        self.by_reason[reason] += 1
        if len(self.errors) < self.max_errors:
            self.errors.append(str(exc))

    def summary(self) -> str:
        """One line for a person: what was read, what was skipped and why.

        Examples:
            >>> ReadStats(path="t.jsonl", read=3, skipped=1, by_reason=Counter(invalid_json=1)).summary()
            't.jsonl: read 3 episodes, skipped 1 invalid line (invalid_json: 1)'
        """
        where = f"{self.path}: " if self.path else ""
        if self.empty:
            return f"{where}no episodes ({self.blank} blank lines)" if self.blank else f"{where}no episodes (empty)"
        text = f"{where}read {self.read} episode{'s' * (self.read != 1)}"
        if self.skipped:
            reasons = ", ".join(f"{r}: {n}" for r, n in self.by_reason.most_common())
            text += f", skipped {self.skipped} invalid line{'s' * (self.skipped != 1)} ({reasons})"
        if self.blank:
            text += f", {self.blank} blank line{'s' * (self.blank != 1)}"
        return text

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for a run log or a JSON report."""
        return {"path": self.path, "lines": self.lines, "read": self.read, "blank": self.blank,
                "skipped": self.skipped, "by_reason": dict(self.by_reason), "errors": list(self.errors)}


class _LineError(Exception):
    """An invalid line: the error to raise (strict) or count (lenient), and its reason."""

    def __init__(self, error: TraceFormatError, reason: str) -> None:
        self.error, self.reason = error, reason


def _readline(fh: BinaryIO, limit: int) -> tuple[bytes, bool]:
    """The next line (b"" at the end of the file) and whether it was longer than ``limit`` bytes.

    Reads at most ``limit + 1`` bytes into memory; the rest of a long line is read and dropped in chunks.
    """
    raw = fh.readline(limit + 1)
    if len(raw) <= limit or raw.endswith(b"\n"):
        return raw, False
    while True:  # drop the rest of the line
        chunk = fh.readline(_SKIP_CHUNK)
        if not chunk or chunk.endswith(b"\n"):
            return raw[:64], True


def _json_path(loc: tuple[int | str, ...]) -> str:
    """``('steps', 3, 'tool_call', 'name')`` → ``steps.3.name`` (the discriminator tag is not part of the data)."""
    parts: list[str] = []
    for i, p in enumerate(loc):
        if isinstance(p, str) and p in _STEP_TAGS and i > 0 and isinstance(loc[i - 1], int):
            continue
        parts.append(str(p))
    return ".".join(parts)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_TYPE_ERRORS = ("_type", "_parsing")


def _describe(exc: PydanticError) -> tuple[str, str | None, str]:
    """(message, field, reason) of the first problem pydantic found, plus how many more there are."""
    errors = exc.errors()
    err = errors[0]
    kind, fld = err["type"], _json_path(err["loc"]) or None
    if kind == "missing":
        msg, reason = "missing required field", "missing_field"
    elif kind == "extra_forbidden":
        msg, reason = f"unknown field (got {_short(err.get('input'))})", "unknown_field"
    elif kind.endswith(_TYPE_ERRORS) and not kind.startswith(("datetime", "date", "time")):
        msg, reason = f"{err['msg']} (got {_short(err.get('input'))})", "wrong_type"
    else:
        msg, reason = f"{err['msg'].removeprefix('Value error, ')} (got {_short(err.get('input'))})", "invalid_value"
    if len(errors) > 1:
        msg += f" [+{len(errors) - 1} more problem{'s' * (len(errors) > 2)} on this line]"
    return msg, fld, reason


def _parse(raw: bytes, path: str, lineno: int, limits: ReadLimits = DEFAULT_LIMITS) -> Episode:
    def fail(message: str, reason: str, fld: str | None = None) -> _LineError:
        return _LineError(TraceFormatError(message, path=path, line=lineno, field=fld), reason)

    try:
        text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        raise fail(f"not UTF-8: {exc.reason} at byte {exc.start}", "not_utf8") from None
    text = text.rstrip("\r\n")
    if text.lstrip().startswith("[") and not text.rstrip().endswith("]"):
        raise fail("a JSON list opens here, not one episode object per line: this looks like a whole-file JSON "
                   "array (tau-bench, LoCoMo…), which is not JSONL; give its format, or write one episode per line",
                   "not_object")
    try:
        data = loads(text, limits, path=path, line=lineno)
    except TraceFormatError as exc:
        raise _LineError(exc, exc.reason or "invalid_json") from None
    if not isinstance(data, dict):
        raise fail(f"expected a JSON object (one episode), got {type(data).__name__}", "not_object")
    try:
        episode = Episode.model_validate(data)
    except PydanticError as exc:
        msg, fld, reason = _describe(exc)
        raise fail(msg, reason, fld) from None
    try:
        check_instruction(episode.instruction, limits, path=path, line=lineno)
    except TraceFormatError as exc:
        raise _LineError(exc, "too_large") from None
    return episode


def read_jsonl(path: str | Path, *, strict: bool = True, stats: ReadStats | None = None,
               max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, limits: ReadLimits = DEFAULT_LIMITS
               ) -> Iterator[Episode]:
    """Yield the episodes of a JSONL trace file in file order, reading one bounded line at a time.

    Args:
        path: the file.
        strict: raise on the first invalid line (and on a file without episodes); else skip and count.
        stats: filled in as the reader goes (see :class:`ReadStats`); pass one to see what was skipped.
        max_line_bytes: a longer line is invalid (``line too long``) and is never held in memory whole.
        limits: nesting and size bounds of a line's JSON and of an instruction (:mod:`.limits`).

    Raises:
        TraceFormatError: (strict) ``<file>:<line>: <what> (field '<json path>')`` for the first invalid line,
            or ``<file>: no episodes`` for an empty file.

    Examples:
        >>> stats = ReadStats()
        >>> for ep in read_jsonl("traces.jsonl", strict=False, stats=stats):  # doctest: +SKIP
        ...     print(ep.episode_id)
    """
    if max_line_bytes < 1:
        raise ValueError(f"max_line_bytes must be at least 1 (got {max_line_bytes!r})")
    name = str(path)
    st = stats if stats is not None else ReadStats()
    st.path = name
    first_line: dict[str, int] = {}
    with open(path, "rb") as fh:
        while True:
            raw, too_long = _readline(fh, max_line_bytes)
            if not raw:
                break
            st.lines += 1
            lineno = st.lines
            try:
                if too_long:
                    raise _LineError(TraceFormatError(
                        f"line too long: more than {max_line_bytes} bytes (raise max_line_bytes to read it), "
                        f"starting {raw[:40]!r}",
                        path=name, line=lineno), "line_too_long")
                if not raw.strip():
                    st.blank += 1
                    continue
                ep = _parse(raw, name, lineno, limits)
                if ep.episode_id in first_line:
                    raise _LineError(TraceFormatError(
                        f"duplicate episode_id {ep.episode_id!r} (first on line {first_line[ep.episode_id]})",
                        path=name, line=lineno, field="episode_id"), "duplicate_episode_id")
            except _LineError as bad:
                if strict:
                    raise bad.error from None
                st._skip(bad.error, bad.reason)
                logger.debug("skipped %s", bad.error)
                continue
            first_line[ep.episode_id] = lineno
            st.read += 1
            yield ep
    if st.empty:
        if strict:
            what = f"only {st.blank} blank lines" if st.blank else "the file is empty"
            raise TraceFormatError(f"no episodes ({what})", path=name)
        logger.warning("%s", st.summary())
    elif st.skipped:
        logger.warning("%s", st.summary())


def load_episodes(path: str | Path, *, strict: bool = True, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
                  max_errors: int = 20, limits: ReadLimits = DEFAULT_LIMITS) -> tuple[list[Episode], ReadStats]:
    """Read and validate the WHOLE file, then return its episodes and the read's :class:`ReadStats`.

    Use this (not :func:`read_jsonl`) before writing to memory: in strict mode a bad line anywhere raises before
    the caller has written anything.

    Examples:
        >>> episodes, stats = load_episodes("traces.jsonl")  # doctest: +SKIP
        >>> mem.write_episodes(episodes)  # doctest: +SKIP
    """
    stats = ReadStats(max_errors=max_errors)
    episodes = list(read_jsonl(path, strict=strict, stats=stats, max_line_bytes=max_line_bytes, limits=limits))
    return episodes, stats


def _dump(ep: Episode) -> str:
    # exclude_none drops null *fields* (defaults on reading back) and keeps nulls inside meta/arguments
    return escape_line_breaks(ep.model_dump_json(exclude_none=True))


def write_jsonl(episodes: Iterable[Episode | dict[str, Any]], path: str | Path) -> int:
    """Write episodes as compact JSONL (UTF-8, null fields left out), atomically; return how many were written.

    Dicts are validated first. The file is written to a temporary name and moved into place, so a failure leaves
    any previous file untouched. Duplicate ``episode_id`` values are refused, as the reader would refuse them.

    Raises:
        ValidationError: an episode is invalid or repeats an ``episode_id``; nothing is written then.

    Examples:
        >>> write_jsonl([{"episode_id": "e1", "instruction": "hi", "steps": [], "outcome": "success"}],
        ...             "out.jsonl")  # doctest: +SKIP
        1
    """
    from ..errors import invalid_input

    path = Path(path)
    seen: set[str] = set()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    n = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            for i, item in enumerate(episodes):
                if not isinstance(item, Episode):
                    try:
                        item = Episode.model_validate(item)
                    except PydanticError as exc:
                        raise ValidationError(invalid_input(exc, f"write_jsonl: episodes[{i}]")) from None
                if item.episode_id in seen:
                    raise ValidationError(f"write_jsonl: episodes[{i}]: episode_id: duplicate "
                                          f"{item.episode_id!r}; the reader would refuse the file")
                seen.add(item.episode_id)
                fh.write(_dump(item))
                fh.write("\n")
                n += 1
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return n
