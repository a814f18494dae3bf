"""Split rules: how a registered dataset's file is derived from its public source file, in a canonical form.

A rule keeps whole units of the source — tasks (every trial of each kept task_id), conversations or questions —
in source order, and serialises what it kept in one fixed way, so the derived file's sha256 names the split
whatever the source's own whitespace: a user who fetches the public file gets the same bytes as the development
split. The canonical forms are those of the development files themselves:

* ``tau-bench`` and ``locomo`` (a JSON list): ``json.dumps(kept_items)`` (Python's defaults: ``", "`` and
  ``": "`` separators, ASCII escapes, no trailing newline);
* JSONL (labelled conflict pairs): ``json.dumps(item)`` and a newline per kept line;
* ``tau2-bench`` (one JSON object with ``tasks`` and ``simulations``): the object with both lists filtered,
  ``json.dumps(obj, indent=2)``;
* ``reflexion-hotpotqa`` (a text log): every line as it is, less the kept-out agent blocks (each with the blank
  line before it), and each ``Trial summary`` line recounted over the blocks kept.

Task ids and conversation ids are kept by value. Questions, and tau2's long scenario ids, are kept by hash: the
first 16 hex digits of the sha256 of the id (tau2) or of :func:`~hindsight_lab.datasets.reflexion.
normalise_question` of the question (Reflexion).

Examples:
    >>> rule = Split("json-list", key="task_id", keep=("0", "1"))
    >>> rule.derive(b'[{"task_id": 0}, {"task_id": 2}, {"task_id": 1}]')
    b'[{"task_id": 0}, {"task_id": 1}]'
    >>> rule.describe()
    'task_id in {0–1}'
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import TraceFormatError
from ..jsonio.reading import split_lines

__all__ = ["Split", "id_hash"]

Kind = Literal["json-list", "jsonl", "tau2-bench", "reflexion-hotpotqa"]


def id_hash(text: str) -> str:
    """First 16 hex digits of the sha256 of ``text`` (UTF-8): how long ids and questions are named in a rule.

    Examples:
        >>> id_hash("conv-26")
        '2aac22fc66ecbe0c'
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Split:
    """One split rule (see the module docstring).

    Attributes:
        kind: ``json-list`` (items of a JSON list kept by ``key``), ``jsonl`` (lines kept by ``key``),
            ``tau2-bench`` (tasks and simulations kept by task id) or ``reflexion-hotpotqa`` (agent blocks kept by
            question).
        key: ``json-list`` and ``jsonl``: the item field whose value (as a string) must be in ``keep``.
        keep: values kept (``json-list``), or :func:`id_hash` of the kept task ids / normalised questions.
    """

    kind: Kind
    keep: tuple[str, ...]
    key: str | None = None

    def describe(self) -> str:
        """The rule in one line, for ``datasets list``."""
        if self.kind in ("json-list", "jsonl"):
            return f"{self.key} in {{{', '.join(_compact(self.keep))}}}"
        what = "task ids" if self.kind == "tau2-bench" else "questions"
        return f"{len(self.keep)} {what} by sha256 prefix"

    def derive(self, raw: bytes, *, source: str = "source file") -> bytes:
        """The split of ``raw`` (a whole source file) in its canonical form.

        Raises:
            TraceFormatError: ``raw`` is not a file of this kind, or the split is empty.
        """
        derive = {"json-list": self._json_list, "jsonl": self._jsonl, "tau2-bench": self._tau2,
                  "reflexion-hotpotqa": self._reflexion}[self.kind]
        return derive(raw, source)

    # ------------------------------------------------------------------ kinds
    def _json_list(self, raw: bytes, source: str) -> bytes:
        data = _json(raw, source)
        if not isinstance(data, list):
            raise TraceFormatError(f"expected a JSON list, got {type(data).__name__}", path=source)
        keep = set(self.keep)
        kept = [item for item in data if isinstance(item, dict) and str(item.get(self.key)) in keep]
        if not kept:
            raise TraceFormatError(f"no item has {self.describe()}: not the file this split is taken from",
                                   path=source)
        return json.dumps(kept).encode("utf-8")

    def _jsonl(self, raw: bytes, source: str) -> bytes:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise TraceFormatError(f"not UTF-8: {exc.reason} at byte {exc.start}", path=source) from None
        keep, kept = set(self.keep), []
        for n, line in enumerate(split_lines(text), 1):
            if line.strip():
                item = _json(line.encode("utf-8"), f"{source}:{n}")
                if isinstance(item, dict) and str(item.get(self.key)) in keep:
                    kept.append(json.dumps(item) + "\n")
        if not kept:
            raise TraceFormatError(f"no line has {self.describe()}: not the file this split is taken from",
                                   path=source)
        return "".join(kept).encode("utf-8")

    def _tau2(self, raw: bytes, source: str) -> bytes:
        data = _json(raw, source)
        if not isinstance(data, dict) or not {"tasks", "simulations"} <= data.keys():
            raise TraceFormatError("expected a tau2-bench results object with tasks and simulations", path=source)
        keep = set(self.keep)
        tasks = [t for t in data["tasks"] if isinstance(t, dict) and id_hash(str(t.get("id"))) in keep]
        sims = [s for s in data["simulations"] if isinstance(s, dict) and id_hash(str(s.get("task_id"))) in keep]
        if not sims:
            raise TraceFormatError(f"no simulation is of the {len(keep)} tasks of this split", path=source)
        return json.dumps({**data, "tasks": tasks, "simulations": sims}, indent=2).encode("utf-8")

    def _reflexion(self, raw: bytes, source: str) -> bytes:
        from .reflexion import normalise_question, strip_retry_instruction

        try:
            lines = raw.decode("utf-8").split("\n")
        except UnicodeDecodeError as exc:
            raise TraceFormatError(f"not UTF-8: {exc.reason} at byte {exc.start}", path=source) from None
        keep, out, summary_at, counts = set(self.keep), [], None, _Counts()
        i = 0
        while i < len(lines):
            line = lines[i]
            if _SUMMARY.match(line):
                summary_at, counts = len(out), _Counts()
                out.append(counts.summary())
            elif _SECTION.match(line):
                counts.section = _SECTION.match(line).group(1)  # type: ignore[union-attr]
                out.append(line)
            elif line.startswith("Question:"):
                end = next((j for j in range(i, len(lines)) if lines[j].startswith("Correct answer:")), None)
                if end is None:
                    raise TraceFormatError("an agent block has no 'Correct answer:' line", path=source, line=i + 1)
                question = normalise_question(strip_retry_instruction(line[len("Question:"):]))
                if id_hash(question) in keep:
                    out.extend(lines[i:end + 1])
                    counts.add()
                    if summary_at is not None:
                        out[summary_at] = counts.summary()
                elif out and out[-1] == "":
                    out.pop()  # the blank line that opened the block goes with it
                i = end
            else:
                out.append(line)
            i += 1
        if not any(line.startswith("Question:") for line in out):
            raise TraceFormatError(f"no question of the {len(keep)} questions of this split", path=source)
        return "\n".join(out).encode("utf-8")


_SUMMARY = re.compile(r"Trial summary: Correct: \d+, Incorrect: \d+, Halted: \d+\s*$")
_SECTION = re.compile(r"-+ BEGIN (CORRECT|INCORRECT|HALTED) AGENTS -+\s*$")


class _Counts:
    """Blocks kept per section of one trial, written as that trial's summary line."""

    def __init__(self) -> None:
        self.section: str | None = None
        self.n = {"CORRECT": 0, "INCORRECT": 0, "HALTED": 0}

    def add(self) -> None:
        if self.section is not None:
            self.n[self.section] += 1

    def summary(self) -> str:
        return (f"Trial summary: Correct: {self.n['CORRECT']}, Incorrect: {self.n['INCORRECT']}, "
                f"Halted: {self.n['HALTED']}")


def _json(raw: bytes, source: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise TraceFormatError(f"not UTF-8: {exc.reason} at byte {exc.start}", path=source) from None
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"invalid JSON: {exc.msg} at column {exc.colno}", path=source,
                               line=exc.lineno) from None


def _compact(values: tuple[str, ...]) -> list[str]:
    """Consecutive integers as ranges (``0–29``); other values as they are."""
    if not all(v.isdigit() for v in values):
        return list(values)
    nums, out = sorted(int(v) for v in values), []
    start = prev = nums[0]
    for n in nums[1:] + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}–{prev}")
        if n is not None:
            start = prev = n
    return out
